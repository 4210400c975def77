"""Issue 3, Prometheus side: a real Prometheus (Debian package) scrapes
fixture dcgm-exporter pages served by this test; the extender follows the
live data within a refresh, and applies the stale policy when Prometheus
goes away."""
import copy
import re
import sys

from gxtest import Checks, Extender, PromStack, fixture, wait_for

c = Checks("prom_live")
stack = PromStack()
lock = stack.lock
pages = stack.pages
wait = wait_for


POD = fixture("pod-gpu.json")


def pod(gpus, uid):
    p = copy.deepcopy(POD)
    p["metadata"]["uid"] = uid
    r = p["spec"]["containers"][0]["resources"]
    r["limits"]["nvidia.com/gpu"] = str(gpus)
    r["requests"]["nvidia.com/gpu"] = str(gpus)
    return p


def verdict(ext, gpus, node):
    st, res = ext.post_json(ext.verb("filter"), {"Pod": pod(gpus, f"u{gpus}"), "Nodes": None, "NodeNames": [node]})
    if st != 200:
        return ("http", st)
    if node in (res.get("NodeNames") or []):
        return ("keep", "")
    return ("reject", {**res["FailedNodes"], **res["FailedAndUnresolvableNodes"]}.get(node))


stack.start()
ext = None
try:
    c.ok(stack.wait_series("DCGM_FI_DEV_GPU_UTIL", 12), "prometheus scrapes the 12 GPUs of the fixture pages")
    ext = Extender(sys.argv[1], overrides={
        "sources.files.metrics": [],
        "prometheus.url": stack.url,
        "prometheus.interval_s": 1,
        "prometheus.timeout_s": 2,
        "metrics.on_stale": "reject",
        "metrics.max_age_s": {s: 4 for s in ("util", "mem_used", "mem_free", "temp", "power", "xid")},
    }).start()
    # Node A: card 0 runs vLLM at 87 % with 18 GiB used, card 1 idle -> 2 GPUs do not fit.
    c.ok(wait(lambda: verdict(ext, 1, "gpu-node-a")[0] == "keep", 15, "node-a keeps 1 GPU"),
         "live metrics reach the extender (1 GPU fits node-a)")
    v = verdict(ext, 2, "gpu-node-a")
    c.eq(v[0], "reject", f"2 GPUs do not fit node-a while card 0 is busy ({v})")
    # The workload on card 0 ends: dcgm-exporter drops its pod labels and the
    # card goes idle. The page changes, the decision follows.
    with lock:
        out = []
        for line in pages["/node-a"].splitlines():
            if 'gpu="0"' in line:
                line = re.sub(r',container="[^"]*"|,namespace="[^"]*"|,pod="[^"]*"', "", line)
                if line.startswith(("DCGM_FI_DEV_GPU_UTIL{", "DCGM_FI_DEV_FB_USED{")):
                    line = line.rsplit(" ", 1)[0] + " 0"
            out.append(line)
        pages["/node-a"] = "\n".join(out) + "\n"
    c.ok(wait(lambda: verdict(ext, 2, "gpu-node-a")[0] == "keep", 15, "node-a fits 2 GPUs"),
         "decision follows the changed exporter page")
    st, body, _ = ext.request("GET", "/metrics")
    text = body.decode()
    c.ok('gpu_extender_source_syncs_total{upstream="prometheus"}' in text, "prometheus syncs counted")
    # Prometheus goes away: last values are kept until they pass max age, then reject.
    stack.stop_prometheus()
    c.eq(verdict(ext, 1, "gpu-node-b")[0], "keep", "right after Prometheus stops the last values still count")
    c.ok(wait(lambda: verdict(ext, 1, "gpu-node-b") == ("reject", "GPU metrics stale"), 20, "stale"),
         "on_stale=reject rejects once metrics pass max age")
    st, body, _ = ext.request("GET", "/metrics")
    text = body.decode()
    errs = [l for l in text.splitlines() if l.startswith('gpu_extender_upstream_errors_total{upstream="prometheus",kind="connect"}')]
    c.ok(errs and float(errs[0].split()[-1]) > 0, f"connection errors counted ({errs})")
    st, _, _ = ext.request("GET", "/readyz")
    c.eq(st, 200, "Prometheus down does not make the extender unready")
    # Prometheus back: decisions recover without a restart.
    stack.start()
    c.ok(wait(lambda: verdict(ext, 1, "gpu-node-b")[0] == "keep", 60, "recovery"),
         "decisions recover when Prometheus is back")
finally:
    if ext is not None:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
    stack.cleanup()
c.done()
