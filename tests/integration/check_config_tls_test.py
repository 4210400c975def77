"""--check-config rejects what start-up would, a reload keeps the last good config, and
the HTTPS side speaks TLS 1.2 and 1.3 only.

1. `gpu-extender --check-config` exits 1 naming the key for: a missing TLS certificate,
   an unreadable key (a directory), a certificate that does not match its key,
   prometheus.url ftp://x, a string with \\u0000, a bad server.tls_priorities, a
   budget too small for the body cap, a nodes or metrics file that does not exist, a CA
   or token file that cannot be read and a node label selector that does not parse; and
   exits 0 for a good TLS config.
2. A running extender given each of those configs keeps serving with the last good
   one: the reload is counted as failed and the config hash does not change.
3. Over HTTPS a TLS 1.2 and a TLS 1.3 client are served; TLS 1.0 and 1.1 clients are
   refused; with server.tls_priorities "NORMAL:-VERS-ALL:+VERS-TLS1.3" TLS 1.2 is
   refused too.
"""
import copy
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import warnings

from gxtest import Checks, Extender, wait_for

warnings.filterwarnings("ignore", category=DeprecationWarning)  # TLS 1.0/1.1 on purpose
c = Checks("check_config_tls")
binary = sys.argv[1]
pki = tempfile.mkdtemp(prefix="gx-tls-")


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, cwd=pki, capture_output=True)


openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "a.key", "-out", "a.crt",
        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "b.key", "-out", "b.crt",
        "-days", "2", "-subj", "/CN=other")
CRT, KEY, KEY_B = (os.path.join(pki, n) for n in ("a.crt", "a.key", "b.key"))

BAD = [
    ("missing certificate", {"server.tls_cert_file": os.path.join(pki, "none.crt"),
                             "server.tls_key_file": KEY}, "server.tls_cert_file"),
    ("key is a directory", {"server.tls_cert_file": CRT, "server.tls_key_file": pki},
     "server.tls_key_file"),
    ("certificate of another key", {"server.tls_cert_file": CRT, "server.tls_key_file": KEY_B},
     "server.tls_cert_file"),
    ("prometheus.url ftp://x", {"prometheus.url": "ftp://x"}, "prometheus.url"),
    ("a string with \\u0000", {"names.gpu_resource": "nvidia.com/gpu\u0000x"},
     "names.gpu_resource"),
    ("bad TLS priorities", {"server.tls_priorities": "NO-SUCH-PRIORITY"},
     "server.tls_priorities"),
    ("budget below the body cap", {"server.max_body_bytes": 100 << 20},
     "server.max_inflight_bytes"),
    # issue 22: what start-up refuses, named by key
    ("missing nodes file", {"sources.files.nodes": "/x/nodes.json"},
     "sources.files.nodes: /x/nodes.json: No such file or directory"),
    ("missing metrics file", {"sources.files.metrics": ["/x/a.prom"]},
     "sources.files.metrics[0]: /x/a.prom: No such file or directory"),
    ("API server CA is a directory", {"kubernetes.ca_file": pki},
     "kubernetes.ca_file: " + pki + ": is a directory"),
    ("missing Prometheus token", {"prometheus.bearer_token_file": "/x/token"},
     "prometheus.bearer_token_file: /x/token: No such file or directory"),
    ("node selector that does not parse", {"kubernetes.node_selector": "gpu in nvidia"},
     "kubernetes.node_selector: 'gpu in nvidia' is not a label selector"),
]


def config_with(ext, overrides):
    cfg = copy.deepcopy(ext.cfg)
    for path, value in overrides.items():
        node = cfg
        keys = path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return cfg


def check_config(cfg):
    path = os.path.join(pki, "check.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    p = subprocess.run([binary, "--check-config", path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def metric_line(ext, prefix):
    st, data, _ = ext.request("GET", "/metrics")
    for ln in data.decode().splitlines():
        if ln.startswith(prefix):
            return float(ln.split()[-1])
    return None


def tls_handshake(port, version, ca=CRT):
    """The negotiated version, or None when the server refused."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(ca)
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # let this client offer the old protocols
    ctx.minimum_version = version
    ctx.maximum_version = version
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                t.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                ok = t.recv(100).startswith(b"HTTP/1.1 200")
                return t.version() if ok else None
    except (ssl.SSLError, OSError):
        return None


def reloads_keep_the_last_good_config(plain, bad):
    """2. Each config of @bad, given to the running @plain, is rejected by its reload."""
    good_hash = metric_line(plain, "gpu_extender_config_hash")
    for what, overrides, key in bad:
        failed0 = metric_line(plain, 'gpu_extender_config_reloads_total{result="failure"}')
        named0 = plain.logs().count(key)
        plain.write_config(config_with(plain, overrides))
        os.kill(plain.proc.pid, signal.SIGHUP)
        # a new line naming the key is this config's own rejection; the count alone may have
        # grown by the config file check (every second) rejecting the previous one again
        c.ok(wait_for(lambda: plain.logs().count(key) > named0, 5),
             f"reload, {what}: the log names {key}")
        c.ok(wait_for(lambda: metric_line(
            plain, 'gpu_extender_config_reloads_total{result="failure"}') > failed0, 5),
            f"reload, {what}: counted as failed")
        c.eq(metric_line(plain, "gpu_extender_config_hash"), good_hash,
             f"reload, {what}: the last good config stays")
        st, _, _ = plain.request("GET", "/healthz")
        c.eq(st, 200, f"reload, {what}: still serving")


# -- 1. --check-config
base = Extender(binary)
for what, overrides, key in BAD:
    rc, out = check_config(config_with(base, overrides))
    c.ok(rc == 1 and key in out, f"--check-config, {what}: exit {rc}, names {key}: {out!r}")
rc, out = check_config(config_with(base, {"server.tls_cert_file": CRT,
                                          "server.tls_key_file": KEY}))
c.eq(rc, 0, f"--check-config accepts a good TLS pair ({out.strip()})")
base.cleanup()

# -- 2. reload keeps the last good config; one extender per GX_LOG_BURST (10) rejections,
# since the log writes at most that many lines of one message per 10 s
for first in range(0, len(BAD), 10):
    plain = Extender(binary)
    try:
        plain.start()
        reloads_keep_the_last_good_config(plain, BAD[first:first + 10])
        c.eq(plain.stop(), 0, "plain extender: exit status after SIGTERM")
    finally:
        if c.failed:
            print(plain.logs())
        plain.cleanup()

# -- 3. TLS versions
for prio, allowed in ((None, {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}),
                      ("NORMAL:-VERS-ALL:+VERS-TLS1.3", {ssl.TLSVersion.TLSv1_3: "TLSv1.3"})):
    over = {"server.tls_cert_file": CRT, "server.tls_key_file": KEY}
    if prio:
        over["server.tls_priorities"] = prio
    ext = Extender(binary, overrides=over)
    try:
        # gxtest's readiness probe speaks plain HTTP; wait for the TLS port instead
        ext.log = open(ext.log_path, "ab")
        ext.proc = subprocess.Popen([binary, "--config", ext.config_path], stdout=ext.log,
                                    stderr=ext.log)
        c.ok(wait_for(lambda: tls_handshake(ext.port, ssl.TLSVersion.TLSv1_3), 20),
             f"HTTPS up ({prio or 'default priorities'})")
        for v in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1, ssl.TLSVersion.TLSv1_2,
                  ssl.TLSVersion.TLSv1_3):
            got = tls_handshake(ext.port, v)
            want = allowed.get(v)
            c.eq(got, want, f"{prio or 'default priorities'}: a {v.name}-only client "
                            f"({'served' if want else 'refused'})")
        c.eq(ext.stop(), 0, "TLS extender: exit status after SIGTERM")
    finally:
        if c.failed:
            print(ext.logs())
        ext.cleanup()
c.done()
