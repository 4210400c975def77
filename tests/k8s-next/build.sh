#!/usr/bin/env bash
# Build (or reuse) the NEXT control plane: the kube-scheduler of the Kubernetes
# pre-release in this directory's go.mod, whose DefaultPreemption asks preempt-capable extenders
# about candidates with no in-tree victims (the hidden-resource preemption e2e). kube-apiserver,
# etcd, kubectl and the fake kubelet are the pinned rig's ($GX_K8S_BIN, else tests/k8s/build.sh). Cached like
# the pinned rig in ${GX_K8S_CACHE:-$HOME/.cache/gpu-extender}/k8s-<version>/; prints that dir.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Its go.mod says go 1.27.0; the Go proxy serves that toolchain (~76 MB, fetched once).
export GX_K8S_TOOLCHAIN=go1.27.3
exec "$here/../k8s/build.sh" "$here"
