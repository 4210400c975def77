#!/usr/bin/env bash
# Build (or reuse) the Helm CLI the chart tests use, from its Go module
# helm.sh/helm/v3 pinned in tests/helm/go.mod, and print the binary's path.
#
#   tests/helm/build.sh            # prints e.g. /root/.cache/gpu-extender/helm-v3.22.0/helm
#   HELM=$(tests/helm/build.sh)
#
# The binary is cached outside the clone, by version:
#   ${GX_CACHE_DIR:-$HOME/.cache/gpu-extender}/helm-<version>/helm
# next to a stamp holding the sha256 of go.mod, go.sum and this script; a
# missing binary or a stamp that differs (go.mod/go.sum edited, e.g. a bump)
# rebuilds. Concurrent callers serialise on a lock file, so a CI run and a
# test started by hand never build twice at once. Build output goes to
# stderr; stdout carries only the path.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "build.sh: go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }

# The pinned versions come from go.mod itself, so a bump is one `go get -tool`.
version=$(awk '$1 == "helm.sh/helm/v3" { print $2 }' "$here/go.mod")
clientgo=$(awk '$1 == "k8s.io/client-go" { print $2 }' "$here/go.mod")
[ -n "$version" ] || { echo "build.sh: helm.sh/helm/v3 not in $here/go.mod" >&2; exit 1; }
[ -n "$clientgo" ] || { echo "build.sh: k8s.io/client-go not in $here/go.mod" >&2; exit 1; }

cache=${GX_CACHE_DIR:-$HOME/.cache/gpu-extender}/helm-$version
bin=$cache/helm
stamp=$cache/stamp
want=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1)

fresh() { [ -x "$bin" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }

if fresh; then echo "$bin"; exit 0; fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if fresh; then echo "$bin"; exit 0; fi   # another caller built it meanwhile

# Same link-time settings as Helm's own Makefile: the version string, and the
# Kubernetes version lint and `helm template` assume, derived from client-go
# (v0.X.Y -> 1.X), so .Capabilities.KubeVersion matches the pinned release.
kminor=$(echo "$clientgo" | sed -E 's/^v0\.([0-9]+)\..*/\1/')
ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=$version"
ldflags+=" -X helm.sh/helm/v3/internal/version.metadata="
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1"
ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kminor"
ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1"
ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kminor"

echo "build.sh: building helm $version (client-go $clientgo) into $cache ..." >&2
start=$(date +%s)
tmp="$cache/helm.tmp.$$"
trap 'rm -f "$tmp"' EXIT
(cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false -trimpath" \
    go build -ldflags "$ldflags" -o "$tmp" helm.sh/helm/v3/cmd/helm) >&2
mv -f "$tmp" "$bin"
echo "$want" >"$stamp"
echo "build.sh: helm $version built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
