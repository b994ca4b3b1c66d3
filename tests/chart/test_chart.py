#!/usr/bin/env python3
"""The Helm chart charts/fairshare, rendered without helm by
scripts/render-chart.py (ctest chart/render): the defaults make what
config/ holds (scripts/gen-config.sh --check), every value the chart
offers reaches the output, versions line up, and the renderer refuses
what it cannot render. Where a `helm` binary is on PATH, `helm lint` and
`helm template` run too and must give the same objects.
The real API server's verdict (server-side dry-run) is in the e2e suite
(tests/e2e/test_admin.c, test_chart_server_dry_run)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(SRC, "charts", "fairshare")
RENDER = os.path.join(SRC, "scripts", "render-chart.py")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


def render(*args, chart=CHART, ok=True):
    p = subprocess.run([sys.executable, RENDER, chart, "--namespace", "fairshare-system",
                        "--name", "fairshare", *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise SystemExit("render-chart %s failed: %s" % (" ".join(args), p.stderr))
    return p


def objects(text):
    return [d for d in yaml.safe_load_all(text) if d]


def find(docs, kind, name):
    for d in docs:
        if d["kind"] == kind and d["metadata"]["name"] == name:
            return d
    return None


def test_config_is_fresh():
    p = subprocess.run(["sh", os.path.join(SRC, "scripts", "gen-config.sh"), "--check"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "config/ is stale against the chart:\n" + p.stderr)


def test_defaults():
    docs = objects(render("--include-crds").stdout)
    want = [("CustomResourceDefinition", "projects.fairshare.dev"),
            ("CustomResourceDefinition", "queues.fairshare.dev"),
            ("ServiceAccount", "fairshare-controller"), ("ClusterRole", "fairshare-controller"),
            ("ClusterRoleBinding", "fairshare-controller"), ("Role", "fairshare-leader-election"),
            ("RoleBinding", "fairshare-leader-election"), ("ClusterRole", "fairshare-finance"),
            ("ClusterRole", "fairshare-viewer"), ("ConfigMap", "fairshare-config"),
            ("PersistentVolumeClaim", "fairshare-ledger"), ("Deployment", "fairshare-controller"),
            ("Service", "fairshare-controller"), ("NetworkPolicy", "fairshare-controller"),
            ("Service", "fairshare-webhook"), ("MutatingWebhookConfiguration", "fairshare"),
            ("Role", "fairshare-webhook-cert"), ("RoleBinding", "fairshare-webhook-cert"),
            ("ServiceAccount", "fairshare-reserve"), ("Role", "fairshare-reserve"),
            ("RoleBinding", "fairshare-reserve")]
    for kind, name in want:
        check(find(docs, kind, name) is not None, "defaults: no %s %s" % (kind, name))
    kinds = [d["kind"] for d in docs]
    check("Namespace" not in kinds, "defaults: a Namespace (helm --create-namespace makes it)")
    check("ServiceMonitor" not in kinds, "defaults: a ServiceMonitor (it is optional)")
    check(len(docs) == len(want), "defaults: %d objects, want %d" % (len(docs), len(want)))
    # The CRDs are crds/'s files, unchanged.
    for f in ("fairshare.dev_projects.yaml", "fairshare.dev_queues.yaml"):
        with open(os.path.join(SRC, "crds", f)) as fh:
            crd = objects(fh.read())[0]
        check(find(docs, "CustomResourceDefinition", crd["metadata"]["name"]) == crd,
              "the chart's CRD %s differs from crds/%s" % (crd["metadata"]["name"], f))
    for d in docs:
        if d["kind"] not in ("CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
                             "MutatingWebhookConfiguration"):
            check(d["metadata"].get("namespace") == "fairshare-system",
                  "%s %s is not in the release namespace" % (d["kind"], d["metadata"]["name"]))
    # The ConfigMap holds the config value, and the Deployment its hash.
    cm = find(docs, "ConfigMap", "fairshare-config")
    values = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    want_cfg = values["config"]
    # The namespace keys are empty in the values: the release namespace.
    for sect, key in NS_KEYS:
        check(want_cfg[sect][key] == "", "values.yaml: config.%s.%s is not empty" % (sect, key))
        want_cfg[sect][key] = "fairshare-system"
    check(yaml.safe_load(cm["data"]["config.yaml"]) == want_cfg,
          "the ConfigMap's config.yaml is not the values' config")
    dep = find(docs, "Deployment", "fairshare-controller")
    pod = dep["spec"]["template"]["spec"]
    check(dep["spec"]["replicas"] == 2, "defaults: replicas != 2")
    check("nodeSelector" not in pod and "tolerations" not in pod and
          "priorityClassName" not in pod, "defaults: empty scheduling values were rendered")
    check(re.fullmatch(r"[0-9a-f]{64}", dep["spec"]["template"]["metadata"]["annotations"]
                       ["fairshare.dev/config-sha256"]) is not None, "no config hash")
    # The webhook calls the Service of the release namespace, and spares it.
    wh = find(docs, "MutatingWebhookConfiguration", "fairshare")["webhooks"][0]
    check(wh["clientConfig"]["service"]["namespace"] == "fairshare-system",
          "the webhook calls a Service outside the release namespace")
    check("fairshare-system" in wh["namespaceSelector"]["matchExpressions"][0]["values"],
          "the webhook is called for the controller's own namespace")
    return docs


NS_KEYS = [("leaderElection", "leaseNamespace"), ("fractions", "reservationNamespace"),
           ("webhook", "namespace")]


def test_other_namespace():
    """Installed with -n team-x and nothing else: every namespaced object,
    and every namespace the controller's config names, is team-x."""
    docs = objects(render("--namespace", "team-x").stdout)
    for d in docs:
        if d["kind"] not in ("ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration"):
            check(d["metadata"].get("namespace") == "team-x",
                  "-n team-x: %s %s is in %s" % (d["kind"], d["metadata"]["name"],
                                                d["metadata"].get("namespace")))
        for subj in d.get("subjects", []):
            check(subj.get("namespace") == "team-x",
                  "-n team-x: %s %s binds %s/%s" % (d["kind"], d["metadata"]["name"],
                                                   subj.get("namespace"), subj["name"]))
    cfg = yaml.safe_load(find(docs, "ConfigMap", "fairshare-config")["data"]["config.yaml"])
    for sect, key in NS_KEYS:
        check(cfg[sect][key] == "team-x", "-n team-x: config %s.%s is %r"
              % (sect, key, cfg[sect][key]))
    wh = find(docs, "MutatingWebhookConfiguration", "fairshare")["webhooks"][0]
    check(wh["clientConfig"]["service"]["namespace"] == "team-x", "-n team-x: webhook Service")
    check("team-x" in wh["namespaceSelector"]["matchExpressions"][0]["values"],
          "-n team-x: the webhook is called for the controller's own namespace")
    # A key that is set wins, in the config and in the RBAC made for it;
    # the values themselves are not changed (deepCopy) for later templates.
    docs = objects(render("--namespace", "team-x",
                          "--set", "config.leaderElection.leaseNamespace=leases",
                          "--set", "config.fractions.reservationNamespace=gpu-resv").stdout)
    cfg = yaml.safe_load(find(docs, "ConfigMap", "fairshare-config")["data"]["config.yaml"])
    check(cfg["leaderElection"]["leaseNamespace"] == "leases" and
          cfg["fractions"]["reservationNamespace"] == "gpu-resv" and
          cfg["webhook"]["namespace"] == "team-x", "set namespace keys: %r" % cfg)
    for kind, name, ns in (("Role", "fairshare-leader-election", "leases"),
                           ("RoleBinding", "fairshare-leader-election", "leases"),
                           ("ServiceAccount", "fairshare-reserve", "gpu-resv"),
                           ("Role", "fairshare-reserve", "gpu-resv"),
                           ("RoleBinding", "fairshare-reserve", "gpu-resv"),
                           ("ServiceAccount", "fairshare-controller", "team-x")):
        d = find(docs, kind, name)
        check(d is not None and d["metadata"]["namespace"] == ns,
              "set namespace keys: %s %s not in %s" % (kind, name, ns))


def test_versions(docs):
    meta = yaml.safe_load(open(os.path.join(CHART, "Chart.yaml")))
    with open(os.path.join(SRC, "CMakeLists.txt")) as fh:
        m = re.search(r"project\(fairshare VERSION ([0-9.]+)", fh.read())
    check(m is not None and meta["appVersion"] == m.group(1),
          "Chart.yaml appVersion %s != CMakeLists.txt project VERSION %s"
          % (meta["appVersion"], m and m.group(1)))
    dep = find(docs, "Deployment", "fairshare-controller")
    image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    check(image == "ghcr.io/fairshare-dev/fairshare:" + meta["appVersion"],
          "the image %s is not tagged with appVersion %s" % (image, meta["appVersion"]))
    kust = yaml.safe_load(open(os.path.join(SRC, "config", "kustomization.yaml")))
    check(kust["images"][0]["newTag"] == meta["appVersion"],
          "config/kustomization.yaml's image tag %s != appVersion" % kust["images"][0]["newTag"])
    # Each CRD serves the API version the docs and the controller use.
    for name in ("projects.fairshare.dev", "queues.fairshare.dev"):
        crd = find(docs, "CustomResourceDefinition", name)
        served = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
        check(served == ["v1alpha1"], "%s stores %s, want v1alpha1" % (name, served))


def test_values_reach_the_output():
    vals = {
        "replicas": 3,
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane",
                         "operator": "Exists", "effect": "NoSchedule"}],
        "priorityClassName": "system-cluster-critical",
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
        "image": {"repository": "registry.example.com/fs", "tag": "9.9.9",
                  "pullPolicy": "Always"},
        "ledger": {"storageClassName": "fast", "size": "50Gi"},
        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
        "namespace": {"create": True},
        "networkPolicy": {"enabled": False},
        "reportRoles": {"create": False},
        "config": {"logLevel": "debug", "leaderElection": {"leaseName": "fs-lease"}},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(vals, f)
    try:
        docs = objects(render("-f", f.name, "--set", "service.port=9443").stdout)
    finally:
        os.unlink(f.name)
    dep = find(docs, "Deployment", "fairshare-controller")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    check(dep["spec"]["replicas"] == 3, "replicas not set")
    check(pod.get("nodeSelector") == vals["nodeSelector"], "nodeSelector not set")
    check(pod.get("tolerations") == vals["tolerations"], "tolerations not set")
    check(pod.get("priorityClassName") == "system-cluster-critical", "priorityClassName")
    # Maps merge with the defaults, as helm merges values: limits stay.
    check(c["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"},
                             "limits": {"cpu": "2", "memory": "1Gi"}}, "resources not set")
    check(c["image"] == "registry.example.com/fs:9.9.9" and c["imagePullPolicy"] == "Always",
          "image not set")
    pvc = find(docs, "PersistentVolumeClaim", "fairshare-ledger")
    check(pvc["spec"].get("storageClassName") == "fast" and
          pvc["spec"]["resources"]["requests"]["storage"] == "50Gi", "ledger values not set")
    sm = find(docs, "ServiceMonitor", "fairshare-controller")
    check(sm is not None and sm["metadata"]["labels"].get("release") == "prom" and
          sm["spec"]["endpoints"][0]["scheme"] == "https", "ServiceMonitor not rendered")
    check(find(docs, "Namespace", "fairshare-system") is not None, "namespace.create")
    check(find(docs, "NetworkPolicy", "fairshare-controller") is None, "networkPolicy off")
    check(find(docs, "ClusterRole", "fairshare-finance") is None, "reportRoles off")
    svc = find(docs, "Service", "fairshare-controller")
    check(svc["spec"]["ports"][0]["port"] == 9443, "--set service.port")
    cfg = yaml.safe_load(find(docs, "ConfigMap", "fairshare-config")["data"]["config.yaml"])
    check(cfg["logLevel"] == "debug" and cfg["leaderElection"]["leaseName"] == "fs-lease" and
          cfg["leaderElection"]["leaseDuration"] == "15s",
          "config values were not merged into the defaults")
    role = find(docs, "Role", "fairshare-leader-election")
    check(role["rules"][1]["resourceNames"] == ["fs-lease"], "the lease Role's name")
    # An existing claim: no PVC, and the Deployment mounts that claim.
    docs = objects(render("--set", "ledger.existingClaim=mine").stdout)
    check(find(docs, "PersistentVolumeClaim", "fairshare-ledger") is None, "existingClaim: PVC")
    vols = find(docs, "Deployment", "fairshare-controller")["spec"]["template"]["spec"]["volumes"]
    check({"name": "ledger", "persistentVolumeClaim": {"claimName": "mine"}} in vols,
          "existingClaim not mounted")


def test_renderer_refuses():
    tmp = tempfile.mkdtemp()
    try:
        shutil.copy(os.path.join(CHART, "Chart.yaml"), tmp)
        with open(os.path.join(tmp, "values.yaml"), "w") as fh:
            fh.write("a: {b: 1}\nlist: [1, 2]\n")
        os.mkdir(os.path.join(tmp, "templates"))
        cases = [("{{ range .Values.list }}x{{ end }}", "unsupported action"),
                 ("v: {{ .Values.a.c }}", "no value .Values.a.c"),
                 ("v: {{ .Values.a }}", "without toYaml"),
                 ("{{ if .Values.a.b }}v: 1", "missing end"),
                 ("v: {{ lookup \"v1\" }}", "unsupported function"),
                 ("v: {{ .Values.a.b", "unclosed"),
                 ("v: [{{ .Values.a.b }}", "not YAML"),
                 ("{{ $x := 1 }}{{ $x = 2 }}", "only $name := PIPELINE"),
                 ("v: {{ $nope }}", "undefined variable $nope"),
                 ("{{ if true }}{{ $x := 1 }}{{ end }}v: {{ $x }}", "undefined variable $x"),
                 ("{{ $x := .Values.a }}v: {{ $x.c }}", "no value $x.c"),
                 ("{{ $_ := set .Values.list \"k\" 1 }}", "set wants a map"),
                 ("v: {{ $ }}", "unsupported variable")]
        for text, want in cases:
            with open(os.path.join(tmp, "templates", "t.yaml"), "w") as fh:
                fh.write(text + "\n")
            p = render(chart=tmp, ok=False)
            check(p.returncode == 1 and want in p.stderr,
                  "renderer on %r: exit %d, %r (want %r)" % (text, p.returncode, p.stderr, want))
        # Go's trim markers and if/else, as helm renders them.
        with open(os.path.join(tmp, "templates", "t.yaml"), "w") as fh:
            fh.write("k:\n  {{- if .Values.list }}\n  - yes\n  {{- else }}\n  - no\n"
                     "  {{- end }}\nn: {{ .Values.a.b | quote }}\n"
                     "m: {{ .Values.missing | default \"d\" }}\n".replace(".Values.missing",
                                                                           "\"\""))
        p = render(chart=tmp)
        check(p.stdout.endswith("k:\n  - yes\nn: \"1\"\nm: d\n"), "trim/if/quote: %r" % p.stdout)
        # Variables, deepCopy and set: the copy changes, the values do not.
        with open(os.path.join(tmp, "templates", "t.yaml"), "w") as fh:
            fh.write("{{- $c := deepCopy .Values.a }}\n{{- $_ := set $c \"b\" 2 }}\n"
                     "{{- if .Values.list }}{{ $in := 5 }}{{ else }}{{ $in := $nope }}{{ end }}\n"
                     "c: {{ $c.b }}\nv: {{ .Values.a.b }}\ny: {{ toYaml $c | quote }}\n")
        p = render(chart=tmp)
        check(p.stdout.endswith("c: 2\nv: 1\ny: \"b: 2\"\n"),
              "variables/deepCopy/set: %r %r" % (p.stdout, p.stderr))
    finally:
        shutil.rmtree(tmp)


def test_with_helm(docs):
    helm = shutil.which("helm")
    if not helm:
        print("chart: no helm on PATH: helm lint/template not run (Debian has no helm package)")
        return
    p = subprocess.run([helm, "lint", "--strict", CHART], capture_output=True, text=True)
    check(p.returncode == 0, "helm lint: " + p.stdout + p.stderr)
    p = subprocess.run([helm, "template", "fairshare", CHART, "-n", "fairshare-system",
                        "--include-crds"], capture_output=True, text=True)
    check(p.returncode == 0, "helm template: " + p.stderr)
    theirs = objects(p.stdout)
    key = lambda d: (d["kind"], d["metadata"]["name"])
    check(sorted(theirs, key=key) == sorted(docs, key=key),
          "helm template and render-chart.py differ")


def main():
    test_config_is_fresh()
    docs = test_defaults()
    test_versions(docs)
    test_other_namespace()
    test_values_reach_the_output()
    test_renderer_refuses()
    test_with_helm(docs)
    if failures:
        print("chart: %d check(s) failed" % len(failures))
        return 1
    print("chart: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
