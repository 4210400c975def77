"""Issue 12, trend signal: a real Prometheus scrapes dcgm-exporter pages whose
idle card on gpu-node-a ramps up and then down while gpu-node-b stays flat;
prometheus.queries.util_trend (a deriv query) reaches the score through
score.weights.trend, so prioritize ranks node-a below node-b while its card
rises and above it while it falls. With weight 0 the slope changes nothing."""
import copy
import re
import sys
import threading
import time

from gxtest import Checks, Extender, PromStack, fixture, wait_for

c = Checks("trend_live")
stack = PromStack()
POD = fixture("pod-gpu.json")
state = {"slope": 0.0, "util": 0.0, "stop": False}


def ramp():
    """Every 0.5 s move node-a card 1's utilization by the current slope (% per s)."""
    while not state["stop"]:
        time.sleep(0.5)
        with stack.lock:
            state["util"] = min(80.0, max(0.0, state["util"] + state["slope"] * 0.5))
            out = []
            for line in stack.pages["/node-a"].splitlines():
                if line.startswith("DCGM_FI_DEV_GPU_UTIL{") and 'gpu="1"' in line:
                    line = line.rsplit(" ", 1)[0] + f" {state['util']:.1f}"
                out.append(line)
            stack.pages["/node-a"] = "\n".join(out) + "\n"


def scores(ext):
    p = copy.deepcopy(POD)
    p["metadata"]["uid"] = "trend-1"
    st, res = ext.post_json(ext.verb("prioritize"),
                            {"Pod": p, "Nodes": None, "NodeNames": ["gpu-node-a", "gpu-node-b"]})
    if st != 200:
        return {}
    # a node missing from HostPriorityList scored 0
    return {"gpu-node-a": 0, "gpu-node-b": 0} | {h["Host"]: h["Score"] for h in res}


def extender(weight):
    return Extender(sys.argv[1], overrides={
        "sources.files.metrics": [],
        "prometheus.url": stack.url,
        "prometheus.interval_s": 1,
        "prometheus.queries.util_trend": "deriv(DCGM_FI_DEV_GPU_UTIL[6s])",
        "score.weights": {"utilization": 0, "memory": 0, "temperature": 0, "labels": 0,
                          "fit": 0, "trend": weight},
    }).start()


stack.start()
threading.Thread(target=ramp, daemon=True).start()
exts = []
try:
    c.ok(stack.wait_series("DCGM_FI_DEV_GPU_UTIL", 12), "prometheus scrapes the 12 GPUs")
    on, off = extender(100), extender(0)
    exts = [on, off]
    c.ok(wait_for(lambda: scores(on) == {"gpu-node-a": 5, "gpu-node-b": 5}, 20, "flat"),
         f"flat cards score the neutral 5 ({scores(on)})")
    state["slope"] = 4.0  # 40 points over 10 s: rising fast
    c.ok(wait_for(lambda: scores(on).get("gpu-node-a", 10) < scores(on).get("gpu-node-b", 0), 20,
                  "rising"), f"a rising card ranks its node lower ({scores(on)})")
    c.eq(scores(off), {"gpu-node-a": 5, "gpu-node-b": 5}, "weight 0: the slope changes nothing")
    state["slope"] = -4.0
    c.ok(wait_for(lambda: scores(on).get("gpu-node-a", 0) > scores(on).get("gpu-node-b", 10), 20,
                  "falling"), f"a falling card ranks its node higher ({scores(on)})")
    st, body, _ = on.request("GET", "/metrics")
    c.ok(re.search(r'gpu_extender_source_syncs_total\{upstream="prometheus"\} [1-9]', body.decode())
         is not None, "prometheus syncs counted")
finally:
    state["stop"] = True
    for e in exts:
        if c.failed:
            print(e.logs())
        e.cleanup()
    stack.cleanup()
c.done()
