"""Issue 4: two extender replicas against one API server, concurrent binds for
more shared pods than there are slots. Exactly the capacity is admitted, the
rest get a bind error, and the Lease never holds more than the slots."""
import concurrent.futures
import sys
import time

from gxtest import (Checks, Extender, FakeApiServer, bind_args, live_overrides, shared_pod,
                    stop_all)

c = Checks("ledger_race")
api = FakeApiServer()
exts = []
NODE = "gpu-node-a"  # card 0 is held by a device-plugin pod; card 1 has 4 free slots
CAPACITY = 4
PODS = 14
try:
    pods = [shared_pod(f"race-{i}", f"uid-race-{i:03d}") for i in range(PODS)]
    for p in pods:
        st_code, _ = api.control("POST", "/control/pods", p)
        c.ok(st_code in (200, 201), "pod created")
    exts = [Extender(sys.argv[1], overrides=live_overrides(api)).start() for _ in range(2)]

    def bind(i):
        ext = exts[i % 2]
        st, res = ext.post_json(ext.verb("bind"), bind_args(pods[i], NODE))
        return i, st, res

    with concurrent.futures.ThreadPoolExecutor(max_workers=PODS) as pool:
        results = list(pool.map(bind, range(PODS)))
    ok = [i for i, st, res in results if st == 200 and res.get("Error") == ""]
    failed = [(i, res.get("Error")) for i, st, res in results if st == 200 and res.get("Error")]
    c.ok(all(st == 200 for _, st, _ in results), "every bind answered with HTTP 200")
    c.eq(len(ok), CAPACITY, f"exactly the capacity is admitted (ok={ok})")
    c.eq(len(failed), PODS - CAPACITY, "every other bind gets an Error")
    c.ok(all(e and "no GPU time slot available" in e or "compare-and-swap" in (e or "") for _, e in failed),
         f"errors say why ({failed[:3]})")

    st = api.state()
    bound = [b for b in st["bindings"] if b.get("code") == 201]
    c.eq(sorted(b["name"] for b in bound), sorted(f"race-{i}" for i in ok), "Bindings only for admitted pods")
    tenants = api.lease_tenants(NODE)
    c.eq(sorted(t["uid"] for t in tenants), sorted(f"uid-race-{i:03d}" for i in ok),
         "the Lease holds exactly the admitted pods")
    per_card = {}
    for t in tenants:
        per_card[t["card"]] = per_card.get(t["card"], 0) + t["slices"]
    c.ok(all(v <= CAPACITY for v in per_card.values()), f"no card over its slots ({per_card})")
    c.ok(0 not in per_card, "nothing placed on the card held by the device-plugin pod")
    for i in ok:
        ann = st["pods"][f"team-a/race-{i}"]["metadata"].get("annotations", {})
        c.ok("gpu-extender.io/gpu-uuids" in ann and ann.get("gpu-extender.io/gpu-index") == "1",
             f"race-{i} carries its assignment")

    # A retried bind of an admitted pod is idempotent on either replica.
    for ext in exts:
        st2, res = ext.post_json(ext.verb("bind"), bind_args(pods[ok[0]], NODE))
        c.eq(res, {"Error": ""}, "retried bind succeeds")
    c.eq(len(api.lease_tenants(NODE)), CAPACITY, "retries add no tenant")

    # Deleting an admitted pod frees its slot for the next one (reconciler via the pod watch).
    api.control("DELETE", f"/control/pods/team-a/race-{ok[0]}")
    deadline = time.time() + 20
    while time.time() < deadline and len(api.lease_tenants(NODE)) != CAPACITY - 1:
        time.sleep(0.2)
    c.eq(len(api.lease_tenants(NODE)), CAPACITY - 1, "the deleted pod's slot is released")
    late = failed[0][0]
    deadline = time.time() + 10
    res = {}
    while time.time() < deadline:
        st3, res = exts[1].post_json(exts[1].verb("bind"), bind_args(pods[late], NODE))
        if res.get("Error") == "":
            break
        time.sleep(0.5)
    c.eq(res.get("Error"), "", "a waiting pod takes the freed slot")
finally:
    stop_all(c, exts, api)
c.done()
