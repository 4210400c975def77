"""Issue 13, DRA against the Python fake API server, for what the real one cannot do on demand:
a server without resource.k8s.io/v1 (404: logged once, everything keeps working), and watch
faults on the ResourceClaim stream (410 Gone, a cut stream) that must still free and take cards.
A server that refuses the read (403, RBAC without the rules) does not keep the replica unready.
A claimed card is never offered by filter nor booked by bind; a released claim frees it."""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from gxtest import Checks, Extender, FakeApiServer, bind_args, live_overrides, shared_pod  # noqa: E402

c = Checks("e2e_dra_faults")
NODE = "gpu-node-a"  # card 0 runs a device-plugin pod, card 1 is free (config/demo)
CARD1 = "GPU-5b7e0f93-2c4d-a8e1-7f36-0d9c41e8b527"
CARD0 = "GPU-d2a17c4e-93b8-6f05-1c7a-5e04b9f2a6d1"
DRIVER = "gpu.nvidia.com"


def reason(ext, pod):
    st, res = ext.post_json(ext.verb("filter"), {"Pod": pod, "Nodes": None, "NodeNames": [NODE]})
    assert st == 200, (st, res)
    return (res.get("FailedNodes") or {}).get(NODE) or (res.get("FailedAndUnresolvableNodes") or {}).get(NODE)


def wait(cond, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    return cond()


def metric(ext, name):
    st, body, _ = ext.request("GET", "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), body.decode(), re.M)
    return float(m.group(1)) if m else None


def slice_obj():
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": NODE + "-gpu"},
            "spec": {"driver": DRIVER, "nodeName": NODE,
                     "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": CARD0}}},
                                 {"name": "gpu-1", "attributes": {"uuid": {"string": CARD1}}}]}}


def claim_obj(name, device="gpu-1", allocated=True):
    status = {}
    if allocated:
        status = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": NODE, "device": device}]}},
            "reservedFor": [{"resource": "pods", "name": name + "-pod", "uid": "p-" + name}]}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "dra"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": status}


probe = shared_pod("probe", "uid-probe")

# 1. A server without the DRA API: ready, filter works, one log line however long it runs.
api = FakeApiServer()
ext = None
try:
    ext = Extender(sys.argv[1], overrides=live_overrides(api)).start()
    c.eq(reason(ext, probe), None, "no DRA API: the free card is offered")
    time.sleep(1.5)
    logs = ext.logs()
    c.eq(logs.count("no DRA API"), 1, "the missing DRA API is logged once")
    c.ok("resourceslices" not in re.sub(r"no DRA API.*", "", logs) or "level=warn" not in logs,
         "and is not reported as a failure")
finally:
    if ext:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
    api.stop()

# 1b. DRA served but RBAC without the read rules (403): ready all the same, one warning.
api = FakeApiServer(extra=["--dra"])
ext = None
try:
    api.control("POST", "/control/fault", {"kind": "403", "path_prefix": "/apis/resource.k8s.io",
                                           "count": 1000})
    ext = Extender(sys.argv[1], overrides=live_overrides(api)).start()
    c.eq(reason(ext, probe), None, "403 on the DRA API: ready, the free card is offered")
    time.sleep(1)
    c.eq(ext.logs().count("not allowed to read DRA"), 1, "the missing permission is logged once")
finally:
    if ext:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
    api.stop()

# 2. With DRA: claims take cards, faults on the claim watch change nothing.
api = FakeApiServer(extra=["--dra"])
ext = None
try:
    api.control("POST", "/control/resourceslices", slice_obj())
    # watches end every 10 s, so an injected fault meets the next one soon
    ext = Extender(sys.argv[1], overrides=live_overrides(api, **{"kubernetes.watch_timeout_s": 10})).start()
    c.eq(reason(ext, probe), None, "nothing claimed yet: card 1 is offered")

    api.control("POST", "/control/resourceclaims", claim_obj("train"))
    got = wait(lambda: reason(ext, probe))
    c.eq(got, "no GPU time slot available", "a claimed card is taken (watch event)")
    c.eq(metric(ext, "gpu_extender_dra_claimed_cards"), 1.0, "/metrics counts the claimed card")
    api.control("POST", "/control/pods", probe)
    st, res = ext.post_json(ext.verb("bind"), bind_args(probe, NODE))
    c.ok("no GPU time slot available" in (res.get("Error") or ""), f"bind refuses it too ({res})")
    st, body, _ = ext.request("GET", "/debug/cards")
    c.ok(b'"dra_claim":"dra/train"' in body, "/debug/cards names the claim")

    # A second claim on the same device: still one card.
    api.control("POST", "/control/resourceclaims", claim_obj("infer"))
    time.sleep(0.5)
    c.eq(metric(ext, "gpu_extender_dra_claimed_cards"), 1.0, "a device shared by two claims counts once")

    # 410 Gone on the claim watch, then both claims released: the relist frees the card.
    api.control("POST", "/control/fault", {"kind": "gone", "path_prefix": "/apis/resource.k8s.io/v1/resourceclaims",
                                           "watch": True, "count": 1})
    c.ok(wait(lambda: not api.state()["faults"], timeout=30), "the 410 met a claim watch")
    api.control("DELETE", "/control/resourceclaims/dra/train")
    api.control("POST", "/control/resourceclaims", claim_obj("infer", allocated=False))
    got = wait(lambda: reason(ext, probe) is None)
    c.ok(got, "deallocated and deleted claims free the card, through a 410 on the watch")
    c.eq(metric(ext, "gpu_extender_dra_claimed_cards"), 0.0, "nothing claimed")

    # A stream cut mid-way: the next claim still arrives.
    api.control("POST", "/control/fault", {"kind": "drop", "path_prefix": "/apis/resource.k8s.io/v1/resourceclaims",
                                           "watch": True, "count": 1})
    c.ok(wait(lambda: not api.state()["faults"], timeout=30), "the cut met a claim watch")
    api.control("POST", "/control/resourceclaims", claim_obj("again"))
    got = wait(lambda: reason(ext, probe), timeout=30)
    c.eq(got, "no GPU time slot available", "a claim made around a cut stream still takes the card")
    with open(ext.log_path, errors="replace") as f:
        logs = f.read()
    c.ok(re.search(r'watch error event, relisting" resource=resourceclaims code=410', logs),
         "the 410 relisted the claims")
finally:
    if ext:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
    api.stop()
c.done()
