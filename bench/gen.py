#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generate a synthetic GPU cluster for the benchmarks (python3 stdlib only).

For N nodes x 8 cards (clones of the 8-card node gpu-node-b of
tests/fixtures/nodelist.json, renamed gpu-b-00001..) it writes into OUT:

  nodes.json               NodeList of the N nodes
  dcgm.prom                one dcgm-exporter page for every card: the 19
                           families of tests/fixtures/dcgm-node-*.prom with
                           varied utilization, memory and temperature, some
                           workload pods and a few XID errors
  config.json              config/demo.json with sources.files pointing at
                           the files above, the given port, log.level warn
  args-names-excl.json     ExtenderArgs, NodeNames mode, exclusive 1-GPU pod
  args-names-shared.json   ExtenderArgs, NodeNames mode, shared (time-slice) pod
  args-nodes-excl.json     ExtenderArgs, full Nodes mode (the NodeList items)
  args-nodes-shared.json   ExtenderArgs, full Nodes mode, shared pod
  prom-query-util.json     (--prom) a Prometheus /api/v1/query answer with one
                           DCGM_FI_DEV_GPU_UTIL series per card

Everything is deterministic for a given --seed.
"""
import argparse
import copy
import json
import os
import random
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures")
CARDS = 8
CARD_MIB = 24564
DRIVER = "580.126.20"
MODEL = "NVIDIA GeForce RTX 4090"
PCI = ["01", "21", "41", "61", "81", "A1", "C1", "E1"]
NS = uuid.UUID("6f1c2a3e-4b5d-4e6f-8a9b-0c1d2e3f4a5b")

# family, type, help: the 19 families of a dcgm-exporter page
FAMILIES = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
]

WORKLOADS = [
    ("research", "ddp-train-resnet-worker-%d", "trainer"),
    ("ml-inference", "vllm-llama3-8b-6c9d7f5b8-%05d", "vllm"),
    ("notebooks", "jupyter-user-%d", "notebook"),
    ("genai", "sd-webui-5f6b8c7d9-%05d", "webui"),
]
XIDS = [(13, "Graphics Engine Exception"), (31, "GPU memory page fault"),
        (79, "GPU has fallen off the bus"), (48, "Double Bit ECC Error")]


def node_name(i):
    return "gpu-b-%05d" % (i + 1)


def card_uuid(i, c):
    u = uuid.uuid5(NS, "%d/%d" % (i, c)).hex
    return "GPU-%s-%s-%s-%s-%s" % (u[0:8], u[8:12], u[12:16], u[16:20], u[20:32])


class Card:
    """Random but plausible live state of one card."""

    def __init__(self, rng, i, c):
        self.node = node_name(i)
        self.node_index = i
        self.index = c
        self.uuid = card_uuid(i, c)
        busy = rng.random() < 0.35
        self.util = rng.randint(40, 100) if busy else rng.choice([0, 0, 0, 1, 2, 5])
        self.used = rng.randint(4000, CARD_MIB - 600) if busy else rng.randint(1, 400)
        self.reserved = 354
        self.free = max(0, CARD_MIB - self.used - self.reserved)
        self.temp = (rng.randint(55, 89) if busy else rng.randint(28, 45))
        self.power = round(rng.uniform(250, 440) if busy else rng.uniform(9, 30), 6)
        self.energy = rng.randint(10**10, 10**12)
        self.workload = None
        if busy:
            ns, fmt, cont = WORKLOADS[rng.randrange(len(WORKLOADS))]
            self.workload = (ns, fmt % rng.randint(0, 99999), cont)
        self.xid = XIDS[rng.randrange(len(XIDS))] if rng.random() < 0.01 else (0, "No Error")

    def value(self, fam):
        return {
            "DCGM_FI_DEV_SM_CLOCK": 2520 + self.util if self.util else 210,
            "DCGM_FI_DEV_MEM_CLOCK": 10501 if self.util else 405,
            "DCGM_FI_DEV_GPU_TEMP": self.temp,
            "DCGM_FI_DEV_POWER_USAGE": "%.6f" % self.power,
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": self.energy,
            "DCGM_FI_DEV_GPU_UTIL": self.util,
            "DCGM_FI_DEV_MEM_COPY_UTIL": self.util // 2,
            "DCGM_FI_DEV_XID_ERRORS": self.xid[0],
            "DCGM_FI_DEV_FB_FREE": self.free,
            "DCGM_FI_DEV_FB_USED": self.used,
            "DCGM_FI_DEV_FB_RESERVED": self.reserved,
        }.get(fam, 0)

    def labels(self, fam):
        lab = [("gpu", str(self.index)), ("UUID", self.uuid),
               ("pci_bus_id", "00000000:%s:00.0" % PCI[self.index]),
               ("device", "nvidia%d" % self.index), ("modelName", MODEL),
               ("Hostname", self.node), ("DCGM_FI_DRIVER_VERSION", DRIVER)]
        if self.workload is not None:
            lab.append(("container", self.workload[2]))
        if fam == "DCGM_FI_DEV_XID_ERRORS":
            lab += [("err_code", str(self.xid[0])), ("err_msg", self.xid[1])]
        if self.workload is not None:
            lab += [("namespace", self.workload[0]), ("pod", self.workload[1])]
        return lab


def make_nodes(n, rng):
    with open(os.path.join(FIX, "nodelist.json")) as f:
        src = json.load(f)
    proto = next(it for it in src["items"] if it["metadata"]["name"] == "gpu-node-b")
    items = []
    zones = ["dc1-a", "dc1-b", "dc1-c"]
    for i in range(n):
        it = copy.deepcopy(proto)
        name = node_name(i)
        md = it["metadata"]
        md["name"] = name
        md["uid"] = str(uuid.uuid5(NS, name))
        md["resourceVersion"] = str(48000000 + i)
        md["labels"]["kubernetes.io/hostname"] = name
        md["labels"]["topology.kubernetes.io/zone"] = zones[i % 3]
        md["labels"]["nvidia.com/gfd.timestamp"] = str(1786347063 + rng.randint(0, 86400))
        for a in it["status"].get("addresses", []):
            if a.get("type") == "InternalIP":
                a["address"] = "10.%d.%d.%d" % (20 + i // 65536, (i // 256) % 256, i % 256)
            elif a.get("type") == "Hostname":
                a["address"] = name
        items.append(it)
    return {"kind": "NodeList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "48213402"}, "items": items}


def fmt_labels(lab):
    return ",".join('%s="%s"' % (k, v) for k, v in lab)


def write_page(path, cards):
    with open(path, "w") as f:
        for fam, typ, hlp in FAMILIES:
            f.write("# HELP %s %s\n# TYPE %s %s\n" % (fam, hlp, fam, typ))
            f.write("".join("%s{%s} %s\n" % (fam, fmt_labels(c.labels(fam)), c.value(fam))
                            for c in cards))


def write_prom(path, cards, ts):
    result = []
    for c in cards:
        m = {"DCGM_FI_DRIVER_VERSION": DRIVER, "Hostname": c.node, "UUID": c.uuid,
             "__name__": "DCGM_FI_DEV_GPU_UTIL", "container": "nvidia-dcgm-exporter",
             "device": "nvidia%d" % c.index, "endpoint": "gpu-metrics", "gpu": str(c.index),
             "instance": "10.%d.%d.%d:9400" % (20 + c.node_index // 65536,
                                               (c.node_index // 256) % 256, c.node_index % 256),
             "job": "nvidia-dcgm-exporter", "modelName": MODEL, "namespace": "gpu-operator",
             "pci_bus_id": "00000000:%s:00.0" % PCI[c.index],
             "pod": "nvidia-dcgm-exporter-" + c.node[-5:], "service": "nvidia-dcgm-exporter"}
        if c.workload is not None:
            m["exported_container"] = c.workload[2]
            m["exported_namespace"] = c.workload[0]
            m["exported_pod"] = c.workload[1]
        result.append({"metric": dict(sorted(m.items())), "value": [ts, str(c.util)]})
    body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    with open(path, "w") as f:
        json.dump(body, f, separators=(",", ":"))


def write_args(path, pod, names=None, items=None):
    if names is not None:
        args = {"Pod": pod, "Nodes": None, "NodeNames": names}
    else:
        args = {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}
    with open(path, "w") as f:
        json.dump(args, f, separators=(",", ":"))


def write_config(path, port):
    with open(os.path.join(ROOT, "config", "demo.json")) as f:
        cfg = json.load(f)
    cfg["server"]["port"] = port
    cfg["server"]["address"] = "127.0.0.1"
    cfg["server"]["debug_endpoints"] = False
    cfg["log"]["level"] = "warn"
    cfg["sources"]["files"] = {"nodes": "nodes.json", "metrics": ["dcgm.prom"],
                               # steady state: the 5,000-node page is not re-read during a run
                               "refresh_s": 3600}
    # samples are read once at start; keep them fresh for the whole run
    cfg["metrics"]["max_age_s"] = {k: 86400 for k in cfg["metrics"]["max_age_s"]}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=18888)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prom", action="store_true", help="also write prom-query-util.json")
    ap.add_argument("--prom-only", action="store_true", help="write only prom-query-util.json")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    cards = [Card(rng, i, c) for i in range(a.nodes) for c in range(CARDS)]
    if a.prom or a.prom_only:
        write_prom(os.path.join(a.out, "prom-query-util.json"), cards, 1787566530.481)
    if a.prom_only:
        return
    nl = make_nodes(a.nodes, rng)
    with open(os.path.join(a.out, "nodes.json"), "w") as f:
        json.dump(nl, f, separators=(",", ":"))
    write_page(os.path.join(a.out, "dcgm.prom"), cards)
    write_config(os.path.join(a.out, "config.json"), a.port)
    with open(os.path.join(FIX, "pod-gpu.json")) as f:
        excl = json.load(f)
    with open(os.path.join(ROOT, "config", "demo", "pod-shared.json")) as f:
        shared = json.load(f)
    names = [node_name(i) for i in range(a.nodes)]
    write_args(os.path.join(a.out, "args-names-excl.json"), excl, names=names)
    write_args(os.path.join(a.out, "args-names-shared.json"), shared, names=names)
    write_args(os.path.join(a.out, "args-nodes-excl.json"), excl, items=nl["items"])
    write_args(os.path.join(a.out, "args-nodes-shared.json"), shared, items=nl["items"])


if __name__ == "__main__":
    main()
