#!/usr/bin/env bash
# filter.shortlist_nodes on the real binary (see shortlist_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/shortlist_test.py" "$1"
