"""Helpers shared by the integration tests: run the real gpu-extender binary
with a temporary config, talk HTTP to it, count checks."""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def find_kubectl(arg=None):
    """kubectl for kustomize: @arg, else $KUBECTL, else $GX_K8S_BIN/kubectl, else the newest
    kubectl tests/k8s/build.sh cached, else one on PATH; None if there is none."""
    if arg:
        return arg
    if os.environ.get("KUBECTL"):
        return os.environ["KUBECTL"]
    k8s_bin = os.environ.get("GX_K8S_BIN")
    if k8s_bin and os.access(os.path.join(k8s_bin, "kubectl"), os.X_OK):
        return os.path.join(k8s_bin, "kubectl")
    cache = os.environ.get("GX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "gpu-extender")
    found = [p for p in glob.glob(os.path.join(cache, "k8s-*", "kubectl")) if os.access(p, os.X_OK)]
    found += [p for p in glob.glob(os.path.join(cache, "k8s-*", "bin", "kubectl"))
              if os.access(p, os.X_OK)]

    def ver(p):
        d = os.path.basename(os.path.dirname(p))
        if d == "bin":
            d = os.path.basename(os.path.dirname(os.path.dirname(p)))
        parts = d[len("k8s-"):].lstrip("v").split(".")
        return [int(x) if x.isdigit() else 0 for x in parts]

    return max(found, key=ver) if found else shutil.which("kubectl")


def wait_for(cond, timeout, what=None, interval=0.1, must=False):
    """Poll @cond every @interval seconds until it returns something true and return
    that value; None once @timeout seconds pass. An exception from @cond counts as
    "not yet". On a timeout @what, if given, is printed, or raised as TimeoutError
    with @must (a set-up step the test cannot go on without)."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = cond()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - any failure means "not yet"
            last = e
        time.sleep(interval)
    if what and must:
        raise TimeoutError(f"timeout waiting for {what}: {last!r}")
    if what:
        print(f"timeout waiting for {what}: {last!r}", flush=True)
    return None


def metric_value(text, series):
    """The value of @series (a metric name with its labels as rendered, e.g.
    'gpu_extender_binds_total{outcome="bound"}') in the /metrics @text, or None."""
    for ln in text.splitlines():
        if ln.startswith(series + " "):
            return float(ln.split()[-1])
    return None


def read_port(path):
    """The port a process wrote to @path once it listens; None before that."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def stop_all(c, exts, api):
    """The end of a test on the fake API server: the extenders' logs when a check failed,
    then every extender and the API server stopped."""
    for e in exts:
        if c.failed:
            print(e.logs())
        e.cleanup()
    api.stop()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fixture(name, parse=True):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        data = f.read()
    return json.loads(data) if parse else data


class Checks:
    """Counts passed/failed checks and prints the summary CI reads."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def ok(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL [{self.name}] {what}", flush=True)
        return cond

    def eq(self, got, want, what):
        return self.ok(got == want, f"{what}: got {got!r}, want {want!r}")

    def done(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)


class Checker:
    """Named pass/fail results, printed "ok   name" or "FAIL name: why" (the static checks
    of manifests/ and of the chart). With @multiline a failure lists its problems one an
    indented line below the name."""

    def __init__(self, multiline=False):
        self.passed = 0
        self.failed = 0
        self.multiline = multiline

    def check(self, name, ok, why=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}:{chr(10) if self.multiline else ' '}{why}")
        return ok

    def run(self, name, fn, *args):
        """Run fn(*args), which returns a list of problems (empty = pass)."""
        try:
            problems = fn(*args)
        except Exception as exc:  # a crash in a check is a failure, not a traceback
            problems = [f"{type(exc).__name__}: {exc}"]
        why = "\n".join("  " + p for p in problems) if self.multiline else "; ".join(problems)
        return self.check(name, not problems, why)


class Extender:
    """The real binary on a copy of a config with a free port."""

    def __init__(self, binary, config=None, overrides=None, workdir=None):
        self.binary = binary
        self.dir = workdir or tempfile.mkdtemp(prefix="gx-it-")
        src = config or os.path.join(ROOT, "config", "demo.json")
        with open(src) as f:
            cfg = json.load(f)
        base = os.path.dirname(os.path.abspath(src))
        files = cfg.setdefault("sources", {}).setdefault("files", {})
        if files.get("nodes"):
            files["nodes"] = os.path.join(base, files["nodes"])
        files["metrics"] = [os.path.join(base, m) for m in files.get("metrics", [])]
        cfg.setdefault("server", {})["port"] = free_port()
        cfg["server"]["address"] = "127.0.0.1"
        for path, value in (overrides or {}).items():
            node = cfg
            keys = path.split(".")
            for k in keys[:-1]:
                node = node.setdefault(k, {})
            node[keys[-1]] = value
        self.cfg = cfg
        self.port = cfg["server"]["port"]
        self.config_path = os.path.join(self.dir, "config.json")
        self.write_config(cfg)
        self.log_path = os.path.join(self.dir, "extender.log")
        self.proc = None

    def write_config(self, cfg):
        tmp = self.config_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(cfg, f, indent=1)
        os.replace(tmp, self.config_path)

    def start(self, wait_ready=True):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([self.binary, "--config", self.config_path],
                                     stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"extender exited {self.proc.returncode}: {self.logs()}")
            try:
                st, _, _ = self.request("GET", "/healthz")
                if st == 200:
                    if not wait_ready or self.request("GET", "/readyz")[0] == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("extender did not become ready: " + self.logs())

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, method, path, body=None, headers=None, timeout=10):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        req = urllib.request.Request(self.url(path), data=body, method=method)
        req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def post_json(self, path, body):
        st, data, _ = self.request("POST", path, body)
        try:
            return st, json.loads(data)
        except ValueError:
            return st, data

    def verb(self, name):
        return self.cfg["server"].get("url_prefix", "/gpu-extender") + "/" + name

    def logs(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.log.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class FakeApiServer:
    """tests/integration/fake_apiserver.py in a subprocess, with its control API."""

    def __init__(self, nodes=None, token=None, extra=()):
        self.dir = tempfile.mkdtemp(prefix="gx-api-")
        port_file = os.path.join(self.dir, "port")
        args = ["/usr/bin/python3", os.path.join(ROOT, "tests", "integration", "fake_apiserver.py"),
                "--port", "0", "--port-file", port_file,
                "--nodes", nodes or os.path.join(ROOT, "config", "demo", "nodes.json")]
        if token:
            args += ["--token", token]
        args += list(extra)
        self.log = open(os.path.join(self.dir, "api.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            self.port = read_port(port_file)
            if self.port:
                self.url = f"http://127.0.0.1:{self.port}"
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("fake API server did not start")

    def control(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def state(self):
        return self.control("GET", "/control/state")[1]

    def lease_tenants(self, node, ns="gpu-extender"):
        lease = self.state()["leases"].get(f"{ns}/gpu-extender-{node}")
        if not lease:
            return []
        ann = lease["metadata"].get("annotations", {}).get("gpu-extender.io/tenants")
        return json.loads(ann)["tenants"] if ann else []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def live_overrides(api, **extra):
    """Config overrides for an extender whose nodes and ledger live in @api."""
    o = {
        "sources.files.nodes": None,
        "kubernetes.enabled": True,
        "kubernetes.url": api.url,
        "kubernetes.namespace": "gpu-extender",
        "ledger.sync_interval_s": 1,
        "ledger.reconcile_interval_s": 1,
    }
    o.update(extra)
    return o


def shared_pod(name, uid, ns="team-a", slices="1", memory=None):
    """A pending pod asking for a time slice through annotations."""
    ann = {"gpu-extender.io/time-slices": slices}
    if memory:
        ann["gpu-extender.io/gpu-memory"] = memory
    return {
        "metadata": {"name": name, "namespace": ns, "uid": uid, "annotations": ann,
                     "labels": {"app": "shared"}},
        "spec": {"schedulerName": "gpu-scheduler",
                 "containers": [{"name": "main", "image": "cuda:13", "resources": {}}]},
        "status": {"phase": "Pending"},
    }


def bind_args(pod, node):
    md = pod["metadata"]
    return {"PodName": md["name"], "PodNamespace": md["namespace"], "PodUID": md["uid"], "Node": node}


class PromStack:
    """A real Prometheus (Debian package) scraping dcgm-exporter pages served from memory."""

    def __init__(self, pages=None, interval="1s"):
        import http.server
        import threading

        self.dir = tempfile.mkdtemp(prefix="gx-prom-")
        self.lock = threading.Lock()
        self.pages = pages or {}
        if not self.pages:
            for node in ("a", "b", "c"):
                with open(os.path.join(ROOT, "config", "demo", f"dcgm-gpu-node-{node}.prom")) as f:
                    self.pages[f"/node-{node}"] = f.read()
        stack = self

        class Exporter(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with stack.lock:
                    body = stack.pages.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.exporter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
        threading.Thread(target=self.exporter.serve_forever, daemon=True).start()
        exp_port = self.exporter.server_address[1]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        jobs = "\n".join(f"""  - job_name: dcgm{p.replace('/', '-')}
    scrape_interval: {interval}
    scrape_timeout: 900ms
    metrics_path: {p}
    static_configs:
      - targets: ['127.0.0.1:{exp_port}']""" for p in self.pages)
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write(f"global:\n  scrape_interval: {interval}\nscrape_configs:\n{jobs}\n")
        self.proc = None

    def start(self):
        log = open(os.path.join(self.dir, "prometheus.log"), "ab")
        self.proc = subprocess.Popen(["prometheus", f"--config.file={self.dir}/prometheus.yml",
                                      f"--storage.tsdb.path={self.dir}/data",
                                      f"--web.listen-address=127.0.0.1:{self.port}",
                                      "--query.lookback-delta=5s"], stdout=log, stderr=log)
        log.close()
        return self

    def wait_series(self, query, count, timeout=60):
        import urllib.parse

        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                url = f"{self.url}/api/v1/query?query=" + urllib.parse.quote(query)
                with urllib.request.urlopen(url, timeout=2) as r:
                    if len(json.loads(r.read())["data"]["result"]) >= count:
                        return True
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        return False

    def stop_prometheus(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self):
        self.stop_prometheus()
        self.exporter.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)


def rss_kib(pid):
    """Resident set size of @pid in KiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
