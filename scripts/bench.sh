#!/usr/bin/env bash
# Build a Release tree with the benchmarks (build-bench), then measure
# gpu-extender on synthetic clusters of 100, 1,000 and 5,000 GPU nodes x 8
# cards: latency and requests/s of filter and prioritize (NodeNames and full
# Nodes mode, concurrency 1 and 16), peak RSS, the Prometheus merge and the
# snapshot build. Writes bench/results/results.{json,md} and
# docs/perf-latency.svg. Takes about 5 minutes on 2 cores.
#   GX_BENCH_SIZES=100,1000,5000  GX_BENCH_DURATION=3  GX_BENCH_DATA=/tmp/gx-bench-data
# `scripts/bench.sh ratios` prints only the two cost ratios (full Nodes
# 5,000/1,000 and prioritize/filter at 5,000 names; bench/ratios.py, ~2 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GX_BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGX_BENCH=ON -DGX_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
if [ "${1:-}" = ratios ]; then
    exec python3 bench/ratios.py --build "$build" --data "${GX_BENCH_DATA:-/tmp/gx-bench-data}" \
        --rounds "${GX_BENCH_ROUNDS:-5}"
fi
exec python3 bench/run.py --build "$build" --out bench/results \
    --sizes "${GX_BENCH_SIZES:-100,1000,5000}" --rss-sizes "${GX_BENCH_RSS_SIZES:-250,2500}" \
    --duration "${GX_BENCH_DURATION:-3}" --data "${GX_BENCH_DATA:-/tmp/gx-bench-data}"
