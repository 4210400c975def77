#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Static checks of manifests/ (YAML, kustomizations, RBAC, security context,
# scheduler configuration, examples), plus `gpu-extender --check-config` on
# the config.json embedded in the ConfigMap.
#   tests/integration/test_manifests.sh PATH/TO/gpu-extender
# Needs /usr/bin/python3 with PyYAML (python3-yaml). Exits non-zero on any
# failure; the last line reads "N passed, M failed".
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
need_yaml

exec "$py" "$here/check_manifests.py" --root "$root" --binary "$bin"
