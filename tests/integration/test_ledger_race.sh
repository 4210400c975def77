#!/usr/bin/env bash
# Issue 4: two replicas race for the same slots (see ledger_race_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/ledger_race_test.py" "$1"
