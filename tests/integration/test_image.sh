#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/image.sh, the one-command image build and push, against stub builders on PATH (no
# real docker, podman or buildah is needed or used): the build and push commands each
# builder gets, --no-push, --which, the refusal of a reference without a tag or in capitals,
# and a builder that does not answer `info` (a docker client without its daemon).
#   tests/integration/test_image.sh PATH/TO/gpu-extender     (the binary is not used)
# The last line reads "N passed, M failed".
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/calls
# A builder stub: records its arguments; `info` fails when $STUB_NO_DAEMON is set.
for b in docker podman buildah; do
    cat >"$tmp/$b" <<STUB
#!/bin/sh
[ "\$1" = info ] && { [ -z "\${STUB_NO_DAEMON:-}" ]; exit; }
echo "$b \$*" >>"$log"
STUB
    chmod +x "$tmp/$b"
done

passed=0
failed=0
check() { # check NAME COND-EXIT-STATUS DETAIL
    if [ "$2" -eq 0 ]; then
        echo "ok   $1"
        passed=$((passed + 1))
    else
        echo "FAIL $1: $3"
        failed=$((failed + 1))
    fi
}
run() { # run BUILDER ARGS...: sets $rc, $out and $calls
    local b=$1
    shift
    : >"$log"
    rc=0
    out=$(PATH="$tmp:$PATH" GX_BUILDER=$b "$root/scripts/image.sh" "$@" 2>&1) || rc=$?
    calls=$(cat "$log")
}

ref=ghcr.io/acme/gpu-extender:0.1.0
for b in docker podman buildah; do
    run "$b" "$ref"
    want="$b build -t $ref -f Dockerfile .
$b push $ref"
    [ "$rc" -eq 0 ] && [ "$calls" = "$want" ]
    check "$b: build and push $ref" $? "exit $rc, calls: $calls; $out"
done

run podman --no-push registry.local:5000/gpu-extender:dev
[ "$rc" -eq 0 ] && [ "$calls" = "podman build -t registry.local:5000/gpu-extender:dev -f Dockerfile ." ]
check "--no-push builds only" $? "exit $rc, calls: $calls"

run buildah --which
[ "$rc" -eq 0 ] && [ "$out" = buildah ]
check "--which prints the builder" $? "exit $rc: $out"

for bad in gpu-extender ghcr.io/Acme/gpu-extender:1 "gpu-extender:bad tag"; do
    run docker "$bad"
    [ "$rc" -eq 2 ] && [ -z "$calls" ] && [[ $out == *"want [REGISTRY/]NAME:TAG"* ]]
    check "refuses '$bad' before building" $? "exit $rc, calls: $calls; $out"
done

: >"$log"
rc=0
out=$(PATH="$tmp:$PATH" GX_BUILDER=docker STUB_NO_DAEMON=1 "$root/scripts/image.sh" "$ref" 2>&1) || rc=$?
[ "$rc" -eq 1 ] && [ ! -s "$log" ] && [[ $out == *"no usable container builder"* ]]
check "a docker without its daemon is no builder" $? "exit $rc: $out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
