"""Issue 19: the ledger holds under a slow, faulty API server. A burst of mixed GPU pods (40 %
whole GPUs of 1/2/4/8 cards, 40 % gpu-milli shares 100..900, 20 % time slices) is created at
once on generated 8-card nodes while cmd/faultproxy sits between the extender (and the
scheduler) and kube-apiserver: writes take 200-1,000 ms, some are answered 504 after they
landed, some answers are dropped, some connections reset; two CPU-bound processes run beside
the control plane. Modes (argv[2]):

  one      one replica
  two      two replicas behind a round-robin proxy (the Service)
  kill     one replica, killed -9 mid-burst and started again
  kill-leader  two replicas behind a round-robin proxy (the shipped install), the leader
           killed -9 mid-burst and started again
  restart  one replica, kube-scheduler restarted mid-burst

Every pod must end bound, and the invariants of every e2e test hold (tests/e2e/e2e.py: each
bound pod booked once on its cards, no card over capacity from the pods as from the Leases,
no booking without a pod, no pending pod the filter admits). The scheduler's failed attempts
are reported against its scheduled ones. Size: GX_BURST_NODES (200) x GX_BURST_PODS (600);
GX_BURST_FAULTS=0 runs the same burst on a quiet control plane (no faults, no CPU burners),
for the failed-attempt and pods/s figures of docs/performance.md. GX_BURST_BUDGET=10s:9000
measures another time budget: the scheduler's httpTimeout and the extender's
ledger.bind_deadline_ms (the shipped ones by default). GX_BURST_BURNERS (2) sets how many
CPU-bound processes run beside the control plane: more of them stand in for a slower machine.
GX_BURST_BINDS sets ledger.binds_in_flight (100000: binds unlimited, as before it existed).
GX_BURST_FORWARD=0 turns replicas.forward off: the two replicas decide each for itself."""
import os
import random
import ssl
import subprocess
import sys
import time
import urllib.request

from e2e import ANN, Checks, create, finish, get_pods, histo, log, pod, rig, wait_for
from gxtest import read_port

MODE = sys.argv[2] if len(sys.argv) > 2 else "one"
NODES = int(os.environ.get("GX_BURST_NODES", "200"))
PODS = int(os.environ.get("GX_BURST_PODS", "600"))
QUIET = os.environ.get("GX_BURST_FAULTS", "1") == "0"
FAULTS = {} if QUIET else {"latency_ms": [200, 1000], "p504": 0.05, "pdrop": 0.02,
                           "preset": 0.01, "methods": ["PUT", "POST", "PATCH", "DELETE"]}
SCHED_ARGS = ["--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"]
BUDGET = os.environ.get("GX_BURST_BUDGET", "").split(":") if os.environ.get("GX_BURST_BUDGET") \
    else None


def workload(n, seed=19):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.4:
            out.append(pod(f"w-{i}", {"nvidia.com/gpu": str(rng.choice((1, 2, 4, 8)))}))
        elif r < 0.8:
            out.append(pod(f"m-{i}", {"gpu-extender.io/time-slice": "1"},
                           annotations={ANN + "gpu-milli": str(rng.randrange(100, 901, 10))}))
        else:
            out.append(pod(f"s-{i}", {"gpu-extender.io/time-slice": "1"},
                           annotations={ANN + "time-slices": "1"}))
    return out


def attempts(c):
    """{result: count} of kube-scheduler's scheduler_schedule_attempts_total."""
    port = c.state["ports"]["scheduler-gpu-scheduler"]
    ctx = ssl._create_unverified_context()
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", timeout=10, context=ctx) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("scheduler_schedule_attempts_total{"):
            res = line.split('result="', 1)[1].split('"', 1)[0]
            out[res] = out.get(res, 0) + float(line.rsplit(" ", 1)[1])
    return out


def bound(c):
    return sum(1 for p in get_pods(c) if p["spec"].get("nodeName"))


chk = Checks(f"e2e_burst_faults_{MODE}")
OVERRIDES = {"ledger.bind_deadline_ms": int(BUDGET[1])} if BUDGET else {}
if os.environ.get("GX_BURST_FORWARD") == "0":  # replicas that decide each for itself
    OVERRIDES["replicas.forward"] = False
if os.environ.get("GX_BURST_BINDS"):  # ledger.binds_in_flight; 100000: no limit, as before it
    OVERRIDES["ledger.binds_in_flight"] = int(os.environ["GX_BURST_BINDS"])
extenders = [{"name": "a", "via_faults": True, "overrides": OVERRIDES}]
if MODE in ("two", "kill-leader"):
    extenders.append({"name": "b", "via_faults": True, "overrides": OVERRIDES})
c = rig(sys.argv[1], generate=NODES, schedulers=[], extenders=extenders, faults=True)
burners = []
sched_totals = {}
try:
    # No leader election: its Lease renewals go through the same faults, and a renewal that
    # loses its answer for renewDeadline (10 s) makes kube-scheduler exit ("Leaderelection
    # lost"), which a kubelet would restart; here it would strand the burst. The test is about
    # the extender's writes, not kube-scheduler's own lock.
    sched = {"name": "gpu-scheduler", "extender": "a", "via_faults": True, "args": SCHED_ARGS,
             "leader_elect": False, "http_timeout": BUDGET[0] if BUDGET else None}
    if len(extenders) == 2:
        pf = c.path("rr.port")
        ports = [c.extender_spec(n)["port"] for n in ("a", "b")]
        c.start("roundrobin", [os.path.join(c.bin, "faultproxy"), "--port-file", pf,
                               "--control-port-file", c.path("rr.control"), "--upstream",
                               ",".join(f"http://127.0.0.1:{p}" for p in ports)])
        sched["extender_port"] = wait_for(lambda: read_port(pf), 30, "round-robin port", must=True)
    c.schedulers.append(sched)
    pods = workload(PODS)
    create(c, *pods)
    log(f"{len(pods)} pods on {NODES} generated nodes; faults {FAULTS}; mode {MODE}")
    burners = [] if QUIET else [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                                for _ in range(int(os.environ.get("GX_BURST_BURNERS", "2")))]
    c.set_faults(**FAULTS)
    t0 = time.time()
    c.start_scheduler("gpu-scheduler")
    if MODE in ("kill", "kill-leader", "restart"):
        wait_for(lambda: bound(c) >= len(pods) // 3, 300, interval=1)
        log(f"{bound(c)} bound at {time.time() - t0:.0f} s: {MODE}")
        if MODE.startswith("kill"):
            victim = next((e["name"] for e in extenders if MODE == "kill" or
                           c.extender_metrics(e["name"]).get(("gpu_extender_leader", frozenset()))),
                          "a")
            log(f"killing extender {victim}")
            c.kill_extender(victim)
            time.sleep(2)
            c.start_extender(victim)
        else:
            sched_totals = attempts(c)
            c.stop_scheduler("gpu-scheduler")
            time.sleep(2)
            c.start_scheduler("gpu-scheduler")

    def done():
        if not all(c.alive(f"extender-{e['name']}") for e in extenders):
            return "an extender died"
        if not c.alive("scheduler-gpu-scheduler"):
            return "kube-scheduler exited"  # nothing restarts it here: stop waiting
        return bound(c) == len(pods)
    res = wait_for(done, 900, interval=2)
    took = time.time() - t0
    c.set_faults()
    for b in burners:
        b.kill()
    st = c.fault_stats()
    log(f"faults injected: {st}")
    n = bound(c)
    chk.ok(all(c.alive(f"extender-{e['name']}") for e in extenders), "the extenders survive")
    chk.eq(n, len(pods), f"every pod bound ({res}, {took:.0f} s)")
    chk.ok(QUIET or st["Answered504"] + st["Dropped"] + st["Reset"] > 0, "faults were injected")
    a = attempts(c)
    for k, v in sched_totals.items():
        a[k] = a.get(k, 0) + v
    scheduled = a.get("scheduled", 0)
    failed = a.get("unschedulable", 0) + a.get("error", 0)
    log(f"scheduler attempts: {a}; failed/scheduled = {failed / max(scheduled, 1):.3f}; "
        f"{n / took:.1f} pods/s")
    for e in extenders:
        m = c.extender_metrics(e["name"])
        b = histo(m, "gpu_extender_request_duration_seconds", verb="bind")
        k = histo(m, "gpu_extender_upstream_duration_seconds", upstream="kubernetes")
        log(f"extender {e['name']} (since its start): {b[0]:g} binds, mean {b[1]:.2f} s, p50 "
            f"{b[2]:.2f} s, p90 {b[3]:.2f} s; {k[0]:g} API calls, mean {k[1]:.3f} s, "
            f"p90 {k[3]:.3f} s")
    if MODE == "two" and OVERRIDES.get("replicas.forward", True):
        # one leader for the whole burst: its renewals land through the faults (a renewal that
        # changed nothing kept its resourceVersion, and the other replica took over every 10 s)
        takes = sum(c.logs(f"extender-{e['name']}", tail=1 << 30).count("taking the leader lease")
                    for e in extenders)
        chk.eq(takes, 1, "one replica took the leader Lease, once")
        fwd = sum(v for e in extenders for (m, _), v in c.extender_metrics(e["name"]).items()
                  if m == "gpu_extender_forwarded_total")
        chk.ok(fwd > 0, f"the follower forwarded the calls it got ({fwd:g})")
finally:
    for b in burners:
        b.kill()
    finish(c, chk)
chk.done()
