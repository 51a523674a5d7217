"""The ``cudnn`` frontend package for the cuDNN host tests, or a skip where it is not installed."""
from __future__ import annotations

import importlib

import pytest


def frontend():
    """The ``cudnn`` frontend package, or a skip (install ``nvidia-cudnn-frontend`` to run these)."""
    try:
        module = importlib.import_module("cudnn")
    except Exception as exc:  # noqa: BLE001 -- absent, or present but broken: both mean skip
        pytest.skip(f"nvidia-cudnn-frontend is not importable: {type(exc).__name__}: {exc}")
    if not hasattr(module, "pygraph"):
        pytest.skip("the importable 'cudnn' is not NVIDIA's frontend")
    return module
