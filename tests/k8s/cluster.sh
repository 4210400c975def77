#!/usr/bin/env bash
# The e2e control plane on loopback (see docs/testing.md):
#   tests/k8s/cluster.sh up   [STATE_DIR] [--extender BUILD/gpu-extender] [--https] [--generate N]
#   tests/k8s/cluster.sh env  [STATE_DIR]     print KUBECONFIG / PATH exports and the ports
#   tests/k8s/cluster.sh down [STATE_DIR]     stop every process it started
# STATE_DIR defaults to $GX_K8S_DIR, else /tmp/gx-k8s. `up` builds or reuses the cached
# binaries (tests/k8s/build.sh), starts etcd, kube-apiserver, the fake kubelet with the demo
# GPU nodes, Prometheus on the fixture dcgm pages and, with --extender, gpu-extender under its
# shipped ServiceAccount and RBAC and kube-scheduler with the shipped configuration.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
shift || true
dir=${GX_K8S_DIR:-/tmp/gx-k8s}
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then dir=$1; shift; fi
case "$cmd" in
    up)
        mkdir -p "$dir"
        exec /usr/bin/python3 "$here/rig.py" up "$dir" "$@" ;;
    down)
        /usr/bin/python3 "$here/rig.py" down "$dir"
        rm -rf "$dir" ;;
    env)
        exec /usr/bin/python3 "$here/rig.py" env "$dir" ;;
    *)
        sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
