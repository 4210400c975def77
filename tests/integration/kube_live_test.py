"""Nodes from the Kubernetes API server: the real binary against the fake API
server (TLS with a CA made here, bearer token). The extender follows node
additions and deletions through its watch, and recovers from every fault the
fake server can inject (410 Gone, dropped and truncated streams, slow
answers, HTTP 500, garbage, a compacted history) without a restart, while
answering filter calls with 200 and a well-formed result throughout."""
import copy
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from gxtest import ROOT, Checks, Extender, fixture, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
NAMES = ["gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-d"]
UNKNOWN = "node unknown to gpu-extender"
TOKEN = "gx-live-token-1"
TOKEN2 = "gx-live-token-2-rotated"
FAULTS = ["gone", "drop", "slow", "500", "garbage", "truncate"]
RESULT_KEYS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}

c = Checks("kube_live")
work = tempfile.mkdtemp(prefix="gx-kube-")
POD = fixture("pod-gpu.json")
NODELIST = fixture("nodelist.json")


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)


def make_tls():
    """A throw-away CA and a server certificate for 127.0.0.1 signed by it."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=gx-kube-live-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("openssl", "req", *ec, "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")
    with open(os.path.join(work, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "server.ext")


wait = wait_for


class Api:
    """The fake API server process and its control API (no auth needed)."""

    def __init__(self):
        self.port_file = os.path.join(work, "api.port")
        self.log = open(os.path.join(work, "apiserver.log"), "ab")
        self.proc = subprocess.Popen(
            [PY, os.path.join(HERE, "fake_apiserver.py"), "--port", "0",
             "--nodes", os.path.join(ROOT, "config", "demo", "nodes.json"),
             "--token", TOKEN, "--tls-cert", os.path.join(work, "server.crt"),
             "--tls-key", os.path.join(work, "server.key"), "--port-file", self.port_file],
            stdout=self.log, stderr=self.log)
        if not wait(lambda: os.path.exists(self.port_file), 20, "fake API server port"):
            raise RuntimeError("fake API server did not start")
        with open(self.port_file) as f:
            self.port = int(f.read().strip())
        self.url = f"https://127.0.0.1:{self.port}"
        self.ctx = ssl.create_default_context(cafile=os.path.join(work, "ca.crt"))

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def add_node(self, name, source="gpu-node-a"):
        node = copy.deepcopy(next(n for n in NODELIST["items"] if n["metadata"]["name"] == source))
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        node["metadata"].pop("resourceVersion", None)
        node["metadata"].pop("uid", None)
        return self.call("POST", "/control/nodes", node)[0]

    def delete_node(self, name):
        return self.call("DELETE", f"/control/nodes/{name}")[0]

    def fault(self, kind, watch, **extra):
        spec = {"kind": kind, "path_prefix": "/api/v1/nodes", "count": 1, "watch": watch, **extra}
        return self.call("POST", "/control/fault", spec)[0]

    def faults_left(self):
        st, state = self.call("GET", "/control/state?objects=0")
        return state["faults"] if st == 200 else ["?"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def pod(uid):
    p = copy.deepcopy(POD)
    p["metadata"]["uid"] = uid
    return p


def schema_problem(res, names):
    """Why @res is not a well-formed ExtenderFilterResult for @names (None if it is)."""
    if not isinstance(res, dict) or set(res) != RESULT_KEYS:
        return f"keys {sorted(res) if isinstance(res, dict) else type(res)}"
    if res["Error"] != "" or res["Nodes"] is not None:
        return f"Error {res['Error']!r} / Nodes {res['Nodes']!r}"
    kept = res["NodeNames"]
    failed = res["FailedNodes"]
    unres = res["FailedAndUnresolvableNodes"]
    if not isinstance(kept, list) or not isinstance(failed, dict) or not isinstance(unres, dict):
        return "field types"
    if not all(isinstance(v, str) and v for v in list(failed.values()) + list(unres.values())):
        return "reasons must be non-empty strings"
    if sorted(kept + list(failed) + list(unres)) != sorted(names):
        return f"nodes not partitioned: {kept} {failed} {unres}"
    return None


def filter_call(ext, names, uid="u-live"):
    st, res = ext.post_json(ext.verb("filter"), {"Pod": pod(uid), "Nodes": None, "NodeNames": names})
    return st, res


def verdicts(ext, names):
    """{node: "keep" | reason} of one filter call (raises on a bad answer)."""
    st, res = filter_call(ext, names)
    if st != 200:
        raise RuntimeError(f"filter HTTP {st}: {res!r}")
    bad = schema_problem(res, names)
    if bad:
        raise RuntimeError(f"filter answer malformed: {bad}")
    out = {n: "keep" for n in res["NodeNames"]}
    out.update(res["FailedNodes"])
    out.update(res["FailedAndUnresolvableNodes"])
    return out


class Poller(threading.Thread):
    """Calls filter all the time; every answer must be 200 and well-formed."""

    def __init__(self, ext):
        super().__init__(daemon=True)
        self.ext = ext
        self.calls = 0
        self.bad = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            try:
                st, res = filter_call(self.ext, NAMES, "u-poll")
                problem = f"HTTP {st}" if st != 200 else schema_problem(res, NAMES)
            except Exception as e:  # noqa: BLE001 - a refused connection is a failure too
                problem = repr(e)
            self.calls += 1
            if problem:
                self.bad.append(problem)
            time.sleep(0.05)


def metric(ext, prefix):
    st, body, _ = ext.request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(prefix):
            return float(line.split()[-1])
    return None


make_tls()
api = None
ext = None
poller = None
try:
    # The demo's verdicts for the pod, from the node file.
    demo = Extender(sys.argv[1]).start()
    try:
        want = verdicts(demo, NAMES)
    finally:
        demo.cleanup()
    c.eq(want.get("gpu-node-a"), "keep", "demo: 1 exclusive GPU fits gpu-node-a")

    api = Api()
    token_file = os.path.join(work, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    ext = Extender(sys.argv[1], overrides={
        "kubernetes.enabled": True,
        "kubernetes.url": api.url,
        "kubernetes.token_file": token_file,
        "kubernetes.ca_file": os.path.join(work, "ca.crt"),
        "kubernetes.timeout_s": 5,
        "kubernetes.watch_timeout_s": 10,
    }).start()
    st, _, _ = ext.request("GET", "/readyz")
    c.eq(st, 200, "ready after the first node list over TLS with the token")
    c.eq(verdicts(ext, NAMES), want, "API-server nodes give the demo verdicts")

    poller = Poller(ext)
    poller.start()

    # A node added in the API server appears; a deleted one becomes unknown.
    c.eq(api.add_node("gpu-node-e"), 200, "control: add gpu-node-e")
    c.ok(wait(lambda: verdicts(ext, ["gpu-node-e"])["gpu-node-e"] == "keep", 10, "gpu-node-e kept"),
         "a node added through the watch is kept")
    c.eq(api.delete_node("gpu-node-a"), 200, "control: delete gpu-node-a")
    c.ok(wait(lambda: verdicts(ext, ["gpu-node-a"])["gpu-node-a"] == UNKNOWN, 10, "gpu-node-a unknown"),
         f"a deleted node is rejected as '{UNKNOWN}'")

    # Each fault, once on a watch and once on the relist it leads to: the
    # watch fault hits the next watch (the current one ends within
    # watch_timeout_s); a 410 on the watch after it forces the relist that
    # meets the list fault.
    prev = "gpu-node-e"
    for i, kind in enumerate(FAULTS + ["compact"]):
        name = f"gpu-node-f{i}"
        if kind == "compact":
            # Hold the next watch for 3 s, and compact the history meanwhile:
            # its resourceVersion is then too old, the server answers 410.
            c.eq(api.fault("slow", True, delay_s=3), 200, "inject a slow watch")
            c.ok(wait(lambda: api.faults_left() == [], 20, "slow watch started"), "slow watch started")
            c.eq(api.add_node(name), 200, f"control: add {name}")
            st, _ = api.call("POST", "/control/compact", {})
            c.eq(st, 200, "control: compact")
        else:
            extra = {"delay_s": 2} if kind == "slow" else {}
            c.eq(api.fault(kind, True, **extra), 200, f"inject {kind} on a watch")
            c.eq(api.fault("gone", True), 200, "inject gone on the watch after it")
            c.eq(api.fault(kind, False, **extra), 200, f"inject {kind} on a list")
            c.ok(wait(lambda: api.faults_left() == [], 40, f"{kind} faults consumed"),
                 f"{kind}: the extender met every injected fault")
            c.eq(api.add_node(name), 200, f"control: add {name}")
        c.eq(api.delete_node(prev), 200, f"control: delete {prev}")
        c.ok(wait(lambda: verdicts(ext, [name, prev]) == {name: "keep", prev: UNKNOWN}, 15,
                  f"recovery after {kind}"),
             f"after {kind} the extender follows node changes again (no restart)")
        c.eq(ext.proc.poll(), None, f"extender still running after {kind}")
        prev = name

    # The kubelet rotates the token: the server accepts both, then only the new one.
    api.call("POST", "/control/token", {"tokens": [TOKEN, TOKEN2]})
    with open(token_file + ".tmp", "w") as f:
        f.write(TOKEN2 + "\n")
    os.replace(token_file + ".tmp", token_file)
    api.call("POST", "/control/token", {"tokens": [TOKEN2]})
    c.eq(api.fault("gone", True), 200, "force a relist after the rotation")
    c.ok(wait(lambda: api.faults_left() == [], 30, "relist after rotation"), "relist after the rotation")
    c.eq(api.add_node("gpu-node-r"), 200, "control: add gpu-node-r")
    c.ok(wait(lambda: verdicts(ext, ["gpu-node-r"])["gpu-node-r"] == "keep", 15, "gpu-node-r kept"),
         "requests after a token rotation carry the new token")

    poller.halt.set()
    poller.join(timeout=10)
    c.ok(poller.calls > 50, f"filter polled throughout ({poller.calls} calls)")
    c.eq(poller.bad[:5], [], "every filter call during the faults answered 200 and well-formed")
    st, _, _ = ext.request("GET", "/readyz")
    c.eq(st, 200, "still ready after the faults")
    gone = metric(ext, 'gpu_extender_upstream_errors_total{upstream="kubernetes",kind="gone"}')
    parse = metric(ext, 'gpu_extender_upstream_errors_total{upstream="kubernetes",kind="parse"}')
    http = metric(ext, 'gpu_extender_upstream_errors_total{upstream="kubernetes",kind="http"}')
    syncs = metric(ext, 'gpu_extender_source_syncs_total{upstream="kubernetes"}')
    c.ok(gone is not None and gone >= 7, f"410s counted ({gone})")
    c.ok(parse is not None and parse >= 2, f"garbage and truncated lists counted as parse errors ({parse})")
    c.ok(http is not None and http >= 2, f"HTTP 500s counted ({http})")
    c.ok(syncs is not None and syncs >= 8, f"relists counted as syncs ({syncs})")
    with open(ext.log_path, errors="replace") as f:
        log = f.read()
    c.ok(TOKEN not in log and TOKEN2 not in log, "the token never appears in the log")
except Exception as e:  # noqa: BLE001 - report, then clean up
    c.ok(False, f"unexpected error: {e!r}")
finally:
    if poller is not None:
        poller.halt.set()
    if ext is not None:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
    if api is not None:
        api.stop()
        if c.failed:
            with open(os.path.join(work, "apiserver.log"), errors="replace") as f:
                print(f.read()[-3000:])
    shutil.rmtree(work, ignore_errors=True)
c.done()
