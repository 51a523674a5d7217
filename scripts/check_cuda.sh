#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: installs the cuda extra (CuPy) beside the test and benchmark extras, then
# runs what verifies the cuda backend: the conformance suite, the cuda, autocast and GradScaler tests, the main
# example on cuda, and the benchmark against PyTorch CUDA (written to benchmarks/results/cuda.md). Stops, saying
# why, if cuda is unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev,bench,examples,cuda
.venv/bin/python -m ember.backends
.venv/bin/python -c "import sys, ember; sys.exit(0 if ember.cuda.is_available() else 'cuda unavailable: ' + ember.cuda.unavailable_reason())"
export EMBER_HYPOTHESIS_PROFILE="${EMBER_HYPOTHESIS_PROFILE:-quick}"
.venv/bin/python -m pytest -p no:cacheprovider -q --pyargs ember.conformance --backend cuda
.venv/bin/python -m pytest -p no:cacheprovider -q tests/test_cuda_module.py tests/test_cuda_probe.py tests/test_arraykernels.py \
    tests/test_autocast.py tests/test_grad_scaler.py
.venv/bin/python examples/train_digits.py --device cuda --epochs 3
.venv/bin/python benchmarks/run.py --device cuda --only overhead,gemm,training --write benchmarks/results/cuda.md
