"""`gpu-extender explain` as a platform engineer first meets it (issue 22), on the demo
cluster (config/demo.json):

1. the YAML examples of manifests/examples/ are explained (multi-document: the first
   Pod, the others named); JSON pods still are;
2. a kind other than Pod is refused with exit 1; a workload's pod template (Job,
   Deployment, CronJob) is explained as a pod and the output says so;
3. a pod of another scheduler, or requesting no managed resource, gets a warning line
   (text) or a `warnings` entry (--json), and exit 0;
4. a config without file sources (the API server's) says to use --server URL, exit 1;
5. a wrong command line says what was wrong first, then "see gpu-extender --help", exit 2;
   --help (also of explain and simulate) prints usage on stdout, exit 0.
"""
import json
import os
import subprocess
import sys
import tempfile

from gxtest import ROOT, Checks, Extender

c = Checks("explain_cli")
binary = sys.argv[1]
work = tempfile.mkdtemp(prefix="gx-explain-")
DEMO = os.path.join(ROOT, "config", "demo.json")
EXAMPLES = os.path.join(ROOT, "manifests", "examples")


def run(*args):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def explain(pod, *extra, config=DEMO):
    return run("explain", "--config", config, "--pod", pod, *extra)


def write(name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# 1. YAML
rc, out, err = explain(os.path.join(EXAMPLES, "pod-exclusive.yaml"))
c.eq(rc, 0, f"pod-exclusive.yaml exits 0 ({err.strip()})")
c.ok(out.startswith("pod /cuda-exclusive: exclusive 1 GPU\n"), f"pod-exclusive.yaml: {out[:80]!r}")
c.ok("warning:" not in out, f"a pod of gpu-scheduler with a GPU has no warning: {out[:300]!r}")
rc, out, err = explain(os.path.join(EXAMPLES, "pods-shared.yaml"), "--json")
c.eq(rc, 0, f"pods-shared.yaml exits 0 ({err.strip()})")
doc = json.loads(out) if rc == 0 else {}
c.eq(doc.get("pod"), "/cuda-shared-1", "of several documents the first Pod is explained")
c.ok("cuda-shared-2" in (doc.get("source") or "") and "cuda-shared-3" in (doc.get("source") or ""),
     f"the other documents are named: {doc.get('source')!r}")
c.eq(doc.get("warnings"), [], "no warning for the shipped examples")
rc, out, err = explain(os.path.join(ROOT, "config", "demo", "pod-shared.json"))
c.eq(rc, 0, f"a JSON pod is still explained ({err.strip()})")
rc, out, err = explain(write("bad.yaml", "kind: Pod\n  spec: [\n"))
c.ok(rc == 1 and "line " in err, f"bad YAML: exit 1 with the line: {rc} {err.strip()!r}")

# 2. kinds
rc, out, err = explain(write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"))
c.ok(rc == 1 and "kind Service is not a Pod" in err, f"a Service is refused: {rc} {err.strip()!r}")
rc, out, err = explain(os.path.join(EXAMPLES, "job-multi-gpu.yaml"))
c.eq(rc, 0, f"a Job is explained ({err.strip()})")
c.ok("source: Job cuda-multi-gpu: its pod template, explained as a pod\n" in out,
     f"the output says it is the Job's template: {out[:300]!r}")
c.ok("exclusive 4 GPUs" in out, "the template's request is read")
cron = write("cron.yaml", """apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: ml}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          annotations:
            gpu-extender.io/time-slices: "2"
        spec:
          schedulerName: gpu-scheduler
          containers:
          - name: c
            image: x
            resources: {limits: {gpu-extender.io/time-slice: 1}}
""")
rc, out, err = explain(cron, "--json")
doc = json.loads(out) if rc == 0 else {}
c.eq(rc, 0, f"a CronJob is explained ({err.strip()})")
c.eq(doc.get("pod"), "ml/nightly", "the template is named after the CronJob")
c.eq((doc.get("request") or {}).get("slices"), 2, "the quoted annotation stays a string and is read")
c.ok("CronJob ml/nightly" in (doc.get("source") or ""), f"source: {doc.get('source')!r}")
svc_and_dep = write("two.yaml", """apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      schedulerName: gpu-scheduler
      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
""")
rc, out, err = explain(svc_and_dep)
c.eq(rc, 0, f"a Service then a Deployment: the Deployment is explained ({err.strip()})")
c.ok("Deployment web: its pod template" in out and "Service web (line 1)" in out,
     f"both documents are named: {out[:300]!r}")
rc, out, err = explain(write("svcs.yaml", "kind: Service\nmetadata: {name: a}\n---\n"
                             "kind: ConfigMap\nmetadata: {name: b}\n"))
c.ok(rc == 1 and "Service a" in err and "ConfigMap b" in err,
     f"no pod among several documents: each is named: {rc} {err.strip()!r}")

# 3. warnings
plain = write("plain.yaml", """apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: ml}
spec:
  containers: [{name: c, image: x, resources: {limits: {cpu: 1}}}]
""")
rc, out, err = explain(plain)
c.eq(rc, 0, f"a pod that never reaches the extender still exits 0 ({err.strip()})")
warns = [l for l in out.splitlines() if l.startswith("warning: ")]
c.eq(len(warns), 2, f"two warning lines: {out[:600]!r}")
c.ok(any('"default-scheduler"' in w and "gpu-scheduler" in w and "shipped default" in w
         for w in warns), f"the scheduler name warning: {warns!r}")
c.ok(any("managed resources" in w and "nvidia.com/gpu" in w for w in warns),
     f"the managed resources warning: {warns!r}")
rc, out, err = explain(plain, "--json")
doc = json.loads(out) if rc == 0 else {}
c.eq(len(doc.get("warnings") or []), 2, "--json carries the warnings")

# 4. a config without file sources
with open(DEMO) as f:
    live = json.load(f)
live["sources"] = {}
live["kubernetes"] = {"enabled": True, "url": "http://127.0.0.1:1"}
live_cfg = write("live.json", json.dumps(live))
os.symlink(os.path.join(ROOT, "config", "demo"), os.path.join(work, "demo"))
rc, out, err = explain(os.path.join(ROOT, "config", "demo", "pod-shared.json"), config=live_cfg)
c.ok(rc == 1 and "--server URL" in err and out == "",
     f"an API server config points to --server: {rc} {err.strip()!r} {out[:100]!r}")

# 1-3 through a running extender: --server posts the YAML to /debug/explain
ext = Extender(binary).start()
try:
    rc, out, err = run("explain", "--server", ext.url(""), "--pod", cron, "--json")
    doc = json.loads(out) if rc == 0 else {}
    c.eq(rc, 0, f"--server explains a YAML CronJob ({err.strip()})")
    c.ok("CronJob ml/nightly" in (doc.get("source") or "") and doc.get("warnings") == [],
         f"--server: source and warnings: {doc.get('source')!r} {doc.get('warnings')!r}")
    rc, out, err = run("explain", "--server", ext.url(""), "--pod", plain)
    c.ok(rc == 0 and out.count("warning: ") == 2, f"--server warns too: {rc} {out[:300]!r}")
    # kubectl get pod -o yaml | gpu-extender explain --server URL --pod -
    with open(cron) as f:
        p = subprocess.run([binary, "explain", "--server", ext.url(""), "--pod", "-", "--json"],
                           stdin=f, capture_output=True, text=True, timeout=60)
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    c.ok("CronJob ml/nightly" in (doc.get("source") or ""),
         f"--pod - reads the manifest from stdin: {p.returncode} {p.stderr.strip()!r}")
finally:
    ext.cleanup()

# 5. usage errors
HINT = "see gpu-extender --help"
for args, first in [
    (["--foo"], "gpu-extender: unknown option '--foo'"),
    (["frobnicate"], "gpu-extender: unknown command 'frobnicate'"),
    (["--config"], "gpu-extender: missing value for --config"),
    (["--check-config"], "gpu-extender: missing value for --check-config"),
    (["--version", "x"], "gpu-extender: unexpected argument 'x' after --version"),
    (["--config", "-"], "gpu-extender: --config needs a file: the extender reloads it"),
    (["explain", "--config", DEMO], "gpu-extender: explain: --pod is required"),
    (["explain", "--pod"], "gpu-extender: explain: missing value for --pod"),
    (["explain", "--pod", "p.yaml", "--foo"], "gpu-extender: explain: unknown option '--foo'"),
    (["explain", "--pod", "p.yaml"],
     "gpu-extender: explain: give one of --config FILE and --server URL"),
    (["simulate", "--nodes"], "gpu-extender: simulate: missing value for --nodes"),
    (["simulate", "--foo"], "gpu-extender: simulate: unknown option '--foo'"),
    (["simulate", "--nodes", "n.csv"], "gpu-extender: simulate: --pods is required"),
    (["simulate", "--nodes", "n", "--pods", "p", "--threads", "x"],
     "gpu-extender: simulate: --threads takes an integer"),
    (["simulate", "--nodes", "n", "--pods", "p", "--deployment", "all-pods"],
     "gpu-extender: simulate: --deployment takes default|gpu-pods-only, not 'all-pods'"),
    (["simulate", "--nodes", "n", "--pods", "p", "--strategy", "Most"],
     "gpu-extender: simulate: --strategy takes LeastAllocated or MostAllocated"),
    (["simulate", "--nodes", "n", "--pods", "p", "--progress", "-1"],
     "gpu-extender: simulate: --progress takes seconds from 0 to 3600"),
]:
    rc, out, err = run(*args)
    lines = err.splitlines()
    hint = "see gpu-extender simulate --help" if args[0] == "simulate" else HINT
    c.ok(rc == 2 and len(lines) == 2 and lines[0].startswith(first) and lines[1] == hint
         and out == "", f"{' '.join(args)}: exit 2, {first!r} then the hint: {rc} {err!r}")
# --check-config - reads the config from stdin (kubectl get cm ... | gpu-extender --check-config -)
for text, want_rc, want in ((open(os.path.join(ROOT, "config", "config.json")).read(), 0, "-: config OK"),
                            ('{"server":{"prot":1}}', 1, "unknown key 'server.prot'")):
    p = subprocess.run([binary, "--check-config", "-"], input=text, capture_output=True, text=True,
                       timeout=60)
    c.ok(p.returncode == want_rc and want in p.stdout + p.stderr,
         f"--check-config - from stdin: exit {want_rc}, {want!r}: {p.returncode} {p.stdout}{p.stderr}")
for args in (["--help"], ["-h"], ["explain", "--help"], ["simulate", "--help"]):
    rc, out, err = run(*args)
    c.ok(rc == 0 and out.startswith("usage: gpu-extender") and err == "",
         f"{' '.join(args)}: usage on stdout, exit 0: {rc} {out[:60]!r} {err[:200]!r}")

c.done()
