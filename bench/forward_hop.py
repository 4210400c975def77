#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What replicas.forward costs a call: two Release replicas on the fake API server
(tests/integration/fake_apiserver.py) with the bench's generated 5,000-node NodeList and
metrics file, one leading; filter and prioritize with the 5,000-name ExtenderArgs of
bench/gen.py sent to the leader and to the follower (which forwards), alternating rounds,
p50 from bench/gxload. Prints one line per verb: leader p50, follower p50, the difference.

  python3 bench/forward_hop.py --build build-bench [--data /tmp/gx-bench-data] [--rounds 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from gxtest import Extender, FakeApiServer, live_overrides, metric_value  # noqa: E402


def p50_ms(load, ext, verb, body, n):
    p = subprocess.run([load, "-u", ext.url(ext.verb(verb)), "-b", body, "-c", "1", "-d", "0.05",
                        "-w", "0", "-m", str(n), "-j"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["p50_us"] / 1000.0


def metric(ext, name):
    return metric_value(ext.request("GET", "/metrics")[1].decode(), name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--data", default="/tmp/gx-bench-data")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    d = os.path.join(a.data, "5000")
    if not os.path.exists(os.path.join(d, "args-names-excl.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen.py"), "--nodes", "5000",
                        "--out", d, "--port", "26000"], check=True)
    load = os.path.join(a.build, "bench", "gxload")
    api = FakeApiServer(nodes=os.path.join(d, "nodes.json"))
    exts = []
    try:
        for _ in range(2):
            e = Extender(os.path.join(a.build, "gpu-extender"),
                         config=os.path.join(d, "config.json"), overrides=live_overrides(api, **{
                             "replicas.forward": True, "log.level": "warn",
                             "sources.files.metrics": [os.path.join(d, "dcgm.prom")]}))
            e.cfg["replicas"]["advertise_url"] = e.url("")
            e.write_config(e.cfg)
            exts.append(e.start())
            time.sleep(1.0)
        leader, follower = exts if metric(exts[0], "gpu_extender_leader") == 1 else exts[::-1]
        body = os.path.join(d, "args-names-excl.json")
        for verb in ("filter", "prioritize"):
            rows = []
            for ext in (leader, follower):  # warm-up
                p50_ms(load, ext, verb, body, 20)
            for _ in range(a.rounds):
                rows.append((p50_ms(load, leader, verb, body, 200),
                             p50_ms(load, follower, verb, body, 200)))
            lead = statistics.median(r[0] for r in rows)
            fwd = statistics.median(r[1] for r in rows)
            print(f"{verb} 5,000 names: leader p50 {lead:.3f} ms, through the follower "
                  f"{fwd:.3f} ms, +{fwd - lead:.3f} ms ({a.rounds} rounds, median)")
        print(f"forwarded calls: {metric(follower, 'gpu_extender_forwarded_total'):g}")
    finally:
        for e in exts:
            e.cleanup()
        api.stop()


if __name__ == "__main__":
    main()
