#!/usr/bin/env bash
# Makes sure the opencl backend has a working device here. The `opencl` extra brings PyOpenCL with
# the PoCL wheel from PyPI; that PoCL (3.0-rc2, LLVM 14) cannot compile for CPUs newer than its LLVM
# (it fails with "unknown target CPU 'generic'" on AMD Zen 5, for example). When no device works and
# this is a Debian/Ubuntu machine where we may install packages, add the distribution's PoCL ICD,
# which the ICD loader then lists first. Never fails: without a device the opencl suite skips and says why.
set -uo pipefail
cd "$(dirname "$0")/.."
probe() { .venv/bin/python -c "import ember, sys; s = ember.backends.available().get('opencl', 'missing'); print('opencl:', s); sys.exit(s != 'available')"; }
probe && exit 0
if command -v apt-get >/dev/null 2>&1; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo_cmd="sudo -n"
    if [ "$(id -u)" -eq 0 ] || [ -n "$sudo_cmd" ]; then
        echo "installing the distribution's PoCL (pocl-opencl-icd) ..."
        { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq pocl-opencl-icd; } \
            >/tmp/ember-apt.log 2>&1 || echo "apt-get failed; see /tmp/ember-apt.log"
        probe
    fi
fi
exit 0
