"""Export a module, run it in onnxruntime, compare with Ember: shared by the ONNX tests."""
from __future__ import annotations

import io

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def export_bytes(module, args, **options) -> bytes:
    buffer = io.BytesIO()
    ember.onnx.export(module, args, buffer, **options)
    return buffer.getvalue()


def run_onnx(data: bytes, feeds: dict) -> list:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in feeds.items()})


def ember_outputs(module, args) -> list:
    with ember.no_grad():
        result = module(*args)
    flat = []

    def walk(tree):
        if isinstance(tree, (list, tuple)):
            for item in tree:
                walk(item)
        elif isinstance(tree, ember.Tensor):
            flat.append(tree.numpy())
    walk(result)
    return flat


def check_export(module, args: tuple, run_args: tuple | None = None, *, input_names=None, dynamic_axes=None,
                 atol: float = 1e-5, rtol: float = 1e-5, **options) -> float:
    """Export ``module(*args)``, run the ONNX model on ``run_args`` (default: ``args``) and compare with Ember's
    result on them; returns the largest absolute difference."""
    module.eval() if hasattr(module, "eval") else None
    names = input_names or [f"input_{i}" for i in range(len(args))]
    data = export_bytes(module, args, input_names=names, dynamic_axes=dynamic_axes, **options)
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    run_args = args if run_args is None else run_args
    got = run_onnx(data, dict(zip(names, run_args)))
    want = ember_outputs(module, run_args)
    assert len(got) == len(want)
    worst = 0.0
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype == np.bool_ or g.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, atol=atol, rtol=rtol)
            if g.size:
                worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
    return worst


class Fn(ember.nn.Module):
    """A module around a function of tensors, for exporting single ops."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)
