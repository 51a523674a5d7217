#!/usr/bin/env bash
# Sets up .venv and runs the main job on the CPU backend (pass --device to pick another).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/python examples/quickstart.py "$@"
