"""Preemption for GPU time slices with the real kube-scheduler, API server and extender.

    test_preempt.py GPU_EXTENDER visible|hidden|hidden_next

Two fresh 2-card nodes (copies of gpu-node-a: 4 slots a card, no dcgm series) hold the pods;
PriorityClasses gx-low (100), gx-mid (200), gx-high (1000), gx-top (2000).

visible: the scheduler sees the shared resource. gpu-extender.io/time-slice is not
    ignoredByScheduler and gpu-node-p advertises 8 of it (2 cards x 4 slots); pods ask
    gpu-extender.io/time-slice: N. kube-scheduler's own preemption then finds victims by count,
    and calls our preempt verb, which replaces them with victims on ONE card:
    1. a full node and a high-priority 2-slot pod: exactly the extender's victim (one 2-slot
       pod, where the scheduler alone would take two 1-slot pods of the other card) is evicted,
       the preemptor binds to that card, no pod of the other card is touched;
    2. no single card can be freed (each card keeps a pod of higher priority than the
       preemptor): the verb drops the node, nobody is evicted;
    3. an exclusive high-priority pod on the node of shared pods;
    4. a PodDisruptionBudget allowing no disruption protects the pods of card 1: the victim
       moves to card 0 (the verb asked by hand first, then the scheduler's preemption);
    5. the freed share is held: the verb's victim is marked and deleted as the scheduler does
       it, for a preemptor no scheduler serves; a lower-priority pod must not take the share.
hidden: the shipped configuration (gpu-extender.io/time-slice ignoredByScheduler, annotations).
    The same five cases on gpu-node-q.
hidden_next: as hidden, with the kube-scheduler of v1.38.0-beta.0 (tests/k8s-next/build.sh; the
    API server and the rest stay the pinned rig's). Its DefaultPreemption keeps candidates with no
    in-tree victims for a preempt-capable extender, so the scheduler itself runs the whole
    preemption: cases 1-4 evict exactly the verb's victims and the preemptor binds to the freed
    card; case 5 is the real flow: a lower-priority pod waiting for the same share while the
    scheduler's victims terminate does not get it.

In the pinned release v1.37.2 the scheduler calls the verb only for nodes where its own dry run found
victims (callExtenders after DryRunPreemption, which refuses a candidate with none), so with the
GPU share hidden from it (hidden 1-3, and visible 3: nvidia.com/gpu is free in its view) it never
gets there and evicts nobody: that is asserted. For those cases the verb is also called directly,
with the pod from the API server and the node as releases after kubernetes PR #135486 send it
(no in-tree victims), to show what it answers on the real ledger.
"""
import copy
import json
import sys
import time
import urllib.error
import urllib.request

from e2e import (ANN, NS, Checks, finish, check_no_403, create, delete_pods, events, get_pod, get_pods,
                 log, pod, rig, wait_bound, wait_for)
import rig as rigmod  # noqa: E402 - on the path once e2e is imported
from rig import DEMO_NODES

MODE = sys.argv[2] if len(sys.argv) > 2 else "visible"
VISIBLE = MODE == "visible"
# The scheduler runs the preemption itself: the share visible, or hidden with v1.38.0-beta.0.
NEXT = MODE == "hidden_next"
REAL = VISIBLE or NEXT
NODE = "gpu-node-p" if VISIBLE else "gpu-node-q"
chk = Checks(f"e2e_preempt_{MODE}")
CLASSES = {"gx-low": 100, "gx-mid": 200, "gx-high": 1000, "gx-top": 2000}


def extra_node():
    with open(DEMO_NODES) as f:
        src = next(n for n in json.load(f)["items"] if n["metadata"]["name"] == "gpu-node-a")
    n = copy.deepcopy(src)
    n["metadata"]["name"] = NODE
    n["metadata"]["labels"]["kubernetes.io/hostname"] = NODE
    if VISIBLE:
        for k in ("capacity", "allocatable"):
            n["status"][k]["gpu-extender.io/time-slice"] = "8"
    return n


if VISIBLE:
    _shipped = rigmod.shipped_scheduler_config

    def _visible_config(name="kube-scheduler-config.yaml"):
        cfg = _shipped(name)
        for r in cfg["extenders"][0]["managedResources"]:
            if r["name"] == "gpu-extender.io/time-slice":
                r["ignoredByScheduler"] = False
        return cfg
    rigmod.shipped_scheduler_config = _visible_config


def gpod(name, prio, slices=1, exclusive=False, grace=1, labels=None):
    """A GPU pod pinned to NODE with PriorityClass @prio."""
    sel = {"kubernetes.io/hostname": NODE}
    if exclusive:
        p = pod(name, {"nvidia.com/gpu": "1"}, node_selector=sel, grace=grace)
    elif VISIBLE:
        p = pod(name, {"gpu-extender.io/time-slice": str(slices)}, node_selector=sel, grace=grace)
    else:
        p = pod(name, {"gpu-extender.io/time-slice": "1"},
                annotations={ANN + "time-slices": str(slices)}, node_selector=sel, grace=grace)
    p["spec"]["priorityClassName"] = prio
    p["metadata"]["labels"].update(labels or {})
    return p


def place(c, specs):
    """Create pods one at a time (binpack fills card 0 first); returns {name: (uid, card)}.
    A spec is gpod's arguments or a pod."""
    out = {}
    for spec in specs:
        want = spec if isinstance(spec, dict) else gpod(*spec)
        name = want["metadata"]["name"]
        create(c, want)
        got = wait_bound(c, [name], timeout=60)
        p = got.get(name)
        if not chk.ok(p is not None, f"{name} bound"):
            continue
        out[name] = (p["metadata"]["uid"],
                        p["metadata"].get("annotations", {}).get(ANN + "gpu-index"))
    return out


def alive(c):
    """{name: uid} of pods bound and not being deleted."""
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in get_pods(c)
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")}


def metric(c, name, **labels):
    m = c.extender_metrics("a")
    return m.get((name, frozenset(labels.items())), 0.0)


def post_preempt(c, name, victims):
    """The preempt verb called as newer schedulers call it: {NODE: victims UIDs}."""
    body = {"Pod": get_pod(c, name), "NodeNameToVictims": None,
            "NodeNameToMetaVictims": {NODE: {"Pods": [{"UID": u} for u in victims],
                                             "NumPDBViolations": 0}}}
    req = urllib.request.Request(c.extender_url("a", "/gpu-extender/preempt"),
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, json.loads(r.read())


def debug_preempt(c, name):
    """POST /debug/preempt?format=text with the pod from the API server."""
    req = urllib.request.Request(c.extender_url("a", "/debug/preempt?format=text"),
                                 data=json.dumps(get_pod(c, name)).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


def answer_uids(ans):
    node = (ans.get("NodeNameToMetaVictims") or {}).get(NODE)
    return None if node is None else sorted(p["UID"] for p in node["Pods"])


def reset(c):
    delete_pods(c)
    wait_for(lambda: not any(c.leases().values()), 30, interval=0.5)


def stays_pending(c, name, secs=12):
    """@name stays unbound for @secs; returns its FailedScheduling messages."""
    deadline = time.time() + secs
    while time.time() < deadline:
        if get_pod(c, name)["spec"].get("nodeName"):
            return None
        time.sleep(1)
    return [m for r, m in events(c, name) if r == "FailedScheduling"]


def on_port(p, port=9400):
    """@p serving on a host port: kube-scheduler places no second such pod until it is gone."""
    p["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return p


def hold_real(c):
    """The real flow: a lower-priority pod waits for the share the scheduler's preemption frees.
    The extender frees a victim's share when its deletion starts; the preemptor cannot come
    before the victim's pod object is gone (a host port both use, as a metrics port does), so
    late, retried while a1 terminates, fits the freed share and the hold must refuse it."""
    # late asks no port: its filters pass with hi nominated, so the extender sees it. a1's
    # grace outlasts kube-scheduler's longest backoff (podMaxBackoffSeconds, 10 s).
    layout = place(c, [on_port(gpod("a1", "gx-low", 2, False, 20)), ("a2", "gx-low", 1),
                       ("a3", "gx-mid", 1), ("b1", "gx-low", 1), ("b2", "gx-low", 1),
                       ("b3", "gx-low", 1), ("b4", "gx-low", 1)])
    create(c, gpod("late", "gx-low", 2))
    chk.ok(stays_pending(c, "late", secs=4) is not None, "late waits: the node is full")
    before = alive(c)
    active0 = metric(c, "gpu_extender_preempt_holds_activated_total")
    rejected0 = metric(c, "gpu_extender_preempt_hold_rejections_total")
    create(c, on_port(gpod("hi", "gx-high", 2)))
    got = wait_bound(c, ["hi"], timeout=90)
    hi = got.get("hi")
    if chk.ok(hi is not None, "the preemptor binds"):
        chk.eq(hi["metadata"].get("annotations", {}).get(ANN + "gpu-index"), "0",
               "to the card its victim freed")
    chk.ok(metric(c, "gpu_extender_preempt_holds_activated_total") > active0,
           "the scheduler's DisruptionTarget mark activated the hold")
    rejected = metric(c, "gpu_extender_preempt_hold_rejections_total") - rejected0
    log(f"hold rejections while a1 terminated: {rejected:g}")
    chk.ok(rejected > 0, "late was tried while the victim terminated and refused by the hold")
    chk.ok(stays_pending(c, "late", secs=6) is not None, "late never got the freed share")
    now = alive(c)
    chk.ok("a1" not in now and "a1" in layout, "a1 was the victim")
    for n in ("a2", "a3", "b1", "b2", "b3", "b4"):
        chk.eq(now.get(n), before.get(n), f"{n} untouched")


def pdb_case(c):
    """Four 2-slot pods, two a card; the cheapest victim is the youngest (q2, card 1) until a
    budget that allows no disruption protects card 1's pods (grp=b): then it is p2 on card 0."""
    layout = place(c, [("p1", "gx-low", 2, False, 1, {"grp": "a"}),
                       ("p2", "gx-low", 2, False, 1, {"grp": "a"}),
                       ("q1", "gx-low", 2, False, 1, {"grp": "b"}),
                       ("q2", "gx-low", 2, False, 1, {"grp": "b"})])
    chk.eq({n: card for n, (_, card) in layout.items()},
           {"p1": "0", "p2": "0", "q1": "1", "q2": "1"}, "p1, p2 on card 0; q1, q2 on card 1")
    uid = {n: u for n, (u, _) in layout.items()}
    probe = gpod("probe", "gx-high", 2)
    probe["spec"]["schedulerName"] = "nobody"  # asked by hand, never scheduled
    create(c, probe)
    st, ans = post_preempt(c, "probe", [])
    chk.eq(answer_uids(ans), [uid.get("q2")], f"without a budget: the youngest, q2 ({ans})")
    c.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": "card1", "namespace": NS},
         "spec": {"minAvailable": 2, "selector": {"matchLabels": {"grp": "b"}}}}))
    # No controller-manager runs in the rig: the status is written as the disruption
    # controller would write it for two healthy pods and minAvailable 2.
    c.kubectl("-n", NS, "patch", "pdb", "card1", "--subresource=status", "--type=merge", "-p",
              json.dumps({"status": {"disruptionsAllowed": 0, "currentHealthy": 2,
                                     "desiredHealthy": 2, "expectedPods": 2}}))
    got = wait_for(lambda: (lambda a: a if answer_uids(a) == [uid.get("p2")] else None)(
        post_preempt(c, "probe", [])[1]), 20, interval=0.5)
    chk.ok(got is not None, "with the budget the verb names p2 on card 0 instead")
    if got:
        chk.eq(got["NodeNameToMetaVictims"][NODE]["NumPDBViolations"], 0,
               "and reports no PDB violation")
    c.kubectl("-n", NS, "delete", "pod", "probe", "--wait=false")
    if not REAL:
        c.kubectl("-n", NS, "delete", "pdb", "card1")
        return
    before = alive(c)
    create(c, gpod("hi", "gx-high", 2))
    hi = wait_bound(c, ["hi"], timeout=90).get("hi")
    if chk.ok(hi is not None, "the preemptor binds"):
        chk.eq(hi["metadata"].get("annotations", {}).get(ANN + "gpu-index"), "0",
               "to card 0, away from the budget")
    now = alive(c)
    chk.ok("p2" not in now, "p2 was the victim")
    for n in ("p1", "q1", "q2"):
        chk.eq(now.get(n), before.get(n), f"{n} untouched")
    c.kubectl("-n", NS, "delete", "pdb", "card1")


# binpack fills one card before the next, so the layouts below are known (fgd, the default,
# weighs stranded capacity instead).
c = rig(sys.argv[1], extra_nodes=[extra_node()],
        extenders=[{"name": "a", "overrides": {"score.policy": "binpack"}}],
        bin_dir=rigmod.build_next_binaries() if NEXT else None)
try:
    for k, v in CLASSES.items():
        c.kubectl("apply", "-f", "-", input=json.dumps(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": k}, "value": v, "preemptionPolicy": "PreemptLowerPriority"}))

    # ---- 1. a full node, a high-priority 2-slot pod: one card's victims only ----------------
    log(f"case 1 ({MODE}): a full node, a high-priority 2-slot pod")
    layout = place(c, [("a1", "gx-low", 2), ("a2", "gx-low", 1), ("a3", "gx-mid", 1),
                       ("b1", "gx-low", 1), ("b2", "gx-low", 1), ("b3", "gx-low", 1),
                       ("b4", "gx-low", 1)])
    cards = {n: card for n, (_, card) in layout.items()}
    chk.eq({n: cards.get(n) for n in ("a1", "a2", "a3")}, {"a1": "0", "a2": "0", "a3": "0"},
           "card 0 holds a1 (2 slots), a2, a3")
    chk.eq({n: cards.get(n) for n in ("b1", "b2", "b3", "b4")},
           {"b1": "1", "b2": "1", "b3": "1", "b4": "1"}, "card 1 holds b1..b4")
    before = alive(c)
    calls0 = metric(c, "gpu_extender_preempt_calls_total")
    create(c, gpod("hi", "gx-high", 2))
    if REAL:
        got = wait_bound(c, ["hi"], timeout=90)
        hi = got.get("hi")
        if chk.ok(hi is not None, "the preemptor binds"):
            chk.eq(hi["spec"]["nodeName"], NODE, "on the node of its victims")
            chk.eq(hi["metadata"].get("annotations", {}).get(ANN + "gpu-index"), "0",
                   "to the card its victim freed")
        now = alive(c)
        chk.ok("a1" not in now, "a1 (one 2-slot pod of card 0, the cheapest set) was evicted")
        for n in ("a2", "a3", "b1", "b2", "b3", "b4"):
            chk.eq(now.get(n), before.get(n), f"{n} untouched (same pod, not deleted)")
        chk.ok(metric(c, "gpu_extender_preempt_calls_total") > calls0, "the preempt verb was called")
        chk.ok(metric(c, "gpu_extender_preempt_victims_total") >= 1, "victims counted")
        chk.ok(metric(c, "gpu_extender_preempt_holds_activated_total") >= 1,
               "the freed share was held for the preemptor")
    else:
        msgs = stays_pending(c, "hi")
        chk.ok(msgs is not None, "the preemptor stays Pending: v1.37.2 finds no in-tree victim")
        log(f"FailedScheduling of hi: {msgs[-1:] if msgs else msgs}")
        chk.eq(alive(c), before, "nobody evicted")
        chk.eq(metric(c, "gpu_extender_preempt_calls_total"), calls0,
               "the scheduler never reached the preempt verb")
        st, ans = post_preempt(c, "hi", [])
        chk.eq(st, 200, "preempt verb answers")
        chk.eq(answer_uids(ans), [layout["a1"][0]] if "a1" in layout else None,
               f"the verb names a1 only, on one card ({ans})")
        chk.eq(alive(c), before, "answering a preempt call evicts nobody by itself")
        text = debug_preempt(c, "hi")
        chk.ok(f"{NODE}" in text and "evict e2e/a1 (card 0)" in text,
               f"/debug/preempt explains the choice: {text!r}")
    reset(c)

    # ---- 2. no single card can be freed: nobody is evicted -------------------------------------
    log(f"case 2 ({MODE}): no single card can be freed")
    layout = place(c, [("t0", "gx-top", 1), ("l1", "gx-low", 1), ("l2", "gx-low", 1),
                       ("l3", "gx-low", 1), ("t1", "gx-top", 1), ("m1", "gx-low", 1),
                       ("m2", "gx-low", 1), ("m3", "gx-low", 1)])
    chk.ok(layout.get("t0", (0, "x"))[1] != layout.get("t1", (0, "y"))[1],
           "a top-priority pod on each card")
    before = alive(c)
    dropped0 = metric(c, "gpu_extender_preempt_nodes_dropped_total", reason="no_victims")
    create(c, gpod("hi4", "gx-high", 4))
    msgs = stays_pending(c, "hi4", secs=15)
    chk.ok(msgs is not None, "the 4-slot preemptor stays Pending")
    chk.eq(alive(c), before, "nobody evicted")
    if REAL:
        chk.ok(metric(c, "gpu_extender_preempt_nodes_dropped_total", reason="no_victims") > dropped0,
               "the verb dropped the node: no card can be freed")
    st, ans = post_preempt(c, "hi4", [])
    chk.eq((st, answer_uids(ans)), (200, None), f"the verb leaves the node out ({ans})")
    text = debug_preempt(c, "hi4")
    chk.ok(any(NODE in ln and "no victims: no_victims" in ln for ln in text.splitlines()),
           f"/debug/preempt says why: {text!r}")
    reset(c)

    # ---- 3. an exclusive high-priority pod on a node of shared pods: whole cards -------------
    log(f"case 3 ({MODE}): an exclusive high-priority pod on a node of shared pods")
    layout = place(c, [("s1", "gx-low", 2), ("s2", "gx-low", 1), ("s3", "gx-low", 1),
                       ("s4", "gx-low", 1), ("s5", "gx-low", 1)])
    by_card = {}
    for n, (uid, card) in layout.items():
        by_card.setdefault(card, []).append(uid)
    chk.eq(sorted(len(v) for v in by_card.values()), [2, 3], "3 pods on card 0, 2 on card 1")
    before = alive(c)
    smallest = min(by_card, key=lambda k: len(by_card[k])) if by_card else None
    create(c, gpod("ex", "gx-high", exclusive=True))
    if NEXT:
        got = wait_bound(c, ["ex"], timeout=90)
        ex = got.get("ex")
        if chk.ok(ex is not None, "the exclusive preemptor binds"):
            chk.eq(ex["metadata"].get("annotations", {}).get(ANN + "gpu-index"), smallest,
                   "to the whole card it freed")
        now = alive(c)
        for n, (uid, card) in layout.items():
            if card == smallest:
                chk.ok(n not in now, f"{n} (on the freed card {card}) was evicted")
            else:
                chk.eq(now.get(n), before.get(n), f"{n} (card {card}) untouched")
    else:
        msgs = stays_pending(c, "ex", secs=12)
        chk.ok(msgs is not None, "the exclusive preemptor stays Pending: nvidia.com/gpu is free "
               "in the scheduler's view, so v1.37.2's dry run finds no victim")
        chk.eq(alive(c), before, "nobody evicted by the scheduler")
        st, ans = post_preempt(c, "ex", [])
        chk.eq(answer_uids(ans), sorted(by_card.get(smallest, [])),
               f"the verb frees the whole card with fewer pods ({ans})")
    reset(c)

    # ---- 4. a PodDisruptionBudget on one card's pods steers the choice to the other card ------
    log(f"case 4 ({MODE}): a PodDisruptionBudget protects the pods of one card")
    pdb_case(c)
    reset(c)

    # ---- 5. the freed share is held for the preemptor while the victims go -------------------
    # The scheduler's part is played by hand, so that the preemptor cannot take the share at
    # once: it belongs to no running scheduler. The verb answers, the victim is marked as
    # kube-scheduler marks its victims (DisruptionTarget / PreemptionByScheduler) and deleted;
    # a lower-priority pod that would fit the freed slots must then be refused.
    log(f"case 5 ({MODE}): the freed share is held for the preemptor")
    if NEXT:
        hold_real(c)
    else:
        layout = place(c, [("a1", "gx-low", 2), ("a2", "gx-low", 1), ("a3", "gx-low", 1),
                           ("b1", "gx-low", 1), ("b2", "gx-low", 1), ("b3", "gx-low", 1),
                           ("b4", "gx-low", 1)])
        held = gpod("held", "gx-high", 2)
        held["spec"]["schedulerName"] = "nobody"
        create(c, held)
        rejected0 = metric(c, "gpu_extender_preempt_hold_rejections_total")
        active0 = metric(c, "gpu_extender_preempt_holds_activated_total")
        st, ans = post_preempt(c, "held", [])
        chk.eq(answer_uids(ans), [layout["a1"][0]] if "a1" in layout else None,
               f"the verb names a1 for the held pod ({ans})")
        c.kubectl("-n", NS, "patch", "pod", "a1", "--subresource=status", "-p", json.dumps(
            {"status": {"conditions": [{"type": "DisruptionTarget", "status": "True",
                                        "reason": "PreemptionByScheduler",
                                        "message": "gpu-scheduler: preempting (e2e)"}]}}))
        c.kubectl("-n", NS, "delete", "pod", "a1", "--wait=false")
        chk.ok(wait_for(lambda: metric(c, "gpu_extender_preempt_holds_activated_total") > active0,
                        20, interval=0.5), "the marked victim activated the hold")
        wait_for(lambda: "a1" not in {p["metadata"]["name"] for p in get_pods(c)}, 30, "a1 gone", must=True)
        wait_for(lambda: not any(t["pod"].endswith("/a1") for ts in c.leases().values() for t in ts),
                 20, interval=0.5)
        create(c, gpod("late", "gx-low", 2))
        msgs = stays_pending(c, "late", secs=10)
        chk.ok(msgs is not None, "a lower-priority pod does not take the held share")
        chk.ok(any("no GPU time slot available" in (m or "") for m in msgs or []),
               f"it is told there is no slot: {msgs[-1:] if msgs else msgs}")
        chk.ok(metric(c, "gpu_extender_preempt_hold_rejections_total") > rejected0,
               "the refusal is counted as the hold's")

    # ---- bad input is a 400 with a JSON error ----------------------------------------------
    req = urllib.request.Request(c.extender_url("a", "/gpu-extender/preempt"), data=b"{\"Pod\":",
                                 method="POST")
    try:
        urllib.request.urlopen(req, timeout=5)
        chk.ok(False, "bad JSON accepted")
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        chk.ok(e.code == 400 and "error" in body, f"bad JSON: 400 with a JSON error ({body})")

    check_no_403(c, chk)
    chk.ok(c.alive("extender-a"), "extender still running (no sanitizer abort)")
finally:
    finish(c, chk, tail=4000)
chk.done()
