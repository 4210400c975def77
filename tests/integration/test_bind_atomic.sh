#!/usr/bin/env bash
# Issue 10: racing replicas never leave a pod naming another node's cards;
# deleted pods free their slot on the watch event (see bind_atomic_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/bind_atomic_test.py" "$1"
