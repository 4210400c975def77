#!/usr/bin/env bash
# Issue 22: explain reads YAML and workloads, warns, and refuses what it cannot answer
# (see explain_cli_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/explain_cli_test.py" "$1"
