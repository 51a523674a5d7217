#!/usr/bin/env bash
# Sets up .venv and runs the main job: training the digits CNN on the CPU backend
# (extra arguments go to the script, e.g. --device opencl --epochs 10 --resume).
set -euo pipefail
cd "$(dirname "$0")/.."
extras=examples
case " $* " in
    *" opencl"*|*"--device=opencl"*) extras=examples,opencl ;;
    *" cuda"*|*"--device=cuda"*) extras=examples,cuda ;;
esac
scripts/setup.sh "$extras"
[[ "$extras" == *opencl* ]] && scripts/ensure_opencl.sh
.venv/bin/python examples/train_digits.py "$@"
