#!/usr/bin/env bash
# Issue 12: the utilization slope from a real Prometheus (see trend_live_test.py).
set -euo pipefail
command -v prometheus >/dev/null || { echo "prometheus not installed (scripts/install-deps.sh)"; exit 1; }
exec /usr/bin/python3 "$(dirname "$0")/trend_live_test.py" "$1"
