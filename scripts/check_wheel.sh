#!/usr/bin/env bash
# Builds Ember's wheel from the files a fresh clone would have, installs it with the opencl extra into a
# clean venv, and checks it from outside the checkout: every file of the ember package was installed
# (modules, py.typed, .pyi stubs, data), `python -m ember.backends` reports cpu available and opencl as
# the checkout's .venv does (scripts/ensure_opencl.sh sets up PoCL where needed), and ops run on opencl
# with the same values as on cpu. Any problem exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout="$PWD"
work="$(mktemp -d "${TMPDIR:-/tmp}/ember-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Tracked and new (not ignored) files only: no stale build/ or egg-info can leak into the wheel.
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard \
    | tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$work/src"
.venv/bin/python -m pip wheel --quiet --no-deps -w "$work/dist" "$work/src"
wheel=("$work"/dist/ember-*.whl)
echo "built ${wheel[0]##*/} ($(du -k "${wheel[0]}" | cut -f1) KiB)"

.venv/bin/python -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "${wheel[0]}[opencl]"

expected_opencl="$(.venv/bin/python -m ember.backends | sed -n 's/^opencl: //p')"
cd "$work"  # -I also keeps the script's folder and PYTHON* variables off the import path
"$work/venv/bin/python" -I "$checkout/scripts/check_installed.py" "$work/src" "$expected_opencl"
