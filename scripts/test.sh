#!/usr/bin/env bash
# Sets up .venv and runs every test: the project tests, then the conformance suite for each backend
# that is available here (the others report why they are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev,bench
export EMBER_HYPOTHESIS_PROFILE="${EMBER_HYPOTHESIS_PROFILE:-quick}"
.venv/bin/python -m ember.backends
.venv/bin/python -m pytest -p no:cacheprovider tests
for backend in cpu cuda opencl; do
    .venv/bin/python -m pytest -p no:cacheprovider -q --pyargs ember.conformance --backend "$backend"
done
