"""Gangs (issue 21): PodGroups of GPU shares through kube-scheduler's workload scheduling
(GenericWorkload, v1.37.2) and the extender's tentative bookings (src/decide/gang.c).

    gang_test.py GPU_EXTENDER shares|nofit|distinct

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
"""
import sys
import time

from e2e import (NS, POOL_KEY, TOLERATE_GPU, Checks, check_no_403, create, delete_pods, events,
                 finish, get_pods, log, pool_node, rig, shared, wait_bound, wait_for)

MODE = sys.argv[2] if len(sys.argv) > 2 else "shares"
chk = Checks(f"e2e_gang_{MODE}")
GATES = "--feature-gates=GenericWorkload=true"
POOL = {POOL_KEY: "gang"}
NODES = ("gpu-node-f", "gpu-node-g")
HOLD_MS = 3000


def inpool(p, host=None):
    p["spec"]["nodeSelector"] = dict(POOL, **({"kubernetes.io/hostname": host} if host else {}))
    p["spec"]["tolerations"] = TOLERATE_GPU + [{"key": POOL_KEY, "operator": "Exists"}]
    return p


def pod_group(name, min_count):
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def members(group, n, slices, distinct=False):
    out = []
    for i in range(n):
        p = inpool(shared(f"{group}-{i}", str(slices)))
        if distinct:
            p["metadata"]["annotations"]["gpu-extender.io/gang-distinct-cards"] = "true"
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
        p["metadata"]["labels"]["gang"] = group
        out.append(p)
    return out


def fill(c, specs):
    """Fillers (name, node, slices), one at a time so binpack puts each where the test says."""
    for name, node, slices in specs:
        create(c, inpool(shared(name, str(slices)), node))
        chk.ok(bool(wait_bound(c, [name], timeout=60)), f"filler {name} bound on {node}")


def metric(c, name):
    return sum(v for (m, _), v in c.extender_metrics("a").items() if m == name)


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


def reason_count(c, reason):
    return sum(v for (m, labels), v in c.extender_metrics("a").items()
               if m == "gpu_extender_filter_rejections_total" and ("reason", reason) in labels)


c = rig(sys.argv[1], extra_nodes=[pool_node(n, "gang") for n in NODES],
        extenders=[{"name": "a", "overrides": {"gang.hold_ms": HOLD_MS}}],
        schedulers=[{"name": "gpu-scheduler", "extender": "a", "args": [GATES]}],
        apiserver_args=[GATES, "--runtime-config=scheduling.k8s.io/v1beta1=true",
                        "--disable-admission-plugins=PodGroupProtection"])
try:
    log(f"gang {MODE}")
    {"shares": run_shares, "nofit": run_nofit, "distinct": run_distinct}[MODE](c)

    check_no_403(c, chk)
    chk.ok(c.alive("extender-a"), "extender still running (no sanitizer abort)")
finally:
    finish(c, chk)
chk.done()
