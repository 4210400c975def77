#!/usr/bin/env bash
# Issue 19: replicas forward to the leader over TLS, trusting their shared key (see forward_tls_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/forward_tls_test.py" "$1"
