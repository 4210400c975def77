"""The extender out of the scheduler's path, for real: with `ignorable: false` (shipped) GPU pods
stay Pending while no replica answers and schedule once one is back; a replica killed with
kill -9 in the middle of a burst of binds loses nothing: after a restart and a reconcile the
ledger Leases hold exactly the bound pods."""
import sys

from e2e import (Checks, finish, check_assignment, check_ledger, check_no_403, create, delete_pods,
                 events, exclusive, get_pods, log, rig, shared, wait_bound, wait_for)

chk = Checks("e2e_outage")
# Reservations orphaned by the crash expire after 20 s instead of 300 s, so the test waits less.
c = rig(sys.argv[1], extenders=[{"name": "a", "overrides": {"sharing.reservation_ttl_s": 20}}])
try:
    # 1. Extender down: GPU pods Pending, with the scheduler's extender error in the events.
    c.kill_extender("a", sig=15)
    create(c, exclusive("down-1", 1), shared("down-2", "1", "2Gi"))

    def extender_error():
        for reason, msg in events(c, "down-1"):
            if reason == "FailedScheduling" and "extender" in (msg or "").lower():
                return msg
        return None
    msg = wait_for(extender_error, 60, interval=0.5)
    log(f"while down: {msg}")
    chk.ok(msg, f"FailedScheduling names the unreachable extender: {msg!r}")
    chk.ok(all(not p["spec"].get("nodeName") for p in get_pods(c)),
           "no GPU pod is bound while the extender is down (ignorable: false)")
    c.start_extender("a")
    got = wait_bound(c, ["down-1", "down-2"], timeout=90)
    chk.eq(sorted(got), ["down-1", "down-2"], "pods schedule once the extender is back")
    for p in got.values():
        check_assignment(c, chk, p, want_shared=p["metadata"]["name"] == "down-2",
                         per_node=p["spec"]["nodeName"] == "gpu-node-c")

    # 2. kill -9 in a burst of binds, then restart. The cards are freed first: the demo cluster
    # takes about 11 one-slot pods (node B's two idle cards, node C's headroom).
    delete_pods(c)
    wait_for(lambda: not any(c.leases().values()), 30, "bookings of part 1 released", interval=0.5, must=True)
    base = c.requests_by_verb("a").get("bind", 0)
    burst = [shared(f"burst-{i}", "1", "1Gi") for i in range(10)]
    create(c, *burst)
    hit = wait_for(lambda: c.requests_by_verb("a").get("bind", 0) - base >= 4, 60, interval=0.05)
    chk.ok(hit, "binds of the burst started")
    c.kill_extender("a")  # SIGKILL
    log("extender killed with SIGKILL mid-burst; leases now: "
        + str({n: len(t) for n, t in c.leases().items()}))
    c.start_extender("a")
    names = [p["metadata"]["name"] for p in burst]
    got = wait_bound(c, names, timeout=120)
    chk.eq(len(got), len(names), f"every burst pod bound after the restart ({len(got)}/{len(names)})")
    for p in got.values():
        check_assignment(c, chk, p, want_shared=True)

    def settled():
        ts = [t for tl in c.leases().values() for t in tl]
        return len(ts) == len(got) and all(t["state"] == "bound" for t in ts)
    ok = wait_for(settled, 60, interval=1)
    chk.ok(ok, "after reconcile every tenant is bound and none is left over: "
           + str({n: [(t['pod'], t['state']) for t in ts] for n, ts in c.leases().items()}))
    check_ledger(c, chk)

    delete_pods(c)
    chk.ok(wait_for(lambda: not any(c.leases().values()), 30, interval=0.5),
           "all bookings released once the pods are gone")
    check_no_403(c, chk)
finally:
    finish(c, chk)
chk.done()
