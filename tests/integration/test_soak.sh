#!/usr/bin/env bash
# Issue 6: bounded soak under flapping upstreams (see soak_test.py); 60 s unless GX_SOAK_SECONDS.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/soak_test.py" "$1"
