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

. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
need_yaml

if ! helm=$("$root/tests/helm/build.sh"); then
    echo "FAIL: tests/helm/build.sh could not build helm" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

exec "$py" "$here/helm_test.py" --root "$root" --helm "$helm" --binary "$bin"
