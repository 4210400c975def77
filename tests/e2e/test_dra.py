"""Issue 13: cards claimed through DRA count as occupied, against the real API server. A
DeviceClass, a ResourceSlice and allocated ResourceClaims are written the way a DRA driver and
kube-scheduler's DRA plugin write them (the slice by the driver, status.allocation through the
status subresource); the extender, under its shipped RBAC (get/list/watch only), must never place
a whole-GPU pod on a claimed card, show the card as claimed, count a device shared by two claims
once, and free the card when the claims go."""
import json
import re
import sys
import time
import urllib.request

from e2e import (NS, Checks, finish, check_assignment, check_no_403, create, events, exclusive, get_pod,
                 log, node_cards, rig, wait_bound, wait_for)

chk = Checks("e2e_dra")
DRIVER = "gpu.nvidia.com"
NODE = "gpu-node-b"  # 8 cards: 0-3 train, 5 XID, 6 web UI; 4 and 7 are the only free pair
RES = "/apis/resource.k8s.io/v1"


def ok(st, what):
    chk.ok(st in (200, 201), f"{what} (HTTP {st})")


def claim(c, name, device):
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu",
                                               "exactly": {"deviceClassName": DRIVER}}]}}}
    st, obj = c.api("POST", f"{RES}/namespaces/{NS}/resourceclaims", body)
    ok(st, f"claim {name} created")
    # what the scheduler's DRA plugin writes when it allocates
    obj["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": NODE, "device": device}]}}}
    st, obj = c.api("PUT", f"{RES}/namespaces/{NS}/resourceclaims/{name}/status", obj)
    ok(st, f"claim {name} allocated {device} ({obj if st >= 300 else ''})")


def metrics(c):
    with urllib.request.urlopen(c.extender_url("a", "/metrics"), timeout=5) as r:
        return r.read().decode()


def metric(c, pattern):
    m = re.search(r"^%s (\S+)$" % pattern, metrics(c), re.M)
    return float(m.group(1)) if m else None


def explain(c, pod):
    req = urllib.request.Request(c.extender_url("a", "/debug/explain?format=text"),
                                 data=json.dumps(pod).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


c = rig(sys.argv[1])
try:
    cards = node_cards(c)[NODE]
    st, _ = c.api("POST", f"{RES}/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    ok(st, "DeviceClass created")
    st, _ = c.api("POST", f"{RES}/resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{NODE}-{DRIVER}"},
        "spec": {"driver": DRIVER, "nodeName": NODE,
                 "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": f"gpu-{i}", "attributes": {
                     "uuid": {"string": u}, "index": {"int": i}}} for i, u in enumerate(cards)]}})
    ok(st, "ResourceSlice published")

    # 1. Card 4 claimed: a 2-GPU pod for node B does not fit (its only free pair was 4 and 7).
    claim(c, "train", "gpu-4")
    got = wait_for(lambda: metric(c, "gpu_extender_dra_claimed_cards") == 1.0, 20)
    chk.ok(got, "the extender sees the claimed card (gpu_extender_dra_claimed_cards 1)")
    chk.ok(re.search(r'^gpu_extender_card_dra_claimed\{node="%s",gpu="4",UUID="%s"\} 1$'
                     % (NODE, re.escape(cards[4])), metrics(c), re.M),
           "the per-card series names the claimed card")
    pod2 = exclusive("ex-2", 2, node_selector={"kubernetes.io/hostname": NODE})
    create(c, pod2)
    time.sleep(8)
    p = get_pod(c, "ex-2")
    chk.ok(not p["spec"].get("nodeName"), "a 2-GPU pod stays Pending while card 4 is claimed")
    evs = events(c, "ex-2")
    # node B's reason is the one that took the most cards (busy 0-3 and 6), the claim's is
    # no_slot; either way the rejection is the extender's
    reasons = ("no GPU time slot available", "too few usable GPUs", "GPU utilization above limit")
    chk.ok(any(r == "FailedScheduling" and any(x in (m or "") for x in reasons) for r, m in evs),
           f"the event carries the extender's reason ({evs[-1:]})")
    text = explain(c, pod2)
    chk.ok(re.search(r"card 4 .*\[unusable: claimed\] \[DRA claim %s/train\]" % NS, text),
           "explain shows card 4 claimed, with its claim")

    # 2. A second claim on the same device: still one card.
    claim(c, "infer", "gpu-4")
    time.sleep(1)
    chk.eq(metric(c, "gpu_extender_dra_claimed_cards"), 1.0, "a device in two claims counts once")

    # 3. Both claims released: the card is free and the pod takes cards 4 and 7.
    for n in ("train", "infer"):
        st, _ = c.api("DELETE", f"{RES}/namespaces/{NS}/resourceclaims/{n}")
        ok(st, f"claim {n} deleted")
    chk.ok(wait_for(lambda: metric(c, "gpu_extender_dra_claimed_cards") == 0.0, 20),
           "released claims free the card")
    # the scheduler retries unschedulable pods on cluster events: give it one
    c.kubectl("label", "node", NODE, "e2e-dra=released", "--overwrite")
    got = wait_bound(c, ["ex-2"], timeout=90)
    if chk.ok("ex-2" in got, "the pending 2-GPU pod binds once the claims are gone"):
        node, uuids, _ = check_assignment(c, chk, got["ex-2"], want_shared=False)
        chk.eq(node, NODE, "on node B")
        chk.eq(sorted(uuids), sorted([cards[4], cards[7]]), "on cards 4 and 7")

    check_no_403(c, chk)
    log(f"checks: {chk.passed} passed, {chk.failed} failed")
finally:
    finish(c, chk)
chk.done()
