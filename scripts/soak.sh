#!/usr/bin/env bash
# The long soak (10 minutes by default) on the ASan+UBSan build; not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GX_BUILD_DIR:-build-asan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DGX_SANITIZE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target gpu-extender
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export GX_SOAK_SECONDS=${GX_SOAK_SECONDS:-600}
exec /usr/bin/python3 tests/integration/soak_test.py "$build/gpu-extender"
