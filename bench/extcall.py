#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What one filter call costs kube-scheduler's side at N names: bench/extcall (Go, kube-scheduler
v1.37.2's HTTPExtender.Filter code path with the real types: the name map, json.Marshal of the
ExtenderArgs with the pod and N names, a POST on a kept-alive connection, json.Decoder into
ExtenderFilterResult) against (a) a null extender that answers every call at once with one node
and (b) one Release gpu-extender on the fake API server with the bench's generated nodes and the
default install's filter.shortlist_nodes (100). Prints the wall p50 and the client's CPU per call.
Needs Go and the module proxy (k8s.io/api, k8s.io/kube-scheduler) the first time.

  python3 bench/extcall.py --build build-bench [--nodes 5000] [--calls 500]
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from gxtest import Extender, FakeApiServer, free_port, live_overrides  # noqa: E402



def client(tool, url, pod, nodes, calls):
    return subprocess.run([tool, "-url", url, "-pod", pod, "-nodes", str(nodes), "-calls",
                           str(calls)], capture_output=True, text=True, check=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--data", default="/tmp/gx-bench-data")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--pod", default=os.path.join(ROOT, "tests", "fixtures", "pod-gpu.json"))
    a = ap.parse_args()
    tool = os.path.join(a.build, "extcall")
    env = dict(os.environ, PATH="/usr/local/go/bin:" + os.environ.get("PATH", ""))
    subprocess.run(["go", "build", "-o", os.path.abspath(tool), "."], check=True, env=env,
                   cwd=os.path.join(ROOT, "bench", "extcall"))
    d = os.path.join(a.data, str(a.nodes))
    if not os.path.exists(os.path.join(d, "nodes.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen.py"), "--nodes",
                        str(a.nodes), "--out", d, "--port", "26000"], check=True)
    port = free_port()
    null = subprocess.Popen([tool, "-serve", f"127.0.0.1:{port}"])
    api = ext = None
    try:
        time.sleep(0.5)
        print("null extender:", client(tool, f"http://127.0.0.1:{port}/filter", a.pod, a.nodes,
                                       a.calls))
        api = FakeApiServer(nodes=os.path.join(d, "nodes.json"))
        ext = Extender(os.path.join(a.build, "gpu-extender"),
                       config=os.path.join(d, "config.json"), overrides=live_overrides(api, **{
                           "log.level": "warn", "filter.shortlist_nodes": 100,
                           "sources.files.metrics": [os.path.join(d, "dcgm.prom")]})).start()
        time.sleep(1.0)
        print("gpu-extender: ", client(tool, ext.url(ext.verb("filter")), a.pod, a.nodes, a.calls))
    finally:
        null.kill()
        if ext is not None:
            ext.stop()
        if api is not None:
            api.stop()


if __name__ == "__main__":
    main()
