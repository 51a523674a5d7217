"""The cuda backend's reason for being unavailable, for each way CUDA can be missing.

A machine without a GPU shows one of these for real (checked through ``ember.backends.available()`` in
test_cuda_module.py); the others are produced by stand-in ``cupy`` packages put on the path of one child
process (the test process never sees them): one that is not there (its import fails as a missing module
would, also where CuPy is installed), one whose import fails as a missing CUDA library makes it fail, one
whose runtime finds no device, one whose driver is too old, one that counts zero GPUs. Each must give its
own message.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_RUNTIME_FAILING = """
class CUDARuntimeError(RuntimeError):
    def __init__(self, status, text):
        self.status = status
        super().__init__(text)

def getDeviceCount():
    raise CUDARuntimeError({status}, "{text}")

def runtimeGetVersion():
    return 12090
"""

_NO_GPUS = """
def getDeviceCount():
    return 0

def runtimeGetVersion():
    return 12090
"""

_CHILD = """
import importlib, json, sys
from ember.backends.cuda.probe import probe
reasons = {}
for name, path in json.loads(sys.argv[1]).items():
    sys.path.insert(0, path)
    for module in [m for m in sys.modules if m == "cupy" or m.startswith("cupy.")]:
        del sys.modules[module]
    importlib.invalidate_caches()
    reasons[name] = probe()[2]
    sys.path.remove(path)
print(json.dumps(reasons))
"""


def _fake_cupy(root, runtime_source: str = "", init_source: str = "") -> str:
    package = root / "cupy"
    (package / "cuda").mkdir(parents=True)
    (package / "__init__.py").write_text(init_source or "from . import cuda\n__version__ = '0.0-test'\n")
    (package / "cuda" / "__init__.py").write_text("from . import runtime\n")
    (package / "cuda" / "runtime.py").write_text(runtime_source)
    return str(root)


@pytest.fixture(scope="module")
def reasons(tmp_path_factory) -> dict:
    fakes = {
        # stands for no CuPy at all, also where one is installed (the nvrtc extra brings CuPy to CI)
        "missing": _fake_cupy(tmp_path_factory.mktemp("missing"), init_source=(
            "raise ModuleNotFoundError(\"No module named 'cupy'\", name='cupy')\n")),
        "libraries": _fake_cupy(tmp_path_factory.mktemp("libraries"), init_source=(
            "raise ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')\n")),
        "driver": _fake_cupy(tmp_path_factory.mktemp("driver"), _RUNTIME_FAILING.format(
            status=35, text="cudaErrorInsufficientDriver: CUDA driver version is insufficient")),
        "no_device": _fake_cupy(tmp_path_factory.mktemp("no_device"), _RUNTIME_FAILING.format(
            status=100, text="cudaErrorNoDevice: no CUDA-capable device is detected")),
        "zero": _fake_cupy(tmp_path_factory.mktemp("zero"), _NO_GPUS),
    }
    result = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(fakes)], capture_output=True, text=True,
                            timeout=120, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_cupy_missing(reasons):
    assert reasons["missing"].startswith("CuPy is not installed") and "ember[cuda]" in reasons["missing"]


def test_cuda_libraries_missing_at_import(reasons):
    assert reasons["libraries"].startswith("CuPy is installed but its CUDA libraries could not be loaded")
    assert "libcudart.so.12" in reasons["libraries"]


def test_driver_missing(reasons):
    assert reasons["driver"].startswith("CUDA libraries missing: the NVIDIA driver is missing")
    assert "cudaErrorInsufficientDriver" in reasons["driver"]


def test_no_device(reasons):
    assert reasons["no_device"].startswith("no CUDA device") and "cudaErrorNoDevice" in reasons["no_device"]


def test_zero_devices(reasons):
    assert reasons["zero"] == "no CUDA device: the CUDA runtime reports 0 GPUs"
