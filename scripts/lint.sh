#!/usr/bin/env bash
# Static checks from STYLE.md: clang-format, clang-tidy (.clang-tidy), cppcheck
# and a grep for banned functions. Exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
c_files=$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h' 'bench/*.c' 'fuzz/*.c')

echo "lint: clang-format"
clang-format --dry-run -Werror $c_files || fail=1

echo "lint: banned functions"
if grep -nE '\b(sprintf|vsprintf|strcat|strcpy|gets|strtok|atoi|atol)\s*\(' $(git ls-files 'src/*.c' 'src/*.h'); then
    echo "lint: banned function used (see STYLE.md)"
    fail=1
fi

echo "lint: cppcheck"
cppcheck --error-exitcode=1 --enable=warning,portability,performance --inline-suppr --quiet \
    $(printf -- '-I src/%s ' base codec decide io server sim) --std=c11 -D__GNUC__ src/ || fail=1

echo "lint: clang-tidy"
build=${GX_LINT_BUILD:-build-lint}
cmake -S . -B "$build" -DGX_TESTS=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
tidy_out=$(mktemp)
git ls-files 'src/*.c' | xargs -P"$(nproc)" -n4 clang-tidy -p "$build" --quiet >"$tidy_out" 2>/dev/null || true
if grep -E 'warning:|error:' "$tidy_out"; then
    echo "lint: clang-tidy findings"
    fail=1
fi
rm -f "$tidy_out"

[ "$fail" -eq 0 ] && echo "lint: clean"
exit "$fail"
