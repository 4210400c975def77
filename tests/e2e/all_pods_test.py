"""The default install, all pods through the extender (docs/scheduling-quality.md), as
`kubectl apply -k manifests/` deploys it: the real kube-scheduler runs the shipped
manifests/scheduler/kube-scheduler-config.yaml (extender without managedResources,
NodeResourcesFit/BalancedAllocation scoring off) and the extender runs manifests/config.json
(score.relative on, idle nodes charged). A recording proxy between the two keeps every call and
answer, so the test sees what the scheduler was told: CPU-only pods are filtered, prioritized and
bound by the extender, every prioritize answer has a 10, GPU pods get the annotations and ledger
of placement_test, and a CPU pod goes where fgd wants it: onto a node whose GPUs are all taken,
not onto one whose free GPUs it would strand. The install's scheduler-name policy
(manifests/scheduler/scheduler-name-policy.yaml, a MutatingAdmissionPolicy the real API server
applies) sends a pod created for the default scheduler that tolerates the GPU taint to
gpu-scheduler, and leaves the others alone."""
import http.server
import json
import os
import sys
import threading
import urllib.request

from e2e import (POOL_KEY, TOLERATE_GPU, Checks, finish, check_assignment, check_ledger, check_no_403, create, delete_pods,
                 exclusive, log, pod, pool_node, shared, wait_bound, wait_for)
from rig import ROOT, Cluster, free_port

chk = Checks("e2e_all_pods")
POLICY = os.path.join(ROOT, "manifests", "scheduler", "scheduler-name-policy.yaml")
POOL = {POOL_KEY: "fgd"}


class Recorder(http.server.ThreadingHTTPServer):
    """Forwards the scheduler's calls to extender a and keeps (verb, request, answer)."""
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), RecordHandler)
        self.cluster = None
        self.calls = []
        self.lock = threading.Lock()

    def of(self, verb, pod_name):
        with self.lock:
            return [(q, a) for v, q, a in self.calls if v == verb and call_pod(v, q) == pod_name]


def call_pod(verb, q):
    """The pod a call is about (ExtenderBindingArgs.PodName, ExtenderArgs.Pod; Go field names)."""
    if verb == "bind":
        return q.get("PodName")
    return ((q.get("Pod") or {}).get("metadata") or {}).get("name")


class RecordHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        req = urllib.request.Request(self.server.cluster.extender_url("a", self.path), data=body,
                                     method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            status, answer = r.status, r.read()
        with self.server.lock:
            self.server.calls.append((self.path.rsplit("/", 1)[-1], json.loads(body or b"{}"),
                                      json.loads(answer or b"null")))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def gpu_node(name, cpu):
    """A copy of gpu-node-a (2 whole cards, no time-slicing) with @cpu cores, in the test pool:
    labelled and tainted, so that only the pool's pods land there."""
    n = pool_node(name, POOL[POOL_KEY])
    for k in ("capacity", "allocatable"):
        n["status"][k]["cpu"] = str(cpu)
    return n


def in_pool(p, node_selector=POOL):
    p["spec"]["nodeSelector"] = node_selector
    p["spec"]["tolerations"] = TOLERATE_GPU + [{"key": POOL_KEY, "operator": "Exists"}]
    return p


def scores(answer):
    return {h["Host"]: h["Score"] for h in answer or []}  # HostPriorityList; a node left out: 0


rec = Recorder()
threading.Thread(target=rec.serve_forever, daemon=True).start()
# gpu-node-f: 16 cores, its 2 cards about to be taken by 6-core pods; gpu-node-g: 8 cores, 2 free
# cards. A 3-core CPU pod fits both; on g it would leave 5 cores, too few for the typical 6-core
# GPU pod, stranding 2 cards; on f it strands nothing (no free card). LeastAllocated would pick g.
c = Cluster(extender_bin=sys.argv[1],
            extra_nodes=[gpu_node("gpu-node-f", 16), gpu_node("gpu-node-g", 8)],
            extenders=[{"name": "a", "config": "config.json"}],
            schedulers=[{"name": "gpu-scheduler", "extender": "a", "extender_port": rec.server_port,
                         "config": "scheduler/kube-scheduler-config.yaml"}])
rec.cluster = c
try:
    c.up()
    before = c.requests_by_verb("a")

    # 1. CPU-only pods of gpu-scheduler reach the extender; tolerating the GPU taint they may go
    # anywhere but the pool, and the extender's 10 for the CPU node (prefer_cpu_nodes_for_cpu_pods) wins.
    create(c, pod("plain", tolerate=False), pod("cpu-any"))
    got = wait_bound(c, ["plain", "cpu-any"], timeout=120)
    for name in ("plain", "cpu-any"):
        chk.eq(got.get(name, {}).get("spec", {}).get("nodeName"), "cpu-node-d",
               f"{name}: CPU-only pod on the CPU node")
        chk.ok(rec.of("filter", name), f"{name}: filtered by the extender")
        chk.ok(rec.of("bind", name), f"{name}: bound by the extender")
    pr = rec.of("prioritize", "cpu-any")
    chk.ok(pr and scores(pr[-1][1]).get("cpu-node-d") == 10,
           f"cpu-any: prioritize gave the CPU node 10 ({pr and scores(pr[-1][1])})")
    mid = c.requests_by_verb("a")
    for verb in ("filter", "prioritize", "bind"):
        chk.ok(mid.get(verb, 0) - before.get(verb, 0) >= 1,
               f"extender /metrics counted {verb} for the CPU-only pods")

    # 2. GPU pods as in placement_test: whole GPUs (two 6-core ones fill gpu-node-f), shared slices.
    six = {"cpu": "6", "nvidia.com/gpu": "1"}
    on_f = {"kubernetes.io/hostname": "gpu-node-f"}
    create(c, in_pool(pod("ex-f1", six), on_f), in_pool(pod("ex-f2", six), on_f),
           exclusive("ex-2", 2), *[shared(f"sh-{i}", "1", "6Gi", "20") for i in range(3)])
    gpu_pods = ["ex-f1", "ex-f2", "ex-2"] + [f"sh-{i}" for i in range(3)]
    got = wait_bound(c, gpu_pods, timeout=180)
    chk.eq(sorted(got), sorted(gpu_pods), "GPU pods bound")
    for name, p in sorted(got.items()):
        check_assignment(c, chk, p, want_shared=name.startswith("sh-"))
        chk.ok(rec.of("bind", name), f"{name}: bound by the extender")
    for name in ("ex-f1", "ex-f2"):
        chk.eq(got.get(name, {}).get("spec", {}).get("nodeName"), "gpu-node-f",
               f"{name} on gpu-node-f")
    wait_for(lambda: all(t["state"] == "bound" for ts in c.leases().values() for t in ts), 30)
    check_ledger(c, chk)

    # 3. The CPU pod fgd places: the pool is f (cards all taken) and g (2 free cards, 8 cores).
    create(c, in_pool(pod("cpu-fgd", {"cpu": "3"})))
    got = wait_bound(c, ["cpu-fgd"], timeout=120)
    chk.eq(got.get("cpu-fgd", {}).get("spec", {}).get("nodeName"), "gpu-node-f",
           "CPU pod on the node whose GPUs are all taken, not the one it would strand")
    pr = rec.of("prioritize", "cpu-fgd")
    s = scores(pr[-1][1]) if pr else {}
    chk.ok(s.get("gpu-node-f") == 10 and s.get("gpu-node-g", 0) < 10,
           f"cpu-fgd: relative answer 10 for f, less for g ({s})")
    chk.ok(rec.of("bind", "cpu-fgd"), "cpu-fgd: bound by the extender")

    # 4. Every prioritize answer the scheduler got names a best node with 10 (score.relative).
    with rec.lock:
        answers = [scores(a) for v, _, a in rec.calls if v == "prioritize"]
    chk.ok(answers, f"the scheduler called prioritize ({len(answers)} calls)")
    chk.eq([a for a in answers if a and max(a.values()) != 10], [],
           "every prioritize answer has a 10")
    after = c.requests_by_verb("a")
    chk.ok(after.get("bind", 0) - before.get("bind", 0) >= 9,
           "all 9 pods bound through the extender (/metrics)")

    # 5. The shipped scheduler-name policy (MutatingAdmissionPolicy, no webhook): a pod that
    # tolerates the GPU taint and names no scheduler is sent to gpu-scheduler; others are not.
    c.kubectl("apply", "-f", POLICY)
    def named(p):
        out = c.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                        input=json.dumps(p))
        return json.loads(out)["spec"].get("schedulerName")
    probe = pod("probe", scheduler="default-scheduler")
    chk.ok(wait_for(lambda: named(probe) == "gpu-scheduler", 30),
           "the API server applies the policy (admissionregistration.k8s.io/v1)")
    chk.eq(named(pod("no-gpu", scheduler="default-scheduler", tolerate=False)), "default-scheduler",
           "a pod that does not tolerate the GPU taint keeps the default scheduler")
    chk.eq(named(pod("own", scheduler="batch-scheduler")), "batch-scheduler",
           "a pod that names its own scheduler keeps it")
    ds = pod("ds-pod", scheduler="default-scheduler")
    ds["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                          "name": "agent", "uid": "0000-ds"}]
    chk.eq(named(ds), "default-scheduler", "a DaemonSet's pod keeps the default scheduler")
    create(c, pod("routed", scheduler="default-scheduler"))
    got = wait_bound(c, ["routed"], timeout=120)
    chk.eq(got.get("routed", {}).get("spec", {}).get("schedulerName"), "gpu-scheduler",
           "routed: created for the default scheduler, placed by gpu-scheduler")
    chk.ok(rec.of("bind", "routed"), "routed: bound by the extender")
    c.kubectl("delete", "-f", POLICY)

    delete_pods(c)
    wait_for(lambda: not any(c.leases().values()), 30, interval=0.5)
    chk.ok(not any(c.leases().values()), "every booking released after all pods are gone")
    check_no_403(c, chk)
    chk.ok(c.alive("extender-a"), "extender still running (no sanitizer abort)")
finally:
    if chk.failed:
        with rec.lock:
            for v, q, a in rec.calls:
                log(f"call {v} {call_pod(v, q)}: {json.dumps(a)[:300]}")
    finish(c, chk)
    rec.shutdown()
chk.done()
