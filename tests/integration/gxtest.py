"""Helpers shared by the integration tests: run the real gpu-extender binary
with a temporary config, talk HTTP to it, count checks."""
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
