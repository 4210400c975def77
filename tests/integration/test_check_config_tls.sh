#!/usr/bin/env bash
# --check-config rejects what start-up would; reloads keep the last good config; TLS 1.2+ only.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/check_config_tls_test.py" "$1"
