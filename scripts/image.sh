#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the gpu-extender image from the Dockerfile and push it, in one command, with whichever
# container builder is installed (docker, else podman, else buildah; GX_BUILDER picks one):
#
#   scripts/image.sh REGISTRY/NAME:TAG            build and push, e.g. ghcr.io/acme/gpu-extender:0.1.0
#   scripts/image.sh --no-push NAME:TAG           build only
#   scripts/image.sh --which                      print the builder, exit 1 when there is none
#
# Then point the install at it: the chart's image.registry/image.repository/image.tag, or
# newName/newTag under images: in manifests/extender/kustomization.yaml (docs/install.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
    sed -n '3,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# The builder to use: $GX_BUILDER if set, else the first of docker, podman, buildah that is on
# PATH and answers `info` (a docker client without a reachable daemon cannot build).
builder() {
    local b
    for b in ${GX_BUILDER:-docker podman buildah}; do
        case $b in
            docker | podman | buildah) ;;
            *) echo "image.sh: GX_BUILDER=$b: must be docker, podman or buildah" >&2; return 1 ;;
        esac
        if command -v "$b" >/dev/null && "$b" info >/dev/null 2>&1; then
            echo "$b"
            return 0
        fi
    done
    return 1
}

push=1
case ${1:-} in
    --which) builder; exit ;;
    --no-push) push=0; shift ;;
    -h | --help | "") usage ;;
esac
[ $# -eq 1 ] || usage
ref=$1
# [registry[:port]/]path:tag, the tag required (an image without one would be :latest).
if ! [[ $ref =~ ^([a-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._/-]+[a-z0-9]+)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]]; then
    echo "image.sh: $ref: want [REGISTRY/]NAME:TAG in lowercase, with a tag (e.g. ghcr.io/acme/gpu-extender:0.1.0)" >&2
    exit 2
fi
if ! b=$(builder); then
    echo "image.sh: no usable container builder: install docker (with its daemon running), podman or buildah" >&2
    exit 1
fi

echo "image.sh: $b build -t $ref ." >&2
"$b" build -t "$ref" -f Dockerfile .
if [ "$push" -eq 1 ]; then
    echo "image.sh: $b push $ref" >&2
    "$b" push "$ref"
fi
echo "image.sh: $ref$([ "$push" -eq 1 ] && echo " pushed" || echo " built")" >&2
