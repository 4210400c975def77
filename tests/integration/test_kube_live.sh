#!/usr/bin/env bash
# Nodes from the API server: the real binary against the fake API server over
# TLS with a bearer token, through every injectable fault (see kube_live_test.py).
set -euo pipefail
command -v openssl >/dev/null || { echo "openssl not installed"; exit 1; }
exec /usr/bin/python3 "$(dirname "$0")/kube_live_test.py" "$1"
