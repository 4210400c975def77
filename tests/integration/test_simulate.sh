#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpu-extender simulate` end to end on a slice of the openb trace (or a
# generated one when the trace is not there): exit status, the --json keys,
# sane invariants (allocation grows, stays <= 100 %, fgd >= count-only), one
# JSON shape for one policy or several, the SVG, the deployments, gangs, and a bad
# CSV row named by file, line and column. Not timed.
#   tests/integration/test_simulate.sh PATH/TO/gpu-extender
set -euo pipefail

bin=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
traces=${GX_TRACES:-/work/shared/traces/openb}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -f "$traces/openb_node_list_gpu_node.csv" ]; then
    head -301 "$traces/openb_node_list_gpu_node.csv" > "$tmp/nodes.csv"
    head -2001 "$traces/openb_pod_list_default.csv" > "$tmp/pods.csv"
else
    python3 - "$tmp" <<'PY'
import random, sys
d = sys.argv[1]; r = random.Random(1)
with open(d + "/nodes.csv", "w") as f:
    f.write("sn,cpu_milli,memory_mib,gpu,model\n")
    for i in range(300):
        g = 8 if i % 3 == 0 else 2
        f.write(f"n{i:03d},{96000 if g == 8 else 32000},{393216 if g == 8 else 131072},{g},G{i % 2}\n")
with open(d + "/pods.csv", "w") as f:
    f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n")
    for i in range(2000):
        m = r.choice([250, 500, 1000, 1000, 750, 300, 0, 2000, 8000])
        n, g = (0, 0) if m == 0 else (1, m) if m < 1000 else (m // 1000, 1000)
        f.write(f"p{i:04d},{r.choice([2000, 4000, 8000])},{r.choice([4096, 16384])},{n},{g}\n")
PY
fi

sim() { "$bin" simulate --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --seeds 1-2 "$@"; }

sim --config "$root/config/simulate/openb.json" --policy fgd --json "$tmp/fgd.json" \
    --svg "$tmp/fgd.svg" > "$tmp/fgd.txt" 2> "$tmp/fgd.err"
sim --config "$root/config/simulate/openb.json" --policy count-only --json "$tmp/co.json" \
    > /dev/null 2>&1
sim --config "$root/config/simulate/openb.json" --policy count-only,fgd --json "$tmp/both.json" \
    --svg "$tmp/both.svg" > /dev/null 2>&1
grep -q "seed 1 done" "$tmp/fgd.err" || { echo "FAIL: no progress line"; exit 1; }
# progress within a seed: only when asked (stderr is a file here, not a terminal)
if grep -q " pods$" "$tmp/fgd.err"; then echo "FAIL: progress lines unasked"; exit 1; fi
sim --seeds 1 --config "$root/config/simulate/openb.json" --policy fgd --progress 0 \
    > /dev/null 2> "$tmp/progress.err"
grep -Eq "^simulate: fgd seed 1: 1,024/[0-9],[0-9]{3} pods$" "$tmp/progress.err" \
    || { cat "$tmp/progress.err"; echo "FAIL: --progress 0 printed no line"; exit 1; }
grep -q "<polyline" "$tmp/fgd.svg" || { echo "FAIL: no plot"; exit 1; }
grep -q "of 2 seeds:" "$tmp/both.svg" || { echo "FAIL: the legend says no seed count"; exit 1; }
python3 - "$tmp/fgd.json" "$tmp/co.json" "$tmp/both.json" <<'PY'
import json, sys
docs = [json.load(open(p)) for p in sys.argv[1:4]]
for d in docs:  # one shape for one policy or several
    assert list(d) == ["trace", "seeds", "arrived_pct", "series"], list(d)
    assert d["seeds"] == [1, 2] and d["arrived_pct"] == list(range(131)), d["seeds"]
    for e in d["series"]:
        assert list(e) == ["policy", "alloc_pct", "frag_pct", "failed_pods", "pods"], list(e)
f, c = docs[0]["series"][0], docs[1]["series"][0]
assert [e["policy"] for e in docs[2]["series"]] == ["count-only", "fgd"]
assert docs[2]["series"][1] == f and docs[2]["series"][0] == c, "each policy as when run alone"
a = f["alloc_pct"]
assert len(a) == 131 and all(0 <= x <= 100 for x in a), a
assert all(a[i] <= a[i + 1] + 1e-9 for i in range(130)), "allocation must only grow"
assert f["pods"] > 0 and 0 <= f["failed_pods"] <= f["pods"]
assert a[100] >= c["alloc_pct"][100], (a[100], c["alloc_pct"][100])
print(f"fgd {a[100]:.2f} >= count-only {c['alloc_pct'][100]:.2f} at 100 % arrived")
PY

# Deployments: no --policy/--config runs the shipped default install, and each
# --deployment runs exactly what its manifests deploy, the same as the low-level
# flags spelled out by hand (run from the repository root: it reads manifests/).
cd "$root"
sim --seeds 1 --json "$tmp/none.json" > /dev/null 2> "$tmp/none.err"
grep -q "deployment default; extender config manifests/config.json" "$tmp/none.err" \
    || { cat "$tmp/none.err"; echo "FAIL: no options must simulate the default install"; exit 1; }
sim --seeds 1 --deployment default --json "$tmp/dep-default.json" > /dev/null 2>&1
python3 - manifests/config.json "$tmp/all.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["simulate"] = {"scheduler": {"fit_weight": 0, "balanced_weight": 0, "extender_weight": 5,
                               "percentage_of_nodes_to_score": 100}}
json.dump(c, open(sys.argv[2], "w"))
PY
sim --seeds 1 --config "$tmp/all.json" --policy fgd --cpu-pods-too --sees-all-pods \
    --json "$tmp/hand-default.json" > /dev/null 2>&1
sim --seeds 1 --deployment gpu-pods-only --json "$tmp/dep-gpu.json" > /dev/null 2> "$tmp/dep-gpu.err"
sim --seeds 1 --config manifests/overlays/gpu-pods-only/config.json --policy fgd --sees-all-pods \
    --percentage-of-nodes-to-score 100 --json "$tmp/hand-gpu.json" > /dev/null 2>&1
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def run(name):
    j = json.load(open(f"{d}/{name}.json"))["series"][0]
    return j["policy"], j["alloc_pct"], j["frag_pct"], j["failed_pods"]
assert run("none") == run("dep-default"), "no options = --deployment default"
assert run("none")[0] == "fgd", "the shipped score.policy runs"
assert run("dep-default") == run("hand-default"), "default (all pods) = its flags by hand"
assert run("dep-gpu") == run("hand-gpu"), "gpu-pods-only = its flags by hand"
assert run("dep-gpu") != run("dep-default"), "the two installs place differently"
print(f"deployments: default {run('none')[1][100]:.2f}, gpu-pods-only {run('dep-gpu')[1][100]:.2f}")
PY
grep -q "deployment default; extender config manifests/config.json; profile LeastAllocated, fit \
weight 0, balanced weight 0, extender weight 5, 100 % of nodes to score; all pods through the \
extender; all-pods watch on" "$tmp/none.err" || { cat "$tmp/none.err"; exit 1; }
grep -q "deployment gpu-pods-only; extender config manifests/overlays/gpu-pods-only/config.json; \
profile LeastAllocated, fit weight 1, balanced weight 1, extender weight 5, 100 % of nodes to \
score; GPU pods only through the extender; all-pods watch on" "$tmp/dep-gpu.err" \
    || { cat "$tmp/dep-gpu.err"; exit 1; }
"$bin" simulate --help | grep -q -- "--deployment default|gpu-pods-only" || { echo "FAIL: help"; exit 1; }
if sim --deployment default --manifests "$tmp/none" 2> "$tmp/nodir.err"; then
    echo "FAIL: a missing manifests directory was accepted"; exit 1
fi
grep -q "give --manifests DIR" "$tmp/nodir.err" || { cat "$tmp/nodir.err"; exit 1; }
cd - > /dev/null

# gangs: all or nothing, never partially bound; a bad spec is a usage error (exit 2)
sim --config "$root/config/simulate/openb.json" --policy fgd --gangs 2,4 --json "$tmp/gang.json" \
    > "$tmp/gang.txt" 2>&1
python3 - "$tmp/gang.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["series"][0]["gangs"]
assert g["spec"] == "2,4" and g["total"] > 0, g
assert g["placed"] + g["failed"] == g["total"] and g["partially_bound"] == 0, g
print(f"gangs: {g['placed']} of {g['total']} placed, none partially bound")
PY
rc=0
sim --gangs 1,4 > /dev/null 2> "$tmp/gang.err" || rc=$?
[ "$rc" = 2 ] && grep -q "gang sizes must be integers from 2 to 64" "$tmp/gang.err" \
    || { cat "$tmp/gang.err"; echo "FAIL: a bad --gangs spec must exit 2 (got $rc)"; exit 1; }

printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1000,2,T4\nn2,1000,x,2,T4\n' > "$tmp/bad.csv"
if "$bin" simulate --nodes "$tmp/bad.csv" --pods "$tmp/pods.csv" 2> "$tmp/bad.err"; then
    echo "FAIL: a bad row was accepted"; exit 1
fi
grep -q "bad.csv:3: column memory_mib" "$tmp/bad.err" || { cat "$tmp/bad.err"; exit 1; }
echo "simulate: all checks passed"
