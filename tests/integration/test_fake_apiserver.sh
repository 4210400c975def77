#!/usr/bin/env bash
# Self-test of the fake Kubernetes API server used by the integration tests.
# Called by ctest as: bash test_fake_apiserver.sh <gpu-extender binary> (the binary is not needed here).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
exec "$py" "$here/fake_apiserver_selftest.py"
