"""Integration test of issue 2: the real binary on the demo cluster, every
endpoint, both ExtenderArgs modes, bind, and every bad input."""
import copy
import json
import re
import signal
import socket
import sys
import time

from gxtest import Checks, Extender, fixture

c = Checks("serve")
ext = Extender(sys.argv[1], overrides={"server.max_body_bytes": 200000}).start()

POD = fixture("pod-gpu.json")
NAMES = ["gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-d"]


def pod_with(name, uid, limits=None, annotations=None):
    p = copy.deepcopy(POD)
    p["metadata"]["name"] = name
    p["metadata"]["uid"] = uid
    p["metadata"]["annotations"] = annotations or {}
    res = p["spec"]["containers"][0]["resources"]
    res["limits"] = dict(limits or {})
    res["requests"] = dict(limits or {})
    return p


def names_args(pod, names=NAMES):
    return {"Pod": pod, "Nodes": None, "NodeNames": list(names)}


try:
    # -- operational endpoints
    st, body, hdr = ext.request("GET", "/healthz")
    c.eq(st, 200, "healthz status")
    st, body, _ = ext.request("GET", "/readyz")
    c.eq(st, 200, "readyz status")
    st, body, _ = ext.request("GET", "/version")
    ver = json.loads(body)
    c.ok(st == 200 and "version" in ver and "config_hash" in ver, "version document")

    # -- filter, NodeNames mode, the fixture (exclusive 1 GPU)
    args = fixture("extender-filter-args-nodecache.json")
    st, res = ext.post_json(ext.verb("filter"), args)
    c.eq(st, 200, "filter status")
    c.eq(sorted(res.keys()), sorted(["Nodes", "NodeNames", "FailedNodes",
                                     "FailedAndUnresolvableNodes", "Error"]), "filter keys")
    c.eq(res["Error"], "", "filter Error empty")
    c.eq(res["Nodes"], None, "filter Nodes null in NodeNames mode")
    kept = set(res["NodeNames"])
    failed = {**res["FailedNodes"], **res["FailedAndUnresolvableNodes"]}
    c.eq(kept | set(failed), set(args["NodeNames"]), "every node kept or failed")
    c.ok("gpu-node-a" in kept, "gpu-node-a has an idle card for 1 GPU")
    c.ok("gpu-node-b" in kept, "gpu-node-b has idle cards")
    c.ok(all("%" not in r for r in failed.values()), "no % in reasons")

    # -- the CPU-only node is rejected for GPU pods, kept for CPU pods
    st, res = ext.post_json(ext.verb("filter"), names_args(pod_with("g1", "uid-g1", {"nvidia.com/gpu": "1"})))
    c.ok("cpu-node-d" in res["FailedAndUnresolvableNodes"], "cpu node rejected as unresolvable")
    c.eq(res["FailedAndUnresolvableNodes"].get("cpu-node-d"), "node has no GPUs", "cpu node reason")
    st, res = ext.post_json(ext.verb("filter"), names_args(pod_with("cpu", "uid-cpu")))
    c.eq(sorted(res["NodeNames"]), sorted(NAMES), "CPU pod passes every node")

    # -- multi-GPU: 4 GPUs never fit the 2-card nodes
    st, res = ext.post_json(ext.verb("filter"), names_args(pod_with("m4", "uid-m4", {"nvidia.com/gpu": "4"})))
    fails = {**res["FailedNodes"], **res["FailedAndUnresolvableNodes"]}
    c.ok("gpu-node-a" in fails and "gpu-node-c" in fails, "4-GPU pod rejected on 2-card nodes")
    c.eq(fails.get("gpu-node-a"), "too few usable GPUs", "2-card node reason for 4 GPUs")
    # 8 GPUs on the time-sliced node (2 cards x 4 replicas = 8 allocatable) must not fit
    st, res = ext.post_json(ext.verb("filter"), names_args(pod_with("m8", "uid-m8", {"nvidia.com/gpu": "8"})))
    c.ok("gpu-node-c" not in res["NodeNames"], "8-GPU pod not admitted on 2 physical cards")

    # -- the node whose card shows XID errors loses that card: 6 GPUs on node-b
    # (cards 0-3 busy at 96-99 %, card 5 XID 13) cannot fit, the reason names the cards
    st, res = ext.post_json(ext.verb("filter"), names_args(pod_with("m3", "uid-m3", {"nvidia.com/gpu": "3"}), ["gpu-node-b"]))
    fails = {**res["FailedNodes"], **res["FailedAndUnresolvableNodes"]}
    c.ok("gpu-node-b" in fails, "3 GPUs do not fit gpu-node-b (only cards 4 and 7 are usable)")

    # -- full Nodes mode: kept items echoed byte-for-byte
    full = fixture("extender-filter-args.json")
    st, res = ext.post_json(ext.verb("filter"), full)
    c.eq(st, 200, "filter (Nodes mode) status")
    c.eq(res["NodeNames"], None, "NodeNames null in Nodes mode")
    items = res["Nodes"]["items"]
    by_name = {n["metadata"]["name"]: n for n in full["Nodes"]["items"]}
    c.ok(len(items) >= 1, "Nodes mode keeps nodes")
    c.ok(all(i == by_name[i["metadata"]["name"]] for i in items), "kept Node objects unchanged")
    c.eq(set(x["metadata"]["name"] for x in items) | set(res["FailedNodes"]) | set(res["FailedAndUnresolvableNodes"]),
         set(by_name), "every Nodes-mode node kept or failed")

    # -- prioritize, both modes
    for a in (args, full):
        st, res = ext.post_json(ext.verb("prioritize"), a)
        c.eq(st, 200, "prioritize status")
        c.ok(isinstance(res, list) and {h["Host"] for h in res} <= set(NAMES),
             "at most one score per node")
        c.ok(all(set(h) == {"Host", "Score"} and isinstance(h["Score"], int) and 1 <= h["Score"] <= 10
                 for h in res), "scores are integers 1..10: a node scored 0 is left out")

    # -- score.relative: the call's best node gets 10, the worst kept one 0, the
    # order of the rounded scores is kept (the same binary, one key changed)
    rel = Extender(sys.argv[1], overrides={"score.relative": True}).start()
    try:
        for a in (args, full):
            _, absolute = ext.post_json(ext.verb("prioritize"), a)
            st, relative = rel.post_json(rel.verb("prioritize"), a)
            c.eq(st, 200, "relative prioritize status")
            # a node missing from HostPriorityList scored 0
            r = {n: 0 for n in NAMES} | {h["Host"]: h["Score"] for h in relative}
            b = {n: 0 for n in NAMES} | {h["Host"]: h["Score"] for h in absolute}
            c.eq(set(r), set(b), "relative: one score per node")
            c.eq(max(r.values()), 10, f"relative: the best node gets 10 ({r})")
            if len(set(b.values())) > 1:
                c.eq(min(r.values()), 0, f"relative: the worst node gets 0 ({r} vs {b})")
            c.ok(all(b[n] == max(b.values()) for n in r if r[n] == 10),
                 f"relative: the nodes given 10 are the best rounded ones ({r} vs {b})")
    finally:
        rel.cleanup()

    # -- a malformed annotation: every node refused, unresolvably, with the cause in the
    # reason the pod's events show (issue 22), not only in the extender's log
    bad = pod_with("bad-slices", "uid-bad-slices", annotations={"gpu-extender.io/time-slices": "abc"})
    st, res = ext.post_json(ext.verb("filter"), names_args(bad, NAMES))
    why = res.get("FailedAndUnresolvableNodes") or {}
    c.eq(sorted(why), sorted(NAMES), f"a bad request refuses every node unresolvably ({res})")
    c.ok(all(v.startswith("invalid GPU request: gpu-extender.io/time-slices must be")
             for v in why.values()), f"the reason names the annotation ({why})")

    # -- shared pods and bind on gpu-node-a: card 0 is held by a device-plugin pod
    # (vLLM), card 1 is idle with the default 4 slots: exactly 4 are admitted.
    shared = []
    for i in range(9):
        p = pod_with(f"shared-{i}", f"uid-shared-{i}", annotations={"gpu-extender.io/time-slices": "1"})
        shared.append(p)
    bound = 0
    errors = []
    for p in shared:
        st, res = ext.post_json(ext.verb("filter"), names_args(p, ["gpu-node-a"]))
        if "gpu-node-a" not in (res.get("NodeNames") or []):
            errors.append(res["FailedNodes"].get("gpu-node-a"))
            continue
        bind = {"PodName": p["metadata"]["name"], "PodNamespace": p["metadata"]["namespace"],
                "PodUID": p["metadata"]["uid"], "Node": "gpu-node-a"}
        st, res = ext.post_json(ext.verb("bind"), bind)
        c.eq(st, 200, "bind status")
        if res.get("Error", "") == "":
            bound += 1
            st, res2 = ext.post_json(ext.verb("bind"), bind)
            c.eq(res2, {"Error": ""}, "repeated bind returns the same success")
        else:
            errors.append(res["Error"])
    c.eq(bound, 4, "exactly the free slots of gpu-node-a are admitted")
    c.ok(any(e and "no GPU time slot available" in e for e in errors),
         f"over-capacity pods see 'no GPU time slot available' ({errors})")

    # -- bind errors: unknown pod, malformed
    st, res = ext.post_json(ext.verb("bind"), {"PodName": "x", "PodNamespace": "d", "PodUID": "never-seen", "Node": "gpu-node-a"})
    c.ok(st == 200 and res["Error"] != "", "bind of a pod filter never saw fails with Error")
    st, res = ext.post_json(ext.verb("bind"), {"PodName": "x"})
    c.eq(st, 400, "bind with missing fields is 400")

    # -- bad input
    bad = [
        ("malformed JSON", b"{\"Pod\": ", 400),
        ("not an object", b"[1,2]", 400),
        ("missing Pod", json.dumps({"Nodes": None, "NodeNames": ["a"]}).encode(), 400),
        ("Pod wrong type", json.dumps({"Pod": 5, "NodeNames": ["a"]}).encode(), 400),
        ("both Nodes and NodeNames", json.dumps({"Pod": POD, "Nodes": {"items": []}, "NodeNames": []}).encode(), 400),
        ("neither Nodes nor NodeNames", json.dumps({"Pod": POD, "Nodes": None, "NodeNames": None}).encode(), 400),
        ("NodeNames wrong type", json.dumps({"Pod": POD, "NodeNames": "a"}).encode(), 400),
        ("deep nesting", b"[" * 5000 + b"]" * 5000, 400),
        ("invalid UTF-8 in a string", b"{\"Pod\":{\"metadata\":{\"name\":\"\xff\xfe\"}},\"NodeNames\":[]}", None),
    ]
    for what, body, want in bad:
        st, data, _ = ext.request("POST", ext.verb("filter"), body)
        if want is None:
            c.ok(st in (200, 400), f"{what}: answered ({st})")
            continue
        c.eq(st, want, what)
        try:
            c.ok("error" in json.loads(data), f"{what}: JSON error body")
        except ValueError:
            c.ok(False, f"{what}: body is not JSON: {data[:80]!r}")
    st, _, _ = ext.request("GET", "/nope")
    c.eq(st, 404, "unknown path")
    st, _, _ = ext.request("GET", ext.verb("filter"))
    c.eq(st, 405, "GET on filter")
    st, _, _ = ext.request("POST", "/healthz", b"{}")
    c.eq(st, 405, "POST on healthz")
    st, _, _ = ext.request("POST", ext.verb("filter"), b"x" * 300000)
    c.eq(st, 413, "body over the cap")

    # -- still serving valid calls after all that
    st, res = ext.post_json(ext.verb("filter"), args)
    c.eq(st, 200, "valid call after bad input")

    # -- metrics
    st, body, hdr = ext.request("GET", "/metrics")
    text = body.decode()
    c.eq(st, 200, "metrics status")
    c.ok('gpu_extender_requests_total{verb="filter",code="2xx"}' in text, "request counter per verb")
    c.ok('gpu_extender_request_duration_seconds_bucket{verb="filter",le="+Inf"}' in text, "duration histogram")
    fsum = re.search(r'^gpu_extender_request_duration_seconds_sum\{verb="filter"\} (\S+)$', text, re.M)
    c.ok(fsum is not None and float(fsum.group(1)) > 0,
         f"filters of a few nodes (under a millisecond) still add to _sum: {fsum and fsum.group(1)}")
    c.ok('gpu_extender_filter_rejections_total{reason="no_gpus"}' in text, "rejections by reason")
    c.ok('gpu_extender_binds_total{outcome="bound"}' in text, "binds by outcome")

    # -- graceful shutdown: a slow client's request in flight is answered
    s = socket.create_connection(("127.0.0.1", ext.port))
    body = json.dumps(args).encode()
    s.sendall(b"POST " + ext.verb("filter").encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:100])
    time.sleep(0.3)
    ext.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    s.sendall(body[100:])
    s.settimeout(5)
    reply = b""
    try:
        while b"\r\n\r\n" not in reply:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    except OSError:
        pass
    c.ok(reply.startswith(b"HTTP/1.1 200"), f"in-flight request answered during shutdown ({reply[:40]!r})")
    s.close()
    rc = ext.proc.wait(timeout=15)
    c.eq(rc, 0, "exit status after SIGTERM")
finally:
    if c.failed:
        print(ext.logs())
    ext.cleanup()
c.done()
