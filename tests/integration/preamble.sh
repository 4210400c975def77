# SPDX-License-Identifier: Apache-2.0
# Sourced by the test_*.sh wrappers of the Python checks after `set -euo pipefail`:
# sets $here (this folder), $root (the repository) and $bin (the binary given as $1,
# made absolute), or exits 2 with a usage line. need_yaml sets $py=/usr/bin/python3,
# or fails the test when it cannot import PyYAML.
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

need_yaml() {
    py=/usr/bin/python3
    if ! "$py" -c 'import yaml' 2>/dev/null; then
        echo "FAIL: $py cannot import yaml (install python3-yaml)" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
}
