#!/usr/bin/python3
"""Scale test of the live path: the fake API server with N GPU nodes and M
managed pods, the real gpu-extender listing and watching them. Reports the
time from start to ready (nodes, managed pods and ledger listed), RSS at
ready and peak, and the cost of a burst of watch events.

    bench/live_scale.py BUILD_DIR [--nodes 5000] [--pods 50000]
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from gxtest import Extender, FakeApiServer, live_overrides, rss_kib  # noqa: E402


def vm(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    a = ap.parse_args()
    t0 = time.time()
    api = FakeApiServer(extra=["--gen-nodes", str(a.nodes), "--gen-pods", str(a.pods)])
    print(f"fake API server up with {a.nodes} nodes, {a.pods} pods in {time.time() - t0:.1f} s", flush=True)
    ext = Extender(os.path.join(a.build, "gpu-extender"),
                   overrides=live_overrides(api, **{"log.level": "warn",
                                                    "ledger.sync_interval_s": 30,
                                                    "ledger.reconcile_interval_s": 3600}))
    try:
        t1 = time.time()
        ext.start(wait_ready=True)
        ready_s = time.time() - t1
        pid = ext.proc.pid
        rss_ready, hwm = vm(pid, "VmRSS"), vm(pid, "VmHWM")
        _, body, _ = ext.request("GET", "/metrics")
        nodes = [l for l in body.decode().splitlines() if l.startswith("gpu_extender_snapshot_nodes ")]
        # A burst of watch events: 500 node updates (label changes).
        with open(os.path.join(ROOT, "config", "demo", "nodes.json")) as f:
            node = json.load(f)["items"][1]
        t2 = time.time()
        for i in range(500):
            n = json.loads(json.dumps(node))
            n["metadata"]["name"] = f"burst-{i:04d}"
            api.control("POST", "/control/nodes", n)
        deadline = time.time() + 60
        while time.time() < deadline:
            _, body, _ = ext.request("GET", "/metrics")
            got = [l for l in body.decode().splitlines() if l.startswith("gpu_extender_snapshot_nodes ")]
            if got and nodes and float(got[0].split()[1]) >= float(nodes[0].split()[1]) + 500:
                break
            time.sleep(0.05)
        burst_s = time.time() - t2
        print(json.dumps({
            "nodes": a.nodes, "managed_pods": a.pods,
            "start_to_ready_s": round(ready_s, 2),
            "rss_at_ready_mib": round(rss_ready, 1), "peak_rss_mib": round(hwm, 1),
            "snapshot_nodes": nodes[0].split()[1] if nodes else None,
            "burst_500_node_events_applied_s": round(burst_s, 2),
            "rss_after_burst_mib": round(vm(pid, "VmRSS"), 1),
        }, indent=1))
    finally:
        ext.cleanup()
        api.stop()


if __name__ == "__main__":
    main()
