#!/usr/bin/env bash
# Issue 2 end to end: the real binary on the demo cluster (see serve_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/serve_test.py" "$1"
