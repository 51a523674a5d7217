"""Layer ops: linear, bilinear, embedding and dropout (the normalizations are in ``normalization``).

Every op is a composite written in Ember ops. Those whose decomposition would record many nodes
or keep more than the gradient needs declare their derivative: linear (one matmul per gradient, not
one per batch entry summed afterwards) and embedding (row-wise accumulation that skips the padding
row). Derivatives are written in Ember ops, so they are differentiable in turn (double backward).

``dropout`` is of category random: its values are not reproducible by a reference, its seeding is.
"""
from __future__ import annotations

import math

import numpy as np

from ...schema import rules
from ...execution.dispatcher import note_value_read
from ...schema.dtypes import float32, float64, int64
from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..elementwise.complex_support import conj
from ..namespace import F
from .samples import unit_weights
from ..indexing.value_checks import MISSING, CheckedValues, bounded, check_extremes, vouched
from ...schema.errors import ArgumentError, OutOfRangeError

_HALF_TOLERANCES = {"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}


def _prod(sizes) -> int:
    return math.prod(int(s) for s in sizes)


# -- linear -----------------------------------------------------------------------------------------

def _linear_meta(x, weight, bias=None):
    require(len(shape(weight)) == 2, "linear", "expected a 2-D weight (out_features, in_features)", weight)
    require(len(shape(x)) >= 1, "linear", "expected an input with at least one dimension", x)
    out_features, in_features = shape(weight)
    require(shape(x)[-1] == in_features, "linear",
            f"input's last dim {shape(x)[-1]} does not match the weight's in_features {in_features}", x, weight)
    if bias is not None:
        require(shape(bias) in ((), (1,), (out_features,)), "linear",
                f"bias must have {out_features} elements (out_features)", bias)
    return shape(x)[:-1] + (out_features,)


def _linear(x, weight, bias=None):
    out = F.matmul(x, F.transpose(weight, 0, 1))
    return out if bias is None else F.add(out, bias)


def _rows(t):
    """(..., features) -> (rows, features): every leading dim folded into one."""
    return t if t.ndim == 2 else F.reshape(t, (_prod(t.shape[:-1]), t.shape[-1]))


def _linear_weight_derivative(grad, input):
    """sum over every row of grad^T conj(x): one matmul, where matmul's own rule would make one per batch entry."""
    return F.matmul(F.transpose(_rows(grad), 0, 1), conj(_rows(input)))


def _linear_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((4, 3)), w(5, 3), make((5,))))
    yield Sample((make((2, 3, 4)), w(2, 4)), note="batch dims, no bias")
    yield Sample((make((3,)), w(4, 3), make((4,))), note="1-D input")
    yield Sample((make((2, 3), noncontiguous=True), w(4, 3, noncontiguous=True), make((4,))), note="non-contiguous")
    yield Sample((make((0, 3)), w(2, 3), make((2,))), note="empty batch")


def _linear_onnx(g, input, weight, bias):
    """Gemm for a matrix input, MatMul with the weight transposed otherwise (constant folding stores it so)."""
    if len(g.shape_of(input)) == 2 and bias is not None:
        return g.op("Gemm", input, weight, bias, transB=1)
    product = g.op("MatMul", input, g.op("Transpose", weight, perm=[1, 0]))
    return product if bias is None else g.op("Add", product, bias)


defop("linear(Tensor input, Tensor weight, Tensor? bias=None)", "nn", kind="composite", promotion=rules.same,
      dtypes="float+complex", meta=_linear_meta, composite=_linear, autocast="lower",
      derivative={"input": lambda grad, weight: F.matmul(grad, conj(weight)),
                  "weight": _linear_weight_derivative,
                  "bias": lambda grad: grad},  # the engine sums the broadcast rows
      reference=lambda x, w, b=None: x @ w.T + (0 if b is None else b), samples=_linear_samples,
      method=False, tolerances=_HALF_TOLERANCES, onnx=_linear_onnx, jvp="multilinear",
      doc="input @ weight^T + bias; weight is (out_features, in_features)")


# -- bilinear ---------------------------------------------------------------------------------------

def _bilinear_meta(x1, x2, weight, bias=None):
    require(len(shape(weight)) == 3, "bilinear", "expected a 3-D weight (out_features, in1_features, "
            "in2_features)", weight)
    out_features, in1, in2 = shape(weight)
    require(len(shape(x1)) >= 1 and shape(x1)[:-1] == shape(x2)[:-1], "bilinear",
            "input1 and input2 must have the same shape except for their last dim", x1, x2)
    require(shape(x1)[-1] == in1 and shape(x2)[-1] == in2, "bilinear",
            f"the inputs' last dims must be the weight's in1_features {in1} and in2_features {in2}",
            x1, x2, weight)
    if bias is not None:
        require(shape(bias) == (out_features,), "bilinear", f"bias must have {out_features} elements", bias)
    return shape(x1)[:-1] + (out_features,)


def _bilinear(x1, x2, weight, bias=None):
    """x1 times every weight slice in one matmul, then a batched dot product with x2."""
    out_features, in1, in2 = weight.shape
    lead = tuple(x1.shape[:-1])
    n = _prod(lead)
    slices = F.reshape(F.permute(weight, (1, 0, 2)), (in1, out_features * in2))
    left = F.reshape(F.matmul(F.reshape(x1, (n, in1)), slices), (n, out_features, in2))
    out = F.squeeze(F.matmul(left, F.reshape(x2, (n, in2, 1))), [-1])
    out = F.reshape(out, lead + (out_features,))
    return out if bias is None else F.add(out, bias)


def _bilinear_samples(make, dtype):
    w = unit_weights(make)
    yield Sample((make((4, 3)), make((4, 2)), w(5, 3, 2), make((5,))))
    yield Sample((make((2, 3, 4)), make((2, 3, 2), noncontiguous=True), w(3, 4, 2)), note="batch dims, no bias")
    yield Sample((make((3,)), make((2,)), w(2, 3, 2), make((2,))), note="1-D inputs")
    yield Sample((make((0, 3)), make((0, 2)), w(2, 3, 2)), note="empty batch")


def _bilinear_onnx(g, input1, input2, weight, bias):
    out = g.op("Einsum", input1, weight, input2, equation="...i,oij,...j->...o")
    return out if bias is None else g.op("Add", out, bias)


defop("bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None)", "nn", kind="composite",
      promotion=rules.same, dtypes="float", meta=_bilinear_meta, composite=_bilinear,
      reference=lambda a, b, w, bias=None: np.einsum("...i,oij,...j->...o", a, w, b) + (0 if bias is None else bias),
      samples=_bilinear_samples, method=False, tolerances=_HALF_TOLERANCES, autocast={"cuda": "promote"},
      onnx=_bilinear_onnx,
      doc="out[..., o] = input1[..., i] weight[o, i, j] input2[..., j] + bias[o]")


# -- embedding --------------------------------------------------------------------------------------

def _embedding_normalize(op, args):
    """Checks the indices (this reads them, as PyTorch does) and wraps a negative padding_idx."""
    note_value_read()
    x, weight, padding_idx = args["input"], args["weight"], args["padding_idx"]
    require(len(shape(weight)) == 2, "embedding", "expected a 2-D weight (num_embeddings, embedding_dim)", weight)
    if x._dtype.is_floating_point or x._dtype.kind == "bool":
        raise TypeError(f"embedding: expected integer indices, got {x._dtype.name}")
    num = shape(weight)[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ArgumentError(f"embedding: padding_idx must be within num_embeddings ({num}), got {padding_idx}")
        args["padding_idx"] = padding_idx % num
    if x.numel() and _checked_indices.recall(x, num) is MISSING:
        shapes = f"indices of shape {tuple(shape(x))}, weight of shape {tuple(shape(weight))}"
        check_extremes(x, lambda low, high: None if 0 <= low and high < num else OutOfRangeError(
            f"embedding: index {low if low < 0 else high} is out of range for {num} embeddings ({shapes})"))
        _checked_indices.remember(x, num)


_checked_indices = CheckedValues()  # index tensors found in range, by table size: not read again while unchanged


def _embedding(x, weight, *rest):
    with vouched():  # normalize checked the indices (or queued their check: then they are clamped here)
        return F.index(weight, [bounded(x, weight.shape[0])])


def _embedding_weight_derivative(grad, input, weight, padding_idx, scale_grad_by_freq):
    """Each looked-up row's gradient summed into its row of weight (one op); the padding row gets none."""
    with vouched():  # the forward checked the indices (or queued their check: then they are clamped here)
        return F.embedding_dense_backward(grad, bounded(input, weight.shape[0]), weight.shape[0],
                                          -1 if padding_idx is None else padding_idx, scale_grad_by_freq)


def _summed_rows(grad, input, num_weights, padding_idx=-1, scale_grad_by_freq=False):
    index = F.reshape(input, (-1,))
    rows = F.reshape(grad, (index.shape[0], grad.shape[-1]))
    if padding_idx != -1:
        rows = F.where(F.unsqueeze(F.ne(index, padding_idx), 1), rows, 0)
    if scale_grad_by_freq:  # divided by how often each index occurs in this batch
        counts = F.index_put_(F.zeros((num_weights,), dtype=rows.dtype, device=rows.device), [index],
                              F.ones(tuple(index.shape), dtype=rows.dtype, device=rows.device), True)
        rows = F.div(rows, F.unsqueeze(F.index(counts, [index]), 1))
    return F.index_put_(F.zeros((num_weights, rows.shape[1]), dtype=rows.dtype, device=rows.device), [index], rows,
                        True)


def _embedding_samples(make, dtype):
    def idx(shape_, num):
        return make(shape_, dtype=int64, low=0, high=num)
    yield Sample((idx((3, 5), 10), make((10, 4))))
    # the padding row's missing gradient and the frequency scaling are conventions, not derivatives
    yield Sample((idx((6,), 5), make((5, 3))), {"padding_idx": 2}, gradcheck=False)
    yield Sample((idx((2, 3), 4), make((4, 2), noncontiguous=True), -1, True),
                 note="negative padding_idx, scale_grad_by_freq", gradcheck=False)
    yield Sample((idx((), 3), make((3, 2))), note="0-d index")
    yield Sample((idx((0, 2), 3), make((3, 2))), note="no indices")


def _embedding_reference(x, weight, padding_idx=None, scale_grad_by_freq=False):
    return np.asarray(weight)[np.asarray(x)]


def _embedding_onnx(g, input, weight, padding_idx, scale_grad_by_freq):
    """Gather of the rows; padding_idx and scale_grad_by_freq change only gradients."""
    return g.op("Gather", weight, input, axis=0)


defop("embedding(Index input, Tensor weight, int? padding_idx=None, bool scale_grad_by_freq=False)", "nn",
      kind="composite", promotion=rules.same, meta=lambda x, weight, *rest: shape(x) + shape(weight)[1:],
      normalize=_embedding_normalize, composite=_embedding,
      derivative={"weight": _embedding_weight_derivative}, reference=_embedding_reference,
      samples=_embedding_samples, method=False, onnx=_embedding_onnx,
      doc="the rows of weight at the indices; the padding_idx row gets no gradient")


# -- embedding's backward: one op, so that a backend adds the rows in one pass -----------------------------

def _dense_backward_normalize(op, args):
    """Indices of an integer dtype; a padding_idx of -1 (none) or a row of the table (PyTorch's convention).
    The indices' values are not read: the forward checked them (a kernel must still not write outside)."""
    indices, num = args["indices"], args["num_weights"]
    if indices._dtype.is_floating_point or indices._dtype.kind == "bool":
        raise TypeError(f"embedding_dense_backward: expected integer indices, got {indices._dtype.name}")
    if num < 0 or not -1 <= args["padding_idx"] < max(num, 1):
        raise ArgumentError(f"embedding_dense_backward: padding_idx must be -1 (none) or a row of the {num} "
                            f"embeddings, got {args['padding_idx']}")


def _dense_backward_meta(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    require(len(shape(grad)) >= 1 and shape(grad)[:-1] == shape(indices), "embedding_dense_backward",
            "grad_output must have the indices' shape and one more dim (the embedding's)", grad, indices)
    return (num_weights, shape(grad)[-1])


def _dense_backward_reference(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    flat = np.asarray(indices).reshape(-1)
    rows = np.asarray(grad, np.float64).reshape(flat.size, np.shape(grad)[-1])
    if scale_grad_by_freq:
        rows = rows / np.bincount(flat, minlength=num_weights)[flat][:, None]
    if padding_idx != -1:
        rows = np.where((flat != padding_idx)[:, None], rows, 0.0)
    out = np.zeros((num_weights, rows.shape[1]))
    np.add.at(out, flat, rows)
    return out


def _dense_backward_samples(make, dtype):
    def idx(shape_, num):
        return make(shape_, dtype=int64, low=0, high=num)
    yield Sample((make((32, 3, 16)), idx((32, 3), 27), 27, -1, False), note="makemore's lookup, repeated rows")
    yield Sample((make((6, 3)), idx((6,), 5), 5, 2, False), note="padding row")
    yield Sample((make((2, 3, 2), noncontiguous=True), idx((2, 3), 4), 4, 0, True),
                 note="scaled by frequency, non-contiguous")
    yield Sample((make((0, 4)), idx((0,), 3), 3, -1, False), note="no indices")


defop("embedding_dense_backward(Tensor grad_output, Index indices, int num_weights, int padding_idx, "
      "bool scale_grad_by_freq)", "nn", kind="composite", promotion=rules.same, dtypes="float",
      normalize=_dense_backward_normalize, meta=_dense_backward_meta, composite=_summed_rows,
      reference=_dense_backward_reference, samples=_dense_backward_samples, method=False,
      tolerances={"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)},
      doc="embedding's weight gradient: each row of grad_output added into the indices' row of a zero "
          "(num_weights, embedding_dim) table, none into padding_idx (-1: none), divided by the index's count in "
          "the batch with scale_grad_by_freq")


# -- dropout -------------------------------------------------------------------------------------------

def _dropout_normalize(op, args):
    if not 0.0 <= args["p"] <= 1.0:
        raise ArgumentError(f"dropout: probability has to be between 0 and 1, but got {args['p']}")


def _dropout(x, p=0.5, training=True, generator=None):
    """A Bernoulli(1 - p) mask scaled by 1 / (1 - p): recorded as a single mul, which saves only the mask.

    The draws are float32 (float64 for float64 input), where ``bernoulli`` with a number draws float64 for
    exact probabilities: 2^-24 steps are plenty for a keep rate, and float32 draws cost about two thirds
    as much (Philox, 131k values: 0.55 against 0.82 ms), on every dropout layer of every training step."""
    if not training:
        return x
    if p == 1.0:
        return F.mul(x, 0.0)
    draws = float64 if x.dtype is float64 else float32
    keep = F.lt(F.rand_uniform(tuple(x.shape), generator=generator, dtype=draws, device=x.device), 1.0 - p)
    return F.mul(x, F.mul(F.to_dtype(keep, x.dtype), 1.0 / (1.0 - p)))


def _dropout_samples(make, dtype):
    yield Sample((make((100, 50)), 0.3), note="many draws")
    yield Sample((make((3, 5)), 0.5, False), note="evaluation: the identity")
    yield Sample((make((3, 4)), 1.0), note="p=1 drops everything")
    yield Sample((make((2, 3), noncontiguous=True), 0.0), note="p=0 keeps everything")
    yield Sample((make((0, 3)),), note="empty")


def _dropout_onnx(g, input, p, training, generator):
    """The identity in evaluation; random masks are not exported (their draws could never match Ember's)."""
    if training and p > 0:
        g.fail("dropout in training mode draws random masks; call model.eval() before exporting")
    return g.op("Identity", input)


defop("dropout(Tensor input, float p=0.5, bool training=True, *, Generator? generator=None)", "random",
      torch_keywords={"train": "training"},
      kind="composite", promotion=rules.same, dtypes="float", meta=lambda x, *rest: shape(x),
      normalize=_dropout_normalize, composite=_dropout, samples=_dropout_samples, method=False, onnx=_dropout_onnx,
      doc="zeroes each element with probability p and scales the rest by 1 / (1 - p); the identity when not "
          "training")
