"""Issue 13, against the real API server: quotas per namespace and replicas that see each other.

1. Replicas see each other at once: replica a binds (the bind verb, as kube-scheduler calls it),
   replica b's filter must reflect the booking through its Lease watch; the time from a's bind
   answer to b's first filter that reflects it is measured (goal < 1 s on loopback).
2. The extender's quota (quotas.milli_gpus): shared pods of namespace e2e bind up to its limit;
   the next stays Pending with "namespace GPU share quota exceeded" in its FailedScheduling
   event; raising the limit in the config file (live reload) lets it bind; /metrics and explain
   show the namespace's usage.
3. A ResourceQuota on requests.gpu-extender.io/time-slice: the API server itself refuses a pod
   over the quota at creation (the rig has no kube-controller-manager, so the test plays the
   quota controller once and writes the quota's status.hard).
"""
import json
import re
import statistics
import sys
import time
import urllib.request

from e2e import (NS, Checks, finish, check_no_403, create, delete_pods, events, get_pod, log, pod, rig,
                 shared, wait_bound, wait_for)

chk = Checks("e2e_quota")
LIMIT = 1000  # milli-GPU of namespace e2e: four 1-slice pods on 4-slot cards


def post(c, name, path, body):
    req = urllib.request.Request(c.extender_url(name, path), data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        raw = r.read().decode()
    return json.loads(raw) if raw.startswith("{") else raw


def filter_reason(c, name, p, node):
    res = post(c, name, "/gpu-extender/filter", {"Pod": p, "Nodes": None, "NodeNames": [node]})
    return (res.get("FailedNodes") or {}).get(node) or (res.get("FailedAndUnresolvableNodes") or {}).get(node)


def metrics(c, name="a"):
    with urllib.request.urlopen(c.extender_url(name, "/metrics"), timeout=5) as r:
        return r.read().decode()


def set_quota(c, milli):
    path = c.path("extender-a.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg.setdefault("quotas", {})["milli_gpus"] = {NS: milli}
    with open(path + ".tmp", "w") as f:
        json.dump(cfg, f, indent=1)
    import os
    os.replace(path + ".tmp", path)


# replicas that decide each for itself (replicas.forward off): b sees a's bookings only in the ledger
c = rig(sys.argv[1], extenders=[{"name": "a", "overrides": {"quotas.milli_gpus": {NS: LIMIT},
                                                            "replicas.forward": False}},
                                {"name": "b", "overrides": {"quotas.milli_gpus": {NS: LIMIT},
                                                            "replicas.forward": False,
                                                            "ledger.sync_interval_s": 3600}}])
try:
    # 1. Replica a books, replica b's filter reflects it. Pods of a scheduler that does not exist,
    # so only these direct calls place them. Node A's card 1 has 4 slots: a 4-slice pod fills it.
    lat = []
    for i in range(5):
        fill = shared(f"fill-{i}", slices="4", scheduler="nobody")
        probe = shared(f"probe-{i}", scheduler="nobody")
        create(c, fill)
        fill = get_pod(c, f"fill-{i}")
        probe["metadata"]["uid"] = f"probe-uid-{i}"
        wait_for(lambda: filter_reason(c, "b", probe, "gpu-node-a") is None, 30, "node A free on b", must=True)
        res = post(c, "a", "/gpu-extender/bind", {"PodName": fill["metadata"]["name"],
                                                    "PodNamespace": NS,
                                                    "PodUID": fill["metadata"]["uid"],
                                                    "Node": "gpu-node-a"})
        t_bound = time.monotonic()
        chk.eq(res, {"Error": ""}, f"replica a binds fill-{i}")
        seen = wait_for(lambda: filter_reason(c, "b", probe, "gpu-node-a"), 30, interval=0.001)
        lat.append((time.monotonic() - t_bound) * 1000)
        chk.eq(seen, "no GPU time slot available", f"replica b's filter sees fill-{i}")
        c.kubectl("-n", NS, "delete", "pod", f"fill-{i}", "--wait=false")
    lat.sort()
    log(f"bind on a -> b's filter reflects it, ms: {['%.1f' % x for x in lat]} "
        f"median {statistics.median(lat):.1f} max {max(lat):.1f}")
    chk.ok(max(lat) < 1000, f"within a second on loopback (max {max(lat):.1f} ms)")
    delete_pods(c)
    wait_for(lambda: not c.leases().get("gpu-node-a"), 60, "the fill pods released", must=True)

    # 2. The extender's quota.
    names = [f"q-{i}" for i in range(4)]
    create(c, *[shared(n) for n in names])
    got = wait_bound(c, names)
    chk.eq(sorted(got), names, f"four 1-slice pods bind within {LIMIT} milli-GPU")
    m = metrics(c)
    chk.ok(re.search(r'^gpu_extender_namespace_booked_milli_gpus\{tenant_namespace="%s"\} %d$' % (NS, LIMIT),
                     m, re.M), "/metrics: the namespace holds its whole quota")
    chk.ok(re.search(r'^gpu_extender_namespace_quota_milli_gpus\{tenant_namespace="%s"\} %d$' % (NS, LIMIT),
                     m, re.M), "/metrics: and shows the limit")
    create(c, shared("q-over"))
    time.sleep(6)
    chk.ok(not get_pod(c, "q-over")["spec"].get("nodeName"), "the fifth stays Pending")
    evs = events(c, "q-over")
    chk.ok(any(r == "FailedScheduling" and "namespace GPU share quota exceeded" in (m or "")
               for r, m in evs), f"its event says why ({evs[-1:]})")
    text = post(c, "a", "/debug/explain?format=text", get_pod(c, "q-over"))
    chk.ok(f"namespace {NS}: {LIMIT}/{LIMIT} milli-GPU" in text, "explain shows usage and limit")
    set_quota(c, LIMIT + 250)
    chk.ok(wait_for(lambda: re.search(r'^gpu_extender_namespace_quota_milli_gpus\{tenant_namespace="%s"\} %d$'
                                      % (NS, LIMIT + 250), metrics(c), re.M), 15),
           "the raised quota is live after a reload")
    c.kubectl("label", "node", "gpu-node-a", "e2e-quota=raised", "--overwrite")
    got = wait_bound(c, ["q-over"], timeout=90)
    chk.ok("q-over" in got, "the Pending pod binds once its namespace has room")
    delete_pods(c)

    # 3. ResourceQuota on the virtual resource, enforced by the API server at creation.
    rq = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "slices", "namespace": NS},
          "spec": {"hard": {"requests.gpu-extender.io/time-slice": "2"}}}
    st, obj = c.api("POST", f"/api/v1/namespaces/{NS}/resourcequotas", rq)
    chk.ok(st == 201, f"ResourceQuota created ({st})")
    obj["status"] = {"hard": rq["spec"]["hard"], "used": {"requests.gpu-extender.io/time-slice": "0"}}
    st, _ = c.api("PUT", f"/api/v1/namespaces/{NS}/resourcequotas/slices/status", obj)
    chk.ok(st == 200, f"its status set as the quota controller would ({st})")
    for n in ("rq-1", "rq-2"):
        st, _ = c.api("POST", f"/api/v1/namespaces/{NS}/pods", shared(n))
        chk.eq(st, 201, f"{n} admitted within the ResourceQuota")
    st, res = c.api("POST", f"/api/v1/namespaces/{NS}/pods", shared("rq-3"))
    msg = res.get("message", "") if isinstance(res, dict) else str(res)
    chk.eq(st, 403, "the third is refused by the API server")
    chk.ok("exceeded quota: slices" in msg and "requests.gpu-extender.io/time-slice" in msg,
           f"with the quota's name and resource ({msg})")
    plain = pod("rq-plain", tolerate=False)
    st, _ = c.api("POST", f"/api/v1/namespaces/{NS}/pods", plain)
    chk.eq(st, 201, "a pod without the resource is not affected")
    c.api("DELETE", f"/api/v1/namespaces/{NS}/resourcequotas/slices")
    delete_pods(c)
    check_no_403(c, chk)
finally:
    finish(c, chk)
chk.done()
