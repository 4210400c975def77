"""scripts/openb-variant.py builds the issue 20 variants of the openb trace as its docstring says:
the asked share of sharing / multi-GPU / pinned / CPU-only pods, the documented row counts,
every row a copy of an input row, the same bytes for the same seed, and exit 2 with a message
for a bad argument. Runs on the real traces when $GX_TRACES (or /work/shared/traces/openb) has
them, else on a small generated trace. Usage: openb_variant_test.py"""
import csv
import io
import math
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "openb-variant.py")
COLS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
        "pod_phase", "creation_time", "deletion_time", "scheduled_time"]
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(traces, *args):
    return subprocess.run([sys.executable, SCRIPT, *args, "--traces", traces],
                          capture_output=True, text=True, timeout=60)


def rows_of(text):
    return list(csv.DictReader(io.StringIO(text)))


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def kind(p):
    n, m = int(p["num_gpu"]), int(p["gpu_milli"])
    return "cpu" if n == 0 else ("share" if m < 1000 else "one") if n == 1 else "multi"


def milli(p):
    n, m = int(p["num_gpu"]), int(p["gpu_milli"])
    return m if n == 1 and m < 1000 else n * 1000


def body(p):
    """A row without its name (the variants rename every row)."""
    return tuple(p.get(c, "") or "" for c in COLS[1:])


def pct(rows, k):
    gpu = sum(milli(p) for p in rows if kind(p) != "cpu")
    return 100 * sum(milli(p) for p in rows if kind(p) == k) / gpu


def generate(d):
    """A small trace of the openb shape: nodes of three models, pods of every kind, 10 % pinned."""
    r = random.Random(3)
    with open(os.path.join(d, "openb_node_list_gpu_node.csv"), "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        for i in range(60):
            model, g = [("G2", 8), ("T4", 2), ("V100M16", 4)][i % 3]
            f.write(f"n{i:03d},{96000 if g == 8 else 32000},{393216 if g == 8 else 131072},"
                    f"{g},{model}\n")
    rows = []
    for i in range(800):
        n, m = r.choice([(0, 0)] * 3 + [(1, 250), (1, 500), (1, 750)] * 3 + [(1, 1000)] * 9
                        + [(2, 1000), (4, 1000), (8, 1000)])
        spec = r.choice(["T4", "G2", "V100M16|G2"]) if n and r.random() < 0.1 else ""
        rows.append([f"openb-pod-{i:04d}", r.choice([2000, 8000]), r.choice([4096, 16384]), n, m,
                     spec, "LS", "Running", i, i + 100, i])
    for name, pinned in (("default", False), ("gpuspec20", True)):
        with open(os.path.join(d, f"openb_pod_list_{name}.csv"), "w") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(COLS)
            for row in rows:
                w.writerow(row if pinned else row[:5] + [""] + row[6:])


def main():
    tmp = tempfile.mkdtemp()
    traces = os.environ.get("GX_TRACES", "/work/shared/traces/openb")
    real = os.path.exists(os.path.join(traces, "openb_pod_list_gpuspec20.csv"))
    if not real:
        traces = tmp
        generate(tmp)
    print(f"openb_variant: {'the openb traces in ' + traces if real else 'a generated trace'}")
    default = load(os.path.join(traces, "openb_pod_list_default.csv"))
    spec20 = load(os.path.join(traces, "openb_pod_list_gpuspec20.csv"))
    inputs = {body(p) for p in default}
    out = {}
    for v in ("gpushare80", "gpushare100", "multigpu50", "cpu050", "gpuspec33"):
        r = run(traces, v)
        check(r.returncode == 0, f"{v}: exit {r.returncode}: {r.stderr}")
        check(r.stderr.startswith(v + ": "), f"{v}: summary line on stderr: {r.stderr!r}")
        out[v] = rows_of(r.stdout)
        o = out[v]
        check(list(o[0].keys()) == COLS if o else False, f"{v}: the eleven columns")
        check([p["name"] for p in o] == [f"openb-pod-{i:04d}" for i in range(len(o))],
              f"{v}: rows renamed in order")
        if v != "gpuspec33":
            check(all(body(p) in inputs for p in o), f"{v}: every row is a default row")

    cpu_in = [body(p) for p in default if kind(p) == "cpu"]
    gpu_in = [p for p in default if kind(p) != "cpu"]
    # gpushareP: count kept, CPU-only pods the default's (first, in order), P % of the GPU shares
    for v, want in (("gpushare80", 80), ("gpushare100", 100)):
        o = out[v]
        check(len(o) == len(default), f"{v}: {len(o)} rows, want {len(default)} (count kept)")
        check([body(p) for p in o[:len(cpu_in)]] == cpu_in, f"{v}: CPU-only pods kept first")
        check(sum(kind(p) != "cpu" for p in o) == len(gpu_in), f"{v}: GPU pod count kept")
        check(abs(pct(o, "share") - want) < 0.5, f"{v}: shares ask {pct(o, 'share'):.2f} % of GPU")
    check(all(kind(p) in ("cpu", "share") for p in out["gpushare100"]), "gpushare100: only shares")

    # multigpuP: the default in place, multi-GPU copies appended to the next 100 GPUs past P %
    o = out["multigpu50"]
    check([body(p) for p in o[:len(default)]] == [body(p) for p in default],
          "multigpu50: the default's rows first, unchanged")
    added = o[len(default):]
    check(added and all(kind(p) == "multi" for p in added), "multigpu50: only multi-GPU appended")
    tot = sum(milli(p) for p in default)
    multi = sum(milli(p) for p in default if kind(p) == "multi")
    target = math.ceil((0.5 * tot - multi) / 0.5 / 100000) * 100000
    got = sum(milli(p) for p in added)
    check(target <= got < target + milli(added[-1]), f"multigpu50: {got} appended, target {target}")
    check(pct(o, "multi") >= 50, f"multigpu50: multi-GPU asks {pct(o, 'multi'):.2f} %")

    # cpuP: GPU pods in place, half the CPU-only pods, a subset in their order
    o = out["cpu050"]
    check([body(p) for p in o if kind(p) != "cpu"] == [body(p) for p in gpu_in],
          "cpu050: every GPU pod kept in order")
    kept = [body(p) for p in o if kind(p) == "cpu"]
    check(len(kept) == round(len(cpu_in) / 2), f"cpu050: {len(kept)} CPU-only pods")
    it = iter(cpu_in)
    check(all(k in it for k in kept), "cpu050: CPU-only pods a subset in default order")

    # gpuspecP: gpuspec20 plus pins drawn from its own, only on unpinned GPU pods, 33 % pinned
    o = out["gpuspec33"]
    check(len(o) == len(spec20), "gpuspec33: count kept")
    pins = {p["gpu_spec"] for p in spec20 if p["gpu_spec"]}
    ngpu = sum(kind(p) != "cpu" for p in spec20)
    npin = sum(bool(p["gpu_spec"]) for p in o)
    check(npin == math.ceil(0.33 * ngpu - 1e-9), f"gpuspec33: {npin} of {ngpu} GPU pods pinned")
    changed = [(a, b) for a, b in zip(spec20, o) if body(a) != body(b)]
    check(all(not a["gpu_spec"] and b["gpu_spec"] in pins and kind(b) != "cpu"
              and body(a)[:4] == body(b)[:4] for a, b in changed),
          "gpuspec33: only unpinned GPU pods gain a pin, one of gpuspec20's")
    check(len(changed) == npin - sum(bool(p["gpu_spec"]) for p in spec20),
          "gpuspec33: nothing else changed")

    # --pins-by-kind: a newly pinned share gets a pin gpuspec20 gives shares (all of ours fit)
    share_pins = {p["gpu_spec"] for p in spec20 if p["gpu_spec"] and kind(p) == "share"}
    o = rows_of(run(traces, "gpuspec33", "--pins-by-kind").stdout)
    new = [b for a, b in zip(spec20, o) if not a["gpu_spec"] and b["gpu_spec"]]
    check(new and all(p["gpu_spec"] in share_pins for p in new if kind(p) == "share"),
          "gpuspec33 --pins-by-kind: shares get share pins")

    if real:  # the row counts the docs give for seed 7, and the given files' multigpu targets
        want = {"gpushare80": 8152, "gpushare100": 8152, "multigpu50": 9046, "cpu050": 7608,
                "gpuspec33": 8152}
        for v, n in want.items():
            check(len(out[v]) == n, f"{v}: {len(out[v])} rows, documented {n}")
        for v, gpus in (("multigpu20", 1000), ("multigpu30", 2000)):
            given = load(os.path.join(traces, f"openb_pod_list_{v}.csv"))
            check(sum(milli(p) for p in given[len(default):]) == gpus * 1000,
                  f"given {v}: {gpus} GPUs appended (the rule's evidence)")
            o = rows_of(run(traces, v).stdout)
            got = sum(milli(p) for p in o[len(default):])
            check(gpus * 1000 <= got < gpus * 1000 + 8000, f"{v}: {got} appended, given {gpus}k")
            o = rows_of(run(traces, v, "--multi-step", "1000").stdout)
            got = sum(milli(p) for p in o[len(default):])
            check(gpus * 1000 <= got < gpus * 1000 + 8000, f"{v} --multi-step 1000: {got}")

    # deterministic by seed
    path = os.path.join(tmp, "o.csv")
    b, c = run(traces, "cpu050", "--seed", "7", "-o", path), run(traces, "cpu050", "--seed", "8")
    with open(path, newline="") as f:
        again = list(csv.DictReader(f))
    check(b.returncode == 0 and b.stdout == "" and again == out["cpu050"],
          "-o writes; the default seed is 7 and the output is deterministic")
    check(rows_of(c.stdout) != out["cpu050"], "another seed gives another sample")

    # --help, and a bad argument is an error that says what is wrong
    h = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True)
    check(h.returncode == 0 and "gpushare80" in h.stdout, "--help")
    for args, say in ((["gpushare"], "unknown variant"), (["gpushare101"], "out of range"),
                      (["multigpu100"], "below 100"), (["multigpu50", "--multi-step", "0"], ">= 1"),
                      (["cpu050", "--seed", "x"], "invalid int"), (["bogus50"], "unknown variant")):
        r = run(traces, *args)
        check(r.returncode == 2 and say in r.stderr and r.stdout == "",
              f"{args}: exit {r.returncode}, stderr {r.stderr!r}")
    r = subprocess.run([sys.executable, SCRIPT, "cpu050", "--traces", os.path.join(tmp, "none")],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "cannot read" in r.stderr, f"a missing trace: {r.stderr!r}")
    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    with open(os.path.join(bad, "openb_pod_list_default.csv"), "w") as f:
        f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,one,0\n")
    r = run(bad, "cpu050")
    check(r.returncode == 2 and ":2: column num_gpu" in r.stderr, f"a bad row: {r.stderr!r}")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
