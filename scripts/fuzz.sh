#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan+UBSan) and run each one for
# SECONDS (default 60) on a scratch copy of its seed corpus in fuzz/corpus/.
# Fails on any crash, leak, timeout or sanitizer report; the reproducer is
# kept under $build/fuzz-artifacts/. Installs nothing: clang and the fuzzer
# runtime come from `GX_DEPS_DEV=1 scripts/install-deps.sh`.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#   GX_FUZZ_BUILD_DIR=build-fuzz   build directory
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
shift || true
case "$secs" in
'' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
build=${GX_FUZZ_BUILD_DIR:-build-fuzz}

# Largest input per target: big enough for a realistic document of its kind.
declare -A max_len=(
    [fuzz_extender_args]=1048576 [fuzz_bind_args]=4096 [fuzz_pod]=65536
    [fuzz_prom]=262144 [fuzz_expo]=262144 [fuzz_watch_event]=262144
    [fuzz_config]=65536 [fuzz_ledger]=65536 [fuzz_node_list]=1048576 [fuzz_manifest]=65536
)
declare -A dict=([fuzz_expo]=fuzz/expo.dict)
all=(fuzz_extender_args fuzz_bind_args fuzz_pod fuzz_prom fuzz_expo fuzz_watch_event
     fuzz_config fuzz_ledger fuzz_node_list fuzz_manifest)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
    [ -n "${max_len[$t]:-}" ] || { echo "unknown fuzz target: $t" >&2; exit 2; }
done

if ! command -v clang >/dev/null 2>&1; then
    echo "clang not found: run GX_DEPS_DEV=1 scripts/install-deps.sh" >&2
    exit 2
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n); int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' |
    clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
    echo "clang cannot link libFuzzer: run GX_DEPS_DEV=1 scripts/install-deps.sh (libclang-rt-dev)" >&2
    exit 2
fi

CC=clang cmake -S . -B "$build" -DGX_FUZZ=ON -DGX_TESTS=OFF -DGX_SANITIZE=OFF >/dev/null
cmake --build "$build" --target fuzz -j"$(nproc)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

total=0
failed=()
summary=()
for t in "${targets[@]}"; do
    corpus="$work/$t"
    mkdir -p "$corpus"
    cp -R "fuzz/corpus/$t/." "$corpus/" 2>/dev/null || true
    log="$work/$t.log"
    echo "== $t: ${secs}s" >&2
    rc=0
    "$build/fuzz/$t" "$corpus" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 \
        -max_len="${max_len[$t]}" -dict="${dict[$t]:-fuzz/json.dict}" -print_final_stats=1 \
        -artifact_prefix="$artifacts/$t-" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    execs=${execs:-0}
    total=$((total + execs))
    if [ "$rc" -ne 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: ' "$log"; then
        failed+=("$t")
        summary+=("$(printf '%-20s %12s executions  FAILED (exit %s)' "$t" "$execs" "$rc")")
        echo "---- $t failed; log tail:" >&2
        # The report, from the first line a sanitizer, libFuzzer or a check wrote.
        sed -n '/^==[0-9]*==\|^fuzz check failed\|runtime error:\|^INFO: .*leak\|ERROR: libFuzzer/,$p' \
            "$log" | grep -v '^#[0-9]' | head -n 120 >&2
        for a in "$artifacts/$t-"*; do
            [ -e "$a" ] || continue
            echo "reproducer $a (base64):" >&2
            base64 -w0 "$a" | head -c 4096 >&2
            echo >&2
        done
    else
        summary+=("$(printf '%-20s %12s executions  ok' "$t" "$execs")")
    fi
done

echo
printf '%s\n' "${summary[@]}"
printf '%-20s %12s executions  %d targets, %d failed\n' total "$total" "${#targets[@]}" \
    "${#failed[@]}"
[ ${#failed[@]} -eq 0 ]
