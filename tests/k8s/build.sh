#!/usr/bin/env bash
# Build (or reuse) the e2e control plane: kube-apiserver, kube-scheduler and kubectl of the
# Kubernetes release pinned in tests/k8s/go.mod, an etcd around go.etcd.io/etcd/server/v3/embed
# and the fake kubelet. Binaries are cached outside the clone, by version:
#   ${GX_K8S_CACHE:-$HOME/.cache/gpu-extender}/k8s-<version>/
# with a stamp holding a hash of go.mod, go.sum, the Go sources, the Go version and this
# script, so a stale cache rebuilds. Prints the binary directory on stdout; logs on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "build.sh: go not found (expected /usr/local/go/bin)" >&2; exit 1; }
# go.sum is committed: never let the build rewrite go.mod.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=local

version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")
[ -n "$version" ] || { echo "build.sh: no k8s.io/kubernetes version in go.mod" >&2; exit 1; }
cache=${GX_K8S_CACHE:-$HOME/.cache/gpu-extender}
out="$cache/k8s-$version"
bins=(kube-apiserver kube-scheduler kubectl etcd fake-kubelet)

stamp=$( (cd "$here" && go version && sha256sum go.mod go.sum build.sh &&
          find . -name '*.go' -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1)

fresh() {
    [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] || return 1
    for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
}

mkdir -p "$cache"
exec 9>"$cache/k8s-$version.lock"
flock 9
if fresh; then
    echo "$out"
    exit 0
fi

echo "build.sh: building Kubernetes $version control plane into $out (cold: tens of minutes on 2 cores)" >&2
t0=$(date +%s)
tmp="$cache/k8s-$version.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
major=${version#v}; major=${major%%.*}
minor=${version#v*.}; minor=${minor%%.*}
vpkg=k8s.io/component-base/version
ldflags="-s -w"
for p in $vpkg k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
# One invocation, so the packages shared by the binaries compile once.
(cd "$here" && go build -trimpath -ldflags="$ldflags" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl \
    ./cmd/etcd ./cmd/fake-kubelet) >&2
for b in "${bins[@]}"; do [ -x "$tmp/$b" ] || { echo "build.sh: $b missing after build" >&2; exit 1; }; done
echo "$stamp" > "$tmp/stamp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "build.sh: built in $(( $(date +%s) - t0 )) s" >&2
echo "$out"
