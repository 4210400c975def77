"""Issue 4: kill -9 the extender at each step of a bind (after the Lease
reservation, after the pod PATCH, after the Binding), restart it, and check
the ledger stays consistent: the retried bind completes without a second
tenant, and a bind that is never retried leaks its slot only until the
reconciler releases it."""
import signal
import sys
import threading

from gxtest import Checks, Extender, FakeApiServer, bind_args, live_overrides, shared_pod, wait_for

c = Checks("ledger_crash")
api = FakeApiServer()
NODE = "gpu-node-a"
OVR = live_overrides(api, **{"ledger.bind_deadline_ms": 1000})
ext = None


wait = wait_for


def tenants_of(uid):
    return [t for t in api.lease_tenants(NODE) if t["uid"] == uid]


def crash_during(pod, fault, reached):
    """Bind @pod while @fault delays one API reply, kill -9 once @reached(), restart."""
    global ext
    api.control("POST", "/control/fault", fault)
    victim = ext

    def doomed_bind():
        try:
            victim.post_json(victim.verb("bind"), bind_args(pod, NODE))
        except OSError:
            pass  # the extender is killed while this request waits

    threading.Thread(target=doomed_bind, daemon=True).start()
    c.ok(wait(reached, 10), f"{pod['metadata']['name']}: bind reached the crash point")
    ext.proc.send_signal(signal.SIGKILL)
    ext.proc.wait()
    api.control("DELETE", "/control/fault")
    ext = Extender(sys.argv[1], workdir=ext.dir, overrides=OVR)
    ext.start()


try:
    ext = Extender(sys.argv[1], overrides=OVR).start()
    pods = [shared_pod(f"crash-{i}", f"uid-crash-{i}") for i in range(6)]
    for p in pods:
        api.control("POST", "/control/pods", p)

    # 1. Killed between the Lease reservation and the pod PATCH.
    p = pods[0]
    crash_during(p, {"kind": "slow", "path_prefix": "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases",
                     "method": "PUT", "delay_s": 5, "count": 1},
                 lambda: len(tenants_of("uid-crash-0")) == 1)
    c.eq([t["state"] for t in tenants_of("uid-crash-0")], ["reserved"], "restart keeps the reservation")
    st, res = ext.post_json(ext.verb("bind"), bind_args(p, NODE))
    c.eq(res, {"Error": ""}, "retried bind after a crash before PATCH succeeds")
    c.eq(len(tenants_of("uid-crash-0")), 1, "no second tenant for the retried pod")
    c.ok(wait(lambda: [t["state"] for t in tenants_of("uid-crash-0")] == ["bound"], 10), "tenant marked bound")

    # 2. Killed between the PATCH and the Binding.
    p = pods[1]
    crash_during(p, {"kind": "slow", "path_prefix": "/api/v1/namespaces/team-a/pods/crash-1",
                     "method": "PATCH", "delay_s": 5, "count": 1},
                 lambda: any(x["name"] == "crash-1" and x.get("code") == 200 for x in api.state()["patches"]))
    st, res = ext.post_json(ext.verb("bind"), bind_args(p, NODE))
    c.eq(res, {"Error": ""}, "retried bind after a crash before Binding succeeds")
    c.eq(len(tenants_of("uid-crash-1")), 1, "still one tenant")
    c.eq(api.state()["pods"]["team-a/crash-1"]["spec"].get("nodeName"), NODE, "pod bound to the node")

    # 3. Killed after the Binding was created but before the answer.
    p = pods[2]
    crash_during(p, {"kind": "slow", "path_prefix": "/api/v1/namespaces/team-a/pods/crash-2/binding",
                     "method": "POST", "delay_s": 5, "count": 1},
                 lambda: any(b["name"] == "crash-2" and b.get("code") == 201 for b in api.state()["bindings"]))
    st, res = ext.post_json(ext.verb("bind"), bind_args(p, NODE))
    c.eq(res, {"Error": ""}, "retried bind of an already bound pod succeeds")
    c.ok(wait(lambda: [t["state"] for t in tenants_of("uid-crash-2")] == ["bound"], 10),
         "the reconciler or the retry marks it bound")

    # 4. Killed after the reservation and never retried (the pod was deleted meanwhile):
    # the reconciler releases the slot once it is older than a few bind deadlines.
    p = pods[3]
    crash_during(p, {"kind": "slow", "path_prefix": "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases",
                     "method": "PUT", "delay_s": 5, "count": 1},
                 lambda: len(tenants_of("uid-crash-3")) == 1)
    api.control("DELETE", "/control/pods/team-a/crash-3")
    c.ok(wait(lambda: not tenants_of("uid-crash-3"), 20), "orphan reservation released by the reconciler")

    # 5. A slow Lease write shows in the bind's log line: where the bind's time went.
    api.control("POST", "/control/fault", {"kind": "slow", "method": "PUT", "delay_s": 0.4, "count": 1,
                                           "path_prefix": "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases"})
    st, res = ext.post_json(ext.verb("bind"), bind_args(pods[4], NODE))
    c.eq(res, {"Error": ""}, "bind through a slow Lease write succeeds")
    api.control("DELETE", "/control/fault")
    line = next((ln for ln in ext.logs().splitlines() if '"pod bound"' in ln and "crash-4" in ln), "")
    t = dict(kv.split("=", 1) for kv in line.split() if kv.split("=", 1)[0] in ("ms", "gate_ms", "lease_ms"))
    c.ok(len(t) == 3 and 400 <= int(t["lease_ms"]) <= int(t["ms"]) and int(t["gate_ms"]) < 400,
         f"the bound line says the Lease write took the time: {line}")

    # 6. A Lease write slower than the bind's deadline: the failed bind's time is the Lease's too.
    # gpu-node-b has no Lease yet: its first write is a POST
    api.control("POST", "/control/fault", {"kind": "slow", "method": "POST", "delay_s": 1.5, "count": 1,
                                           "path_prefix": "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases"})
    st, res = ext.post_json(ext.verb("bind"), bind_args(pods[5], "gpu-node-b"))  # node-a is full
    c.ok("ledger lease" in res.get("Error", ""), f"bind through a Lease write past its deadline fails: {res}")
    api.control("DELETE", "/control/fault")
    line = next((ln for ln in ext.logs().splitlines() if '"bind failed"' in ln and "crash-5" in ln), "")
    t = dict(kv.split("=", 1) for kv in line.split() if kv.split("=", 1)[0] in ("ms", "lease_ms"))
    c.ok(len(t) == 2 and 700 <= int(t["lease_ms"]) <= int(t["ms"]),
         f"the failed line says the Lease write took the time: {line}")
    api.control("DELETE", "/control/pods/team-a/crash-5")
    c.ok(wait(lambda: not [t for t in api.lease_tenants("gpu-node-b") if t["uid"] == "uid-crash-5"], 20),
         "its reservation goes with the pod")

    # The ledger is consistent: one tenant per bound pod, slots respected.
    tenants = api.lease_tenants(NODE)
    c.eq(sorted(t["uid"] for t in tenants), ["uid-crash-0", "uid-crash-1", "uid-crash-2", "uid-crash-4"],
         "final tenants")
    c.ok(sum(t["slices"] for t in tenants if t["card"] == 1) <= 4, "card 1 within its slots")
    bound = {b["name"] for b in api.state()["bindings"] if b.get("code") == 201}
    c.eq(bound, {"crash-0", "crash-1", "crash-2", "crash-4"}, "Bindings match the tenants")
finally:
    if ext is not None:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
    api.stop()
c.done()
