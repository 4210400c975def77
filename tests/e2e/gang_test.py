"""Gangs (issue 21): PodGroups of GPU shares through kube-scheduler's workload scheduling
(GenericWorkload, v1.37.2) and the extender's tentative bookings (src/decide/gang.c).

    gang_test.py GPU_EXTENDER shares|nofit|distinct|race|replicas|restart

Two fresh nodes of a tainted pool, gpu-node-f and gpu-node-g (copies of gpu-node-a: 2 cards x 4
slots), take every pod of the test; fillers are placed one at a time first (binpack fills card 0
first), then the gang's members are created together.

shares:
  1. the last share: gpu-node-f has exactly one free share left, gpu-node-g is empty; a gang of
     two 1-slice members. Each member's filter used to admit gpu-node-f, the scheduler placed
     both there and the second bind failed: a partially bound gang. Now the first member books
     the last share and the second goes to gpu-node-g.
  2. packed: every card of the pool has 3 of 4 slots taken; a gang of four 1-slice members fits
     only one member per card.
  After each: every member bound (all or none), no card over capacity, one filter per member
  pinned to one node (gpu_extender_gang_pins_total).
nofit: a gang of three whole-card shares (4 slices) on a pool with two free cards: no member
  binds while the scheduler retries; once the gang is deleted its tentative bookings are gone
  after gang.hold_ms (gpu_extender_gang_bookings 0) and two outsiders take the two cards.
distinct: on the empty pool, a gang of three 1-slice members packs onto one card; the same gang
  with gpu-extender.io/gang-distinct-cards: "true" lands on three distinct cards; a gang of five
  such members on the pool's four cards binds no member, and the filter says why.
race: concurrent gangs racing for the same cards. Four gangs, each two cards' worth (a whole
  card, nvidia.com/gpu, and two half-card shares of 2 slices), are queued before the scheduler
  starts; the scheduler calls the extender through cmd/faultproxy, which delays every bind by
  100-400 ms so that a gang's binds are still in flight while the next gang is filtered. By
  default through two replicas round-robin, each call to the next (a Service without the
  affinity): the follower forwards to the leader (replicas.forward, as shipped); without
  forwarding that failed, partially bound gangs (docs/sharing.md, 7). GX_GANG_RACE_REPLICAS=a
  calls one replica. The pool's four cards hold exactly two of the gangs
  however the shares are placed (half cards never fragment a card, and two of any gang's three
  members leave a card free for the next whole one). Checked: every gang bound whole or not at
  all, exactly two gangs bound, no member's bind refused, every replica filtered and bound
  members, no tentative booking left on any replica.
replicas: the same race between two schedulers, each calling its own replica (gpu-scheduler
  replica a, gpu-scheduler-b replica b, each through a proxy delaying binds by 100-400 ms), two
  of the four gangs each: each replica plans its gangs without the other's tentative bookings,
  so both plan onto the same cards and the Leases decide member by member at bind. The gang
  barrier (src/server/gang_bind.c) holds a gang's Bindings until every member's reservation
  landed and fails the whole gang when one is refused. Checked: every gang bound whole or not at
  all, exactly two gangs bound, no tentative booking left on either replica.
restart: an extender killed -9 inside a gang's scheduling pass and started again. A gang of
  three whole-card shares on a pool with two free cards cannot fit, so the scheduler keeps
  retrying it, and each pass pins the two members that fit (their tentative bookings) and
  refuses the third. A proxy in front of the replica delays every filter by 150 ms; the test
  polls the pin counter every 20 ms and kills the replica as soon as it is odd: a pass has
  pinned its first member and the second member's filter is waiting in the proxy, so the kill
  lands inside the pass, with tentative bookings held. Restarted, the replica pins members of a
  new pass; no member binds and no Lease books one while the gang cannot fit; then a filler is
  deleted and the gang binds whole, its tentative bookings all turned into bookings.
  Then killed after a cycle: on the emptied pool a gang of three whole-card shares fits, the
  proxy holds every bind for 3 s, and the replica is killed as soon as its pin counter shows
  all three members pinned (the group committed, its binds waiting in the proxy) and started
  again; the binds reach the restarted replica, which lost the tentative bookings and admits
  them as any pod's: every member binds, none refused for lack of a card.
"""
import json
import os
import sys
import time
import urllib.request

from e2e import (NS, POOL_KEY, TOLERATE_GPU, Checks, check_no_403, create, delete_pods, events,
                 exclusive, finish, get_pods, log, pool_node, rig, shared, wait_bound, wait_for)
from gxtest import read_port

MODE = sys.argv[2] if len(sys.argv) > 2 else "shares"
chk = Checks(f"e2e_gang_{MODE}")
GATES = "--feature-gates=GenericWorkload=true"
POOL = {POOL_KEY: "gang"}
NODES = ("gpu-node-f", "gpu-node-g")
HOLD_MS = 3000
# race: the replicas behind the round-robin proxy ("a": the control run, one replica)
RACE_REPLICAS = os.environ.get("GX_GANG_RACE_REPLICAS", "a,b").split(",")


def inpool(p, host=None):
    p["spec"]["nodeSelector"] = dict(POOL, **({"kubernetes.io/hostname": host} if host else {}))
    p["spec"]["tolerations"] = TOLERATE_GPU + [{"key": POOL_KEY, "operator": "Exists"}]
    return p


def pod_group(name, min_count):
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def join(group, p):
    """Pod @p (inpool'd) made a member of PodGroup @group."""
    p["spec"]["schedulingGroup"] = {"podGroupName": group}
    p["metadata"]["labels"]["gang"] = group
    return p


def members(group, n, slices, distinct=False):
    out = []
    for i in range(n):
        p = inpool(shared(f"{group}-{i}", str(slices)))
        if distinct:
            p["metadata"]["annotations"]["gpu-extender.io/gang-distinct-cards"] = "true"
        out.append(join(group, p))
    return out


def fill(c, specs):
    """Fillers (name, node, slices), one at a time so binpack puts each where the test says."""
    for name, node, slices in specs:
        create(c, inpool(shared(name, str(slices)), node))
        chk.ok(bool(wait_bound(c, [name], timeout=60)), f"filler {name} bound on {node}")


def metric(c, name, replica="a"):
    return sum(v for (m, _), v in c.extender_metrics(replica).items() if m == name)


def proxy(c, name, replicas):
    """cmd/faultproxy in front of the extender replicas @replicas (round-robin over several, as
    the Service without session affinity); returns its port. Faults: set_proxy_faults."""
    pf, cf = c.path(f"{name}.port"), c.path(f"{name}.control")
    ups = ",".join(f"http://127.0.0.1:{c.extender_spec(r)['port']}" for r in replicas)
    c.start(name, [os.path.join(c.bin, "faultproxy"), "--port-file", pf, "--control-port-file", cf,
                   "--upstream", ups])
    return wait_for(lambda: read_port(cf) and read_port(pf), 30,
                    f"{name} port", must=True)


def set_proxy_faults(c, name, **faults):
    port = read_port(c.path(f"{name}.control"))
    req = urllib.request.Request(f"http://127.0.0.1:{port}/faults", method="POST",
                                 data=json.dumps(faults).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()


def start_scheduler_via(c, port):
    """The gpu-scheduler, with the gates, calling the extender at @port (a proxy)."""
    c.schedulers.append({"name": "gpu-scheduler", "extender": "a", "args": [GATES],
                         "extender_port": port})
    c.start_scheduler("gpu-scheduler")


def cards_of(c, names):
    """{pod: (node, card index annotation)} of the bound pods among @names."""
    out = {}
    for p in get_pods(c):
        md = p["metadata"]
        if md["name"] in names and p["spec"].get("nodeName"):
            out[md["name"]] = (p["spec"]["nodeName"],
                               md.get("annotations", {}).get("gpu-extender.io/gpu-index"))
    return out


def bind_failures(c, names):
    return [(n, m) for n in names for r, m in events(c, n) if r == "FailedScheduling"
            and "bind" in (m or "").lower()]


def gang_all_or_none(c, group, names, want_bound):
    """Wait for the gang; check it is bound whole (or not at all) and never partially."""
    got = wait_bound(c, names, timeout=60) if want_bound else {}
    where = cards_of(c, names)
    chk.ok(len(where) in (0, len(names)), f"{group}: all members bound or none: {where}")
    if want_bound:
        chk.eq(sorted(got), sorted(names), f"{group}: every member bound")
    chk.eq(bind_failures(c, names), [], f"{group}: no member's bind failed")
    return where


def run_shares(c):
    # 1. the last share of gpu-node-f and an empty gpu-node-g
    fill(c, [("f0", "gpu-node-f", 3), ("f1", "gpu-node-f", 4)])
    pins = metric(c, "gpu_extender_gang_pins_total")
    names = [f"last-{i}" for i in range(2)]
    create(c, pod_group("last", 2))
    create(c, *members("last", 2, 1))
    where = gang_all_or_none(c, "last", names, True)
    chk.eq(sorted(n for n, _ in where.values()), ["gpu-node-f", "gpu-node-g"],
           "last: one member on the last share of gpu-node-f, the other on gpu-node-g")
    chk.ok(metric(c, "gpu_extender_gang_pins_total") >= pins + 2,
           "last: each member's filter kept one node")
    delete_pods(c)

    # 2. one free share on every card: four 1-slice members fit one per card only
    fill(c, [(f"h{i}", node, 3) for i, node in enumerate(NODES * 2)])
    names = [f"packed-{i}" for i in range(4)]
    create(c, pod_group("packed", 4))
    create(c, *members("packed", 4, 1))
    where = gang_all_or_none(c, "packed", names, True)
    chk.eq(len(set(where.values())), 4, f"packed: one member per card: {where}")
    chk.ok(wait_for(lambda: metric(c, "gpu_extender_gang_bookings") == 0, 10, interval=0.5),
           "every tentative booking became the member's own booking")


def run_nofit(c):
    fill(c, [("f0", "gpu-node-f", 4), ("g0", "gpu-node-g", 4)])
    names = [f"big-{i}" for i in range(3)]
    create(c, pod_group("big", 3))
    create(c, *members("big", 3, 4))
    # the scheduler tries at once, then on backoff (+2, +3 s): three passes at least
    seen = wait_for(lambda: metric(c, "gpu_extender_gang_pins_total") >= 4, 30, interval=0.5)
    chk.ok(seen, "the gang's members were filtered and pinned over more than one pass")
    chk.ok(metric(c, "gpu_extender_gang_rejections_total") > 0,
           "the third member was refused the cards the first two booked")
    time.sleep(5)
    gang_all_or_none(c, "big", names, False)
    chk.eq(cards_of(c, names), {}, "no member bound")
    chk.ok(metric(c, "gpu_extender_gang_bookings") <= 2, "at most the two members that fit book")
    c.kubectl("-n", NS, "delete", "pods", "-l", "gang=big", "--wait=false")
    wait_for(lambda: not get_pods(c, "gang=big"), 60, "gang deleted", must=True)
    left = wait_for(lambda: metric(c, "gpu_extender_gang_bookings") == 0, HOLD_MS / 1000 + 5,
                    interval=0.5)
    chk.ok(left, f"no tentative booking left {HOLD_MS} ms after the gang went")
    outsiders = ["out-0", "out-1"]
    create(c, *[inpool(shared(n, "4")) for n in outsiders])
    chk.eq(sorted(wait_bound(c, outsiders, timeout=60)), outsiders,
           "two whole-card outsiders take the cards the gang had booked")


def gang_gone(c, group):
    c.kubectl("-n", NS, "delete", "pods", "-l", f"gang={group}", "--wait=false")
    wait_for(lambda: not get_pods(c, f"gang={group}"), 60, f"gang {group} deleted", must=True)
    chk.ok(wait_for(lambda: metric(c, "gpu_extender_gang_bookings") == 0, HOLD_MS / 1000 + 5,
                    interval=0.5), f"{group}: no tentative booking left")


def run_distinct(c):
    # 1. without the option: three shares of one gang pack onto one card (binpack, fgd alike)
    names = [f"pack-{i}" for i in range(3)]
    create(c, pod_group("pack", 3))
    create(c, *members("pack", 3, 1))
    where = gang_all_or_none(c, "pack", names, True)
    log(f"pack: {where}")
    chk.eq(len(set(where.values())), 1, f"pack: the three shares share one card: {where}")
    gang_gone(c, "pack")

    # 2. with gang-distinct-cards: three distinct cards
    names = [f"apart-{i}" for i in range(3)]
    create(c, pod_group("apart", 3))
    create(c, *members("apart", 3, 1, distinct=True))
    where = gang_all_or_none(c, "apart", names, True)
    log(f"apart: {where}")
    chk.eq(len(set(where.values())), 3, f"apart: three distinct cards: {where}")
    gang_gone(c, "apart")

    # 3. five members, four cards: none binds, and the filter names the reason
    names = [f"five-{i}" for i in range(5)]
    rejected = reason_count(c, "gang_apart")
    create(c, pod_group("five", 5))
    create(c, *members("five", 5, 1, distinct=True))
    chk.ok(wait_for(lambda: metric(c, "gpu_extender_gang_pins_total") > 0
                    and reason_count(c, "gang_apart") > rejected, 30, interval=0.5),
           "five: the fifth member was refused with reason gang_apart")
    time.sleep(3)
    gang_all_or_none(c, "five", names, False)
    chk.eq(cards_of(c, names), {}, "five: no member bound")
    gang_gone(c, "five")


RACE_GANGS = ("ra", "rb", "rc", "rd")


def race_gang(group):
    """Two cards' worth: a whole card (nvidia.com/gpu: 1) and two half-card shares (2 slices)."""
    return [join(group, inpool(exclusive(f"{group}-0")))] + [
        join(group, inpool(shared(f"{group}-{i}", "2"))) for i in (1, 2)]


def run_race(c):
    port = proxy(c, "rr", RACE_REPLICAS)
    # A gang's binds stay in flight while the next gang is filtered: its cards are then booked
    # only tentatively, in the memory of whichever replica filtered each member.
    set_proxy_faults(c, "rr", latency_ms=[100, 400], path_contains="/bind")
    names = {g: [f"{g}-{i}" for i in range(3)] for g in RACE_GANGS}
    everyone = [n for g in RACE_GANGS for n in names[g]]
    create(c, *[pod_group(g, 3) for g in RACE_GANGS])
    create(c, *[p for g in RACE_GANGS for p in race_gang(g)])
    start_scheduler_via(c, port)  # all four gangs queued before the first cycle

    def bound_per_gang():
        where = cards_of(c, everyone)
        return {g: sum(n in where for n in names[g]) for g in RACE_GANGS}
    wait_for(lambda: sum(v == 3 for v in bound_per_gang().values()) >= 2, 60, interval=1)
    # the losers' retries (backoff 1, 2, 4 s...) after the winners' binds: none may get in
    time.sleep(HOLD_MS / 1000 + 5)
    per = bound_per_gang()
    log(f"race: members bound per gang {per}; cards {cards_of(c, everyone)}")
    chk.ok(all(v in (0, 3) for v in per.values()), f"every gang bound whole or not at all: {per}")
    chk.eq(sorted(per.values()), [0, 0, 3, 3],
           "exactly two of the four gangs bound: the pool's four cards hold two")
    chk.eq(bind_failures(c, everyone), [], "no member's bind failed")
    filters = {r: c.requests_by_verb(r).get("filter", 0) for r in RACE_REPLICAS}
    binds = {r: c.requests_by_verb(r).get("bind", 0) for r in RACE_REPLICAS}
    log(f"race: filters {filters}, binds {binds} per replica")
    chk.ok(all(filters.values()) and all(binds.values()),
           f"every replica filtered and bound members: {filters} {binds}")
    chk.ok(wait_for(lambda: all(metric(c, "gpu_extender_gang_bookings", r) == 0
                                for r in RACE_REPLICAS),
                    HOLD_MS / 1000 + 5, interval=0.5),
           "no tentative booking left on any replica")


def start_scheduler_named(c, name, port, scheduler_name=None):
    """kube-scheduler @name, with the gates, calling the extender at @port (a proxy); a second
    one runs as @scheduler_name without leader election (as e2e_race runs it)."""
    spec = {"name": name, "extender": "a", "args": [GATES], "extender_port": port}
    if scheduler_name:
        spec.update(scheduler_name=scheduler_name, leader_elect=False)
    c.schedulers.append(spec)
    c.start_scheduler(name)


def run_replicas(c):
    sched = {"ra": "gpu-scheduler", "rb": "gpu-scheduler", "rc": "gpu-scheduler-b",
             "rd": "gpu-scheduler-b"}
    names = {g: [f"{g}-{i}" for i in range(3)] for g in sched}
    everyone = [n for g in sched for n in names[g]]
    ports = {r: proxy(c, f"p{r}", [r]) for r in ("a", "b")}
    for r in ports:
        set_proxy_faults(c, f"p{r}", latency_ms=[100, 400], path_contains="/bind")
    pods = []
    for g in ("ra", "rc", "rb", "rd"):  # the two schedulers' gangs arrive together
        for p in race_gang(g):
            p["spec"]["schedulerName"] = sched[g]
            pods.append(p)
    # both schedulers run before the pods exist: their cycles overlap
    start_scheduler_named(c, "gpu-scheduler", ports["a"])
    start_scheduler_named(c, "gpu-scheduler-b", ports["b"], "gpu-scheduler-b")
    create(c, *[pod_group(g, 3) for g in sched])
    create(c, *pods)

    def bound_per_gang():
        where = cards_of(c, everyone)
        return {g: sum(n in where for n in names[g]) for g in sched}
    wait_for(lambda: sum(v == 3 for v in bound_per_gang().values()) >= 2, 120, interval=1)
    time.sleep(HOLD_MS / 1000 + 5)  # the losers' retries after the winners' binds
    per = bound_per_gang()
    failed = {r: metric(c, "gpu_extender_gang_binds_failed_total", r) for r in ports}
    log(f"replicas: members bound per gang {per}; gangs failed at the barrier {failed}; "
        f"binds refused {len(bind_failures(c, everyone))}; cards {cards_of(c, everyone)}")
    chk.ok(all(v in (0, 3) for v in per.values()), f"every gang bound whole or not at all: {per}")
    chk.eq(sorted(per.values()), [0, 0, 3, 3],
           "exactly two of the four gangs bound: the pool's four cards hold two")
    binds = {r: c.requests_by_verb(r).get("bind", 0) for r in ports}
    chk.ok(all(binds.values()), f"both replicas bound members: {binds}")
    chk.ok(wait_for(lambda: all(metric(c, "gpu_extender_gang_bookings", r) == 0 for r in ports),
                    HOLD_MS / 1000 + 5, interval=0.5),
           "no tentative booking left on either replica")


def run_restart(c):
    port = proxy(c, "slow", ["a"])
    start_scheduler_via(c, port)
    fill(c, [("f0", "gpu-node-f", 4), ("g0", "gpu-node-g", 4)])
    # Every filter takes 150 ms in the proxy: a pass pins its first member, then the second
    # member's filter waits in the proxy for 150 ms, which is where the kill lands.
    set_proxy_faults(c, "slow", latency_ms=[150, 150], path_contains="/filter")
    names = [f"big-{i}" for i in range(3)]
    create(c, pod_group("big", 3))
    create(c, *members("big", 3, 4))
    chk.ok(wait_for(lambda: metric(c, "gpu_extender_gang_pins_total") >= 2, 30, interval=0.2),
           "a first pass pinned the two members that fit")

    def mid_pass():
        m = c.extender_metrics("a")
        pins = sum(v for (k, _), v in m.items() if k == "gpu_extender_gang_pins_total")
        held = sum(v for (k, _), v in m.items() if k == "gpu_extender_gang_bookings")
        return (pins, held) if pins % 2 == 1 else None
    got = wait_for(mid_pass, 60, interval=0.02)
    c.kill_extender("a")
    chk.ok(got, f"killed -9 after a pass's first pin, before its second (pins, bookings): {got}")
    chk.ok(got and got[1] > 0, "the killed replica held tentative bookings")
    time.sleep(1)
    c.start_extender("a")
    chk.ok(wait_for(lambda: metric(c, "gpu_extender_gang_pins_total") >= 2, 60, interval=0.5),
           "the restarted replica pinned members of a new pass")
    time.sleep(2)
    chk.eq(cards_of(c, names), {}, "no member bound while the gang cannot fit")
    uids = {p["metadata"]["uid"] for p in get_pods(c, "gang=big")}
    chk.eq([t["pod"] for ts in c.leases().values() for t in ts if t["uid"] in uids], [],
           "no Lease books a member that is not bound")
    cut = [m for n in names for r, m in events(c, n)
           if r == "FailedScheduling" and "failed filter with extender" in (m or "")]
    log(f"restart: the members' failed filters {cut}")
    chk.ok(cut, "the scheduler saw a member's filter fail inside a pass (the cut cycle)")
    c.kubectl("-n", NS, "delete", "pod", "f0", "--wait=false")  # room for the third member
    gang_all_or_none(c, "big", names, True)
    chk.ok(wait_for(lambda: metric(c, "gpu_extender_gang_bookings") == 0, 10, interval=0.5),
           "every tentative booking became the member's own booking")

    # 2. killed after the group's cycle, its binds held in the proxy
    delete_pods(c)
    set_proxy_faults(c, "slow", latency_ms=[3000, 3000], path_contains="/bind")
    pins = metric(c, "gpu_extender_gang_pins_total")
    names = [f"late-{i}" for i in range(3)]
    create(c, pod_group("late", 3))
    create(c, *members("late", 3, 4))
    got = wait_for(lambda: metric(c, "gpu_extender_gang_pins_total") >= pins + 3, 30,
                   interval=0.02)
    c.kill_extender("a")
    chk.ok(got, "killed -9 once the three members were pinned, their binds in the proxy")
    c.start_extender("a")
    set_proxy_faults(c, "slow")
    where = wait_bound(c, names, timeout=60)
    log(f"late: bound {sorted(where)}; bind events "
        f"{[(n, m) for n in names for r, m in events(c, n) if 'bind' in (m or '').lower()]}")
    chk.eq(sorted(where), names, "late: every member bound in the end")
    binds = c.requests_by_verb("a").get("bind", 0)
    chk.ok(binds >= 3, f"late: the binds reached the restarted replica ({binds})")
    refused = [(n, m) for n, m in bind_failures(c, names) if "available" in m]
    chk.eq(refused, [], "late: no member's bind refused for lack of a card")


def reason_count(c, reason):
    return sum(v for (m, labels), v in c.extender_metrics("a").items()
               if m == "gpu_extender_filter_rejections_total" and ("reason", reason) in labels)


# replicas: replicas that decide each for itself (replicas.forward off), the hard case; the
# others as shipped (GX_GANG_RACE_REPLICAS=a,b: two replicas round-robin, one leads)
EXTENDERS = [{"name": r, "overrides": {"gang.hold_ms": HOLD_MS,
                                       "replicas.forward": MODE != "replicas"}}
             for r in (RACE_REPLICAS if MODE == "race" else ("a", "b") if MODE == "replicas"
                       else ("a",))]
# race, replicas and restart start the schedulers themselves, calling the extender through a proxy
SCHEDULERS = [] if MODE in ("race", "replicas", "restart") else [
    {"name": "gpu-scheduler", "extender": "a", "args": [GATES]}]
c = rig(sys.argv[1], extra_nodes=[pool_node(n, "gang") for n in NODES], extenders=EXTENDERS,
        schedulers=SCHEDULERS,
        apiserver_args=[GATES, "--runtime-config=scheduling.k8s.io/v1beta1=true",
                        "--disable-admission-plugins=PodGroupProtection"])
try:
    log(f"gang {MODE}")
    {"shares": run_shares, "nofit": run_nofit, "distinct": run_distinct, "race": run_race,
     "replicas": run_replicas, "restart": run_restart}[MODE](c)

    check_no_403(c, chk)
    for e in EXTENDERS:
        chk.ok(c.alive(f"extender-{e['name']}"),
               f"extender {e['name']} still running (no sanitizer abort)")
finally:
    finish(c, chk)
chk.done()
