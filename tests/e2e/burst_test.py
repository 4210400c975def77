"""A burst of binds through the real scheduler: 240 whole-GPU and shared pods wait while their
scheduler is down, on 100 extra 8-card nodes; when it starts, it fires filter, prioritize and
bind at the extender as fast as it can. Every pod must end bound, the extender must survive
(ASan/UBSan abort it on the first error), nothing is over-admitted and the ledger equals the
bound pods. (bench/k8s_throughput.py found a crash in Lease decoding this way.)"""
import sys

from e2e import (Checks, finish, check_assignment, check_ledger, check_no_403, create, exclusive,
                 events, get_pods, ledger_vs_pods, log, rig, shared, wait_for)

chk = Checks("e2e_burst")
c = rig(sys.argv[1], generate=100, schedulers=[])
try:
    pods = [exclusive(f"bx-{i}", 1 + i % 2) for i in range(160)]
    pods += [shared(f"bs-{i}", "1", "2Gi") for i in range(80)]
    create(c, *pods)
    log(f"{len(pods)} pods waiting; starting the scheduler")
    c.schedulers.append({"name": "gpu-scheduler", "extender": "a"})
    c.start_scheduler("gpu-scheduler")

    def done():
        if not c.alive("extender-a"):
            return "dead"
        return sum(1 for p in get_pods(c) if p["spec"].get("nodeName")) == len(pods)
    res = wait_for(done, 240, interval=1)
    chk.ok(c.alive("extender-a"), "the extender survives the burst: " + c.logs("extender-a", 1500)
           if not c.alive("extender-a") else "the extender survives the burst")
    got = [p for p in get_pods(c) if p["spec"].get("nodeName")]
    chk.eq(len(got), len(pods), f"every pod bound ({res})")
    if c.alive("extender-a"):
        for p in got:
            check_assignment(c, chk, p, want_shared=p["metadata"]["name"].startswith("bs-"))
        wait_for(lambda: all(t["state"] == "bound" for ts in c.leases().values() for t in ts), 30)
        # Give reconciles (every 2 s) time to settle before comparing.
        wait_for(lambda: ledger_vs_pods(c)[1] == ledger_vs_pods(c)[2], 30, interval=2)
        _, got_l, want_l = ledger_vs_pods(c)
        missing = {n: len(want_l[n] - got_l.get(n, set())) for n in want_l if want_l[n] - got_l.get(n, set())}
        extra = {n: len(got_l[n] - want_l.get(n, set())) for n in got_l if got_l[n] - want_l.get(n, set())}
        log(f"bound pods missing from the ledger: {missing}; tenants without a bound pod: {extra}")
        lost = {u for n in want_l for u in want_l[n] - got_l.get(n, set())}
        for p in got:
            if p["metadata"]["uid"] in lost:
                log(f"  {p['metadata']['name']} on {p['spec']['nodeName']}: "
                    f"{p['metadata'].get('annotations')}; events {events(c, p['metadata']['name'])}")
        check_ledger(c, chk)
        check_no_403(c, chk)
finally:
    finish(c, chk)
chk.done()
