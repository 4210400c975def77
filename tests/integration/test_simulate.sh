#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpu-extender simulate` end to end on a slice of the openb trace (or a
# generated one when the trace is not there): exit status, the --json keys,
# sane invariants (allocation grows, stays <= 100 %, fgd >= count-only), the
# SVG, and a bad CSV row named by file, line and column. Not timed.
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
grep -q "seed 1 done" "$tmp/fgd.err" || { echo "FAIL: no progress line"; exit 1; }
grep -q "<polyline" "$tmp/fgd.svg" || { echo "FAIL: no plot"; exit 1; }
python3 - "$tmp/fgd.json" "$tmp/co.json" <<'PY'
import json, sys
f, c = (json.load(open(p)) for p in sys.argv[1:3])
keys = ["trace", "policy", "seeds", "arrived_pct", "alloc_pct", "frag_pct", "failed_pods", "pods"]
assert list(f) == keys, list(f)
assert f["seeds"] == [1, 2] and f["arrived_pct"] == list(range(131)), f["seeds"]
a = f["alloc_pct"]
assert len(a) == 131 and all(0 <= x <= 100 for x in a), a
assert all(a[i] <= a[i + 1] + 1e-9 for i in range(130)), "allocation must only grow"
assert f["pods"] > 0 and 0 <= f["failed_pods"] <= f["pods"]
assert a[100] >= c["alloc_pct"][100], (a[100], c["alloc_pct"][100])
print(f"fgd {a[100]:.2f} >= count-only {c['alloc_pct'][100]:.2f} at 100 % arrived")
PY

printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1000,2,T4\nn2,1000,x,2,T4\n' > "$tmp/bad.csv"
if "$bin" simulate --nodes "$tmp/bad.csv" --pods "$tmp/pods.csv" 2> "$tmp/bad.err"; then
    echo "FAIL: a bad row was accepted"; exit 1
fi
grep -q "bad.csv:3: column memory_mib" "$tmp/bad.err" || { cat "$tmp/bad.err"; exit 1; }
echo "simulate: all checks passed"
