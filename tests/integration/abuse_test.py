"""HTTP abuse test: the real binary on the demo cluster with a 2 s connection
timeout and a 1 MB body cap, attacked with slowloris connections, a thousand
open sockets, oversized and chunked bodies, hostile JSON (deep nesting,
invalid UTF-8, duplicate keys, huge strings, out-of-range numbers, wrong
types), header abuse and pipelining. Throughout, valid calls must be answered
200, nothing may be answered 5xx, every answer of the extender itself must be
JSON (libmicrohttpd's own refusals, 400/413/414/431/505, are the documented
exception), and the process must stay up with bounded memory.

A second instance with the shipped limits (64 MiB bodies, 160 MiB budget,
30 s idle timeout) then meets the shapes of issue 11: 3,000 connections that
send half a request and close within ~0.2 s (/healthz and filter must answer
in < 100 ms throughout, and the connections be gone within 1 s), five 64 MiB
bodies held at once (one admitted, four 503 + Retry-After), 4.5 M node names,
a Pod of 100,000 containers, and a mix of big bodies and small calls: the
small calls must keep answering 200 and the RSS stay under baseline + the
budget (x 1.25 on an ASan build: shadow memory and redzones) + 40 MB."""
import copy
import json
import multiprocessing
import os
import resource
import socket
import sys
import threading
import time

from gxtest import Checks, Extender, fixture

TIMEOUT_S = 2
MAX_BODY = 1000000
RSS_CAP_MB = 200
RSS_SLACK_MB = 30
N_SLOW = 100
N_OPEN = 1000

c = Checks("abuse")
t_start = time.time()

# 1,000 sockets in this process and in the extender (which inherits the limit).
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = N_OPEN + N_SLOW + 512
if soft != resource.RLIM_INFINITY and soft < want:
    new_soft = want if hard == resource.RLIM_INFINITY else min(want, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
if fd_limit != resource.RLIM_INFINITY and fd_limit < want:
    print(f"abuse: RLIMIT_NOFILE is {fd_limit} (hard {hard}); fewer connections are opened")

# ASan keeps freed memory in a quarantine (256 MB by default), which would
# make RSS measure the tool, not the extender; a small one still catches
# use-after-free of recent allocations.
asan = os.environ.get("ASAN_OPTIONS", "")
if "quarantine_size_mb" not in asan:
    os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "quarantine_size_mb=16"

ext = Extender(sys.argv[1], overrides={"server.connection_timeout_s": TIMEOUT_S,
                                       "server.max_body_bytes": MAX_BODY}).start()
PREFIX = ext.cfg["server"].get("url_prefix", "/gpu-extender")
FILTER = PREFIX + "/filter"
PRIORITIZE = PREFIX + "/prioritize"
BIND = PREFIX + "/bind"
ARGS = fixture("extender-filter-args-nodecache.json")
ARGS_BYTES = json.dumps(ARGS).encode()
POD = fixture("pod-gpu.json")
NAMES = ["gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-d"]


def rss_mb():
    try:
        with open(f"/proc/{ext.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


class RssWatch(threading.Thread):
    """Samples the extender's RSS every 50 ms and keeps the peak."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0.0
        self.stop_flag = threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.05)


class Conn:
    """A raw HTTP/1.1 connection that can read several answers in a row."""

    def __init__(self, timeout=10):
        self.s = socket.create_connection(("127.0.0.1", ext.port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        try:
            self.s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            # The server may answer (413) and close before reading a body it refuses;
            # its answer is still in our receive buffer.
            pass

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def response(self):
        """(status, headers, body) of the next answer; raises when the server closed."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            headers[k.strip().lower().decode()] = v.strip().decode()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line() != b"":
                        pass
                    break
                body += self._take(size)
                self._take(2)
        else:
            body = self._take(int(headers.get("content-length", "0")))
        return status, headers, body

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def post_raw(path, body, extra=b"", conn=None):
    """One POST with Content-Length on a fresh (or given) connection."""
    own = conn is None
    conn = conn or Conn()
    try:
        conn.send(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n" + extra +
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        return conn.response()
    finally:
        if own:
            conn.close()


phases = []


def phase(name):
    """Record the RSS after a phase (printed at the end)."""
    phases.append(f"{name} {rss_mb():.0f}")


def is_json(data):
    try:
        json.loads(data)
        return True
    except (ValueError, UnicodeDecodeError):
        return False


valid_ok = 0
valid_bad = []


def valid_call(what):
    """A valid filter call: must be 200 with a well-formed result."""
    global valid_ok
    try:
        st, _, body = post_raw(FILTER, ARGS_BYTES)
        res = json.loads(body)
        good = st == 200 and res.get("Error") == "" and isinstance(res.get("NodeNames"), list)
    except (OSError, ValueError, ConnectionError) as e:
        good, st = False, repr(e)
    if good:
        valid_ok += 1
    else:
        valid_bad.append(f"{what}: {st}")
    return good


def hostile(what, body, path=FILTER, allowed=(200, 400), need_json=True):
    """Send @body; the answer must be one of @allowed (never 5xx) and JSON."""
    try:
        st, _, data = post_raw(path, body if isinstance(body, bytes) else body.encode())
    except (OSError, ConnectionError) as e:
        c.ok(False, f"{what}: no answer ({e!r})")
        return None, None
    c.ok(st in allowed, f"{what}: status {st}, want one of {allowed}: {data[:120]!r}")
    if need_json:
        c.ok(is_json(data), f"{what}: answer is not valid UTF-8 JSON: {data[:120]!r}")
    return st, data


def names_args(pod, names=NAMES):
    return {"Pod": pod, "Nodes": None, "NodeNames": list(names)}


watch = RssWatch()
try:
    # Warm up with realistic traffic, large calls included, so the baseline
    # is a steady state (allocator caches and the ASan quarantine filled).
    full = json.dumps(fixture("extender-filter-args.json")).encode()
    many = json.dumps(names_args(POD, [f"node-{i:05d}" for i in range(40000)])).encode()
    for i in range(40):
        valid_call("warm-up")
        post_raw(FILTER, full)
        if i % 8 == 0:
            post_raw(FILTER, many)
            post_raw(PRIORITIZE, many)
    baseline = rss_mb()
    watch.start()

    # -- slowloris: idle sockets, partial request lines and headers left
    # hanging, and sockets trickling header or body bytes every 0.4 s.
    first = {
        "idle": b"",
        "partial request line": b"POST " + FILTER.encode()[:6],
        "partial headers": b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Ty",
        "trickled headers": b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Slow: ",
        "trickled body": b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: 100000\r\n\r\n{\"Pod\":",
    }
    kinds = list(first)
    slow = []
    for i in range(N_SLOW):
        kind = kinds[i % len(kinds)]
        s = socket.create_connection(("127.0.0.1", ext.port))
        if first[kind]:
            s.sendall(first[kind])
        s.setblocking(False)
        slow.append([kind, s, None])
    t0 = time.time()
    limit = {k: TIMEOUT_S + 1.5 for k in kinds}
    limit["trickled headers"] = limit["trickled body"] = 2 * TIMEOUT_S + 1
    observe = max(limit.values()) + 1
    next_trickle = t0
    while time.time() - t0 < observe and any(e[2] is None for e in slow):
        now = time.time()
        for e in slow:
            if e[2] is not None:
                continue
            try:
                if e[1].recv(4096) == b"":
                    e[2] = now - t0
            except BlockingIOError:
                pass
            except OSError:
                e[2] = now - t0
            if e[2] is None and now >= next_trickle and e[0].startswith("trickled"):
                try:
                    e[1].send(b"a")
                except OSError:
                    e[2] = now - t0
        if now >= next_trickle:
            next_trickle = now + 0.4
            valid_call("during slowloris")
        time.sleep(0.05)
    for kind in kinds:
        times = [e[2] for e in slow if e[0] == kind]
        open_left = sum(1 for t in times if t is None)
        late = [t for t in times if t is not None and t > limit[kind]]
        c.ok(open_left == 0 and not late,
             f"slowloris '{kind}': {len(times)} sockets, {open_left} still open after "
             f"{observe:.1f}s, {len(late)} closed later than {limit[kind]:.1f}s")
    for e in slow:
        e[1].close()
    c.ok(valid_call("after slowloris"), "valid call after slowloris")

    phase("slowloris")

    # -- 1,000 connections at once (a third with half a request), then valid calls
    n_open = N_OPEN
    if fd_limit != resource.RLIM_INFINITY:
        n_open = min(N_OPEN, int(fd_limit) - 200)
    conns = []
    try:
        for i in range(n_open):
            s = socket.create_connection(("127.0.0.1", ext.port), timeout=5)
            if i % 3 == 0:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            conns.append(s)
    except OSError as e:
        c.ok(False, f"opening {n_open} connections: {e!r} after {len(conns)}")
    c.eq(len(conns), n_open, "connections opened at once")
    ok = all(valid_call(f"with {len(conns)} connections open") for _ in range(5))
    c.ok(ok, f"valid calls answered with {len(conns)} connections open")
    st, body, _ = ext.request("GET", "/healthz")
    c.eq(st, 200, "healthz with many connections open")
    for s in conns:
        s.close()
    conns = []

    phase("1000 connections")

    # -- bodies over the cap: 413 with Content-Length (answered before the body) and chunked
    conn = Conn()
    try:
        conn.send(b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: " +
                  str(MAX_BODY + 1).encode() + b"\r\n\r\n" + b"[" * 65536)
        st, _, data = conn.response()
        c.eq(st, 413, "Content-Length over the cap")
        c.ok(is_json(data), "413 body is JSON")
    except (OSError, ConnectionError) as e:
        c.ok(False, f"Content-Length over the cap: {e!r}")
    conn.close()
    st, _, _ = post_raw(FILTER, b" " * (MAX_BODY + 10))
    c.eq(st, 413, "full body just over the cap")

    def chunked(body, size):
        out = b""
        for i in range(0, len(body), size):
            part = body[i:i + size]
            out += b"%x\r\n" % len(part) + part + b"\r\n"
        return out + b"0\r\n\r\n"

    for n, size in ((int(MAX_BODY * 1.5), 65536), (MAX_BODY + 1, 1000)):
        conn = Conn()
        try:
            conn.send(b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                      chunked(b"x" * n, size))
            st, _, data = conn.response()
            c.eq(st, 413, f"chunked body of {n} bytes in {size}-byte chunks")
            c.ok(is_json(data), "chunked 413 body is JSON")
        except (OSError, ConnectionError) as e:
            c.ok(False, f"chunked body of {n} bytes: {e!r}")
        conn.close()
    conn = Conn()
    conn.send(b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n" + chunked(ARGS_BYTES, 777))
    st, _, data = conn.response()
    conn.close()
    c.eq(st, 200, "valid chunked filter call")
    valid_call("after oversized bodies")

    phase("oversized bodies")

    # -- deeply nested JSON: 400
    depth = 100000
    hostile("nested arrays", b"[" * depth + b"]" * depth, allowed=(400,))
    hostile("nested objects", b'{"a":' * depth + b"1" + b"}" * depth, allowed=(400,))
    hostile("nested arrays, unclosed", b"[" * 500000, allowed=(400,))
    hostile("nesting inside the Pod",
            b'{"Pod":{"metadata":{"labels":' + b"[" * 5000 + b"]" * 5000 + b'}},"NodeNames":["a"]}',
            allowed=(400,))
    hostile("nesting inside Nodes items",
            b'{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"a"},"x":' + b"[" * 5000 +
            b"]" * 5000 + b"}]}}", allowed=(400,))
    hostile("nesting in bind", b'{"PodName":' + b"[" * 5000 + b"]" * 5000 + b"}", path=BIND,
            allowed=(400,))

    phase("nesting")

    # -- invalid UTF-8 in strings: 200 or 400, and the answer is valid UTF-8 JSON
    pod_text = json.dumps(POD).encode()
    bad_utf8 = [b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"a\x80b", b"\xf4\x90\x80\x80",
                b"\\ud800", b"\\udc00x", b"\\ud800\\u0041"]
    for i, seq in enumerate(bad_utf8):
        hostile(f"invalid UTF-8 #{i} in a node name",
                b'{"Pod":' + pod_text + b',"Nodes":null,"NodeNames":["gpu-node-a","' + seq + b'"]}')
        hostile(f"invalid UTF-8 #{i} in the pod name",
                b'{"Pod":{"metadata":{"name":"' + seq + b'","namespace":"d","uid":"u"}},'
                b'"NodeNames":["gpu-node-a","cpu-node-d"]}')
        hostile(f"invalid UTF-8 #{i} in a resource name",
                b'{"Pod":{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu' +
                seq + b'":"1","nvidia.com/gpu":"' + seq + b'"}}}]}},"NodeNames":["gpu-node-a"]}')
        hostile(f"invalid UTF-8 #{i} in a Nodes item",
                b'{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"n' + seq + b'","labels":{"' + seq +
                b'":"' + seq + b'"}}}]}}')
        hostile(f"invalid UTF-8 #{i} in bind",
                b'{"PodName":"' + seq + b'","PodNamespace":"d","PodUID":"' + seq +
                b'","Node":"gpu-node-a"}', path=BIND)
        hostile(f"invalid UTF-8 #{i} as a key", b'{"' + seq + b'":1,"Pod":{},"NodeNames":[]}')

    phase("invalid UTF-8")

    # -- duplicate keys: the last one wins
    dup = (b'{"Pod":{"metadata":{"name":"first"}},"NodeNames":["gpu-node-a"],"Pod":' + pod_text +
           b',"Nodes":null,"NodeNames":["gpu-node-b","cpu-node-d"]}')
    st, data = hostile("duplicate top-level keys", dup, allowed=(200,))
    if st == 200:
        res = json.loads(data)
        seen = set(res.get("NodeNames") or []) | set(res.get("FailedNodes") or {}) | \
            set(res.get("FailedAndUnresolvableNodes") or {})
        c.eq(seen, {"gpu-node-b", "cpu-node-d"}, "duplicate NodeNames: the last list wins")
    p = copy.deepcopy(POD)
    lim = json.dumps({"nvidia.com/gpu": "1"})[:-1] + ', "nvidia.com/gpu": "64"}'
    body = json.dumps(names_args(p)).replace(
        json.dumps(p["spec"]["containers"][0]["resources"]["limits"]), lim)
    hostile("duplicate resource keys", body)
    hostile("duplicate bind keys",
            b'{"PodName":"a","PodName":"b","PodNamespace":"d","PodUID":"never","Node":"x","Node":"y"}',
            path=BIND)

    phase("duplicate keys")

    # -- a 900 KB string value (under the cap): accepted or rejected, never 5xx
    big = "g" * (900 * 1024)
    p = copy.deepcopy(POD)
    p["metadata"]["annotations"] = {"note": big}
    hostile("900 KB annotation value", json.dumps(names_args(p)))
    hostile("900 KB node name", json.dumps(names_args(POD, ["gpu-node-a", big])))
    p = copy.deepcopy(POD)
    p["metadata"]["name"] = big
    hostile("900 KB pod name", json.dumps(names_args(p)))
    hostile("900 KB bind field", json.dumps({"PodName": big, "PodNamespace": "d", "PodUID": "u",
                                              "Node": "gpu-node-a"}), path=BIND)
    valid_call("after big strings")

    phase("900 KB strings")

    # -- numbers out of range, as quantities and as JSON numbers in odd places
    for q in ("1e400", "-1e400", "99999999999999999999", "-1", "1e18", "9223372036854775807",
              "9223372036854775808", "0.0000000001", "1Ei", "18446744073709551616Ki", "NaN", "Inf"):
        p = copy.deepcopy(POD)
        res = p["spec"]["containers"][0]["resources"]
        res["limits"] = {"nvidia.com/gpu": q}
        res["requests"] = {"nvidia.com/gpu": q}
        hostile(f"quantity {q}", json.dumps(names_args(p)))
        p["metadata"]["annotations"] = {"gpu-extender.io/time-slices": q,
                                        "gpu-extender.io/gpu-memory": q,
                                        "gpu-extender.io/gpu-util": q}
        res["limits"] = res["requests"] = {}
        hostile(f"annotations {q}", json.dumps(names_args(p)))
    for num in (b"1e400", b"-1e400", b"99999999999999999999", b"-0", b"1e-400"):
        pod_num = pod_text.replace(b'"nvidia.com/gpu": "1"', b'"nvidia.com/gpu": ' + num)
        hostile(f"number {num.decode()} as a quantity", b'{"Pod":' + pod_num + b',"NodeNames":["gpu-node-a"]}')
        hostile(f"number {num.decode()} as the Pod", b'{"Pod":' + num + b',"NodeNames":["a"]}')
        hostile(f"number {num.decode()} as a node name",
                b'{"Pod":' + pod_text + b',"NodeNames":["gpu-node-a",' + num + b"]}")
        hostile(f"number {num.decode()} as NodeNames", b'{"Pod":' + pod_text + b',"NodeNames":' + num + b"}")
        hostile(f"number {num.decode()} as the pod name",
                b'{"Pod":{"metadata":{"name":' + num + b'}},"NodeNames":["a"]}')
        hostile(f"number {num.decode()} as a label value",
                b'{"Pod":{"metadata":{"labels":{"a":' + num + b'}}},"NodeNames":["a"]}')
        hostile(f"number {num.decode()} as an unknown key", b'{"x":' + num + b',"Pod":{},"NodeNames":[]}')
        hostile(f"number {num.decode()} in bind",
                b'{"PodName":' + num + b',"PodNamespace":"d","PodUID":"u","Node":"n"}', path=BIND)
        hostile(f"number {num.decode()} as the body", num)

    phase("numbers")

    # -- wrong types everywhere in the Pod
    def paths(node, path=()):
        yield path
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from paths(v, path + (i,))

    def replaced(root, path, value):
        root = copy.deepcopy(root)
        if not path:
            return value
        node = root
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        return root

    wrong = [[], {}, 7, "s", None, True, [{}], {"a": []}]
    conn = Conn()
    n_wrong = 0
    for path in paths(POD):
        orig = POD
        for k in path:
            orig = orig[k]
        for w in wrong:
            if type(w) is type(orig) and not isinstance(orig, (dict, list)):
                continue
            body = json.dumps(names_args(replaced(POD, path, w))).encode()
            try:
                st, _, data = post_raw(FILTER, body, conn=conn)
            except (OSError, ConnectionError):
                conn.close()
                conn = Conn()
                st, _, data = post_raw(FILTER, body, conn=conn)
            n_wrong += 1
            if not (st in (200, 400) and is_json(data)):
                c.ok(False, f"wrong type {w!r} at Pod.{'.'.join(map(str, path))}: {st} {data[:120]!r}")
    conn.close()
    c.ok(n_wrong > 100, f"wrong-type variants sent ({n_wrong})")
    for what, body in (("Nodes as an array", {"Pod": POD, "Nodes": [], "NodeNames": None}),
                       ("Nodes.items as an object", {"Pod": POD, "Nodes": {"items": {}}}),
                       ("an item as an array", {"Pod": POD, "Nodes": {"items": [[]]}}),
                       ("item metadata as a string", {"Pod": POD, "Nodes": {"items": [{"metadata": "x"}]}}),
                       ("NodeNames of objects", {"Pod": POD, "NodeNames": [{}]}),
                       ("the body as a string", "x"),
                       ("the body as null", None)):
        hostile(what, json.dumps(body))
        hostile(what + " (prioritize)", json.dumps(body), path=PRIORITIZE)
    for what, body in (("bind as an array", []), ("bind fields as objects",
                       {"PodName": {}, "PodNamespace": [], "PodUID": 1, "Node": True})):
        hostile(what, json.dumps(body), path=BIND)
    valid_call("after wrong types")

    phase("wrong types")

    # -- header abuse: very long header line, many headers, a long URL
    MHD_OWN_STATUSES = {400, 413, 414, 431, 505}
    header_answers = []
    for what, req in (
            ("64 KB header line", b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Long: " +
             b"a" * 65536 + b"\r\nContent-Length: 2\r\n\r\n{}"),
            ("1 MB header line", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * (1 << 20) +
             b"\r\n\r\n"),
            ("5000 headers", b"GET /healthz HTTP/1.1\r\nHost: x\r\n" +
             b"".join(b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n"),
            ("100 headers", b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n" +
             b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(100)) +
             b"Content-Length: " + str(len(ARGS_BYTES)).encode() + b"\r\n\r\n" + ARGS_BYTES),
            ("64 KB URL", b"GET /" + b"a" * 65536 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
            ("header without colon", b"GET /healthz HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n"),
            ("NUL in a header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n"),
            ("bogus method", b"BREW " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
            ("bad version", b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n"),  # 505 from MHD
            ("negative Content-Length", b"POST " + FILTER.encode() +
             b" HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
            ("huge Content-Length", b"POST " + FILTER.encode() +
             b" HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
            ("Content-Length and chunked", b"POST " + FILTER.encode() +
             b" HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
             b"2\r\n{}\r\n0\r\n\r\n"),
            ("bad chunk size", b"POST " + FILTER.encode() +
             b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
            ("huge chunk size", b"POST " + FILTER.encode() +
             b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n")):
        conn = Conn(timeout=TIMEOUT_S + 5)
        try:
            conn.send(req)
            st, hd, data = conn.response()
            # 505 HTTP Version Not Supported is the protocol's own answer to HTTP/9.9.
            c.ok(st < 500 or (st == 505 and what == "bad version"), f"{what}: status {st}")
            # Every answer the extender makes is JSON; libmicrohttpd 0.9.75 answers what it
            # rejects before any callback (malformed request line or headers, oversized
            # URL or headers, bad chunking, unknown version) with its own HTML page and
            # offers no hook to replace it: docs/operations.md lists these.
            if is_json(data):
                c.ok(hd.get("content-type", "").startswith("application/json"),
                     f"{what}: JSON answer with content type {hd.get('content-type')}")
            else:
                c.ok(st in MHD_OWN_STATUSES and "text/html" in hd.get("content-type", "text/html"),
                     f"{what}: non-JSON answer {st} {hd.get('content-type')} is not one of "
                     f"libmicrohttpd's own {sorted(MHD_OWN_STATUSES)}")
            header_answers.append(f"{what}={st}{'' if is_json(data) else '(mhd)'}")
        except (OSError, ConnectionError):
            c.ok(True, f"{what}: connection closed")  # refusing to talk is fine
            header_answers.append(f"{what}=closed")
        conn.close()
    valid_call("after header abuse")
    print("abuse: header abuse answers: " + ", ".join(header_answers), flush=True)

    phase("headers")

    # -- pipelined requests on one connection: answered in order
    conn = Conn()
    reqs = []
    want = []
    for i in range(10):
        if i % 4 == 1:
            reqs.append(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            want.append(200)
        elif i % 4 == 3:
            reqs.append(b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Length: 8\r\n\r\n{\"Pod\": ")
            want.append(400)
        else:
            reqs.append(b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Length: " + str(len(ARGS_BYTES)).encode() + b"\r\n\r\n" + ARGS_BYTES)
            want.append(200)
    conn.send(b"".join(reqs))
    got = []
    try:
        for _ in reqs:
            st, _, data = conn.response()
            got.append(st)
            c.ok(is_json(data), "pipelined answer is JSON")
    except (OSError, ConnectionError) as e:
        got.append(repr(e))
    conn.close()
    c.eq(got, want, "pipelined requests answered in order")

    phase("pipelining")

    # -- still up, memory bounded and back near the baseline
    c.ok(valid_call("at the end"), "valid call at the end")
    c.ok(ext.proc.poll() is None, "extender still running")
    watch.stop_flag.set()
    watch.join()
    c.ok(watch.peak < RSS_CAP_MB, f"peak RSS {watch.peak:.1f} MB under {RSS_CAP_MB} MB")
    deadline = time.time() + 5
    after = rss_mb()
    while after > baseline + RSS_SLACK_MB and time.time() < deadline:
        time.sleep(0.25)
        after = rss_mb()
    c.ok(after <= baseline + RSS_SLACK_MB,
         f"RSS after the abuse {after:.1f} MB within {RSS_SLACK_MB} MB of the baseline {baseline:.1f} MB")
    c.eq(valid_bad, [], "every valid call answered 200")
    c.ok(valid_ok > 20, f"valid calls answered ({valid_ok})")
    print(f"abuse: rss baseline {baseline:.1f} MB, peak {watch.peak:.1f} MB, end {after:.1f} MB; "
          f"{valid_ok} valid calls; {time.time() - t_start:.1f}s")
    print("abuse: RSS MB after each phase: " + ", ".join(phases))
    rc = ext.stop()
    c.eq(rc, 0, "exit status after SIGTERM (no sanitizer report)")
    c.ok(time.time() - t_start < 60, f"first part under 60 s ({time.time() - t_start:.1f}s)")
finally:
    watch.stop_flag.set()
    if c.failed:
        print(ext.logs())
    ext.cleanup()


# ---- second extender: shipped defaults for the body cap, the memory budget and the idle
# timeout (64 MiB, 160 MiB, 30 s), so the shapes of issue 11 meet the limits as deployed.

BUDGET_MB = 160
# RSS ceiling while the budget is under attack: the baseline plus the budget, plus what
# AddressSanitizer adds to every heap byte (shadow 1/8, redzones) and its 16 MB quarantine.
with open(sys.argv[1], "rb") as _f:
    ASAN_BUILD = b"AddressSanitizer" in _f.read()
RSS_FACTOR = 1.25 if ASAN_BUILD else 1.0
FLOOD = 3000
PROBE_LIMIT_MS = 100.0


def proc_rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def metric(ext2, name):
    try:
        st, body, _ = ext2.request("GET", "/metrics", timeout=5)
    except OSError:
        return None
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def raw(port, data, timeout=5):
    """Send @data on a fresh connection; (status, headers, body) of the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            hdrs[k.strip().lower().decode()] = v.strip().decode()
        n = int(hdrs.get("content-length", "0"))
        while len(rest) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return int(lines[0].split()[1]), hdrs, rest[:n]
    finally:
        s.close()


ext2 = Extender(sys.argv[1]).start()
port2 = ext2.port
FILTER_REQ = (b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Connection: close\r\nContent-Length: " + str(len(ARGS_BYTES)).encode() + b"\r\n\r\n" +
              ARGS_BYTES)
HEALTHZ_REQ = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
try:
    for _ in range(20):
        raw(port2, FILTER_REQ)
    base2 = proc_rss_mb(ext2.proc.pid)

    # -- 1. 3,000 connections that send half a request and close, opened in ~0.2 s by 3
    # processes, while /healthz and filter are probed every 20 ms on fresh connections.
    def flood_part(n):
        # In a cluster the attacker does not share the extender's CPU; here it does, so it
        # runs at the lowest priority and the measured latency is the server's own.
        os.nice(19)
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", port2), timeout=5)
                s.sendall(b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Length: 100000\r\n\r\n{\"Pod\":")
                s.close()
            except OSError:
                pass

    probes = []
    stop_probe = threading.Event()

    def probe():
        while not stop_probe.is_set():
            for what, req in (("healthz", HEALTHZ_REQ), ("filter", FILTER_REQ)):
                t = time.time()
                try:
                    st, _, _ = raw(port2, req, timeout=5)
                except (OSError, ConnectionError) as e:
                    st = repr(e)
                probes.append((what, st, (time.time() - t) * 1000.0))
            time.sleep(0.02)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    time.sleep(0.1)
    t0 = time.time()
    # processes, not threads: the prober must not wait for the flooders' GIL
    flooders = [multiprocessing.Process(target=flood_part, args=(FLOOD // 3,)) for _ in range(3)]
    for t in flooders:
        t.start()
    for t in flooders:
        t.join()
    flood_s = time.time() - t0
    time.sleep(1.0)
    stop_probe.set()
    prober.join()
    bad = [p for p in probes if p[1] != 200]
    worst = max(p[2] for p in probes)
    c.eq(bad, [], f"every probe answered 200 during the {FLOOD}-connection flood")
    c.ok(worst < PROBE_LIMIT_MS, f"slowest /healthz or filter during the flood {worst:.1f} ms "
                                 f"(< {PROBE_LIMIT_MS:.0f} ms; {len(probes)} probes, flood {flood_s:.2f} s)")
    open_after = metric(ext2, "gpu_extender_http_connections")
    c.ok(open_after is not None and open_after <= 2,
         f"abandoned connections reclaimed within 1 s: {open_after} still open")
    closed = metric(ext2, "gpu_extender_http_connections_peer_closed_total") or 0
    # (MHD closes by itself those whose FIN it read with the data; the rest are ours)
    c.ok(closed > 0, f"peer-closed connections shut down by the extender ({closed:.0f})")
    print(f"abuse: flood of {FLOOD} in {flood_s:.2f} s, slowest probe {worst:.1f} ms, "
          f"{open_after} connections left", flush=True)
    # every abandoned connection is a warn line from libmicrohttpd: the log stays bounded
    # (10 lines per message per 10 s) and /metrics keeps the count
    time.sleep(1.2)  # the once-a-second tick writes the count of a finished window
    with open(ext2.log_path, "rb") as f:
        log2 = f.read().decode(errors="replace")
    mhd_lines = log2.count('msg="http server error"')
    c.ok(mhd_lines <= 30, f"log lines about the {FLOOD} abandoned connections: {mhd_lines} (<= 30)")
    suppressed = metric(ext2, "gpu_extender_log_lines_suppressed_total") or 0
    c.ok(suppressed >= FLOOD / 2, f"suppressed log lines counted in /metrics ({suppressed:.0f})")
    print(f"abuse: {mhd_lines} log lines for the flood, {suppressed:.0f} suppressed", flush=True)

    # -- 2. the memory budget under a mix of clients, with the RSS sampled every 20 ms
    peak2 = [0.0]
    stop_rss = threading.Event()

    def rss_loop():
        while not stop_rss.is_set():
            peak2[0] = max(peak2[0], proc_rss_mb(ext2.proc.pid))
            time.sleep(0.02)

    rss_thread = threading.Thread(target=rss_loop, daemon=True)
    rss_thread.start()
    MB = 1 << 20

    # five connections each sending 60 MiB of a declared 64 MiB body, then holding it
    holders = []
    hold_answers = []
    for i in range(5):
        s = socket.create_connection(("127.0.0.1", port2), timeout=10)
        s.sendall(b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                  str(64 * MB).encode() + b"\r\n\r\n")
        holders.append(s)
    chunk = b"[" * MB
    for s in holders:
        s.settimeout(0.5)
        try:
            for _ in range(60):
                s.sendall(chunk)
        except (OSError, ConnectionError):
            pass  # refused before the body: the 503 is waiting in the receive buffer
    for s in holders:
        s.settimeout(2)
        try:
            data = s.recv(65536)
        except socket.timeout:
            data = b""  # still being held (the one the budget admitted)
        except OSError:
            data = b""
        hold_answers.append(data)
    refused = [d for d in hold_answers if d.startswith(b"HTTP/1.1 503")]
    c.eq(len(refused), 4, "of five 64 MiB bodies held at once, the budget admits one")
    c.ok(all(b"Retry-After: 1" in d and b'"status":503' in d for d in refused),
         "budget refusals carry Retry-After and a JSON body")
    held = metric(ext2, "gpu_extender_inflight_bytes")
    c.ok(held is not None and held <= BUDGET_MB * MB, f"in-flight bytes {held} within the budget")
    c.ok(held is not None and held >= 128 * MB, f"the admitted body is charged (2 x 64 MiB): {held}")
    # while the largest body holds its share, kube-scheduler's small calls still pass
    st, _, body = raw(port2, FILTER_REQ)
    c.eq(st, 200, "a small filter call while a 64 MiB body holds the large share of the budget")

    # 4.5 M node names (~60 MiB, under the body cap) and a Pod with 100,000 containers
    for s in holders:
        s.close()
    time.sleep(0.3)
    names = b'{"Pod":' + json.dumps(POD).encode() + b',"NodeNames":[' + \
        b",".join(b'"n%07d"' % i for i in range(4500000)) + b"]}"
    st, _, body = raw(port2, b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                      str(len(names)).encode() + b"\r\n\r\n" + names, timeout=60)
    c.ok(st == 400 and b"more than 100000 names" in body,
         f"{len(names) // MB} MiB of node names: {st} {body[:100]!r}")
    del names
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"] = [{"name": f"c{i}"} for i in range(100000)]
    big_pod = json.dumps(names_args(pod)).encode()
    st, _, body = raw(port2, b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                      str(len(big_pod)).encode() + b"\r\n\r\n" + big_pod, timeout=60)
    c.ok(st == 400 and b"Pod" in body, f"a Pod with 100,000 containers: {st} {body[:100]!r}")

    # everything at once: big bodies from four threads while valid calls keep coming
    mix_bad = []

    def big_sender(i):
        body = b'{"Pod":{},"NodeNames":[' + b",".join(b'"x%07d"' % j for j in range(2500000)) + b"]}"
        for _ in range(2):
            try:
                st, hd, _ = raw(port2, b"POST " + FILTER.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body,
                                timeout=60)
                if st not in (400, 503):
                    mix_bad.append(f"big body {i}: {st}")
            except (OSError, ConnectionError) as e:
                mix_bad.append(f"big body {i}: {e!r}")

    senders = [threading.Thread(target=big_sender, args=(i,)) for i in range(4)]
    for t in senders:
        t.start()
    small_ok = 0
    while any(t.is_alive() for t in senders):
        st, _, _ = raw(port2, FILTER_REQ, timeout=10)
        if st == 200:
            small_ok += 1
        else:
            mix_bad.append(f"small filter during the mix: {st}")
        time.sleep(0.02)
    for t in senders:
        t.join()
    c.eq(mix_bad, [], "mixed clients: big bodies 400/503, small calls 200")
    c.ok(small_ok > 5, f"small calls answered during the mix ({small_ok})")
    stop_rss.set()
    rss_thread.join()
    ceiling = base2 + BUDGET_MB * RSS_FACTOR + 40
    c.ok(peak2[0] <= ceiling,
         f"peak RSS {peak2[0]:.0f} MB within baseline {base2:.0f} + budget {BUDGET_MB} MB x "
         f"{RSS_FACTOR} + 40 = {ceiling:.0f} MB")
    peak_charge = metric(ext2, "gpu_extender_inflight_bytes_peak")
    c.ok(peak_charge is not None and peak_charge <= BUDGET_MB * MB,
         f"the most ever charged ({peak_charge}) stayed within the budget")
    print(f"abuse: budget phase rss baseline {base2:.0f} MB, peak {peak2[0]:.0f} MB "
          f"(ceiling {ceiling:.0f}); peak charge {peak_charge / MB if peak_charge else 0:.0f} MiB; "
          f"{small_ok} small calls during the mix", flush=True)
    c.eq(ext2.stop(), 0, "second extender: exit status after SIGTERM (no sanitizer report)")
finally:
    if c.failed:
        print(ext2.logs())
    ext2.cleanup()
c.done()
