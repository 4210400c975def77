"""Two schedulers racing for the same cards: gpu-scheduler with the shipped HTTP configuration
calls extender replica a, gpu-scheduler-b with the shipped HTTPS configuration
(kube-scheduler-config-https.yaml, caData) calls replica b over TLS. Three rounds of more shared and
whole-GPU pods than the cards hold, half for each scheduler: nothing is over-admitted, every bound pod's
annotations name a card of the node it is bound to, and the ledger equals the bound pods."""
import sys

from e2e import (Checks, finish, check_assignment, check_ledger, check_no_403, create, delete_pods,
                 exclusive, get_pods, log, rig, shared, wait_for)

chk = Checks("e2e_race")
c = rig(sys.argv[1],
        # each replica decides for its own scheduler: the ledger alone keeps them apart
        extenders=[{"name": "a", "overrides": {"replicas.forward": False}},
                   {"name": "b", "tls": True}],
        schedulers=[{"name": "gpu-scheduler", "extender": "a"},
                    {"name": "gpu-scheduler-b", "extender": "b",
                     "config": "kube-scheduler-config-https.yaml",
                     "scheduler_name": "gpu-scheduler-b", "leader_elect": False}])
try:
    def one_round(r):
        pods = []
        for i in range(28):
            sched = "gpu-scheduler" if i % 2 == 0 else "gpu-scheduler-b"
            pods.append(shared(f"r{r}-sh-{i}", "2" if i % 3 else "1", "4Gi" if i % 2 else "2Gi",
                               scheduler=sched))
        for i in range(8):
            sched = "gpu-scheduler" if i % 2 == 0 else "gpu-scheduler-b"
            pods.append(exclusive(f"r{r}-ex-{i}", 1 + i % 2, scheduler=sched))
        create(c, *pods)

        # Wait until scheduling settles: no new bind for a while.
        last = [-1, 0]

        def quiet():
            n = sum(1 for p in get_pods(c) if p["spec"].get("nodeName"))
            if n != last[0]:
                last[0], last[1] = n, 0
                return False
            last[1] += 1
            return last[1] >= 6  # 6 polls x 1 s unchanged
        wait_for(quiet, 120, interval=1)
        got = [p for p in get_pods(c) if p["spec"].get("nodeName")]
        by = {}
        for p in got:
            by[p["spec"]["schedulerName"]] = by.get(p["spec"]["schedulerName"], 0) + 1
        log(f"round {r}: bound {len(got)}/{len(pods)}: {by}")
        chk.ok(by.get("gpu-scheduler", 0) > 0 and by.get("gpu-scheduler-b", 0) > 0,
               f"round {r}: both schedulers bound pods ({by})")
        chk.ok(len(got) < len(pods), f"round {r}: more pods than cards, some stay Pending")
        for p in got:
            check_assignment(c, chk, p, want_shared="-sh-" in p["metadata"]["name"])
        ok = wait_for(lambda: all(t["state"] == "bound" for ts in c.leases().values() for t in ts), 30)
        chk.ok(ok, f"round {r}: every tenant marked bound")
        check_ledger(c, chk)
        delete_pods(c)
        chk.ok(wait_for(lambda: not any(c.leases().values()), 30, interval=0.5),
               f"round {r}: all bookings released once the pods are gone")

    for r in range(3):
        one_round(r)

    # Both replicas really served: the HTTPS one through the scheduler's TLS client.
    for name in ("a", "b"):
        r = c.requests_by_verb(name)
        chk.ok(r.get("bind", 0) > 0 and r.get("filter", 0) > 0, f"replica {name} served filter and bind ({r})")
    m = c.extender_metrics("a")
    conflicts = sum(v for (n, _), v in m.items() if n == "gpu_extender_ledger_cas_conflicts_total")
    m = c.extender_metrics("b")
    conflicts += sum(v for (n, _), v in m.items() if n == "gpu_extender_ledger_cas_conflicts_total")
    log(f"Lease CAS conflicts across both replicas: {conflicts:.0f}")

    check_no_403(c, chk)
finally:
    finish(c, chk, tail=2000)
chk.done()
