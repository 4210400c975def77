#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Helm chart charts/gpu-extender: `helm lint`, `helm template` compared
# object by object with the kustomize manifests (default values, monitoring
# on, scheduler off), the chart's config.json through `gpu-extender
# --check-config`, and the exact differences non-default values make.
#   tests/integration/test_helm.sh PATH/TO/gpu-extender
# Helm is built from its Go module by tests/helm/build.sh (cached under
# $HOME/.cache/gpu-extender/helm-<version>/; a cold build takes minutes, so
# scripts/test.sh should run tests/helm/build.sh before ctest). Kustomize is
# the kubectl tests/k8s/build.sh built, when it exists (see helm_test.py).
# Needs /usr/bin/python3 with PyYAML. The last line reads "N passed, M failed".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ $# -lt 1 ]; then
    echo "usage: $0 PATH/TO/gpu-extender" >&2
    exit 2
fi
bin=$1
case $bin in
/*) ;;
*) bin=$PWD/$bin ;;
esac

py=/usr/bin/python3
if ! "$py" -c 'import yaml' 2>/dev/null; then
    echo "FAIL: $py cannot import yaml (install python3-yaml)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

if ! helm=$("$root/tests/helm/build.sh"); then
    echo "FAIL: tests/helm/build.sh could not build helm" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

exec "$py" "$here/helm_test.py" --root "$root" --helm "$helm" --binary "$bin"
