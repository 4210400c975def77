#!/usr/bin/env bash
# Issue 5: ConfigMap live reload and HTTPS (see reload_tls_test.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/reload_tls_test.py" "$1"
