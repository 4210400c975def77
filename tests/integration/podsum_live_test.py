"""The watch of every bound pod (kubernetes.watch_all_pods): the real binary
against the fake API server. A CPU-only pod bound to a GPU node shows in the
extender's view of that node (GET /debug/cards "host", the figures the fgd
placement reads from the ledger) and in /metrics; a managed pod, a pending
pod and a finished pod do not; deleting the pod restores the view. With the
key off the same pod changes nothing."""
import json
import sys
import time

from gxtest import Checks, Extender, FakeApiServer, live_overrides, stop_all, wait_for

NODE = "gpu-node-a"
c = Checks("podsum_live")


def pod(name, uid, node=None, cpu="1500m", mem="2Gi", phase="Running", labels=None):
    spec = {"containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "batch", "uid": uid,
                         "labels": labels or {"app": "cpu-only"}},
            "spec": spec, "status": {"phase": phase}}


def host(ext):
    st, body, _ = ext.request("GET", "/debug/cards")
    if st != 200:
        return None
    for n in json.loads(body)["nodes"]:
        if n["node"] == NODE:
            return n.get("host")
    return None


def gauge(ext, name):
    st, body, _ = ext.request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def other(ext):
    h = host(ext)
    return (h or {}).get("other_cpu_milli"), (h or {}).get("other_memory_mib")


api = FakeApiServer()
exts = []
try:
    over = live_overrides(api, **{"server.debug_endpoints": True})
    ext = Extender(sys.argv[1], overrides=over).start()
    exts.append(ext)
    c.eq(other(ext), (0, 0), "nothing counted on an empty cluster")
    c.eq(gauge(ext, "gpu_extender_other_pods"), 0.0, "gauge starts at 0")

    # pods that must not count: managed, pending (not even sent: spec.nodeName!=)
    for p in (pod("managed", "uid-m", NODE, cpu="4", labels={"gpu-extender.io/managed": "true"}),
              pod("pending", "uid-p", None, cpu="8", phase="Pending")):
        st, _ = api.control("POST", "/control/pods", p)
        c.ok(st in (200, 201), f"{p['metadata']['name']} pod created")
    st, _ = api.control("POST", "/control/pods", pod("cpu-only", "uid-c", NODE))
    c.ok(st in (200, 201), "CPU-only pod bound to the GPU node created")
    t0 = time.time()
    c.ok(wait_for(lambda: other(ext) == (1500, 2048), 10),
         f"the GPU node's view has the CPU-only pod's 1500m / 2048 MiB ({other(ext)})")
    took = time.time() - t0
    c.ok(took < 3.0, f"seen on the watch event ({took:.2f} s)")
    c.eq(gauge(ext, "gpu_extender_other_pods"), 1.0, "one pod counted (managed and pending not)")
    c.eq(gauge(ext, "gpu_extender_other_pods_cpu_cores"), 1.5, "its CPU in cores")
    h = host(ext)
    c.ok(h is not None and h["cpu_milli"] >= 1500, f"the node's host total includes it ({h})")

    # a second pod that finishes stops counting
    st, _ = api.control("POST", "/control/pods", pod("job", "uid-j", NODE, cpu="500m", mem="1Gi"))
    c.ok(wait_for(lambda: other(ext) == (2000, 3072), 10), f"a second pod adds up ({other(ext)})")
    st, _ = api.control("POST", "/control/pods",
                        pod("job", "uid-j", NODE, cpu="500m", mem="1Gi", phase="Succeeded"))
    c.ok(wait_for(lambda: other(ext) == (1500, 2048), 10),
         f"a Succeeded pod no longer counts ({other(ext)})")

    # deletion restores the view
    c.eq(api.control("DELETE", "/control/pods/batch/cpu-only")[0], 200, "CPU-only pod deleted")
    c.ok(wait_for(lambda: other(ext) == (0, 0), 10), f"deleting it restores the view ({other(ext)})")
    c.eq(gauge(ext, "gpu_extender_other_pods"), 0.0, "gauge back to 0")

    # a restart lists what is there (the list path, not the watch)
    api.control("POST", "/control/pods", pod("cpu-only-2", "uid-c2", NODE, cpu="250m", mem="1Mi"))
    ext.stop()
    ext2 = Extender(sys.argv[1], overrides=over).start()
    exts.append(ext2)
    c.eq(other(ext2), (250, 1), "after a restart the first list counts the bound pod")

    # off: the same cluster, nothing counted
    off = Extender(sys.argv[1], overrides=dict(over, **{"kubernetes.watch_all_pods": False})).start()
    exts.append(off)
    c.eq(other(off), (0, 0), "kubernetes.watch_all_pods=false counts nothing")
    c.eq(gauge(off, "gpu_extender_other_pods"), 0.0, "gauge 0 when off")
finally:
    stop_all(c, exts, api)
c.done()
