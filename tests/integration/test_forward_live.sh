#!/usr/bin/env bash
# Issue 19: replicas forward kube-scheduler's calls to one leader (see forward_live_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/forward_live_test.py" "$1"
