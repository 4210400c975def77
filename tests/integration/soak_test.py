"""Issue 6 (and issue 3's flat-RSS check): a bounded soak. Mixed filter /
prioritize / bind load against the real binary in live mode while the fake
API server injects watch faults every few seconds and a real Prometheus goes
down and comes back. Zero 5xx for valid requests, every bind answered with
success or an Error, RSS flat, the ledger never over-admits, and SIGTERM
under load answers every request already sent, then exits 0 (LeakSanitizer
included in ASan builds).

GX_SOAK_SECONDS sets the length (CI: 60; scripts/soak.sh: 600)."""
import copy
import http.client
import json
import os
import random
import signal
import sys
import threading
import time

from gxtest import (Checks, Extender, FakeApiServer, PromStack, bind_args, fixture, live_overrides,
                    rss_kib, shared_pod)

SECONDS = int(os.environ.get("GX_SOAK_SECONDS", "60"))
c = Checks("soak")
api = FakeApiServer()
prom = PromStack().start()
ext = None
stop = threading.Event()
stats = {"requests": 0, "5xx": 0, "bad": 0, "binds_ok": 0, "binds_err": 0, "conn_errors": 0}
lock = threading.Lock()
EXCL = fixture("pod-gpu.json")
NODES = ["gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-d"]
SLOTS = {"gpu-node-a": 4, "gpu-node-b": 4, "gpu-node-c": 4}


def count(key, n=1):
    with lock:
        stats[key] += n


class Client:
    def __init__(self, port):
        self.port = port
        self.conn = None

    def post(self, path, body):
        data = json.dumps(body).encode()
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                self.conn.request("POST", path, data, {"Content-Type": "application/json"})
                r = self.conn.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt == 1 or stop.is_set():
                    raise
        raise OSError("unreachable")


def scheduling_load(port, verb):
    cl = Client(port)
    rng = random.Random(verb)
    while not stop.is_set():
        pod = copy.deepcopy(EXCL)
        pod["metadata"]["uid"] = f"uid-load-{rng.randrange(1000)}"
        try:
            st, body = cl.post(f"/gpu-extender/{verb}", {"Pod": pod, "Nodes": None, "NodeNames": NODES})
        except (OSError, http.client.HTTPException):
            count("conn_errors")
            continue
        count("requests")
        if st >= 500:
            count("5xx")
        elif st != 200 or not isinstance(json.loads(body), (dict, list)):
            count("bad")


def bind_load(port, pods):
    cl = Client(port)
    rng = random.Random(7)
    i = 0
    while not stop.is_set():
        p = pods[i % len(pods)]
        i += 1
        node = rng.choice(list(SLOTS))
        try:
            st, body = cl.post("/gpu-extender/bind", bind_args(p, node))
        except (OSError, http.client.HTTPException):
            count("conn_errors")
            continue
        count("requests")
        res = json.loads(body) if st == 200 else {}
        if st >= 500:
            count("5xx")
        elif st != 200 or "Error" not in res:
            count("bad")
        elif res["Error"] == "":
            count("binds_ok")
            # Free the slot again now and then: the reconciler releases deleted pods' tenants.
            if rng.random() < 0.3:
                md = p["metadata"]
                api.control("DELETE", f"/control/pods/{md['namespace']}/{md['name']}")
                np = shared_pod(md["name"] + "x", md["uid"] + "x")
                api.control("POST", "/control/pods", np)
                pods[(i - 1) % len(pods)] = np
        else:
            count("binds_err")
        time.sleep(0.02)


def flapper():
    kinds = ["drop", "gone", "500", "garbage", "slow", "truncate"]
    k = 0
    last_prom = time.time()
    prom_up = True
    while not stop.wait(3):
        api.control("POST", "/control/fault", {"kind": kinds[k % len(kinds)], "path_prefix": "/api/v1/",
                                               "watch": True, "count": 1, "delay_s": 1})
        k += 1
        if time.time() - last_prom > 12:
            if prom_up:
                prom.stop_prometheus()
            else:
                prom.start()
            prom_up = not prom_up
            last_prom = time.time()
    if not prom_up:
        prom.start()


try:
    pods = [shared_pod(f"soak-{i}", f"uid-soak-{i}") for i in range(40)]
    for p in pods:
        api.control("POST", "/control/pods", p)
    c.ok(prom.wait_series("DCGM_FI_DEV_GPU_UTIL", 12), "prometheus up")
    ext = Extender(sys.argv[1], overrides=live_overrides(api, **{
        "sources.files.metrics": [],
        "prometheus.url": prom.url,
        "prometheus.interval_s": 1,
        "kubernetes.watch_timeout_s": 10,
        "log.level": "warn",
    })).start()
    pid = ext.proc.pid
    threads = [threading.Thread(target=scheduling_load, args=(ext.port, v)) for v in ("filter", "filter", "prioritize")]
    threads.append(threading.Thread(target=bind_load, args=(ext.port, pods)))
    threads.append(threading.Thread(target=flapper))
    for t in threads:
        t.start()
    rss = []
    t0 = time.time()
    while time.time() - t0 < SECONDS:
        time.sleep(1)
        rss.append(rss_kib(pid))
    # SIGTERM under load: requests keep coming while the server drains.
    ext.proc.send_signal(signal.SIGTERM)
    rc = ext.proc.wait(timeout=30)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    c.eq(rc, 0, "exit status 0 after SIGTERM under load (no leak reported)")
    c.ok(stats["requests"] > SECONDS * 20, f"load ran ({stats})")
    c.eq(stats["5xx"], 0, "no 5xx for valid requests")
    c.eq(stats["bad"], 0, "every answer is a schema-valid 200")
    c.ok(stats["binds_ok"] > 0 and stats["binds_err"] >= 0, f"binds answered ({stats['binds_ok']} ok, {stats['binds_err']} errors)")
    n = len(rss)
    warm = sorted(rss[n // 5: 2 * n // 5] or rss)[len(rss[n // 5: 2 * n // 5] or rss) // 2]
    late = sorted(rss[4 * n // 5:] or rss)[len(rss[4 * n // 5:] or rss) // 2]
    print(f"soak: {SECONDS} s, {stats['requests']} requests, RSS KiB start {rss[0]} warm {warm} end {late} max {max(rss)}")
    c.ok(late - warm < 32 * 1024, f"RSS flat (warm {warm} KiB, end {late} KiB)")
    # The ledger never over-admits: per card slices within slots, each pod at most once.
    seen = set()
    for node, slots in SLOTS.items():
        per_card = {}
        for t in api.lease_tenants(node):
            c.ok(t["uid"] not in seen, f"{t['uid']} held once")
            seen.add(t["uid"])
            if t["card"] >= 0 and not t["exclusive"]:
                per_card[t["card"]] = per_card.get(t["card"], 0) + t["slices"]
        c.ok(all(v <= slots for v in per_card.values()), f"{node} within its slots ({per_card})")
finally:
    stop.set()
    if ext is not None:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
    prom.cleanup()
    api.stop()
c.done()
