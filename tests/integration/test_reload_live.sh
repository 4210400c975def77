#!/usr/bin/env bash
# Every live config key is applied by a reload, one probe per key (see reload_live_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/reload_live_test.py" "$1"
