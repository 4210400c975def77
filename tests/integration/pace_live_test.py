"""Issue 19, backpressure: while a bind waits for its place among
ledger.binds_in_flight, a filter call is answered only once no bind waits
(or after half a bind deadline), so kube-scheduler, whose cycles run one at
a time, schedules no faster than the API server takes the binds. Without a
bind waiting, filter answers at once."""
import sys
import threading
import time

from gxtest import (Checks, Extender, FakeApiServer, bind_args, live_overrides, shared_pod,
                    stop_all)

NODE = "gpu-node-a"
c = Checks("pace_live")
api = FakeApiServer()
exts = []


def paced(ext):
    for ln in ext.request("GET", "/metrics")[1].decode().splitlines():
        if ln.startswith("gpu_extender_filters_paced_total "):
            return int(ln.split()[1])
    return None


def timed_filter(ext, pod):
    t = time.time()
    st, res = ext.post_json(ext.verb("filter"), {"Pod": pod, "Nodes": None, "NodeNames": [NODE]})
    return st, res, time.time() - t


try:
    ext = Extender(sys.argv[1], overrides=live_overrides(
        api, **{"ledger.binds_in_flight": 1, "ledger.bind_deadline_ms": 4000})).start()
    exts.append(ext)
    slow, waiting, next_pod = (shared_pod(n, "uid-" + n) for n in ("slow", "waiting", "next"))
    for p in (slow, waiting, next_pod):
        api.control("POST", "/control/pods", p)
    for p in (slow, waiting):
        ext.post_json(ext.verb("filter"), {"Pod": p, "Nodes": None, "NodeNames": [NODE]})
    st, res, took = timed_filter(ext, next_pod)
    c.ok(st == 200 and res.get("NodeNames") == [NODE] and took < 1.0,
         f"nothing waits: filter answers at once ({took:.2f} s)")
    c.eq(paced(ext), 0, "and is not counted as paced")

    # the first bind's Binding is held 3 s, so the second bind waits for its place
    api.control("POST", "/control/fault", {"kind": "slow", "delay_s": 3, "count": 1,
                                            "path_prefix": "/api/v1/namespaces/team-a/pods/slow/binding"})
    answers = {}
    threads = [threading.Thread(target=lambda p=p: answers.update(
        {p["metadata"]["name"]: ext.post_json(ext.verb("bind"), bind_args(p, NODE))[1]}))
        for p in (slow, waiting)]
    t0 = time.time()
    threads[0].start()
    time.sleep(0.4)
    threads[1].start()
    time.sleep(0.4)
    st, res, took = timed_filter(ext, next_pod)
    answered_at = time.time() - t0
    for t in threads:
        t.join()
    c.eq(st, 200, "the held filter is answered 200")
    c.eq(res.get("NodeNames"), [NODE], "with the node that fits")
    # the waiting bind is shed 2 s after it came (half its deadline): the filter goes then
    c.ok(took > 1.0, f"held while the second bind waited ({took:.2f} s)")
    c.ok(answered_at < 3.0, f"answered once it stopped waiting, before the first bind ended "
         f"({answered_at:.2f} s after the first bind)")
    c.eq(answers.get("slow"), {"Error": ""}, "the first bind lands")
    c.ok("too many binds in flight" in (answers.get("waiting") or {}).get("Error", ""),
         f"the second is shed: {answers.get('waiting')}")
    c.eq(paced(ext), 1, "the held filter is counted")
finally:
    stop_all(c, exts, api)
c.done()
