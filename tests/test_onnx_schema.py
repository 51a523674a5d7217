"""Every op of the schema, exported on its conformance samples and run in onnxruntime.

An op with an ``onnx`` lowering, or a composite made of such ops, must export and match Ember's result on
every sample; any other op must refuse with ``UnsupportedOperatorError`` naming an op, or, where its definition
reads tensor values to size its work (a polynomial's degree, a bag's offsets), with the exporter's error saying so. Random ops are left
out: their values cannot match.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import ember
from ember.dispatch import OPS
from ember.dispatch.schema.dtypes import bfloat16, bool_, float32, int64
from ember.dispatch.schema.errors import EmberError
from ember.dispatch.ops import F
from ember.conformance.cases import accepts
from ember.conformance.make import Maker
from ember.conformance.samples import fixed_samples
from ember.onnx import OnnxExporterError, UnsupportedOperatorError

from onnx_check import export_bytes, run_onnx

_DTYPES = (float32, int64, bool_)
_CPU = types.SimpleNamespace(device=ember.device("cpu"), dtypes=ember.dispatch.dtypes.ALL_DTYPES)
# Ops whose result is not a value function of their inputs (random draws) or that write into an argument.
_LEFT_OUT = {op.name for op in OPS.values() if op.category == "random" or op.mutates}
_UNINITIALIZED = {"empty", "empty_like"}  # shapes and dtypes are compared, values are not


class _OpCall(ember.nn.Module):
    """Calls one op with the sample's tensors as the module's inputs, everything else fixed."""

    def __init__(self, op, sample) -> None:
        super().__init__()
        self.op, self.sample = op, sample

    def forward(self, *tensors):
        it = iter(tensors)

        def fill(v):
            if isinstance(v, ember.Tensor):
                return next(it)
            if isinstance(v, list) and any(isinstance(x, ember.Tensor) for x in v):
                return [fill(x) for x in v]
            return v
        args = [fill(a) for a in self.sample.args]
        kwargs = {k: fill(v) for k, v in self.sample.kwargs.items()}
        return getattr(F, self.op.name)(*args, **kwargs)


def _tensors(tree) -> list:
    if isinstance(tree, ember.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in _tensors(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in _tensors(item)]
    return []


def _cases() -> list:
    cases = []
    for op in OPS.values():
        if op.name in _LEFT_OUT:
            continue
        for dt in _DTYPES:
            if accepts(op, dt, _CPU.dtypes):
                cases.append(pytest.param(op, dt, id=f"{op.name}-{dt.name}"))
    return cases


@pytest.mark.parametrize("op, dtype", _cases())
def test_op_exports_and_matches_onnxruntime(op, dtype):
    samples = fixed_samples(op, Maker(_CPU, dtype, seed=7), dtype)
    if not samples:
        pytest.skip(f"{op.name} has no samples for {dtype.name}")
    refused = []
    for sample in samples:
        module = _OpCall(op, sample)
        inputs = _tensors((sample.args, sample.kwargs))
        inputs = [t.contiguous() for t in inputs]
        try:
            with ember.no_grad():
                want = _tensors(module(*inputs))
        except (EmberError, TypeError):  # a sample the op itself refuses (reducing an empty dim without identity)
            continue
        if not want:
            with pytest.raises(OnnxExporterError, match="no tensor"):
                export_bytes(module, tuple(inputs))
            continue
        if any(w.dtype is bfloat16 for w in want):
            continue  # onnxruntime's Python API cannot return bfloat16 arrays
        names = [f"x{i}" for i in range(len(inputs))]
        try:
            data = export_bytes(module, tuple(inputs), input_names=names)
        except UnsupportedOperatorError as error:
            assert "op '" in str(error) or ":" in str(error), str(error)
            refused.append(f"{sample.note or sample.args}: {error}")
            continue
        except OnnxExporterError as error:  # the op's definition sizes its work from tensor values (loop counts)
            assert "depends on tensor values read in Python" in str(error), str(error)
            refused.append(f"{sample.note or sample.args}: {error}")
            continue
        got = run_onnx(data, dict(zip(names, inputs)))
        assert len(got) == len(want), sample.note
        for g, w in zip(got, want):
            w = w.numpy()
            assert g.shape == w.shape, f"{sample.note}: shape {g.shape} != {w.shape}"
            assert g.dtype == w.dtype, f"{sample.note}: dtype {g.dtype} != {w.dtype}"
            if op.name in _UNINITIALIZED:
                continue  # any content is right
            if w.dtype.kind in "biu":
                np.testing.assert_array_equal(g, w, err_msg=sample.note)
            else:
                tolerance = 1e-4 if w.dtype == np.float32 else 1e-6
                np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance, equal_nan=True, err_msg=sample.note)
    if refused and len(refused) == len(samples):
        if op.onnx is not None:
            pytest.fail(f"{op.name} declares a lowering but refuses every sample: {refused[0]}")
        pytest.skip(f"not exportable: {refused[0]}")
