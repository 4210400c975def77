"""Issue 19, replicas behind a round-robin Service: with replicas.forward one replica holds the
leader Lease and answers kube-scheduler's calls; the others forward theirs to it, so every
decision sees every bind in flight. Checked on the fake API server with two real replicas:
who leads, that a follower's filter, bind and debug explains are the leader's, that a forwarded call is never
forwarded again, that a follower answers itself when the leader is gone and takes the Lease a
lease period later, that only the leader reconciles the Leases, that a bind in flight when the leader died is finished by the follower
(bound and booked once), that a restarted replica follows, that a leader stopping hands the Lease
back at once (also when its last renewal landed but lost its answer), and that a replica that cannot name its own address refuses to start."""
import copy
import json
import os
import subprocess
import sys
import threading
import time

from gxtest import (Checks, Extender, FakeApiServer, bind_args, free_port, live_overrides,
                    metric_value, shared_pod, stop_all, wait_for)

NODE = "gpu-node-a"
LEASE_S = 2
c = Checks("forward_live")
api = FakeApiServer()
exts = []


def metric(ext, name, labels=""):
    return metric_value(ext.request("GET", "/metrics")[1].decode(), name + labels)


def replica(port=None, **extra):
    ext = Extender(sys.argv[1], overrides=live_overrides(
        api, **{"replicas.forward": True, "replicas.lease_s": LEASE_S,
                "server.debug_endpoints": True, **extra}))
    if port is not None:
        ext.port = ext.cfg["server"]["port"] = port
    ext.cfg["replicas"]["advertise_url"] = ext.url("")
    ext.write_config(ext.cfg)
    exts.append(ext)
    return ext.start()


def plant_orphan(node, like):
    """A copy of tenant @like in @node's Lease for a pod nobody knows, 10 min old."""
    lease = copy.deepcopy(api.state()["leases"][f"gpu-extender/gpu-extender-{node}"])
    ann = lease["metadata"]["annotations"]
    doc = json.loads(ann["gpu-extender.io/tenants"])
    orphan = dict(next(t for t in doc["tenants"] if t["uid"] == like))
    orphan.update(uid="uid-orphan", pod="team-a/orphan", since_ms=orphan["since_ms"] - 600000)
    doc["tenants"].append(orphan)
    ann["gpu-extender.io/tenants"] = json.dumps(doc)
    api.control("POST", "/control/leases", lease)


def booked_uids():
    return [t.get("uid") for t in api.lease_tenants(NODE)]


def lease_holder():
    for key, obj in (api.control("GET", "/control/state")[1].get("leases") or {}).items():
        if key.endswith("gpu-extender-leader"):
            return (obj["metadata"].get("annotations") or {}).get("gpu-extender.io/leader")
    return None


def filter_call(ext, pod, headers=None):
    st, body, _ = ext.request("POST", ext.verb("filter"),
                              {"Pod": pod, "Nodes": None, "NodeNames": [NODE]}, headers=headers)
    return st, body


LEADER_PATH = "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases/gpu-extender-leader"


def stop_during_renewal(leader, follower, fault):
    """Stop @leader while the fake holds the next renewal of its Lease with @fault: the seconds
    until @follower leads (None: not within three lease periods)."""
    sent = len(api.state()["request_log"])
    api.control("POST", "/control/fault", {**fault, "count": 1, "method": "PUT",
                                           "path_prefix": LEADER_PATH})
    c.ok(wait_for(lambda: any(r["method"] == "PUT" and r["path"].startswith(LEADER_PATH)
                              for r in api.state()["request_log"][sent:]), 5),
         f"a renewal of the leader's Lease is on its way ({fault['kind']})")
    t0 = time.time()
    leader.stop()
    return wait_for(lambda: metric(follower, "gpu_extender_leader") == 1 and time.time() - t0,
                    LEASE_S * 3)


try:
    a = replica(**{"ledger.reconcile_interval_s": 3600})  # the leader's pass is an hour away
    c.ok(wait_for(lambda: metric(a, "gpu_extender_leader") == 1, 5),
         "the first replica takes the leader Lease")
    c.eq(lease_holder(), a.url(""), "the Lease names it by its URL")
    b = replica()
    time.sleep(LEASE_S / 2)
    c.eq(metric(b, "gpu_extender_leader"), 0, "the second follows")
    c.eq(lease_holder(), a.url(""), "and leaves the Lease alone")

    pods = [shared_pod(f"p{i}", f"uid-p{i}") for i in range(3)]
    for p in pods:
        api.control("POST", "/control/pods", p)
    a_filters = metric(a, "gpu_extender_requests_total", '{verb="filter",code="2xx"}') or 0
    st, via_b = filter_call(b, pods[0])
    st_a, direct = filter_call(a, pods[0])
    c.ok(st == 200 and via_b == direct, "a filter sent to the follower is the leader's answer")
    c.eq(metric(a, "gpu_extender_requests_total", '{verb="filter",code="2xx"}'), a_filters + 2,
         "the leader answered both")
    c.eq(metric(b, "gpu_extender_forwarded_total"), 1, "the follower counts one forwarded call")
    st, res = b.post_json(b.verb("bind"), bind_args(pods[0], NODE))
    c.eq((st, res), (200, {"Error": ""}), "a bind sent to the follower lands")
    c.eq(metric(a, "gpu_extender_binds_total", '{outcome="bound"}'), 1, "the leader made it")
    c.eq(metric(b, "gpu_extender_binds_total", '{outcome="bound"}'), 0, "the follower did not")
    plant_orphan(NODE, "uid-p0")
    time.sleep(3)  # three of the follower's 1 s reconcile periods
    c.ok("uid-orphan" in booked_uids(), "a follower reconciles nothing: the orphan stays")

    st, _ = filter_call(b, pods[1], headers={"X-Gpu-Extender-Forwarded": "1"})
    c.eq(st, 200, "a call already forwarded is answered where it arrives")
    c.eq(metric(b, "gpu_extender_forwarded_total"), 2,
         "and is not forwarded again (the filter and the bind before)")

    # an operator's explain is the leader's too: what its filter and preempt would answer
    fwd = metric(b, "gpu_extender_forwarded_total")
    for query, kind in (("", "application/json"), ("?format=text", "text/plain")):
        st_b, via_b, hdr = b.request("POST", "/debug/explain" + query, pods[2])
        st_a, direct, _ = a.request("POST", "/debug/explain" + query, pods[2])
        c.ok(st_b == 200 and via_b == direct and hdr.get("Content-Type", "").startswith(kind),
             f"an explain{query} sent to the follower is the leader's answer, as {kind}")
    st_b, via_b, _ = b.request("POST", "/debug/preempt", pods[2])
    c.eq(st_b, a.request("POST", "/debug/preempt", pods[2])[0], "so is a preempt explain")
    c.eq(metric(b, "gpu_extender_forwarded_total"), fwd + 3, "all three forwarded")

    # the leader dies while its Binding's answer is held: the follower finishes that bind itself
    api.control("POST", "/control/fault", {
        "kind": "slow", "delay_s": 3, "count": 1,
        "path_prefix": "/api/v1/namespaces/team-a/pods/p1/binding"})
    answer = {}
    t = threading.Thread(target=lambda: answer.update(
        bind=b.post_json(b.verb("bind"), bind_args(pods[1], NODE))))
    t.start()
    wait_for(lambda: any(r["path"].startswith("/api/v1/namespaces/team-a/pods/p1/binding")
                     for r in api.state()["request_log"]), 5)
    a.stop(sig=9)
    t.join(15)
    c.eq(answer.get("bind"), (200, {"Error": ""}),
         "a bind in flight when the leader died is finished by the follower")
    c.eq(metric(b, "gpu_extender_forward_fallbacks_total"), 1, "and counted as a fallback")
    p1 = [r for r in api.state()["bindings"] if "p1" in json.dumps(r)]
    c.eq([r.get("code") for r in p1].count(201), 1, f"bound once ({p1})")
    booked = [t2.get("uid") for t2 in api.lease_tenants(NODE)]
    c.eq(booked.count("uid-p1"), 1, f"and booked once ({booked})")
    st, _ = filter_call(b, pods[2])
    c.eq(st, 200, "the leader killed: the follower answers itself")
    c.eq(metric(b, "gpu_extender_forward_fallbacks_total"), 2, "and counts the fallback")
    t0 = time.time()
    took = wait_for(lambda: metric(b, "gpu_extender_leader") == 1 and time.time() - t0,
                    LEASE_S * 3)
    c.ok(took and took <= LEASE_S * 1.5 + 0.5,
         f"it takes the Lease a lease period after the last renewal ({took} s)")
    c.eq(lease_holder(), b.url(""), "the Lease names the follower now")
    c.ok(wait_for(lambda: "uid-orphan" not in booked_uids(), 6),
         f"leading, it reconciles: the orphan goes ({booked_uids()})")

    a2 = replica(port=a.port)
    time.sleep(LEASE_S / 2)
    c.eq(metric(a2, "gpu_extender_leader"), 0, "the killed replica, restarted, follows")
    made = metric(b, "gpu_extender_binds_total", '{outcome="bound"}')
    st, res = a2.post_json(a2.verb("bind"), bind_args(pods[2], NODE))
    c.eq((st, res), (200, {"Error": ""}), "and forwards its binds to the new leader")
    c.eq(metric(b, "gpu_extender_binds_total", '{outcome="bound"}'), made + 1,
         "which made that one")

    # stopped while a renewal of its Lease is slow: the hand-back waits for it, shutdown for both
    took = stop_during_renewal(b, a2, {"kind": "slow", "delay_s": 1})
    c.ok(took and took < LEASE_S, f"a leader stopping hands the Lease back: taken in {took} s")

    # stopped while a renewal that landed lost its answer: the hand-back reads the Lease again
    b2 = replica()
    c.ok(wait_for(lambda: metric(b2, "gpu_extender_leader") == 0 and
                  metric(a2, "gpu_extender_leader") == 1, LEASE_S * 3), "a new replica follows")
    took = stop_during_renewal(a2, b2, {"kind": "drop", "hold_s": 0.3})
    c.ok(took and took < LEASE_S * 0.75,
         f"a leader whose last renewal lost its answer hands the Lease back: taken in {took} s")

    cfg = dict(a2.cfg)
    cfg["replicas"] = {"forward": True}
    cfg["server"] = dict(cfg["server"], port=free_port())
    bad = os.path.join(a2.dir, "no-address.json")
    a2.config_path, saved = bad, a2.config_path
    a2.write_config(cfg)
    a2.config_path = saved
    env = {k: v for k, v in os.environ.items() if k != "POD_IP"}
    r = subprocess.run([sys.argv[1], "--config", bad], env=env, capture_output=True, text=True,
                       timeout=30)
    c.ok(r.returncode != 0 and "replicas.advertise_url" in r.stderr,
         f"without its own address a replica refuses to start: exit {r.returncode}, "
         f"{r.stderr.strip().splitlines()[-1:]}")
finally:
    stop_all(c, exts, api)
c.done()
