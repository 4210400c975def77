#!/usr/bin/env bash
# Build gpu-extender with AddressSanitizer + UndefinedBehaviorSanitizer and
# run every test: Criterion unit tests per module and the integration tests
# (real binary, real Prometheus, the fake API server), and the end-to-end tests
# against the real control plane (tests/e2e/: kube-apiserver, etcd, kube-scheduler of
# the release pinned in tests/k8s/go.mod, built once and cached by tests/k8s/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GX_BUILD_DIR:-build-asan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DGX_SANITIZE=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# The e2e control plane: reused from ~/.cache/gpu-extender/k8s-<version>/ when its stamp
# matches, else built from the Go module proxy (cold: about 12 minutes on 2 cores).
export PATH="/usr/local/go/bin:$PATH"
k8s_t0=$(date +%s)
GX_K8S_BIN=$(tests/k8s/build.sh)
export GX_K8S_BIN
echo "test.sh: e2e control plane in $GX_K8S_BIN ($(( $(date +%s) - k8s_t0 )) s)"
# The pre-release kube-scheduler for e2e_preempt_hidden_next (tests/k8s-next/build.sh: cached
# the same way, next to the binaries above; cold: see docs/testing.md).
k8s_t0=$(date +%s)
GX_K8S_NEXT_BIN=$(tests/k8s-next/build.sh)
export GX_K8S_NEXT_BIN
echo "test.sh: next kube-scheduler in $GX_K8S_NEXT_BIN ($(( $(date +%s) - k8s_t0 )) s)"
# Helm for the chart tests (tests/helm/build.sh: cached like the control plane, ~4 min cold).
tests/helm/build.sh >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j2 "$@"
