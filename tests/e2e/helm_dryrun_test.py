"""The Helm chart's output passes `kubectl apply --dry-run=server --validate=strict` against the
real API server of the pinned release: default values (the objects of the kustomize base, all
pods through the extender with its MutatingAdmissionPolicy), every optional part on (replicas 3,
TLS with caData, monitoring with the Prometheus Operator CRDs of tests/k8s/crds/), the second
scheduler off, another release namespace and scheduler name, only GPU pods through the extender
over TLS, and every placement value of both Deployments.
Helm is the one tests/helm/build.sh builds from its Go module. The object-by-object comparison
with kustomize is tests/integration/test_helm.sh; this test proves the server accepts what the
chart renders (schemas, defaulting, admission, RBAC objects)."""
import base64
import json
import os
import subprocess

import yaml

from e2e import ROOT, Checks, finish, log
from rig import Cluster

chk = Checks("e2e_helm_dryrun")
helm = subprocess.run(["bash", os.path.join(ROOT, "tests", "helm", "build.sh")], check=True,
                      stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
CHART = os.path.join(ROOT, "charts", "gpu-extender")
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
VARIANTS = [
    ("defaults", []),
    ("replicas 3, TLS + caData, monitoring",
     ["replicas=3", "tls.enabled=true", f"tls.caData={CA}", "monitoring.enabled=true",
      "monitoring.serviceMonitor.labels.release=kps"]),
    ("TLS with the CA ConfigMap", ["tls.enabled=true"]),
    ("no second scheduler", ["scheduler.enabled=false"]),
    ("release namespace gpu-x, scheduler gpu-sched-2",
     ["scheduler.name=gpu-sched-2"], "gpu-x"),
    ("only GPU pods through the extender, TLS", ["scheduler.allPods=false", "tls.enabled=true"]),
]
# extender.* and scheduler.*: the placement values, as --set-json.
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
    "priorityClassName": "system-node-critical",
    "podSecurityContext": {"fsGroup": 65532},
    "securityContext": {"runAsUser": 1000},
}
VARIANTS.append(("placement of both Deployments",
                 [f"--set-json={c}.{k}={json.dumps(v)}" for c in ("extender", "scheduler")
                  for k, v in PLACEMENT.items()]))


def template(sets, ns="gpu-extender"):
    # The release namespace holds the extender; the chart does not create it.
    cmd = [helm, "template", "gpu-extender", CHART, "--namespace", ns]
    for s in sets:
        cmd += [s] if s.startswith("--") else ["--set", s]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"helm template {sets}: {r.stderr.strip()}")
    return r.stdout


c = Cluster(prometheus=False, extenders=[], schedulers=[]).up()
try:
    c.kubectl("apply", "-f", os.path.join(ROOT, "tests", "k8s", "crds"))
    for crd in ("servicemonitors", "prometheusrules"):
        c.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                  f"crd/{crd}.monitoring.coreos.com")
    # helm install -n NS --create-namespace: the namespace exists before the chart's objects
    # (the rig made gpu-extender from manifests/extender/00-namespace.yaml).
    c.kubectl("create", "namespace", "gpu-x")
    for what, sets, *ns in VARIANTS:
        rendered = template(sets, *ns)
        n_docs = sum(1 for d in yaml.safe_load_all(rendered) if d)
        r = c.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-",
                      input=rendered, check=False)
        out = (r.stdout + r.stderr).strip()
        chk.ok(r.returncode == 0, f"helm template ({what}) passes --dry-run=server: {out[-1200:]}")
        n = sum(1 for line in out.splitlines() if "(server dry run)" in line)
        chk.eq(n, n_docs, f"every rendered object ({what}) checked by the server")
        log(f"{what}: {n} objects accepted")
    # Dry-run creates nothing.
    r = c.kubectl("-n", "gpu-extender", "get", "deployment", "gpu-extender", check=False)
    chk.ok(r.returncode != 0, "server dry-run created nothing")
finally:
    finish(c, chk)
chk.done()
