"""Shared pieces of the end-to-end tests: the rig (tests/k8s/rig.py), pods as users write them,
and the invariants every test checks against the real API server."""
import copy
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from gxtest import Checks  # noqa: E402
from rig import DEMO_NODES, Cluster, histogram_quantile, wait_for  # noqa: E402

NS = "e2e"
ANN = "gpu-extender.io/"
RESERVE_MIB = 512  # sharing.memory_reserve_mib of config/config.json
POOL_KEY = "e2e.gpu-extender.io/pool"
TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def log(msg):
    print(f"[e2e {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def pod(name, limits=None, annotations=None, scheduler="gpu-scheduler", node_selector=None,
        tolerate=True, grace=1):
    """A pod as a user writes it (cf. manifests/examples/): GPU taint tolerated, resources in
    limits, 1 s grace period so deletions finish quickly under the fake kubelet."""
    res = {"cpu": "100m", "memory": "64Mi"}
    res.update(limits or {})
    spec = {"schedulerName": scheduler, "restartPolicy": "Never",
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                            "command": ["sleep", "3600"],
                            "resources": {"limits": res}}]}
    if tolerate:
        spec["tolerations"] = TOLERATE_GPU
    if node_selector:
        spec["nodeSelector"] = node_selector
    md = {"name": name, "namespace": NS, "labels": {"e2e": "true"}}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def exclusive(name, gpus=1, **kw):
    return pod(name, {"nvidia.com/gpu": str(gpus)}, **kw)


def shared(name, slices="1", memory=None, util=None, **kw):
    """Annotation-driven shared pod, set-up A: the virtual resource (ignoredByScheduler)."""
    ann = {ANN + "time-slices": slices}
    if memory:
        ann[ANN + "gpu-memory"] = memory
    if util:
        ann[ANN + "gpu-util"] = util
    return pod(name, {"gpu-extender.io/time-slice": "1"}, annotations=ann, **kw)


def create(c, *pods):
    c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                   "items": list(pods)}))


def get_pods(c, selector="e2e=true"):
    return c.kjson("-n", NS, "get", "pods", "-l", selector)["items"]


def get_pod(c, name):
    return c.kjson("-n", NS, "get", "pod", name)


def wait_bound(c, names, timeout=60):
    """Wait until every pod in @names is bound and Running; returns {name: pod}."""
    names = set(names)

    def done():
        got = {p["metadata"]["name"]: p for p in get_pods(c)}
        ok = {n: got[n] for n in names if n in got and got[n]["spec"].get("nodeName")
              and got[n]["status"].get("phase") == "Running"}
        return ok if len(ok) == len(names) else None
    res = wait_for(done, timeout, interval=0.5)
    if res is None:
        got = {p["metadata"]["name"]: p for p in get_pods(c)}
        missing = sorted(n for n in names if not (n in got and got[n]["spec"].get("nodeName")))
        log(f"not bound after {timeout}s: {missing}")
        for n in missing[:3]:
            log(f"events of {n}: {events(c, n)}")
        return {n: got[n] for n in names if n in got and got[n]["spec"].get("nodeName")}
    return res


def events(c, name):
    evs = c.kjson("-n", NS, "get", "events", "--field-selector",
                  f"involvedObject.name={name}")["items"]
    return [(e.get("reason"), e.get("message")) for e in evs]


def delete_pods(c, selector="e2e=true", wait=True):
    c.kubectl("-n", NS, "delete", "pods", "-l", selector, "--wait=false")
    if wait:
        wait_for(lambda: not get_pods(c, selector), 60, "pods deleted", must=True)


def node_cards(c):
    """{node: {"uuids": [...], "memory_mib": n}} from the dcgm fixture pages the rig serves."""
    import re

    out = {}
    for n in ("a", "b", "c"):
        with open(os.path.join(ROOT, "config", "demo", f"dcgm-gpu-node-{n}.prom")) as f:
            text = f.read()
        uu = {}
        for m in re.finditer(r'gpu="(\d+)",UUID="([^"]+)"', text):
            uu[int(m.group(1))] = m.group(2)
        out[f"gpu-node-{n}"] = [uu[i] for i in sorted(uu)]
    return out


def check_assignment(c, chk, p, want_shared, per_node=False):
    """The annotations and label docs/sharing.md section 3 promises, naming cards of the node
    the pod is bound to. @per_node: a device-plugin time slice, admitted per node (the device
    plugin picks the card), so naming a card is optional."""
    md = p["metadata"]
    name = md["name"]
    ann = md.get("annotations", {})
    node = p["spec"].get("nodeName")
    lim = {}
    for ctr in p["spec"]["containers"]:
        lim.update(ctr.get("resources", {}).get("limits", {}))
    cache = c.__dict__.setdefault("_node_labels", {})
    if node and node not in cache:
        cache[node] = c.kjson("get", "node", node)["metadata"]["labels"]
    labels = cache.get(node, {})
    if "nvidia.com/gpu.shared" in lim or ("nvidia.com/gpu" in lim and labels.get(
            "nvidia.com/gpu.sharing-strategy") == "time-slicing"):
        per_node = True
    chk.eq(md.get("labels", {}).get(ANN + "managed"), "true", f"{name}: managed label")
    uuids = [u for u in ann.get(ANN + "gpu-uuids", "").split(",") if u]
    idx = [i for i in ann.get(ANN + "gpu-index", "").split(",") if i]
    chk.ok((per_node or uuids) and len(uuids) == len(idx),
           f"{name}: gpu-uuids {uuids} and gpu-index {idx}")
    cards = node_cards(c).get(node)
    if cards is not None:
        for u, i in zip(uuids, idx):
            chk.ok(i.isdigit() and int(i) < len(cards) and cards[int(i)] == u,
                   f"{name}: card {i}={u} is a card of its node {node}")
    if want_shared:
        chk.ok(ANN + "time-slices" in ann, f"{name}: time-slices annotation")
    return node, uuids, idx


def ledger_vs_pods(c):
    """(Leases, {node: tenant UIDs}, {node: UIDs of bound, live managed pods})."""
    leases = c.leases()
    pods = [p for p in c.kjson("get", "pods", "-A", "-l", ANN + "managed=true")["items"]
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") not in ("Succeeded", "Failed")]
    want = {}
    for p in pods:
        want.setdefault(p["spec"]["nodeName"], set()).add(p["metadata"]["uid"])
    got = {}
    for node, tenants in leases.items():
        for t in tenants:
            got.setdefault(node, set()).add(t["uid"])
    got = {k: v for k, v in got.items() if v}
    return leases, got, want


def check_pod_claims(c, chk, slots=None):
    """What runs, from the pods' own annotations (not the ledger): no card of a node is named by
    two whole-GPU pods, nor by a whole-GPU pod and a shared one, nor by shared pods with more
    slices than its slots."""
    slots = slots or {}
    claims = {}
    for p in c.kjson("get", "pods", "-A", "-l", ANN + "managed=true")["items"]:
        node = p["spec"].get("nodeName")
        ann = p["metadata"].get("annotations", {})
        if not node or p["metadata"].get("deletionTimestamp") or not ann.get(ANN + "gpu-index"):
            continue
        sl = int(ann.get(ANN + "time-slices", "0") or 0)
        for i in ann[ANN + "gpu-index"].split(","):
            claims.setdefault((node, i), []).append((p["metadata"]["name"], sl))
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels", {})
             for n in c.kjson("get", "nodes")["items"]}
    bad = []
    for (node, i), who in sorted(claims.items()):
        whole = [n for n, sl in who if sl == 0]
        rep = int(nodes.get(node, {}).get("nvidia.com/gpu.replicas", "1") or 1)
        nslots = slots.get(node, rep if rep > 1 else 4)
        if (whole and len(who) > 1) or sum(sl for _, sl in who) > nslots:
            bad.append(f"{node} card {i}: {who}")
    chk.eq(bad, [], "no card is claimed beyond its capacity by the bound pods' annotations")


def check_ledger(c, chk, slots=None):
    """The ledger Leases hold exactly the bound managed pods, every card within its slots and
    memory, exclusive cards never shared. Returns the Leases."""
    leases, got, want = ledger_vs_pods(c)
    chk.eq(got, want, "ledger tenants == bound managed pods, per node")
    check_pod_claims(c, chk, slots)
    slots = slots or {}
    nodes = {n["metadata"]["name"]: n for n in c.kjson("get", "nodes")["items"]}
    for node, tenants in leases.items():
        by_card = {}
        for t in tenants:
            by_card.setdefault(t["card"], []).append(t)
        lab = nodes.get(node, {}).get("metadata", {}).get("labels", {})
        mem = int(lab.get("nvidia.com/gpu.memory", "0") or 0)
        rep = int(lab.get("nvidia.com/gpu.replicas", "1") or 1)
        nslots = slots.get(node, rep if rep > 1 else 4)
        for card, ts in by_card.items():
            if card < 0:  # device-plugin time slices, booked per node
                continue
            ex = [t for t in ts if t["exclusive"]]
            if ex:
                chk.eq(len(ts), 1, f"{node} card {card}: an exclusive holder is alone ({ts})")
                continue
            chk.ok(sum(t["slices"] for t in ts) <= nslots,
                   f"{node} card {card}: {sum(t['slices'] for t in ts)} slices <= {nslots} slots")
            if mem:
                chk.ok(sum(t["memory_mib"] for t in ts) <= mem - RESERVE_MIB,
                       f"{node} card {card}: booked memory within {mem} - {RESERVE_MIB} MiB")
    return leases


def check_no_403(c, chk):
    bad = c.forbidden()
    chk.ok(c.audit_events(), "the audit log saw the extender's ServiceAccount")
    chk.eq(bad, [], "no request of the extender's ServiceAccount was refused (403)")
    bad = c.forbidden("system:serviceaccount:kube-system:gpu-scheduler")
    chk.eq(bad, [], "no request of the gpu-scheduler ServiceAccount was refused (403)")


def pool_node(name, pool):
    """A copy of gpu-node-a (2 whole cards of 4 slots, no time-slicing) named @name in the test
    pool @pool: labelled e2e.gpu-extender.io/pool=@pool and tainted so, so that only the pods
    of the pool (pool_pod) land there."""
    with open(DEMO_NODES) as f:
        src = next(n for n in json.load(f)["items"] if n["metadata"]["name"] == "gpu-node-a")
    n = copy.deepcopy(src)
    n["metadata"]["name"] = name
    n["metadata"]["labels"]["kubernetes.io/hostname"] = name
    n["metadata"]["labels"][POOL_KEY] = pool
    n["spec"]["taints"] = n["spec"].get("taints", []) + [
        {"key": POOL_KEY, "value": pool, "effect": "NoSchedule"}]
    return n


def histo(metrics, name, **labels):
    """(count, mean s, p50 s, p90 s) of histogram @name in parsed /metrics, its series of
    @labels (the quantiles as PromQL's histogram_quantile gives them)."""
    want = set(labels.items())
    buckets, total, count = {}, 0.0, 0.0
    for (m, ls), v in metrics.items():
        if not want <= set(ls):
            continue
        if m == name + "_bucket":
            buckets[float(dict(ls)["le"])] = v  # float("+Inf") is inf
        elif m == name + "_sum":
            total = v
        elif m == name + "_count":
            count = v
    nan = float("nan")
    p50, p90 = histogram_quantile(buckets, 0.5), histogram_quantile(buckets, 0.9)
    return (count, total / max(count, 1), nan if p50 is None else p50,
            nan if p90 is None else p90)


def rig(extender_bin, **kw):
    kw.setdefault("extender_bin", extender_bin)
    return Cluster(**kw).up()


# ----- the invariants every end-to-end test ends with (issue 19) ------------------------------

GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "gpu-extender.io/time-slice")
SETTLE_S = 30  # watch DELETE events free bookings at once; a reconcile pass (2 s) confirms the rest
# A pending pod the filter admits binds within: the requeue poke (1 s after capacity frees), the
# scheduler's longest backoff (podMaxBackoffSeconds, 10 s), a cycle and a bind (httpTimeout 5 s).
PENDING_BOUND_S = 30


def _asks_gpu(p):
    ann = p["metadata"].get("annotations", {})
    if ANN + "time-slices" in ann or ANN + "gpu-milli" in ann:
        return True
    return any(r in (ctr.get("resources", {}).get("limits") or {})
               for ctr in p["spec"].get("containers", []) for r in GPU_RESOURCES)


def _live(p):
    return (not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") not in ("Succeeded", "Failed"))


def _slots(labels):
    rep = int(labels.get("nvidia.com/gpu.replicas", "1") or 1)
    return rep if rep > 1 else 4  # sharing.default_slots of config/config.json


def _used_milli(shares, slots):
    """The ledger's count of a card (gx_ledger_share_used): slot shares round up, milli adds."""
    sl = sum(s for s, m in shares if m == 0)
    return (sl * 1000 + slots - 1) // slots + sum(m for _, m in shares)


def _over_capacity(holders, slots, what):
    """holders: [(name, exclusive, slices, milli)] of one card; a list of what is wrong."""
    whole = [h for h in holders if h[1]]
    if whole and len(holders) > 1:
        return [f"{what}: a whole-GPU holder is not alone: {holders}"]
    used = _used_milli([(h[2], h[3]) for h in holders if not h[1]], slots)
    return [f"{what}: {used} milli booked > 1000: {holders}"] if used > 1000 else []


def bookings(c):
    """(what breaks (a) or (b), the orphan tenants [(node, tenant)] with no live pod).
    (a) every bound managed pod that asks for GPUs has one booking, on its node only, on the
    cards its annotations name; (b) no card over capacity, counted from the pods' annotations
    and from the Leases."""
    leases = c.leases()
    pods = c.kjson("get", "pods", "-A")["items"]
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels", {})
             for n in c.kjson("get", "nodes")["items"]}
    by_uid = {}
    for node, ts in leases.items():
        for t in ts:
            by_uid.setdefault(t["uid"], []).append((node, t))
    live = {p["metadata"]["uid"]: p for p in pods if _live(p)}
    bad, from_pods = [], {}
    for p in live.values():
        md, node = p["metadata"], p["spec"].get("nodeName")
        if not node or md.get("labels", {}).get(ANN + "managed") != "true" or not _asks_gpu(p):
            continue
        name = f"{md['namespace']}/{md['name']}"
        held = by_uid.get(md["uid"], [])
        where = sorted({n for n, _ in held})
        if where != [node]:
            bad.append(f"{name} bound to {node} is booked on {where or 'no node'}")
            continue
        cards = sorted(t["card"] for _, t in held)
        ann = md.get("annotations", {})
        named = sorted(int(i) for i in ann.get(ANN + "gpu-index", "").split(",") if i.isdigit())
        if named and [k for k in cards if k >= 0] != named:
            bad.append(f"{name}: booked cards {cards} != annotated {named}")
        if len(set(cards)) != len(cards):
            bad.append(f"{name}: booked twice on one card {cards}")
        sl = int(ann.get(ANN + "time-slices", "0") or 0)
        milli = int(ann.get(ANN + "gpu-milli", "0") or 0)
        for i in named:
            from_pods.setdefault((node, i), []).append((name, sl == 0 and milli == 0, sl, milli))
    for (node, i), holders in sorted(from_pods.items()):
        bad += _over_capacity(holders, _slots(nodes.get(node, {})), f"pods on {node} card {i}")
    for node, ts in leases.items():
        cards = {}
        for t in ts:
            if t["card"] >= 0:
                cards.setdefault(t["card"], []).append(
                    (t["pod"], t["exclusive"], t["slices"], t.get("milli", 0)))
        for k, holders in sorted(cards.items()):
            bad += _over_capacity(holders, _slots(nodes.get(node, {})), f"Lease of {node} card {k}")
    return bad, [(n, t) for n, ts in leases.items() for t in ts if t["uid"] not in live]


def _filter_admits(c, p, nodes):
    """Nodes the filter of a live replica keeps for pending pod @p, among those it tolerates."""
    ext = next((e["name"] for e in c.extenders if c.alive(f"extender-{e['name']}")), None)
    if ext is None:
        return None
    tol = p["spec"].get("tolerations") or []
    sel = p["spec"].get("nodeSelector") or {}

    def fits(n):
        labels = n["metadata"].get("labels", {})
        if any(labels.get(k) != v for k, v in sel.items()):
            return False
        for t in n["spec"].get("taints") or []:
            if t.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if not any(x.get("operator") == "Exists" and x.get("key") in (None, t["key"])
                       or x.get("key") == t["key"] and x.get("value") == t.get("value")
                       for x in tol):
                return False
        return True
    names = [n["metadata"]["name"] for n in nodes if fits(n)]
    body = json.dumps({"Pod": p, "Nodes": None, "NodeNames": names}).encode()
    import urllib.request
    req = urllib.request.Request(c.extender_url(ext, "/gpu-extender/filter"), data=body,
                                 method="POST", headers={"Content-Type": "application/json"})
    ctx = c.ctx if c.extender_spec(ext).get("tls") else None
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        res = json.loads(r.read())
    return res.get("NodeNames") or []


def check_pending(c, chk):
    """(d) no pending pod of the GPU scheduler that the filter admits stays pending longer than
    PENDING_BOUND_S."""
    def stuck():
        nodes = c.kjson("get", "nodes")["items"]
        out = []
        for p in c.kjson("get", "pods", "-A")["items"]:
            if (p["spec"].get("nodeName") or not _live(p)
                    or p["spec"].get("schedulerName") != "gpu-scheduler"):
                continue
            ok = _filter_admits(c, p, nodes)
            if ok:
                out.append(f"{p['metadata']['namespace']}/{p['metadata']['name']} fits {ok[:3]}")
        return out
    if not any(c.alive(f"extender-{e['name']}") for e in c.extenders) or not any(
            c.alive(f"scheduler-{s['name']}") for s in c.schedulers):
        return
    left = wait_for(lambda: not stuck(), PENDING_BOUND_S, interval=2)
    chk.ok(left, f"no pending pod the filter admits waits over {PENDING_BOUND_S} s: "
           f"{'' if left else stuck()}")


def check_invariants(c, chk):
    """The invariants after every end-to-end test (issue 19), once the watch and a reconcile
    pass had their time (SETTLE_S): (a) and (b) by bookings, (c) no booking or reservation
    without a live pod, (d) by check_pending. A bind that failed uncertain keeps its booking
    until the pod shows where it went, so a pod bound elsewhere meanwhile holds a second
    booking until the reconciler reads it there: settled, never; over capacity, never."""
    if not c.alive("kube-apiserver"):
        return
    log("invariants: bookings, capacity, orphans, pending pods")
    wait_for(lambda: bookings(c) == ([], []), SETTLE_S, interval=2)
    bad, orphans = bookings(c)
    chk.eq(bad, [], "every bound pod booked once on its cards; no card over capacity")
    chk.eq([f"{n}: {t['pod']} ({t['state']})" for n, t in orphans], [],
           f"no booking without a live pod after {SETTLE_S} s")
    check_pending(c, chk)
    check_holds(c, chk)


def check_holds(c, chk):
    """A booking shown for a bind in flight ends with its bind: at most one per bind running or
    waiting (one that outlived its bind showed its pod on that node for good)."""
    for e in c.extenders:
        if not c.alive(f"extender-{e['name']}"):
            continue
        m = {}
        for (name, _), v in c.extender_metrics(e["name"]).items():
            m[name] = m.get(name, 0) + v
        shown = m.get("gpu_extender_binds_shown", 0)
        busy = m.get("gpu_extender_binds_running", 0) + m.get("gpu_extender_binds_waiting", 0)
        chk.ok(shown <= busy, f"extender-{e['name']}: {shown:g} bookings shown for {busy:g} "
               "binds in flight")


def finish(c, chk, tail=3000):
    """The end of every end-to-end test: the invariants, the extenders' and schedulers' log
    tails when a check failed, then the rig down (kept for a look when a check failed)."""
    try:
        check_invariants(c, chk)
    finally:
        if chk.failed:
            for n in sorted(c.state["pids"]):
                if n.startswith(("extender-", "scheduler-")):
                    log(f"--- {n} log tail ---\n" + c.logs(n, tail))
        c.down(keep=bool(chk.failed))
