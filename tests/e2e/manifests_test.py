"""Every shipped manifest passes `kubectl apply --dry-run=server` against the real API server of
the pinned release (admission, defaulting and schema validation included, strict field
validation): the kustomize base (with the scheduler directory), the scheduler, monitoring and
all-pods overlays (Prometheus Operator CRDs from tests/k8s/crds/) and the examples; the
all-pods overlay's extender config is config/config.json plus score.relative and
score.fgd_idle_card_milli. The API server also
proves the RBAC objects and the KubeSchedulerConfiguration inside the ConfigMaps are accepted as
the real objects (the scheduler e2e tests run that configuration)."""
import json
import os
import sys

import yaml

from e2e import ROOT, Checks, finish, log
from rig import Cluster, shipped_scheduler_config, wait_for

chk = Checks("e2e_manifests")
M = os.path.join(ROOT, "manifests")
c = Cluster(prometheus=False, extenders=[], schedulers=[]).up()
try:
    crds = os.path.join(ROOT, "tests", "k8s", "crds")
    c.kubectl("apply", "-f", crds)
    for crd in ("servicemonitors", "prometheusrules"):
        c.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                  f"crd/{crd}.monitoring.coreos.com")

    def dry_run(what, *args, input=None):
        r = c.kubectl("apply", "--dry-run=server", "--validate=strict", *args, check=False,
                      input=input)
        out = (r.stdout + r.stderr).strip()
        chk.ok(r.returncode == 0, f"{what} passes --dry-run=server: {out[-800:]}")
        return out

    base = c.kubectl("kustomize", M)
    out = dry_run("kustomize base (kubectl kustomize manifests)", "-f", "-", input=base)
    n = sum(1 for line in out.splitlines() if "(server dry run)" in line)
    chk.ok(n >= 10, f"base objects checked by the server ({n})")
    for overlay in ("scheduler", "monitoring", "overlays/all-pods"):
        dry_run(f"overlay manifests/{overlay}", "-k", os.path.join(M, overlay))
    # The all-pods overlay (docs/scheduling-quality.md): the scheduler mounts the all-pods
    # profile, and the extender's config is config/config.json with score.relative on and
    # idle nodes charged (score.fgd_idle_card_milli).
    ov = c.kubectl("kustomize", os.path.join(M, "overlays", "all-pods"))
    ov = [d for d in yaml.safe_load_all(ov) if d]
    dep = [d for d in ov if d["kind"] == "Deployment" and d["metadata"]["name"] == "gpu-scheduler"]
    vols = {v["name"]: v.get("configMap", {}).get("name")
            for d in dep for v in d["spec"]["template"]["spec"]["volumes"]}
    chk.eq(vols.get("config"), "gpu-scheduler-config-all-pods",
           "all-pods overlay mounts its profile")
    ecm = [d for d in ov
           if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "gpu-extender-config"]
    with open(os.path.join(ROOT, "config", "config.json")) as f:
        want = json.load(f)
    want["score"]["relative"] = True
    want["score"]["fgd_idle_card_milli"] = 25
    chk.eq(json.loads(ecm[0]["data"]["config.json"]) if ecm else None, want,
           "all-pods overlay's extender config == config/config.json + score.relative: true, "
           "score.fgd_idle_card_milli: 25")
    # The shared-pod examples use the RuntimeClass the GPU Operator creates (docs/sharing.md).
    c.kubectl("apply", "-f", "-", input='{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",'
              ' "metadata": {"name": "nvidia"}, "handler": "nvidia"}')
    ex = os.path.join(M, "examples")
    for f in sorted(os.listdir(ex)):
        if f.endswith(".yaml"):
            dry_run(f"example {f}", "-n", "e2e", "-f", os.path.join(ex, f))

    # Dry-run creates nothing: the cluster still has no extender Deployment.
    r = c.kubectl("-n", "gpu-extender", "get", "deployment", "gpu-extender", check=False)
    chk.ok(r.returncode != 0, "server dry-run created nothing")

    # The embedded scheduler configurations parse (the scheduler tests start them for real).
    for name in ("kube-scheduler-config.yaml", "kube-scheduler-config-https.yaml",
                 "overlays/all-pods/kube-scheduler-config-all-pods.yaml"):
        cfg = shipped_scheduler_config(name)
        chk.eq(cfg.get("kind"), "KubeSchedulerConfiguration", f"{name} embeds a KubeSchedulerConfiguration")
    chk.eq(c.forbidden(), [], "no 403 (nothing ran as the extender here)")
    log("manifests checked")
finally:
    finish(c, chk)
chk.done()
