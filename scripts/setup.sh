#!/usr/bin/env bash
# Creates .venv (if missing) and installs Ember with the given extras, e.g. `scripts/setup.sh dev,bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${extras:+[$extras]}"
