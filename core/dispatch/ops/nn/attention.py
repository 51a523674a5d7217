"""scaled_dot_product_attention: ``softmax(query @ key^T * scale + mask) @ value``, as one op of the schema.

A composite of Ember ops (matmul, softmax, masked_fill, dropout), so every backend runs it, autograd
differentiates it and a backend may override it with a fused kernel. It is an op so that autocast sees it:
PyTorch runs it in the low-precision dtype. float16 and bfloat16 inputs compute in float32 and round once,
as PyTorch's CPU kernel accumulates.

``attention`` is the routine underneath, returning the weights too: ``nn.MultiheadAttention`` needs them.
"""
from __future__ import annotations

import math

import numpy as np

from ...execution import links
from ...schema.dtypes import bool_
from ...schema.errors import ArgumentError, DtypeError
from ...schema.meta import broadcast_shapes, require, shape
from ...schema import OPS, Sample, defop
from ..namespace import F
from ..elementwise.opmath import in_opmath, opmath_dtype, rounded, widened

_NAME = "scaled_dot_product_attention"


def attention(query, key, value, mask=None, dropout_p: float = 0.0, scale: float | None = None,
              causal: bool = False):
    """``(output, weights)`` of scaled dot-product attention; ``mask`` as ``scaled_dot_product_attention``'s.

    The scale multiplies the query, not the ``L x S`` scores: fewer multiplications when ``E < S``.
    ``causal`` is for the causal mask alone; combined with another mask, fold it in with ``causal_mask``.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = F.matmul(F.mul(query, scale), F.transpose(key, -2, -1))
    dead = None
    if causal:  # every row keeps at least key 0, so there are no fully-masked rows to take care of
        scores = F.add(scores, _causal_bias(scores.shape[-2], scores.shape[-1], scores.dtype, scores.device))
    elif mask is not None:
        mask, dead = _live_mask(mask, scores)
        if mask.dtype is bool_:
            scores = F.masked_fill(scores, F.logical_not(mask), float("-inf"))
        else:
            scores = F.add(scores, mask)
    weights = F.softmax(scores, -1)
    if dead is not None:
        weights = F.masked_fill(weights, dead, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p, True)
    return F.matmul(weights, value), weights


def causal_mask(length: int, source_length: int, device):
    """The bool mask (True = take part) that lets query ``i`` see keys ``0..i``."""
    return F.tril(F.full((length, source_length), True, dtype=bool_, device=device))


def _causal_bias(length: int, source_length: int, dtype, device):
    """0 where query ``i`` sees key ``j <= i``, -inf above: added to the scores, as PyTorch's math path does.

    Why an addition: its gradient is the incoming one, with nothing recorded or computed, where a masked fill
    costs a select forward and another backward over the whole scores (0.4 of the 2.3 ms of GPT's attention
    layer, fwd + bwd, (64, 3, 32, 32) scores)."""
    return F.triu(F.full((length, source_length), float("-inf"), dtype=dtype, device=device), 1)


def _live_mask(mask, scores):
    """The mask with fully-masked query rows opened up, and those rows (to zero after the softmax).

    A row with every key masked would be softmax over all ``-inf``: NaN forward and NaN gradients that
    ``where`` cannot stop. Opening the row keeps the softmax finite; zeroing its weights afterwards gives
    PyTorch's result (zeros) and a zero gradient. The work is on the mask, which is usually far smaller than
    the scores.
    """
    if mask.dtype is bool_:
        dead = F.logical_not(F.any(mask, -1, keepdim=True))
        return F.logical_or(mask, dead), dead
    if not mask.dtype.is_floating_point:
        raise DtypeError(f"{_NAME}: attn_mask must be bool or floating point, got {mask.dtype}")
    if mask.dtype is not scores.dtype:
        mask = F.to_dtype(mask, scores.dtype)
    dead = F.all(F.eq(mask, float("-inf")), -1, keepdim=True)
    return F.masked_fill(mask, dead, 0.0), dead


def _repeat_heads(x, heads: int):
    """Repeat each head of ``x`` (dimension -3) in place until there are ``heads``: repeat_interleave."""
    groups = heads // x.shape[-3]
    if groups == 1:
        return x
    sizes = tuple(x.shape)
    expanded = F.expand(F.unsqueeze(x, -3), sizes[:-2] + (groups,) + sizes[-2:])
    return F.reshape(expanded, sizes[:-3] + (heads,) + sizes[-2:])


def _unfused(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    return attention(query, key, value, attn_mask, dropout_p, scale, causal=is_causal)[0]


_unfused_in_opmath = in_opmath(_unfused)


def _fused_kernels_on(device, recording: bool) -> bool:
    """Whether ``device``'s backend runs the fused pair as kernels (cuda: cuDNN, or the shared array kernels), or,
    for a call that autograd does not record, the fused forward (cpu keeps only that one: in training its op-by-op
    composite is quicker). As a composite the pair would be slower than the op-by-op one: its backward recomputes
    the weights, which a kernel does in one pass and a composite in a dozen dispatched ops."""
    from ...contract import registry
    from ...execution.plan import prefers_composite
    kernels = registry.get_backend(device.type).kernels
    return (_FUSED in kernels and not prefers_composite(OPS[_FUSED], device.type)
            and (not recording or _FUSED_BACKWARD in kernels))


def _scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                  enable_gqa=False):
    """The fused pair where the call allows it (no mask but the causal one, no dropout) and the backend runs the
    pair as kernels of its own, the op-by-op composite otherwise. The fused op takes one batch shape: broadcast
    batch dims are expanded first (a view, whose gradient autograd sums back)."""
    if enable_gqa:
        key, value = _repeat_heads(key, query.shape[-3]), _repeat_heads(value, query.shape[-3])
    recording = links.recorder.state.enabled and (query.requires_grad or key.requires_grad or value.requires_grad)
    if attn_mask is not None or dropout_p > 0.0 or not _fused_kernels_on(query.device, recording):
        return _unfused_in_opmath(query, key, value, attn_mask, dropout_p, is_causal, scale)
    batch = tuple(np.broadcast_shapes(*(tuple(t.shape[:-2]) for t in (query, key, value))))
    query, key, value = (t if tuple(t.shape[:-2]) == batch else F.expand(t, batch + tuple(t.shape[-2:]))
                         for t in (query, key, value))
    return F._scaled_dot_product_fused_attention(query, key, value, is_causal, scale=scale)[0]


# -- checks ---------------------------------------------------------------------------------------------------

def _promotion(rt, op, args):
    """The query's dtype, which key and value share (the mask, bool or of the query's dtype, is an ``Index``
    parameter: it takes no part in promotion)."""
    dt = getattr(args["query"], "dtype", rt)
    return dt, dt


def _normalize(op, args) -> None:
    query, key, value, attn_mask = args["query"], args["key"], args["value"], args["attn_mask"]
    dropout_p, is_causal = args["dropout_p"], args["is_causal"]
    dtypes = [getattr(t, "dtype", None) for t in (query, key, value)]
    if len(set(dtypes)) > 1:
        raise DtypeError(f"{_NAME}: expected query, key and value to have the same dtype, got query.dtype "
                         f"{_named(dtypes[0])}, key.dtype {_named(dtypes[1])} and value.dtype {_named(dtypes[2])}")
    if attn_mask is not None and attn_mask.dtype is not bool_ and attn_mask.dtype is not dtypes[0]:
        raise DtypeError(f"{_NAME}: expected attn_mask to be bool or of the query's dtype {_named(dtypes[0])}, "
                         f"got attn_mask.dtype {attn_mask.dtype.name}")
    if is_causal and attn_mask is not None:
        raise ArgumentError(f"{_NAME}: give either attn_mask or is_causal=True, not both")
    if not 0.0 <= dropout_p <= 1.0:
        raise ArgumentError(f"{_NAME}: dropout_p has to be between 0 and 1, but got {dropout_p}")


def _named(dt) -> str:
    return "a Python number" if dt is None else dt.name


def _meta(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """``(..., L, Ev)`` from query ``(..., L, E)``, key ``(..., S, E)`` and value ``(..., S, Ev)``."""
    qs, ks, vs = shape(query), shape(key), shape(value)
    operands = (query, key, value)
    require(min(len(qs), len(ks), len(vs)) >= 2, _NAME, "query, key and value need at least 2 dimensions", *operands)
    require(qs[-1] == ks[-1], _NAME, "query and key must share the last (embedding) dimension", *operands)
    require(ks[-2] == vs[-2], _NAME, "key and value must have the same sequence length (dimension -2)", *operands)
    if enable_gqa:
        require(min(len(qs), len(ks), len(vs)) >= 3, _NAME, "enable_gqa needs a head dimension (-3)", *operands)
        heads = qs[-3]
        require(heads % ks[-3] == 0 and heads % vs[-3] == 0, _NAME, "with enable_gqa the query's heads must be a "
                "multiple of key's and value's", *operands)
        ks, vs = ks[:-3] + (heads,) + ks[-2:], vs[:-3] + (heads,) + vs[-2:]
    scores = broadcast_shapes(_NAME, qs[:-2], ks[:-2]) + (qs[-2], ks[-2])
    if attn_mask is not None:
        require(broadcast_shapes(_NAME, shape(attn_mask), scores) == scores, _NAME, f"attn_mask of shape "
                f"{shape(attn_mask)} must broadcast to the attention scores' shape {scores}", attn_mask, *operands)
    return broadcast_shapes(_NAME, scores[:-2], vs[:-2]) + (qs[-2], vs[-1])


# -- the NumPy reference and samples --------------------------------------------------------------------------

def _reference(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if enable_gqa:
        k, v = (np.repeat(t, q.shape[-3] // t.shape[-3], axis=-3) for t in (k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    length, source = scores.shape[-2:]
    if is_causal:
        attn_mask = np.tril(np.ones((length, source), bool))
    if attn_mask is not None and attn_mask.dtype == bool:
        scores = np.where(attn_mask, scores, -np.inf)
    elif attn_mask is not None:
        scores = scores + attn_mask
    top = np.max(scores, axis=-1, keepdims=True)
    exp = np.exp(scores - np.where(np.isfinite(top), top, 0))
    total = np.sum(exp, axis=-1, keepdims=True)
    weights = np.where(total > 0, exp / np.where(total > 0, total, 1), 0.0)  # fully-masked rows give zeros
    return weights @ v


def _samples(make, dtype):
    def qk(*sizes):  # in [-1, 1): scores of a few units, well inside half precision
        return make(sizes, low=-1, high=1)
    yield Sample((qk(2, 3, 4), qk(2, 5, 4), make((2, 5, 6))), note="3-D")
    yield Sample((qk(2, 2, 4, 3), qk(2, 2, 4, 3), make((2, 2, 4, 3))), {"is_causal": True}, note="causal")
    yield Sample((qk(1, 6, 4), qk(1, 3, 4), make((1, 3, 2))), {"is_causal": True, "scale": 0.7},
                 note="causal with more queries than keys, explicit scale")
    yield Sample((qk(2, 3, 4), qk(1, 5, 4), make((5, 2), noncontiguous=True), make((3, 5))),
                 note="additive mask, broadcast batch, non-contiguous value")
    yield Sample((qk(1, 4, 3, 4), qk(1, 2, 5, 4), make((1, 2, 5, 6))), {"enable_gqa": True}, note="grouped-query heads")
    yield Sample((qk(2, 0, 4), qk(2, 5, 4), make((2, 5, 3))), note="no queries")
    mask = make((2, 1, 3, 5), dtype=bool_)  # last: the backend may lack bool
    row_1_masked = F.ne(F.reshape(F.arange(3, device=mask.device), (3, 1)), 1)
    yield Sample((qk(2, 2, 3, 4), qk(2, 2, 5, 4), make((2, 2, 5, 3)), F.logical_and(mask, row_1_masked)),
                 note="bool mask broadcast over heads, one query row fully masked")


# -- ONNX ------------------------------------------------------------------------------------------------------

def _onnx_repeat_heads(g, x, heads: int) -> str:
    """``_repeat_heads`` in ONNX: each head of ``x`` repeated in place up to ``heads`` (Expand, then Reshape)."""
    sizes = list(g.shape_of(x))
    groups = heads // int(g.static(sizes[-3], "key heads"))
    if groups == 1:
        return x
    expanded = g.op("Expand", g.unsqueeze(x, [len(sizes) - 2]), g.ints(sizes[:-2] + [groups] + sizes[-2:]))
    return g.op("Reshape", expanded, g.ints(sizes[:-3] + [heads] + sizes[-2:]))


def _onnx_causal_mask(g, length, source_length) -> str:
    """The bool (L, S) mask of query i seeing keys 0..i: Trilu of ones shaped by the (maybe dynamic) lengths."""
    ones = g.op("Expand", g.const(1, "int64"), g.ints([length, source_length]))
    return g.cast(g.op("Trilu", ones, upper=0), "bool")


def _onnx_dead_rows(g, mask) -> str:
    """The query rows whose every key is masked (bool: no True; float: all -inf), as ``_live_mask`` finds them."""
    if g.dtype_of(mask) is bool_:
        masked = g.op("Not", mask)
    else:
        masked = g.op("Equal", mask, g.const(-np.inf, g.compute))
    rank = len(g.shape_of(mask))
    return g.cast(g.reduce("ReduceMin", g.cast(masked, "int32"), [rank - 1], True), "bool")


def _onnx(g, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """MatMul, Softmax, MatMul as the composite computes them; fully-masked rows give zeros, as in PyTorch."""
    if dropout_p > 0:
        g.fail(f"dropout_p={dropout_p} drops attention weights at random (even in evaluation for the functional "
               f"form); pass dropout_p=0 when exporting")
    key_sizes = g.shape_of(key)
    if enable_gqa:
        heads = int(g.static(g.shape_of(query)[-3], "query heads"))
        key, value = _onnx_repeat_heads(g, key, heads), _onnx_repeat_heads(g, value, heads)
    if scale is None:
        scale = 1.0 / math.sqrt(g.static(g.shape_of(query)[-1], "embedding size"))
    rank = len(key_sizes)
    key_t = g.op("Transpose", key, perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = g.op("MatMul", g.op("Mul", query, g.const(scale, g.compute)), key_t)
    dead = None
    if is_causal:
        attn_mask = _onnx_causal_mask(g, g.shape_of(query)[-2], key_sizes[-2])
    elif attn_mask is not None:
        dead = _onnx_dead_rows(g, attn_mask)
    if attn_mask is not None and (is_causal or g.dtype_of(attn_mask) is bool_):
        live = attn_mask if dead is None else g.op("Or", attn_mask, dead)
        scores = g.op("Where", live, scores, g.const(-np.inf, g.compute))
    elif attn_mask is not None:
        mask = attn_mask if g.dtype_of(attn_mask) is g.compute else g.cast(attn_mask, g.compute)
        scores = g.op("Add", scores, g.op("Where", dead, g.const(0, g.compute), mask))
    weights = g.op("Softmax", scores, axis=-1)
    if dead is not None:
        weights = g.op("Where", dead, g.const(0, g.compute), weights)
    return g.op("MatMul", weights, value)


defop("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Index? attn_mask=None, "
      "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False)", "nn",
      kind="composite", promotion=_promotion, dtypes="float", meta=_meta, normalize=_normalize,
      composite=_scaled_dot_product_attention, reference=_reference, samples=_samples, method=False,
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}, autocast="lower",
      onnx=_onnx,
      doc="softmax(query @ key^T * scale + attn_mask) @ value over the last two dims; a bool attn_mask marks with "
          "True the positions that take part, a float one is added; is_causal lets query i see keys 0..i; "
          "dropout_p drops attention weights; enable_gqa repeats key and value heads to the query's; fully-masked "
          "rows give zeros")


# -- the fused pair: _scaled_dot_product_fused_attention and its backward -------------------------------------
#
# After PyTorch's _scaled_dot_product_flash_attention_for_cpu (and _backward), less dropout and the mask, which
# scaled_dot_product_attention keeps for its op-by-op composite. The forward saves the log-sum-exp of each
# query's scaled scores, so the backward rebuilds the weights with one exp instead of a second softmax; one op
# each way is what a backend overrides (the shared array kernels, cuDNN's SDPA on cuda).

_FUSED = "_scaled_dot_product_fused_attention"
_FUSED_BACKWARD = _FUSED + "_backward"


def _fused_scale(query, scale):
    return 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale


def _scores(query, key, is_causal: bool, scale: float):
    """``query @ key^T * scale``, -inf above the diagonal when causal (the scale on the smaller query)."""
    scores = F.matmul(F.mul(query, scale), F.transpose(key, -2, -1))
    if is_causal:
        scores = F.add(scores, _causal_bias(scores.shape[-2], scores.shape[-1], scores.dtype, scores.device))
    return scores


def _fused_attention(query, key, value, is_causal=False, scale=None):
    """Row max, exp, row sum, one division and one matmul, in opmath; the log-sum-exp stays in opmath."""
    dt = query.dtype
    q, k, v = widened(query), widened(key), widened(value)
    scale = _fused_scale(query, scale)
    if k.shape[-2] == 0:  # no keys: nothing to attend to, an empty sum (zeros, log 0 = -inf), as the kernels give
        lead = tuple(q.shape[:-1])
        return (F.zeros(lead + (v.shape[-1],), dtype=dt, device=q.device),
                F.full(lead, float("-inf"), dtype=q.dtype, device=q.device))
    scores = _scores(q, k, is_causal, scale)
    top = F.amax(scores, -1, True)
    exp = F.exp(F.sub(scores, top))
    total = F.sum(exp, -1, True)
    out = F.matmul(F.div(exp, total), v)
    return rounded(out, dt), F.squeeze(F.add(F.log(total), top), -1)


def _fused_attention_backward(grad_out, query, key, value, out, logsumexp, grad_logsumexp=None, is_causal=False,
                              scale=None):
    """weights = exp(scores - logsumexp); dV = W^T dO; dS = W * (dO V^T - rowsum(dO * O) + dLSE); dQ = dS K * scale,
    dK = dS^T Q * scale. Written in Ember ops, so it is differentiable in turn (double backward)."""
    dt = query.dtype
    g, q, k, v, o = (widened(t) for t in (grad_out, query, key, value, out))
    scale = _fused_scale(query, scale)
    weights = F.exp(F.sub(_scores(q, k, is_causal, scale), F.unsqueeze(widened(logsumexp), -1)))
    grad_value = F.matmul(F.transpose(weights, -2, -1), g)
    delta = F.sum(F.mul(g, o), -1, True)
    if grad_logsumexp is not None:  # d logsumexp / d scores = the weights
        delta = F.sub(delta, F.unsqueeze(widened(grad_logsumexp), -1))
    grad_scores = F.mul(F.mul(weights, F.sub(F.matmul(g, F.transpose(v, -2, -1)), delta)), scale)
    grad_query = F.matmul(grad_scores, k)
    grad_key = F.matmul(F.transpose(grad_scores, -2, -1), q)
    return rounded(grad_query, dt), rounded(grad_key, dt), rounded(grad_value, dt)


def _fused_derivative(grads, query, key, value, is_causal, scale, results):
    """Through both outputs (PyTorch's flash op leaves the log-sum-exp without one; here it is exact, so that double
    backward, which reaches the saved log-sum-exp, is right too). Its gradient costs one subtraction per row."""
    out, logsumexp = results
    return F._scaled_dot_product_fused_attention_backward(grads[0], query, key, value, out, logsumexp, grads[1],
                                                          is_causal, scale=scale)


def _fused_promotion(rt, op, args):
    """The operands' dtype (``_fused_normalize`` refuses several), the log-sum-exp in its opmath dtype."""
    return rt, (rt, opmath_dtype(rt))


def _fused_backward_promotion(rt, op, args):
    """The query's dtype; the log-sum-exp and its gradient are ``Index`` parameters, uncast (float32 beside
    half-precision operands)."""
    return rt, (rt, rt, rt)


def _fused_normalize(op, args) -> None:
    names = ("grad_out", "query", "key", "value", "out") if op.name == _FUSED_BACKWARD else ("query", "key", "value")
    tensors = [(name, args[name]) for name in names]
    for name, t in tensors:  # a Python number would broadcast; attention has no meaning for one
        if not hasattr(t, "dtype"):
            raise ArgumentError(f"{op.name}: {name} must be a Tensor, got {type(t).__name__} {t!r}")
    dtypes = {t.dtype for _, t in tensors}
    if len(dtypes) > 1:
        raise DtypeError(f"{op.name}: expected {', '.join(names)} to have one dtype, got "
                         + ", ".join(f"{name}.dtype {t.dtype.name}" for name, t in tensors))
    if op.name == _FUSED_BACKWARD:
        for name in ("logsumexp", "grad_logsumexp"):
            t = args[name]
            if t is not None and not t.dtype.is_floating_point:
                raise DtypeError(f"{op.name}: expected a floating-point {name}, got {name}.dtype {t.dtype.name}")


def _fused_shapes(name: str, query, key, value) -> tuple:
    qs, ks, vs = shape(query), shape(key), shape(value)
    operands = (query, key, value)
    require(min(len(qs), len(ks), len(vs)) >= 2, name, "query, key and value need at least 2 dimensions", *operands)
    require(qs[:-2] == ks[:-2] == vs[:-2], name, "query, key and value need the same batch dims (all but the last "
            "two); scaled_dot_product_attention expands broadcast ones", *operands)
    require(qs[-1] == ks[-1], name, "query and key must share the last (embedding) dimension", *operands)
    require(ks[-2] == vs[-2], name, "key and value must have the same sequence length (dimension -2)", *operands)
    return qs, ks, vs


def _fused_meta(query, key, value, is_causal=False, scale=None):
    """``(..., L, Ev)`` and the log-sum-exp ``(..., L)`` from query ``(..., L, E)``, key ``(..., S, E)`` and value
    ``(..., S, Ev)`` of one batch shape."""
    qs, _, vs = _fused_shapes(_FUSED, query, key, value)
    return qs[:-1] + (vs[-1],), qs[:-1]


def _fused_backward_meta(grad_out, query, key, value, out, logsumexp, grad_logsumexp=None, is_causal=False,
                         scale=None):
    qs, ks, vs = _fused_shapes(_FUSED_BACKWARD, query, key, value)
    expected = qs[:-1] + (vs[-1],)
    require(shape(grad_out) == expected and shape(out) == expected, _FUSED_BACKWARD, f"grad_out and out must have "
            f"the output's shape {expected}", grad_out, out, query, value)
    for t in (logsumexp, grad_logsumexp):
        require(t is None or shape(t) == qs[:-1], _FUSED_BACKWARD, f"logsumexp and grad_logsumexp must have shape "
                f"{qs[:-1]} (the query's without its last dim)", t, query)
    return qs, ks, vs


def _fused_reference(q, k, v, is_causal=False, scale=None):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    exp = np.exp(scores - top)
    total = np.sum(exp, axis=-1, keepdims=True)
    return exp / total @ v, (np.log(total) + top)[..., 0]


def _fused_backward_reference(g, q, k, v, o, lse, grad_lse=None, is_causal=False, scale=None):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    weights = np.exp(scores - lse[..., None])
    delta = np.sum(g * o, axis=-1, keepdims=True) - (0 if grad_lse is None else grad_lse[..., None])
    grad_scores = weights * (g @ np.swapaxes(v, -1, -2) - delta) * scale
    return grad_scores @ k, np.swapaxes(grad_scores, -1, -2) @ q, np.swapaxes(weights, -1, -2) @ g


def _fused_cases(make):
    def qk(*sizes):  # in [-1, 1): scores of a few units, well inside half precision
        return make(sizes, low=-1, high=1)
    yield (qk(2, 3, 4), qk(2, 5, 4), make((2, 5, 6))), {}, "3-D"
    yield (qk(2, 2, 4, 8), qk(2, 2, 4, 8), make((2, 2, 4, 8))), {"is_causal": True}, "causal, 4-D"
    yield (qk(1, 6, 4), qk(1, 3, 4), make((1, 3, 2))), {"is_causal": True, "scale": 0.7}, \
        "causal with more queries than keys, explicit scale"
    yield (qk(3, 4), qk(5, 4), make((5, 3), noncontiguous=True)), {}, "2-D, non-contiguous value"
    yield (qk(2, 0, 4), qk(2, 5, 4), make((2, 5, 3))), {}, "no queries"


def _fused_samples(make, dtype):
    for args, kwargs, note in _fused_cases(make):
        yield Sample(args, kwargs, note=note)


def _fused_backward_samples(make, dtype):
    for (q, k, v), kwargs, note in _fused_cases(make):
        if dtype.is_floating_point:  # a consistent output and log-sum-exp, as the forward saves them
            out, lse = F._scaled_dot_product_fused_attention(q, k, v, **kwargs)
        else:  # (the dtype checks' samples: never computed)
            out, lse = make(tuple(q.shape[:-1]) + (v.shape[-1],)), make(tuple(q.shape[:-1]))
        grad_lse = make(tuple(lse.shape), dtype=lse.dtype) if note.startswith("causal") else None
        yield Sample((make(tuple(out.shape)), q, k, v, out, lse, grad_lse), kwargs, note=note)


defop("_scaled_dot_product_fused_attention(Tensor query, Tensor key, Tensor value, bool is_causal=False, *, "
      "float? scale=None)", "nn",
      kind="composite", promotion=_fused_promotion, dtypes="float", meta=_fused_meta, normalize=_fused_normalize,
      composite=_fused_attention, derivative=_fused_derivative, outputs=("output", "logsumexp"),
      reference=_fused_reference, samples=_fused_samples, method=False,
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc="softmax(query @ key^T * scale) @ value (causal: query i sees keys 0..i) and the log-sum-exp of each "
          "query's scaled scores (in float32 for half-precision inputs), which the backward uses; "
          "query, key and value share their batch dims")
defop("_scaled_dot_product_fused_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, "
      "Tensor out, Index logsumexp, Index? grad_logsumexp=None, bool is_causal=False, *, float? scale=None)", "nn",
      kind="composite",
      promotion=_fused_backward_promotion,
      dtypes="float", meta=_fused_backward_meta, normalize=_fused_normalize, composite=_fused_attention_backward,
      outputs=("grad_query", "grad_key", "grad_value"), reference=_fused_backward_reference,
      samples=_fused_backward_samples, method=False,
      tolerances={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
      doc="the gradients of _scaled_dot_product_fused_attention's output (grad_out) and log-sum-exp "
          "(grad_logsumexp, optional) with respect to query, key and value, from the saved output and log-sum-exp")
