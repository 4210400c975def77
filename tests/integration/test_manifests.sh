#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Static checks of manifests/ (YAML, kustomizations, RBAC, security context,
# scheduler configuration, examples), plus `gpu-extender --check-config` on
# the config.json embedded in the ConfigMap.
#   tests/integration/test_manifests.sh PATH/TO/gpu-extender
# Needs /usr/bin/python3 with PyYAML (python3-yaml). Exits non-zero on any
# failure; the last line reads "N passed, M failed".
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

exec "$py" "$here/check_manifests.py" --root "$root" --binary "$bin"
