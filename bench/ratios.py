#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The two cost ratios of issue 11, printed by one command (scripts/bench.sh ratios).

  full Nodes filter, 5,000 nodes / 1,000 nodes   target <= 5.5 (linear is 5.0)
  NodeNames at 5,000 names, prioritize / filter  target ~1 (the same work but the reply)

Two servers (the 1,000- and the 5,000-node cluster of bench/gen.py) run side by side
and are measured in alternating rounds, so a noisy neighbour slows both sides of a
ratio alike. Each ratio is given twice: from the p50 latency seen by bench/gxload and
from the server's own CPU time per request (utime + stime from /proc), which does not
count the load client or other processes on the same cores. Medians over the rounds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Server:
    def __init__(self, binary, d):
        cfg = os.path.join(d, "config.json")
        with open(cfg) as f:
            self.port = json.load(f)["server"]["port"]
        self.logf = open(os.path.join(d, "extender-ratios.log"), "wb")
        self.proc = subprocess.Popen([binary, "--config", cfg], stdout=self.logf,
                                     stderr=self.logf)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.port,
                                            timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("gpu-extender on %s did not become ready" % d)
            time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.logf.close()


def measure(load, srv, verb, body, n):
    """(p50 ms seen by the client, server CPU ms per request) over @n requests."""
    url = "http://127.0.0.1:%d/gpu-extender/%s" % (srv.port, verb)
    c0 = cpu_s(srv.proc.pid)
    p = subprocess.run([load, "-u", url, "-b", body, "-c", "1", "-d", "0.05", "-w", "0",
                        "-m", str(n), "-j"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("gxload failed: %s %s" % (p.stdout, p.stderr))
    r = json.loads(p.stdout)
    return r["p50_us"] / 1000.0, (cpu_s(srv.proc.pid) - c0) * 1000.0 / r["requests"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--data", default="/tmp/gx-bench-data")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    ext = os.path.join(a.build, "gpu-extender")
    load = os.path.join(a.build, "bench", "gxload")
    dirs = {}
    for n in (1000, 5000):
        d = os.path.join(a.data, str(n))
        if not os.path.exists(os.path.join(d, "args-nodes-excl.json")):
            log("== %d nodes: generating data" % n)
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen.py"), "--nodes",
                            str(n), "--out", d, "--port", str(21000 + n)], check=True)
        dirs[n] = d
    srv = {n: Server(ext, d) for n, d in dirs.items()}
    rows = {k: [] for k in ("n1000", "n5000", "filt", "prio")}
    try:
        for n, s in srv.items():  # warm-up: caches, allocator, verdict cache
            measure(load, s, "filter", os.path.join(dirs[n], "args-nodes-excl.json"), 2)
        for r in range(a.rounds):
            rows["n1000"].append(measure(load, srv[1000], "filter",
                                         os.path.join(dirs[1000], "args-nodes-excl.json"), 15))
            rows["n5000"].append(measure(load, srv[5000], "filter",
                                         os.path.join(dirs[5000], "args-nodes-excl.json"), 3))
            names = os.path.join(dirs[5000], "args-names-excl.json")
            rows["filt"].append(measure(load, srv[5000], "filter", names, 300))
            rows["prio"].append(measure(load, srv[5000], "prioritize", names, 300))
            log("   round %d/%d done" % (r + 1, a.rounds))
    finally:
        for s in srv.values():
            s.stop()

    def med(key, i):
        return statistics.median(x[i] for x in rows[key])

    def ratio(num, den, i):
        return statistics.median(x[i] / y[i] for x, y in zip(rows[num], rows[den]))

    out = {
        "full_nodes_filter_1000_p50_ms": med("n1000", 0),
        "full_nodes_filter_5000_p50_ms": med("n5000", 0),
        "full_nodes_ratio_p50": ratio("n5000", "n1000", 0),
        "full_nodes_ratio_cpu": ratio("n5000", "n1000", 1),
        "names5000_filter_p50_ms": med("filt", 0),
        "names5000_prioritize_p50_ms": med("prio", 0),
        "prioritize_over_filter_p50": ratio("prio", "filt", 0),
        "prioritize_over_filter_cpu": ratio("prio", "filt", 1),
        "rounds": a.rounds,
        "loadavg": os.getloadavg()[0],
    }
    print("full Nodes filter p50: 1,000 nodes %.1f ms, 5,000 nodes %.1f ms" % (
        out["full_nodes_filter_1000_p50_ms"], out["full_nodes_filter_5000_p50_ms"]))
    print("  5,000 / 1,000: %.2fx by p50, %.2fx by server CPU   (target <= 5.5x)" % (
        out["full_nodes_ratio_p50"], out["full_nodes_ratio_cpu"]))
    print("NodeNames, 5,000 names p50: filter %.2f ms, prioritize %.2f ms" % (
        out["names5000_filter_p50_ms"], out["names5000_prioritize_p50_ms"]))
    print("  prioritize / filter: %.2fx by p50, %.2fx by server CPU   (target ~1x)" % (
        out["prioritize_over_filter_p50"], out["prioritize_over_filter_cpu"]))
    print("(%d rounds, load average %.1f)" % (a.rounds, out["loadavg"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
