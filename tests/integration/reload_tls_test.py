"""Issue 5: the config is a ConfigMap mounted as a directory. Editing it the
way kubelet does (a new timestamped directory, then an atomic swap of the
..data symlink) changes decisions within the reload interval; an invalid edit
is rejected with the old config still in force; SIGHUP reloads too. Then
HTTPS with a test CA: the client verifies the server, and a rotated
certificate is served without a restart."""
import copy
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

from gxtest import Checks, Extender, fixture, wait_for

c = Checks("reload_tls")
binary = sys.argv[1]
mount = tempfile.mkdtemp(prefix="gx-cm-")
generation = [0]


def kubelet_write(cfg_text):
    """Publish @cfg_text as kubelet does: ..<ts>/config.json, swap ..data, config.json -> ..data/config.json."""
    generation[0] += 1
    d = os.path.join(mount, f"..2026_11_29_{generation[0]:06d}")
    os.mkdir(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(cfg_text)
    tmp = os.path.join(mount, "..data_tmp")
    os.symlink(os.path.basename(d), tmp)
    os.replace(tmp, os.path.join(mount, "..data"))
    link = os.path.join(mount, "config.json")
    if not os.path.islink(link):
        os.symlink("..data/config.json", link)


wait = wait_for


def metric(ext, name):
    _, body, _ = ext.request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


POD = fixture("pod-gpu.json")
ARGS = {"Pod": POD, "Nodes": None, "NodeNames": ["gpu-node-a", "gpu-node-b"]}


def kept(ext):
    st, res = ext.post_json(ext.verb("filter"), ARGS)
    return sorted(res.get("NodeNames") or []) if st == 200 else None


ext = Extender(binary)
base_cfg = copy.deepcopy(ext.cfg)
try:
    kubelet_write(json.dumps(base_cfg))
    ext.config_path = os.path.join(mount, "config.json")
    ext.start()
    c.eq(kept(ext), ["gpu-node-a", "gpu-node-b"], "both GPU nodes fit with the default limits")
    _, body, _ = ext.request("GET", "/version")
    hash0 = json.loads(body)["config_hash"]

    # A live edit: the hottest usable card on node-a is 34 C, on node-b 30-31 C; a 32 C limit
    # makes gpu-node-a unusable and keeps gpu-node-b.
    edited = copy.deepcopy(base_cfg)
    edited["health"] = {"max_temperature_c": 32}
    kubelet_write(json.dumps(edited))
    c.ok(wait(lambda: kept(ext) == ["gpu-node-b"], 5), "a ..data swap changes decisions within the reload interval")
    _, body, _ = ext.request("GET", "/version")
    hash1 = json.loads(body)["config_hash"]
    c.ok(hash1 != hash0, "the new config hash is shown in /version")
    c.eq(metric(ext, "gpu_extender_config_last_reload_success"), 1.0, "reload success metric is 1")

    # An invalid edit: rejected, the last good config stays in force.
    bad = copy.deepcopy(edited)
    bad["health"]["max_temperature_c"] = 500
    kubelet_write(json.dumps(bad))
    c.ok(wait(lambda: metric(ext, "gpu_extender_config_last_reload_success") == 0.0, 5),
         "invalid edit reported in gpu_extender_config_last_reload_success")
    c.eq(kept(ext), ["gpu-node-b"], "old config still in force after an invalid edit")
    _, body, _ = ext.request("GET", "/version")
    c.eq(json.loads(body)["config_hash"], hash1, "/version still shows the last good config")
    c.ok("health.max_temperature_c" in ext.logs(), "the log names the offending key")
    kubelet_write("{ not json")
    time.sleep(1.5)
    c.eq(kept(ext), ["gpu-node-b"], "unparseable edit rejected too")

    # A restart-only key is reported, not silently applied.
    restart = copy.deepcopy(edited)
    restart["server"]["url_prefix"] = "/other"
    kubelet_write(json.dumps(restart))
    c.ok(wait(lambda: "server.url_prefix" in ext.logs() and "restart" in ext.logs(), 5),
         "a change to a restart-only key is reported")
    st, _, _ = ext.request("POST", "/gpu-extender/filter", ARGS)
    c.eq(st, 200, "the running prefix is unchanged until a restart")

    # SIGHUP reloads immediately (here: back to the defaults).
    path = os.path.realpath(os.path.join(mount, "config.json"))
    with open(path, "w") as f:
        json.dump(base_cfg, f)
    ext.proc.send_signal(signal.SIGHUP)
    c.ok(wait(lambda: kept(ext) == ["gpu-node-a", "gpu-node-b"], 3), "SIGHUP reloads the config")
    c.eq(ext.stop(), 0, "clean exit")
finally:
    if c.failed:
        print(ext.logs())
    ext.cleanup()

# ---- HTTPS with a test CA ----
pki = tempfile.mkdtemp(prefix="gx-pki-")


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, cwd=pki, capture_output=True)


def make_cert(name):
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", "/CN=gpu-extender.gpu-extender.svc")
    with open(os.path.join(pki, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:gpu-extender.gpu-extender.svc,DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", "ext.cnf")


def _try(f):
    try:
        return f()
    except Exception:  # noqa: BLE001
        return False


openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", "/CN=gpu-extender test CA")
make_cert("server")
ext = Extender(binary, overrides={"server.tls_cert_file": os.path.join(pki, "server.crt"),
                                  "server.tls_key_file": os.path.join(pki, "server.key")})
try:
    ext.proc = None
    ext.log = open(ext.log_path, "ab")
    ext.proc = subprocess.Popen([binary, "--config", ext.config_path], stdout=ext.log, stderr=ext.log)
    ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))

    def https(path, body=None):
        req = urllib.request.Request(f"https://127.0.0.1:{ext.port}{path}",
                                     data=json.dumps(body).encode() if body else None,
                                     method="POST" if body else "GET")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
            return r.status, r.read(), r.headers

    c.ok(wait(lambda: _try(lambda: https("/readyz")[0] == 200), 10), "HTTPS readyz verified against the test CA")
except Exception as e:  # noqa: BLE001
    c.ok(False, f"https setup: {e}")


try:
    st, body, _ = https("/gpu-extender/filter", ARGS)
    c.eq(st, 200, "filter over HTTPS")
    c.eq(sorted(json.loads(body)["NodeNames"]), ["gpu-node-a", "gpu-node-b"], "same decisions over HTTPS")
    plain = urllib.request.Request(f"http://127.0.0.1:{ext.port}/readyz")
    c.ok(not _try(lambda: urllib.request.urlopen(plain, timeout=3)), "plain HTTP is not served on the TLS port")
    untrusted = ssl.create_default_context()
    c.ok(not _try(lambda: urllib.request.urlopen(f"https://127.0.0.1:{ext.port}/readyz", context=untrusted, timeout=3)),
         "a client without the CA refuses the certificate")

    def serial():
        der = ssl.get_server_certificate(("127.0.0.1", ext.port))
        return der

    first = serial()
    # Rotate the certificate as a Secret update would: same paths, new content.
    make_cert("rotated")
    os.replace(os.path.join(pki, "rotated.key"), os.path.join(pki, "server.key"))
    os.replace(os.path.join(pki, "rotated.crt"), os.path.join(pki, "server.crt"))
    c.ok(wait(lambda: _try(lambda: serial() != first), 10), "a rotated certificate is served without a restart")
    st, body, _ = https("/gpu-extender/filter", ARGS)
    c.eq(st, 200, "filter over HTTPS after rotation")
    c.eq(ext.stop(), 0, "clean exit with TLS")
finally:
    if c.failed:
        print(ext.logs())
    ext.cleanup()
c.done()
