"""Scheduling throughput of the real kube-scheduler (the pinned release of tests/k8s) on fake GPU
nodes, (a) bare, with device-plugin counting only, and (b) with gpu-extender (filter,
prioritize, bind), both with the shipped KubeSchedulerConfiguration (same
percentageOfNodesToScore); only the `extenders:` entry differs.

    python3 bench/k8s_throughput.py BUILD/gpu-extender [--nodes 1000,5000] [--pods 2000]
                                    [--install default|gpu-pods-only]

For each node count: one cluster (tests/k8s/rig.py) with N generated copies of the 8-card node
gpu-node-b (plus the demo nodes) and one extender replica. For each mode the pods (1 GPU each,
tolerating the GPU taint) are created first with no scheduler running for their scheduler name;
then the scheduler starts and the clock runs until every pod is bound. pods/s = pods / (last
bind - first bind), from the scheduler's scheduler_schedule_attempts_total polled every 0.25 s;
p50/p99 latency from its scheduler_scheduling_attempt_duration_seconds histogram (one
scheduling attempt: filter, score, bind; queueing excluded). Results: bench/results/k8s.json and
a Markdown table on stdout. Not a test: numbers vary with the machine's load.
--profile DIR also saves, per mode, a CPU profile of the scheduler (Go pprof, the first
--profile-s seconds after it starts) and the extender's and the scheduler's CPU seconds for the
run, so where an attempt's time goes can be read with `go tool pprof -top`. Every mode also
reports the CPU seconds of the API server, etcd and the fake kubelet, and the API requests per
pod bound by verb and resource (the API server's apiserver_request_total).
--install picks whose files both modes run: the default install's (the default) or the
GPU-pods-only overlay's, which the figures before 2026-12-04 used.
--gang SIZE groups the pods into PodGroups of SIZE members (gang scheduling, KEP-4671: the gate
GenericWorkload on the API server and both schedulers, as tests/e2e/gang_test.py runs them) and
reports, besides the per-pod figures, one group attempt (every member filtered, scored and
assumed, and the PodGroup's status PATCH; binds excluded) from
scheduler_podgroup_scheduling_attempt_duration_seconds{result="scheduled"}: mean (sum / count)
and p50/p99 (its buckets double from 1 ms, so the quantiles are coarse and the mean is the figure
to compare), and the mean of scheduler_podgroup_scheduling_algorithm_duration_seconds (the same
without the PATCH: where the extender's calls are). Results: bench/results/k8s-gangSIZE.json.
"""
import argparse
import json
import os
import re
import ssl
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))

from rig import Cluster, wait_for  # noqa: E402
from rig import histogram_quantile as quantile  # noqa: E402

NS = "e2e"
GATES = "--feature-gates=GenericWorkload=true"
GANG_APISERVER_ARGS = [GATES, "--runtime-config=scheduling.k8s.io/v1beta1=true",
                       "--disable-admission-plugins=PodGroupProtection"]


def group_name(prefix, i, gang):
    return f"{prefix}-g{i // gang:05d}"


def pod_groups(prefix, n, gang):
    """The PodGroups of @n pods in gangs of @gang (minCount @gang)."""
    return [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": group_name(prefix, i, gang), "namespace": NS,
                          "labels": {"bench": prefix}},
             "spec": {"schedulingPolicy": {"gang": {"minCount": gang}}}}
            for i in range(0, n, gang)]


def pods(prefix, n, scheduler, gang=0):
    items = []
    for i in range(n):
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"{prefix}-{i:05d}", "namespace": NS,
                                   "labels": {"bench": prefix}},
                      "spec": {"schedulerName": scheduler, "restartPolicy": "Never",
                               "terminationGracePeriodSeconds": 0,
                               "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                "effect": "NoSchedule"}],
                               "containers": [{"name": "main", "image": "cuda:13",
                                               "resources": {"limits": {"nvidia.com/gpu": "1",
                                                                        "cpu": "100m",
                                                                        "memory": "64Mi"}}}]}})
        if gang:
            items[-1]["spec"]["schedulingGroup"] = {"podGroupName": group_name(prefix, i, gang)}
    return items


def create_pods(c, items, path=f"/api/v1/namespaces/{NS}/pods"):
    """POST the pods (or other objects at @path) from a few threads (kubectl would send them
    one by one)."""
    import concurrent.futures

    def post(p):
        st, body = c.api("POST", path, p)
        if st != 201:
            raise RuntimeError(f"create {p['metadata']['name']}: {st} {str(body)[:200]}")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(post, items))


def sched_metrics(port):
    ctx = ssl._create_unverified_context()
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", timeout=10, context=ctx) as r:
        text = r.read().decode()
    scheduled = errors = 0.0
    buckets = {}
    # one group attempt: {le: count}, sum, count of result="scheduled"; the algorithm alone
    # (every result): sum, count
    pg = ({}, 0.0, 0.0)
    alg = [0.0, 0.0]
    for line in text.splitlines():
        if line.startswith("scheduler_podgroup_scheduling_algorithm_duration_seconds_sum"):
            alg[0] += float(line.rsplit(" ", 1)[1])
        elif line.startswith("scheduler_podgroup_scheduling_algorithm_duration_seconds_count"):
            alg[1] += float(line.rsplit(" ", 1)[1])
        if line.startswith("scheduler_podgroup_scheduling_attempt_duration_seconds") \
                and 'result="scheduled"' in line:
            v = float(line.rsplit(" ", 1)[1])
            if line.startswith("scheduler_podgroup_scheduling_attempt_duration_seconds_bucket{"):
                le = re.search(r'[{,]le="([^"]+)"', line).group(1)
                key = float("inf") if le == "+Inf" else float(le)
                pg[0][key] = pg[0].get(key, 0) + v
            elif line.startswith("scheduler_podgroup_scheduling_attempt_duration_seconds_sum{"):
                pg = (pg[0], pg[1] + v, pg[2])
            elif line.startswith("scheduler_podgroup_scheduling_attempt_duration_seconds_count{"):
                pg = (pg[0], pg[1], pg[2] + v)
            continue
        if line.startswith('scheduler_schedule_attempts_total{') and 'result="scheduled"' in line:
            scheduled += float(line.rsplit(" ", 1)[1])
        elif line.startswith('scheduler_schedule_attempts_total{') and 'result="error"' in line:
            errors += float(line.rsplit(" ", 1)[1])
        elif line.startswith("scheduler_scheduling_attempt_duration_seconds_bucket{") \
                and 'result="scheduled"' in line:
            le = re.search(r'[{,]le="([^"]+)"', line).group(1)
            key = float("inf") if le == "+Inf" else float(le)
            buckets[key] = buckets.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return scheduled, errors, buckets, pg + tuple(alg)


def watch_binds(c, prefix, npods):
    """{pod name: time it was first seen bound}, filled by a watch in a daemon thread
    until @npods are.

    The watch resumes where it stopped when the API server ends it (a loaded server
    does); after a 410 it lists again, taking the pods bound meanwhile as bound now."""
    import threading

    bound = {}
    sel = f"labelSelector=bench%3D{prefix}"

    def relist():
        st, lst = c.api("GET", f"/api/v1/namespaces/{NS}/pods?{sel}")
        for o in lst.get("items", []):
            if o.get("spec", {}).get("nodeName"):
                bound.setdefault(o["metadata"]["name"], time.time())
        return lst["metadata"]["resourceVersion"]

    def watch(rv):
        req = urllib.request.Request(
            c.api_url + f"/api/v1/namespaces/{NS}/pods?watch=1&{sel}"
            f"&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3600")
        req.add_header("Authorization", "Bearer gx-e2e-admin-token")
        with urllib.request.urlopen(req, context=c.ctx, timeout=3600) as r:
            for line in r:
                ev = json.loads(line)
                o = ev.get("object", {})
                if ev.get("type") == "ERROR":
                    return None
                rv = o.get("metadata", {}).get("resourceVersion", rv)
                name = o.get("metadata", {}).get("name")
                if ev.get("type") != "BOOKMARK" and name and o.get("spec", {}).get("nodeName"):
                    bound.setdefault(name, time.time())
                    if len(bound) >= npods:
                        break
        return rv

    def run():
        rv = None
        while len(bound) < npods:
            try:
                rv = watch(rv) if rv else watch(relist())
            except Exception as e:  # noqa: BLE001 - any end of the stream: resume
                print(f"  bind watch ended ({e}), resuming", flush=True)
                time.sleep(0.2)
    threading.Thread(target=run, daemon=True).start()
    return bound


def cpu_seconds(pid):
    """User + system CPU seconds of process @pid so far (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_profile(port, seconds, path):
    """Fetch the scheduler's CPU profile for @seconds into @path, in a daemon thread."""
    import threading

    def run():
        ctx = ssl._create_unverified_context()
        url = f"https://127.0.0.1:{port}/debug/pprof/profile?seconds={seconds}"
        try:
            with urllib.request.urlopen(url, timeout=seconds + 60, context=ctx) as r:
                data = r.read()
            with open(path, "wb") as f:
                f.write(data)
        except OSError as e:
            print(f"  profile {path}: {e}", flush=True)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def extender_calls(c):
    """{verb: [calls, mean ms]} of the extender's own request durations (its side of a call)."""
    out = {}
    for (name, labels), v in c.extender_metrics("a").items():
        verb = dict(labels).get("verb")
        if name == "gpu_extender_request_duration_seconds_count":
            out.setdefault(verb, [0, 0.0])[0] += v
        elif name == "gpu_extender_request_duration_seconds_sum":
            out.setdefault(verb, [0, 0.0])[1] += v
    return {k: [int(n), ms(t / n)] for k, (n, t) in out.items() if n}


def extender_counters(c):
    """The extender's binds shed by its gate and filter calls it paced (0 when not counted)."""
    m = {name: v for (name, _), v in c.extender_metrics("a").items()}
    return {"binds_shed": int(m.get("gpu_extender_binds_shed_total", 0)),
            "filters_paced": int(m.get("gpu_extender_filters_paced_total", 0))}


def api_requests(c):
    """{"VERB resource[/sub]": count} from the API server's apiserver_request_total."""
    out = {}
    for line in c.kubectl("get", "--raw", "/metrics").splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        key = labels.get("verb", "?") + " " + labels.get("resource", "?") + (
            "/" + labels["subresource"] if labels.get("subresource") else "")
        out[key] = out.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return out


def ms(seconds):
    return round(seconds * 1000, 2) if seconds is not None else None


# --install: the scheduler's and the extender's files (tests/k8s/rig.py's spec keys)
INSTALLS = {
    "default": {"scheduler": "scheduler/kube-scheduler-config.yaml", "extender": "config.json"},
    "gpu-pods-only": {"scheduler": "kube-scheduler-config.yaml", "extender": None},
}


def run_mode(c, mode, npods, profile=None, profile_s=20, gang=0, install="gpu-pods-only", qps=0):
    name = "bench-bare" if mode == "bare" else "gpu-scheduler"
    prefix = f"{mode}"
    t0 = time.time()
    if gang:
        create_pods(c, pod_groups(prefix, npods, gang),
                    f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NS}/podgroups")
    create_pods(c, pods(prefix, npods, name, gang))
    print(f"  {mode}: {npods} pods created in {time.time() - t0:.1f} s", flush=True)
    spec = {"name": name, "leader_elect": False,
            "args": ["--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,"
                     "/debug/pprof/*"] + ([GATES] if gang else [])}
    if INSTALLS[install]["scheduler"] != "kube-scheduler-config.yaml":
        spec["config"] = INSTALLS[install]["scheduler"]
    if qps:
        spec["client_qps"] = qps
    if mode == "bare":
        spec.update(no_extender=True, scheduler_name=name)
    else:
        spec.update(extender="a")
    bound = watch_binds(c, prefix, npods)
    c.schedulers.append(spec)
    c.start_scheduler(name)
    port = c.state["ports"][f"scheduler-{name}"]
    pids = {k: c.state["pids"].get(k) for k in (f"scheduler-{name}", "extender-a", "kube-apiserver",
                                                 "etcd", "fake-kubelet", "prometheus")}
    cpu0 = {k: cpu_seconds(p) for k, p in pids.items() if p}
    req0 = api_requests(c)
    prof = None
    if profile:
        os.makedirs(profile, exist_ok=True)
        prof = start_profile(port, profile_s, os.path.join(profile, f"scheduler-{mode}.pprof"))
    deadline = time.time() + 1800
    while len(bound) < npods:
        if not c.alive("extender-a"):
            raise RuntimeError(f"{mode}: the extender exited after {len(bound)} binds: "
                               + c.logs("extender-a", 3000))
        if time.time() > deadline:
            raise TimeoutError(f"{mode}: {len(bound)}/{npods} pods bound after 1800 s")
        time.sleep(0.25)
    n, nerr, buckets, pg = sched_metrics(port)
    calls = extender_calls(c) if mode != "bare" else {}
    cpu = {k: round(cpu_seconds(p) - cpu0[k], 1) for k, p in pids.items()
           if p and k in cpu0 and cpu_seconds(p) is not None}
    if prof is not None:
        prof.join(profile_s + 60)
    req1 = api_requests(c)
    # API requests per pod bound, the watches' long requests and reads under 0.05 left out
    per_pod = {k: round((v - req0.get(k, 0)) / npods, 2) for k, v in req1.items()
               if k.split()[0] != "WATCH" and (v - req0.get(k, 0)) / npods >= 0.05}
    times = sorted(bound.values())
    first, last = times[0], times[-1]
    # Binds seen in the first and last 5 % are start-up and tail: the rate over the middle 90 %
    # is the steady state; the whole-run rate is reported too.
    lo, hi = times[len(times) // 20], times[len(times) * 19 // 20]
    rate = npods / (last - first) if last > first else None
    steady = (len(times) * 0.9) / (hi - lo) if hi > lo else None
    res = {"mode": mode, "pods": npods, "attempts_scheduled": n, "attempts_error": nerr, "seconds": round(last - first, 2),
           "pods_per_s": round(rate, 1) if rate else None,
           "steady_pods_per_s": round(steady, 1) if steady else None,
           "p50_ms": round(quantile(buckets, 0.5) * 1000, 1) if quantile(buckets, 0.5) is not None else None,
           "p99_ms": round(quantile(buckets, 0.99) * 1000, 1) if quantile(buckets, 0.99) is not None else None,
           "cpu_s": cpu, "api_requests_per_pod": per_pod}
    if mode != "bare":
        res.update(extender_counters(c))
    if gang:
        res.update(gang=gang, groups_scheduled=pg[2],
                   group_mean_ms=ms(pg[1] / pg[2]) if pg[2] else None,
                   group_p50_ms=ms(quantile(pg[0], 0.5)), group_p99_ms=ms(quantile(pg[0], 0.99)),
                   algorithm_mean_ms=ms(pg[3] / pg[4]) if pg[4] else None, extender_calls=calls)
    print(f"  {mode}: {res}", flush=True)
    c.stop_scheduler(name)
    c.schedulers.remove(spec)
    # Free the cards for the next mode.
    c.kubectl("-n", NS, "delete", "pods", "-l", f"bench={prefix}", "--wait=false", "--grace-period=0",
              "--force")
    wait_for(lambda: not c.kjson("-n", NS, "get", "pods", "-l", f"bench={prefix}")["items"], 600,
             "bench pods deleted", interval=2)
    if gang:
        c.kubectl("-n", NS, "delete", "podgroups", "-l", f"bench={prefix}", "--wait=false")
    return res


def main():
    import signal

    # A timeout's SIGTERM still stops the cluster (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ap = argparse.ArgumentParser()
    ap.add_argument("extender")
    ap.add_argument("--nodes", default="1000,5000")
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--modes", default="bare,extender")
    ap.add_argument("--set", action="append", default=[], type=lambda kv: kv if "=" in kv else
                    ap.error(f"--set {kv}: KEY=VALUE"), metavar="KEY=VALUE",
                    help="an extender config key for this run, e.g. filter.shortlist_nodes=0 "
                         "(the value is JSON)")
    ap.add_argument("--install", choices=sorted(INSTALLS), default="default",
                    help="whose files: the default install's (manifests/scheduler, "
                         "manifests/config.json) or the GPU-pods-only overlay's (until 2026-12-04)")
    ap.add_argument("--profile", help="directory for the scheduler's CPU profiles")
    ap.add_argument("--profile-s", type=int, default=20)
    ap.add_argument("--scheduler-qps", type=int, default=0,
                    help="kube-scheduler's clientConnection qps (burst twice that) in both modes; "
                         "0: the shipped config's (Kubernetes' default, 50)")
    ap.add_argument("--gang", type=int, default=0,
                    help="PodGroups of this many pods (a multiple of it: --pods)")
    a = ap.parse_args()
    if a.gang and a.pods % a.gang:
        ap.error("--pods must be a multiple of --gang")
    results = []
    for n in [int(x) for x in a.nodes.split(",")]:
        t0 = time.time()
        ext = {"name": "a"}
        if INSTALLS[a.install]["extender"]:
            ext["config"] = INSTALLS[a.install]["extender"]
        c = Cluster(extender_bin=a.extender, extenders=[dict(ext, overrides={
            # the shipped defaults where the rig's test settings differ (tests/k8s/rig.py)
            "log.level": "warn", "ledger.sync_interval_s": 5, "ledger.reconcile_interval_s": 10,
            "prometheus.interval_s": 5, **{k: json.loads(v) for k, v in (kv.split("=", 1) for kv in a.set)}})],
            schedulers=[], generate=n, apiserver_args=GANG_APISERVER_ARGS if a.gang else None)
        c.up()
        print(f"{n} nodes: cluster up in {time.time() - t0:.0f} s", flush=True)
        try:
            for mode in a.modes.split(","):
                r = run_mode(c, mode, a.pods, a.profile, a.profile_s, a.gang, a.install, a.scheduler_qps)
                r["install"] = a.install
                r["nodes"] = len(c.node_names)  # generated + demo nodes
                r["generated_nodes"] = n
                results.append(r)
        finally:
            c.down()
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = f"k8s-gang{a.gang}.json" if a.gang else "k8s.json"
    with open(os.path.join(HERE, "results", out), "w") as f:
        json.dump(results, f, indent=1)
    print("\n| GPU nodes | mode | pods | pods/s (all) | pods/s (middle 90 %) | p50 attempt | p99 attempt | attempts failed |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['generated_nodes']:,} | {r['mode']} | {r['pods']} | {r['pods_per_s']} | "
              f"{r['steady_pods_per_s']} | {r['p50_ms']} ms | {r['p99_ms']} ms | {r['attempts_error']} |")
    if a.gang:
        print_groups(results)
    by = {}
    for r in results:
        by.setdefault(r["generated_nodes"], {})[r["mode"]] = r["pods_per_s"]
    for n, m in by.items():
        if m.get("bare") and m.get("extender"):
            print(f"{n:,} nodes: with extender {100 * m['extender'] / m['bare']:.0f} % of bare")


def print_groups(results):
    print("\n| GPU nodes | gang | mode | groups | group attempt mean | p50 | p99 "
          "| algorithm mean |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['generated_nodes']:,} | {r['gang']} | {r['mode']} "
              f"| {r['groups_scheduled']:.0f} | {r['group_mean_ms']} ms | {r['group_p50_ms']} ms "
              f"| {r['group_p99_ms']} ms | {r['algorithm_mean_ms']} ms |")
    by = {}
    for r in results:
        by.setdefault(r["generated_nodes"], {})[r["mode"]] = r
    for n, m in by.items():
        b, e = m.get("bare"), m.get("extender")
        if b and e and b["group_mean_ms"] is not None and e["group_mean_ms"] is not None:
            print(f"{n:,} nodes, gangs of {b['gang']}: the extender adds "
                  f"{e['group_mean_ms'] - b['group_mean_ms']:.2f} ms to the mean group attempt, "
                  f"{e['algorithm_mean_ms'] - b['algorithm_mean_ms']:.2f} ms to its algorithm")


if __name__ == "__main__":
    main()
