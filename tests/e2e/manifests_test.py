"""Every shipped manifest passes `kubectl apply --dry-run=server` against the real API server of
the pinned release (admission, defaulting and schema validation included, strict field
validation): the default install (`kubectl kustomize manifests`: extender, scheduler and the
MutatingAdmissionPolicy), the scheduler directory, monitoring (Prometheus Operator CRDs from
tests/k8s/crds/), the gpu-pods-only overlay and the examples. The gpu-pods-only overlay renders
a whole install without the policy, with the GPU-pods-only profile and config/config.json less
the all-pods keys (check_manifests.ALL_PODS_KEYS), and is then applied for real on its own, and the
default install over it. The API server also proves the RBAC objects and the
KubeSchedulerConfiguration inside the ConfigMaps are accepted as the real objects (the scheduler
e2e tests run that configuration)."""
import json
import os
import sys

import yaml

from e2e import ROOT, Checks, finish, log
from rig import Cluster, shipped_scheduler_config, wait_for

sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from check_manifests import ALL_PODS_KEYS  # noqa: E402 (the one list of the overlay's omissions)

chk = Checks("e2e_manifests")
M = os.path.join(ROOT, "manifests")
POLICY_KINDS = {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
# examples/gang-shares.yaml is a PodGroup (scheduling.k8s.io/v1beta1), served only with the
# gate its header names: the API server gets it, so that example is checked as well.
c = Cluster(prometheus=False, extenders=[], schedulers=[],
            apiserver_args=["--feature-gates=GenericWorkload=true",
                            "--runtime-config=scheduling.k8s.io/v1beta1=true"]).up()
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
    for overlay in ("scheduler", "monitoring", "overlays/gpu-pods-only"):
        dry_run(f"overlay manifests/{overlay}", "-k", os.path.join(M, overlay))
    # The gpu-pods-only overlay (clusters before 1.36): no MutatingAdmissionPolicy, the
    # GPU-pods-only profile mounted, and the extender's config without the all-pods keys.
    ov = c.kubectl("kustomize", os.path.join(M, "overlays", "gpu-pods-only"))
    ov = [d for d in yaml.safe_load_all(ov) if d]
    kinds = {d["kind"] for d in ov}
    chk.ok(not kinds & POLICY_KINDS, f"gpu-pods-only renders no admission policy ({sorted(kinds)})")
    chk.ok({"Deployment", "Service", "PodDisruptionBudget", "Namespace"} <= kinds,
           "gpu-pods-only renders the extender's objects too (a whole install)")
    prof = [yaml.safe_load(d["data"]["kube-scheduler-config.yaml"]) for d in ov
            if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "gpu-scheduler-config"]
    chk.ok(prof and prof[0]["extenders"][0].get("managedResources"),
           "gpu-pods-only mounts a profile with managedResources (GPU pods only)")
    ecm = [d for d in ov
           if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "gpu-extender-config"]
    with open(os.path.join(ROOT, "config", "config.json")) as f:
        want = json.load(f)
    for k in ALL_PODS_KEYS:
        section, key = k.split(".")
        want[section].pop(key)
    chk.eq(json.loads(ecm[0]["data"]["config.json"]) if ecm else None, want,
           "gpu-pods-only's extender config == config/config.json less " + " and ".join(ALL_PODS_KEYS))
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

    # For real: the gpu-pods-only overlay alone is a whole install, then the default over it.
    def scheduler_profile():
        out = c.kubectl("-n", "kube-system", "get", "configmap", "gpu-scheduler-config",
                        "-o", "json")
        return yaml.safe_load(json.loads(out)["data"]["kube-scheduler-config.yaml"])

    def policies():
        r = c.kubectl("get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings",
                      "-o", "name", check=False)
        return sorted(r.stdout.split()) if r.returncode == 0 else [r.stderr.strip()]

    r = c.kubectl("apply", "-k", os.path.join(M, "overlays", "gpu-pods-only"), check=False)
    chk.ok(r.returncode == 0, f"kubectl apply -k manifests/overlays/gpu-pods-only: "
           f"{(r.stdout + r.stderr).strip()[-600:]}")
    for ns, kind, name in (("gpu-extender", "deployment", "gpu-extender"),
                           ("gpu-extender", "configmap", "gpu-extender-config"),
                           ("kube-system", "deployment", "gpu-scheduler")):
        chk.ok(c.kubectl("-n", ns, "get", kind, name, check=False).returncode == 0,
               f"gpu-pods-only created {kind} {ns}/{name}")
    chk.eq(policies(), [], "gpu-pods-only created no admission policy")
    chk.ok(scheduler_profile()["extenders"][0].get("managedResources"),
           "gpu-pods-only's profile is the one gpu-scheduler mounts")
    r = c.kubectl("apply", "-k", M, check=False)
    chk.ok(r.returncode == 0, f"kubectl apply -k manifests/ over it: "
           f"{(r.stdout + r.stderr).strip()[-600:]}")
    chk.eq(policies(), ["mutatingadmissionpolicy.admissionregistration.k8s.io/"
                        "gpu-extender-scheduler-name",
                        "mutatingadmissionpolicybinding.admissionregistration.k8s.io/"
                        "gpu-extender-scheduler-name"],
           "the default install adds the scheduler-name policy")
    chk.ok(not scheduler_profile()["extenders"][0].get("managedResources"),
           "the default install's profile takes every pod (no managedResources)")

    # The embedded scheduler configurations parse (the scheduler tests start them for real).
    for name in ("scheduler/kube-scheduler-config.yaml", "scheduler/kube-scheduler-config-https.yaml",
                 "kube-scheduler-config.yaml", "kube-scheduler-config-https.yaml"):
        cfg = shipped_scheduler_config(name)
        chk.eq(cfg.get("kind"), "KubeSchedulerConfiguration", f"{name} embeds a KubeSchedulerConfiguration")
    chk.eq(c.forbidden(), [], "no 403 (nothing ran as the extender here)")
    log("manifests checked")
finally:
    finish(c, chk)
chk.done()
