#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of the Helm chart charts/gpu-extender against the kustomize manifests.

Usage:
  helm_test.py --root DIR --helm PATH --binary PATH [--kubectl PATH]
      run every check (real helm, real gpu-extender, kustomize via kubectl)
  helm_test.py --root DIR --sync
      copy manifests/monitoring's dashboard JSON and alert rules into the
      chart's files/ (the chart cannot read files outside its directory)

What is checked:
  - `helm lint` (and `--strict`, with every optional part on) reports no
    warning and no error; INFO lines are allowed (the chart has no icon);
  - the chart's copies in files/ equal manifests/, and values.yaml's config
    equals manifests/overlays/gpu-pods-only/config.json (config/config.json
    less the two score keys scheduler.allPods adds);
  - `helm template -n gpu-extender` with default values renders exactly the
    objects of `kubectl kustomize manifests` (the all-pods install, with the
    scheduler/ directory) but the Namespace, which the chart never creates,
    with monitoring.enabled=true those of manifests/ plus manifests/monitoring,
    with scheduler.enabled=false those of manifests/overlays/gpu-pods-only
    minus manifests/scheduler.
    Objects are matched by kind/namespace/name and compared after dropping
    the labels only Helm adds (helm.sh/chart, app.kubernetes.io/managed-by,
    app.kubernetes.io/instance, app.kubernetes.io/version) and parsing the
    ConfigMaps' embedded .json/.yaml documents (comments and key order of the
    embedded text may differ; the content may not);
  - scheduler.allPods=false renders exactly the objects of `kubectl kustomize
    manifests/overlays/gpu-pods-only` (its profiles, HTTPS included, and
    extender config, no MutatingAdmissionPolicy) but the Namespace; the
    default (allPods) refuses an API server before 1.36, allPods=false does not;
  - the chart's config.json passes `gpu-extender --check-config` (defaults,
    TLS, an override) and a broken override is rejected;
  - non-default values (replicas 3, TLS with caData, monitoring, the second
    scheduler, another release namespace, the placement values of both
    Deployments, the images) change exactly the fields they should:
    every differing field is listed and compared with the expected set;
  - values.schema.json turns misspelt keys and wrong types into errors, inside
    config too (its schema is generated from the key table).

kustomize: the kubectl given with --kubectl (or $KUBECTL), else the newest
$HOME/.cache/gpu-extender/k8s-*/kubectl built by tests/k8s/build.sh, else
this script reads kustomization.yaml's `resources:` itself (refusing any
other kustomize field, so it can never silently disagree with kustomize).
The first line of output says which was used. The last line reads
"N passed, M failed"; the exit status is 1 when anything failed.
"""

import argparse
import base64
import copy
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

from gxtest import Checker, find_kubectl

CHART = "charts/gpu-extender"
HELM_ONLY_LABELS = {
    "helm.sh/chart", "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance", "app.kubernetes.io/version",
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "MutatingAdmissionPolicy",
                  "MutatingAdmissionPolicyBinding"}
# The install for clusters before 1.36: what scheduler.allPods=false renders.
GPU_PODS_ONLY = "manifests/overlays/gpu-pods-only"
RELEASE = "gpu-extender"
# The release namespace the tests install into: the manifests' namespace.
NAMESPACE = "gpu-extender"


def manifests_scheduler_tag(root):
    """newTag of the kube-scheduler image in manifests/scheduler/kustomization.yaml."""
    with open(os.path.join(root, "manifests/scheduler/kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    tags = [i.get("newTag") for i in k.get("images") or []
            if i.get("name") == "registry.k8s.io/kube-scheduler"]
    if len(tags) != 1 or not tags[0]:
        raise RuntimeError("manifests/scheduler/kustomization.yaml: no newTag for "
                           "registry.k8s.io/kube-scheduler")
    return tags[0]


# ---------------------------------------------------------------- tools

def run(cmd, cwd=None, check=True):
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}: "
                           f"{(res.stderr or res.stdout)[:2000]}")
    return res


class Helm:
    """`helm template` into the release namespace of the manifests (gpu-extender), as if the
    API server were the version of the manifests' kube-scheduler image (KUBE_VERSION): the
    chart's scheduler image defaults to the API server's version."""

    def __init__(self, helm, root):
        self.helm = helm
        self.root = root
        self.kube_version = manifests_scheduler_tag(root)

    def cmd(self, namespace, kube_version):
        return [self.helm, "template", RELEASE, CHART, "--namespace", namespace,
                "--kube-version", kube_version or self.kube_version]

    def template(self, *sets, values=None, namespace=NAMESPACE, kube_version=None):
        cmd = self.cmd(namespace, kube_version)
        for s in sets:
            cmd += ["--set", s]
        if values is not None:
            fd, path = tempfile.mkstemp(suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                yaml.safe_dump(values, f)
            cmd += ["-f", path]
        try:
            out = run(cmd, cwd=self.root).stdout
        finally:
            if values is not None:
                os.unlink(path)
        return load_stream(out)

    def template_fails(self, *sets, values=None):
        cmd = self.cmd(NAMESPACE, None)
        if values is not None:
            for k, v in values.items():
                cmd += ["--set-json", f"{k}={json.dumps(v)}"]
        for s in sets:
            cmd += ["--set", s]
        return run(cmd, cwd=self.root, check=False)


class Kustomize:
    """`kubectl kustomize`, or a reader of plain resources: lists."""

    def __init__(self, kubectl, root):
        self.kubectl = kubectl
        self.root = root

    def describe(self):
        if self.kubectl:
            v = run([self.kubectl, "version", "--client"], check=False).stdout.strip()
            return f"kubectl kustomize ({self.kubectl}; {' / '.join(v.splitlines())})"
        return "kustomization.yaml resources: read by helm_test.py (no built kubectl yet)"

    def base(self, rel):
        """What the chart renders of @rel: everything but the Namespace, which the chart leaves
        to `helm install --create-namespace` (the kustomize base creates it)."""
        return [d for d in self.build(rel) if d.get("kind") != "Namespace"]

    def build(self, rel):
        if self.kubectl:
            return load_stream(run([self.kubectl, "kustomize", os.path.join(self.root, rel)]).stdout)
        return self._read(os.path.join(self.root, rel))

    def _read(self, path):
        if os.path.isdir(path):
            for n in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
                k = os.path.join(path, n)
                if os.path.exists(k):
                    break
            else:
                raise RuntimeError(f"{path}: no kustomization.yaml")
            with open(k) as f:
                kz = yaml.safe_load(f)
            extra = set(kz) - {"apiVersion", "kind", "resources"}
            if extra:
                raise RuntimeError(f"{k}: fields {sorted(extra)} need the real kustomize "
                                   f"(give --kubectl)")
            docs = []
            for r in kz.get("resources") or []:
                docs += self._read(os.path.join(path, r))
            return docs
        with open(path) as f:
            return [d for d in yaml.safe_load_all(f) if d]


def load_stream(text):
    return [d for d in yaml.safe_load_all(text) if d]


# ---------------------------------------------------------------- normalising

def oid(doc):
    md = doc.get("metadata") or {}
    ns = md.get("namespace") or ""
    return (doc.get("kind", ""), ns, md.get("name", ""))


def fmt(i):
    k, ns, n = i
    return f"{k} {ns + '/' if ns else ''}{n}"


def normalise(doc):
    """The comparable content of one object."""
    d = copy.deepcopy(doc)
    md = d.get("metadata") or {}
    labels = md.get("labels")
    if labels is not None:
        for k in HELM_ONLY_LABELS:
            labels.pop(k, None)
        if not labels:
            md.pop("labels")
    if d.get("kind") == "ConfigMap" and isinstance(d.get("data"), dict):
        for k, v in list(d["data"].items()):
            if k.endswith(".json"):
                d["data"][k] = {"<parsed json>": json.loads(v)}
            elif k.endswith((".yaml", ".yml")):
                d["data"][k] = {"<parsed yaml>": yaml.safe_load(v)}
    return d


def index(docs):
    out = {}
    for d in docs:
        i = oid(d)
        if i in out:
            raise RuntimeError(f"{fmt(i)} appears twice")
        out[i] = d
    return out


def dump(d):
    return yaml.safe_dump(d, sort_keys=True, default_flow_style=False, width=1000).splitlines()


def compare_sets(chart_docs, kz_docs, chart_label="helm template", kz_label="kustomize"):
    """Problems, one per differing object, with a unified diff."""
    a = {i: normalise(d) for i, d in index(chart_docs).items()}
    b = {i: normalise(d) for i, d in index(kz_docs).items()}
    problems = []
    for i in sorted(set(b) - set(a)):
        problems.append(f"{fmt(i)}: in {kz_label} only")
    for i in sorted(set(a) - set(b)):
        problems.append(f"{fmt(i)}: in {chart_label} only")
    for i in sorted(set(a) & set(b)):
        if a[i] != b[i]:
            diff = difflib.unified_diff(dump(b[i]), dump(a[i]), kz_label, chart_label,
                                        lineterm="", n=2)
            problems.append(f"{fmt(i)} differs:\n    " + "\n    ".join(diff))
    return problems


def paths_differing(a, b, prefix=""):
    """Dotted paths where two JSON-like values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            p = f"{prefix}.{k}" if prefix else str(k)
            if k not in a or k not in b:
                out.append(p)
            else:
                out += paths_differing(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for n, (x, y) in enumerate(zip(a, b)):
            out += paths_differing(x, y, f"{prefix}[{n}]")
        return out
    return [] if a == b else [prefix]


def helm_labels_problems(docs):
    """Every rendered object carries exactly the Helm labels on top of the manifests'."""
    problems = []
    for d in docs:
        labels = (d.get("metadata") or {}).get("labels") or {}
        missing = HELM_ONLY_LABELS - set(labels)
        if missing:
            problems.append(f"{fmt(oid(d))}: no {sorted(missing)}")
        elif labels["app.kubernetes.io/managed-by"] != "Helm":
            problems.append(f"{fmt(oid(d))}: managed-by {labels['app.kubernetes.io/managed-by']}")
    return problems


# ---------------------------------------------------------------- accessors

def get(docs, kind, name, ns=None):
    for d in docs:
        k, n_s, n = oid(d)
        if k == kind and n == name and (ns is None or n_s == ns):
            return d
    raise KeyError(f"{kind} {name} not rendered")


def config_of(docs, ns="gpu-extender"):
    return json.loads(get(docs, "ConfigMap", "gpu-extender-config", ns)["data"]["config.json"])


def sched_config(docs, name):
    return yaml.safe_load(get(docs, "ConfigMap", name)["data"]["kube-scheduler-config.yaml"])


def container(deploy):
    return deploy["spec"]["template"]["spec"]["containers"][0]


# ---------------------------------------------------------------- checks

def chk_lint(helm, root):
    problems = []
    for args in (["lint", CHART],
                 ["lint", "--strict", CHART, "--set",
                  "monitoring.enabled=true,tls.enabled=true,tls.caData=Y2E=,replicas=3"],
                 ["lint", "--strict", CHART, "--set", "scheduler.enabled=false"],
                 ["lint", "--strict", CHART, "--set", "scheduler.allPods=false"]):
        res = run([helm] + args, cwd=root, check=False)
        out = res.stdout + res.stderr
        bad = [line for line in out.splitlines()
               if line.startswith(("[WARNING]", "[ERROR]")) or "Error" in line]
        if res.returncode != 0 or bad:
            problems.append(f"helm {' '.join(args)} exited {res.returncode}: "
                            + ("; ".join(bad) or out[-1000:]))
        infos = [line for line in out.splitlines() if line.startswith("[INFO]")]
        unexpected = [i for i in infos if "icon is recommended" not in i]
        if unexpected:
            problems.append(f"helm {' '.join(args)}: unexpected INFO {unexpected}")
    return problems


def chk_copies(root):
    problems = []
    chart = os.path.join(root, CHART)
    with open(os.path.join(root, "manifests/monitoring/grafana-dashboard.json"), "rb") as f:
        want = f.read()
    with open(os.path.join(chart, "files/grafana-dashboard.json"), "rb") as f:
        have = f.read()
    if want != have:
        problems.append(f"{CHART}/files/grafana-dashboard.json differs from "
                        "manifests/monitoring/grafana-dashboard.json (run helm_test.py --sync)")
    with open(os.path.join(root, "manifests/monitoring/prometheusrule.yaml")) as f:
        spec = yaml.safe_load(f)["spec"]
    with open(os.path.join(chart, "files/prometheus-rules.yaml")) as f:
        rules = yaml.safe_load(f)
    if spec != rules:
        problems.append(f"{CHART}/files/prometheus-rules.yaml differs from the spec of "
                        "manifests/monitoring/prometheusrule.yaml (run helm_test.py --sync)")
    # the chart adds score.relative and score.fgd_idle_card_milli with scheduler.allPods
    with open(os.path.join(root, GPU_PODS_ONLY, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(chart, "values.yaml")) as f:
        values = yaml.safe_load(f)
    if values.get("config") != cfg:
        problems += [f"values.yaml config differs from {GPU_PODS_ONLY}/config.json at "
                     + ", ".join(paths_differing(values.get("config"), cfg))]
    return problems


def chk_default(helm, kz):
    chart = helm.template()
    return compare_sets(chart, kz.base("manifests")) + helm_labels_problems(chart)


def chk_monitoring(helm, kz):
    chart = helm.template("monitoring.enabled=true")
    return compare_sets(chart, kz.base("manifests") + kz.build("manifests/monitoring"),
                        kz_label="kustomize manifests + manifests/monitoring")


def chk_no_scheduler(helm, kz):
    """Without its scheduler the chart cannot know which pods reach the extender: its config is
    the GPU-pods-only one (no score.relative)."""
    sched = {oid(d) for d in kz.build("manifests/scheduler")}
    if not sched:
        return ["manifests/scheduler renders nothing"]
    base = [d for d in kz.base(GPU_PODS_ONLY) if oid(d) not in sched]
    return compare_sets(helm.template("scheduler.enabled=false"), base,
                        kz_label=f"kustomize {GPU_PODS_ONLY} - manifests/scheduler")


def chk_gpu_pods_only(helm, kz):
    """scheduler.allPods=false renders what the gpu-pods-only overlay does, object by object:
    its profiles (HTTP and HTTPS), its extender config, no MutatingAdmissionPolicy."""
    chart = helm.template("scheduler.allPods=false")
    problems = compare_sets(chart, kz.base(GPU_PODS_ONLY), kz_label=f"kustomize {GPU_PODS_ONLY}")
    if any(d["kind"].startswith("MutatingAdmissionPolicy") for d in chart):
        problems.append("allPods=false renders a MutatingAdmissionPolicy")
    return problems


def chk_kube_version(helm):
    """The all-pods default needs MutatingAdmissionPolicy v1 (Kubernetes 1.36): an older API
    server gets an error that names the way out; allPods=false installs there."""
    problems = []
    for version, sets, ok in (("v1.35.4", [], False), ("v1.35.4", ["scheduler.allPods=false"], True),
                              ("v1.34.0", ["scheduler.allPods=false"], True),
                              ("v1.36.0", [], True), ("v1.36.1-eks-1a2b3c", [], True)):
        cmd = helm.cmd(NAMESPACE, version)
        for x in sets:
            cmd += ["--set", x]
        res = run(cmd, cwd=helm.root, check=False)
        if ok and res.returncode != 0:
            problems.append(f"{version} {sets}: exit {res.returncode}: {res.stderr.strip()[:300]}")
        if not ok and (res.returncode == 0 or "--set scheduler.allPods=false" not in res.stderr):
            problems.append(f"{version} {sets}: exit {res.returncode}, want an error naming "
                            f"--set scheduler.allPods=false: {res.stderr.strip()[:300]}")
    return problems


TLS_DIR = "/etc/gpu-extender-tls/"


def check_config(binary, cfg):
    """gpu-extender --check-config on @cfg; the Secret's mount point is stood in for by a
    fresh self-signed pair, since the binary reads the certificate files it is given."""
    cfg = copy.deepcopy(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        server = cfg.get("server") or {}
        if any(str(server.get(k) or "").startswith(TLS_DIR)
               for k in ("tls_cert_file", "tls_key_file")):
            run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                 "/CN=gpu-extender.gpu-extender.svc", "-keyout", os.path.join(tmp, "tls.key"),
                 "-out", os.path.join(tmp, "tls.crt")])
            for k in ("tls_cert_file", "tls_key_file"):
                if str(server.get(k) or "").startswith(TLS_DIR):
                    server[k] = os.path.join(tmp, server[k][len(TLS_DIR):])
        path = os.path.join(tmp, "config.json")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
        res = subprocess.run([binary, "--check-config", path], capture_output=True, text=True,
                             timeout=30)
        return res.returncode, (res.stdout + res.stderr).strip()


def chk_check_config(helm, binary):
    problems = []
    for label, sets in (("defaults", []),
                        ("tls.enabled", ["tls.enabled=true"]),
                        ("overrides", ["config.log.level=debug",
                                       "config.prometheus.url=http://prometheus.monitoring.svc:9090",
                                       "config.score.policy=spread",
                                       "config.sharing.default_slots=8"])):
        rc, out = check_config(binary, config_of(helm.template(*sets)))
        if rc != 0:
            problems.append(f"{label}: --check-config exited {rc}: {out[:500]}")
    # A rule across keys is beyond the schema: the binary still refuses it.
    rc, out = check_config(binary, config_of(helm.template(
        "config.sharing.memory_reserve_mib=0", "config.score.label_rules[0].label=a",
        "config.score.label_rules[0].operator=Gt", "config.score.label_rules[0].weight=1",
        "config.score.label_rules[0].values[0]=x")))
    if rc != 1:
        problems.append(f"label rule Gt x: --check-config exited {rc}, want 1 ({out[:200]})")
    return problems


def chk_config_schema(helm, root):
    """values.schema.json's config (generated from the key table) refuses typos, wrong types,
    values out of range and unknown names at helm template/lint, and accepts every config
    the repository ships."""
    problems = []
    for sets, want in ((["config.scoring.policyy=x"], "at '/config': additional properties "
                                                      "'scoring' not allowed"),
                       (["config.score.policyy=x"], "additional properties 'policyy'"),
                       (["config.score.policy=nonsense"], "/config/score/policy"),
                       (["config.server.port=70000"], "/config/server/port"),
                       (["config.server.port=abc"], "/config/server/port"),
                       (["config.sharing.product_slots.A100=0"], "/config/sharing/product_slots"),
                       (["config.metrics.names.util=not-a-name"], "/config/metrics/names/util"),
                       (["config.score.label_rules[0].label=a"], "/config/score/label_rules/0")):
        res = helm.template_fails(*sets)
        if res.returncode == 0 or want not in res.stderr:
            problems.append(f"--set {' '.join(sets)}: exit {res.returncode}, want an error "
                            f"naming {want!r}: {res.stderr.strip()[:300]}")
    res = run([helm.helm, "lint", "--strict", CHART, "--set", "config.scoring.policyy=x"],
              cwd=root, check=False)
    if res.returncode == 0 or "scoring" not in res.stdout + res.stderr:
        problems.append(f"helm lint with config.scoring.policyy: exit {res.returncode}")
    for rel in ("config/config.json", "manifests/config.json", f"{GPU_PODS_ONLY}/config.json"):
        with open(os.path.join(root, rel)) as f:
            cfg = json.load(f)
        res = helm.template_fails(values={"config": cfg})
        if res.returncode != 0:
            problems.append(f"{rel} as config: exit {res.returncode}: {res.stderr.strip()[:300]}")
    return problems


def expect_paths(problems, what, got, want):
    got, want = set(got), set(want)
    if got != want:
        if got - want:
            problems.append(f"{what}: unexpected changes at {sorted(got - want)}")
        if want - got:
            problems.append(f"{what}: expected changes missing at {sorted(want - got)}")


def chk_non_default(helm, kz):
    """replicas 3, TLS with caData, monitoring, scheduler on: exactly these differences."""
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n").decode()
    chart = index(helm.template(values={
        "replicas": 3,
        "tls": {"enabled": True, "secretName": "my-tls", "caData": ca},
        "monitoring": {"enabled": True,
                       "serviceMonitor": {"labels": {"release": "kps"}},
                       "prometheusRule": {"labels": {"release": "kps"}}},
        "scheduler": {"enabled": True},
    }))
    want = index(kz.base("manifests") + kz.build("manifests/monitoring"))
    problems = []
    if set(chart) != set(want):
        problems.append(f"objects differ: chart only {sorted(map(fmt, set(chart) - set(want)))}, "
                        f"kustomize only {sorted(map(fmt, set(want) - set(chart)))}")
        return problems
    expected = {
        ("Deployment", "gpu-extender", "gpu-extender"): {
            "spec.replicas": 3,
            "spec.template.spec.containers[0].ports[0].name": "https",
            "spec.template.spec.containers[0].ports[0].containerPort": 8443,
            "spec.template.spec.containers[0].readinessProbe.httpGet.port": "https",
            "spec.template.spec.containers[0].readinessProbe.httpGet.scheme": "HTTPS",
            "spec.template.spec.containers[0].livenessProbe.httpGet.port": "https",
            "spec.template.spec.containers[0].livenessProbe.httpGet.scheme": "HTTPS",
            "spec.template.spec.volumes[1].secret.secretName": "my-tls",
            "spec.template.spec.volumes[1].secret.optional": False,
        },
        ("Service", "gpu-extender", "gpu-extender"): {
            "spec.ports[0].name": "https",
            "spec.ports[0].port": 443,
            "spec.ports[0].targetPort": "https",
        },
        ("ConfigMap", "gpu-extender", "gpu-extender-config"): {
            "data.config.json.<parsed json>.server.port": 8443,
            "data.config.json.<parsed json>.server.tls_cert_file": "/etc/gpu-extender-tls/tls.crt",
            "data.config.json.<parsed json>.server.tls_key_file": "/etc/gpu-extender-tls/tls.key",
        },
        ("Deployment", "kube-system", "gpu-scheduler"): {
            "spec.template.spec.volumes[0].configMap.name": "gpu-scheduler-config-https",
        },
        ("ConfigMap", "kube-system", "gpu-scheduler-config-https"): {
            "data.kube-scheduler-config.yaml.<parsed yaml>.extenders[0].tlsConfig.caData": ca,
            "data.kube-scheduler-config.yaml.<parsed yaml>.extenders[0].tlsConfig.caFile": None,
        },
        ("ServiceMonitor", "gpu-extender", "gpu-extender"): {
            "metadata.labels.release": "kps",
            "spec.endpoints[0].port": "https",
            "spec.endpoints[0].scheme": "https",
            "spec.endpoints[0].tlsConfig": {"serverName": "gpu-extender.gpu-extender.svc",
                                            "ca": {"secret": {"name": "my-tls", "key": "ca.crt"}}},
        },
        ("PrometheusRule", "gpu-extender", "gpu-extender"): {
            "metadata.labels.release": "kps",
        },
    }
    for i in sorted(want):
        a, b = normalise(chart[i]), normalise(want[i])
        exp = expected.get(i, {})
        expect_paths(problems, fmt(i), paths_differing(a, b), exp)
        for path, value in exp.items():
            have = lookup(a, path)
            if have != value:
                problems.append(f"{fmt(i)}: {path} = {have!r}, want {value!r}")
    # The HTTPS scheduler config the chart mounts with caData keeps everything
    # else of the shipped one, and the https urlPrefix is the Service's.
    ext = sched_config(list(chart.values()), "gpu-scheduler-config-https")["extenders"][0]
    if ext["urlPrefix"] != "https://gpu-extender.gpu-extender.svc:443/gpu-extender":
        problems.append(f"https urlPrefix {ext['urlPrefix']}")
    return problems


def chk_tls_ca_file(helm, kz):
    """TLS without caData mounts the shipped HTTPS scheduler config unchanged."""
    chart = helm.template("tls.enabled=true")
    shipped = index(kz.build("manifests/scheduler"))
    i = ("ConfigMap", "kube-system", "gpu-scheduler-config-https")
    a = normalise(index(chart)[i])
    b = normalise(shipped[i])
    problems = [f"{p} differs" for p in paths_differing(a, b)]
    vol = get(chart, "Deployment", "gpu-scheduler")["spec"]["template"]["spec"]["volumes"][0]
    if vol["configMap"]["name"] != "gpu-scheduler-config-https":
        problems.append(f"scheduler mounts {vol['configMap']['name']}")
    return problems


def chk_namespace(helm, binary):
    """Another namespace moves every namespaced extender object and its addresses."""
    chart = helm.template("scheduler.name=gpu-sched-2", "scheduler.namespace=sched-ns",
                          namespace="gpu-x")
    problems = []
    for d in chart:
        k, ns, n = oid(d)
        if k in CLUSTER_SCOPED:
            continue
        sched = (d["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == "gpu-sched-2"
        allowed = {"sched-ns", "kube-system"} if sched else {"gpu-x"}
        if ns not in allowed:
            problems.append(f"{fmt(oid(d))}: namespace {ns!r}")
    cfg = config_of(chart, "gpu-x")
    if cfg["kubernetes"]["namespace"] != "gpu-x":
        problems.append(f"config kubernetes.namespace {cfg['kubernetes']['namespace']}")
    rc, out = check_config(binary, cfg)
    if rc != 0:
        problems.append(f"--check-config exited {rc}: {out[:300]}")
    sc = sched_config(chart, "gpu-sched-2-config")
    if sc["extenders"][0]["urlPrefix"] != "http://gpu-extender.gpu-x.svc:8888/gpu-extender":
        problems.append(f"urlPrefix {sc['extenders'][0]['urlPrefix']}")
    if sc["profiles"][0]["schedulerName"] != "gpu-sched-2" or \
            sc["leaderElection"]["resourceName"] != "gpu-sched-2" or \
            sc["leaderElection"]["resourceNamespace"] != "sched-ns":
        problems.append(f"scheduler name/lease not moved: {sc['profiles']} {sc['leaderElection']}")
    pol = get(chart, "MutatingAdmissionPolicy", "gpu-extender-scheduler-name")
    if "'gpu-sched-2'" not in pol["spec"]["mutations"][0]["applyConfiguration"]["expression"]:
        problems.append(f"the scheduler-name policy does not name gpu-sched-2: {pol['spec']}")
    role = get(chart, "ClusterRole", "gpu-sched-2-leader-election")
    if role["rules"][1]["resourceNames"] != ["gpu-sched-2"]:
        problems.append(f"leader-election Lease name {role['rules'][1]['resourceNames']}")
    for kind, name in (("ClusterRoleBinding", "gpu-extender"), ("RoleBinding", "gpu-extender-ledger")):
        subj = get(chart, kind, name)["subjects"][0]
        if subj["namespace"] != "gpu-x":
            problems.append(f"{kind} {name} subject namespace {subj['namespace']}")
    return problems


def chk_release_namespace(helm):
    """The release namespace holds the extender; the chart never creates a Namespace (helm
    uninstall would delete the ledger's Leases with it), and the old namespace.* values are
    refused by name instead of being ignored."""
    problems = []
    for sets in ([], ["monitoring.enabled=true", "tls.enabled=true"], ["scheduler.enabled=false"]):
        for ns in ("gpu-system", "gpu-extender"):
            chart = helm.template(*sets, namespace=ns)
            kinds = sorted({d["kind"] for d in chart})
            if "Namespace" in kinds:
                problems.append(f"-n {ns} {sets}: renders a Namespace")
            extender = [d for d in chart if oid(d)[1] and (d["metadata"].get("labels") or {})
                        .get("app.kubernetes.io/name") == "gpu-extender"]
            wrong = [fmt(oid(d)) for d in extender if oid(d)[1] != ns]
            if not extender or wrong:
                problems.append(f"-n {ns} {sets}: not in the release namespace: {wrong}")
            if config_of(chart, ns)["kubernetes"]["namespace"] != ns:
                problems.append(f"-n {ns}: config kubernetes.namespace is not {ns}")
    for sets in (["namespace.name=gpu-x"], ["namespace.create=false"]):
        res = helm.template_fails(*sets)
        if res.returncode == 0 or "additional properties 'namespace'" not in res.stderr:
            problems.append(f"--set {sets[0]}: exit {res.returncode}, want the schema to refuse "
                            f"'namespace': {res.stderr.strip()[:300]}")
    return problems


# Placement values of one component, and what they must render.
PLACEMENT = {
    "podAnnotations": {"example.com/team": "gpu"},
    "podLabels": {"example.com/tier": "infra"},
    "nodeSelector": {"node-role.kubernetes.io/infra": ""},
    "tolerations": [{"key": "node-role.kubernetes.io/infra", "operator": "Exists",
                     "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                   "whenUnsatisfiable": "ScheduleAnyway"}],
    "priorityClassName": "infra-critical",
    "podSecurityContext": {"fsGroup": 65532},
    "securityContext": {"runAsUser": 1000},
}


def chk_placement(helm, kz):
    """extender.* and scheduler.* placement values change exactly their fields of their own
    Deployment: pod labels and annotations, nodeSelector (merged with kubernetes.io/os),
    tolerations, affinity (replacing the default anti-affinity), topologySpreadConstraints
    (labelSelector defaulted to the pods' selector), priorityClassName, pod and container
    securityContext (merged with the defaults)."""
    chart = index(helm.template(values={"extender": PLACEMENT, "scheduler": PLACEMENT}))
    want = index(kz.base("manifests"))
    problems = []
    if set(chart) != set(want):
        return [f"objects differ: {sorted(map(fmt, set(chart) ^ set(want)))}"]
    t = "spec.template."
    sp = t + "spec."
    c0 = sp + "containers[0]."
    for i, sel in ((("Deployment", "gpu-extender", "gpu-extender"),
                    {"app.kubernetes.io/name": "gpu-extender",
                     "app.kubernetes.io/component": "extender"}),
                   (("Deployment", "kube-system", "gpu-scheduler"),
                    {"app.kubernetes.io/name": "gpu-scheduler",
                     "app.kubernetes.io/component": "scheduler"})):
        tsc = dict(PLACEMENT["topologySpreadConstraints"][0], labelSelector={"matchLabels": sel})
        exp = {
            t + "metadata.annotations": PLACEMENT["podAnnotations"],
            t + "metadata.labels.example.com/tier": "infra",
            sp + "nodeSelector.node-role.kubernetes.io/infra": "",
            sp + "tolerations": PLACEMENT["tolerations"],
            sp + "affinity.nodeAffinity": PLACEMENT["affinity"]["nodeAffinity"],
            sp + "affinity.podAntiAffinity": None,
            sp + "topologySpreadConstraints": [tsc],
            sp + "priorityClassName": "infra-critical",
            sp + "securityContext.fsGroup": 65532,
            c0 + "securityContext.runAsUser": 1000,
        }
        a, b = normalise(chart[i]), normalise(want[i])
        got = paths_differing(a, b)
        # Dotted label keys: compare the paths' values, not their spelling.
        for path, value in exp.items():
            have = a
            for part in split_placement(path):
                if isinstance(part, int):
                    have = have[part] if isinstance(have, list) and part < len(have) else None
                else:
                    have = have.get(part) if isinstance(have, dict) else None
            if have != value:
                problems.append(f"{fmt(i)}: {path} = {have!r}, want {value!r}")
        extra = [g for g in got if not any(g.startswith(p) for p in exp)]
        if extra:
            problems.append(f"{fmt(i)}: unexpected changes at {extra}")
        if b["spec"]["template"]["spec"].get("nodeSelector") != {"kubernetes.io/os": "linux"} or \
                a["spec"]["template"]["spec"]["nodeSelector"].get("kubernetes.io/os") != "linux":
            problems.append(f"{fmt(i)}: nodeSelector does not keep kubernetes.io/os: linux")
    for i in sorted(want):
        if i[0] != "Deployment" and normalise(chart[i]) != normalise(want[i]):
            problems.append(f"{fmt(i)} changed by placement values")
    res = helm.template_fails(values={"extender.podLabels": {"app.kubernetes.io/component": "x"}})
    if res.returncode == 0 or "podLabels: app.kubernetes.io/component is set by the chart" \
            not in res.stderr:
        problems.append(f"a podLabel replacing a selector label: exit {res.returncode}: "
                        f"{res.stderr.strip()[:300]}")
    return problems


def split_placement(path):
    """Split a path of chk_placement: label keys with dots and slashes stay whole."""
    out = []
    for known in ("example.com/tier", "node-role.kubernetes.io/infra"):
        if path.endswith("." + known):
            return path[:-len(known) - 1].split(".") + [known]
    for part in path.split("."):
        if part.endswith("]"):
            name, n = part[:-1].split("[")
            out += [name]
            out.append(int(n))
        else:
            out.append(part)
    return out


def chk_images(helm):
    """image.registry/.repository/.tag and scheduler.image.* are one value each; the extender's
    tag defaults to appVersion, the scheduler's to the API server's version (vendor suffix cut)."""
    problems = []
    with open(os.path.join(helm.root, CHART, "Chart.yaml")) as f:
        app = yaml.safe_load(f)["appVersion"]

    def images(*sets, kube_version=None):
        docs = helm.template(*sets, kube_version=kube_version)
        dep = get(docs, "Deployment", "gpu-extender")["spec"]["template"]["spec"]
        sch = get(docs, "Deployment", "gpu-scheduler")["spec"]["template"]["spec"]
        return (container({"spec": {"template": {"spec": dep}}})["image"],
                sch["containers"][0]["image"], dep.get("imagePullSecrets"),
                sch.get("imagePullSecrets"))

    for sets, kv, want in (
            # before 1.36 only without the all-pods policy (chk_kube_version)
            (["scheduler.allPods=false"], "1.30.4",
             (f"gpu-extender:{app}", "registry.k8s.io/kube-scheduler:v1.30.4")),
            ([], "v1.36.2-eks-3c7e4f1", (f"gpu-extender:{app}",
                                         "registry.k8s.io/kube-scheduler:v1.36.2")),
            (["image.registry=ghcr.io/acme", "image.tag=1.2.3",
              "scheduler.image.registry=mirror.example.com:5000/k8s",
              "scheduler.image.tag=v1.36.1"], None,
             ("ghcr.io/acme/gpu-extender:1.2.3", "mirror.example.com:5000/k8s/kube-scheduler:v1.36.1")),
            (["image.repository=team/gpu-ext", "scheduler.image.registry=",
              "scheduler.allPods=false"], "1.33.0",
             (f"team/gpu-ext:{app}", "kube-scheduler:v1.33.0"))):
        have = images(*sets, kube_version=kv)[:2]
        if have != want:
            problems.append(f"--set {sets} --kube-version {kv}: images {have}, want {want}")
    secrets = images("imagePullSecrets[0].name=reg", "scheduler.imagePullSecrets[0].name=mirror")
    if secrets[2:] != ([{"name": "reg"}], [{"name": "mirror"}]):
        problems.append(f"imagePullSecrets rendered {secrets[2:]}")
    for sets, want in ((["scheduler.image=registry.k8s.io/kube-scheduler:v1.35.0"],
                        "/scheduler/image"),
                       (["scheduler.pullPolicy=Always"], "additional properties 'pullPolicy'"),
                       (["image.tag=1.0 beta"], "/image/tag"),
                       (["image.repository=Bad/Name"], "/image/repository")):
        res = helm.template_fails(*sets)
        if res.returncode == 0 or want not in res.stderr:
            problems.append(f"--set {sets[0]}: exit {res.returncode}, want an error naming "
                            f"{want!r}: {res.stderr.strip()[:300]}")
    return problems


def chk_schema(helm):
    """values.schema.json: misspelt keys and wrong types fail instead of being ignored."""
    problems = []
    for sets, want in ((["replcas=3"], "additional properties 'replcas'"),
                       (["replicas=abc"], "/replicas"),
                       (["replicas=0"], "/replicas"),
                       (["tls.enable=true"], "additional properties 'enable'"),
                       (["tls.caData=not base64!"], "/tls/caData"),
                       (["scheduler.extender.ignorable=maybe"], "/scheduler/extender/ignorable"),
                       (["monitoring.serviceMonitor.lables.release=x"], "'lables'"),
                       (["extender.nodSelector.a=b"], "additional properties 'nodSelector'"),
                       (["scheduler.tolerations=none"], "/scheduler/tolerations"),
                       (["extender.affinity.podAntiAfinity.x=y"], "'podAntiAfinity'"),
                       (["extender.priorityClassName=1"], "/extender/priorityClassName")):
        res = helm.template_fails(*sets)
        if res.returncode == 0 or want not in res.stderr:
            problems.append(f"--set {' '.join(sets)}: exit {res.returncode}, want an error "
                            f"naming {want!r}: {res.stderr.strip()[:300]}")
    return problems


def lookup(d, path):
    """Value at a dotted path as produced by paths_differing (None if absent)."""
    cur = d
    for part in split_path(path):
        if isinstance(part, int):
            if not isinstance(cur, list) or part >= len(cur):
                return None
            cur = cur[part]
        else:
            if not isinstance(cur, dict) or part not in cur:
                return None
            cur = cur[part]
    return cur


def split_path(path):
    """Split on dots and [n]; ConfigMap keys with dots are matched greedily."""
    out = []
    for seg in path.replace("[", ".[").split("."):
        if seg.startswith("[") and seg.endswith("]"):
            out.append(int(seg[1:-1]))
        elif seg:
            out.append(seg)
    # Rejoin the data keys that contain dots (config.json, kube-scheduler-config.yaml).
    joined = []
    i = 0
    while i < len(out):
        if out[i] == "data" and i + 2 < len(out) and isinstance(out[i + 1], str):
            joined += ["data", f"{out[i + 1]}.{out[i + 2]}"]
            i += 3
            continue
        joined.append(out[i])
        i += 1
    return joined


# ---------------------------------------------------------------- sync

def sync(root):
    chart = os.path.join(root, CHART, "files")
    shutil.copyfile(os.path.join(root, "manifests/monitoring/grafana-dashboard.json"),
                    os.path.join(chart, "grafana-dashboard.json"))
    with open(os.path.join(root, "manifests/monitoring/prometheusrule.yaml")) as f:
        lines = f.read().split("\n")
    body = [line[2:] if line.startswith("  ") else line for line in lines[lines.index("spec:") + 1:]]
    text = "\n".join(body).rstrip("\n") + "\n"
    with open(os.path.join(root, "manifests/monitoring/prometheusrule.yaml")) as f:
        if yaml.safe_load(text) != yaml.safe_load(f)["spec"]:
            raise SystemExit("prometheusrule.yaml: spec is not the last top-level key")
    with open(os.path.join(chart, "prometheus-rules.yaml"), "w") as f:
        f.write(text)
    print(f"synced {CHART}/files from manifests/monitoring")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--helm")
    ap.add_argument("--binary")
    ap.add_argument("--kubectl")
    ap.add_argument("--sync", action="store_true")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    if a.sync:
        sync(root)
        return 0
    if not a.helm or not a.binary:
        ap.error("--helm and --binary are required")
    helm = Helm(a.helm, root)
    kz = Kustomize(find_kubectl(a.kubectl), root)
    print(f"# helm: {a.helm} ({run([a.helm, 'version', '--short']).stdout.strip()})")
    print(f"# kustomize: {kz.describe()}")
    ck = Checker(multiline=True)
    ck.run("helm lint: no warning or error", chk_lint, a.helm, root)
    ck.run(f"chart copies equal manifests/ and {GPU_PODS_ONLY}/config.json", chk_copies, root)
    ck.run("defaults render the objects of kustomize manifests/", chk_default, helm, kz)
    ck.run("monitoring.enabled adds the objects of manifests/monitoring", chk_monitoring, helm, kz)
    ck.run("scheduler.enabled=false drops the objects of manifests/scheduler",
           chk_no_scheduler, helm, kz)
    ck.run(f"scheduler.allPods=false renders the objects of kustomize {GPU_PODS_ONLY}",
           chk_gpu_pods_only, helm, kz)
    ck.run("the all-pods default refuses Kubernetes before 1.36, allPods=false does not",
           chk_kube_version, helm)
    ck.run("gpu-extender --check-config accepts the chart's config, rejects broken ones",
           chk_check_config, helm, a.binary)
    ck.run("values.schema.json checks config against the key table", chk_config_schema,
           helm, root)
    ck.run("replicas 3 + TLS + caData + monitoring change exactly the expected fields",
           chk_non_default, helm, kz)
    ck.run("TLS without caData mounts the shipped HTTPS scheduler config", chk_tls_ca_file,
           helm, kz)
    ck.run("namespace and scheduler name move every object and address", chk_namespace,
           helm, a.binary)
    ck.run("the release namespace holds the extender; no Namespace is rendered",
           chk_release_namespace, helm)
    ck.run("extender.* and scheduler.* placement values change exactly their fields",
           chk_placement, helm, kz)
    ck.run("images: registry, repository and tag; the scheduler's follows the API server",
           chk_images, helm)
    ck.run("values.schema.json refuses misspelt keys and wrong types", chk_schema, helm)
    print(f"{ck.passed} passed, {ck.failed} failed")
    return 1 if ck.failed else 0


if __name__ == "__main__":
    sys.exit(main())
