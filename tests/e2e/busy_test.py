"""A pod refused because every card measures busy comes back when one cools, on the real
kube-scheduler and a real Prometheus. kube-scheduler requeues an extender-rejected pod only on a
cluster event, and a metrics round is none (node heartbeats change nothing it schedules on): the
extender pokes the pod (annotation gpu-extender.io/requeued-at) once a sample shows a busy card
cooled, so the pod binds within seconds instead of after the scheduler's 5-minute flush
(podMaxInUnschedulablePodsDuration)."""
import sys
import time

from e2e import (ANN, Checks, check_assignment, create, events, exclusive, finish, get_pod, log,
                 rig, wait_bound, wait_for)

# The sample, a Prometheus scrape and an extender round (1 s each here), the poke's tick (1 s),
# the pod's backoff (at most podMaxBackoffSeconds, 10 s), a cycle and a bind: well under the flush.
BOUND_S = 30

chk = Checks("e2e_busy")
c = rig(sys.argv[1])


def refused_busy():
    return any(reason == "FailedScheduling" and "GPU utilization above limit" in (msg or "")
               for reason, msg in events(c, "busy-1"))


try:
    c.set_dcgm("DCGM_FI_DEV_GPU_UTIL", 99)  # every card of the fixture pages
    time.sleep(5)  # scraped, queried and in the snapshot
    # a whole card, where the extender picks it (gpu-node-c's time-sliced replicas are the
    # device plugin's to place, and the busy rule does not pick among them)
    create(c, exclusive("busy-1", 1, node_selector={"nvidia.com/gpu.sharing-strategy": "none"}))
    chk.ok(wait_for(refused_busy, 60, interval=0.5),
           f"every card busy: FailedScheduling says so ({events(c, 'busy-1')})")
    time.sleep(12)  # past the pod's longest backoff: only an event brings it back now
    p = get_pod(c, "busy-1")
    chk.ok(not p["spec"].get("nodeName"), "still pending while the cards stay busy")
    chk.ok(ANN + "requeued-at" not in p["metadata"].get("annotations", {}),
           "not poked while no card cooled")
    t0 = time.time()
    c.set_dcgm("DCGM_FI_DEV_GPU_UTIL", 5)
    got = wait_bound(c, ["busy-1"], timeout=120)
    took = time.time() - t0
    log(f"bound {took:.1f} s after the cards cooled")
    chk.ok("busy-1" in got and took < BOUND_S,
           f"bound within {BOUND_S} s of the cards cooling ({took:.1f} s), not after the flush")
    p = get_pod(c, "busy-1")
    chk.ok(ANN + "requeued-at" in p["metadata"].get("annotations", {}),
           "the extender's poke brought it back")
    if "busy-1" in got:
        check_assignment(c, chk, got["busy-1"], want_shared=False)
finally:
    finish(c, chk)
chk.done()
