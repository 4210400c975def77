#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A gang member's filter at 5,000 nodes, offline: one Release gpu-extender on the bench's
generated cluster (bench/gen.py, file mode), the 5,000-name ExtenderArgs of a 1-GPU pod sent
for every member of GROUPS gangs of three (spec.schedulingGroup), one after another as
kube-scheduler's group cycle sends them, so the tentative bookings pile up (nothing binds;
--bind binds each gang's members to their nodes after its cycle, so at most one gang's are held).
Prints the p50 and max per member and for the same pod without a group, timed by the client
(Python's HTTP client included, so compare the rows, not the absolutes).

  python3 bench/gang_filter.py --build build-bench [--data /tmp/gx-bench-data] [--groups 60]
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from gxtest import Extender  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--data", default="/tmp/gx-bench-data")
    ap.add_argument("--groups", type=int, default=60)
    ap.add_argument("--bind", action="store_true")
    a = ap.parse_args()
    d = os.path.join(a.data, "5000")
    if not os.path.exists(os.path.join(d, "args-names-excl.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen.py"), "--nodes", "5000",
                        "--out", d, "--port", "26000"], check=True)
    with open(os.path.join(d, "args-names-excl.json")) as f:
        base = json.load(f)
    ext = Extender(os.path.join(a.build, "gpu-extender"), config=os.path.join(d, "config.json"),
                   overrides={"log.level": "warn"}).start()

    def call(name, group):
        pod = copy.deepcopy(base["Pod"])
        pod["metadata"].update(uid=name, name=name)
        if group:
            pod["spec"]["schedulingGroup"] = {"podGroupName": group}
        body = json.dumps({"Pod": pod, "Nodes": None, "NodeNames": base["NodeNames"]})
        t = time.perf_counter()
        st, data, _ = ext.request("POST", ext.verb("filter"), body)
        ms = (time.perf_counter() - t) * 1000.0
        if st != 200:
            raise RuntimeError(f"filter answered {st}")
        return ms, pod, (json.loads(data).get("NodeNames") or [None])[0]

    def bind(pod, node):
        md = pod["metadata"]
        st, _, _ = ext.request("POST", ext.verb("bind"), json.dumps({
            "PodName": md["name"], "PodNamespace": md["namespace"], "PodUID": md["uid"],
            "Node": node}))
        if st != 200:
            raise RuntimeError(f"bind answered {st}")

    try:
        plain = [call(f"plain-{i}", None)[0] for i in range(30)][5:]
        members = [[], [], []]
        for g in range(a.groups):
            pinned = []
            for m in range(3):
                ms, pod, node = call(f"g{g}-m{m}", f"grp-{g}")
                members[m].append(ms)
                pinned.append((pod, node))
            for pod, node in pinned if a.bind else ():
                bind(pod, node)
        print(f"no group: p50 {statistics.median(plain):.2f} ms, max {max(plain):.2f} ms")
        for m, ms in enumerate(members):
            print(f"member {m} of {a.groups} gangs: p50 {statistics.median(ms):.2f} ms, "
                  f"max {max(ms):.2f} ms")
    finally:
        ext.cleanup()


if __name__ == "__main__":
    main()
