#!/usr/bin/env bash
# Build gpu-extender with AddressSanitizer + UndefinedBehaviorSanitizer and
# run every test: Criterion unit tests per module and the integration tests
# (real binary, real Prometheus, the fake API server).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GX_BUILD_DIR:-build-asan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DGX_SANITIZE=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j2 "$@"
