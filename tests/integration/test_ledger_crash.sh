#!/usr/bin/env bash
# Issue 4: kill -9 at each step of bind, restart, check the ledger (see ledger_crash_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/ledger_crash_test.py" "$1"
