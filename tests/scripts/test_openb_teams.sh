#!/bin/sh
# scripts/openb-teams.sh: each pod goes to the team of what it runs, with
# the pod list's own times, and the simulator takes the result with the
# kinds3 projects files. Usage: test_openb_teams.sh SRC_DIR FAIRSHARECTL
set -eu
src="$1"; ctl="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
# Columns in another order than the real list, to check they go by name.
cat > "$tmp/pods.csv" <<'CSV'
name,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
frac,1,460,6000,12288,,LS,Running,100,1100,200
whole,1,1000,12000,16384,,LS,Running,0,,0
eight,8,1000,64000,131072,,BE,Succeeded,50,3650,50
cpuonly,0,0,4000,8192,,BE,Failed,10,20,
never,2,1000,8000,8192,,LS,Pending,30,90,
CSV
sh "$src/scripts/openb-teams.sh" "$tmp/pods.csv" > "$tmp/jobs.csv"
cat > "$tmp/want.csv" <<'CSV'
name,queue,submit_s,duration_s,gpu,cpu,memory
frac,infer,100,900,460m,6000m,12288Mi
whole,single,0,inf,1,12000m,16384Mi
eight,multi,50,3600,8,64000m,131072Mi
cpuonly,cpu,10,10,0,4000m,8192Mi
never,multi,30,60,2,8000m,8192Mi
CSV
if ! cmp -s "$tmp/jobs.csv" "$tmp/want.csv"; then
    echo "openb-teams.sh wrote:"; cat "$tmp/jobs.csv"; echo "want:"; cat "$tmp/want.csv"; exit 1
fi
# By the qos column: LS, BE, anything else.
sh "$src/scripts/openb-teams.sh" --by qos "$tmp/pods.csv" | cut -d, -f1,2 > "$tmp/qos.csv"
printf 'name,queue\nfrac,ls\nwhole,ls\neight,be\ncpuonly,be\nnever,ls\n' > "$tmp/want-qos.csv"
if ! cmp -s "$tmp/qos.csv" "$tmp/want-qos.csv"; then
    echo "--by qos wrote:"; cat "$tmp/qos.csv"; exit 1
fi
if sh "$src/scripts/openb-teams.sh" --by size "$tmp/pods.csv" > /dev/null 2> "$tmp/err"; then
    echo "--by size was accepted"; exit 1
fi
grep -q 'is not kind or qos' "$tmp/err" || { echo "unclear error:"; cat "$tmp/err"; exit 1; }
# A missing column is an error, not a silent zero.
if sed 's/gpu_milli/gpu_mili/' "$tmp/pods.csv" > "$tmp/bad.csv" &&
    sh "$src/scripts/openb-teams.sh" "$tmp/bad.csv" > /dev/null 2> "$tmp/err"; then
    echo "a missing gpu_milli column was accepted"; exit 1
fi
grep -q "no column gpu_milli" "$tmp/err" || { echo "unclear error:"; cat "$tmp/err"; exit 1; }
# The simulator reads the list with the projects files (every queue there).
printf 'sn,cpu_milli,memory_mib,gpu\nn0,96000,262144,8\nn1,96000,262144,8\n' > "$tmp/nodes.csv"
"$ctl" simulate --nodes "$tmp/nodes.csv" --jobs "$tmp/jobs.csv" \
    --projects "$src/tests/data/sim/kinds3_static.yaml" \
    --compare "$src/tests/data/sim/kinds3_lending.yaml" > "$tmp/out" 2>&1 ||
    { cat "$tmp/out"; exit 1; }
grep -q "^config=compare" "$tmp/out" || { cat "$tmp/out"; exit 1; }
sh "$src/scripts/openb-teams.sh" --by qos "$tmp/pods.csv" > "$tmp/jobs-qos.csv"
"$ctl" simulate --nodes "$tmp/nodes.csv" --jobs "$tmp/jobs-qos.csv" \
    --projects "$src/tests/data/sim/qos3_static.yaml" \
    --compare "$src/tests/data/sim/qos3_lending.yaml" > "$tmp/out" 2>&1 ||
    { cat "$tmp/out"; exit 1; }
grep -q "^config=compare" "$tmp/out" || { cat "$tmp/out"; exit 1; }
echo ok
