#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of manifests/monitoring/ and the metrics documentation against the
real binary.

Usage:
  check_monitoring.py BINARY          run every check
  check_monitoring.py --sync-dashboard
      rewrite manifests/monitoring/grafana-dashboard.yaml from grafana-dashboard.json

The binary is started on config/demo.json (tests/integration/gxtest.py) and
its GET /metrics output is the reference: every metric an alert or a
dashboard query names must be exposed, with the labels and label values the
queries use; every exposed metric, label and label value must be documented
in docs/metrics.md. Alerts need a severity, a summary, a description and a
runbook_url whose anchor is a heading of docs/operations.md. When promtool is
installed, the rules and every dashboard query are syntax-checked with it and
the alerts are unit-tested (promtool test rules) on series shaped like the
binary's output. The last line is "monitoring: N passed, M failed".
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gxtest  # noqa: E402

ROOT = gxtest.ROOT
MON = os.path.join(ROOT, "manifests", "monitoring")
DOCS = os.path.join(ROOT, "docs")
DASH_JSON = os.path.join(MON, "grafana-dashboard.json")
DASH_YAML = os.path.join(MON, "grafana-dashboard.yaml")
DASH_KEY = "gpu-extender.json"
JOB = "gpu-extender"

REQUIRED_ALERTS = [
    "GpuExtenderDown", "GpuExtenderFilterErrors", "GpuExtenderSlowFilter",
    "GpuExtenderMetricsStale", "GpuExtenderNodesStale", "GpuExtenderLedgerNearFull",
    "GpuExtenderCasConflictStorm", "GpuExtenderLeaderUnreachable", "GpuExtenderConfigReloadFailed",
]
SEVERITIES = {"critical", "warning", "info"}
# Series Prometheus makes itself for every target.
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
# Labels of the per-card and per-namespace series, whose values are the cluster's own names.
OPEN_LABELS = {"node", "gpu", "UUID", "tenant_namespace"}
# dcgm-exporter series a panel may join on UUID (booked vs measured), with their labels.
EXPORTER_SERIES = {"DCGM_FI_DEV_GPU_UTIL": {"UUID", "gpu", "Hostname", "modelName", "device"}}
# Labels the scrape (ServiceMonitor) adds to every series.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container"}
AGGREGATORS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
               "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "offset", "bool", "atan2", "inf", "nan", "start", "end"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}

DASH_HEADER = """\
# Grafana dashboard for gpu-extender, for Grafana's dashboard sidecar (it loads
# ConfigMaps labelled grafana_dashboard: "1"; kube-prometheus-stack's Grafana
# does by default, from the namespaces in sidecar.dashboards.searchNamespace).
# Without the sidecar, import grafana-dashboard.json in the Grafana UI.
# GENERATED from grafana-dashboard.json by
#   /usr/bin/python3 tests/integration/check_monitoring.py --sync-dashboard
# Edit the .json, then regenerate; test_monitoring.sh checks they are equal.
"""


# ------------------------------------------------------------------ helpers

def load_yaml(path):
    with open(path, encoding="utf-8") as fh:
        return [d for d in yaml.safe_load_all(fh) if d is not None]


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def dashboard_yaml_text(json_text):
    body = "".join("    " + line + "\n" if line else "\n"
                   for line in json_text.rstrip("\n").split("\n"))
    return (DASH_HEADER
            + "apiVersion: v1\n"
            "kind: ConfigMap\n"
            "metadata:\n"
            "  name: gpu-extender-dashboard\n"
            "  namespace: gpu-extender\n"
            "  labels:\n"
            "    app.kubernetes.io/name: gpu-extender\n"
            "    app.kubernetes.io/component: monitoring\n"
            "    app.kubernetes.io/part-of: gpu-extender\n"
            "    grafana_dashboard: \"1\"\n"
            "data:\n"
            f"  {DASH_KEY}: |\n" + body)


def sync_dashboard():
    text = read(DASH_JSON)
    json.loads(text)
    out = dashboard_yaml_text(text)
    docs = yaml.safe_load(out)
    if docs["data"][DASH_KEY] != text.rstrip("\n") + "\n":
        print("generated ConfigMap does not round-trip the JSON", file=sys.stderr)
        return 1
    with open(DASH_YAML, "w", encoding="utf-8") as fh:
        fh.write(out)
    print(f"wrote {os.path.relpath(DASH_YAML, ROOT)}")
    return 0


# ------------------------------------------------------- exposition parser

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Exposition:
    """Families (name -> type), samples (name -> {label -> {values}})."""

    def __init__(self, text):
        self.types = {}
        self.helps = {}
        self.samples = {}
        self.bad = []
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, typ = line.split(" ", 3)
                self.types[name] = typ
            elif line.startswith("# HELP "):
                parts = line.split(" ", 3)
                self.helps[parts[2]] = parts[3] if len(parts) > 3 else ""
            elif line.strip() and not line.startswith("#"):
                m = SAMPLE_RE.match(line)
                if not m:
                    self.bad.append(line)
                    continue
                labels = self.samples.setdefault(m.group(1), {})
                for k, v in LABEL_RE.findall(m.group(3) or ""):
                    labels.setdefault(k, set()).add(v)

    def family_of(self, sample):
        if sample in self.types:
            return sample
        for suf in ("_bucket", "_sum", "_count"):
            base = sample[:-len(suf)] if sample.endswith(suf) else None
            if base and self.types.get(base) == "histogram":
                return base
        return None


# ------------------------------------------------------------ PromQL lexer

def lex(expr):
    """Tokens (kind, value): ident, str, num, var, range, matchers, punct."""
    toks, i, n = [], 0, len(expr)
    while i < n:
        c = expr[i]
        if c.isspace():
            i += 1
        elif c == "#":
            while i < n and expr[i] != "\n":
                i += 1
        elif c in "\"'`":
            j = i + 1
            while j < n and expr[j] != c:
                j += 2 if expr[j] == "\\" else 1
            toks.append(("str", expr[i + 1:j]))
            i = j + 1
        elif c.isalpha() or c in "_:":
            j = i
            while j < n and (expr[j].isalnum() or expr[j] in "_:"):
                j += 1
            toks.append(("ident", expr[i:j]))
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and expr[i + 1].isdigit()):
            j = i
            while j < n and (expr[j].isalnum() or expr[j] in "."):
                j += 1
            toks.append(("num", expr[i:j]))
            i = j
        elif c == "$":
            m = re.match(r"\$(\{[^}]*\}|\w+)", expr[i:])
            toks.append(("var", m.group(0) if m else "$"))
            i += len(m.group(0)) if m else 1
        elif c == "[":
            j = expr.index("]", i)
            toks.append(("range", expr[i + 1:j]))
            i = j + 1
        elif c == "{":
            j, matchers = i + 1, []
            body_start = j
            while j < n and expr[j] != "}":
                if expr[j] in "\"'`":
                    q = expr[j]
                    j += 1
                    while j < n and expr[j] != q:
                        j += 2 if expr[j] == "\\" else 1
                j += 1
            body = expr[body_start:j]
            for m in re.finditer(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"',
                                 body):
                matchers.append((m.group(1), m.group(2), m.group(3)))
            toks.append(("matchers", matchers))
            i = j + 1
        else:
            toks.append(("punct", c))
            i += 1
    return toks


def analyse(expr):
    """(selectors [(metric, matchers)], grouping label names)."""
    toks = lex(expr)
    sels, groups, i = [], set(), 0
    while i < len(toks):
        kind, val = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else (None, None)
        if kind == "ident" and val in GROUPING and nxt == ("punct", "("):
            j = i + 2
            while j < len(toks) and toks[j] != ("punct", ")"):
                if toks[j][0] == "ident":
                    groups.add(toks[j][1])
                j += 1
            i = j + 1
            continue
        if kind == "ident":
            if val in AGGREGATORS or val in KEYWORDS or nxt == ("punct", "("):
                i += 1
                continue
            matchers = nxt[1] if nxt[0] == "matchers" else []
            sels.append((val, matchers))
            i += 2 if nxt[0] == "matchers" else 1
            continue
        if kind == "matchers":
            names = [v for (k, op, v) in val if k == "__name__" and op == "="]
            sels.append((names[0] if names else "", val))
        i += 1
    return sels, groups


PLAIN_ALTS = re.compile(r"^[A-Za-z0-9_]+(\|[A-Za-z0-9_]+)*$")


def check_expr(ck, where, expr, expo, legend=None):
    """Every metric exists; its matchers use real labels and values."""
    sels, groups = analyse(expr)
    ck.ok(sels, f"{where}: no metric selector found in {expr!r}")
    used_labels = set(TARGET_LABELS)
    for name, matchers in sels:
        if name in EXPORTER_SERIES:
            used_labels |= EXPORTER_SERIES[name]
            continue
        if not ck.ok(name in expo.samples or name in PROMETHEUS_SERIES,
                     f"{where}: metric {name!r} is not in /metrics"):
            continue
        have = expo.samples.get(name, {})
        used_labels |= set(have)
        for lbl, op, value in matchers:
            if lbl in TARGET_LABELS or lbl == "__name__":
                continue
            if not ck.ok(lbl in have, f"{where}: {name} has no label {lbl!r}"):
                continue
            if "$" in value:
                continue
            if op in ("=", "!="):
                ck.ok(value in have[lbl],
                      f"{where}: {name}{{{lbl}{op}{value!r}}}: value not in {sorted(have[lbl])}")
            elif PLAIN_ALTS.match(value):
                for alt in value.split("|"):
                    ck.ok(alt in have[lbl],
                          f"{where}: {name}{{{lbl}{op}{value!r}}}: {alt!r} not in "
                          f"{sorted(have[lbl])}")
    extra = {"value", "hash"}  # labels made by count_values("...") in the queries
    for g in groups:
        ck.ok(g in used_labels or g in extra, f"{where}: groups by unknown label {g!r}")
    for g in re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", legend or ""):
        ck.ok(g in used_labels, f"{where}: legend uses unknown label {g!r}")
    return sels


# -------------------------------------------------------- markdown anchors

def github_slug(title):
    s = title.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(md_text):
    out, seen = set(), {}
    in_code = False
    for line in md_text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*$", line)
        if m:
            slug = github_slug(m.group(1))
            k = seen.get(slug, 0)
            out.add(slug if k == 0 else f"{slug}-{k}")
            seen[slug] = k + 1
    return out


# ------------------------------------------------------------------ checks

def check_kustomization(ck, objs_by_file):
    k = load_yaml(os.path.join(MON, "kustomization.yaml"))[0]
    listed = list(k.get("resources") or [])
    present = sorted(f for f in os.listdir(MON)
                     if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml")
    ck.eq(sorted(listed), present, "kustomization.yaml lists exactly the YAML files present")
    ck.eq(len(set(listed)), len(listed), "kustomization.yaml lists no file twice")
    for want in ("servicemonitor.yaml", "prometheusrule.yaml", "grafana-dashboard.yaml"):
        ck.ok(want in listed, f"kustomization.yaml lists {want}")
    others = sorted(set(os.listdir(MON)) - set(present) - {"kustomization.yaml",
                                                            "grafana-dashboard.json"})
    ck.eq(others, [], "manifests/monitoring holds no unaccounted file")
    for f, objs in objs_by_file.items():
        for o in objs:
            md = o.get("metadata") or {}
            ck.ok(md.get("namespace") == "gpu-extender" and md.get("name"),
                  f"{f}: {o.get('kind')} has a name and namespace gpu-extender")
    kubectl = shutil.which("kubectl")
    if kubectl:
        res = subprocess.run([kubectl, "kustomize", MON], capture_output=True, text=True,
                             timeout=120)
        if ck.ok(res.returncode == 0, f"kubectl kustomize manifests/monitoring: {res.stderr[:300]}"):
            kinds = sorted(d.get("kind") for d in yaml.safe_load_all(res.stdout) if d)
            ck.eq(kinds, ["ConfigMap", "PrometheusRule", "ServiceMonitor"],
                  "kubectl kustomize renders the three objects")
    else:
        print("     (kubectl not installed: kustomize rendering not checked)")


def check_servicemonitor(ck, sm):
    ck.eq(sm.get("apiVersion"), "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
    svc = [d for d in load_yaml(os.path.join(ROOT, "manifests", "extender", "05-service.yaml"))
           if d.get("kind") == "Service"][0]
    spec = sm.get("spec") or {}
    sel = (spec.get("selector") or {}).get("matchLabels") or {}
    svc_labels = (svc.get("metadata") or {}).get("labels") or {}
    ck.ok(sel and all(svc_labels.get(k) == v for k, v in sel.items()),
          f"ServiceMonitor selector {sel} matches the Service labels {svc_labels}")
    ns = ((spec.get("namespaceSelector") or {}).get("matchNames") or [])
    ck.ok(svc["metadata"]["namespace"] in ns, "ServiceMonitor namespaceSelector has the Service's")
    ports = {p.get("name") for p in svc["spec"]["ports"]}
    eps = spec.get("endpoints") or []
    ck.ok(eps, "ServiceMonitor has endpoints")
    for ep in eps:
        ck.ok(ep.get("port") in ports, f"ServiceMonitor endpoint port {ep.get('port')} in {ports}")
        ck.eq(ep.get("path"), "/metrics", "ServiceMonitor endpoint path")
    ck.eq(svc["metadata"]["name"], JOB, "the Service name (job label) is what the rules select")


def check_rules(ck, rule, expo, ops_md):
    ck.eq(rule.get("apiVersion"), "monitoring.coreos.com/v1", "PrometheusRule apiVersion")
    groups = (rule.get("spec") or {}).get("groups") or []
    ck.ok(groups, "PrometheusRule has groups")
    ops_anchors = anchors(ops_md)
    alerts = []
    for g in groups:
        for r in g.get("rules") or []:
            name = r.get("alert")
            if not ck.ok(name, f"group {g.get('name')}: every rule is an alert"):
                continue
            alerts.append(name)
            labels = r.get("labels") or {}
            ann = r.get("annotations") or {}
            ck.ok(labels.get("severity") in SEVERITIES, f"{name}: severity {labels.get('severity')}")
            ck.ok(re.match(r"^\d+[smh]$", str(r.get("for", ""))), f"{name}: has a for: duration")
            for key in ("summary", "description", "runbook_url"):
                ck.ok(isinstance(ann.get(key), str) and ann[key].strip(), f"{name}: has {key}")
            url = ann.get("runbook_url") or ""
            path, _, frag = url.partition("#")
            ck.ok(path.endswith("docs/operations.md"), f"{name}: runbook_url points at "
                  f"docs/operations.md ({url})")
            ck.ok(frag in ops_anchors, f"{name}: anchor #{frag} is a heading of docs/operations.md")
            ck.eq(frag, name.lower(), f"{name}: runbook anchor is the alert name")
            check_expr(ck, f"alert {name}", r.get("expr", ""), expo)
            ck.ok(f"job=\"{JOB}\"" in r.get("expr", ""), f"{name}: selects job=\"{JOB}\"")
    ck.eq(len(set(alerts)), len(alerts), "alert names are unique")
    for want in REQUIRED_ALERTS:
        ck.ok(want in alerts, f"alert {want} exists")
    return groups


def dashboard_queries(dash):
    """(where, expr, legend) of every panel target and query variable."""
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets") or []:
                out.append((f"panel {p.get('title')!r} target {t.get('refId')}",
                            t.get("expr", ""), t.get("legendFormat")))
            walk(p.get("panels") or [])

    walk(dash.get("panels") or [])
    for v in (dash.get("templating") or {}).get("list") or []:
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.match(r"^label_values\((.*),\s*([a-zA-Z_]\w*)\)$", q or "")
        if m:
            out.append((f"variable {v.get('name')}", m.group(1), "{{%s}}" % m.group(2)))
        else:
            out.append((f"variable {v.get('name')}", q or "", None))
    return out


def check_dashboard(ck, dash, cm, expo):
    labels = (cm.get("metadata") or {}).get("labels") or {}
    ck.eq(cm.get("kind"), "ConfigMap", "grafana-dashboard.yaml is a ConfigMap")
    ck.eq(labels.get("grafana_dashboard"), "1", "dashboard ConfigMap label grafana_dashboard: \"1\"")
    embedded = (cm.get("data") or {}).get(DASH_KEY)
    ck.ok(embedded == read(DASH_JSON).rstrip("\n") + "\n",
          "grafana-dashboard.yaml embeds grafana-dashboard.json unchanged "
          "(run check_monitoring.py --sync-dashboard)")
    ck.ok(dash.get("uid") and dash.get("title"), "dashboard has uid and title")
    tvars = (dash.get("templating") or {}).get("list") or []
    dsv = [v for v in tvars if v.get("type") == "datasource"]
    ck.ok(len(dsv) == 1 and dsv[0].get("query") == "prometheus",
          "dashboard has one Prometheus datasource template variable")
    dsname = dsv[0]["name"] if dsv else "datasource"
    want_uid = "${%s}" % dsname
    panels, rects, ids = [], [], []

    def walk(ps):
        for p in ps:
            panels.append(p)
            walk(p.get("panels") or [])

    walk(dash.get("panels") or [])
    for p in panels:
        ids.append(p.get("id"))
        gp = p.get("gridPos") or {}
        ok = all(isinstance(gp.get(k), int) for k in ("x", "y", "w", "h"))
        if ck.ok(ok and gp["x"] + gp["w"] <= 24, f"panel {p.get('title')!r}: gridPos in 24 columns"):
            rects.append((p.get("title"), gp))
        if p.get("type") == "row":
            continue
        ck.ok(p.get("title"), f"panel {p.get('id')} has a title")
        ck.eq((p.get("datasource") or {}).get("uid"), want_uid,
              f"panel {p.get('title')!r} uses the datasource variable")
        tg = p.get("targets") or []
        ck.ok(tg, f"panel {p.get('title')!r} has queries")
        refs = [t.get("refId") for t in tg]
        ck.eq(len(set(refs)), len(refs), f"panel {p.get('title')!r}: refIds unique")
        for t in tg:
            ck.eq((t.get("datasource") or {}).get("uid"), want_uid,
                  f"panel {p.get('title')!r} {t.get('refId')}: datasource variable")
    for v in tvars:
        if v.get("type") == "query":
            ck.eq((v.get("datasource") or {}).get("uid"), want_uid,
                  f"variable {v.get('name')}: datasource variable")
    ck.eq(len(set(ids)), len(ids), "panel ids are unique")
    overlaps = []
    for i, (ta, a) in enumerate(rects):
        for tb, b in rects[i + 1:]:
            if (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
                    and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]):
                overlaps.append((ta, tb))
    ck.eq(overlaps, [], "panels do not overlap")
    queries = dashboard_queries(dash)
    used = set()
    for where, expr, legend in queries:
        for name, _ in check_expr(ck, where, expr, expo, legend):
            used.add(expo.family_of(name) or name)
    topics = {
        "request rate": "gpu_extender_requests_total",
        "request latency": "gpu_extender_request_duration_seconds",
        "rejections by reason": "gpu_extender_filter_rejections_total",
        "bind outcomes": "gpu_extender_binds_total",
        "CAS conflicts": "gpu_extender_ledger_cas_conflicts_total",
        "source ages": "gpu_extender_source_age_seconds",
        "upstream errors": "gpu_extender_upstream_errors_total",
        "ledger occupancy": "gpu_extender_ledger_slots_used",
        "snapshot sizes": "gpu_extender_snapshot_cards",
        "config reloads": "gpu_extender_config_reloads_total",
    }
    for topic, metric in topics.items():
        ck.ok(metric in used, f"dashboard shows {topic} ({metric})")
    return queries


def check_docs(ck, expo):
    md = read(os.path.join(DOCS, "metrics.md"))
    ticks = set(re.findall(r"`([^`\n]+)`", md))
    for fam, typ in sorted(expo.types.items()):
        ck.ok(fam in ticks, f"docs/metrics.md documents `{fam}`")
        ck.ok(re.search(r"`%s`\s*\|\s*%s\s*\|" % (re.escape(fam), typ), md),
              f"docs/metrics.md gives {fam} its type {typ}")
    for sample, labels in sorted(expo.samples.items()):
        for lbl, values in labels.items():
            if lbl == "le":
                continue
            ck.ok(lbl in ticks, f"docs/metrics.md documents label `{lbl}` of {sample}")
            if lbl in OPEN_LABELS:
                continue  # values are the cluster's names (bounded by server.metrics_max_cards)
            for v in sorted(values):
                ck.ok(v in ticks, f"docs/metrics.md documents value `{v}` of {sample}{{{lbl}}}")
    known = set(expo.samples) | set(expo.types)
    for doc in ("metrics.md", "operations.md", "architecture.md"):
        text = read(os.path.join(DOCS, doc))
        for name in sorted(set(re.findall(r"\bgpu_extender_[a-z0-9_]+", text))):
            ck.ok(name in known, f"docs/{doc} names {name}, which /metrics does not expose")


def check_reasons(ck, expo):
    src = "".join(read(p) for p in sorted(glob.glob(os.path.join(ROOT, "src", "decide", "*.c"))))
    table = re.findall(r'\[GX_REASON_(\w+)\]\s*=\s*\{\s*"([^"]*)",\s*"(\w+)"', src)
    ck.ok(len(table) >= 10, "the reason table of src/decide/ found")
    ops = read(os.path.join(DOCS, "operations.md"))
    met = read(os.path.join(DOCS, "metrics.md"))
    exposed = expo.samples.get("gpu_extender_filter_rejections_total", {}).get("reason", set())
    names = set()
    for enum, text, name in table:
        if enum == "NONE":
            continue
        names.add(name)
        ck.ok(f"`{text}`" in ops, f"docs/operations.md explains reason `{text}`")
        ck.ok(f"`{text}`" in met and f"`{name}`" in met, f"docs/metrics.md maps {name} to `{text}`")
    ck.eq(sorted(names), sorted(exposed), "reason label values equal src/decide/'s reasons")


def check_links(ck):
    for doc in ("metrics.md", "operations.md", "architecture.md"):
        text = read(os.path.join(DOCS, doc))
        for target, frag in re.findall(r"\]\(([a-z0-9_.-]*\.md|)#([a-z0-9_-]+)\)", text):
            path = os.path.join(DOCS, target or doc)
            ok = os.path.isfile(path) and frag in anchors(read(path))
            ck.ok(ok, f"docs/{doc}: link {target}#{frag} resolves")


# ---------------------------------------------------------------- promtool

def strip_annotations(groups):
    out = []
    for g in groups:
        rules = [{k: v for k, v in r.items() if k != "annotations"} for r in g.get("rules") or []]
        out.append({"name": g["name"], "rules": rules})
    return {"groups": out}


def series(name, labels, values):
    lbl = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{name}{{{lbl}}}", "values": values}


def alert_unit_tests():
    """promtool unit tests: each alert fires on a bad replica and not on a good one."""
    A = {"job": JOB, "instance": "10.0.0.1:8888"}
    B = {"job": JOB, "instance": "10.0.0.2:8888"}

    def s(name, base, values, **extra):
        return series(name, dict(base, **extra), values)

    def fire(name, t, *label_sets):
        return {"eval_time": t, "alertname": name,
                "exp_alerts": [{"exp_labels": ls} for ls in label_sets]}

    warn = {"severity": "warning"}
    tests = []
    # Down / Unavailable / NotReady.
    tests.append({"interval": "1m", "input_series": [
        s("up", A, "0x20"), s("up", B, "1x20"),
        s("gpu_extender_ready", A, "0x20"), s("gpu_extender_ready", B, "1x20")],
        "alert_rule_test": [
            fire("GpuExtenderDown", "5m", dict(A, **warn)),
            fire("GpuExtenderUnavailable", "5m"),
            fire("GpuExtenderNotReady", "15m", dict(A, **warn)),
            fire("GpuExtenderNotReady", "5m")]})
    tests.append({"interval": "1m", "input_series": [s("up", A, "0x20"), s("up", B, "0x20")],
                  "alert_rule_test": [fire("GpuExtenderUnavailable", "5m",
                                           {"job": JOB, "severity": "critical"})]})
    # Request errors (filter 10 % failing, prioritize fine) and slow filter.
    req = "gpu_extender_requests_total"
    bucket = "gpu_extender_request_duration_seconds_bucket"
    slow = [s(bucket, A, "0+0x30", verb="filter", le=le) for le in ("0.01", "0.025", "0.05")]
    slow += [s(bucket, A, "0+100x30", verb="filter", le=le) for le in ("0.1", "0.25", "+Inf")]
    fast = [s(bucket, B, "0+100x30", verb="filter", le=le) for le in ("0.001", "0.05", "+Inf")]
    tests.append({"interval": "1m", "input_series": [
        s(req, A, "0+90x30", verb="filter", code="2xx"),
        s(req, A, "0+10x30", verb="filter", code="5xx"),
        s(req, A, "0+100x30", verb="prioritize", code="2xx"),
        s(req, A, "0+0x30", verb="prioritize", code="4xx")] + slow,
        "alert_rule_test": [
            fire("GpuExtenderFilterErrors", "20m", {"job": JOB, "verb": "filter", **warn}),
            fire("GpuExtenderSlowFilter", "20m", {"job": JOB, **warn})]})
    tests.append({"interval": "1m", "input_series": fast + [
        s(req, B, "0+100x30", verb="filter", code="2xx"),
        s(req, B, "0+1x30", verb="filter", code="4xx")],
        "alert_rule_test": [fire("GpuExtenderSlowFilter", "20m"),
                            fire("GpuExtenderFilterErrors", "20m")]})
    # Binds: 1 in 3 failing.
    binds = "gpu_extender_binds_total"
    tests.append({"interval": "1m", "input_series": [
        s(binds, A, "0+60x40", outcome="bound"), s(binds, A, "0+30x40", outcome="error"),
        s(binds, A, "0+0x40", outcome="rejected")],
        "alert_rule_test": [fire("GpuExtenderBindFailures", "30m", {"job": JOB, **warn})]})
    # Source ages: A stale, B fresh; C never succeeded though configured; D not configured.
    C = {"job": JOB, "instance": "10.0.0.3:8888"}
    D = {"job": JOB, "instance": "10.0.0.4:8888"}
    age, upreq = "gpu_extender_source_age_seconds", "gpu_extender_upstream_requests_total"
    inp = []
    for up, stale in (("prometheus", "120"), ("kubernetes", "700")):
        inp += [s(age, A, f"{stale}x20", upstream=up), s(upreq, A, "0+5x20", upstream=up),
                s(age, B, "3x20", upstream=up), s(upreq, B, "0+5x20", upstream=up),
                s(age, C, "-1x20", upstream=up), s(upreq, C, "0+5x20", upstream=up),
                s(age, D, "-1x20", upstream=up), s(upreq, D, "0x20", upstream=up)]
    tests.append({"interval": "1m", "input_series": inp, "alert_rule_test": [
        fire("GpuExtenderMetricsStale", "10m", dict(A, upstream="prometheus", **warn),
             dict(C, upstream="prometheus", **warn)),
        fire("GpuExtenderNodesStale", "10m", dict(A, upstream="kubernetes", **warn),
             dict(C, upstream="kubernetes", **warn))]})
    # Ledger occupancy 46/48, then a healthy 10/48.
    tests.append({"interval": "1m", "input_series": [
        s("gpu_extender_ledger_slots_used", A, "46x30"),
        s("gpu_extender_ledger_slots_total", A, "48x30")],
        "alert_rule_test": [fire("GpuExtenderLedgerNearFull", "20m", {"job": JOB, **warn})]})
    tests.append({"interval": "1m", "input_series": [
        s("gpu_extender_ledger_slots_used", A, "10x30"),
        s("gpu_extender_ledger_slots_total", A, "48x30")],
        "alert_rule_test": [fire("GpuExtenderLedgerNearFull", "20m")]})
    # CAS conflicts: 10/s on two replicas; 1/s is fine.
    cas = "gpu_extender_ledger_cas_conflicts_total"
    tests.append({"interval": "1m", "input_series": [s(cas, A, "0+300x20"), s(cas, B, "0+300x20")],
                  "alert_rule_test": [fire("GpuExtenderCasConflictStorm", "15m",
                                           {"job": JOB, **warn})]})
    tests.append({"interval": "1m", "input_series": [s(cas, A, "0+60x20")],
                  "alert_rule_test": [fire("GpuExtenderCasConflictStorm", "15m")]})
    # A answers itself all along (the leader unreachable); B fell back once, at a failover.
    fb = "gpu_extender_forward_fallbacks_total"
    tests.append({"interval": "1m", "input_series": [s(fb, A, "0+3x20"), s(fb, B, "0 5x20")],
                  "alert_rule_test": [fire("GpuExtenderLeaderUnreachable", "15m",
                                           dict(A, **warn))]})
    # Config reload rejected on A only.
    tests.append({"interval": "1m", "input_series": [
        s("gpu_extender_config_last_reload_success", A, "1 1 0x10"),
        s("gpu_extender_config_last_reload_success", B, "1x12")],
        "alert_rule_test": [fire("GpuExtenderConfigReloadFailed", "1m"),
                            fire("GpuExtenderConfigReloadFailed", "8m", dict(A, **warn))]})
    return tests


def check_promtool(ck, groups, queries):
    promtool = shutil.which("promtool")
    if promtool is None:
        print("     (promtool not installed: PromQL syntax and alert unit tests not run)")
        return
    tmp = tempfile.mkdtemp(prefix="gx-mon-")
    try:
        rules = os.path.join(tmp, "rules.yaml")
        with open(rules, "w") as fh:
            yaml.safe_dump({"groups": groups}, fh)
        res = subprocess.run([promtool, "check", "rules", rules], capture_output=True,
                             text=True, timeout=60)
        ck.ok(res.returncode == 0, f"promtool check rules: {res.stdout[-500:]}{res.stderr[-500:]}")
        rec = []
        for i, (where, expr, _) in enumerate(queries):
            e = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")
            rec.append({"record": f"dashboard:query_{i}", "expr": e})
        dq = os.path.join(tmp, "dashboard.yaml")
        with open(dq, "w") as fh:
            yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rec}]}, fh)
        res = subprocess.run([promtool, "check", "rules", dq], capture_output=True, text=True,
                             timeout=60)
        ck.ok(res.returncode == 0,
              f"promtool parses every dashboard query: {res.stdout[-500:]}{res.stderr[-500:]}")
        bare = os.path.join(tmp, "alerts.yaml")
        with open(bare, "w") as fh:
            yaml.safe_dump(strip_annotations(groups), fh)
        tests = os.path.join(tmp, "tests.yaml")
        with open(tests, "w") as fh:
            yaml.safe_dump({"rule_files": ["alerts.yaml"], "evaluation_interval": "1m",
                            "tests": alert_unit_tests()}, fh)
        res = subprocess.run([promtool, "test", "rules", tests], capture_output=True, text=True,
                             timeout=120, cwd=tmp)
        ck.ok(res.returncode == 0,
              f"promtool test rules (alerts fire and stay quiet as intended): "
              f"{res.stdout[-1500:]}{res.stderr[-1500:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -------------------------------------------------------------------- main

def sample_value(text, series):
    """Value of the exact series line @series in exposition @text, or None."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


def scrape(binary, ck):
    """The first /metrics page, after checking that the series the alerts
    and panels rely on move when the binary does what they measure."""
    with open(os.path.join(ROOT, "config", "demo", "pod-shared.json")) as fh:
        pod = json.load(fh)
    md = pod["metadata"]
    # a quota, so the namespace limit series are on the page
    ext = gxtest.Extender(binary, overrides={"quotas.milli_gpus": {md["namespace"]: 4000}})
    try:
        ext.start()
        # one booked card first, so the per-card series (booked cards only) are on the page;
        # filtered on one GPU node, so the absolute rejection counts below stay as they were
        ext.post_json(ext.verb("filter"), {"Pod": pod, "Nodes": None, "NodeNames": ["gpu-node-a"]})
        ext.post_json(ext.verb("bind"), {"PodName": md["name"], "PodNamespace": md["namespace"],
                                          "PodUID": md["uid"], "Node": "gpu-node-a"})
        st, body, headers = ext.request("GET", "/metrics")
        first = body.decode()
        names = ["gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-d"]
        # another pod: the bound one would be held to its own node (booked_elsewhere elsewhere)
        other = dict(pod, metadata=dict(md, name=md["name"] + "-2", uid=md["uid"] + "-2"))
        fst, _ = ext.post_json(ext.verb("filter"), {"Pod": other, "Nodes": None, "NodeNames": names})
        bst, _ = ext.post_json(ext.verb("filter"), b"{\"Pod\": ")
        ext.write_config({"server": {"prot": 1}})
        deadline = time.time() + 10
        after = ""
        while time.time() < deadline:
            after = ext.request("GET", "/metrics")[1].decode()
            if sample_value(after, "gpu_extender_config_last_reload_success") == 0:
                break
            time.sleep(0.2)
        ck.eq((fst, bst), (200, 400), "filter answers 200, malformed filter 400")
        moved = {
            'gpu_extender_requests_total{verb="filter",code="2xx"}': 1,
            'gpu_extender_requests_total{verb="filter",code="4xx"}': 1,
            'gpu_extender_request_duration_seconds_count{verb="filter"}': 2,
            'gpu_extender_config_reloads_total{result="failure"}': 1,
        }
        for series, delta in moved.items():
            a, b = sample_value(first, series), sample_value(after, series)
            ck.ok(a is not None and b is not None and b - a == delta,
                  f"{series} moves by {delta} (from {a} to {b})")
        kept = sample_value(after, "gpu_extender_filter_nodes_kept_total")
        rej = sample_value(after, 'gpu_extender_filter_rejections_total{reason="no_gpus"}')
        ck.ok(kept and kept >= 1 and rej == 1,
              f"a filter call counts kept nodes ({kept}) and the CPU node's no_gpus rejection ({rej})")
        ck.eq(sample_value(after, "gpu_extender_config_last_reload_success"), 0.0,
              "a rejected config sets gpu_extender_config_last_reload_success 0 "
              "(GpuExtenderConfigReloadFailed)")
        ck.ok("config rejected, keeping the last good config" in ext.logs(),
              "a rejected config logs the line the runbook greps for")
        return st, first, headers.get("Content-Type", "")
    finally:
        ext.cleanup()


def main(argv):
    if len(argv) == 2 and argv[1] == "--sync-dashboard":
        return sync_dashboard()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(argv[1])
    ck = gxtest.Checks("monitoring")

    st, text, ctype = scrape(binary, ck)
    ck.eq(st, 200, "GET /metrics status")
    ck.ok(ctype.startswith("text/plain"), f"GET /metrics content type {ctype}")
    expo = Exposition(text)
    ck.eq(expo.bad, [], "every /metrics line parses")
    ck.ok(len(expo.types) >= 20, f"/metrics has metric families ({len(expo.types)})")
    for fam in expo.types:
        ck.ok(fam.startswith("gpu_extender_"), f"{fam} has the gpu_extender_ prefix")
        ck.ok(expo.helps.get(fam), f"{fam} has HELP text")
    for sample in expo.samples:
        ck.ok(expo.family_of(sample), f"sample {sample} belongs to a declared family")

    files = {f: load_yaml(os.path.join(MON, f)) for f in sorted(os.listdir(MON))
             if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml"}
    by_kind = {}
    for f, objs in files.items():
        for o in objs:
            by_kind.setdefault(o.get("kind"), []).append(o)
    for kind in ("ServiceMonitor", "PrometheusRule", "ConfigMap"):
        ck.eq(len(by_kind.get(kind, [])), 1, f"one {kind} in manifests/monitoring")

    check_kustomization(ck, files)
    if by_kind.get("ServiceMonitor"):
        check_servicemonitor(ck, by_kind["ServiceMonitor"][0])
    ops_md = read(os.path.join(DOCS, "operations.md"))
    groups = []
    if by_kind.get("PrometheusRule"):
        groups = check_rules(ck, by_kind["PrometheusRule"][0], expo, ops_md)
    with open(DASH_JSON, encoding="utf-8") as fh:
        dash = json.load(fh)
    queries = []
    if by_kind.get("ConfigMap"):
        queries = check_dashboard(ck, dash, by_kind["ConfigMap"][0], expo)
    check_docs(ck, expo)
    check_reasons(ck, expo)
    check_links(ck)
    check_promtool(ck, groups, queries)
    ck.done()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
