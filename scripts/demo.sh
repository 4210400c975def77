#!/usr/bin/env bash
# Build gpu-extender, run it on the embedded demo cluster (config/demo.json)
# and show one scheduling decision of each kind. Leaves it running in the
# foreground when GX_DEMO_FOREGROUND=1.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGX_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
bin=build/gpu-extender
port=8888
"$bin" --config config/demo.json 2>demo.log &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
echo "== gpu-extender $("$bin" --version | cut -d' ' -f2) on the demo cluster (http://127.0.0.1:$port)"
echo "== filter: a pod asking for one whole GPU, NodeNames mode"
curl -fsS -XPOST -H 'Content-Type: application/json' \
    --data-binary @tests/fixtures/extender-filter-args-nodecache.json \
    "http://127.0.0.1:$port/gpu-extender/filter"; echo
echo "== prioritize: the same pod"
curl -fsS -XPOST -H 'Content-Type: application/json' \
    --data-binary @tests/fixtures/extender-filter-args-nodecache.json \
    "http://127.0.0.1:$port/gpu-extender/prioritize"; echo
echo "== explain: why each node fits or not, for a shared (time-sliced) pod"
"$bin" explain --config config/demo.json --pod config/demo/pod-shared.json
echo "== explain: a 4-GPU pod"
"$bin" explain --config config/demo.json --pod config/demo/pod-multi-gpu.json
if [ "${GX_DEMO_FOREGROUND:-0}" = 1 ]; then
    echo "== serving until Ctrl-C (logs in demo.log)"
    wait $pid
fi
