"""Issue 19, liveness: a pod the filter refuses everywhere because bookings
hold the cards is requeued (annotated gpu-extender.io/requeued-at, an update
kube-scheduler requeues an extender-rejected pod for) as soon as a booking
goes, not after the scheduler's 5-minute flush; so is a pod refused because
the cards measured busy, once a sample shows one cooled. A pod refused for
another reason is not poked."""
import os
import re
import sys
import time

from gxtest import (Checks, Extender, FakeApiServer, bind_args, live_overrides, shared_pod,
                    stop_all, wait_for)

NODE = "gpu-node-a"
c = Checks("requeue_live")
api = FakeApiServer()
exts = []


def refused(ext, pod):
    _, res = ext.post_json(ext.verb("filter"), {"Pod": pod, "Nodes": None, "NodeNames": [NODE]})
    return (res.get("FailedNodes") or {}).get(NODE)


def pokes(name):
    return [p for p in api.state()["patches"]
            if p["name"] == name and p.get("code") == 200 and
            "gpu-extender.io/requeued-at" in ((p.get("patch") or {}).get("metadata") or {})
            .get("annotations", {})]


DEMO_PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config", "demo",
                         "dcgm-gpu-node-a.prom")


def write_page(path, util=None):
    """NODE's dcgm-exporter page, every card's utilization set to @util (None: as shipped)."""
    with open(DEMO_PAGE) as f:
        text = f.read()
    if util is not None:
        text = re.sub(r"^(DCGM_FI_DEV_GPU_UTIL\{[^}]*\}) \S+$", rf"\g<1> {util}", text, flags=re.M)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


try:
    ext = Extender(sys.argv[1], overrides=live_overrides(
        api, **{"ledger.reconcile_interval_s": 120, "sources.files.refresh_s": 1}))
    page = os.path.join(ext.dir, "dcgm-gpu-node-a.prom")
    write_page(page)
    ext.cfg["sources"]["files"]["metrics"] = [page]
    ext.write_config(ext.cfg)
    ext.start()
    exts.append(ext)
    waiter = shared_pod("waiter", "uid-waiter", slices="2")
    api.control("POST", "/control/pods", waiter)
    fillers = []
    # fill the node's cards with shares until the waiter no longer fits
    for i in range(32):
        if refused(ext, waiter):
            break
        p = shared_pod(f"fill-{i}", f"uid-fill-{i:02d}", slices="2")
        api.control("POST", "/control/pods", p)
        ext.post_json(ext.verb("filter"), {"Pod": p, "Nodes": None, "NodeNames": [NODE]})
        st, res = ext.post_json(ext.verb("bind"), bind_args(p, NODE))
        c.eq(res, {"Error": ""}, f"fill-{i} binds")
        fillers.append(p)
    reason = refused(ext, waiter)
    c.eq(reason, "no GPU time slot available", "the waiter is refused for want of a slot")
    time.sleep(2.5)
    c.eq(pokes("waiter"), [], "nothing is poked while no booking goes")

    # a pod refused for a reason no booking lifts is not noted
    bad = shared_pod("bad", "uid-bad", slices="abc")
    api.control("POST", "/control/pods", bad)
    refused(ext, bad)

    t0 = time.time()
    api.control("DELETE", f"/control/pods/team-a/{fillers[0]['metadata']['name']}")
    c.ok(wait_for(lambda: pokes("waiter"), 10), "the waiter is requeued once a booking goes")
    c.ok(time.time() - t0 < 10, f"within seconds ({time.time() - t0:.1f} s)")
    c.eq(pokes("bad"), [], "a pod refused for a bad request is not poked")
    c.eq(refused(ext, waiter), None, "the waiter fits now")
    # counted when the PATCH's answer is back, which may be after the fake recorded it
    c.ok(wait_for(lambda: "gpu_extender_requeue_pokes_total 1" in
                  ext.request("GET", "/metrics")[1].decode(), 5), "the poke is counted")
    # once poked, the waiter is forgotten: a second release pokes nobody
    api.control("DELETE", f"/control/pods/team-a/{fillers[1]['metadata']['name']}")
    time.sleep(2.5)
    c.eq(len(pokes("waiter")), 1, "a poked pod is poked again only after a new refusal")

    # busy cards: no booking goes, a sample shows a card cooled
    for p in fillers[2:]:
        api.control("DELETE", f"/control/pods/team-a/{p['metadata']['name']}")
    hot = shared_pod("hot", "uid-hot", slices="2")
    api.control("POST", "/control/pods", hot)
    c.ok(wait_for(lambda: refused(ext, hot) is None, 10), "the node's bookings are gone")
    write_page(page, 99)
    c.ok(wait_for(lambda: refused(ext, hot) == "GPU utilization above limit", 10),
         f"every card measures busy: refused ({refused(ext, hot)})")
    time.sleep(2.5)
    c.eq(pokes("hot"), [], "nothing is poked while the cards stay busy")
    t0 = time.time()
    write_page(page, 5)
    c.ok(wait_for(lambda: pokes("hot"), 10), "the pod is requeued once a card cools")
    c.ok(time.time() - t0 < 5, f"within seconds of the sample ({time.time() - t0:.1f} s)")
    c.eq(refused(ext, hot), None, "and fits now")
finally:
    stop_all(c, exts, api)
c.done()
