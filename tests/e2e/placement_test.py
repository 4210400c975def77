"""Real kube-apiserver + kube-scheduler (shipped configuration) + gpu-extender under its shipped
RBAC: every kind of GPU pod docs/sharing.md describes is placed by the scheduler and bound through
the extender's bind verb, with the promised annotations, label and ledger; a pod that fits
nowhere stays Pending with the extender's reasons in its FailedScheduling event; pods without a
managed resource never reach the extender."""
import copy
import json
import re
import sys

from e2e import (NS, Checks, finish, check_assignment, check_ledger, check_no_403, create, delete_pods,
                 events, exclusive, get_pod, get_pods, log, node_cards, pod, rig, shared, wait_bound,
                 wait_for)
from rig import DEMO_NODES

chk = Checks("e2e_placement")


def renamed_node():
    """gpu-node-e: node C's 2 cards with a device plugin using renameByDefault, so it advertises
    nvidia.com/gpu.shared = cards x replicas (docs/sharing.md section 2)."""
    with open(DEMO_NODES) as f:
        src = next(n for n in json.load(f)["items"] if n["metadata"]["name"] == "gpu-node-c")
    n = copy.deepcopy(src)
    n["metadata"]["name"] = "gpu-node-e"
    n["metadata"]["labels"]["kubernetes.io/hostname"] = "gpu-node-e"
    for k in ("capacity", "allocatable"):
        n["status"][k].pop("nvidia.com/gpu")
        n["status"][k]["nvidia.com/gpu.shared"] = "8"
    return n


c = rig(sys.argv[1], extra_nodes=[renamed_node()])
try:
    nnodes = len(c.node_names)

    # 1. No managed resource: placed by gpu-scheduler without one call to the extender.
    before = c.requests_by_verb("a")
    create(c, pod("plain", tolerate=False))
    got = wait_bound(c, ["plain"])
    chk.eq(got.get("plain", {}).get("spec", {}).get("nodeName"), "cpu-node-d",
           "a pod without GPU requests lands on the untainted CPU node")
    after = c.requests_by_verb("a")
    for verb in ("filter", "prioritize", "bind"):
        chk.eq(after.get(verb, 0) - before.get(verb, 0), 0,
               f"no {verb} request for a pod without a managed resource")
    chk.ok("gpu-extender.io/managed" not in got.get("plain", {}).get("metadata", {}).get("labels", {}),
           "the extender did not touch the plain pod")
    # ... but its requests are counted on its node (kubernetes.watch_all_pods, shipped RBAC)
    other = lambda: c.extender_metrics("a").get(("gpu_extender_other_pods_cpu_cores", frozenset()), 0)
    chk.ok(wait_for(lambda: other() >= 0.1, 10),
           f"the all-pods watch counts the plain pod's CPU ({other()} cores)")

    # 2. Whole GPUs. Of node B's 8 cards, 0-3 run a training job, 5 shows XID 13 and 6 runs a
    # web UI (config/demo/dcgm-gpu-node-b.prom): 2 GPUs fit only there, on cards 4 and 7.
    CARDS_B = node_cards(c)["gpu-node-b"]
    create(c, exclusive("ex-2", 2))
    got = wait_bound(c, ["ex-2"])
    if chk.ok("ex-2" in got, "2-GPU pod bound"):
        node, uuids, idx = check_assignment(c, chk, got["ex-2"], want_shared=False)
        chk.eq(node, "gpu-node-b", "2 GPUs fit only the 8-card node")
        chk.eq(sorted(uuids), sorted([CARDS_B[4], CARDS_B[7]]), "the two idle healthy cards of node B")
    create(c, exclusive("ex-1", 1))
    got = wait_bound(c, ["ex-1"])
    if chk.ok("ex-1" in got, "1-GPU pod bound"):
        node, uuids, _ = check_assignment(c, chk, got["ex-1"], want_shared=False,
                                          per_node=got["ex-1"]["spec"]["nodeName"] == "gpu-node-c")
        chk.ok(node in ("gpu-node-a", "gpu-node-c"), f"1 GPU left only on node A or time-sliced C ({node})")
    after2 = c.requests_by_verb("a")
    chk.ok(after2.get("bind", 0) - after.get("bind", 0) >= 2, "binds went through the extender")

    # 3. Annotation-driven sharing: three 6 GiB slices (manifests/examples/pods-shared.yaml).
    create(c, *[shared(f"sh-{i}", "1", "6Gi", "20") for i in range(3)])
    got = wait_bound(c, [f"sh-{i}" for i in range(3)])
    chk.eq(len(got), 3, "shared pods bound")
    for p in got.values():
        node, uuids, _ = check_assignment(c, chk, p, want_shared=True)
        chk.eq(len(uuids), 1, f"{p['metadata']['name']}: one card")
        chk.eq(p["metadata"]["annotations"].get("gpu-extender.io/time-slices"), "1",
               f"{p['metadata']['name']}: slots booked")

    # 4. Device-plugin time-slicing: nvidia.com/gpu on a time-slicing node, nvidia.com/gpu.shared.
    create(c, exclusive("ts-same", 1, node_selector={"nvidia.com/gpu.sharing-strategy": "time-slicing"}),
           pod("ts-shared", {"nvidia.com/gpu.shared": "1"}))
    got = wait_bound(c, ["ts-same", "ts-shared"])
    chk.eq(sorted(got), ["ts-same", "ts-shared"], "device-plugin time-slice pods bound")
    if "ts-same" in got:
        chk.ok(got["ts-same"]["spec"]["nodeName"] in ("gpu-node-c", "gpu-node-e"),
               f"ts-same on a time-slicing node ({got['ts-same']['spec']['nodeName']})")
        check_assignment(c, chk, got["ts-same"], want_shared=False, per_node=True)
    if "ts-shared" in got:
        chk.eq(got["ts-shared"]["spec"]["nodeName"], "gpu-node-e",
               "nvidia.com/gpu.shared only fits the node advertising it")
        check_assignment(c, chk, got["ts-shared"], want_shared=False, per_node=True)

    wait_for(lambda: all(t["state"] == "bound" for ts in c.leases().values() for t in ts), 15)
    check_ledger(c, chk)

    # 5. Fits nowhere: 30 GiB on a 24 GiB card. Pending, and the event carries the extender's
    # reasons as the scheduler aggregates them: no card could ever hold it, so it says so
    # (unresolvable: no preemption is tried for it) instead of "insufficient GPU memory".
    create(c, shared("too-big", "1", "30Gi"))

    def failed():
        for reason, msg in events(c, "too-big"):
            if reason == "FailedScheduling" and "request larger than any GPU" in (msg or ""):
                return msg
        return None
    msg = wait_for(failed, 60, interval=0.5)
    log(f"FailedScheduling: {msg}")
    chk.ok(msg and msg.startswith(f"0/{nnodes} nodes are available: "),
           f"aggregated message over all {nnodes} nodes: {msg!r}")
    chk.ok(msg and re.search(r"\b\d+ request larger than any GPU of the node", msg),
           f"extender reason counted in the event: {msg!r}")
    p = get_pod(c, "too-big")
    chk.ok(not p["spec"].get("nodeName") and p["status"].get("phase") == "Pending", "too-big stays Pending")
    cond = [x for x in p["status"].get("conditions", []) if x["type"] == "PodScheduled"]
    chk.ok(cond and cond[0]["status"] == "False" and cond[0].get("reason") == "Unschedulable",
           f"PodScheduled=False/Unschedulable ({cond})")

    # 6. Deleting pods frees their bookings: the ledger follows the API server.
    c.kubectl("-n", NS, "delete", "pod", "too-big", "sh-0", "ex-2", "--wait=false")
    wait_for(lambda: not any(p["metadata"]["name"] in ("too-big", "sh-0", "ex-2") for p in get_pods(c)),
             30, "pods deleted")
    freed = wait_for(lambda: not any(t["pod"].endswith(("/sh-0", "/ex-2"))
                                     for ts in c.leases().values() for t in ts), 20, interval=0.5)
    chk.ok(freed, "deleted pods' bookings leave the ledger")
    check_ledger(c, chk)

    # The freed cards are usable again: 2 GPUs fit node B once more.
    create(c, exclusive("ex-2b", 2))
    got = wait_bound(c, ["ex-2b"])
    chk.eq(got.get("ex-2b", {}).get("spec", {}).get("nodeName"), "gpu-node-b", "freed cards rebound")
    wait_for(lambda: all(t["state"] == "bound" for ts in c.leases().values() for t in ts), 15)
    check_ledger(c, chk)

    delete_pods(c)
    wait_for(lambda: not any(c.leases().values()), 20, interval=0.5)
    chk.ok(not any(c.leases().values()), "every booking released after all pods are gone")
    check_no_403(c, chk)
    chk.ok(c.alive("extender-a"), "extender still running (no sanitizer abort)")
finally:
    finish(c, chk)
chk.done()
