#!/usr/bin/env bash
# Issue 19: a pod refused for capacity bookings hold is requeued as soon as a
# booking goes (see requeue_live_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/requeue_live_test.py" "$1"
