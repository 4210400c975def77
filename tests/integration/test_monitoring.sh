#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# manifests/monitoring/ (ServiceMonitor, PrometheusRule, Grafana dashboard) and
# docs/metrics.md checked against the live /metrics of the real binary, plus
# promtool syntax checks and alert unit tests (see check_monitoring.py).
#   tests/integration/test_monitoring.sh PATH/TO/gpu-extender
# Needs /usr/bin/python3 with PyYAML (python3-yaml); promtool is optional.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
cd "$here"
exec /usr/bin/python3 check_monitoring.py "$bin"
