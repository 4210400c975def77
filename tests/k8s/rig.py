"""The e2e control plane on loopback: etcd, kube-apiserver, kube-scheduler(s) with the shipped
KubeSchedulerConfiguration, the fake kubelet, a real Prometheus scraping fixture dcgm-exporter
pages, and gpu-extender replica(s) authenticated as the ServiceAccount of manifests/ with exactly
the RBAC of manifests/extender/02-rbac.yaml.

Used in-process by tests/e2e/*.py (class Cluster) and from the shell by tests/k8s/cluster.sh
(python3 rig.py up|down|env STATE_DIR). Every process it starts is recorded in STATE_DIR/pids and
stopped by down(). Nothing listens beyond 127.0.0.1.
"""
import base64
import copy
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ADMIN_TOKEN = "gx-e2e-admin-token"
SA_NS = "gpu-extender"
SA_NAME = "gpu-extender"
SA_USER = f"system:serviceaccount:{SA_NS}:{SA_NAME}"
SCHED_SA_USER = "system:serviceaccount:kube-system:gpu-scheduler"
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from gxtest import read_port, wait_for  # noqa: E402 - one poll loop, one port file rule

DEMO_NODES = os.path.join(ROOT, "config", "demo", "nodes.json")
DCGM_NODES = ("a", "b", "c")  # the demo nodes with dcgm-exporter pages (config/demo)
# The install the tests run unless they name files of another: the GPU-pods-only overlay (only
# pods that request a GPU resource reach the extender, LeastAllocated beside its score), which
# most tests are written against. e2e_all_pods runs the default install, manifests/ itself.
RIG_INSTALL = os.path.join("overlays", "gpu-pods-only")


def log(msg):
    print(f"[rig {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def build_binaries():
    """tests/k8s/build.sh: the cached control-plane binaries (builds them if needed)."""
    if os.environ.get("GX_K8S_BIN"):
        return os.environ["GX_K8S_BIN"]
    out = subprocess.run(["bash", os.path.join(HERE, "build.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def build_next_binaries():
    """tests/k8s-next/build.sh: the pre-release kube-scheduler next to the pinned rig's other
    binaries (GX_K8S_NEXT_BIN when scripts/test.sh built it; else built here, cached)."""
    if os.environ.get("GX_K8S_NEXT_BIN"):
        return os.environ["GX_K8S_NEXT_BIN"]
    env = dict(os.environ, GX_K8S_BIN=build_binaries())
    out = subprocess.run(["bash", os.path.join(ROOT, "tests", "k8s-next", "build.sh")], check=True,
                         stdout=subprocess.PIPE, text=True, env=env).stdout
    return out.strip().splitlines()[-1]


def shipped_scheduler_config(name="kube-scheduler-config.yaml"):
    """The KubeSchedulerConfiguration inside the shipped ConfigMap manifests/RIG_INSTALL/NAME
    (NAME with a directory: manifests/NAME, e.g. scheduler/... for the default install)."""
    sub = () if "/" in name else (RIG_INSTALL,)
    with open(os.path.join(ROOT, "manifests", *sub, name)) as f:
        cm = yaml.safe_load(f)
    return yaml.safe_load(cm["data"]["kube-scheduler-config.yaml"])


class Cluster:
    """One control plane in a state directory. Parameters:
    extenders: list of dicts, one per gpu-extender replica: {"name": "a", "tls": bool,
               "config": "config.json" (under manifests/; default RIG_INSTALL's),
               "overrides": {dotted.key: value}}.
    schedulers: list of dicts: {"name": "gpu-scheduler", "config": "kube-scheduler-config.yaml"
               (RIG_INSTALL's; "scheduler/kube-scheduler-config.yaml": the default install's),
               "extender": "a", "scheduler_name": None (keep the shipped), "leader_elect": None,
               "extender_port": None (call the extender's own port)}.
    generate: extra generated GPU nodes (copies of gpu-node-b) for scale tests.
    faults: start cmd/faultproxy in front of the API server (fault_url, set_faults()); an
               extender spec {"via_faults": True} and a scheduler spec {"via_faults": True} talk
               to the API server through it.
    apiserver_args: extra kube-apiserver flags, e.g. the gates and API versions of gang
               scheduling (tests/e2e/gang_test.py).
    """

    def __init__(self, state_dir=None, extender_bin=None, extenders=None, schedulers=None,
                 generate=0, prometheus=True, extra_nodes=None, bin_dir=None,
                 tie_to_parent=True, faults=False, apiserver_args=None):
        self.dir = os.path.abspath(state_dir or tempfile.mkdtemp(prefix="gx-k8s-"))
        os.makedirs(self.dir, exist_ok=True)
        self.bin = bin_dir or build_binaries()
        self.extender_bin = extender_bin and os.path.abspath(extender_bin)
        self.extenders = extenders if extenders is not None else ([{"name": "a"}] if extender_bin else [])
        self.schedulers = schedulers if schedulers is not None else (
            [{"name": "gpu-scheduler", "extender": "a"}] if self.extenders else [])
        self.generate = generate
        self.want_prometheus = prometheus
        self.extra_nodes = extra_nodes or []
        self.tie_to_parent = tie_to_parent
        self.want_faults = faults
        self.apiserver_args = list(apiserver_args or [])
        self.procs = {}
        self.state = {"dir": self.dir, "bin": self.bin, "pids": {}, "ports": {}}
        self.ctx = None

    # ----- helpers -----------------------------------------------------------------------------
    def path(self, *p):
        return os.path.join(self.dir, *p)

    def run(self, *args, **kw):
        kw.setdefault("check", True)
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        return subprocess.run(args, cwd=self.dir, **kw)

    def start(self, name, args, env=None):
        logf = open(self.path(f"{name}.log"), "ab")
        # In a test, every process dies with the test even when ctest kills it (SIGKILL on a
        # timeout): PR_SET_PDEATHSIG. cluster.sh up leaves them running on purpose.
        pre = _die_with_parent if self.tie_to_parent else None
        p = subprocess.Popen(args, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                             cwd=self.dir, env=env, start_new_session=True, preexec_fn=pre)
        logf.close()
        self.procs[name] = p
        self.state["pids"][name] = p.pid
        self.save()
        return p

    def stop_proc(self, name, sig=signal.SIGTERM, timeout=20):
        p = self.procs.pop(name, None)
        pid = self.state["pids"].pop(name, None)
        self.save()
        if p is not None:
            if p.poll() is None:
                p.send_signal(sig)
                try:
                    p.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            return p.returncode
        if pid:
            _kill_pid(pid, sig, timeout)
        return None

    def alive(self, name):
        p = self.procs.get(name)
        return p is not None and p.poll() is None

    def logs(self, name, tail=4000):
        try:
            with open(self.path(f"{name}.log"), "rb") as f:
                return f.read().decode(errors="replace")[-tail:]
        except OSError:
            return ""

    def save(self):
        tmp = self.path("state.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.state, f, indent=1)
        os.replace(tmp, self.path("state.json"))

    def kubectl(self, *args, check=True, input=None, kubeconfig=None):
        """Run the built kubectl; returns stdout (text)."""
        r = subprocess.run([os.path.join(self.bin, "kubectl"), "--kubeconfig",
                            kubeconfig or self.kubeconfig, *args], input=input, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.dir)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.returncode}: {r.stderr.strip()}")
        return r.stdout if check else r

    def kjson(self, *args):
        return json.loads(self.kubectl(*args, "-o", "json"))

    def api(self, method, path, body=None, token=ADMIN_TOKEN, timeout=30):
        """A raw call to the API server; returns (status, parsed body)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.api_url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.ctx) as r:
                st, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            st, raw = e.code, e.read()
        try:
            return st, json.loads(raw) if raw else None
        except ValueError:
            return st, raw

    # ----- bring-up ----------------------------------------------------------------------------
    def up(self):
        t0 = time.time()
        try:
            self._certs()
            self._etcd()
            self._apiserver()
            self._bootstrap()
            if self.want_faults:
                self._faultproxy()
            self._kubelet()
            if self.want_prometheus:
                self._prometheus()
            for e in self.extenders:
                self.start_extender(e["name"])
            for s in self.schedulers:
                self.start_scheduler(s["name"])
        except BaseException:
            log("bring-up failed; logs in " + self.dir)
            for name in list(self.state["pids"]):
                log(f"--- {name}.log ---\n" + self.logs(name, 1500))
            self.down()
            raise
        log(f"cluster up in {time.time() - t0:.1f} s ({self.dir})")
        return self

    def _certs(self):
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        self.run("openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt",
                 "-days", "3", "-subj", "/CN=gx-e2e-ca",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")

        def serving(name, cn, sans):
            self.run("openssl", "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                     "-subj", f"/CN={cn}")
            with open(self.path(f"{name}.ext"), "w") as f:
                f.write(f"subjectAltName={sans}\nbasicConstraints=critical,CA:FALSE\n"
                        "keyUsage=critical,digitalSignature,keyEncipherment\n"
                        "extendedKeyUsage=serverAuth\n")
            self.run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt",
                     "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.crt", "-days", "3",
                     "-extfile", f"{name}.ext")

        serving("apiserver", "kube-apiserver",
                "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local")
        serving("extender", "gpu-extender",
                "DNS:gpu-extender.gpu-extender.svc,DNS:localhost,IP:127.0.0.1")
        # Service-account token signing key pair.
        self.run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                 "-out", "sa.key")
        self.run("openssl", "pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        with open(self.path("tokens.csv"), "w") as f:
            f.write(f'{ADMIN_TOKEN},gx-e2e-admin,gx-e2e-admin,"system:masters"\n')
        os.chmod(self.path("tokens.csv"), 0o600)
        # Audit: every request of the extender's and the scheduler's ServiceAccounts, metadata
        # only, so a test can prove none was refused (403).
        with open(self.path("audit-policy.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                            "omitStages": ["RequestReceived"],
                            "rules": [{"level": "Metadata", "users": [SA_USER, SCHED_SA_USER]},
                                      {"level": "None"}]}, f)
        self.ctx = ssl.create_default_context(cafile=self.path("ca.crt"))

    def _etcd(self):
        cport, pport = free_port(), free_port()
        self.state["ports"]["etcd"] = cport
        self.start("etcd", [os.path.join(self.bin, "etcd"), "--data-dir", self.path("etcd-data"),
                            "--listen-client-urls", f"http://127.0.0.1:{cport}",
                            "--listen-peer-urls", f"http://127.0.0.1:{pport}"])

        def healthy():
            with urllib.request.urlopen(f"http://127.0.0.1:{cport}/health", timeout=2) as r:
                return json.loads(r.read()).get("health") == "true"
        wait_for(healthy, 60, "etcd health", must=True)

    def _apiserver(self):
        port = free_port()
        self.state["ports"]["apiserver"] = port
        self.api_url = f"https://127.0.0.1:{port}"
        self.state["api_url"] = self.api_url
        args = [os.path.join(self.bin, "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.state['ports']['etcd']}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={self.path('apiserver.crt')}",
                f"--tls-private-key-file={self.path('apiserver.key')}",
                f"--client-ca-file={self.path('ca.crt')}",
                f"--token-auth-file={self.path('tokens.csv')}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={self.path('sa.pub')}",
                f"--service-account-signing-key-file={self.path('sa.key')}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=RBAC",
                # A loopback advertise address may not be an endpoint of the kubernetes Service.
                "--endpoint-reconciler-type=none",
                f"--audit-policy-file={self.path('audit-policy.yaml')}",
                f"--audit-log-path={self.path('audit.log')}",
                "--audit-log-format=json",
                f"--cert-dir={self.path('apiserver-certs')}",
                "--profiling=false", "--v=1", *self.apiserver_args]
        self.start("kube-apiserver", args)
        self.kubeconfig = self.path("admin.kubeconfig")
        self.state["kubeconfig"] = self.kubeconfig
        self._write_kubeconfig(self.kubeconfig, ADMIN_TOKEN, "gx-e2e-admin")

        def ready():
            if not self.alive("kube-apiserver"):
                raise RuntimeError("kube-apiserver exited: " + self.logs("kube-apiserver", 3000))
            st, _ = self.api("GET", "/readyz", timeout=5)
            return st == 200
        wait_for(ready, 120, "kube-apiserver /readyz", must=True)

    def _faultproxy(self):
        """cmd/faultproxy in front of the API server, serving its certificate (127.0.0.1)."""
        pf, cf = self.path("faultproxy.port"), self.path("faultproxy.control")
        for f in (pf, cf):
            if os.path.exists(f):
                os.unlink(f)
        self.start("faultproxy", [os.path.join(self.bin, "faultproxy"), "--port-file", pf,
                                  "--control-port-file", cf, "--upstream", self.api_url,
                                  "--cert", self.path("apiserver.crt"),
                                  "--key", self.path("apiserver.key"),
                                  "--ca", self.path("ca.crt")])

        def ports():
            if not self.alive("faultproxy"):
                raise RuntimeError("faultproxy exited: " + self.logs("faultproxy"))
            p, q = read_port(pf), read_port(cf)
            return (p, q) if p and q else None
        port, ctl = wait_for(ports, 30, "faultproxy ports", must=True)
        self.fault_url = f"https://127.0.0.1:{port}"
        self.fault_ctl = f"http://127.0.0.1:{ctl}"
        with open(self.path("scheduler.token")) as f:
            self._write_kubeconfig(self.path("scheduler-faults.kubeconfig"), f.read(),
                                   "gpu-scheduler", server=self.fault_url)

    def set_faults(self, **faults):
        """Fault rates of the proxy (cmd/faultproxy/main.go); none: no faults."""
        req = urllib.request.Request(self.fault_ctl + "/faults", data=json.dumps(faults).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=5).read()

    def fault_stats(self):
        with urllib.request.urlopen(self.fault_ctl + "/stats", timeout=5) as r:
            return json.loads(r.read())

    def _write_kubeconfig(self, path, token, user, server=None):
        with open(self.path("ca.crt"), "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        cfg = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "e2e", "cluster": {"server": server or self.api_url,
                                                        "certificate-authority-data": ca}}],
               "users": [{"name": user, "user": {"token": token}}],
               "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
               "current-context": "e2e"}
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        os.chmod(path, 0o600)

    def _bootstrap(self):
        m = os.path.join(ROOT, "manifests")
        # Exactly the shipped identity and RBAC of the extender and of the second scheduler.
        for f in ("00-namespace.yaml", "01-serviceaccount.yaml", "02-rbac.yaml"):
            self.kubectl("apply", "-f", os.path.join(m, "extender", f))
        self.kubectl("apply", "-f", os.path.join(m, "scheduler", "scheduler-rbac.yaml"))
        # Without kube-controller-manager nothing creates "default" ServiceAccounts, which the
        # ServiceAccount admission plugin needs for pods.
        self.kubectl("create", "namespace", "e2e")
        self.kubectl("-n", "e2e", "create", "serviceaccount", "default")
        for sa, ns, fname in ((SA_NAME, SA_NS, "extender.token"),
                              ("gpu-scheduler", "kube-system", "scheduler.token")):
            tok = wait_for(lambda: self.kubectl("-n", ns, "create", "token", sa,
                                                "--duration=24h").strip(), 30, f"token of {sa}",
                           must=True)
            with open(self.path(fname), "w") as f:
                f.write(tok)
            os.chmod(self.path(fname), 0o600)
        with open(self.path("scheduler.token")) as f:
            self._write_kubeconfig(self.path("scheduler.kubeconfig"), f.read(), "gpu-scheduler")

    def _kubelet(self):
        nodes = self.path("nodes.json")
        with open(DEMO_NODES) as f:
            lst = json.load(f)
        lst["items"].extend(copy.deepcopy(self.extra_nodes))
        with open(nodes, "w") as f:
            json.dump(lst, f)
        self.node_names = [n["metadata"]["name"] for n in lst["items"]]
        self.node_names += [f"gpu-gen-{i:05d}" for i in range(self.generate)]
        ready = self.path("kubelet.ready")
        self.start("fake-kubelet", [os.path.join(self.bin, "fake-kubelet"),
                                    "--kubeconfig", self.kubeconfig, "--nodes", nodes,
                                    "--generate", str(self.generate), "--ready-file", ready,
                                    "--heartbeat", "20s" if self.generate < 500 else "0"])

        def registered():
            if not self.alive("fake-kubelet"):
                raise RuntimeError("fake-kubelet exited: " + self.logs("fake-kubelet"))
            return os.path.exists(ready)
        wait_for(registered, 60 + self.generate / 20, "fake-kubelet node registration", must=True)

    def _prometheus(self):
        pages = self.path("dcgm")
        os.makedirs(pages, exist_ok=True)
        for node in DCGM_NODES:
            shutil.copy(os.path.join(ROOT, "config", "demo", f"dcgm-gpu-node-{node}.prom"),
                        os.path.join(pages, f"node-{node}.txt"))
        eport, pport = free_port(), free_port()
        self.state["ports"].update(exporter=eport, prometheus=pport)
        # The fixture pages served as dcgm-exporter would (text/plain by the .txt name).
        self.start("dcgm-exporter", [sys.executable, "-m", "http.server", str(eport),
                                     "--bind", "127.0.0.1", "--directory", pages])
        jobs = [{"job_name": f"dcgm-node-{n}", "scrape_interval": "1s", "scrape_timeout": "900ms",
                 "metrics_path": f"/node-{n}.txt",
                 "static_configs": [{"targets": [f"127.0.0.1:{eport}"]}]} for n in DCGM_NODES]
        with open(self.path("prometheus.yml"), "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs}, f)
        self.prom_url = f"http://127.0.0.1:{pport}"
        self.start("prometheus", ["prometheus", f"--config.file={self.path('prometheus.yml')}",
                                  f"--storage.tsdb.path={self.path('prom-data')}",
                                  f"--web.listen-address=127.0.0.1:{pport}",
                                  "--query.lookback-delta=30s"])

        def series():
            url = f"{self.prom_url}/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL"
            with urllib.request.urlopen(url, timeout=2) as r:
                return len(json.loads(r.read())["data"]["result"]) >= 12
        wait_for(series, 90, "Prometheus scraping the 12 fixture GPUs", must=True)

    def set_dcgm(self, metric, value):
        """Every series @metric of the served dcgm-exporter pages at @value (next scrape)."""
        for n in DCGM_NODES:
            path = os.path.join(self.path("dcgm"), f"node-{n}.txt")
            with open(path) as f:
                text = f.read()
            text = re.sub(rf"^({re.escape(metric)}\{{[^}}]*\}}) \S+$", rf"\g<1> {value}", text,
                          flags=re.M)
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)  # never a half-written page for a scrape

    # ----- gpu-extender ------------------------------------------------------------------------
    def extender_spec(self, name):
        return next(e for e in self.extenders if e["name"] == name)

    def start_extender(self, name, wait_ready=True):
        spec = self.extender_spec(name)
        key = f"extender-{name}"
        if "port" not in spec:
            spec["port"] = free_port()
            self.state["ports"][key] = spec["port"]
        with open(os.path.join(ROOT, "manifests",
                               spec.get("config", os.path.join(RIG_INSTALL, "config.json")))) as f:
            cfg = json.load(f)
        o = {"server.address": "127.0.0.1", "server.port": spec["port"],
             "server.debug_endpoints": True,
             "sources.files.nodes": None, "sources.files.metrics": [],
             "kubernetes.enabled": True,
             "kubernetes.url": self.fault_url if spec.get("via_faults") else self.api_url,
             "kubernetes.token_file": self.path("extender.token"),
             "kubernetes.ca_file": self.path("ca.crt"),
             "kubernetes.namespace": SA_NS,
             "ledger.sync_interval_s": 1, "ledger.reconcile_interval_s": 2,
             "prometheus.url": getattr(self, "prom_url", "http://127.0.0.1:9"),
             "prometheus.interval_s": 1}
        # replicas.forward as shipped: the replicas of a rig reach each other on loopback
        o["replicas.advertise_url"] = f"{'https' if spec.get('tls') else 'http'}://127.0.0.1:{spec['port']}"
        if spec.get("tls"):
            o["server.tls_cert_file"] = self.path("extender.crt")
            o["server.tls_key_file"] = self.path("extender.key")
        if os.environ.get("GX_E2E_LOG_LEVEL"):  # e.g. debug, to follow one failing run
            o["log.level"] = os.environ["GX_E2E_LOG_LEVEL"]
        o.update(spec.get("overrides", {}))
        for dotted, value in o.items():
            node = cfg
            ks = dotted.split(".")
            for k in ks[:-1]:
                node = node.setdefault(k, {})
            node[ks[-1]] = value
        cpath = self.path(f"{key}.json")
        with open(cpath, "w") as f:
            json.dump(cfg, f, indent=1)
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:halt_on_error=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        self.start(key, [self.extender_bin, "--config", cpath], env=env)
        if wait_ready:
            wait_for(lambda: self._extender_ready(name), 60, f"{key} /readyz", must=True)
        return spec["port"]

    def extender_url(self, name, path=""):
        spec = self.extender_spec(name)
        scheme = "https" if spec.get("tls") else "http"
        return f"{scheme}://127.0.0.1:{spec['port']}{path}"

    def extender_get(self, name, path, timeout=5):
        if not self.alive(f"extender-{name}"):
            raise RuntimeError(f"extender-{name} is not running: " + self.logs(f"extender-{name}"))
        ctx = self.ctx if self.extender_spec(name).get("tls") else None
        with urllib.request.urlopen(self.extender_url(name, path), timeout=timeout, context=ctx) as r:
            return r.status, r.read().decode()

    def _extender_ready(self, name):
        try:
            return self.extender_get(name, "/readyz")[0] == 200
        except urllib.error.HTTPError:
            return False

    def extender_metrics(self, name):
        """Parsed /metrics of one replica: {(metric, frozenset(labels)): value}."""
        _, text = self.extender_get(name, "/metrics")
        out = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            head, _, value = line.rpartition(" ")
            if "{" in head:
                mname, _, rest = head.partition("{")
                labels = frozenset(tuple(kv.split("=", 1)) for kv in _split_labels(rest.rstrip("}")))
            else:
                mname, labels = head, frozenset()
            labels = frozenset((k, v.strip('"')) for k, v in labels)
            out[(mname, labels)] = float(value)
        return out

    def requests_by_verb(self, name):
        m = self.extender_metrics(name)
        res = {}
        for (mname, labels), v in m.items():
            if mname == "gpu_extender_requests_total":
                d = dict(labels)
                res[d["verb"]] = res.get(d["verb"], 0) + v
        return res

    def kill_extender(self, name, sig=signal.SIGKILL):
        return self.stop_proc(f"extender-{name}", sig)

    # ----- kube-scheduler ----------------------------------------------------------------------
    def scheduler_spec(self, name):
        return next(s for s in self.schedulers if s["name"] == name)

    def start_scheduler(self, name):
        spec = self.scheduler_spec(name)
        cfg = shipped_scheduler_config(spec.get("config", "kube-scheduler-config.yaml"))
        # Only what must differ outside a cluster: where the API server and the extender are.
        cfg["clientConnection"]["kubeconfig"] = self.path(
            "scheduler-faults.kubeconfig" if spec.get("via_faults") else "scheduler.kubeconfig")
        ext = cfg["extenders"][0]
        e = self.extender_spec(spec["extender"]) if spec.get("extender") else {"name": "-", "port": 9}
        # extender_port: something in front of the extender (a test's recording proxy)
        port = spec.get("extender_port") or e.get("port") or self.state["ports"].get(
            f"extender-{e['name']}")
        scheme = "https" if ext.get("enableHTTPS") else "http"
        if scheme == "https" and not e.get("tls"):
            raise ValueError(f"scheduler {name}: HTTPS config needs a TLS extender")
        ext["urlPrefix"] = f"{scheme}://127.0.0.1:{port}/gpu-extender"
        if spec.get("http_timeout"):  # a measurement of another time budget (burst tests)
            ext["httpTimeout"] = spec["http_timeout"]
        if "tlsConfig" in ext and "caFile" in ext["tlsConfig"]:
            del ext["tlsConfig"]["caFile"]
            with open(self.path("ca.crt"), "rb") as f:
                ext["tlsConfig"]["caData"] = base64.b64encode(f.read()).decode()
        # A second scheduler of the race test needs its own name; it runs without leader
        # election (the shipped RBAC lets the gpu-scheduler account lock only its own Lease).
        if spec.get("scheduler_name"):
            cfg["profiles"][0]["schedulerName"] = spec["scheduler_name"]
        if spec.get("leader_elect") is not None:
            cfg["leaderElection"]["leaderElect"] = spec["leader_elect"]
        if spec.get("client_qps"):  # a measurement without kube-scheduler's client rate limit
            cfg["clientConnection"].update(qps=spec["client_qps"], burst=2 * spec["client_qps"])
        # Benchmark baseline: the same configuration without the extenders entry.
        if spec.get("no_extender"):
            del cfg["extenders"]
        cpath = self.path(f"scheduler-{name}.yaml")
        with open(cpath, "w") as f:
            yaml.safe_dump(cfg, f)
        sport = free_port()
        self.state["ports"][f"scheduler-{name}"] = sport
        self.start(f"scheduler-{name}", [os.path.join(self.bin, "kube-scheduler"),
                                         f"--config={cpath}", "--bind-address=127.0.0.1",
                                         f"--secure-port={sport}",
                                         f"--cert-dir={self.path('scheduler-certs-' + name)}",
                                         "--v=2", *spec.get("args", [])])

        def healthy():
            if not self.alive(f"scheduler-{name}"):
                raise RuntimeError("kube-scheduler exited: " + self.logs(f"scheduler-{name}"))
            ctx = ssl._create_unverified_context()  # its self-signed serving certificate
            with urllib.request.urlopen(f"https://127.0.0.1:{sport}/healthz", timeout=3,
                                        context=ctx) as r:
                return r.status == 200
        wait_for(healthy, 90, f"kube-scheduler {name} /healthz", must=True)

    def stop_scheduler(self, name):
        return self.stop_proc(f"scheduler-{name}")

    # ----- observations ------------------------------------------------------------------------
    def audit_events(self, user=SA_USER):
        out = []
        try:
            with open(self.path("audit.log")) as f:
                for line in f:
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if ev.get("user", {}).get("username") == user:
                        out.append(ev)
        except OSError:
            pass
        return out

    def forbidden(self, user=SA_USER):
        """Audit events of @user answered 403 (RBAC refused)."""
        return [f"{e.get('verb')} {e.get('requestURI')}" for e in self.audit_events(user)
                if e.get("responseStatus", {}).get("code") == 403]

    def leases(self):
        """{node: [tenant, ...]} from the ledger Leases."""
        out = {}
        for lease in self.kjson("-n", SA_NS, "get", "leases")["items"]:
            name = lease["metadata"]["name"]
            if not name.startswith("gpu-extender-"):
                continue
            ann = lease["metadata"].get("annotations", {}).get("gpu-extender.io/tenants")
            out[name[len("gpu-extender-"):]] = json.loads(ann)["tenants"] if ann else []
        return out

    # ----- tear-down ---------------------------------------------------------------------------
    def down(self, keep=False):
        order = [n for n in self.state["pids"] if n.startswith("scheduler-")]
        order += [n for n in self.state["pids"] if n.startswith("extender-")]
        order += [n for n in ("fake-kubelet", "prometheus", "dcgm-exporter", "kube-apiserver", "etcd")
                  if n in self.state["pids"]]
        order += [n for n in self.state["pids"] if n not in order]
        for n in order:
            self.stop_proc(n)
        if not keep and not os.environ.get("GX_E2E_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)


def histogram_quantile(buckets, q):
    """Quantile @q of a Prometheus histogram's cumulative {le: count} (le float, inf last),
    interpolated inside its bucket as PromQL's histogram_quantile does; None when empty."""
    items = sorted(buckets.items())
    if not items or items[-1][1] == 0:
        return None
    total = items[-1][1]
    rank = q * total
    prev_le, prev_n = 0.0, 0.0
    for le, n in items:
        if n >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_n) / max(n - prev_n, 1e-9)
        prev_le, prev_n = le, n
    return items[-1][0]


def _die_with_parent():
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _split_labels(s):
    out, cur, q = [], "", False
    for ch in s:
        if ch == '"':
            q = not q
        if ch == "," and not q:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def _kill_pid(pid, sig=signal.SIGTERM, timeout=20):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv):
    """python3 rig.py up|down|env STATE_DIR [--extender BIN] [--generate N] [--https]"""
    import argparse

    ap = argparse.ArgumentParser(prog="cluster.sh")
    ap.add_argument("cmd", choices=["up", "down", "env"])
    ap.add_argument("state_dir")
    ap.add_argument("--extender", help="gpu-extender binary (omit: control plane only)")
    ap.add_argument("--generate", type=int, default=0, help="extra generated GPU nodes")
    ap.add_argument("--https", action="store_true",
                    help="scheduler with kube-scheduler-config-https.yaml, extender on TLS")
    ap.add_argument("--no-prometheus", action="store_true")
    a = ap.parse_args(argv)
    sfile = os.path.join(a.state_dir, "state.json")
    if a.cmd == "up":
        if os.path.exists(sfile):
            with open(sfile) as f:
                if json.load(f).get("pids"):
                    print(f"{a.state_dir} already has a cluster: run cluster.sh down first",
                          file=sys.stderr)
                    return 1
        ext = [{"name": "a", "tls": a.https}] if a.extender else []
        sch = [{"name": "gpu-scheduler", "extender": "a",
                "config": "kube-scheduler-config-https.yaml" if a.https
                else "kube-scheduler-config.yaml"}] if a.extender else []
        c = Cluster(a.state_dir, extender_bin=a.extender and os.path.abspath(a.extender),
                    extenders=ext, schedulers=sch, generate=a.generate,
                    prometheus=not a.no_prometheus, tie_to_parent=False)
        c.up()
        print_env(c.state)
        return 0
    try:
        with open(sfile) as f:
            state = json.load(f)
    except OSError:
        print(f"no cluster state in {a.state_dir}", file=sys.stderr)
        return 1 if a.cmd == "env" else 0
    if a.cmd == "env":
        print_env(state)
        return 0
    for name, pid in reversed(list(state.get("pids", {}).items())):
        _kill_pid(pid)
    state["pids"] = {}
    with open(sfile, "w") as f:
        json.dump(state, f)
    return 0


def print_env(state):
    print(f"export KUBECONFIG={state['kubeconfig']}")
    print(f"export GX_K8S_BIN={state['bin']}")
    print(f"export PATH={state['bin']}:$PATH")
    for k, v in state["ports"].items():
        print(f"# {k}: 127.0.0.1:{v}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
