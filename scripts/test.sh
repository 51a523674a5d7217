#!/usr/bin/env bash
# Sets up .venv and runs every test: the conformance suite for each bundled backend (those not
# available here skip, and say why), then the project tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev,bench,examples
export EMBER_HYPOTHESIS_PROFILE="${EMBER_HYPOTHESIS_PROFILE:-quick}"
.venv/bin/python -m ember.backends
for backend in cuda opencl cpu; do
    .venv/bin/python -m pytest -p no:cacheprovider -q --pyargs ember.conformance --backend "$backend"
done
.venv/bin/python -m pytest -p no:cacheprovider tests
