"""Every key docs/configuration.md marks live is applied by a reload, proven key by key.

The real binary runs twice on the demo cluster: with the files alone (decision keys), and
with a fake Prometheus as the only metric source (the poller's keys, metric ages). For
each live key the test writes the config with one changed value, sends SIGHUP, waits
until /metrics counts the reload, and checks that the behaviour the key governs
changed: the idle timeout closes a silent socket sooner, the body cap answers 413, the
Prometheus poller sends the new query or header, a decision key changes what
/debug/explain, filter, prioritize or /metrics say about a fixed set of pods. Then the
base config is restored (and checked to be back) before the next key.

A third instance against the fake API server (tests/integration/fake_apiserver.py)
probes kubernetes.*, ledger.* and the names bind writes. A live key without a probe here
fails the test, so a new live key gets one. Keys not probed yet are in NEEDS_API_SERVER
(with why), keys with no effect observable from outside in NO_EFFECT, and documented
live keys that nothing reads in KNOWN_NOT_LIVE: all three are printed on every run.
Before the fix of issue 11 server.connection_timeout_s, prometheus.interval_s (the
wait for the next round kept the old interval) and ledger.reconcile_interval_s (the
same, for the next reconcile pass) failed here.
"""
import copy
import http.server
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from gxtest import ROOT, Checks, Extender, FakeApiServer, live_overrides, shared_pod, wait_for

c = Checks("reload_live")

# ---- a fake Prometheus: answers every query with one series per demo card, records requests

PROM_REQS = []
PROM_DELAY = {"s": 0.0}
PROM_PAD = {"bytes": 0}
CARDS = [("gpu-node-a", 2), ("gpu-node-b", 8), ("gpu-node-c", 4)]


class Prom(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        PROM_REQS.append((time.time(), self.path, self.headers.get("Authorization")))
        time.sleep(PROM_DELAY["s"])
        res = [{"metric": {"Hostname": n, "gpu": str(i), "UUID": f"GPU-{n}-{i}"},
                "value": [time.time(), "7"]} for n, k in CARDS for i in range(k)]
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": res},
                           "pad": "x" * PROM_PAD["bytes"]}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass


prom = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Prom)
threading.Thread(target=prom.serve_forever, daemon=True).start()
PROM_URL = f"http://127.0.0.1:{prom.server_address[1]}"

# the same fake over https, with a self-signed certificate, for the TLS keys
pki = tempfile.mkdtemp(prefix="gx-reload-pki-")
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "p.key",
                "-out", "p.crt", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1"], cwd=pki, check=True, capture_output=True)
PROM_CA = os.path.join(pki, "p.crt")
proms = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Prom)
_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
_tls.load_cert_chain(PROM_CA, os.path.join(pki, "p.key"))
proms.socket = _tls.wrap_socket(proms.socket, server_side=True)
threading.Thread(target=proms.serve_forever, daemon=True).start()
PROMS_URL = f"https://127.0.0.1:{proms.server_address[1]}"

# ---- the extender: demo cluster, files refreshed every second, the fake Prometheus

# Two instances: decisions on the files alone (the fake's flat values would mask them),
# and the Prometheus poller's keys with the fake as its only metric source.
# a fourth page whose node label carries a port (dcgm-exporter scraped as instance=host:port):
# its card only joins gpu-node-c with metrics.strip_port
EXTRA_PAGE = os.path.join(pki, "dcgm-port.prom")
with open(EXTRA_PAGE, "w") as f:
    f.write('# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="0",'
            'UUID="GPU-8a3c6f10-d7e2-4b95-1c08-6f9e2d4b7a35",Hostname="gpu-node-c:9400"} 99\n')
DEMO_PAGES = [os.path.join(ROOT, "config", "demo", f"dcgm-gpu-node-{n}.prom") for n in "abc"]
# binpack: the probes compare decisions before a change and after its undo, and fgd (the
# demo's policy) learns from every filter, so the same request may get another answer later
BASE_FILES = {"sources.files.refresh_s": 1, "server.debug_endpoints": True,
              "score.policy": "binpack", "sources.files.metrics": DEMO_PAGES + [EXTRA_PAGE]}
BASE_TLS = {"sources.files.refresh_s": 1, "sources.files.metrics": [],
            "prometheus.url": PROMS_URL, "prometheus.interval_s": 1}
BASE_PROM = {"sources.files.refresh_s": 1, "server.debug_endpoints": True, "score.policy": "binpack",
             "sources.files.metrics": [], "prometheus.url": PROM_URL,
             "prometheus.interval_s": 3600}
ext = None
base_cfg = None
PREFIX = "/gpu-extender"
NAMES = ["gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-d"]
secrets_dir = None


def probe_prom_tls(key, value):
    # base: the certificate is not trusted, so no query reaches the fake; after the reload
    # (a CA file, or verification off) the next round's queries arrive
    def check():
        t0 = time.time()
        return wait_for(lambda: len(prom_queries_after(t0)) >= 3, 6)
    with_key(key, value, check)
    time.sleep(1.5)  # a query already under way finishes with the config it started with
    t0 = time.time()
    time.sleep(2.5)
    c.ok(len(prom_queries_after(t0)) == 0, f"{key}: restored, the certificate is refused again")


def start(overrides):
    global ext, base_cfg, PREFIX, secrets_dir
    ext = Extender(sys.argv[1], overrides=overrides)
    if overrides.get("sources.files.metrics") == []:
        ext.cfg["sources"]["files"]["metrics"] = []
        ext.write_config(ext.cfg)
    base_cfg = copy.deepcopy(ext.cfg)
    ext.start()
    PREFIX = base_cfg["server"]["url_prefix"]
    secrets_dir = ext.dir


def pod(name, ns="ml", ann=None, limits=None):
    return {"metadata": {"name": name, "namespace": ns, "uid": "uid-" + name,
                         "annotations": ann or {}, "labels": {}},
            "spec": {"containers": [{"name": "c", "resources": {"limits": limits or {},
                                                                 "requests": limits or {}}}]},
            "status": {"phase": "Pending"}}


PODS = [
    pod("excl", limits={"nvidia.com/gpu": "1"}),
    pod("multi", limits={"nvidia.com/gpu": "4"}),
    pod("shared", ann={"gpu-extender.io/time-slices": "2", "gpu-extender.io/gpu-memory": "6Gi",
                       "gpu-extender.io/gpu-util": "30"},
        limits={"gpu-extender.io/time-slice": "1"}),
    pod("milli", ann={"gpu-extender.io/gpu-milli": "300"},
        limits={"gpu-extender.io/time-slice": "1"}),
    pod("plugin", limits={"nvidia.com/gpu.shared": "1"}),
    pod("nogpu"),
    pod("ts-only", limits={"gpu-extender.io/time-slice": "1"}),
    pod("other-ns", ns="ml-research", ann={"gpu-extender.io/time-slices": "1"},
        limits={"gpu-extender.io/time-slice": "1"}),
    # read as the gang options only under the names the probes reload to (then invalid)
    pod("gang-opts", ann={"example.com/apart": "maybe", "example.com/numa": "maybe"},
        limits={"gpu-extender.io/time-slice": "1"}),
]


def post(path, body, timeout=10):
    return ext.request("POST", path, body, timeout=timeout)


def observe():
    """What the decision keys govern, as one comparable value."""
    out = {}
    for p in PODS:
        st, data, _ = post("/debug/explain", p)
        out["explain " + p["metadata"]["name"]] = data.decode(errors="replace")
        args = {"Pod": p, "Nodes": None, "NodeNames": NAMES}
        for verb in ("filter", "prioritize"):
            st, data, _ = post(PREFIX + "/" + verb, args)
            out[verb + " " + p["metadata"]["name"]] = (st, data.decode(errors="replace"))
    st, data, _ = ext.request("GET", "/metrics")
    out["card series"] = [ln for ln in data.decode().splitlines()
                          if ln.startswith("gpu_extender_card_") or
                          ln.startswith("gpu_extender_ledger_slots_total")]
    return out




def metric_line(prefix):
    st, data, _ = ext.request("GET", "/metrics")
    for ln in data.decode().splitlines():
        if ln.startswith(prefix):
            return float(ln.split()[-1])
    return 0.0


def set_key(cfg, key, value):
    node = cfg
    parts = key.split(".")
    for k in parts[:-1]:
        node = node.setdefault(k, {})
    node[parts[-1]] = value


def apply(cfg, what):
    """Write @cfg, SIGHUP, wait for its hash in /metrics. False if the reload failed."""
    before_ok = metric_line('gpu_extender_config_reloads_total{result="success"}')
    before_bad = metric_line('gpu_extender_config_reloads_total{result="failure"}')
    ext.write_config(cfg)
    # the stat check runs every second; SIGHUP makes it immediate
    os.kill(ext.proc.pid, signal.SIGHUP)
    ok = wait_for(lambda: metric_line('gpu_extender_config_reloads_total{result="success"}') >
                  before_ok or metric_line('gpu_extender_config_reloads_total{result="failure"}') >
                  before_bad, 5)
    failed = metric_line('gpu_extender_config_reloads_total{result="failure"}') > before_bad
    if not ok or failed:
        c.ok(False, f"{what}: reload not applied ({'rejected' if failed else 'timeout'}): "
                    f"{ext.logs()[-600:]}")
        return False
    return True


def with_key(key, value, check):
    """Apply @key=@value on the base config, run @check(), restore the base."""
    cfg = copy.deepcopy(base_cfg)
    set_key(cfg, key, value)
    if apply(cfg, f"{key}={value!r}"):
        c.ok(check(), f"{key}: the reload to {value!r} took effect")
    apply(copy.deepcopy(base_cfg), f"{key}: restore")


# ---- probes for keys held by a component (server, log, Prometheus poller)

def idle_closed_within(seconds):
    s = socket.create_connection(("127.0.0.1", ext.port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
    s.settimeout(seconds)
    t = time.time()
    try:
        data = s.recv(100)
    except socket.timeout:
        data = None
    s.close()
    return data is not None and time.time() - t < seconds


def probe_conn_timeout():
    with_key("server.connection_timeout_s", 1, lambda: idle_closed_within(3.0))
    # and back at 30 s, an idle connection stays
    c.ok(not idle_closed_within(2.0), "server.connection_timeout_s: the restored 30 s applies")


def status_of(path, body):
    try:
        return post(path, body)[0]
    except OSError:
        return None


def probe_max_body():
    body = {"Pod": PODS[0], "Nodes": None, "NodeNames": NAMES + ["n" * 4000]}
    with_key("server.max_body_bytes", 2048, lambda: status_of(PREFIX + "/filter", body) == 413)


def probe_max_inflight():
    # alone a request always fits (the budget holds 16/7 of the largest body); two at once
    # do not in a 1 MiB budget: hold one 400 KB body open, send a second one
    def check():
        hold = socket.create_connection(("127.0.0.1", ext.port))
        hold.sendall(b"POST " + PREFIX.encode() + b"/filter HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: 400000\r\n\r\n{")
        time.sleep(0.2)
        body = {"Pod": PODS[0], "Nodes": None, "NodeNames": NAMES + ["n" * 390000]}
        st = status_of(PREFIX + "/filter", body)
        hold.close()
        return st == 503
    cfg = copy.deepcopy(base_cfg)
    set_key(cfg, "server.max_body_bytes", 450000)
    if apply(cfg, "server.max_body_bytes=450000"):
        c.ok(not check(), "server.max_inflight_bytes: two 400 KB bodies fit the default budget")
        set_key(cfg, "server.max_inflight_bytes", 1048576)
        if apply(cfg, "server.max_inflight_bytes=1 MiB"):
            c.ok(check(), "server.max_inflight_bytes: the reload to 1 MiB took effect (503)")
    apply(copy.deepcopy(base_cfg), "server.max_inflight_bytes: restore")


def probe_depth():
    deep = {"Pod": PODS[0], "Nodes": None, "NodeNames": NAMES, "x": [[[[[[[[[[1]]]]]]]]]]}
    with_key("server.max_json_depth", 8, lambda: status_of(PREFIX + "/filter", deep) == 400)


def probe_debug():
    with_key("server.debug_endpoints", False, lambda: status_of("/debug/explain", PODS[0]) == 404)


def probe_log_level():
    def check():
        n0 = full_log().count("level=debug")
        post(PREFIX + "/filter", {"Pod": PODS[0], "Nodes": None, "NodeNames": NAMES})
        time.sleep(0.2)
        return full_log().count("level=debug") > n0
    with_key("log.level", "debug", check)


def prom_queries_after(t0):
    return [r for r in PROM_REQS if r[0] >= t0]


def probe_prom_interval():
    def check():
        t0 = time.time()
        time.sleep(2.5)
        return len(prom_queries_after(t0)) >= 6  # 6 signals a round, at least one round
    with_key("prometheus.interval_s", 1, check)


def with_prom_key(key, value, check, extra=None):
    """Like with_key, with rounds every second so the poller uses the new value soon."""
    cfg = copy.deepcopy(base_cfg)
    set_key(cfg, "prometheus.interval_s", 1)
    for k, v in (extra or {}).items():
        set_key(cfg, k, v)
    set_key(cfg, key, value)
    if apply(cfg, f"{key}={value!r}"):
        c.ok(wait_for(check, 6), f"{key}: the reload to {value!r} took effect")
    apply(copy.deepcopy(base_cfg), f"{key}: restore")


def saw_query(text):
    t0 = time.time()
    return lambda: any(text in r[1] for r in prom_queries_after(t0))


def probe_prom_query(sig):
    with_prom_key(f"prometheus.queries.{sig}", f"probe_{sig}_up", saw_query(f"probe_{sig}_up"))


def errors(kind):
    return metric_line(f'gpu_extender_upstream_errors_total{{upstream="prometheus",kind="{kind}"}}')


def probe_prom_timeout():
    # every answer takes 1.5 s: fine with the default 3 s, a timeout with 1 s
    PROM_DELAY["s"] = 1.5
    e0 = errors("timeout")
    with_prom_key("prometheus.timeout_s", 1, lambda: errors("timeout") > e0)
    PROM_DELAY["s"] = 0.0


def probe_prom_max_response():
    PROM_PAD["bytes"] = 4096
    e0 = errors("parse")
    with_prom_key("prometheus.max_response_bytes", 1024, lambda: errors("parse") > e0)
    PROM_PAD["bytes"] = 0


def saw_auth(prefix):
    t0 = time.time()
    return lambda: any(r[2] and r[2].startswith(prefix) for r in prom_queries_after(t0))


def probe_prom_bearer():
    path = os.path.join(secrets_dir, "token")
    with open(path, "w") as f:
        f.write("probe-token\n")
    with_prom_key("prometheus.bearer_token_file", path, saw_auth("Bearer probe-token"))


def probe_prom_basic():
    path = os.path.join(secrets_dir, "password")
    with open(path, "w") as f:
        f.write("pw\n")
    with_prom_key("prometheus.basic_auth.username", "probe", saw_auth("Basic "),
                  extra={"prometheus.basic_auth.password_file": path})


def probe_prom_basic_password():
    path = os.path.join(secrets_dir, "password2")
    with open(path, "w") as f:
        f.write("other\n")
    import base64
    want = "Basic " + base64.b64encode(b"probe:other").decode()
    with_prom_key("prometheus.basic_auth.password_file", path, saw_auth(want),
                  extra={"prometheus.basic_auth.username": "probe"})




# ---- decision keys: the change must show in explain, filter, prioritize or /metrics

DECISION = {
    "server.metrics_max_cards": 0,
    "names.gpu_resource": "example.com/gpu",
    "names.shared_resource": "example.com/gpu.shared",
    "names.time_slice_resource": "example.com/time-slice",
    "names.time_slices_annotation": "example.com/slices",
    "names.gpu_memory_annotation": "example.com/mem",
    "names.gpu_milli_annotation": "example.com/milli",
    "names.gpu_util_annotation": "example.com/util",
    "names.gang_distinct_annotation": "example.com/apart",
    "names.gang_numa_annotation": "example.com/numa",
    "metrics.node_labels": ["nosuchlabel"],
    "metrics.strip_port": True,
    "metrics.names.util": "NO_SUCH_UTIL",
    "metrics.names.mem_used": "NO_SUCH_MEM_USED",
    "metrics.names.temp": "NO_SUCH_TEMP",
    "metrics.names.xid": "NO_SUCH_XID",
    "health.max_temperature_c": 30,
    "health.ignored_xids": [13],
    "filter.max_utilization_pct": 5,
    "filter.shortlist_nodes": 1,
    "sharing.default_slots": 1,
    "sharing.oversubscription": 4.0,
    "sharing.memory_reserve_mib": 24000,
    "sharing.util_ceiling_pct": 10,
    "sharing.expect_share_util": False,
    "sharing.product_slots": {"NVIDIA-GeForce-RTX-4090": 2, "NVIDIA-A100-SXM4-80GB": 2,
                              "NVIDIA-H100-80GB-HBM3": 2, "Tesla-T4": 2},
    "score.policy": "spread",
    "score.weights.utilization": 0,
    "score.weights.memory": 0,
    "score.weights.temperature": 100,
    "score.weights.labels": 100,
    "score.weights.fit": 100,
    "score.label_rules": [{"label": "kubernetes.io/hostname", "operator": "In",
                           "values": ["gpu-node-c"], "weight": 100}],
    "score.prefer_cpu_nodes_for_cpu_pods": False,
    "score.relative": True,
    "quotas.default_milli_gpus": 100,
    "quotas.default_memory_mib": 1000,
    "quotas.milli_gpus": {"ml": 100},
    "quotas.memory_mib": {"ml": 1000},
}
# keys that only matter under another setting: that setting is applied first
DECISION_BASE = {
    # every card reads 7 %: under a ceiling of 30 the 300-milli share fits only if it expects nothing
    "sharing.expect_share_util": {"sharing.util_ceiling_pct": 30},
}
# element rows of score.label_rules are exercised by the score.label_rules probe
ELEMENT_ROWS = {"score.label_rules[].label", "score.label_rules[].operator",
                "score.label_rules[].values", "score.label_rules[].weight"}
# keys read when files are re-read (every sources.files.refresh_s = 1 s here)
INGEST = {"metrics.node_labels", "metrics.strip_port", "metrics.names.util",
          "metrics.names.mem_used", "metrics.names.mem_free", "metrics.names.temp",
          "metrics.names.power", "metrics.names.xid", "health.ignored_xids"}


def probe_decision(key, value):
    base = copy.deepcopy(base_cfg)
    if key in DECISION_BASE:
        # a base in which the key matters (applied first, then the key alone changes)
        for k, v in DECISION_BASE[key].items():
            set_key(base, k, v)
        if not apply(base, f"{key}: its base"):
            return
        time.sleep(2.5 if key in INGEST else 0)
    before = observe()
    cfg = copy.deepcopy(base)
    set_key(cfg, key, value)
    if apply(cfg, f"{key}={value!r}"):
        changed = wait_for(lambda: observe() != before, 4 if key in INGEST else 1.5)
        c.ok(changed, f"{key}: the reload to {value!r} changed no decision, explain or metric")
    apply(copy.deepcopy(base), f"{key}: restore")
    if not c.ok(wait_for(lambda: observe() == before, 4), f"{key}: restoring the base config "
                                                           "restores the decisions"):
        after = observe()
        for k in sorted(before):
            if before[k] != after.get(k):
                print(f"  {k}: before {str(before[k])[:400]}\n  {k}: after  {str(after.get(k))[:400]}",
                      flush=True)
    if key in DECISION_BASE:
        apply(copy.deepcopy(base_cfg), f"{key}: leave its base")


def probe_on_stale():
    # on_stale only matters for a signal that is missing or old: remove the utilization
    # series first, then change on_stale alone
    cfg = copy.deepcopy(base_cfg)
    set_key(cfg, "metrics.names.util", "NO_SUCH_UTIL")
    if apply(cfg, "metrics.names.util=NO_SUCH_UTIL"):
        time.sleep(2.5)  # the next file read drops the series
        before = observe()
        set_key(cfg, "metrics.on_stale", "reject")
        if apply(cfg, "metrics.on_stale=reject"):
            c.ok(wait_for(lambda: observe() != before, 2),
                 "metrics.on_stale: the reload to 'reject' took effect")
    apply(copy.deepcopy(base_cfg), "metrics.on_stale: restore")
    time.sleep(2.5)


def probe_max_age(sig):
    # Prometheus stage: one round (interval 3600 s), so the samples only get older. With
    # on_stale reject, a max age of 1 s turns this signal stale.
    key = f"metrics.max_age_s.{sig}"
    cfg = copy.deepcopy(base_cfg)
    set_key(cfg, "metrics.on_stale", "reject")
    if apply(cfg, "metrics.on_stale=reject"):
        before = observe()
        set_key(cfg, key, 1)
        if apply(cfg, f"{key}=1"):
            c.ok(wait_for(lambda: observe() != before, 3),
                 f"{key}: the reload to 1 s turned no card stale")
    apply(copy.deepcopy(base_cfg), f"{key}: restore")


# No decision, explain line or metric reads the power signal: what its keys change
# cannot be observed from outside (see the report of issue 11).
NO_EFFECT = {
    "metrics.names.power": "the power signal is collected but read by no decision",
    "metrics.max_age_s.power": "the power signal is collected but read by no decision",
    "metrics.names.mem_free": "read only for a card of a node without the "
                              "nvidia.com/gpu.memory label; every demo node has it",
    "metrics.max_age_s.mem_free": "read only for a card of a node without the "
                                  "nvidia.com/gpu.memory label; every demo node has it",
    "metrics.max_age_s.util_trend": "the slope is read only with prometheus.queries.util_trend "
                                    "set and score.weights.trend > 0; the base config has neither",
    "score.weights.trend": "scores the slope, which the base config does not query "
                           "(integration_test_trend_live checks it with a real Prometheus)",
    "gang.hold_ms": "read only for pods with spec.schedulingGroup, which only a control plane "
                    "with GenericWorkload schedules (e2e_gang_nofit checks it on one)",
}
# Documented live keys that nothing reads: reported on every run until fixed.
# (sharing.default_slices was one; it is retired: marked "ignored", no longer live)
KNOWN_NOT_LIVE = {}

NEEDS_API_SERVER = {}


def with_base_then_key(base, key, value, setup, check):
    """Apply the changes @base over the base config, run @setup() (it returns what
    @check gets), then reload @key=@value alone: @check(that) must be true. Restore."""
    cfg = copy.deepcopy(base_cfg)
    for k, v in base.items():
        set_key(cfg, k, v)
    if apply(cfg, f"{key}: its base {base}"):
        state = setup()
        set_key(cfg, key, value)
        if apply(cfg, f"{key}={value!r}"):
            c.ok(check(state), f"{key}: the reload to {value!r} took effect")
    apply(copy.deepcopy(base_cfg), f"{key}: restore")


def fgd_fits(p):
    st, data, _ = post("/debug/explain", p)
    nodes = json.loads(data)["nodes"] if st == 200 else []
    return {n["node"]: n["parts"]["fit"] for n in nodes if n.get("parts")}


def probe_fgd_half_life():
    # fgd learns the typical pods from what filter sees. Teach it whole cards, then
    # shares, then whole cards again: with a half-life of 10 requests the shares are
    # forgotten (the fit of a share is what it was after the first lesson); with the
    # base 5,000 they still weigh a third of the model.
    whole, share, asked = PODS[0], PODS[3], PODS[2]

    def teach(p, n=150):
        for _ in range(n):
            post(PREFIX + "/filter", {"Pod": p, "Nodes": None, "NodeNames": NAMES})

    def forgets(_=None):
        teach(whole)
        first = fgd_fits(asked)
        teach(share)
        teach(whole)
        again = fgd_fits(asked)
        c.ok(first, "score.fgd_half_life: explain shows the fgd fit")
        return first and first.keys() == again.keys() and \
            all(abs(first[k] - again[k]) < 0.002 for k in first)

    def remembers():
        c.ok(not forgets(), "score.fgd_half_life: the base 5,000 remembers the shares")
    # the demo's binpack does not read the model
    with_base_then_key({"score.policy": "fgd"}, "score.fgd_half_life", 10, remembers, forgets)


def probe_fgd_idle_node():
    # No card of the demo is booked here, so every node is idle: the reload charges each
    # placement 100 milli per card of the node, 0.05 of the fgd fit per card (explain does
    # not teach). The fit is clamped at 0, so only "lower, and by 0.05 x cards somewhere".
    asked = PODS[2]

    def setup():
        for _ in range(20):
            post(PREFIX + "/filter", {"Pod": PODS[0], "Nodes": None, "NodeNames": NAMES})
        before = fgd_fits(asked)
        c.ok(before, "score.fgd_idle_card_milli: explain shows the fgd fit")
        return before

    def charged(before):
        after = fgd_fits(asked)
        drops = [round((before[k] - after[k]) / 0.05, 3) for k in before] if before else []
        return bool(before) and after.keys() == before.keys() and \
            all(d >= -1e-6 for d in drops) and any(d >= 1 and d == int(d) for d in drops)
    # the gap term (on by default) would clamp some fits: off, to see the charge alone
    with_base_then_key({"score.policy": "fgd", "score.fgd_gap_milli": 0},
                       "score.fgd_idle_card_milli", 100, setup, charged)


def probe_fgd_gap():
    # The share the setup bound on gpu-node-b left a gap there that the same share fills.
    # With the term on, a share that opens a gap on a fresh card pays for it and one that
    # fills a gap earns: gpu-node-b's fgd fit rises, the other nodes' drop.
    asked = PODS[2]

    def setup():
        for _ in range(20):
            post(PREFIX + "/filter", {"Pod": asked, "Nodes": None, "NodeNames": NAMES})
        before = fgd_fits(asked)
        c.ok(before, "score.fgd_gap_milli: explain shows the fgd fit")
        return before

    def moved(before):
        after = fgd_fits(asked)
        return bool(before) and after.keys() == before.keys() and \
            after["gpu-node-b"] > before["gpu-node-b"] + 1e-6 and \
            all(after[k] < before[k] - 1e-6 for k in before if k != "gpu-node-b")
    with_base_then_key({"score.policy": "fgd", "score.fgd_gap_milli": 0},
                       "score.fgd_gap_milli", 100, setup, moved)


def lease_tenant(node, uid):
    return next((t for t in api.lease_tenants(node) if t["uid"] == uid), None)


def orphan_tenant(node):
    """Bind a pod, then rewrite its Lease tenant as one of a pod nobody knows, 10 min old."""
    p = new_api_pod()
    st, err, _ = bind_pod(p, node)
    c.ok(st == 200 and not err, f"bind a pod ({err})")
    c.ok(wait_for(lambda: lease_tenant(node, p["metadata"]["uid"]), 5), "the pod is in the Lease")
    lease = copy.deepcopy(api.state()["leases"][f"gpu-extender/gpu-extender-{node}"])
    ann = lease["metadata"]["annotations"]
    doc = json.loads(ann["gpu-extender.io/tenants"])
    orphan = "uid-orphan-" + str(time.time())
    for t in doc["tenants"]:
        if t["uid"] == p["metadata"]["uid"]:
            t["uid"], t["pod"], t["since_ms"] = orphan, "team-a/orphan", t["since_ms"] - 600000
    ann["gpu-extender.io/tenants"] = json.dumps(doc)
    api.control("POST", "/control/leases", lease)
    return orphan


def released_within(node, uid, seconds):
    return wait_for(lambda: not lease_tenant(node, uid), seconds)


def probe_reconcile_interval():
    # A tenant whose pod the watch never showed (a crashed bind of another replica, a
    # lost event) is left to the periodic pass: with a pass an hour away it stays, after
    # the reload to 1 s the next pass releases it.
    node = "gpu-node-b"

    def setup():
        time.sleep(1.5)  # a pass of the 1 s base may be under way
        orphan = orphan_tenant(node)
        time.sleep(3)
        c.ok(lease_tenant(node, orphan), "ledger.reconcile_interval_s: with passes an hour "
                                         "apart the orphan stays")
        return orphan
    with_base_then_key({"ledger.reconcile_interval_s": 3600}, "ledger.reconcile_interval_s", 1,
                       setup, lambda orphan: released_within(node, orphan, 4))


def probe_reservation_ttl():
    # A bind whose Binding got a 5xx keeps its reservation (the API server may still apply
    # it); the pod stays pending and managed. Only the TTL releases it. The bind deadline
    # is cut first so the reservation is settled after 1 s instead of 8.
    node = "gpu-node-b"

    def setup():
        p = new_api_pod()
        md = p["metadata"]
        # two: the bind sends a Binding that failed and did not land once more
        api_fault(kind="500", count=2, path_prefix=f"/api/v1/namespaces/{md['namespace']}/pods/"
                                                   f"{md['name']}/binding")
        st, err, _ = bind_pod(p, node)
        api.control("DELETE", "/control/fault")
        c.ok(st == 200 and err, f"sharing.reservation_ttl_s: the bind fails ({err})")
        c.ok(wait_for(lambda: lease_tenant(node, md["uid"]), 3),
             "sharing.reservation_ttl_s: the failed bind keeps its reservation")
        time.sleep(3)
        c.ok(lease_tenant(node, md["uid"]), "sharing.reservation_ttl_s: kept with the base 300 s")
        return md["uid"]
    with_base_then_key({"ledger.bind_deadline_ms": 500}, "sharing.reservation_ttl_s", 2, setup,
                       lambda uid: released_within(node, uid, 4))


PROBES = {
    "server.connection_timeout_s": probe_conn_timeout,
    "server.max_body_bytes": probe_max_body,
    "server.max_inflight_bytes": probe_max_inflight,
    "server.max_json_depth": probe_depth,
    "server.debug_endpoints": probe_debug,
    "log.level": probe_log_level,
    "prometheus.interval_s": probe_prom_interval,
    "prometheus.timeout_s": probe_prom_timeout,
    "prometheus.max_response_bytes": probe_prom_max_response,
    "prometheus.bearer_token_file": probe_prom_bearer,
    "prometheus.basic_auth.username": probe_prom_basic,
    "prometheus.basic_auth.password_file": probe_prom_basic_password,
}
PROBES["metrics.on_stale"] = probe_on_stale
PROBES["score.fgd_half_life"] = probe_fgd_half_life
PROBES["score.fgd_idle_card_milli"] = probe_fgd_idle_node
PROBES["score.fgd_gap_milli"] = probe_fgd_gap
PROM_PROBES = {k: PROBES.pop(k) for k in list(PROBES) if k.startswith("prometheus.")}
for s in ("util", "mem_used", "mem_free", "temp", "power", "xid", "util_trend"):
    PROM_PROBES[f"prometheus.queries.{s}"] = (lambda s=s: probe_prom_query(s))
    if s not in ("power", "mem_free", "util_trend"):
        PROM_PROBES[f"metrics.max_age_s.{s}"] = (lambda s=s: probe_max_age(s))
for k, v in DECISION.items():
    PROBES[k] = (lambda k=k, v=v: probe_decision(k, v))



# ---- stage 3: the API server (fake_apiserver.py) for kubernetes.*, ledger.* and the
# annotation names bind writes

api = None
api_pods = [0]


def api_log_after(t0, text):
    st = api.state()
    return [r for r in st.get("request_log", []) if r["time"] >= t0 and text in r["path"]]


def api_fault(**spec):
    spec.setdefault("count", 1)
    st, _ = api.control("POST", "/control/fault", spec)
    return st


def kube_errors(kind):
    return metric_line(f'gpu_extender_upstream_errors_total{{upstream="kubernetes",kind="{kind}"}}')


def new_api_pod():
    api_pods[0] += 1
    p = shared_pod(f"probe-{api_pods[0]}", f"uid-probe-{api_pods[0]}", ns="team-a")
    api.control("POST", "/control/pods", p)
    return p


def bind_pod(p, node="gpu-node-b"):
    md = p["metadata"]
    t = time.time()
    st, data, _ = post(PREFIX + "/bind", {"PodName": md["name"], "PodNamespace": md["namespace"],
                                          "PodUID": md["uid"], "Node": node}, timeout=20)
    try:
        err = json.loads(data).get("Error")
    except ValueError:
        err = repr(data)
    return st, err, time.time() - t


def pod_annotations(p):
    st = api.state()
    md = p["metadata"]
    obj = st["pods"].get(f"{md['namespace']}/{md['name']}") or {}
    return (obj.get("metadata") or {}).get("annotations") or {}


def with_api_key(key, value, check, before=None):
    cfg = copy.deepcopy(base_cfg)
    set_key(cfg, key, value)
    if before:
        before()
    if apply(cfg, f"{key}={value!r}"):
        c.ok(check(), f"{key}: the reload to {value!r} took effect")
    apply(copy.deepcopy(base_cfg), f"{key}: restore")


def probe_watch_timeout():
    # base: watches end every 10 s and resume; after the reload they ask for 20 s
    def check():
        t0 = time.time()
        return wait_for(lambda: api_log_after(t0, "timeoutSeconds=20"), 15)
    with_api_key("kubernetes.watch_timeout_s", 20, check)


def probe_managed_label():
    def check():
        t0 = time.time() - 1
        return wait_for(lambda: api_log_after(t0, "example.com%2Fmanaged") or
                        api_log_after(t0, "example.com/managed"), 5)
    with_api_key("names.managed_label", "example.com/managed", check)


def relist_nodes_soon():
    # the next node watch gets 410 Gone: the extender lists again
    api_fault(kind="gone", path_prefix="/api/v1/nodes", watch=True)


def probe_kube_timeout():
    e0 = kube_errors("timeout")

    def check():
        api_fault(kind="slow", delay_s=3, path_prefix="/api/v1/nodes", watch=False)
        relist_nodes_soon()
        return wait_for(lambda: kube_errors("timeout") > e0, 15)
    with_api_key("kubernetes.timeout_s", 1, check)
    api.control("DELETE", "/control/fault")


def demo_node(name):
    with open(os.path.join(ROOT, "config", "demo", "nodes.json")) as f:
        return next(n for n in json.load(f)["items"] if n["metadata"]["name"] == name)


def full_log():
    with open(ext.log_path, "rb") as f:
        return f.read().decode(errors="replace")


def probe_max_event():
    # the cap is given to a watch when it starts (documented): wait for the next node watch
    def node_reqs(t0, watch):
        return [r for r in api_log_after(t0, "/api/v1/nodes")
                if ("watch=1" in r["path"]) == watch]

    def check():
        t0 = time.time()
        relist_nodes_soon()  # the watch after the current one is refused: list, then watch
        wait_for(lambda: node_reqs(t0, False), 25)  # a watch may still run 20 s (see above)
        lists = node_reqs(t0, False)
        t1 = lists[0]["time"] if lists else t0
        wait_for(lambda: node_reqs(t1, True), 5)
        time.sleep(0.3)
        if not node_reqs(t1, True):
            print(f"reload_live: max_event_bytes: no new node watch: {node_reqs(t0, False)} "
                  f"{node_reqs(t0, True)}", flush=True)
        n0 = full_log().count("too large")
        node = copy.deepcopy(demo_node("gpu-node-c"))
        node["metadata"].setdefault("labels", {})["probe"] = str(time.time())
        node["metadata"].pop("resourceVersion", None)
        api.control("POST", "/control/nodes", node)
        return wait_for(lambda: full_log().count("too large") > n0, 5)
    with_api_key("kubernetes.max_event_bytes", 1024, check)


def probe_max_list():
    base_node = demo_node("gpu-node-c")
    names = []
    for i in range(400):
        n = copy.deepcopy(base_node)
        n["metadata"]["name"] = f"probe-node-{i:03d}"
        n["metadata"]["labels"]["kubernetes.io/hostname"] = n["metadata"]["name"]
        n["metadata"]["labels"]["pad"] = "p" * 60
        n["metadata"].pop("resourceVersion", None)
        n["metadata"].pop("uid", None)
        names.append(n["metadata"]["name"])
        api.control("POST", "/control/nodes", n)
    e0 = kube_errors("parse")

    def check():
        relist_nodes_soon()
        return wait_for(lambda: kube_errors("parse") > e0, 15)
    with_api_key("kubernetes.max_list_bytes", 1048576, check)
    for n in names:
        api.control("DELETE", f"/control/nodes/{n}")


def probe_sync_interval():
    def check():
        t0 = time.time()
        time.sleep(3.5)
        lists = [r for r in api_log_after(t0, "/leases") if "watch=" not in r["path"]]
        return len(lists) >= 2
    with_api_key("ledger.sync_interval_s", 1, check)


def probe_cas_retries():
    def check():
        p = new_api_pod()
        for m in ("PUT", "POST"):
            api_fault(kind="409", path_prefix="/apis/coordination.k8s.io", method=m, count=3)
        st, err, _ = bind_pod(p)
        api.control("DELETE", "/control/fault")
        return st == 200 and err and "compare-and-swap" in err
    with_api_key("ledger.cas_retries", 1, check)
    # with the restored 8 attempts, three conflicts are retried through
    p = new_api_pod()
    for m in ("PUT", "POST"):
        api_fault(kind="409", path_prefix="/apis/coordination.k8s.io", method=m, count=3)
    st, err, _ = bind_pod(p)
    api.control("DELETE", "/control/fault")
    c.ok(st == 200 and not err, f"ledger.cas_retries: restored 8 attempts bind through ({err})")


def probe_bind_deadline():
    def check():
        p = new_api_pod()
        md = p["metadata"]
        api_fault(kind="slow", delay_s=3,
                  path_prefix=f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/binding")
        st, err, took = bind_pod(p)
        api.control("DELETE", "/control/fault")
        return st == 200 and err and took < 2.0
    with_api_key("ledger.bind_deadline_ms", 500, check)


def probe_binds_in_flight():
    # One bind at a time: a second, sent while the first's Binding is held 3 s, is shed
    # when half its deadline (2 s) is gone, before any API call of its own.
    def check():
        slow, other = new_api_pod(), new_api_pod()
        md = slow["metadata"]
        api_fault(kind="slow", delay_s=3,
                  path_prefix=f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/binding")
        first = {}
        t = threading.Thread(target=lambda: first.update(r=bind_pod(slow)))
        t.start()
        time.sleep(0.5)
        st, err, _ = bind_pod(other)
        t.join()
        api.control("DELETE", "/control/fault")
        return (st == 200 and err and "too many binds in flight" in err
                and first["r"][0] == 200 and not first["r"][1])
    with_api_key("ledger.binds_in_flight", 1, check)


def probe_bind_annotation(key):
    def check():
        p = new_api_pod()
        st, err, _ = bind_pod(p)
        return st == 200 and not err and wait_for(
            lambda: any(k.startswith("example.com/") for k in pod_annotations(p)), 3)
    with_api_key(key, "example.com/" + key.split(".")[-1].replace("_", "-"), check)


API_PROBES = {
    "kubernetes.watch_timeout_s": probe_watch_timeout,
    "names.managed_label": probe_managed_label,
    "kubernetes.timeout_s": probe_kube_timeout,
    "kubernetes.max_event_bytes": probe_max_event,
    "kubernetes.max_list_bytes": probe_max_list,
    "ledger.sync_interval_s": probe_sync_interval,
    "ledger.cas_retries": probe_cas_retries,
    "ledger.bind_deadline_ms": probe_bind_deadline,
    "ledger.binds_in_flight": probe_binds_in_flight,
    "names.gpu_uuids_annotation": lambda: probe_bind_annotation("names.gpu_uuids_annotation"),
    "names.gpu_index_annotation": lambda: probe_bind_annotation("names.gpu_index_annotation"),
    "ledger.reconcile_interval_s": probe_reconcile_interval,
    "sharing.reservation_ttl_s": probe_reservation_ttl,
}
for k in API_PROBES:
    NEEDS_API_SERVER.pop(k, None)

def live_keys():
    keys = []
    with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
        for ln in f:
            m = re.match(r"\| `([^`]+)` \|(?:[^|]*\|){3} *live *\|", ln)
            if m:
                keys.append(m.group(1))
    return keys


t_start = time.time()
only = os.environ.get("GX_RELOAD_ONLY")
keys = live_keys()
c.ok(len(keys) > 60, f"live keys found in docs/configuration.md ({len(keys)})")
TLS_PROBES = {
    "prometheus.ca_file": lambda: probe_prom_tls("prometheus.ca_file", PROM_CA),
    "prometheus.insecure_skip_verify": lambda: probe_prom_tls("prometheus.insecure_skip_verify",
                                                              True),
}
covered = set(PROBES) | set(PROM_PROBES) | set(API_PROBES) | set(TLS_PROBES) | \
    set(NEEDS_API_SERVER) | \
    set(NO_EFFECT) | \
    set(KNOWN_NOT_LIVE) | ELEMENT_ROWS
c.eq([k for k in keys if k not in covered], [],
     "every live key has a reload probe (or is listed in NEEDS_API_SERVER / NO_EFFECT)")
c.eq([k for k in covered if k not in keys], [], "every probed key is still a documented live key")


def run_stage(overrides, probes, setup=None):
    start(overrides)
    try:
        if setup:
            setup()
        for k in keys:
            if k in probes and (not only or re.search(only, k)):
                n0 = c.failed
                probes[k]()
                print(f"reload_live: {k} {'ok' if c.failed == n0 else 'FAILED'}", flush=True)
        c.eq(ext.stop(), 0, "exit status after SIGTERM (no sanitizer report)")
    finally:
        if c.failed:
            print(ext.logs())
        ext.cleanup()


def book_one():
    # a booking, so per-card series and namespace use exist before the first observation; of
    # a pod of its own: a booked pod's filter keeps its node (and refuses the others while its
    # Binding may land), which would make the observed pods' decisions change with time
    booked = copy.deepcopy(PODS[2])
    booked["metadata"].update(name="booked", uid="uid-booked")
    post(PREFIX + "/filter", {"Pod": booked, "Nodes": None, "NodeNames": NAMES})
    st, data, _ = post(PREFIX + "/bind", {"PodName": "booked", "PodNamespace": "ml",
                                          "PodUID": "uid-booked", "Node": "gpu-node-b"})
    c.eq(st, 200, "setup: bind a shared pod")


try:
    run_stage(BASE_FILES, PROBES, book_one)
    run_stage(BASE_PROM, PROM_PROBES)
    run_stage(BASE_TLS, TLS_PROBES)
    if not only or any(re.search(only, k) for k in API_PROBES):
        api = FakeApiServer()
        try:
            run_stage(live_overrides(api, **{"ledger.sync_interval_s": 3600,
                                             "kubernetes.watch_timeout_s": 10,
                                             "server.debug_endpoints": True}), API_PROBES)
        finally:
            api.stop()
    print("reload_live: not probed: " +
          ", ".join(sorted(NEEDS_API_SERVER)), flush=True)
    print("reload_live: no observable effect: " + ", ".join(sorted(NO_EFFECT)), flush=True)
    for k, why in sorted(KNOWN_NOT_LIVE.items()):
        print(f"reload_live: KNOWN BUG, {k} is documented live but not applied: {why}",
              flush=True)
    print(f"reload_live: {time.time() - t_start:.1f}s", flush=True)
finally:
    prom.shutdown()
    proms.shutdown()
c.done()
