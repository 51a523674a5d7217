"""cuDNN's fused attention (SDPA) as the override of ``_scaled_dot_product_fused_attention`` and its backward.

Structured as the convolution path: ``attention_spec`` maps Ember's shapes onto cuDNN's (B, H, S, D) operands or
says why cuDNN is not asked (float32 and float64, which cuDNN's SDPA does not take; head dims it has no engine
for; empty operands); ``describe`` writes the frontend graph (``graph.sdpa`` with the stats, the natural-log
log-sum-exp Ember's op returns, or ``graph.sdpa_backward``); ``graphs.Planner`` builds each key once and
remembers refusals; ``kernels`` runs a plan or the shared array kernel. Everything but the launch runs on the
CPU in CI (tests/test_cudnn_attention_host.py).

The gradient of the log-sum-exp: Ember's backward takes one (its autograd hands zeros for an unused output).
cuDNN's backward has no input for it, but it enters only as ``rowsum(dO * O) - dLSE``, the one place O is
read. So the backward appends ``PAD`` columns: zeros to Q, K and V (scores and dO V^T are unchanged), a column
of -1 to O and the gradient of the log-sum-exp to dO (the row sum gains -dLSE); dV's extra columns are
dropped. Three small copies of (S, D) operands against an S x S computation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ember.dispatch import FLAGS

from .graphs import Plan, Planner, data_types, finalize
from .specs import contiguous_strides

#: the kernels this module provides, by op name (what a fallback table must cover)
OPS = ("_scaled_dot_product_fused_attention", "_scaled_dot_product_fused_attention_backward")
#: dtypes cuDNN's SDPA takes; float32 and float64 take the shared array kernel
DTYPES = ("float16", "bfloat16")
MAX_HEAD_DIM = 128  # what every cuDNN 9 SDPA engine takes (Hopper takes 256 forward; cuDNN may refuse either way)
PAD = 8  # head-dim columns appended to carry the log-sum-exp's gradient (head dims are multiples of 8)


@dataclass(frozen=True)
class AttentionSpec:
    """One cuDNN SDPA call on contiguous (B, H, S, D) operands; ``padded``: the backward carries dLSE."""

    kind: str  # "fwd" or "bwd"
    batch: int
    heads: int
    length: int  # queries
    source: int  # keys
    head_dim: int  # query and key (padded where ``padded``)
    value_dim: int  # value and output (padded where ``padded``)
    causal: bool
    scale: float
    dtype: str
    padded: bool = False

    @property
    def q(self) -> tuple:
        return (self.batch, self.heads, self.length, self.head_dim)

    @property
    def k(self) -> tuple:
        return (self.batch, self.heads, self.source, self.head_dim)

    @property
    def v(self) -> tuple:
        return (self.batch, self.heads, self.source, self.value_dim)

    @property
    def o(self) -> tuple:
        return (self.batch, self.heads, self.length, self.value_dim)

    @property
    def stats(self) -> tuple:
        return (self.batch, self.heads, self.length, 1)

    def dims(self, name: str) -> tuple:
        """An operand's dims by its name in the variant pack."""
        return {"q": self.q, "k": self.k, "v": self.v, "o": self.o, "dO": self.o, "stats": self.stats,
                "dQ": self.q, "dK": self.k, "dV": self.v}[name]

    def key(self, device: int, settings: tuple) -> tuple:
        """What a built graph depends on: every field, the device and the flags."""
        return (self.kind, self.batch, self.heads, self.length, self.source, self.head_dim, self.value_dim,
                self.causal, self.scale, self.dtype, self.padded, device, settings)


def _batch_heads(lead: tuple) -> tuple:
    """(B, H) from the batch dims: (..., H) of a 4-D or longer tensor, (N, 1) of a 3-D one, (1, 1) of a matrix."""
    if len(lead) >= 2:
        return math.prod(lead[:-1]), lead[-1]
    return (lead[0] if lead else 1), 1


def attention_spec(kind: str, query: tuple, key: tuple, value: tuple, is_causal: bool, scale: float | None,
                   dtype: str, padded: bool = False) -> AttentionSpec | str:
    """The cuDNN call for Ember shapes query (..., L, E), key (..., S, E), value (..., S, Ev), or why not."""
    if dtype not in DTYPES:
        return f"cuDNN's SDPA takes float16 and bfloat16, not {dtype}"
    length, head_dim = query[-2:]
    source, value_dim = value[-2:]
    if 0 in query or 0 in key or 0 in value:
        return "an empty operand"
    for name, d in (("query/key", head_dim), ("value", value_dim)):
        if d % 8 or d > MAX_HEAD_DIM:
            return f"a {name} head dim of {d} (cuDNN's SDPA takes multiples of 8 up to {MAX_HEAD_DIM})"
    if padded and head_dim != value_dim:
        return "the log-sum-exp's gradient with different query and value head dims"
    if padded and head_dim + PAD > MAX_HEAD_DIM:
        return f"the log-sum-exp's gradient with a head dim of {head_dim} (over {MAX_HEAD_DIM} with its columns)"
    batch, heads = _batch_heads(tuple(query[:-2]))
    extra = PAD if padded else 0
    scale = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
    return AttentionSpec(kind, batch, heads, length, source, head_dim + extra, value_dim + extra, bool(is_causal),
                         scale, dtype, padded)


def describe(cudnn, spec: AttentionSpec, handle=None) -> tuple:
    """(graph, operands): the spec as a frontend graph, contiguous tensors named as in the variant pack."""
    io, compute = data_types(cudnn, spec.dtype)
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=compute, compute_data_type=compute, handle=handle)

    def operand(name: str, data_type=io):
        dims = spec.dims(name)
        return graph.tensor(name=name, dim=list(dims), stride=list(contiguous_strides(dims)), data_type=data_type)

    def output(t, name: str, data_type=io):
        dims = spec.dims(name)
        t.set_dim(list(dims)).set_stride(list(contiguous_strides(dims))).set_data_type(data_type).set_output(True)
        return t

    q, k, v = operand("q"), operand("k"), operand("v")
    attributes = {"attn_scale": spec.scale, "use_causal_mask": spec.causal}
    if spec.kind == "fwd":
        o, stats = graph.sdpa(q=q, k=k, v=v, generate_stats=True, **attributes)
        for t, name in ((o, "o"), (stats, "stats")):  # the frontend infers their dims: they must be ours
            if list(t.get_dim()) != list(spec.dims(name)):
                raise ValueError(f"cuDNN infers {name} dims {t.get_dim()} for {spec}, expected {list(spec.dims(name))}")
        return graph, {"q": q, "k": k, "v": v, "o": output(o, "o"),
                       "stats": output(stats, "stats", cudnn.data_type.FLOAT)}
    if spec.kind != "bwd":
        raise ValueError(f"unknown attention kind {spec.kind!r}")
    o, grad, stats = operand("o"), operand("dO"), operand("stats", cudnn.data_type.FLOAT)
    dq, dk, dv = graph.sdpa_backward(q=q, k=k, v=v, o=o, dO=grad, stats=stats, **attributes)
    return graph, {"q": q, "k": k, "v": v, "o": o, "dO": grad, "stats": stats, "dQ": output(dq, "dQ"),
                   "dK": output(dk, "dK"), "dV": output(dv, "dV")}


def padded_operands(xp, spec: AttentionSpec, q, k, v, o, grad, grad_logsumexp) -> dict:
    """The backward's inputs with ``PAD`` head-dim columns appended that carry ``grad_logsumexp`` (module doc)."""
    def grown(a, dims: tuple, column=None):
        out = xp.zeros(dims, a.dtype)
        out[..., :a.shape[-1]] = a.reshape(dims[:-1] + (a.shape[-1],))
        if column is not None:
            out[..., a.shape[-1]] = column
        return out
    lse_grad = grad_logsumexp.reshape(spec.o[:-1]).astype(q.dtype)
    return {"q": grown(q, spec.q), "k": grown(k, spec.k), "v": grown(v, spec.v), "o": grown(o, spec.o, -1),
            "dO": grown(grad, spec.o, lse_grad)}


def builder(cupy, cudnn, handle: Callable) -> Callable:
    """``build(spec, device, settings) -> Plan`` for the planner (GPU-only: validation and plans need libcudnn)."""
    def build(spec: AttentionSpec, device: int, settings: tuple) -> Plan:
        with cupy.cuda.Device(device):
            graph, operands = describe(cudnn, spec, handle(device))
            finalize(cudnn, graph, settings)
            return Plan(graph, {name: t.get_uid() for name, t in operands.items()}, graph.get_workspace_size(),
                        tuned=not settings[2])
    return build


def kernels(xp, planner: Planner, run: Callable, fallbacks: dict, device_of: Callable) -> dict:
    """The override table: one kernel per name in ``OPS``, each with ``fallbacks[name]`` behind it."""
    forward_fallback, backward_fallback = fallbacks[OPS[0]], fallbacks[OPS[1]]

    def launch(spec: AttentionSpec | str, operands: dict, outputs: dict, device: int) -> dict | None:
        """``outputs`` (name -> dims, dtype) computed by cuDNN, or None where the fallback has to."""
        if isinstance(spec, str) or not FLAGS.cudnn_enabled:
            return None
        plan = planner.plan(spec, device)
        if plan is None:
            return None
        made = {name: xp.empty(dims, dtype) for name, (dims, dtype) in outputs.items()}
        pack = {name: xp.ascontiguousarray(a).reshape(spec.dims(name)) for name, a in operands.items()}
        if not planner.execute(run, plan, {**pack, **made}, spec, device, f"cuDNN SDPA {spec.kind}"):
            return None
        return made

    def _scaled_dot_product_fused_attention(query, key, value, is_causal=False, scale=None):
        spec = attention_spec("fwd", query.shape, key.shape, value.shape, is_causal, scale, query.dtype.name)
        outputs = None if isinstance(spec, str) else {"o": (spec.o, query.dtype), "stats": (spec.stats, xp.float32)}
        made = launch(spec, {"q": query, "k": key, "v": value}, outputs, device_of(query))
        if made is None:
            return forward_fallback(query, key, value, is_causal, scale)
        lead = tuple(query.shape[:-1])
        return made["o"].reshape(lead + (value.shape[-1],)), made["stats"].reshape(lead)

    def _scaled_dot_product_fused_attention_backward(grad_out, query, key, value, out, logsumexp,
                                                     grad_logsumexp=None, is_causal=False, scale=None):
        padded = grad_logsumexp is not None
        spec = attention_spec("bwd", query.shape, key.shape, value.shape, is_causal, scale, query.dtype.name, padded)
        if not isinstance(spec, str) and logsumexp.dtype != xp.float32:
            spec = f"a {logsumexp.dtype} log-sum-exp (cuDNN's stats are float32)"
        made = None
        if not isinstance(spec, str) and FLAGS.cudnn_enabled:
            if padded:
                operands = padded_operands(xp, spec, query, key, value, out, grad_out, grad_logsumexp)
            else:
                operands = {"q": query, "k": key, "v": value, "o": out, "dO": grad_out}
            operands["stats"] = logsumexp
            made = launch(spec, operands, {name: (spec.dims(name), query.dtype) for name in ("dQ", "dK", "dV")},
                          device_of(query))
        if made is None:
            return backward_fallback(grad_out, query, key, value, out, logsumexp, grad_logsumexp, is_causal, scale)
        shapes = (query.shape, key.shape, value.shape)
        return tuple(xp.ascontiguousarray(made[name][..., :s[-1]]).reshape(s) if padded else made[name].reshape(s)
                     for name, s in zip(("dQ", "dK", "dV"), shapes))

    return {OPS[0]: _scaled_dot_product_fused_attention, OPS[1]: _scaled_dot_product_fused_attention_backward}
