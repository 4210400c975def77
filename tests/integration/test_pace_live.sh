#!/usr/bin/env bash
# Issue 19: filter waits while binds wait at the gate (see pace_live_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/pace_live_test.py" "$1"
