#!/usr/bin/env bash
# HTTP abuse of the real binary: slowloris, many connections, oversized and
# hostile bodies, header abuse, pipelining (see abuse_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/abuse_test.py" "$1"
