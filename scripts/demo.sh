#!/bin/sh
# make demo: Fairshare end to end on a local fake cluster, in under a minute.
# Starts the fake Kubernetes API server (build/fakekube: 2 simulated nodes x
# 8 GPUs, a simulated kubelet), runs the real controller against it over
# HTTPS, creates two teams' Projects and Queues (examples/demo/), and shows:
# team B borrowing team A's idle GPUs, team A taking them back (evictions;
# team B's evicted pods are requeued, pending),
# why a pod waits, the final allocation, a GPU-hours report that finance
# reads from the controller over HTTPS with its own token (the fake API
# server reviews the tokens, as a real one would), and four 0.25-GPU pods
# sharing the device of one reservation pod while a whole-GPU pod gets
# another (docs/fractions.md; the script plays the container runtime and
# runs fairshare-reserve). Everything runs under a
# temporary folder, removed on exit; the run's ledger is kept as
# BUILD/demo-ledger.db for the "next steps" printed at the end. Colours
# only on a terminal (and not with NO_COLOR set): piped or logged, the
# output is plain text.
set -eu

build="${1:-build}"
here=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$here/$build" ;; esac
for prog in fakekube fairshare-controller fairsharectl fairshare-reserve; do
  if [ ! -x "$build/$prog" ]; then
    echo "demo: $build/$prog is missing; run 'make build' first" >&2
    exit 1
  fi
done

work=$(mktemp -d /tmp/fairshare-demo.XXXXXX)
fake_pid=""
ctl_pid=""
reserve_pid=""
cleanup() {
  [ -n "$reserve_pid" ] && kill "$reserve_pid" 2>/dev/null && wait "$reserve_pid" 2>/dev/null
  [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ] && [ "${TERM:-dumb}" != dumb ]; then
  bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
  bold() { printf '\n== %s\n' "$*"; }
fi
say() { printf '   %s\n' "$*"; }

# ---- the fake cluster -------------------------------------------------------
bold "Starting a local fake cluster: 2 nodes x 8 GPUs (NVIDIA H100), simulated kubelet"
"$build/fakekube" --state-dir "$work/cluster" --port-file "$work/port" --nodes 2 \
  --gpus-per-node 8 --kubelet --kubelet-delay-ms 100 --grace-seconds 1 --log-level warn \
  >"$work/fakekube.log" 2>&1 &
fake_pid=$!
i=0
while [ ! -s "$work/port" ]; do
  i=$((i + 1)); [ $i -gt 100 ] && { echo "demo: fakekube did not start" >&2; cat "$work/fakekube.log" >&2; exit 1; }
  sleep 0.1
done
port=$(cat "$work/port")
server="https://127.0.0.1:$port"
token=$(cat "$work/cluster/token")
say "API server: $server (kubeconfig: $work/cluster/kubeconfig)"

# kube METHOD PATH [JSON]: one API request, body on stdout.
kube() {
  if [ $# -ge 3 ]; then
    curl -sS --cacert "$work/cluster/ca.crt" -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/json' -X "$1" "$server$2" -d "$3"
  else
    curl -sS --cacert "$work/cluster/ca.crt" -H "Authorization: Bearer $token" -X "$1" "$server$2"
  fi
}

# apply FILE: creates each JSON object (one per line) at its collection.
apply() {
  while IFS= read -r obj; do
    [ -z "$obj" ] && continue
    case "$obj" in
      *'"kind":"Namespace"'*) path=/api/v1/namespaces ;;
      *'"kind":"Project"'*) path=/apis/fairshare.dev/v1alpha1/projects ;;
      *'"kind":"Queue"'*) path=/apis/fairshare.dev/v1alpha1/queues ;;
      *) echo "demo: unknown kind in $obj" >&2; exit 1 ;;
    esac
    kube POST "$path" "$obj" >/dev/null
  done <"$1"
}

# submit NS NAME QUEUE GPUS SECONDS: a training pod of one container.
submit() {
  kube POST "/api/v1/namespaces/$1/pods" "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",
    \"metadata\":{\"name\":\"$2\",\"labels\":{\"fairshare.dev/queue\":\"$3\"},
      \"annotations\":{\"sim.fairshare.dev/duration-seconds\":\"$5\"}},
    \"spec\":{\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":1,
      \"containers\":[{\"name\":\"train\",\"image\":\"pytorch/pytorch\",
        \"resources\":{\"limits\":{\"nvidia.com/gpu\":\"$4\"}}}]}}" >/dev/null
}

# bound NS: pods of NS placed on a node and not being deleted.
bound() {
  kube GET "/api/v1/namespaces/$1/pods" | tr '{' '\n' | grep -c '"nodeName"' || true
}
# present NS: pods of NS that exist at all.
present() {
  kube GET "/api/v1/namespaces/$1/pods" | grep -o '"kind":"Pod"\|"uid":"' | grep -c uid || true
}
# requeued NS: pods of NS that the controller created again after an
# eviction (named <name>-rq<N>).
requeued() {
  kube GET "/api/v1/namespaces/$1/pods" | grep -o '"name":"[^"]*-rq[0-9]*"' | grep -c . || true
}
events() { # events REASON: count of Events with that reason
  kube GET /api/v1/events | grep -o "\"reason\":\"$1\"" | wc -l | tr -d ' '
}
# The controller serves /metrics and the reports over HTTPS with the fake
# cluster's certificate; the admin token may read everything.
metrics() {
  curl -s --cacert "$work/cluster/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$mport/metrics"
}

# wait_for DESCRIPTION COMMAND...: polls (0.2 s) until COMMAND succeeds, 30 s max.
wait_for() {
  what=$1; shift
  i=0
  until "$@"; do
    i=$((i + 1))
    if [ $i -gt 150 ]; then
      echo "demo: timed out waiting for $what" >&2
      tail -n 20 "$work/controller.log" >&2
      exit 1
    fi
    sleep 0.2
  done
}

# table: per-queue figures from the controller's /metrics.
table() {
  printf '   %-18s %10s %10s %10s %9s %6s %8s\n' QUEUE GUARANTEED "FAIR SHARE" ALLOCATED BORROWED \
    LENT PENDING
  metrics | awk '
    /^fairshare_queue_[a-z_]+\{queue="/ {
      split($0, a, "\""); q = a[2]; name = $1; sub(/\{.*/, "", name); v[q, name] = $2; qs[q] = 1 }
    END {
      for (q in qs)
        printf "   %-18s %10s %10s %10s %9s %6s %8s\n", q,
          v[q, "fairshare_queue_guaranteed_gpus"], v[q, "fairshare_queue_fair_share_gpus"],
          v[q, "fairshare_queue_allocated_gpus"], v[q, "fairshare_queue_borrowed_gpus"],
          v[q, "fairshare_queue_lent_gpus"], v[q, "fairshare_queue_pending_pods"] " pods"
    }' | sort
}

# ---- the controller ---------------------------------------------------------
bold "Starting fairshare-controller against it"
# Two ports next to the API server's; another program may hold them, so a
# controller that cannot listen is started again on the next pair.
ready() { curl -sf "http://127.0.0.1:$hport/readyz" >/dev/null 2>&1; }
# Ready, or stopped by a port someone else holds (then 2).
up_or_port_taken() {
  ready && return 0
  if grep -q 'cannot listen' "$work/controller.log"; then
    wait "$ctl_pid" 2>/dev/null || :
    return 2
  fi
  return 1
}
attempt=0
while :; do
  mport=$(( ((port + 2 * attempt) % 20000) + 30000 ))
  hport=$((mport + 1))
  "$build/fairshare-controller" --kubeconfig "$work/cluster/kubeconfig" \
    --config "$here/examples/demo/controller-config.yaml" --ledger "$work/ledger.db" \
    --listen "127.0.0.1:$mport" --health-listen "127.0.0.1:$hport" \
    --tls-cert-file "$work/cluster/server.crt" --tls-key-file "$work/cluster/server.key" \
    >"$work/controller.log" 2>&1 &
  ctl_pid=$!
  i=0
  rc=1
  while [ $i -le 150 ]; do
    rc=0
    up_or_port_taken || rc=$?
    [ $rc -ne 1 ] && break
    i=$((i + 1))
    sleep 0.2
  done
  [ $rc -eq 0 ] && break
  attempt=$((attempt + 1))
  if [ $rc -ne 2 ] || [ $attempt -ge 5 ]; then
    echo "demo: timed out waiting for the controller to be ready" >&2
    tail -n 20 "$work/controller.log" >&2
    exit 1
  fi
  say "ports $mport/$hport are taken; trying the next two"
done
say "ready: informers synced; health on http://127.0.0.1:$hport/readyz, metrics and"
say "reports on https://127.0.0.1:$mport (each request authorised by the API server)"

bold "Admin: two teams, each guaranteed 8 of the 16 GPUs"
apply "$here/examples/demo/cluster.jsonl"
say "Project team-a (vision, CC-1042)   -> Queue team-a-train     guaranteed 8 GPUs"
say "Project team-b (language, CC-2077) -> Queue team-b-research  guaranteed 8 GPUs"

# ---- team B borrows ---------------------------------------------------------
bold "Team B submits 16 one-GPU jobs; team A is idle"
n=0
while [ $n -lt 16 ]; do
  submit team-b "b-train-$n" team-b-research 1 600
  n=$((n + 1))
done
b16() { [ "$(bound team-b)" -eq 16 ]; }
wait_for "team B's 16 pods to be bound" b16
sleep 1.2 # one status/metrics refresh
say "all 16 of team B's pods run: 8 on its own guarantee, 8 borrowed from team A"
table

sleep 3 # let the ledger record some GPU-time

# ---- team A comes back ------------------------------------------------------
bold "Team A submits 8 one-GPU jobs: it wants its guaranteed GPUs back"
n=0
while [ $n -lt 8 ]; do
  submit team-a "a-train-$n" team-a-train 1 600
  n=$((n + 1))
done
start=$(date +%s.%N 2>/dev/null || date +%s)
sleep 0.3
say "while team B's borrowed pods terminate, team A's pods say why they wait:"
msg=$(kube GET /api/v1/namespaces/team-a/pods/a-train-0 | grep -o '"message":"[^"]*"' | head -n 1 | \
  sed 's/"message":"//; s/"$//')
[ -n "$msg" ] && say "  kubectl describe pod -n team-a a-train-0  ->  PodScheduled=False: $msg"
a8() { [ "$(bound team-a)" -eq 8 ]; }
wait_for "team A's 8 pods to be bound" a8
end=$(date +%s.%N 2>/dev/null || date +%s)
say "team A's 8 pods are bound ($(awk "BEGIN { printf \"%.1f\", $end - $start }") s, including a 1 s grace period)"
say "evictions issued (Eviction API): $(events Preempted); for example:"
kube GET /api/v1/events | tr '{' '\n' | grep '"reason":"Preempted"' | \
  grep -o '"message":"[^"]*"' | head -n 1 | sed 's/"message":"/     /; s/"$//'
b8() { [ "$(present team-b)" -eq 16 ] && [ "$(requeued team-b)" -eq 8 ]; }
wait_for "team B's evicted pods to be gone and requeued" b8
say "team B's 8 evicted pods are back, pending, as b-train-N-rq1: Fairshare requeues an"
say "evicted bare pod (a Job's pods would be recreated by the Job)"
sleep 1.2

bold "Final allocation per queue (kubectl fairshare queues: the status the controller writes)"
"$build/fairsharectl" queues --kubeconfig "$work/cluster/kubeconfig" | sed 's/^/   /'

# ---- why is my job pending? -------------------------------------------------
bold "Data scientist: why is my job pending?"
submit team-b not-allowed team-a-train 1 600
sleep 1.5
msg=$(kube GET /api/v1/namespaces/team-b/pods/not-allowed | grep -o '"message":"[^"]*"' | head -n 1 | \
  sed 's/"message":"//; s/"$//')
say "pod team-b/not-allowed (queue team-a-train) -> PodScheduled=False: $msg"
say "kubectl fairshare why -n team-b not-allowed:"
"$build/fairsharectl" why -n team-b not-allowed --kubeconfig "$work/cluster/kubeconfig" | \
  sed 's/^/     /'

# ---- finance ----------------------------------------------------------------
sleep 2.5 # one more ledger sample
bold "Finance: GPU-hours from the running controller (fairsharectl report --server)"
# A finance analyst's token, with the rules of the ClusterRole
# fairshare-finance (config/rbac-reports.yaml): get reports and dashboard.
printf 'finance-%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$work/finance-token"
kube POST /fake/users "{\"token\":\"$(cat "$work/finance-token")\",\"username\":\"ana@finance\",
  \"groups\":[\"finance\"],\"rules\":[{\"verbs\":[\"get\"],\"apiGroups\":[\"fairshare.dev\"],
  \"resources\":[\"reports\",\"dashboard\"]}]}" >/dev/null
today=$(date -u +%Y-%m-%d)
tomorrow=$(date -u -d tomorrow +%Y-%m-%d 2>/dev/null || date -u -v+1d +%Y-%m-%d)
"$build/fairsharectl" report --server "https://127.0.0.1:$mport" \
  --token-file "$work/finance-token" --ca-file "$work/cluster/ca.crt" \
  --from today --by team --percent --price-per-gpu-hour 2.50 | sed 's/^/   /'
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$work/cluster/ca.crt" "$@"; }
say "who may read what (TokenReview + SubjectAccessReview, cached for a minute):"
say "  no token -> $(code "https://127.0.0.1:$mport/api/v1/reports/gpu-hours?from=$today&to=$tomorrow")," \
  "finance's token on /metrics -> $(code -H "Authorization: Bearer $(cat "$work/finance-token")" \
  "https://127.0.0.1:$mport/metrics") (that needs fairshare-viewer)"
# Keep this run's ledger for the next steps (a consistent copy while the
# controller writes).
"$build/fairsharectl" ledger backup --db "$work/ledger.db" --out "$build/demo-ledger.db.tmp" \
  >/dev/null && mv "$build/demo-ledger.db.tmp" "$build/demo-ledger.db"

# ---- fractional GPUs ---------------------------------------------------------
bold "Fractional GPUs: four pods of 0.25 GPU share one real device"
# A third node of 2 GPUs (tainted, so that only this part's pods go there)
# and a team with 2 GPUs guaranteed.
kube POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-share-1",
  "labels":{"kubernetes.io/hostname":"gpu-share-1","nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"}},
  "spec":{"taints":[{"key":"fairshare.dev/demo","value":"shared","effect":"NoSchedule"}]},
  "status":{"capacity":{"cpu":"64","memory":"512Gi","pods":"110","nvidia.com/gpu":"2"},
    "allocatable":{"cpu":"64","memory":"512Gi","pods":"110","nvidia.com/gpu":"2"},
    "conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
kube POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-c"}}' >/dev/null
kube POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fairshare-system"}}' >/dev/null
kube POST /apis/fairshare.dev/v1alpha1/projects '{"apiVersion":"fairshare.dev/v1alpha1","kind":"Project",
  "metadata":{"name":"team-c"},"spec":{"namespaces":["team-c"],"defaultQueue":"team-c-dev",
  "guaranteed":{"gpu":2}}}' >/dev/null
kube POST /apis/fairshare.dev/v1alpha1/queues '{"apiVersion":"fairshare.dev/v1alpha1","kind":"Queue",
  "metadata":{"name":"team-c-dev"},"spec":{"project":"team-c","guaranteed":{"gpu":2}}}' >/dev/null
# share NAME FRACTION|"" GPUS: a pod of team C on the shared node.
share() {
  if [ -n "$2" ]; then ann="\"fairshare.dev/gpu-fraction\":\"$2\""; res='{"requests":{"cpu":"100m"}}'
  else ann='"demo":"whole"'; res="{\"limits\":{\"nvidia.com/gpu\":\"$3\"}}"; fi
  kube POST /api/v1/namespaces/team-c/pods "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",
    \"metadata\":{\"name\":\"$1\",\"annotations\":{$ann}},
    \"spec\":{\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":1,
      \"nodeSelector\":{\"kubernetes.io/hostname\":\"gpu-share-1\"},
      \"tolerations\":[{\"key\":\"fairshare.dev/demo\",\"operator\":\"Exists\"}],
      \"containers\":[{\"name\":\"embed\",\"image\":\"pytorch/pytorch\",\"resources\":$res}]}}" >/dev/null
}
# ann_of NS NAME KEY: one annotation of a pod.
ann_of() {
  kube GET "/api/v1/namespaces/$1/pods/$2" | grep -o "\"$3\":\"[^\"]*\"" | head -n 1 | \
    sed 's/^"[^"]*":"//; s/"$//'
}
for n in 0 1 2 3; do share "embed-$n" 0.25; done
say "team C submits 4 pods with fairshare.dev/gpu-fraction: \"0.25\""
resv_running() {
  resv=$(kube GET /api/v1/namespaces/fairshare-system/pods | grep -o '"name":"fairshare-gpu-[^"]*"' | \
    head -n 1 | sed 's/"name":"//; s/"$//')
  [ -n "$resv" ] && [ -n "$(ann_of fairshare-system "$resv" sim.fairshare.dev/nvidia-visible-devices)" ]
}
wait_for "the reservation pod to start" resv_running
dev=$(ann_of fairshare-system "$resv" sim.fairshare.dev/nvidia-visible-devices)
say "the controller created the reservation pod fairshare-system/$resv (nvidia.com/gpu: 1);"
say "the (simulated) device plugin gave it $dev"
# Play the container runtime: fairshare-reserve with the env it would set.
NVIDIA_VISIBLE_DEVICES="$dev" POD_NAME="$resv" POD_NAMESPACE=fairshare-system \
  "$build/fairshare-reserve" --kubeconfig "$work/cluster/kubeconfig" >"$work/reserve.log" 2>&1 &
reserve_pid=$!
c4() { [ "$(bound team-c)" -eq 4 ]; }
wait_for "the 4 fractions to be bound" c4
say "fairshare-reserve reported it; the 4 fractions are bound with that device:"
for n in 0 1 2 3; do
  say "  team-c/embed-$n  fairshare.dev/gpu-devices=$(ann_of team-c "embed-$n" fairshare.dev/gpu-devices)"
done
share whole-0 "" 1
whole_running() { [ -n "$(ann_of team-c whole-0 sim.fairshare.dev/nvidia-visible-devices)" ]; }
wait_for "the whole-GPU pod to start" whole_running
say "a whole-GPU pod on the same node gets another device from the device plugin:"
say "  team-c/whole-0  NVIDIA_VISIBLE_DEVICES=$(ann_of team-c whole-0 sim.fairshare.dev/nvidia-visible-devices)"
say "(docs/fractions.md: how it works, what is isolated, MIG, time-slicing and HAMi compared)"

bold "Done"
say "the controller's metrics: fairshare_preemptions_total=$(metrics | awk '/^fairshare_preemptions_total\{reason="reclaim"\}/ {print $2}'), binds=$(metrics | awk '/^fairshare_binds_total/ {print $2}')"
say "$(metrics | grep '^fairshare_build_info')"
say "cleaning up (fakekube, controller, $work)"

rel() { case "$1" in "$here"/*) printf '%s' "${1#"$here"/}" ;; *) printf '%s' "$1" ;; esac; }
b=$(rel "$build")
bold "Next steps"
say "The dashboard of this run (its ledger is kept in $b/demo-ledger.db):"
say "  $b/fairsharectl dashboard --db $b/demo-ledger.db --listen 127.0.0.1:8080"
say "  then open http://127.0.0.1:8080/"
say "The same report, offline, as CSV:"
say "  $b/fairsharectl report --db $b/demo-ledger.db --from $today --percent --format csv"
say "What if? Replay jobs through the engine under two configurations (docs/simulator.md):"
say "  $b/fairsharectl simulate --nodes tests/data/sim/nodes_2x8.csv --jobs tests/data/sim/jobs_2x8.csv \\"
say "    --projects tests/data/sim/teams3_lending.yaml --compare tests/data/sim/teams3_static.yaml --out sim-out"
say "  then open sim-out/report.html"
say "The engine alone, step by step: $b/fairshare-demo"
say "On a real cluster (README.md, For admins): kubectl apply -f crds/ && kubectl apply -k config/"
say "  then, as a data scientist: kubectl fairshare why POD -n NAMESPACE, kubectl fairshare queues"
say "  (kubectl finds fairsharectl as a plugin once it is on PATH as kubectl-fairshare: README.md)"
say "  and as finance: kubectl fairshare report --from last-month --server ... (docs/ledger.md)"
