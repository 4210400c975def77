"""The Helm chart's output passes `kubectl apply --dry-run=server --validate=strict` against the
real API server of the pinned release: default values (the objects of the kustomize base),
every optional part on (replicas 3, TLS with caData, monitoring with the Prometheus Operator
CRDs of tests/k8s/crds/), the second scheduler off, another namespace and scheduler name, and all
pods through the extender over TLS.
Helm is the one tests/helm/build.sh builds from its Go module. The object-by-object comparison
with kustomize is tests/integration/test_helm.sh; this test proves the server accepts what the
chart renders (schemas, defaulting, admission, RBAC objects)."""
import base64
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
    ("namespace gpu-x, scheduler gpu-sched-2",
     ["namespace.name=gpu-x", "namespace.create=false", "scheduler.name=gpu-sched-2"]),
    ("all pods through the extender, TLS", ["scheduler.allPods=true", "tls.enabled=true"]),
]


def template(sets):
    cmd = [helm, "template", "gpu-extender", CHART]
    for s in sets:
        cmd += ["--set", s]
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
    # namespace.create=false means the namespace exists already.
    c.kubectl("create", "namespace", "gpu-x")
    for what, sets in VARIANTS:
        rendered = template(sets)
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
