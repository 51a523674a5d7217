"""ONNX lowerings of the tensor ops (views, creation, indexing, reductions, elementwise), run in onnxruntime:
shapes that follow dynamic axes (export at one size, run at another), a causal mask built inside forward,
and integer/bool semantics where ONNX operators differ from PyTorch's."""
from __future__ import annotations

import math

import pytest

import ember
from ember.onnx import OnnxExporterError

from onnx_check import Fn, check_export, export_bytes, run_onnx

BATCH_SEQ = {0: "batch", 1: "seq"}


def _export_and_run_at(model, export_args, run_args, **options) -> float:
    """Export at one size and compare with Ember at another."""
    names = [f"x{i}" for i in range(len(export_args))]
    axes = {name: BATCH_SEQ for name, t in zip(names, export_args) if t.ndim >= 2}
    return check_export(model, export_args, run_args, input_names=names, dynamic_axes=axes, **options)


# -- shapes that follow dynamic axes ----------------------------------------------------------------

def test_view_and_reshape_follow_batch_and_sequence():
    model = Fn(lambda x: (x.view(x.shape[0] * x.shape[1], -1) * 2, x.reshape(x.shape[0], -1, 2),
                          x.flatten(0, 1), x.flatten(1), x.unflatten(2, (2, -1))))
    _export_and_run_at(model, (ember.randn(2, 3, 4),), (ember.randn(5, 7, 4),))


def test_expand_of_a_parameter_follows_the_batch():
    token = ember.nn.Parameter(ember.randn(1, 1, 4))
    model = Fn(lambda x: ember.cat([token.expand(x.shape[0], -1, -1), x], 1))
    _export_and_run_at(model, (ember.randn(2, 3, 4),), (ember.randn(6, 5, 4),))


def test_slice_of_a_table_by_the_sequence_length_and_past_its_end():
    table = ember.randn(16, 4)
    model = Fn(lambda x: (x + table[: x.shape[1]], x[:, 1:-1], x[:, 2:100], x[:, -3:]))
    _export_and_run_at(model, (ember.randn(2, 6, 4),), (ember.randn(3, 9, 4),))


def test_arange_and_full_take_sizes_from_the_input():
    model = Fn(lambda x: (x + ember.arange(x.shape[1]).unsqueeze(-1), ember.full((x.shape[0], 2), 3.5),
                          ember.arange(1, 2 * x.shape[1], 2), ember.zeros(x.shape[1], dtype=ember.int64),
                          ember.ones_like(x)))
    _export_and_run_at(model, (ember.randn(2, 5, 3),), (ember.randn(4, 8, 3),))


def test_unfold_repeat_and_split_with_a_dynamic_batch():
    model = Fn(lambda x: (x.unfold(1, 3, 2), x.repeat(1, 2, 1), *x.split([1, 3], dim=2), *x.chunk(2, dim=2)))
    check_export(model, (ember.randn(2, 7, 4),), (ember.randn(5, 7, 4),), input_names=["x"],
                 dynamic_axes={"x": {0: "batch"}})


def test_windows_sorts_and_scans_along_a_dynamic_length():
    model = Fn(lambda x: (x.unfold(1, 3, 1), *x.sort(1), x.cumprod(1), x.cumsum(1), x.flip([1]), x.argsort(1)))
    check_export(model, (ember.randn(2, 9),), (ember.randn(2, 12),), input_names=["x"],
                 dynamic_axes={"x": {1: "seq"}})


def test_chunk_along_a_dynamic_axis_is_refused_clearly():
    model = Fn(lambda x: x.chunk(2, dim=1))
    with pytest.raises(OnnxExporterError, match="chunk|split|dynamic"):
        export_bytes(model, (ember.randn(2, 6),), input_names=["x"], dynamic_axes={"x": {1: "seq"}})


# -- a causal mask built inside forward ----------------------------------------------------------------

class CausalScores(ember.nn.Module):
    """Attention scores masked two ways, as models write it: a bool mask from ones().tril() with masked_fill,
    and an additive -inf mask from full().triu(1)."""

    def forward(self, q, k):
        T = q.shape[1]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        allowed = ember.ones(T, T).tril() == 1
        masked = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        additive = (scores + ember.full((T, T), float("-inf")).triu(1)).softmax(-1)
        return masked, additive


def test_causal_mask_follows_the_sequence_length():
    export = (ember.randn(2, 5, 8), ember.randn(2, 5, 8))
    run = (ember.randn(3, 11, 8), ember.randn(3, 11, 8))
    worst = _export_and_run_at(CausalScores(), export, run)
    assert worst < 1e-5


# -- integer and bool semantics ----------------------------------------------------------------------

def _check(fn, *args):
    return check_export(Fn(fn), args, input_names=[f"x{i}" for i in range(len(args))])


def test_integer_division_and_remainder_follow_python_signs():
    a = ember.tensor([7, -7, 7, -7, 0, 5, -9])
    b = ember.tensor([2, 2, -2, -2, 3, -5, 4])
    _check(lambda a, b: (a // b, ember.div(a, b, rounding_mode="trunc"), ember.div(a, b, rounding_mode="floor"),
                         a % b, a / b), a, b)


def test_float_floor_division_and_remainder_at_the_edges():
    a = ember.tensor([5.5, -5.5, 5.5, -5.5, 1.0, -1.0, 0.5, math.inf, 3.0])
    b = ember.tensor([2.0, 2.0, -2.0, -2.0, math.inf, math.inf, 0.0, 2.0, 0.1])
    _check(lambda a, b: (ember.div(a, b, rounding_mode="floor"), a % b, ember.div(a, b, rounding_mode="trunc")),
           a, b)


def test_integer_power_by_a_constant_is_exact_beyond_float_precision():
    x = ember.tensor([3, -3, 7, 1, 0])
    result = _check(lambda x: (x ** 39, x ** 0, x ** 1), x)
    assert result == 0.0
    data = export_bytes(Fn(lambda x: x ** 39), (x,), input_names=["x"])
    assert run_onnx(data, {"x": x})[0][0] == 3 ** 39  # above 2**53: a float64 power would round it


def test_bool_sums_and_logic():
    m = ember.tensor([[True, False, True], [False, False, True]])
    _check(lambda m: (m.sum(), m.sum(1), m.any(1), m.all(0), ~m, m & m.flip([1]), m | m.flip([0]),
                      ember.cumsum(m, 1), m + m, m * m.flip([1]), m.int() > 0, m < m.flip([1])), m)


def test_nan_is_the_extremum_for_amax_argmax_and_sort():
    x = ember.tensor([[1.0, math.nan, 3.0, 3.0], [-1.0, -2.0, -2.0, 0.5]])
    _check(lambda x: (x.amax(1), x.amin(1), x.argmax(1), x.argmin(1), x.argmax(), x.max(1).values,
                      *x.sort(1), *x.sort(1, descending=True), *x.topk(2, 1)), x)


def test_integer_sort_argsort_and_topk_keep_ties_in_order():
    x = ember.tensor([[3, 1, 3, 2, 1], [0, 0, 5, -1, 5]])
    _check(lambda x: (*x.sort(1), *x.sort(1, descending=True), x.argsort(1), *x.topk(3, 1, largest=False)), x)


def test_advanced_indexing_with_several_index_tensors():
    x = ember.randn(4, 5, 6)
    rows, cols = ember.tensor([[0], [3], [-1]]), ember.tensor([1, 4])
    _check(lambda x, r, c: (x[r, c], x[:, r, c], x[r, :, c], x[:, c], x[r]), x, rows, cols)


def test_cumprod_and_prod_of_integers_are_exact():
    x = ember.tensor([[2, -3, 5, 0, 7], [11, 13, -17, 19, 23]])
    _check(lambda x: (x.cumprod(1), x.cumprod(0), x.prod(1)), x)


def test_to_dtype_truncates_floats_and_reads_nonzero_as_true():
    x = ember.tensor([-2.7, 2.7, 0.0, math.nan, 99.9])
    _check(lambda x: (x.to(ember.int64), x.to(ember.bool), x.to(ember.float64)), x)


@pytest.mark.parametrize("opset", [17, 18, 21])
def test_reductions_and_scans_on_every_supported_opset(opset):
    x = ember.randn(3, 4, 5)
    model = Fn(lambda x: (x.sum((0, 2)), x.mean(1, keepdim=True), x.amax(-1), x.prod(0), x.logsumexp(2),
                          x.cumprod(1), x.flatten(1), x.std(1), x.argmax(2), x.norm(dim=1)))
    check_export(model, (x,), input_names=["x"], opset_version=opset, atol=1e-4)
