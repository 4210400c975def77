"""filter.shortlist_nodes on the real binary (demo cluster): filter keeps the best nodes by the
extender's own score, leaves the others out of its answer without a failure reason, counts
them, and a live reload to 0 gives every node that fits back."""
import copy
import os
import signal
import sys
import time

from gxtest import Checks, Extender, fixture

c = Checks("shortlist")
ext = Extender(sys.argv[1], overrides={"filter.shortlist_nodes": 2}).start()

NAMES = ["gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-d"]


def pod(name, limits=None):
    p = copy.deepcopy(fixture("pod-gpu.json"))
    p["metadata"].update(name=name, uid="uid-" + name, annotations={})
    res = p["spec"]["containers"][0]["resources"]
    res["limits"] = dict(limits or {})
    res["requests"] = dict(limits or {})
    return p


def call(verb, p, names=NAMES):
    st, res = ext.post_json(ext.verb(verb), {"Pod": p, "Nodes": None, "NodeNames": list(names)})
    c.eq(st, 200, f"{verb} {p['metadata']['name']}: status")
    return res


def metric(prefix):
    _, body, _ = ext.request("GET", "/metrics")
    for ln in body.decode().splitlines():
        if ln.startswith(prefix):
            return float(ln.split()[-1])
    return 0.0


def rejected(reason):
    return metric(f'gpu_extender_filter_rejections_total{{reason="{reason}"}}')


def reload(shortlist):
    """Write the config with @shortlist, SIGHUP, wait until the reload is counted."""
    ok = 'gpu_extender_config_reloads_total{result="success"}'
    before = metric(ok)
    cfg = copy.deepcopy(ext.cfg)
    cfg["filter"]["shortlist_nodes"] = shortlist
    ext.write_config(cfg)
    os.kill(ext.proc.pid, signal.SIGHUP)
    end = time.time() + 5
    while metric(ok) <= before and time.time() < end:
        time.sleep(0.05)
    c.ok(metric(ok) > before, f"reload to shortlist {shortlist} applied")


try:
    # a CPU-only pod fits all four nodes: two are kept, the best by prioritize's own scores
    cpu = pod("cpu")
    before = rejected("shortlist")
    res = call("filter", cpu)
    kept = res["NodeNames"]
    c.eq(len(kept), 2, f"two of four nodes kept ({kept})")
    c.eq({**res["FailedNodes"], **res["FailedAndUnresolvableNodes"]}, {},
         "the nodes left out are not failed: the pod fits there")
    scores = {h["Host"]: h["Score"] for h in call("prioritize", cpu)}
    dropped = [n for n in NAMES if n not in kept]
    c.ok(min(scores.get(n, 0) for n in kept) >= max(scores.get(n, 0) for n in dropped),
         f"the kept nodes score at least as high as the others ({scores}, kept {kept})")
    c.eq(rejected("shortlist") - before, 2.0, "the two left out are counted")

    # the shortlist only shortens: a node filter refuses stays refused with its reason
    res = call("filter", pod("g1", {"nvidia.com/gpu": "1"}))
    c.ok(len(res["NodeNames"]) <= 2, f"at most two kept ({res['NodeNames']})")
    c.eq(res["FailedAndUnresolvableNodes"].get("cpu-node-d"), "node has no GPUs",
         "the CPU node keeps its reason")

    # live: 0 keeps every node that fits
    reload(0)
    c.eq(sorted(call("filter", cpu)["NodeNames"]), sorted(NAMES), "shortlist 0: every node kept")
    reload(1)
    c.eq(len(call("filter", cpu)["NodeNames"]), 1, "shortlist 1: one node kept")
    c.eq(ext.stop(), 0, "exit status after SIGTERM")
finally:
    if c.failed:
        print(ext.logs())
    ext.cleanup()
c.done()
