#!/usr/bin/python3
"""Fake Kubernetes API server for gpu-extender integration tests.

Python 3.11 standard library only. Speaks the JSON shapes of the real API server for the few
resources the extender uses: core/v1 Nodes and Pods (list, watch, get, patch, binding) and
coordination.k8s.io/v1 Leases (list, watch, get, create, update with resourceVersion CAS, delete).

    fake_apiserver.py --port 0 --nodes tests/fixtures/nodelist.json [--pods FILE]
                      [--token TOKEN] [--tls-cert F --tls-key F] [--port-file PATH]
                      [--gen-nodes N --gen-pods M] [--history N] [--bookmark-interval S]

Semantics worth knowing:
* One global resourceVersion counter; every write bumps it and appends one event to a bounded
  history (default 10,000 events). A watch from a resourceVersion older than the history gets an
  ERROR event carrying a 410 Expired Status and the stream ends, as the real server does.
* List items carry no kind/apiVersion (empty TypeMeta); single GETs and watch event objects do.
* Watches without resourceVersion (or "0") start with synthetic ADDED events for the current state.
  With a label/field selector, an object that starts matching arrives as ADDED and one that stops
  matching as DELETED.
* sendInitialEvents=true with allowWatchBookmarks=true ends the initial ADDED events with a BOOKMARK
  annotated "k8s.io/initial-events-end": "true" (the streaming-list protocol).
* Lists honour limit/continue (continue tokens expire on compaction with 410, like etcd).
* Error-code faults (gone, 500, any numeric code) reject the request before it is processed; drop,
  truncate, garbage and slow process the request and then damage or delay the response, which models
  "the write happened but the reply was lost".

Control API (never needs auth), all JSON:
  POST   /control/nodes            Node or NodeList body: add or replace (ADDED/MODIFIED)
  DELETE /control/nodes/{name}
  POST   /control/pods             Pod or PodList body
  DELETE /control/pods/{ns}/{name}
  POST   /control/leases           Lease or LeaseList body
  DELETE /control/leases/{ns}/{name}
  POST   /control/resourceslices   ResourceSlice(List) body (served under /apis with --dra only)
  DELETE /control/resourceslices/{name}
  POST   /control/resourceclaims   ResourceClaim(List) body, status included
  DELETE /control/resourceclaims/{ns}/{name}
  POST   /control/fault            {"kind": "gone|drop|slow|500|garbage|truncate|<http code>",
                                    "path_prefix": "/api/v1/nodes", "count": 1, "delay_s": 2,
                                    "watch": true|false (optional: only watches / only non-watches),
                                    "method": "GET" (optional),
                                    "hold_s": 0.5 (drop/truncate/garbage: wait before answering)}
  DELETE /control/fault            clear pending faults
  POST   /control/compact          forget the event history
  POST   /control/history          {"limit": N} retained event count (applies immediately)
  POST   /control/token            {"tokens": ["a", "b"]} or {"token": "a"} ([] disables auth)
  POST   /control/reset            clear recorded bindings, patches and request counters
  GET    /control/state            {"bindings", "patches", "pods", "leases", "nodes", "requests",
                                    "watch_connections", "active_watches", "resourceVersion",
                                    "compacted_resource_version", "faults", "request_log"}
                                   (?objects=0 leaves out the pod and lease objects)
"""

import argparse
import base64
import bisect
import collections
import gc
import json
import os
import re
import select
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

MAX_BODY = 64 * 1024 * 1024
DEFAULT_HISTORY = 10000
WATCH_BATCH_BYTES = 256 * 1024
SLOW_SPLIT_EVENTS = 3
SLOW_SPLIT_PIECES = 3

_ENC = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(obj):
    """Compact UTF-8 JSON bytes of obj."""
    return _ENC.encode(obj).encode("utf-8")


def now_ts():
    """RFC 3339 UTC timestamp with second precision, as metadata.creationTimestamp uses."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Resource:
    """Static description of one served resource type."""

    def __init__(self, plural, kind, api_version, namespaced, group):
        self.plural = plural
        self.kind = kind
        self.list_kind = kind + "List"
        self.api_version = api_version
        self.namespaced = namespaced
        self.group = group
        self.qualified = plural + ("." + group if group else "")
        self.prefix = b'{"kind":"' + kind.encode() + b'","apiVersion":"' + api_version.encode() + b'"'

    def with_kind(self, raw):
        """Serialized object with kind/apiVersion put in front of the stored (TypeMeta-less) bytes."""
        if raw == b"{}":
            return self.prefix + b"}"
        return self.prefix + b"," + raw[1:]


NODES = Resource("nodes", "Node", "v1", False, "")
PODS = Resource("pods", "Pod", "v1", True, "")
LEASES = Resource("leases", "Lease", "coordination.k8s.io/v1", True, "coordination.k8s.io")
RESOURCES = {r.plural: r for r in (NODES, PODS, LEASES)}
# DRA (resource.k8s.io/v1), served only with --dra: without it this is a server that predates
# DRA and answers 404, as older clusters do. Control endpoints /control/resourceslices and
# /control/resourceclaims (claims: {ns}/{name}) work either way.
RESOURCESLICES = Resource("resourceslices", "ResourceSlice", "resource.k8s.io/v1", False, "resource.k8s.io")
RESOURCECLAIMS = Resource("resourceclaims", "ResourceClaim", "resource.k8s.io/v1", True, "resource.k8s.io")
DRA_RESOURCES = (RESOURCESLICES, RESOURCECLAIMS)
RESOURCES.update({r.plural: r for r in DRA_RESOURCES})

FIELD_LABELS = {
    "nodes": {"metadata.name", "spec.unschedulable"},
    "pods": {
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.schedulerName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    },
    "leases": {"metadata.name", "metadata.namespace"},
    "resourceslices": {"metadata.name", "spec.driver", "spec.nodeName", "spec.pool.name"},
    "resourceclaims": {"metadata.name", "metadata.namespace"},
}

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_obj(code, message, reason=None, details=None):
    """A metav1.Status failure object as the API server returns it."""
    st = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason if reason is not None else REASONS.get(code, ""),
    }
    if details is not None:
        st["details"] = details
    st["code"] = code
    return st


class ApiError(Exception):
    """An error that becomes a Status response."""

    def __init__(self, code, message, reason=None, details=None):
        super().__init__(message)
        self.code = code
        self.status = status_obj(code, message, reason, details)


def details_for(res, name):
    """Status details naming one object of a resource."""
    d = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    return d


def not_found(res, name):
    return ApiError(404, '%s "%s" not found' % (res.qualified, name), "NotFound", details_for(res, name))


def conflict_modified(res, name):
    return ApiError(
        409,
        'Operation cannot be fulfilled on %s "%s": the object has been modified; please apply your '
        "changes to the latest version and try again" % (res.qualified, name),
        "Conflict",
        details_for(res, name),
    )


def too_old(requested, oldest):
    return status_obj(410, "too old resource version: %d (%d)" % (requested, oldest), "Expired")


# ----------------------------------------------------------------------------------------------
# selectors


def _split_top(s):
    """Split a selector on commas outside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip() != ""]


_SET_RE = re.compile(r"^([^\s!=()]+)\s+(in|notin)\s+\(([^()]*)\)$")
_KEY_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$")


def parse_label_selector(s):
    """Label selector string -> list of (key, op, values); ApiError 400 on syntax errors."""
    reqs = []
    if not s:
        return reqs
    for term in _split_top(s):
        m = _SET_RE.match(term)
        if m:
            vals = {v.strip() for v in m.group(3).split(",") if v.strip() != ""}
            reqs.append((m.group(1), m.group(2), vals))
            continue
        if term.startswith("!"):
            key, op, val = term[1:].strip(), "!exists", None
        elif "!=" in term:
            key, val = term.split("!=", 1)
            op = "!="
        elif "==" in term:
            key, val = term.split("==", 1)
            op = "="
        elif "=" in term:
            key, val = term.split("=", 1)
            op = "="
        else:
            key, op, val = term, "exists", None
        key = key.strip()
        if val is not None:
            val = val.strip()
        if not _KEY_RE.match(key) or (val is not None and ("=" in val or " " in val)):
            raise ApiError(400, "unable to parse requirement: invalid label selector term %r" % term)
        reqs.append((key, op, val))
    return reqs


def parse_field_selector(s, res):
    """Field selector -> list of (path list, op, value); 400 for unsupported field labels."""
    reqs = []
    if not s:
        return reqs
    for term in _split_top(s):
        if "!=" in term:
            key, val = term.split("!=", 1)
            op = "!="
        elif "==" in term:
            key, val = term.split("==", 1)
            op = "="
        elif "=" in term:
            key, val = term.split("=", 1)
            op = "="
        else:
            raise ApiError(400, "invalid selector: '%s'; can't understand '%s'" % (s, term))
        key = key.strip()
        if key not in FIELD_LABELS[res.plural]:
            raise ApiError(400, 'field label not supported: %s' % key)
        reqs.append((key.split("."), op, val.strip()))
    return reqs


def _field_value(obj, path):
    cur = obj
    for p in path:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


class Filter:
    """Namespace + label selector + field selector applied to stored objects."""

    def __init__(self, res, ns, label_sel, field_sel):
        self.res = res
        self.ns = ns
        self.lreqs = parse_label_selector(label_sel)
        self.freqs = parse_field_selector(field_sel, res)
        self.trivial = ns is None and not self.lreqs and not self.freqs

    def match(self, obj):
        if self.trivial:
            return True
        md = obj.get("metadata") or {}
        if self.ns is not None and md.get("namespace") != self.ns:
            return False
        if self.lreqs:
            labels = md.get("labels") or {}
            for key, op, val in self.lreqs:
                have = key in labels
                if op == "=":
                    if not have or labels[key] != val:
                        return False
                elif op == "!=":
                    if have and labels[key] == val:
                        return False
                elif op == "exists":
                    if not have:
                        return False
                elif op == "!exists":
                    if have:
                        return False
                elif op == "in":
                    if not have or labels[key] not in val:
                        return False
                elif op == "notin":
                    if have and labels[key] in val:
                        return False
        for path, op, val in self.freqs:
            got = _field_value(obj, path)
            if (got == val) != (op == "="):
                return False
        return True


# ----------------------------------------------------------------------------------------------
# patches


def merge_patch(target, patch, strategic=False):
    """RFC 7386 JSON merge patch; returns a new value and never mutates target or patch.

    With strategic=True, strategic-merge directive keys ("$patch", "$setElementOrder/...", ...) are
    dropped and the rest is merged the same way (enough for metadata maps)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if strategic and k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v, strategic)
    return out


# ----------------------------------------------------------------------------------------------
# store


class Entry:
    """One stored object: its dict (never mutated after storing) and its TypeMeta-less bytes."""

    __slots__ = ("obj", "raw", "rv")

    def __init__(self, obj, raw, rv):
        self.obj = obj
        self.raw = raw
        self.rv = rv


class Event:
    __slots__ = ("rv", "res", "type", "entry", "prev", "line")

    def __init__(self, rv, res, typ, entry, prev):
        self.rv = rv
        self.res = res
        self.type = typ
        self.entry = entry
        self.prev = prev
        self.line = event_line(typ, res.with_kind(entry.raw))


def event_line(typ, full):
    return b'{"type":"' + typ.encode() + b'","object":' + full + b"}\n"


def obj_key(res, obj):
    md = obj.get("metadata") or {}
    if res.namespaced:
        return "%s/%s" % (md.get("namespace", ""), md.get("name", ""))
    return md.get("name", "")


class Fault:
    def __init__(self, spec):
        kind = str(spec.get("kind", ""))
        if kind not in ("gone", "drop", "slow", "garbage", "truncate") and not (
            kind.isdigit() and 400 <= int(kind) <= 599
        ):
            raise ApiError(400, "unknown fault kind %r" % kind)
        self.kind = kind
        self.path_prefix = str(spec.get("path_prefix", ""))
        self.count = int(spec.get("count", 1))
        self.delay_s = float(spec.get("delay_s", 2.0))
        self.watch = spec.get("watch")
        self.method = spec.get("method")
        self.rst = bool(spec.get("rst", False))
        self.hold_s = float(spec.get("hold_s", 0))

    def matches(self, method, path, is_watch):
        if self.count <= 0 or not path.startswith(self.path_prefix):
            return False
        if self.watch is not None and bool(self.watch) != is_watch:
            return False
        if self.method and self.method.upper() != method:
            return False
        return True

    def describe(self):
        return {
            "kind": self.kind,
            "path_prefix": self.path_prefix,
            "count": self.count,
            "delay_s": self.delay_s,
            "watch": self.watch,
            "method": self.method,
            "hold_s": self.hold_s,
        }


class Store:
    """All server state, guarded by one lock; watchers wait on cond for new events."""

    def __init__(self, history_limit, tokens):
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.rv = 0
        self.objs = {r.plural: {} for r in RESOURCES.values()}
        self.sorted_keys = {r.plural: None for r in RESOURCES.values()}
        self.events = []
        self.ev_rvs = []
        self.compacted_rv = 0
        self.history_limit = history_limit
        self.tokens = list(tokens)
        self.bindings = []
        self.patches = []
        self.requests = 0
        self.watch_total = 0
        self.watch_active = 0
        self.faults = []
        self.request_log = collections.deque(maxlen=2000)
        self.closing = False

    # --- internal helpers (caller holds the lock) ---

    def _store(self, res, obj, typ):
        """Stamp obj with a new resourceVersion, store it and emit an event (or none if typ is None)."""
        obj = dict(obj)
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        md = dict(obj.get("metadata") or {})
        self.rv += 1
        md["resourceVersion"] = str(self.rv)
        obj["metadata"] = md
        key = obj_key(res, obj)
        table = self.objs[res.plural]
        prev = table.get(key)
        if prev is None:
            self.sorted_keys[res.plural] = None
        entry = Entry(obj, dumps(obj), self.rv)
        table[key] = entry
        if typ is not None:
            if typ == "AUTO":
                typ = "MODIFIED" if prev is not None else "ADDED"
            self._emit(res, typ, entry, prev)
        return entry

    def _remove(self, res, key):
        table = self.objs[res.plural]
        prev = table.pop(key, None)
        if prev is None:
            return None
        self.sorted_keys[res.plural] = None
        self.rv += 1
        obj = dict(prev.obj)
        md = dict(obj.get("metadata") or {})
        md["resourceVersion"] = str(self.rv)
        obj["metadata"] = md
        entry = Entry(obj, dumps(obj), self.rv)
        self._emit(res, "DELETED", entry, prev)
        return entry

    def _emit(self, res, typ, entry, prev):
        self.events.append(Event(self.rv, res, typ, entry, prev))
        self.ev_rvs.append(self.rv)
        self._trim()
        self.cond.notify_all()

    def _trim(self):
        extra = len(self.events) - self.history_limit
        if extra > 0:
            self.compacted_rv = max(self.compacted_rv, self.ev_rvs[extra - 1])
            del self.events[:extra]
            del self.ev_rvs[:extra]

    def _keys(self, res):
        keys = self.sorted_keys[res.plural]
        if keys is None:
            keys = sorted(self.objs[res.plural])
            self.sorted_keys[res.plural] = keys
        return keys

    def _prepare_new(self, res, obj):
        """Fill uid/creationTimestamp/namespace defaults of an object being added."""
        md = dict(obj.get("metadata") or {})
        if res.namespaced and not md.get("namespace"):
            md["namespace"] = "default"
        if not md.get("uid"):
            md["uid"] = str(uuid.uuid4())
        if not md.get("creationTimestamp"):
            md["creationTimestamp"] = now_ts()
        obj = dict(obj)
        obj["metadata"] = md
        return obj

    # --- public operations ---

    def load(self, res, items):
        """Initial objects (no events); the history starts after them."""
        with self.lock:
            for it in items:
                self._store(res, self._prepare_new(res, it), None)
            self.compacted_rv = self.rv

    def control_upsert(self, res, obj):
        with self.lock:
            if not isinstance(obj, dict) or not (obj.get("metadata") or {}).get("name"):
                raise ApiError(422, "%s without metadata.name" % res.kind)
            had_uid = bool(obj["metadata"].get("uid"))
            obj = self._prepare_new(res, obj)
            cur = self.objs[res.plural].get(obj_key(res, obj))
            if cur is not None and not had_uid:
                md = dict(obj["metadata"])
                md["uid"] = cur.obj["metadata"].get("uid")
                md["creationTimestamp"] = cur.obj["metadata"].get("creationTimestamp")
                obj["metadata"] = md
            return self._store(res, obj, "AUTO")

    def control_delete(self, res, key):
        with self.lock:
            if self._remove(res, key) is None:
                raise not_found(res, key.split("/")[-1])

    def take_fault(self, method, path, is_watch):
        with self.lock:
            for f in self.faults:
                if f.matches(method, path, is_watch):
                    f.count -= 1
                    if f.count <= 0:
                        self.faults.remove(f)
                    return f
        return None


# ----------------------------------------------------------------------------------------------
# HTTP


class Response:
    def __init__(self, code, body, ctype="application/json"):
        self.code = code
        self.body = body
        self.ctype = ctype


def json_response(code, obj):
    return Response(code, dumps(obj))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1.0"
    timeout = 120

    # --- plumbing ---

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake-apiserver: %s - %s\n" % (self.address_string(), fmt % args))

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            parts, total = [], 0
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > MAX_BODY:
                    raise ApiError(413, "request entity too large")
                parts.append(self.rfile.read(size))
                self.rfile.readline(8)
            return b"".join(parts)
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "request entity too large")
        return self.rfile.read(n) if n > 0 else b""

    def _send(self, resp):
        self.send_response(resp.code)
        self.send_header("Content-Type", resp.ctype)
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Length", str(len(resp.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(resp.body)

    def _send_faulty(self, resp, fault):
        """Send resp damaged according to a drop/truncate/garbage fault."""
        time.sleep(fault.hold_s)  # the write has landed: what a slow answer then lost looks like
        if fault.kind == "garbage":
            self._send(Response(200, b"<html><body>502 Bad Gateway</body></html>\n{not json at all", "application/json"))
        elif fault.kind == "truncate":
            half = resp.body[: len(resp.body) // 2]
            self.send_response(resp.code)
            self.send_header("Content-Type", resp.ctype)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if half:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(half), half))
            self.wfile.write(b"0\r\n\r\n")
        elif fault.kind == "drop":
            self.send_response(resp.code)
            self.send_header("Content-Type", resp.ctype)
            self.send_header("Content-Length", str(len(resp.body)))
            self.end_headers()
            self.wfile.write(resp.body[: len(resp.body) // 2])
            self._abort(fault.rst)
        else:
            self._send(resp)

    def _abort(self, rst=False):
        """Close the TCP connection without finishing the HTTP message."""
        self.close_connection = True
        sock = self.connection
        try:
            if rst:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            else:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.drop_socket(sock)

    def _authorized(self):
        tokens = self.server.store.tokens
        if not tokens:
            return True
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer "):
            return False
        return auth[7:].strip() in tokens

    def _dispatch(self, method):
        try:
            url = urlsplit(self.path)
            path = unquote(url.path)
            query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            if path.startswith("/control/"):
                resp = self._control(method, path, query)
                self._send(resp)
                return
            if path in ("/healthz", "/livez", "/readyz"):
                self._send(Response(200, b"ok", "text/plain; charset=utf-8"))
                return
            self._api(method, path, query)
        except ApiError as e:
            self._try_send(json_response(e.code, e.status))
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # keep serving whatever goes wrong in one request
            traceback.print_exc(file=sys.stderr)
            self._try_send(json_response(500, status_obj(500, "internal error: %s" % e)))

    def _try_send(self, resp):
        try:
            self._send(resp)
        except OSError:
            self.close_connection = True

    # --- the Kubernetes API ---

    def _api(self, method, path, query):
        st = self.server.store
        if not self._authorized():
            self.close_connection = False
            self._read_body_quietly()
            self._send(json_response(401, status_obj(401, "Unauthorized")))
            return
        is_watch = query.get("watch", "") in ("true", "1")
        with st.lock:
            st.requests += 1
            st.request_log.append({"method": method, "path": self.path, "time": time.time()})
        body = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        fault = st.take_fault(method, path, is_watch)
        if fault is not None:
            if fault.kind == "slow":
                time.sleep(fault.delay_s)
            elif fault.kind == "gone" and not is_watch:
                raise ApiError(410, "too old resource version: %s (%d)" % (query.get("resourceVersion") or "0",
                                                                         st.compacted_rv), "Expired")
            elif fault.kind.isdigit():
                code = int(fault.kind)
                raise ApiError(code, "injected fault: HTTP %d" % code)
        route, args = self._route(path)
        if route is None:
            raise ApiError(404, "the server could not find the requested resource", "NotFound", {})
        if is_watch and route in ("collection",) and method == "GET":
            self._watch(args[0], args[1], query, fault)
            return
        resp = self._handle(route, args, method, query, body)
        if fault is not None and fault.kind in ("drop", "truncate", "garbage"):
            self._send_faulty(resp, fault)
        else:
            self._send(resp)

    def _read_body_quietly(self):
        try:
            self._read_body()
        except ApiError:
            self.close_connection = True

    _ROUTES = [
        (re.compile(r"^/api/v1/nodes$"), "collection", lambda m: (NODES, None)),
        (re.compile(r"^/api/v1/nodes/([^/]+)$"), "item", lambda m: (NODES, None, m.group(1))),
        (re.compile(r"^/api/v1/pods$"), "collection", lambda m: (PODS, None)),
        (re.compile(r"^/api/v1/namespaces/([^/]+)/pods$"), "collection", lambda m: (PODS, m.group(1))),
        (re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$"), "item", lambda m: (PODS, m.group(1), m.group(2))),
        (re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$"), "binding", lambda m: (m.group(1), m.group(2))),
        (re.compile(r"^/apis/coordination\.k8s\.io/v1/leases$"), "collection", lambda m: (LEASES, None)),
        (re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases$"), "collection",
         lambda m: (LEASES, m.group(1))),
        (re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases/([^/]+)$"), "item",
         lambda m: (LEASES, m.group(1), m.group(2))),
        (re.compile(r"^/apis/resource\.k8s\.io/v1/resourceslices$"), "collection", lambda m: (RESOURCESLICES, None)),
        (re.compile(r"^/apis/resource\.k8s\.io/v1/resourceslices/([^/]+)$"), "item",
         lambda m: (RESOURCESLICES, None, m.group(1))),
        (re.compile(r"^/apis/resource\.k8s\.io/v1/resourceclaims$"), "collection", lambda m: (RESOURCECLAIMS, None)),
        (re.compile(r"^/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims$"), "collection",
         lambda m: (RESOURCECLAIMS, m.group(1))),
        (re.compile(r"^/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+)$"), "item",
         lambda m: (RESOURCECLAIMS, m.group(1), m.group(2))),
        (re.compile(r"^/api/?$"), "api", lambda m: ()),
        (re.compile(r"^/apis/?$"), "apis", lambda m: ()),
        (re.compile(r"^/version/?$"), "version", lambda m: ()),
    ]

    def _route(self, path):
        for rx, name, fn in self._ROUTES:
            m = rx.match(path)
            if m:
                if name in ("collection", "item") and fn(m)[0] in DRA_RESOURCES and not getattr(
                        self.server, "dra", False):
                    return None, None
                return name, fn(m)
        return None, None

    def _handle(self, route, args, method, query, body):
        if route == "collection":
            res, ns = args
            if method == "GET":
                return self._list(res, ns, query)
            if method == "POST" and ns is not None:
                return self._create(res, ns, body)
        elif route == "item":
            res = args[0]
            ns, name = (args[1], args[2])
            if method == "GET":
                return self._get(res, ns, name)
            if method == "PATCH":
                return self._patch(res, ns, name, body)
            if method == "PUT":
                return self._update(res, ns, name, body)
            if method == "DELETE" and res is not NODES:
                return self._delete(res, ns, name, body)
        elif route == "binding":
            if method == "POST":
                return self._binding(args[0], args[1], body)
        elif route == "api" and method == "GET":
            return json_response(200, {"kind": "APIVersions", "versions": ["v1"],
                                       "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                                       "serverAddress": "127.0.0.1:6443"}]})
        elif route == "apis" and method == "GET":
            gv = {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}
            return json_response(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": "coordination.k8s.io", "versions": [gv], "preferredVersion": gv}]})
        elif route == "version" and method == "GET":
            return json_response(200, {"major": "1", "minor": "35", "gitVersion": "v1.35.0-fake",
                                       "gitCommit": "0000000000000000000000000000000000000000",
                                       "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                                       "goVersion": "go1.25.0", "compiler": "gc", "platform": "linux/amd64"})
        raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    @staticmethod
    def _parse_json(body, what="body"):
        try:
            obj = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError) as e:
            raise ApiError(400, "couldn't decode %s: json parse error: %s" % (what, e))
        return obj

    def _list(self, res, ns, query):
        st = self.server.store
        flt = Filter(res, ns, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        limit = 0
        if query.get("limit"):
            try:
                limit = int(query["limit"])
            except ValueError:
                raise ApiError(400, "invalid limit %r" % query["limit"])
        cont = query.get("continue", "")
        with st.lock:
            keys = st._keys(res)
            list_rv = st.rv
            start = 0
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                    list_rv = int(tok["rv"])
                    start_key = str(tok["start"])
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, "continue key is not valid")
                if list_rv < st.compacted_rv:
                    raise ApiError(410, "The provided continue parameter is too old to display a consistent "
                                        "list result. You can start a new list without the continue "
                                        "parameter.", "Expired")
                start = bisect.bisect_left(keys, start_key)
            end = len(keys)
            if ns is not None and res.namespaced:
                start = max(start, bisect.bisect_left(keys, ns + "/"))
                end = bisect.bisect_left(keys, ns + "0")
            table = st.objs[res.plural]
            items = []
            next_key = None
            remaining = 0
            for i in range(start, end):
                e = table[keys[i]]
                if not flt.match(e.obj):
                    continue
                if limit > 0 and len(items) >= limit:
                    if next_key is None:
                        next_key = keys[i]
                    remaining += 1
                    continue
                items.append(e.raw)
        meta = {"resourceVersion": str(list_rv)}
        if next_key is not None:
            meta["continue"] = base64.urlsafe_b64encode(dumps({"rv": list_rv, "start": next_key})).decode()
            if not flt.lreqs and not flt.freqs:
                meta["remainingItemCount"] = remaining
        head = (b'{"kind":"' + res.list_kind.encode() + b'","apiVersion":"' + res.api_version.encode() +
                b'","metadata":' + dumps(meta) + b',"items":[')
        return Response(200, b"".join((head, b",".join(items), b"]}")))

    def _lookup(self, res, ns, name):
        key = "%s/%s" % (ns, name) if res.namespaced else name
        e = self.server.store.objs[res.plural].get(key)
        if e is None:
            raise not_found(res, name)
        return key, e

    def _get(self, res, ns, name):
        with self.server.store.lock:
            _, e = self._lookup(res, ns, name)
            return Response(200, res.with_kind(e.raw))

    def _check_body_kind(self, res, obj):
        if not isinstance(obj, dict):
            raise ApiError(400, "the body of the request was not a JSON object")
        if obj.get("kind") not in (None, "", res.kind):
            raise ApiError(400, "the kind in the data (%s) does not match the expected kind (%s)" % (obj.get("kind"), res.kind))
        if obj.get("apiVersion") not in (None, "", res.api_version):
            raise ApiError(400, "the API version in the data (%s) does not match the expected API version (%s)"
                           % (obj.get("apiVersion"), res.api_version))

    def _create(self, res, ns, body):
        st = self.server.store
        obj = self._parse_json(body)
        self._check_body_kind(res, obj)
        md = dict(obj.get("metadata") or {})
        if md.get("namespace") not in (None, "", ns):
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
        md["namespace"] = ns
        if not md.get("name"):
            if md.get("generateName"):
                md["name"] = md["generateName"] + uuid.uuid4().hex[:5]
            else:
                raise ApiError(422, '%s.%s "" is invalid: metadata.name: Required value: name or generateName is required'
                               % (res.kind, res.group or "core"), "Invalid", {"kind": res.kind})
        md.pop("resourceVersion", None)
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now_ts()
        obj = dict(obj)
        obj["metadata"] = md
        if res is PODS:
            status = dict(obj.get("status") or {})
            status.setdefault("phase", "Pending")
            obj["status"] = status
        with st.lock:
            key = "%s/%s" % (ns, md["name"])
            if key in st.objs[res.plural]:
                raise ApiError(409, '%s "%s" already exists' % (res.qualified, md["name"]), "AlreadyExists",
                               details_for(res, md["name"]))
            e = st._store(res, obj, "ADDED")
            return Response(201, res.with_kind(e.raw))

    def _update(self, res, ns, name, body):
        st = self.server.store
        obj = self._parse_json(body)
        self._check_body_kind(res, obj)
        md = dict(obj.get("metadata") or {})
        if md.get("name") and md["name"] != name:
            raise ApiError(400, "the name of the object (%s) does not match the name on the URL (%s)" % (md["name"], name))
        if res.namespaced and md.get("namespace") not in (None, "", ns):
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
        with st.lock:
            key, cur = self._lookup(res, ns, name)
            cmd = cur.obj["metadata"]
            if str(md.get("resourceVersion", "")) != cmd["resourceVersion"]:
                raise conflict_modified(res, name)
            if md.get("uid") and md["uid"] != cmd.get("uid"):
                raise ApiError(409, 'Operation cannot be fulfilled on %s "%s": Precondition failed: UID in '
                                    "precondition: %s, UID in object meta: %s" % (res.qualified, name, md["uid"], cmd.get("uid")),
                               "Conflict", details_for(res, name))
            md["name"] = name
            if res.namespaced:
                md["namespace"] = ns
            md["uid"] = cmd.get("uid")
            md["creationTimestamp"] = cmd.get("creationTimestamp")
            obj = dict(obj)
            obj["metadata"] = md
            e = st._store(res, obj, "MODIFIED")
            return Response(200, res.with_kind(e.raw))

    def _delete(self, res, ns, name, body):
        st = self.server.store
        opts = self._parse_json(body, "DeleteOptions") if body else None
        pre = (opts or {}).get("preconditions") or {} if isinstance(opts, dict) else {}
        with st.lock:
            key, cur = self._lookup(res, ns, name)
            cmd = cur.obj["metadata"]
            if pre.get("resourceVersion") and str(pre["resourceVersion"]) != cmd["resourceVersion"]:
                raise ApiError(409, 'Operation cannot be fulfilled on %s "%s": Precondition failed: ResourceVersion '
                                    "in precondition: %s, ResourceVersion in object meta: %s"
                               % (res.qualified, name, pre["resourceVersion"], cmd["resourceVersion"]),
                               "Conflict", details_for(res, name))
            if pre.get("uid") and pre["uid"] != cmd.get("uid"):
                raise ApiError(409, 'Operation cannot be fulfilled on %s "%s": Precondition failed: UID in '
                                    "precondition: %s, UID in object meta: %s" % (res.qualified, name, pre["uid"], cmd.get("uid")),
                               "Conflict", details_for(res, name))
            e = st._remove(res, key)
            if res is PODS:
                return Response(200, res.with_kind(e.raw))
            d = details_for(res, name)
            d["uid"] = cmd.get("uid")
            return json_response(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                       "status": "Success", "details": d})

    def _patch(self, res, ns, name, body):
        st = self.server.store
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        record = {"namespace": ns, "name": name, "resource": res.plural, "content_type": ctype,
                  "time": time.time()}
        try:
            if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                raise ApiError(415, "the body of the request was in an unknown format - accepted media types "
                                    "include: application/merge-patch+json, application/strategic-merge-patch+json",
                               "UnsupportedMediaType")
            patch = self._parse_json(body, "patch")
            record["patch"] = patch
            if not isinstance(patch, dict):
                raise ApiError(400, "the patch must be a JSON object")
            pmd = patch.get("metadata") if isinstance(patch.get("metadata"), dict) else {}
            with st.lock:
                key, cur = self._lookup(res, ns, name)
                cmd = cur.obj["metadata"]
                if pmd.get("resourceVersion") is not None and str(pmd["resourceVersion"]) != cmd["resourceVersion"]:
                    raise conflict_modified(res, name)
                if pmd.get("uid") and pmd["uid"] != cmd.get("uid"):
                    raise ApiError(409, 'Operation cannot be fulfilled on %s "%s": Precondition failed: UID in '
                                        "precondition: %s, UID in object meta: %s" % (res.qualified, name, pmd["uid"], cmd.get("uid")),
                                   "Conflict", details_for(res, name))
                new = merge_patch(cur.obj, patch, ctype.startswith("application/strategic"))
                md = dict(new.get("metadata") or {})
                for k in ("name", "namespace", "uid", "creationTimestamp"):
                    if k in cmd:
                        md[k] = cmd[k]
                new["metadata"] = md
                e = st._store(res, new, "MODIFIED")
                record["code"] = 200
                record["resourceVersion"] = e.obj["metadata"]["resourceVersion"]
                st.patches.append(record)
                return Response(200, res.with_kind(e.raw))
        except ApiError as err:
            record["code"] = err.code
            with st.lock:
                st.patches.append(record)
            raise

    def _binding(self, ns, name, body):
        st = self.server.store
        record = {"namespace": ns, "name": name, "uid": None, "node": None, "time": time.time()}
        try:
            b = self._parse_json(body)
            if not isinstance(b, dict):
                raise ApiError(400, "the body of the request was not a JSON object")
            if b.get("kind") not in (None, "", "Binding"):
                raise ApiError(400, "the kind in the data (%s) does not match the expected kind (Binding)" % b.get("kind"))
            md = b.get("metadata") if isinstance(b.get("metadata"), dict) else {}
            target = b.get("target") if isinstance(b.get("target"), dict) else {}
            node = target.get("name") or ""
            record["uid"] = md.get("uid")
            record["node"] = node
            if md.get("name", "") != name:
                raise ApiError(400, "name in URL does not match name in Binding object")
            if md.get("namespace") not in (None, "", ns):
                raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
            if not node:
                raise ApiError(422, 'Binding "%s" is invalid: target.name: Required value' % name, "Invalid",
                               {"name": name, "kind": "Binding", "causes": [
                                   {"reason": "FieldValueRequired", "message": "Required value", "field": "target.name"}]})
            if target.get("kind") not in (None, "", "Node"):
                raise ApiError(422, 'Binding "%s" is invalid: target.kind: Not supported: "%s"' % (name, target.get("kind")),
                               "Invalid", {"name": name, "kind": "Binding"})
            with st.lock:
                key, cur = self._lookup(PODS, ns, name)
                pod = cur.obj
                pmd = pod["metadata"]
                if md.get("uid") and md["uid"] != pmd.get("uid"):
                    raise ApiError(409, 'Operation cannot be fulfilled on pods "%s": Precondition failed: UID in '
                                        "precondition: %s, UID in object meta: %s" % (name, md["uid"], pmd.get("uid")),
                                   "Conflict", {"name": name, "kind": "pods"})
                if md.get("resourceVersion") and str(md["resourceVersion"]) != pmd["resourceVersion"]:
                    raise conflict_modified(PODS, name)
                bound = (pod.get("spec") or {}).get("nodeName")
                if bound:
                    raise ApiError(409, 'Operation cannot be fulfilled on pods/binding "%s": pod %s is already '
                                        'assigned to node "%s"' % (name, name, bound),
                                   "Conflict", {"name": name, "kind": "pods/binding"})
                new = json.loads(cur.raw)
                new.setdefault("spec", {})["nodeName"] = node
                if isinstance(md.get("annotations"), dict) and md["annotations"]:
                    ann = new["metadata"].setdefault("annotations", {})
                    ann.update(md["annotations"])
                status = new.setdefault("status", {})
                conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
                conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                              "lastTransitionTime": now_ts()})
                status["conditions"] = conds
                st._store(PODS, new, "MODIFIED")
                record["code"] = 201
                st.bindings.append(record)
            return json_response(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                       "status": "Success", "code": 201})
        except ApiError as err:
            record["code"] = err.code
            with st.lock:
                st.bindings.append(record)
            raise

    # --- watch ---

    def _write_chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _write_lines(self, lines, split_state):
        """Write event lines as chunks, batched; the first few are split when a slow fault is active."""
        batch, size = [], 0
        for ln in lines:
            if split_state is not None and split_state[0] > 0:
                if batch:
                    self._write_chunk(b"".join(batch))
                    batch, size = [], 0
                split_state[0] -= 1
                step = max(1, (len(ln) + SLOW_SPLIT_PIECES - 1) // SLOW_SPLIT_PIECES)
                for i in range(0, len(ln), step):
                    if i:
                        time.sleep(split_state[1])
                    self._write_chunk(ln[i:i + step])
                continue
            batch.append(ln)
            size += len(ln)
            if size >= WATCH_BATCH_BYTES:
                self._write_chunk(b"".join(batch))
                batch, size = [], 0
        if batch:
            self._write_chunk(b"".join(batch))

    def _peer_closed(self):
        """True when the client has closed its side of the connection."""
        sock = self.connection
        try:
            r, _, _ = select.select([sock], [], [], 0)
            if not r:
                return False
            if isinstance(sock, ssl.SSLSocket):
                sock.setblocking(False)
                try:
                    data = sock.recv(1)
                except ssl.SSLWantReadError:
                    return False
                finally:
                    sock.setblocking(True)
                    sock.settimeout(self.timeout)
                return data == b""
            data = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            return data == b""
        except BlockingIOError:
            return False
        except (OSError, ValueError):
            return True

    @staticmethod
    def _filtered_lines(res, flt, events):
        out = []
        for ev in events:
            if ev.res is not res:
                continue
            if flt.trivial:
                out.append(ev.line)
                continue
            now_m = flt.match(ev.entry.obj)
            if ev.type == "ADDED":
                if now_m:
                    out.append(ev.line)
            elif ev.type == "DELETED":
                if flt.match(ev.prev.obj if ev.prev is not None else ev.entry.obj):
                    out.append(ev.line)
            else:
                was_m = ev.prev is not None and flt.match(ev.prev.obj)
                if now_m and was_m:
                    out.append(ev.line)
                elif now_m:
                    out.append(event_line("ADDED", res.with_kind(ev.entry.raw)))
                elif was_m:
                    gone = dict(ev.prev.obj)
                    gmd = dict(gone.get("metadata") or {})
                    gmd["resourceVersion"] = str(ev.rv)
                    gone["metadata"] = gmd
                    out.append(event_line("DELETED", res.with_kind(dumps(gone))))
        return out

    def _watch(self, res, ns, query, fault):
        st = self.server.store
        srv = self.server
        flt = Filter(res, ns, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        rv_param = query.get("resourceVersion", "")
        try:
            req_rv = int(rv_param) if rv_param not in ("", "0") else None
        except ValueError:
            raise ApiError(400, 'resourceVersion: Invalid value: "%s": invalid resource version' % rv_param)
        timeout = srv.watch_timeout
        if query.get("timeoutSeconds"):
            try:
                timeout = float(query["timeoutSeconds"])
            except ValueError:
                raise ApiError(400, "invalid timeoutSeconds %r" % query["timeoutSeconds"])
        bookmarks = query.get("allowWatchBookmarks", "") in ("true", "1")
        deadline = time.monotonic() + timeout
        initial = []
        error = None
        with st.lock:
            st.watch_total += 1
            st.watch_active += 1
            if fault is not None and fault.kind == "gone":
                error = too_old(req_rv if req_rv is not None else st.rv, st.compacted_rv)
            elif req_rv is not None and req_rv < st.compacted_rv:
                error = too_old(req_rv, st.compacted_rv)
            elif req_rv is None:
                table = st.objs[res.plural]
                for k in st._keys(res):
                    e = table[k]
                    if flt.match(e.obj):
                        initial.append(event_line("ADDED", res.with_kind(e.raw)))
                pos = st.rv
            else:
                pos = req_rv
                idx = bisect.bisect_right(st.ev_rvs, pos)
                evs = st.events[idx:]
                initial = self._filtered_lines(res, flt, evs)
                if evs:
                    pos = evs[-1].rv
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-cache, private")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if error is not None:
                self._write_chunk(event_line("ERROR", dumps(error)))
                self.wfile.write(b"0\r\n\r\n")
                return
            if fault is not None and fault.kind in ("drop", "truncate"):
                if initial:
                    first = initial[0]
                else:
                    with st.lock:
                        keys = st._keys(res)
                        obj = st.objs[res.plural][keys[0]].raw if keys else b"{}"
                    first = event_line("MODIFIED", res.with_kind(obj))
                self._write_chunk(first[: max(1, len(first) // 2)])
                if fault.kind == "drop":
                    self._abort(fault.rst)
                else:
                    self.wfile.write(b"0\r\n\r\n")
                return
            if fault is not None and fault.kind == "garbage":
                self._write_chunk(b"<<garbage>> this line is not JSON {\"type\":\n")
            split_state = None
            if fault is not None and fault.kind == "slow":
                split_state = [SLOW_SPLIT_EVENTS, min(max(fault.delay_s / 4.0, 0.05), 0.5)]
            if req_rv is None and bookmarks and query.get("sendInitialEvents", "") == "true":
                initial.append(event_line("BOOKMARK", dumps({
                    "kind": res.kind, "apiVersion": res.api_version,
                    "metadata": {"resourceVersion": str(pos), "annotations": {"k8s.io/initial-events-end": "true"}}})))
            self._write_lines(initial, split_state)
            next_bm = time.monotonic() + srv.bookmark_interval
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                lines = []
                end_error = None
                with st.lock:
                    if st.closing:
                        break
                    idx = bisect.bisect_right(st.ev_rvs, pos)
                    if idx >= len(st.events) and pos >= st.compacted_rv:
                        wake = min(deadline, now + 1.0)
                        if bookmarks:
                            wake = min(wake, next_bm)
                        if wake > now:
                            st.cond.wait(wake - now)
                        if st.closing:
                            break
                        idx = bisect.bisect_right(st.ev_rvs, pos)
                    if pos < st.compacted_rv:
                        end_error = too_old(pos, st.compacted_rv)
                    else:
                        evs = st.events[idx:]
                        if evs:
                            lines = self._filtered_lines(res, flt, evs)
                            pos = evs[-1].rv
                        if bookmarks and time.monotonic() >= next_bm:
                            pos = max(pos, st.rv)
                            bm = dumps({"kind": res.kind, "apiVersion": res.api_version,
                                        "metadata": {"resourceVersion": str(pos)}})
                            lines.append(event_line("BOOKMARK", bm))
                            next_bm = time.monotonic() + srv.bookmark_interval
                if end_error is not None:
                    self._write_chunk(event_line("ERROR", dumps(end_error)))
                    break
                if lines:
                    self._write_lines(lines, split_state)
                elif self._peer_closed():
                    self.close_connection = True
                    return
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            with st.lock:
                st.watch_active -= 1

    # --- control API ---

    def _control(self, method, path, query):
        st = self.server.store
        body = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        parts = [p for p in path.split("/") if p][1:]
        if not parts:
            raise ApiError(404, "unknown control endpoint")
        what = parts[0]
        if what in RESOURCES:
            res = RESOURCES[what]
            if method == "POST" and len(parts) == 1:
                obj = self._parse_json(body)
                items = obj.get("items") if isinstance(obj, dict) and isinstance(obj.get("items"), list) else [obj]
                rvs = []
                for it in items:
                    self._check_body_kind(res, it)
                    rvs.append(st.control_upsert(res, it).obj["metadata"]["resourceVersion"])
                return json_response(200, {"ok": True, "resourceVersions": rvs, "resourceVersion": str(st.rv)})
            if method == "DELETE" and len(parts) == (3 if res.namespaced else 2):
                st.control_delete(res, "/".join(parts[1:]))
                return json_response(200, {"ok": True, "resourceVersion": str(st.rv)})
            raise ApiError(405, "method not allowed on control endpoint")
        if what == "fault":
            if method == "POST":
                spec = self._parse_json(body)
                if not isinstance(spec, dict):
                    raise ApiError(400, "fault must be a JSON object")
                f = Fault(spec)
                with st.lock:
                    st.faults.append(f)
                return json_response(200, {"ok": True, "fault": f.describe()})
            if method == "DELETE":
                with st.lock:
                    st.faults = []
                return json_response(200, {"ok": True})
            raise ApiError(405, "method not allowed on control endpoint")
        if what == "compact" and method == "POST":
            with st.lock:
                st.events = []
                st.ev_rvs = []
                st.compacted_rv = st.rv
            return json_response(200, {"ok": True, "compacted_resource_version": str(st.rv)})
        if what == "history" and method == "POST":
            spec = self._parse_json(body)
            try:
                limit = int(spec["limit"])
            except (TypeError, KeyError, ValueError):
                raise ApiError(400, "history needs {\"limit\": N}")
            with st.lock:
                st.history_limit = max(0, limit)
                st._trim()
            return json_response(200, {"ok": True, "limit": st.history_limit})
        if what == "token" and method == "POST":
            spec = self._parse_json(body)
            if not isinstance(spec, dict):
                raise ApiError(400, "token needs a JSON object")
            toks = spec.get("tokens")
            if toks is None:
                toks = [spec["token"]] if spec.get("token") else []
            with st.lock:
                st.tokens = [str(t) for t in toks]
            return json_response(200, {"ok": True, "tokens": len(st.tokens)})
        if what == "reset" and method == "POST":
            with st.lock:
                st.bindings = []
                st.patches = []
                st.requests = 0
                st.watch_total = 0
                st.request_log.clear()
            return json_response(200, {"ok": True})
        if what == "state" and method == "GET":
            with_objs = query.get("objects", "1") not in ("0", "false")
            with st.lock:
                state = {
                    "bindings": list(st.bindings),
                    "patches": list(st.patches),
                    "nodes": sorted(st.objs["nodes"]),
                    "requests": st.requests,
                    "watch_connections": st.watch_total,
                    "active_watches": st.watch_active,
                    "resourceVersion": str(st.rv),
                    "compacted_resource_version": str(st.compacted_rv),
                    "history_events": len(st.events),
                    "faults": [f.describe() for f in st.faults],
                    "request_log": list(st.request_log),
                }
                if with_objs:
                    state["pods"] = {k: e.obj for k, e in st.objs["pods"].items()}
                    state["leases"] = {k: e.obj for k, e in st.objs["leases"].items()}
                else:
                    state["pods"] = sorted(st.objs["pods"])
                    state["leases"] = sorted(st.objs["leases"])
            return json_response(200, state)
        raise ApiError(404, "unknown control endpoint %s %s" % (method, path))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, addr, store, ssl_ctx, bookmark_interval, watch_timeout, verbose):
        self.store = store
        self.ssl_ctx = ssl_ctx
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.verbose = verbose
        self._dropped = set()
        self._dropped_lock = threading.Lock()
        super().__init__(addr, Handler)

    def finish_request(self, request, client_address):
        conn = request
        if self.ssl_ctx is not None:
            try:
                request.settimeout(10)
                conn = self.ssl_ctx.wrap_socket(request, server_side=True)
                conn.settimeout(None)
            except (ssl.SSLError, OSError) as e:
                if self.verbose:
                    sys.stderr.write("fake-apiserver: TLS handshake failed: %s\n" % e)
                request.close()
                return
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            if conn is not request:
                try:
                    conn.close()
                except OSError:
                    pass

    def drop_socket(self, sock):
        """Close sock right away (abrupt end of an HTTP message)."""
        try:
            sock.close()
        except OSError:
            pass

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, socket.timeout, ssl.SSLError, ValueError, OSError)):
            return
        super().handle_error(request, client_address)


# ----------------------------------------------------------------------------------------------
# start-up


def read_items(path):
    """Objects from a *List file ({"items": [...]}) or a single object file."""
    with open(path, "rb") as f:
        doc = json.load(f)
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return doc, doc["items"]
    return doc, [doc]


def is_gpu_node(node):
    labels = (node.get("metadata") or {}).get("labels") or {}
    cap = (node.get("status") or {}).get("capacity") or {}
    return labels.get("nvidia.com/gpu.present") == "true" or "nvidia.com/gpu" in cap


def gen_nodes(template, n):
    """n clones of a GPU node named gpu-gen-00001..; sub-objects are shared (never mutated)."""
    out = []
    for i in range(1, n + 1):
        name = "gpu-gen-%05d" % i
        node = dict(template)
        md = dict(template.get("metadata") or {})
        md["name"] = name
        md["uid"] = gen_uid(1, i)
        md.pop("resourceVersion", None)
        labels = dict(md.get("labels") or {})
        if "kubernetes.io/hostname" in labels:
            labels["kubernetes.io/hostname"] = name
        md["labels"] = labels
        node["metadata"] = md
        status = dict(template.get("status") or {})
        addrs = []
        for a in status.get("addresses") or []:
            if a.get("type") == "Hostname":
                addrs.append({"type": "Hostname", "address": name})
            elif a.get("type") == "InternalIP":
                addrs.append({"type": "InternalIP", "address": "10.%d.%d.%d" % (100 + i // 65536, (i // 256) % 256, i % 256)})
            else:
                addrs.append(a)
        status["addresses"] = addrs
        node["status"] = status
        spec = dict(template.get("spec") or {})
        spec.pop("podCIDR", None)
        spec.pop("podCIDRs", None)
        node["spec"] = spec
        out.append(node)
    return out


def gen_uid(kind, i):
    """Deterministic, cheap, well-formed UID for generated objects."""
    return "00000000-0000-4000-%04x-%012x" % (kind, i)


def gen_pods(node_names, m):
    """m running managed pods (namespace gen-load) spread round-robin over node_names.

    Nested parts that are the same for every pod are shared between the dicts (stored objects are
    never mutated in place)."""
    labels = {"app.kubernetes.io/name": "gen-load", "gpu-extender.io/managed": "true"}
    containers = [{
        "name": "main",
        "image": "registry.example.com/gen-load:1.0",
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "256Mi"}},
    }]
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    status = {"phase": "Running", "qosClass": "Burstable"}
    ann = [{"gpu-extender.io/time-slices": "1", "gpu-extender.io/gpu-index": str(k)} for k in range(2)]
    nn = max(1, len(node_names))
    out = []
    for i in range(1, m + 1):
        out.append({
            "metadata": {
                "name": "gen-pod-%05d" % i,
                "namespace": "gen-load",
                "uid": gen_uid(2, i),
                "creationTimestamp": "2026-08-24T10:00:00Z",
                "labels": labels,
                "annotations": ann[((i - 1) // nn) % 2],
            },
            "spec": {
                "nodeName": node_names[(i - 1) % nn] if node_names else "",
                "schedulerName": "gpu-scheduler",
                "restartPolicy": "Always",
                "containers": containers,
                "tolerations": tolerations,
            },
            "status": status,
        })
    return out


def build_store(args):
    nodelist, nodes = read_items(args.nodes)
    try:
        base_rv = int((nodelist.get("metadata") or {}).get("resourceVersion") or 0)
    except (AttributeError, ValueError):
        base_rv = 0
    pods = []
    if args.pods:
        _, pods = read_items(args.pods)
    for it in nodes + pods:
        try:
            base_rv = max(base_rv, int((it.get("metadata") or {}).get("resourceVersion") or 0))
        except ValueError:
            pass
    tokens = [args.token] if args.token else []
    st = Store(args.history, tokens)
    st.rv = base_rv
    if args.gen_nodes > 0:
        tpl = next((n for n in nodes if is_gpu_node(n)), None)
        if tpl is None:
            raise SystemExit("fake-apiserver: --gen-nodes needs a GPU node in %s" % args.nodes)
        nodes = nodes + gen_nodes(tpl, args.gen_nodes)
    if args.gen_pods > 0:
        names = ["gpu-gen-%05d" % i for i in range(1, args.gen_nodes + 1)]
        if not names:
            names = [n["metadata"]["name"] for n in nodes if is_gpu_node(n)]
        pods = pods + gen_pods(names, args.gen_pods)
    st.load(NODES, nodes)
    st.load(PODS, pods)
    return st


def main(argv=None):
    ap = argparse.ArgumentParser(description="fake Kubernetes API server for gpu-extender tests")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--nodes", required=True, help="NodeList JSON file")
    ap.add_argument("--pods", help="PodList (or single Pod) JSON file")
    ap.add_argument("--token", help="required bearer token for /api* requests")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--port-file", help="write the bound port here")
    ap.add_argument("--gen-nodes", type=int, default=0)
    ap.add_argument("--gen-pods", type=int, default=0)
    ap.add_argument("--history", type=int, default=DEFAULT_HISTORY, help="retained watch events")
    ap.add_argument("--bookmark-interval", type=float, default=1.0, help="seconds between bookmarks")
    ap.add_argument("--watch-timeout", type=float, default=1800.0, help="watch length without timeoutSeconds")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--dra", action="store_true", help="serve resource.k8s.io/v1 (else 404, a pre-DRA server)")
    args = ap.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")

    # The start-up objects live for the whole run: keep the collector from rescanning them.
    gc.disable()
    store = build_store(args)
    gc.freeze()
    gc.enable()
    ctx = None
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
    srv = Server((args.host, args.port), store, ctx, args.bookmark_interval, args.watch_timeout, args.verbose)
    srv.dra = args.dra
    port = srv.server_address[1]

    def on_signal(signum, frame):
        with store.lock:
            store.closing = True
            store.cond.notify_all()
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    print("listening on %s:%d" % (args.host, port), flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
