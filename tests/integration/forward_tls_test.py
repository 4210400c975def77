"""Issue 19, replicas.forward with TLS: the replicas serve HTTPS from one Secret (the same
certificate and key), so a follower trusts the leader by that key alone (curl's public-key
pin), whatever name or CA its certificate carries. Checked with two real replicas on the fake
API server: the leader Lease names an https:// URL, a filter sent to the follower is the
leader's answer; a third replica with a key of its own cannot forward (the pin does not
match) and answers itself."""
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.request

from gxtest import (Checks, Extender, FakeApiServer, live_overrides, metric_value, shared_pod,
                    wait_for)

NODE = "gpu-node-a"
c = Checks("forward_tls")
api = FakeApiServer()
pki = tempfile.mkdtemp(prefix="gx-pki-")
exts = []
CTX = ssl._create_unverified_context()


def self_signed(name):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key", "-out",
                    f"{name}.crt", "-days", "2", "-subj", "/CN=gpu-extender.gpu-extender.svc"],
                   check=True, cwd=pki, capture_output=True)
    return os.path.join(pki, f"{name}.crt"), os.path.join(pki, f"{name}.key")


def https(ext, method, path, body=None):
    req = urllib.request.Request(f"https://127.0.0.1:{ext.port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, context=CTX, timeout=10) as r:
        return r.status, r.read()


def metric(ext, name):
    return metric_value(https(ext, "GET", "/metrics")[1].decode(), name)


def replica(pair):
    ext = Extender(sys.argv[1], overrides=live_overrides(api, **{
        "replicas.forward": True, "replicas.lease_s": 2,
        "server.tls_cert_file": pair[0], "server.tls_key_file": pair[1]}))
    ext.cfg["replicas"]["advertise_url"] = f"https://127.0.0.1:{ext.port}"
    ext.write_config(ext.cfg)
    exts.append(ext)
    ext.log = open(ext.log_path, "ab")
    ext.proc = subprocess.Popen([sys.argv[1], "--config", ext.config_path], stdout=ext.log,
                                stderr=ext.log)
    if not wait_for(lambda: https(ext, "GET", "/readyz")[0] == 200, 20):
        raise RuntimeError("replica not ready: " + ext.logs())
    return ext


def lease_holder():
    for key, obj in (api.state().get("leases") or {}).items():
        if key.endswith("gpu-extender-leader"):
            return (obj["metadata"].get("annotations") or {}).get("gpu-extender.io/leader")
    return None


try:
    shared = self_signed("shared")
    a = replica(shared)
    c.ok(wait_for(lambda: metric(a, "gpu_extender_leader") == 1, 5), "the first replica leads")
    c.eq(lease_holder(), f"https://127.0.0.1:{a.port}", "the Lease names its https:// URL")
    b = replica(shared)
    pod = shared_pod("p0", "uid-p0")
    api.control("POST", "/control/pods", pod)
    args = {"Pod": pod, "Nodes": None, "NodeNames": [NODE]}
    st, via_b = https(b, "POST", b.verb("filter"), args)
    st_a, direct = https(a, "POST", a.verb("filter"), args)
    c.ok(st == 200 and json.loads(via_b) == json.loads(direct),
         "a filter sent to the follower is the leader's answer, over TLS")
    c.eq(metric(b, "gpu_extender_forwarded_total"), 1, "the follower forwarded it")
    c.eq(metric(b, "gpu_extender_forward_fallbacks_total"), 0, "trusting the leader's key")

    stranger = replica(self_signed("stranger"))
    st, _ = https(stranger, "POST", stranger.verb("filter"), args)
    c.eq(st, 200, "a replica with another key answers itself")
    c.eq(metric(stranger, "gpu_extender_forwarded_total"), 0, "it forwards nothing")
    c.eq(metric(stranger, "gpu_extender_forward_fallbacks_total"), 1,
         "the leader's key does not match its pin")
finally:
    for e in exts:
        if c.failed:
            print(e.logs())
        e.cleanup()
    api.stop()
c.done()
