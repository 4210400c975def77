#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 20: scripts/openb-variant.py builds the variants of the openb trace that are not given
# (see openb_variant_test.py). Does not use the binary given as $1.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/openb_variant_test.py"
