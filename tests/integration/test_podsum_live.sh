#!/usr/bin/env bash
# The all-pods watch: a CPU-only pod on a GPU node enters and leaves the
# extender's view of the node (see podsum_live_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/podsum_live_test.py" "$1"
