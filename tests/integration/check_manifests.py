#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Static checks of the Kubernetes manifests under manifests/.

Usage:
  check_manifests.py --root DIR --binary PATH   run every check

Every check prints "ok   <name>" or "FAIL <name>: <why>"; the last line is
"N passed, M failed" and the exit status is 1 when anything failed.
The files are read as kustomize would render them: a kustomization's
configMapGenerator becomes its ConfigMap and its `images:` set the images of
the workloads below it; an overlay's files are patches, checked as profiles
and configs but not as objects of their own. The ConfigMap's config.json
(manifests/config.json, which must equal config/config.json byte for byte)
and the GPU-pods-only overlay's (config/config.json less score.relative and
score.fgd_idle_card_milli) are given to `gpu-extender --check-config`, which
must accept them (exit 0) and must reject a broken copy (exit 1).
"""

import argparse
import copy
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

import yaml

from gxtest import Checker, find_kubectl

CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
    "CustomResourceDefinition", "StorageClass", "RuntimeClass", "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
}
EXPECTED_KINDS = [
    "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
    "RoleBinding", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget",
]
# Roles shipped by Kubernetes itself that the manifests may bind.
BUILTIN_ROLES = {
    ("ClusterRole", "system:kube-scheduler"),
    ("ClusterRole", "system:volume-scheduler"),
    ("Role", "extension-apiserver-authentication-reader"),
}
# The extender's permissions, exactly (02-rbac.yaml).
EXTENDER_CLUSTER_RULES = {
    ("", "nodes"): {"get", "list", "watch"},
    ("", "pods"): {"get", "list", "watch", "patch"},
    ("", "pods/binding"): {"create"},
    ("resource.k8s.io", "resourceslices"): {"get", "list", "watch"},
    ("resource.k8s.io", "resourceclaims"): {"get", "list", "watch"},
    ("policy", "poddisruptionbudgets"): {"list", "watch"},
}
EXTENDER_LEDGER_VERBS = {"get", "list", "watch", "create", "update", "patch"}
READ_VERBS = {"get", "list", "watch"}
DANGEROUS_VERBS = {"*", "escalate", "bind", "impersonate", "deletecollection"}

# The overlay for clusters before 1.36: only GPU pods through the extender.
GPU_PODS_ONLY = "manifests/overlays/gpu-pods-only"
# The keys the all-pods profile needs (score.relative) or is measured with, and that the
# GPU-pods-only install leaves at their defaults (docs/configuration.md).
ALL_PODS_KEYS = ("score.relative", "score.fgd_idle_card_milli", "filter.shortlist_nodes")
MAP_KINDS = {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
CONFIG_DIR = "/etc/gpu-extender"
CONFIG_PATH = CONFIG_DIR + "/config.json"
SCHEDULER_NAME = "gpu-scheduler"
REASONS = [
    "no GPU time slot available",
    "insufficient GPU memory",
    "GPU utilization above limit",
    "GPU unhealthy",
]


# ---------------------------------------------------------------- loading

class Doc:
    def __init__(self, path, index, body):
        self.path = path
        self.index = index
        self.body = body

    @property
    def kind(self):
        return self.body.get("kind")

    @property
    def name(self):
        return (self.body.get("metadata") or {}).get("name")

    @property
    def namespace(self):
        return (self.body.get("metadata") or {}).get("namespace")

    def where(self):
        return f"{self.path}#{self.index}"


def yaml_files(top):
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith((".yaml", ".yml")):
                out.append(os.path.join(dirpath, f))
    return out


def kustomizations(root):
    """(directory relative to root, parsed kustomization.yaml) under manifests/."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, "manifests")):
        dirnames.sort()
        if "kustomization.yaml" in filenames:
            with open(os.path.join(dirpath, "kustomization.yaml"), encoding="utf-8") as fh:
                out.append((os.path.relpath(dirpath, root), yaml.safe_load(fh) or {}))
    return out


def generated(root, problems):
    """The ConfigMaps of the configMapGenerators (files: only), as kustomize makes them; not
    the overlays', which replace the base's objects of the same name by design."""
    docs = []
    for rel, k in kustomizations(root):
        if rel.startswith("manifests/overlays/"):
            continue
        for i, g in enumerate(k.get("configMapGenerator") or []):
            data = {}
            for f in g.get("files") or []:
                key, _, src = f.partition("=") if "=" in f else (os.path.basename(f), "", f)
                path = os.path.normpath(os.path.join(root, rel, src))
                # kubectl's kustomize reads no file outside the kustomization's directory
                if not path.startswith(os.path.join(root, rel) + os.sep):
                    problems.append(f"{rel}/kustomization.yaml: configMapGenerator file {src} is "
                                    "outside its directory (kubectl kustomize refuses it)")
                    continue
                with open(path, encoding="utf-8") as fh:
                    data[key] = fh.read()
            opts = g.get("options") or {}
            md = {"name": g.get("name"), "labels": dict(opts.get("labels") or {})}
            if g.get("namespace"):
                md["namespace"] = g["namespace"]
            docs.append(Doc(os.path.join(rel, "kustomization.yaml"), f"configMapGenerator[{i}]",
                            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md,
                             "data": data}))
    return docs


def set_images(root, docs):
    """Apply each kustomization's images: to the workloads in its directory and below."""
    for rel, k in kustomizations(root):
        for img in k.get("images") or []:
            for d in docs:
                if not d.path.startswith(rel + "/"):
                    continue
                for _, spec in pod_specs(d):
                    for c in all_containers(spec):
                        name = image_name(str(c.get("image", "")))
                        if name == img.get("name"):
                            tag = img.get("newTag")
                            new = img.get("newName") or name
                            c["image"] = f"{new}:{tag}" if tag else new


def image_name(ref):
    """An image reference without its tag or digest ("registry:5000/a/b:1.0" -> "registry:5000/a/b")."""
    ref = ref.split("@")[0]
    head, _, last = ref.rpartition("/")
    last = last.split(":")[0]
    return f"{head}/{last}" if head else last


def load_all(root):
    """Parse every YAML file under manifests/, plus what the kustomizations generate and
    their images. Returns (docs, problems)."""
    docs, problems = [], []
    for path in yaml_files(os.path.join(root, "manifests")):
        rel = os.path.relpath(path, root)
        try:
            with open(path, encoding="utf-8") as fh:
                bodies = list(yaml.safe_load_all(fh))
        except yaml.YAMLError as exc:
            problems.append(f"{rel}: {exc}")
            continue
        n = 0
        for i, body in enumerate(bodies):
            if body is None:
                continue
            n += 1
            if not isinstance(body, dict):
                problems.append(f"{rel}#{i}: document is not a mapping")
                continue
            docs.append(Doc(rel, i, body))
        if n == 0:
            problems.append(f"{rel}: no YAML document")
    docs += generated(root, problems)
    set_images(root, docs)
    return docs, problems


def find(docs, kind, name=None, under=None):
    return [d for d in docs
            if d.kind == kind and (name is None or d.name == name)
            and (under is None or d.path.startswith(under))]


def one(docs, kind, name, under=None):
    got = find(docs, kind, name, under)
    if len(got) != 1:
        raise LookupError(f"expected one {kind} {name}, found {len(got)}")
    return got[0]


def is_kustomization(doc):
    """The kustomization itself (not what its generators make)."""
    return doc.kind == "Kustomization" or (os.path.basename(doc.path) == "kustomization.yaml"
                                           and isinstance(doc.index, int))


def core(docs):
    """The extender and scheduler objects (manifests/extender/, manifests/scheduler/)."""
    return [d for d in docs if not is_kustomization(d)
            and (d.path.startswith("manifests/extender/")
                 or d.path.startswith("manifests/scheduler/"))]


def deployable(docs):
    """Objects that kubectl apply -k manifests/ creates (not examples, not the overlays'
    patches of those objects)."""
    return [d for d in docs if not is_kustomization(d)
            and not d.path.startswith(("manifests/examples/", "manifests/overlays/"))]


def pod_specs(doc):
    """(label, pod spec) pairs of a workload document."""
    b = doc.body
    if doc.kind == "Pod":
        return [(doc.name, b.get("spec") or {})]
    if doc.kind in ("Deployment", "Job", "StatefulSet", "DaemonSet", "ReplicaSet"):
        return [(doc.name, ((b.get("spec") or {}).get("template") or {}).get("spec") or {})]
    if doc.kind == "CronJob":
        jt = ((b.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}
        return [(doc.name, (jt.get("template") or {}).get("spec") or {})]
    return []


def pod_template_labels(doc):
    return ((((doc.body.get("spec") or {}).get("template") or {}).get("metadata") or {})
            .get("labels") or {})


def all_containers(spec):
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def container_resources(c):
    r = c.get("resources") or {}
    return dict(r.get("requests") or {}), dict(r.get("limits") or {})


def selector_matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


# ---------------------------------------------------------------- config.json

def read_config(root):
    with open(os.path.join(root, "config", "config.json"), encoding="utf-8") as fh:
        text = fh.read()
    return text, json.loads(text)


def cfg_get(cfg, dotted, default):
    cur = cfg
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return default if cur is None else cur


def config_names(cfg):
    return {
        "gpu": cfg_get(cfg, "names.gpu_resource", "nvidia.com/gpu"),
        "shared": cfg_get(cfg, "names.shared_resource", "nvidia.com/gpu.shared"),
        "slice": cfg_get(cfg, "names.time_slice_resource", "gpu-extender.io/time-slice"),
        "slices_ann": cfg_get(cfg, "names.time_slices_annotation", "gpu-extender.io/time-slices"),
        "memory_ann": cfg_get(cfg, "names.gpu_memory_annotation", "gpu-extender.io/gpu-memory"),
        "uuids_ann": cfg_get(cfg, "names.gpu_uuids_annotation", "gpu-extender.io/gpu-uuids"),
        "index_ann": cfg_get(cfg, "names.gpu_index_annotation", "gpu-extender.io/gpu-index"),
        "managed": cfg_get(cfg, "names.managed_label", "gpu-extender.io/managed"),
    }


# ---------------------------------------------------------------- checks

def chk_documents(docs):
    problems = []
    for d in docs:
        if is_kustomization(d) and d.kind != "ConfigMap":
            if d.body.get("apiVersion") is None or d.kind != "Kustomization":
                problems.append(f"{d.where()}: kustomization without apiVersion/kind")
            continue
        for key in ("apiVersion", "kind"):
            if not isinstance(d.body.get(key), str) or not d.body.get(key):
                problems.append(f"{d.where()}: missing {key}")
        if not isinstance(d.name, str) or not d.name:
            problems.append(f"{d.where()}: missing metadata.name")
    return problems


def chk_unique(docs):
    seen, problems = {}, []
    for d in deployable(docs):
        key = (d.body.get("apiVersion"), d.kind, d.namespace, d.name)
        if key in seen:
            problems.append(f"{d.where()} duplicates {seen[key]}")
        seen[key] = d.where()
    return problems


def chk_namespaces(docs):
    problems = []
    for d in deployable(docs):
        if d.kind in CLUSTER_SCOPED:
            if d.namespace is not None:
                problems.append(f"{d.where()}: cluster-scoped {d.kind} has a namespace")
        elif not d.namespace:
            problems.append(f"{d.where()}: {d.kind} {d.name} has no metadata.namespace")
    return problems


def chk_kinds(docs):
    have = {d.kind for d in core(docs)}
    return [f"no {k}" for k in EXPECTED_KINDS if k not in have]


def chk_kustomizations(root):
    problems = []
    mdir = os.path.join(root, "manifests")
    found = 0
    for dirpath, dirnames, filenames in os.walk(mdir):
        dirnames.sort()
        if "kustomization.yaml" not in filenames:
            continue
        found += 1
        rel = os.path.relpath(dirpath, root)
        with open(os.path.join(dirpath, "kustomization.yaml"), encoding="utf-8") as fh:
            k = yaml.safe_load(fh) or {}
        listed = list(k.get("resources") or [])
        if len(set(listed)) != len(listed):
            problems.append(f"{rel}: a resource is listed twice")
        # a patch file is used by the kustomization as well as a resource
        listed += [p["path"] for p in k.get("patches") or [] if p.get("path")]
        for r in listed:
            p = os.path.join(dirpath, r)
            if os.path.isdir(p):
                if not os.path.isfile(os.path.join(p, "kustomization.yaml")):
                    problems.append(f"{rel}: directory {r} has no kustomization.yaml")
            elif not os.path.isfile(p):
                problems.append(f"{rel}: listed {r} does not exist")
        for f in sorted(filenames):
            if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml" and f not in listed:
                problems.append(f"{rel}: {f} is not listed in kustomization.yaml")
        numbered = [r for r in listed if re.match(r"^\d\d-", r)]
        if numbered != sorted(numbered):
            problems.append(f"{rel}: numbered files are not listed in order")
    if found == 0:
        problems.append("no kustomization.yaml under manifests/")
    # Every install takes the extender's objects and the scheduler directory.
    want = {"manifests": ["extender", "scheduler"],
            "manifests/extender": ["00-namespace.yaml", "01-serviceaccount.yaml", "02-rbac.yaml",
                                   "04-deployment.yaml", "05-service.yaml", "06-pdb.yaml"],
            GPU_PODS_ONLY: ["../../extender", "../../scheduler"]}
    for rel, files in want.items():
        top = os.path.join(root, rel, "kustomization.yaml")
        if not os.path.isfile(top):
            problems.append(f"{rel}/kustomization.yaml missing")
            continue
        with open(top, encoding="utf-8") as fh:
            k = yaml.safe_load(fh) or {}
        listed = list(k.get("resources") or [])
        if [r for r in listed if r in files] != files:
            problems.append(f"{rel}/kustomization.yaml must list {files} in order")
        if any(r.rstrip("/").endswith("examples") for r in listed):
            problems.append(f"{rel}/kustomization.yaml must not apply examples/")
        if k.get("namespace"):
            problems.append(f"{rel}/kustomization.yaml must not force one namespace")
    return problems


def kustomize(kubectl, root, rel):
    """`kubectl kustomize` of @rel: (parsed documents, None) or (None, why it failed)."""
    try:
        res = subprocess.run([kubectl, "kustomize", os.path.join(root, rel)],
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, f"kubectl kustomize {rel} timed out"
    if res.returncode != 0:
        return None, f"{kubectl} kustomize {rel} failed: {res.stderr.strip()[:500]}"
    return [d for d in yaml.safe_load_all(res.stdout) if d], None


def rendered_id(d):
    md = d.get("metadata") or {}
    return (d.get("kind"), md.get("namespace"), md.get("name"))


def chk_kustomize_build(root):
    """Render with kubectl's built-in kustomize (the one tests/k8s/build.sh built, else one on
    PATH): the objects, the generated ConfigMap holding config/config.json, the images."""
    kubectl = find_kubectl()
    if kubectl is None:
        print("     (no kubectl: kustomize rendering not checked)")
        return []
    out, why = kustomize(kubectl, root, "manifests")
    if why:
        return [why]
    kinds = [d.get("kind") for d in out]
    problems = [f"rendered output lacks {k}" for k in EXPECTED_KINDS + sorted(MAP_KINDS)
                if k not in kinds]
    ref, _ = read_config(root)
    cms = [d for d in out if d.get("kind") == "ConfigMap"
           and d["metadata"].get("name") == "gpu-extender-config"]
    if len(cms) != 1 or (cms[0].get("data") or {}).get("config.json") != ref:
        problems.append("rendered ConfigMap gpu-extender-config does not hold config/config.json")
    images = sorted(c.get("image") for d in out if d.get("kind") == "Deployment"
                    for c in all_containers(pod_specs(Doc("", 0, d))[0][1]))
    if [i.split(":")[0] for i in images] != ["gpu-extender", "registry.k8s.io/kube-scheduler"] \
            or any(":" not in i for i in images):
        problems.append(f"rendered images {images}: want gpu-extender:TAG and "
                        "registry.k8s.io/kube-scheduler:TAG")
    return problems


def chk_gpu_pods_only_build(root):
    """`kubectl kustomize manifests/overlays/gpu-pods-only` renders a whole install on its own:
    the objects of manifests/ but the MutatingAdmissionPolicy and its binding, with its own
    scheduler profiles (the overlay's files, whole) and extender config; nothing else differs."""
    kubectl = find_kubectl()
    if kubectl is None:
        print("     (no kubectl: kustomize rendering not checked)")
        return []
    base, why = kustomize(kubectl, root, "manifests")
    ov, why2 = kustomize(kubectl, root, GPU_PODS_ONLY)
    if why or why2:
        return [why or why2]
    b = {rendered_id(d): d for d in base}
    o = {rendered_id(d): d for d in ov}
    problems = []
    want = {i for i in b if i[0] not in MAP_KINDS}
    if set(o) != want:
        problems.append(f"objects: overlay only {sorted(set(o) - want, key=str)}, "
                        f"manifests/ only {sorted(want - set(o), key=str)}")
    own = {("ConfigMap", "gpu-extender", "gpu-extender-config"): ("config.json", "config.json"),
           ("ConfigMap", "kube-system", "gpu-scheduler-config"):
               ("kube-scheduler-config.yaml", "kube-scheduler-config.yaml"),
           ("ConfigMap", "kube-system", "gpu-scheduler-config-https"):
               ("kube-scheduler-config-https.yaml", "kube-scheduler-config.yaml")}
    for i, (f, key) in own.items():
        with open(os.path.join(root, GPU_PODS_ONLY, f), encoding="utf-8") as fh:
            text = fh.read()
        if f.endswith(".yaml"):
            text = yaml.safe_load(text)["data"][key]
        if ((o.get(i) or {}).get("data") or {}).get(key) != text:
            problems.append(f"{i[2]} does not hold {GPU_PODS_ONLY}/{f}")
        if ((b.get(i) or {}).get("data") or {}).get(key) == text:
            problems.append(f"{i[2]} is the same in manifests/: the overlay changes nothing")
    for i in sorted(set(o) & set(b) - set(own), key=str):
        if o[i] != b[i]:
            problems.append(f"{i[0]} {i[2]} differs from the one of manifests/ (only "
                            "the three ConfigMaps may)")
    return problems


def chk_install_configs(root, docs):
    """Each install pairs its profile with its config: manifests/ (every pod through the
    extender, no managedResources) with config/config.json, which turns score.relative on and
    charges idle nodes; the GPU-pods-only overlay (managedResources) with its config.json,
    config/config.json less exactly those two keys (same order, same values otherwise)."""
    problems = []
    with open(os.path.join(root, "config", "config.json"), encoding="utf-8") as fh:
        full = json.load(fh)
    with open(os.path.join(root, GPU_PODS_ONLY, "config.json"), encoding="utf-8") as fh:
        text = fh.read()
    score = full.get("score") or {}
    if score.get("relative") is not True or not score.get("fgd_idle_card_milli"):
        problems.append("config/config.json must set score.relative: true and "
                        "score.fgd_idle_card_milli (the all-pods profile needs them)")
    less = copy.deepcopy(full)
    for k in ALL_PODS_KEYS:
        section, key = k.split(".")
        less.get(section, {}).pop(key, None)
    if json.dumps(json.loads(text)) != json.dumps(less):
        problems.append(f"{GPU_PODS_ONLY}/config.json is not config/config.json less "
                        + " and ".join(ALL_PODS_KEYS) + ": after editing config/config.json,"
                        " edit it the same way")
    for d, key, k in scheduler_configs(docs):
        mr = [m for e in k.get("extenders") or [] for m in e.get("managedResources") or []]
        in_overlay = d.path.startswith(GPU_PODS_ONLY + "/")
        if in_overlay and not mr:
            problems.append(f"{d.where()}: the GPU-pods-only profile needs managedResources")
        if not in_overlay and mr:
            problems.append(f"{d.where()}: the all-pods profile takes every pod "
                            "(no managedResources)")
    return problems


def rbac_rules(docs):
    for d in docs:
        if d.kind in ("ClusterRole", "Role"):
            for i, rule in enumerate(d.body.get("rules") or []):
                yield d, i, rule


def chk_rbac_no_wildcards(docs):
    problems = []
    for d, i, rule in rbac_rules(docs):
        where = f"{d.kind} {d.name} rule {i}"
        verbs = rule.get("verbs") or []
        resources = rule.get("resources") or []
        groups = rule.get("apiGroups") or []
        if not verbs or not resources:
            problems.append(f"{where}: empty verbs or resources")
        if "nonResourceURLs" in rule:
            problems.append(f"{where}: nonResourceURLs")
        for v in verbs:
            if v in DANGEROUS_VERBS:
                problems.append(f"{where}: verb {v}")
        for r in resources:
            if "*" in r:
                problems.append(f"{where}: resource {r}")
            if r.split("/")[0] == "secrets":
                problems.append(f"{where}: secrets access")
        if "*" in groups:
            problems.append(f"{where}: apiGroup *")
    for d in docs:
        if d.kind in ("ClusterRole", "Role") and d.body.get("aggregationRule"):
            problems.append(f"{d.kind} {d.name}: aggregationRule")
    return problems


def chk_rbac_extender(docs):
    problems = []
    cr = one(docs, "ClusterRole", "gpu-extender")
    got = {}
    for rule in cr.body.get("rules") or []:
        for g in rule.get("apiGroups") or []:
            for r in rule.get("resources") or []:
                got.setdefault((g, r), set()).update(rule.get("verbs") or [])
    if got != EXTENDER_CLUSTER_RULES:
        grants = sorted((k, sorted(v)) for k, v in got.items())
        problems.append(f"ClusterRole gpu-extender grants {grants}")
    # Everything bound to the extender's ServiceAccount.
    bound = set()
    for b in docs:
        if b.kind in ("ClusterRoleBinding", "RoleBinding") and any(
                s.get("kind") == "ServiceAccount" and s.get("name") == "gpu-extender"
                and s.get("namespace") == "gpu-extender" for s in b.body.get("subjects") or []):
            ref = b.body.get("roleRef") or {}
            bound.add((b.kind, b.namespace, ref.get("kind"), ref.get("name")))
    if bound != {("ClusterRoleBinding", None, "ClusterRole", "gpu-extender"),
                 ("RoleBinding", "gpu-extender", "Role", "gpu-extender-ledger")}:
        problems.append(f"the gpu-extender ServiceAccount is bound to {sorted(bound, key=str)}")
    roles = [d for d in docs if d.kind == "Role" and d.namespace == "gpu-extender"
             and ("RoleBinding", "gpu-extender", "Role", d.name) in bound]
    leases = False
    for d in roles:
        for rule in d.body.get("rules") or []:
            res = set(rule.get("resources") or [])
            verbs = set(rule.get("verbs") or [])
            if res == {"leases"} and rule.get("apiGroups") == ["coordination.k8s.io"]:
                leases = True
                if verbs != EXTENDER_LEDGER_VERBS:
                    problems.append(f"Role {d.name}: lease verbs {sorted(verbs)}")
            elif res == {"configmaps"}:
                if not verbs <= READ_VERBS:
                    problems.append(f"Role {d.name}: configmaps may only be read")
            else:
                problems.append(f"Role {d.name}: unexpected rule on {sorted(res)}")
    if not leases:
        problems.append("no Role in gpu-extender grants the ledger Leases")
    return problems


def chk_rbac_bindings(docs):
    problems = []
    sas = {(d.namespace, d.name) for d in docs if d.kind == "ServiceAccount"}
    defined = {(d.kind, d.name) for d in docs if d.kind in ("ClusterRole", "Role")
               and not d.path.startswith("manifests/examples/")}
    role_ns = {d.name: d.namespace for d in docs if d.kind == "Role"}
    for d in deployable(docs):
        if d.kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        ref = d.body.get("roleRef") or {}
        key = (ref.get("kind"), ref.get("name"))
        if ref.get("apiGroup") != "rbac.authorization.k8s.io":
            problems.append(f"{d.kind} {d.name}: roleRef.apiGroup")
        if key not in defined and key not in BUILTIN_ROLES:
            problems.append(f"{d.kind} {d.name}: binds unknown {key}")
        if d.kind == "ClusterRoleBinding" and ref.get("kind") != "ClusterRole":
            problems.append(f"ClusterRoleBinding {d.name}: roleRef must be a ClusterRole")
        if (d.kind == "RoleBinding" and ref.get("kind") == "Role"
                and key not in BUILTIN_ROLES and role_ns.get(ref.get("name")) != d.namespace):
            problems.append(f"RoleBinding {d.name}: Role in another namespace")
        subjects = d.body.get("subjects") or []
        if not subjects:
            problems.append(f"{d.kind} {d.name}: no subjects")
        for s in subjects:
            if s.get("kind") != "ServiceAccount":
                problems.append(f"{d.kind} {d.name}: subject kind {s.get('kind')}")
            elif (s.get("namespace"), s.get("name")) not in sas:
                problems.append(f"{d.kind} {d.name}: unknown ServiceAccount "
                                f"{s.get('namespace')}/{s.get('name')}")
    return problems


def chk_security(docs):
    """Extender and scheduler workloads: non-root, read-only root, no privilege, resources."""
    problems = []
    for d in core(docs):
        for label, spec in pod_specs(d):
            psc = spec.get("securityContext") or {}
            if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
                problems.append(f"{label}: host namespaces")
            for c in all_containers(spec):
                csc = c.get("securityContext") or {}
                where = f"{label}/{c.get('name')}"

                def eff(key):
                    return csc.get(key, psc.get(key))
                if eff("runAsNonRoot") is not True:
                    problems.append(f"{where}: runAsNonRoot")
                if eff("runAsUser") != 65532:
                    problems.append(f"{where}: runAsUser {eff('runAsUser')}")
                if csc.get("readOnlyRootFilesystem") is not True:
                    problems.append(f"{where}: readOnlyRootFilesystem")
                if csc.get("allowPrivilegeEscalation") is not False:
                    problems.append(f"{where}: allowPrivilegeEscalation")
                if csc.get("privileged"):
                    problems.append(f"{where}: privileged")
                caps = csc.get("capabilities") or {}
                if caps.get("drop") != ["ALL"] or caps.get("add"):
                    problems.append(f"{where}: capabilities must drop ALL and add none")
                if (eff("seccompProfile") or {}).get("type") != "RuntimeDefault":
                    problems.append(f"{where}: seccompProfile RuntimeDefault")
                req, lim = container_resources(c)
                for r in ("cpu", "memory"):
                    if r not in req or r not in lim:
                        problems.append(f"{where}: {r} request and limit")
            for v in spec.get("volumes") or []:
                if "hostPath" in v:
                    problems.append(f"{label}: hostPath volume {v.get('name')}")
    return problems


def probe_path(c, which):
    return ((c.get(which) or {}).get("httpGet") or {}).get("path")


def container_port(c, ref):
    for p in c.get("ports") or []:
        if ref in (p.get("name"), p.get("containerPort")):
            return p.get("containerPort")
    return None


def extender_container(dep):
    spec = pod_specs(dep)[0][1]
    cs = [c for c in spec.get("containers") or [] if c.get("name") == "gpu-extender"]
    if len(cs) != 1:
        raise LookupError("Deployment gpu-extender has no container gpu-extender")
    return spec, cs[0]


def chk_extender_deployment(docs, cfg):
    problems = []
    dep = one(docs, "Deployment", "gpu-extender")
    spec, c = extender_container(dep)
    if dep.namespace != "gpu-extender":
        problems.append("namespace")
    if (dep.body.get("spec") or {}).get("replicas") != 2:
        problems.append("replicas must be 2")
    sel = ((dep.body.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not selector_matches(sel, pod_template_labels(dep)):
        problems.append("selector does not match the template labels")
    if probe_path(c, "readinessProbe") != "/readyz":
        problems.append("readinessProbe must GET /readyz")
    if probe_path(c, "livenessProbe") != "/healthz":
        problems.append("livenessProbe must GET /healthz")
    port = cfg_get(cfg, "server.port", 8888)
    for which in ("readinessProbe", "livenessProbe"):
        ref = ((c.get(which) or {}).get("httpGet") or {}).get("port")
        if container_port(c, ref) != port:
            problems.append(f"{which} port {ref} is not server.port {port}")
    tls = cfg_get(cfg, "server.tls_cert_file", None) is not None
    for which in ("readinessProbe", "livenessProbe"):
        scheme = ((c.get(which) or {}).get("httpGet") or {}).get("scheme", "HTTP")
        if scheme != ("HTTPS" if tls else "HTTP"):
            problems.append(f"{which} scheme {scheme} does not match server TLS")
    if [p.get("containerPort") for p in c.get("ports") or []] != [port]:
        problems.append(f"container ports must be [server.port {port}]")
    args = list(c.get("command") or []) + list(c.get("args") or [])
    if "--config" not in args or args[args.index("--config") + 1:][:1] != [CONFIG_PATH]:
        problems.append(f"args must be --config {CONFIG_PATH}")
    req, lim = container_resources(c)
    if not (req.get("cpu") and req.get("memory") and lim.get("cpu") and lim.get("memory")):
        problems.append("resources")
    env = {e.get("name"): e for e in c.get("env") or []}
    fp = (((env.get("POD_NAMESPACE") or {}).get("valueFrom") or {}).get("fieldRef") or {})
    if fp.get("fieldPath") != "metadata.namespace":
        problems.append("env POD_NAMESPACE must come from fieldRef metadata.namespace")
    ip = (((env.get("POD_IP") or {}).get("valueFrom") or {}).get("fieldRef") or {})
    if cfg_get(cfg, "replicas.forward", False) and not cfg_get(cfg, "replicas.advertise_url", None) \
            and ip.get("fieldPath") != "status.podIP":
        problems.append("replicas.forward: env POD_IP must come from fieldRef status.podIP "
                        "(or set replicas.advertise_url)")
    if spec.get("serviceAccountName") != "gpu-extender":
        problems.append("serviceAccountName")
    if not find(docs, "ServiceAccount", spec.get("serviceAccountName")):
        problems.append("its ServiceAccount is not defined")
    if spec.get("automountServiceAccountToken") is False:
        problems.append("needs its service-account token")
    # Config volume: the ConfigMap, mounted as a directory (no subPath).
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    mounts = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") == CONFIG_DIR]
    if len(mounts) != 1:
        problems.append(f"no volume mounted at {CONFIG_DIR}")
    else:
        m = mounts[0]
        if m.get("subPath") or m.get("subPathExpr"):
            problems.append("config mounted with subPath: live reload would never see updates")
        if m.get("readOnly") is not True:
            problems.append("config mount must be readOnly")
        cmv = (vols.get(m.get("name")) or {}).get("configMap") or {}
        if cmv.get("name") != "gpu-extender-config":
            problems.append("config volume must be the ConfigMap gpu-extender-config")
        items = cmv.get("items")
        if items is not None and {"key": "config.json", "path": "config.json"} not in items:
            problems.append("config volume items must map config.json to config.json")
    for m in c.get("volumeMounts") or []:
        mp = m.get("mountPath", "")
        if mp != CONFIG_DIR and mp.startswith(CONFIG_DIR + "/"):
            problems.append(f"{mp} is nested inside the config volume")
    secrets = [v for v in vols.values() if "secret" in v]
    for v in secrets:
        if tls is False and (v.get("secret") or {}).get("optional") is not True:
            problems.append(f"secret volume {v.get('name')} must be optional while TLS is off")
    aff = (((spec.get("affinity") or {}).get("podAntiAffinity") or {})
           .get("preferredDuringSchedulingIgnoredDuringExecution") or [])
    if not any((t.get("podAffinityTerm") or {}).get("topologyKey") == "kubernetes.io/hostname"
               and selector_matches(((t.get("podAffinityTerm") or {}).get("labelSelector") or {})
                                    .get("matchLabels"), pod_template_labels(dep))
               for t in aff):
        problems.append("podAntiAffinity preferred on kubernetes.io/hostname")
    return problems


def chk_service_pdb(docs, cfg):
    problems = []
    dep = one(docs, "Deployment", "gpu-extender")
    _, c = extender_container(dep)
    labels = pod_template_labels(dep)
    svc = one(docs, "Service", "gpu-extender")
    s = svc.body.get("spec") or {}
    if s.get("type", "ClusterIP") != "ClusterIP":
        problems.append("Service must be ClusterIP")
    if svc.namespace != dep.namespace:
        problems.append("Service and Deployment namespaces differ")
    if not selector_matches(s.get("selector"), labels):
        problems.append("Service selector does not select the extender pods")
    ports = s.get("ports") or []
    if len(ports) != 1:
        problems.append("Service must expose one port")
    else:
        tp = ports[0].get("targetPort", ports[0].get("port"))
        if container_port(c, tp) != cfg_get(cfg, "server.port", 8888):
            problems.append(f"Service targetPort {tp} is not the container's server.port")
    pdb = one(docs, "PodDisruptionBudget", "gpu-extender")
    p = pdb.body.get("spec") or {}
    if p.get("minAvailable") != 1:
        problems.append("PDB minAvailable must be 1")
    if pdb.namespace != dep.namespace:
        problems.append("PDB namespace")
    if not selector_matches((p.get("selector") or {}).get("matchLabels"), labels):
        problems.append("PDB selector does not select the extender pods")
    ns = [d.name for d in docs if d.kind == "Namespace"]
    if "gpu-extender" not in ns:
        problems.append("Namespace gpu-extender not defined")
    return problems


def configmap_config(docs):
    cm = one(docs, "ConfigMap", "gpu-extender-config", under="manifests/kustomization.yaml")
    if cm.namespace != "gpu-extender":
        raise LookupError("ConfigMap gpu-extender-config must be in gpu-extender")
    text = (cm.body.get("data") or {}).get("config.json")
    if not isinstance(text, str):
        raise LookupError("ConfigMap gpu-extender-config has no data.config.json")
    return text


def chk_configmap_equal(docs, root):
    """The ConfigMap is generated from manifests/config.json, a byte-for-byte copy of
    config/config.json (kustomize reads no file outside manifests/)."""
    cm = one(docs, "ConfigMap", "gpu-extender-config", under="manifests/kustomization.yaml")
    text = (cm.body.get("data") or {}).get("config.json")
    ref, _ = read_config(root)
    if text != ref:
        diff = difflib.unified_diff(ref.splitlines(), (text or "").splitlines(),
                                    "config/config.json", "manifests/config.json", lineterm="", n=0)
        return ["manifests/config.json differs from config/config.json; after editing one, "
                "copy it: cp config/config.json manifests/config.json\n    "
                + "\n    ".join(list(diff)[:20])]
    return []


def chk_images(root, docs):
    """Images are set in one place: the kustomizations' images: (registry/name and tag are one
    edit); the Deployments name the image without a tag."""
    problems = []
    tops = {rel: k for rel, k in kustomizations(root)}
    want = {"manifests/extender": "gpu-extender",
            "manifests/scheduler": "registry.k8s.io/kube-scheduler"}
    for rel, name in want.items():
        imgs = [i for i in (tops.get(rel) or {}).get("images") or [] if i.get("name") == name]
        if len(imgs) != 1 or not imgs[0].get("newTag"):
            problems.append(f"{rel}/kustomization.yaml: images: needs one entry {name} with newTag")
    for path in yaml_files(os.path.join(root, "manifests")):
        with open(path, encoding="utf-8") as fh:
            for m in re.finditer(r"^\s*image:\s*(\S+)", fh.read(), flags=re.M):
                rel = os.path.relpath(path, root)
                if m.group(1) in want.values() or rel.startswith("manifests/examples/"):
                    continue
                problems.append(f"{rel}: image {m.group(1)} (name it without a tag and set it in "
                                "the kustomization's images:)")
    return problems


def scheduler_configs(docs):
    """(ConfigMap doc, data key, parsed KubeSchedulerConfiguration), overlays' too."""
    out = []
    cms = find(docs, "ConfigMap", under="manifests/scheduler/")
    for d in cms + find(docs, "ConfigMap", under="manifests/overlays/"):
        for key, val in (d.body.get("data") or {}).items():
            if not isinstance(val, str):
                continue
            try:
                parsed = yaml.safe_load(val)
            except yaml.YAMLError as exc:
                raise LookupError(f"{d.name}/{key}: {exc}")
            if isinstance(parsed, dict) and parsed.get("kind") == "KubeSchedulerConfiguration":
                out.append((d, key, parsed))
    return out


# kube-scheduler decodes its configuration strictly: an unknown (or misspelt)
# field stops it from starting. Fields of kubescheduler.config.k8s.io/v1.
KSC_FIELDS = {
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
    "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders",
    "delayCacheUntilActive",
}
LEADER_FIELDS = {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                 "resourceLock", "resourceName", "resourceNamespace"}
CLIENT_FIELDS = {"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"}
PROFILE_FIELDS = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
EXTENDER_FIELDS = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight",
                   "bindVerb", "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable",
                   "managedResources", "ignorable"}
TLS_FIELDS = {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData",
              "keyData", "caData"}
MANAGED_FIELDS = {"name", "ignoredByScheduler"}


def unknown_fields(k):
    """Field names kube-scheduler's strict decoder would refuse."""
    bad = [f for f in k if f not in KSC_FIELDS]
    bad += [f"leaderElection.{f}" for f in k.get("leaderElection") or {} if f not in LEADER_FIELDS]
    bad += [f"clientConnection.{f}" for f in k.get("clientConnection") or {}
            if f not in CLIENT_FIELDS]
    for p in k.get("profiles") or []:
        bad += [f"profiles[].{f}" for f in p if f not in PROFILE_FIELDS]
    for e in k.get("extenders") or []:
        bad += [f"extenders[].{f}" for f in e if f not in EXTENDER_FIELDS]
        bad += [f"extenders[].tlsConfig.{f}" for f in e.get("tlsConfig") or {}
                if f not in TLS_FIELDS]
        for m in e.get("managedResources") or []:
            bad += [f"extenders[].managedResources[].{f}" for f in m if f not in MANAGED_FIELDS]
    return bad


def is_extended_resource(name):
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    return re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?",
                        name) is not None


def fit_ignores(w, k, res):
    """An extender without managedResources: NodeResourcesFit's args must ignore @res."""
    for p in k.get("profiles") or []:
        for pc in p.get("pluginConfig") or []:
            if pc.get("name") == "NodeResourcesFit" and \
                    res in ((pc.get("args") or {}).get("ignoredResources") or []):
                return []
    return [f"{w}: no managedResources, so NodeResourcesFit args must list {res} "
            "in ignoredResources"]


def chk_scheduler_config(docs, cfg):
    problems = []
    confs = scheduler_configs(docs)
    if not confs:
        return ["no KubeSchedulerConfiguration inside a ConfigMap under manifests/scheduler/"]
    names = config_names(cfg)
    svc = one(docs, "Service", "gpu-extender")
    svc_ports = {p.get("port") for p in (svc.body.get("spec") or {}).get("ports") or []}
    prefix = cfg_get(cfg, "server.url_prefix", "/gpu-extender")
    schemes = set()
    for d, key, k in confs:
        w = f"{d.name}/{key}"
        if k.get("apiVersion") != "kubescheduler.config.k8s.io/v1":
            problems.append(f"{w}: apiVersion must be kubescheduler.config.k8s.io/v1")
        bad = unknown_fields(k)
        if bad:
            problems.append(f"{w}: unknown fields {bad}")
        profiles = [p.get("schedulerName") for p in k.get("profiles") or []]
        if profiles != [SCHEDULER_NAME]:
            problems.append(f"{w}: profiles must be [{SCHEDULER_NAME}], got {profiles}")
        le = k.get("leaderElection") or {}
        if le.get("leaderElect") is not True or le.get("resourceName") != SCHEDULER_NAME:
            problems.append(f"{w}: leaderElection must be on with resourceName {SCHEDULER_NAME}")
        for p in k.get("profiles") or []:
            if "extenders" in p:
                problems.append(f"{w}: extenders belongs at the top level, not in a profile")
        ext = k.get("extenders") or []
        if len(ext) != 1:
            problems.append(f"{w}: expected exactly one extender, got {len(ext)}")
            continue
        e = ext[0]
        for f in ("urlPrefix", "filterVerb", "prioritizeVerb", "bindVerb"):
            if not isinstance(e.get(f), str) or not e.get(f):
                problems.append(f"{w}: {f} missing")
        if (e.get("filterVerb"), e.get("prioritizeVerb"), e.get("bindVerb")) != (
                "filter", "prioritize", "bind"):
            problems.append(f"{w}: verbs must be filter/prioritize/bind")
        weight = e.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or weight <= 0:
            problems.append(f"{w}: weight must be a positive integer")
        if e.get("nodeCacheCapable") is not True:
            problems.append(f"{w}: nodeCacheCapable must be true")
        if e.get("ignorable") is not False:
            problems.append(f"{w}: ignorable must be false (fail closed)")
        if not re.fullmatch(r"\d+(ms|s|m)", str(e.get("httpTimeout", ""))):
            problems.append(f"{w}: httpTimeout must be a duration such as 5s")
        if "enableHttps" in e:
            problems.append(f"{w}: enableHttps is the legacy spelling; use enableHTTPS")
        url = urllib.parse.urlsplit(str(e.get("urlPrefix", "")))
        schemes.add(url.scheme)
        if url.hostname not in (f"{svc.name}.{svc.namespace}.svc",
                                f"{svc.name}.{svc.namespace}.svc.cluster.local"):
            problems.append(f"{w}: urlPrefix host {url.hostname} is not the Service")
        port = url.port or (443 if url.scheme == "https" else 80)
        if url.scheme == "http":
            if port not in svc_ports:
                problems.append(f"{w}: urlPrefix port {port} is not a Service port")
            if e.get("enableHTTPS") or e.get("tlsConfig"):
                problems.append(f"{w}: http urlPrefix with TLS settings")
        elif url.scheme == "https":
            t = e.get("tlsConfig") or {}
            if not (t.get("caFile") or t.get("caData")):
                problems.append(f"{w}: https without a CA disables verification")
            if t.get("insecure"):
                problems.append(f"{w}: tlsConfig.insecure")
        else:
            problems.append(f"{w}: urlPrefix scheme {url.scheme!r}")
        if url.path.rstrip("/") != prefix:
            problems.append(f"{w}: urlPrefix path {url.path} is not server.url_prefix {prefix}")
        mr = e.get("managedResources") or []
        got = {m.get("name"): m.get("ignoredByScheduler", False) for m in mr}
        if len(got) != len(mr):
            problems.append(f"{w}: duplicate managedResources")
        want = {names["gpu"]: False, names["shared"]: False, names["slice"]: True}
        if not mr:
            # all-pods variant: called for every pod, so the slice is ignored by Fit's args
            problems += fit_ignores(w, k, names["slice"])
        elif got != want:
            problems.append(f"{w}: managedResources {got}, want {want}")
        for n in got:
            if not isinstance(n, str) or not is_extended_resource(n):
                problems.append(f"{w}: {n} is not an extended resource name")
    if "http" not in schemes:
        problems.append("no http variant of the scheduler configuration")
    if "https" not in schemes:
        problems.append("no https variant of the scheduler configuration")
    return problems


def chk_scheduler_deployment(docs):
    problems = []
    dep = one(docs, "Deployment", SCHEDULER_NAME, under="manifests/scheduler/")
    spec = pod_specs(dep)[0][1]
    cs = spec.get("containers") or []
    if len(cs) != 1:
        return ["the scheduler Deployment must have one container"]
    c = cs[0]
    if not str(c.get("image", "")).startswith("registry.k8s.io/kube-scheduler:v"):
        problems.append(f"image {c.get('image')}")
    if (dep.body.get("spec") or {}).get("replicas", 1) < 1:
        problems.append("replicas")
    args = list(c.get("command") or []) + list(c.get("args") or [])
    conf = [a.split("=", 1)[1] for a in args if a.startswith("--config=")]
    if len(conf) != 1:
        return problems + ["needs exactly one --config=FILE"]
    cdir, cfile = os.path.dirname(conf[0]), os.path.basename(conf[0])
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
    m = mounts.get(cdir)
    if m is None:
        return problems + [f"nothing mounted at {cdir}"]
    cmname = ((vols.get(m.get("name")) or {}).get("configMap") or {}).get("name")
    cms = [x for x in find(deployable(docs), "ConfigMap", cmname) if x.namespace == dep.namespace]
    if len(cms) != 1:
        return problems + [f"mounted ConfigMap {cmname} not defined in {dep.namespace}"]
    if cfile not in (cms[0].body.get("data") or {}):
        problems.append(f"ConfigMap {cmname} has no key {cfile}")
    # Every scheduler config's caFile must be reachable through a mount.
    for _, _, k in scheduler_configs(docs):
        for e in k.get("extenders") or []:
            ca = (e.get("tlsConfig") or {}).get("caFile")
            if ca and os.path.dirname(ca) not in mounts:
                problems.append(f"caFile {ca} is not under a mounted volume")
    sa = spec.get("serviceAccountName")
    if not [d for d in find(docs, "ServiceAccount", sa) if d.namespace == dep.namespace]:
        problems.append(f"ServiceAccount {sa} not defined in {dep.namespace}")
    bound = set()
    for d in docs:
        if d.kind in ("ClusterRoleBinding", "RoleBinding"):
            for s in d.body.get("subjects") or []:
                if s.get("name") == sa and s.get("namespace") == dep.namespace:
                    bound.add((d.kind, d.namespace, (d.body.get("roleRef") or {}).get("name")))
    for need in [("ClusterRoleBinding", None, "system:kube-scheduler"),
                 ("ClusterRoleBinding", None, "system:volume-scheduler"),
                 ("RoleBinding", "kube-system", "extension-apiserver-authentication-reader")]:
        if need not in bound:
            problems.append(f"{sa} lacks {need}")
    # Leader election on its own Lease must be granted where the Lease lives.
    lease_ns = {((k.get("leaderElection") or {}).get("resourceNamespace") or "kube-system")
                for _, _, k in scheduler_configs(docs)}
    granted = False
    for kind, ns, role in bound:
        for r in find(docs, "ClusterRole", role) + find(docs, "Role", role):
            for rule in r.body.get("rules") or []:
                if ("leases" in (rule.get("resources") or [])
                        and SCHEDULER_NAME in (rule.get("resourceNames") or [])
                        and {"get", "update"} <= set(rule.get("verbs") or [])
                        and (kind == "ClusterRoleBinding" or ns in lease_ns)):
                    granted = True
    if not granted:
        problems.append(f"no get/update on Lease {SCHEDULER_NAME} in {sorted(lease_ns)}")
    return problems


def requests_of(spec):
    out = set()
    for c in all_containers(spec):
        req, lim = container_resources(c)
        out |= set(req) | set(lim)
    return out


def chk_examples(docs, cfg):
    problems = []
    names = config_names(cfg)
    ex = [d for d in docs if d.path.startswith("manifests/examples/")]
    managed = {names["gpu"], names["shared"], names["slice"]}
    for d in ex:
        for label, spec in pod_specs(d):
            if spec.get("schedulerName") != SCHEDULER_NAME:
                problems.append(f"{d.where()} {label}: schedulerName must be {SCHEDULER_NAME}")
            if not requests_of(spec) & managed:
                problems.append(f"{d.where()} {label}: requests no managed resource, "
                                "so the scheduler would never call the extender")

    def gpus(spec):
        return sum(int(container_resources(c)[1].get(names["gpu"], 0))
                   for c in spec.get("containers") or [])

    excl = [d for d in ex if d.path.endswith("/pod-exclusive.yaml") and d.kind == "Pod"]
    if len(excl) != 1:
        problems.append("pod-exclusive.yaml must hold one Pod")
    else:
        spec = pod_specs(excl[0])[0][1]
        if gpus(spec) != 1:
            problems.append(f"pod-exclusive.yaml: {names['gpu']} limit must be 1")
        if not spec.get("tolerations"):
            problems.append("pod-exclusive.yaml: needs a toleration")
    jobs = [d for d in ex if d.path.endswith("/job-multi-gpu.yaml") and d.kind == "Job"]
    if len(jobs) != 1:
        problems.append("job-multi-gpu.yaml must hold one Job")
    elif gpus(pod_specs(jobs[0])[0][1]) != 4:
        problems.append(f"job-multi-gpu.yaml: {names['gpu']} limit must be 4")
    shared = [d for d in ex if d.path.endswith("/pods-shared.yaml") and d.kind == "Pod"]
    if len(shared) != 3:
        problems.append(f"pods-shared.yaml must hold three Pods, has {len(shared)}")
    for d in shared:
        problems += [f"pods-shared.yaml {d.name}: {p}" for p in shared_pod_problems(d.body, names)]
    milli = [d for d in ex if d.path.endswith("/pod-gpu-milli.yaml") and d.kind == "Pod"]
    if len(milli) != 1:
        problems.append(f"pod-gpu-milli.yaml must hold one Pod, has {len(milli)}")
    for d in milli:
        milli_ann = cfg_get(cfg, "names.gpu_milli_annotation", "gpu-extender.io/gpu-milli")
        problems += [f"pod-gpu-milli.yaml: {p}"
                     for p in shared_pod_problems(d.body, names, share_ann=milli_ann)]
    gang = [d for d in ex if d.path.endswith("/gang-shares.yaml")]
    groups = [d for d in gang if d.kind == "PodGroup"]
    members = [d for d in gang if d.kind == "Pod"]
    if len(groups) != 1 or len(members) < 2:
        problems.append("gang-shares.yaml must hold one PodGroup and its member Pods")
    else:
        policy = ((groups[0].body.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
        if (policy or {}).get("minCount") != len(members):
            problems.append("gang-shares.yaml: gang.minCount must be the number of members")
        for d in members:
            if (d.body["spec"].get("schedulingGroup") or {}).get("podGroupName") != groups[0].name:
                problems.append(f"gang-shares.yaml {d.name}: spec.schedulingGroup must name "
                                f"the PodGroup {groups[0].name}")
            problems += [f"gang-shares.yaml {d.name}: {p}"
                         for p in shared_pod_problems(d.body, names)]
    return problems


def shared_pod_problems(pod, names, need_virtual=True, share_ann=None):
    """What is wrong with a shared pod sized by @share_ann (the slice count when None)."""
    problems = []
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    share_ann = share_ann or names["slices_ann"]
    share = str(ann.get(share_ann, ""))
    if not re.fullmatch(r"[1-9][0-9]*", share) or (share_ann != names["slices_ann"]
                                                    and int(share) > 1000):
        problems.append(f"annotation {share_ann} must be a positive integer string"
                        + ("" if share_ann == names["slices_ann"] else " up to 1000"))
    if not re.fullmatch(r"[0-9]+(Ki|Mi|Gi|Ti)?", str(ann.get(names["memory_ann"], ""))):
        problems.append(f"annotation {names['memory_ann']} must be a quantity such as 6Gi")
    spec = pod.get("spec") or {}
    if names["gpu"] in requests_of(spec) or names["shared"] in requests_of(spec):
        problems.append(f"must not request {names['gpu']} or {names['shared']}")
    if need_virtual and names["slice"] not in requests_of(spec):
        problems.append(f"must request {names['slice']}")
    want = f"metadata.annotations['{names['uuids_ann']}']"
    for c in spec.get("containers") or []:
        env = {e.get("name"): e for e in c.get("env") or []}
        fp = (((env.get("NVIDIA_VISIBLE_DEVICES") or {}).get("valueFrom") or {})
              .get("fieldRef") or {}).get("fieldPath")
        if fp != want:
            problems.append(f"container {c.get('name')}: NVIDIA_VISIBLE_DEVICES must come "
                            f"from fieldRef {want}")
    return problems


def chk_sharing_doc(root, cfg):
    path = os.path.join(root, "docs", "sharing.md")
    if not os.path.isfile(path):
        return ["docs/sharing.md missing"]
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    problems = []
    names = config_names(cfg)
    blocks = re.findall(r"^```ya?ml\n(.*?)^```", text, flags=re.S | re.M)
    if not blocks:
        problems.append("no yaml code blocks")
    pods = []
    for i, b in enumerate(blocks):
        try:
            for body in yaml.safe_load_all(b):
                if body is None:
                    continue
                if not isinstance(body, dict) or not body.get("kind"):
                    continue  # a fragment, e.g. a device-plugin config snippet
                if not body.get("apiVersion") or not (body.get("metadata") or {}).get("name"):
                    problems.append(f"yaml block {i}: {body.get('kind')} lacks apiVersion/name")
                if body.get("kind") == "Pod":
                    pods.append(body)
        except yaml.YAMLError as exc:
            problems.append(f"yaml block {i}: {exc}")
    annotated = [p for p in pods
                 if names["slices_ann"] in ((p.get("metadata") or {}).get("annotations") or {})]
    if not annotated:
        problems.append("no annotation-driven shared Pod example")
    if not [p for p in annotated if names["slice"] in requests_of(p.get("spec") or {})]:
        problems.append(f"no shared Pod example requesting {names['slice']}")
    for p in annotated:
        # The set-up with empty managedResources needs no virtual resource.
        problems += [f"doc pod {p['metadata'].get('name')}: {x}"
                     for x in shared_pod_problems(p, names, need_virtual=False)]
    dp = [p for p in pods if names["shared"] in requests_of(p.get("spec") or {})
          or names["gpu"] in requests_of(p.get("spec") or {})]
    if not dp:
        problems.append("no device-plugin time-slicing Pod example")
    for needle in REASONS + [names["uuids_ann"], names["index_ann"], names["slices_ann"],
                             names["managed"], "ignoredByScheduler", "NVIDIA_VISIBLE_DEVICES",
                             "nvidia.com/gpu.sharing-strategy", "nvidia.com/gpu.replicas"]:
        if needle not in text:
            problems.append(f"does not mention {needle!r}")
    return problems


def chk_dockerfile(root, cfg):
    path = os.path.join(root, "Dockerfile")
    if not os.path.isfile(path):
        return ["Dockerfile missing"]
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    problems = []
    for needle in ['ENTRYPOINT ["/usr/local/bin/gpu-extender"]',
                   f'CMD ["--config", "{CONFIG_PATH}"]', "USER 65532:65532",
                   f"EXPOSE {cfg_get(cfg, 'server.port', 8888)}", "-DGX_TESTS=OFF"]:
        if needle not in text:
            problems.append(f"lacks {needle}")
    if len(re.findall(r"^FROM ", text, flags=re.M)) < 2:
        problems.append("not multi-stage")
    if not os.path.isfile(os.path.join(root, ".dockerignore")):
        problems.append(".dockerignore missing")
    return problems


def go_mod_version(root, rel):
    """The k8s.io/kubernetes version pinned in @rel (a go.mod of tests/)."""
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        m = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", fh.read(), flags=re.M)
    if not m:
        raise LookupError(f"{rel}: no k8s.io/kubernetes version")
    return m.group(1)


def chk_versions(root, docs):
    """One answer to "which Kubernetes": the README's table names the releases the tests pin
    (tests/k8s, tests/k8s-next), the manifests' kube-scheduler is the tested release, and the
    chart's kubeVersion, the table and docs/sharing.md agree on the oldest supported one."""
    problems = []
    tested = go_mod_version(root, "tests/k8s/go.mod")
    nxt = go_mod_version(root, "tests/k8s-next/go.mod")
    with open(os.path.join(root, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    m = re.search(r"^## Supported Kubernetes versions\n(.*?)^## ", readme, flags=re.S | re.M)
    if not m:
        return ["README.md has no section '## Supported Kubernetes versions'"]
    table = m.group(1)
    for v, what in ((tested, "tests/k8s/go.mod"), (nxt, "tests/k8s-next/go.mod")):
        if v not in table:
            problems.append(f"README's table does not name {v} ({what})")
    sched = [c.get("image") for d in find(docs, "Deployment", SCHEDULER_NAME,
                                          under="manifests/scheduler/")
             for c in all_containers(pod_specs(d)[0][1])]
    if sched != [f"registry.k8s.io/kube-scheduler:{tested}"]:
        problems.append(f"manifests' kube-scheduler {sched}, want the tested {tested}")
    with open(os.path.join(root, "charts/gpu-extender/Chart.yaml"), encoding="utf-8") as fh:
        kv = str(yaml.safe_load(fh).get("kubeVersion", ""))
    km = re.fullmatch(r">=\s*1\.(\d+)\.0-0", kv)
    if not km:
        return problems + [f"Chart.yaml kubeVersion {kv!r}: want '>=1.N.0-0'"]
    oldest = f"1.{km.group(1)}"
    if f"before {oldest} | **not supported**" not in table:
        problems.append(f"README's table does not say releases before {oldest} (Chart.yaml "
                        "kubeVersion) are not supported")
    with open(os.path.join(root, "docs/sharing.md"), encoding="utf-8") as fh:
        sharing = fh.read()
    if f"back to {oldest}" not in sharing:
        problems.append(f"docs/sharing.md does not name {oldest} as the oldest release")
    # No other kube-scheduler version shipped or documented.
    for top in ("README.md", "docs", "charts", "manifests"):
        paths = [os.path.join(root, top)] if top.endswith(".md") else [
            os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(root, top)) for f in fs
            if f.endswith((".md", ".yaml", ".tpl"))]
        for path in paths:
            with open(path, encoding="utf-8") as fh:
                for v in re.findall(r"kube-scheduler:(v[0-9][^\s`'\"]*)", fh.read()):
                    if v != tested:
                        problems.append(f"{os.path.relpath(path, root)}: kube-scheduler:{v}, "
                                        f"not the tested {tested}")
    return problems


def check_config_text(binary, text):
    """`gpu-extender --check-config` on @text laid out as the pod sees it (a directory holding
    config.json): (exit status, output)."""
    with tempfile.TemporaryDirectory(prefix="gx-manifests-") as tmp:
        path = os.path.join(tmp, "config.json")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        res = subprocess.run([binary, "--check-config", path], capture_output=True, text=True,
                             timeout=60)
    return res.returncode, (res.stdout + res.stderr).strip()


def chk_binary_accepts(binary, docs, root):
    if not binary or not os.access(binary, os.X_OK):
        return [f"gpu-extender binary {binary!r} not found or not executable"]
    with open(os.path.join(root, GPU_PODS_ONLY, "config.json"), encoding="utf-8") as fh:
        overlay = fh.read()
    problems = []
    for label, text in (("manifests/", configmap_config(docs)), (GPU_PODS_ONLY, overlay)):
        rc, out = check_config_text(binary, text)
        if rc != 0:
            problems.append(f"{label}: --check-config exited {rc}: {out[:500]}")
    return problems


def chk_binary_rejects(binary, docs):
    """The validation is real: a broken copy must be refused with exit 1."""
    if not binary or not os.access(binary, os.X_OK):
        return [f"gpu-extender binary {binary!r} not found or not executable"]
    good = json.loads(configmap_config(docs))
    bad_port = copy.deepcopy(good)
    bad_port.setdefault("server", {})["port"] = 70000
    bad_key = copy.deepcopy(good)
    bad_key["no_such_section"] = {}
    problems = []
    for label, text in [("port 70000", json.dumps(bad_port)),
                        ("unknown key", json.dumps(bad_key)),
                        ("truncated JSON", json.dumps(good)[:-1])]:
        rc, out = check_config_text(binary, text)
        if rc != 1:
            problems.append(f"{label}: --check-config exited {rc}, want 1 ({out[:200]})")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--binary", default=None, help="path of the gpu-extender binary")
    a = ap.parse_args()
    root = os.path.abspath(a.root)

    ck = Checker()
    docs, problems = load_all(root)
    ck.check("every YAML file under manifests/ parses", not problems, "; ".join(problems))
    ck.check("manifests/ holds documents", len(docs) > 0, "nothing parsed")
    try:
        _, cfg = read_config(root)
        ck.check("config/config.json is JSON", True)
    except (OSError, ValueError) as exc:
        ck.check("config/config.json is JSON", False, str(exc))
        cfg = {}

    ck.run("documents have apiVersion, kind, metadata.name", chk_documents, docs)
    ck.run("objects are unique", chk_unique, docs)
    ck.run("namespaced objects name their namespace", chk_namespaces, docs)
    ck.run("expected kinds exist", chk_kinds, docs)
    ck.run("kustomizations list exactly the files present", chk_kustomizations, root)
    ck.run("kubectl kustomize renders manifests/", chk_kustomize_build, root)
    ck.run("kubectl kustomize renders manifests/overlays/gpu-pods-only alone",
           chk_gpu_pods_only_build, root)
    ck.run("RBAC: no wildcards, no secrets, no escalation verbs", chk_rbac_no_wildcards, docs)
    ck.run("RBAC: extender has exactly its least-privilege rules", chk_rbac_extender, docs)
    ck.run("RBAC: bindings reference known roles and ServiceAccounts", chk_rbac_bindings, docs)
    ck.run("workloads: non-root, read-only root, no privilege, resources", chk_security, docs)
    ck.run("extender Deployment: replicas, probes, config mount, env", chk_extender_deployment,
           docs, cfg)
    ck.run("Service and PDB select the extender pods", chk_service_pdb, docs, cfg)
    ck.run("ConfigMap config.json equals config/config.json", chk_configmap_equal, docs, root)
    ck.run("each install's profile has its config (all pods: score.relative)",
           chk_install_configs, root, docs)
    ck.run("images are set by the kustomizations' images:", chk_images, root, docs)
    ck.run("KubeSchedulerConfiguration extender entries", chk_scheduler_config, docs, cfg)
    ck.run("scheduler Deployment: config mount and RBAC", chk_scheduler_deployment, docs)
    ck.run("examples: scheduler name and GPU requests", chk_examples, docs, cfg)
    ck.run("docs/sharing.md: YAML examples and reasons", chk_sharing_doc, root, cfg)
    ck.run("Dockerfile: multi-stage, non-root, entrypoint", chk_dockerfile, root, cfg)
    ck.run("Kubernetes versions: README table, manifests, Chart.yaml and sharing.md agree",
           chk_versions, root, docs)
    ck.run("gpu-extender --check-config accepts both installs' configs", chk_binary_accepts,
           a.binary, docs, root)
    ck.run("gpu-extender --check-config rejects broken copies", chk_binary_rejects,
           a.binary, docs)

    print(f"{ck.passed} passed, {ck.failed} failed")
    return 1 if ck.failed else 0


if __name__ == "__main__":
    sys.exit(main())
