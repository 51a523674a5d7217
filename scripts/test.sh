#!/usr/bin/env bash
# Sets up .venv and runs every test: the conformance suite for each bundled backend (those not
# available here skip, and say why) and for the template plugin in examples/, then the project tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev,bench,examples,opencl,tensorboard,onnx,distributed,nvrtc
scripts/ensure_opencl.sh
export EMBER_HYPOTHESIS_PROFILE="${EMBER_HYPOTHESIS_PROFILE:-quick}"
.venv/bin/python -m ember.backends
# one pytest-xdist worker per core: the conformance tests are independent, and PoCL compiles kernels per process;
# an unavailable backend's tests all skip (saying why), which one process collects faster than a pool of workers
for backend in cuda opencl cpu; do
    workers=(-n auto)
    .venv/bin/python -c "import sys, ember.conformance.target as t; sys.exit(not t.resolve('$backend').available)" \
        || workers=(-p no:xdist)
    .venv/bin/python -m pytest -p no:cacheprovider -q "${workers[@]}" --pyargs ember.conformance --backend "$backend"
done
# the template plugin, installed from its folder as a third-party backend would be
.venv/bin/python -m pip install --quiet ./examples/template_backend
.venv/bin/python -m pytest -p no:cacheprovider -q -n auto --pyargs ember.conformance --backend template
# the wheel, installed into a clean venv, works outside the checkout
scripts/check_wheel.sh
# the project tests on pytest-xdist workers too: cold (an empty PoCL cache), one process took 17 of CI's minutes
.venv/bin/python -m pytest -p no:cacheprovider -q -n auto --durations=30 tests
