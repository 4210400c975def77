#!/usr/bin/env bash
# Build (or reuse) the e2e control plane: kube-apiserver, kube-scheduler and kubectl of the
# Kubernetes release pinned in tests/k8s/go.mod, an etcd around go.etcd.io/etcd/server/v3/embed,
# the fake kubelet and the fault proxy (cmd/faultproxy). Binaries are cached outside the clone,
# by version:
#   ${GX_K8S_CACHE:-$HOME/.cache/gpu-extender}/k8s-<version>/
# with a stamp holding a hash of go.mod, go.sum, the Go sources, the Go version and this
# script, so a stale cache rebuilds. Prints the binary directory on stdout; logs on stderr.
#
#   build.sh [MODULE_DIR]
# With MODULE_DIR (tests/k8s-next/build.sh passes its own), the Kubernetes release of
# MODULE_DIR/go.mod gives kube-scheduler only; kube-apiserver, etcd, kubectl and the fake kubelet
# are symlinks to the pinned rig in $GX_K8S_BIN (built here when unset), so a second release
# costs only the binary whose behaviour differs. (v1.38.0-beta.0's kube-apiserver needs
# k8s.io/apiextensions-api, which the Go module proxy does not serve.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mod=$(cd "${1:-$here}" && pwd)
export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "build.sh: go not found (expected /usr/local/go/bin)" >&2; exit 1; }
# go.sum is committed: never let the build rewrite go.mod.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly -buildvcs=false"
# A module that needs a newer Go than the machine's names it in GX_K8S_TOOLCHAIN (its build.sh).
export GOTOOLCHAIN=${GX_K8S_TOOLCHAIN:-local}

version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
[ -n "$version" ] || { echo "build.sh: no k8s.io/kubernetes version in go.mod" >&2; exit 1; }
cache=${GX_K8S_CACHE:-$HOME/.cache/gpu-extender}
out="$cache/k8s-$version"
bins=(kube-apiserver kube-scheduler kubectl etcd fake-kubelet faultproxy)
pkgs=(k8s.io/kubernetes/cmd/kube-scheduler)
linked=()
if [ "$mod" = "$here" ]; then
    pkgs+=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./cmd/etcd ./cmd/fake-kubelet
          ./cmd/faultproxy)
    base=
else
    linked=(kube-apiserver kubectl etcd fake-kubelet faultproxy)
    base=${GX_K8S_BIN:-$(env -u GX_K8S_TOOLCHAIN "$here/build.sh")}
fi

# Contents only, never where the clone is: a fresh clone in another folder reuses the cache.
stamp=$( (cd "$mod" && go version && echo "$base" && sha256sum go.mod go.sum build.sh &&
          sha256sum < "$here/build.sh" &&
          find . -name '*.go' -print0 | sort -z | xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1)

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
(cd "$mod" && go build -trimpath -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}") >&2
for b in "${linked[@]}"; do ln -s "$base/$b" "$tmp/$b"; done
for b in "${bins[@]}"; do [ -x "$tmp/$b" ] || { echo "build.sh: $b missing after build" >&2; exit 1; }; done
echo "$stamp" > "$tmp/stamp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "build.sh: built in $(( $(date +%s) - t0 )) s" >&2
echo "$out"
