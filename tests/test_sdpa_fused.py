"""scaled_dot_product_attention through the fused pair ``_scaled_dot_product_fused_attention`` / ``_backward``.

Checks that the routing changes neither values nor gradients (against the op-by-op composite it replaced), that
the calls it cannot take (a mask, dropout) keep that composite, that the shared array kernel matches the
schema's composite (values, both gradients, the log-sum-exp's included), that double backward is right and
that bad input is refused naming the op. The per-dtype values and finite-difference gradients of the two ops
are the conformance suite's (``pytest --pyargs ember.conformance --backend cpu -k scaled_dot``).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.dispatch import use_composite
from ember.dispatch.execution.plan import cached
from ember.dispatch.ops import F as O
from ember.dispatch.ops.nn.attention import attention

FUSED, BACKWARD = "_scaled_dot_product_fused_attention", "_scaled_dot_product_fused_attention_backward"
OPENCL = ember.backends.available().get("opencl", "unavailable: not registered")


@pytest.fixture
def cpu_fused_kernels(monkeypatch):
    """The shared array kernels of the pair in the cpu backend's table, as cuda has them (cpu leaves out the
    backward: in training the pair is slower than its op-by-op composite), so that routing runs here through the
    very kernels cuda runs."""
    from ember.backends.arraykernels import attention as shared
    from ember.backends.cpu.kernels import KERNELS
    from ember.backends.cpu.library import NUMPY
    for name, kernel in shared.build(NUMPY).items():
        monkeypatch.setitem(KERNELS, name, kernel)
    ember.dispatch.clear_plans()
    yield
    ember.dispatch.clear_plans()


def leaves(*shapes, dtype=ember.float64, device="cpu", seed=0):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s), dtype=dtype, device=device).requires_grad_() for s in shapes]


def grads_of(fn, tensors, seed=1):
    for t in tensors:
        t.grad = None
    out = fn(*tensors)
    weight = ember.tensor(np.random.default_rng(seed).standard_normal(tuple(out.shape)), dtype=out.dtype,
                          device=out.device)
    (out * weight).sum().backward()
    return [out.detach()] + [t.grad for t in tensors]


def close(got, expected, tol=1e-10):
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.float().cpu().numpy() if g.dtype is not ember.float64 else g.numpy(),
                                   e.float().cpu().numpy() if e.dtype is not ember.float64 else e.numpy(),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("shapes, kwargs", [
    (((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)), {}),
    (((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8)), {"is_causal": True}),
    (((6, 8), (3, 8), (3, 2)), {"is_causal": True, "scale": 0.3}),
    (((2, 3, 5, 8), (1, 7, 8), (3, 7, 4)), {}),  # broadcast batch dims: expanded, their gradients summed back
    (((1, 4, 5, 8), (1, 2, 7, 8), (1, 2, 7, 8)), {"enable_gqa": True}),
])
def test_routing_keeps_values_and_gradients(shapes, kwargs, cpu_fused_kernels):
    tensors = leaves(*shapes)
    fused = grads_of(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs), tensors)
    assert F.scaled_dot_product_attention(*tensors, **kwargs).grad_fn.name() == "ScaledDotProductFusedAttentionBackward"

    def unfused(q, k, v):
        if kwargs.get("enable_gqa"):
            k, v = (ember.repeat_interleave(t, q.shape[-3] // t.shape[-3], dim=-3) for t in (k, v))
        return attention(q, k, v, None, 0.0, kwargs.get("scale"), causal=kwargs.get("is_causal", False))[0]
    close(fused, grads_of(unfused, tensors))


def test_a_mask_or_dropout_keeps_the_composite(cpu_fused_kernels):
    q, k, v = leaves((2, 4, 8), (2, 6, 8), (2, 6, 8))
    mask = ember.tensor(np.random.default_rng(2).random((4, 6)) > 0.3)
    assert F.scaled_dot_product_attention(q, k, v, attn_mask=mask).grad_fn.name() != \
        "ScaledDotProductFusedAttentionBackward"
    assert F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).grad_fn.name() != \
        "ScaledDotProductFusedAttentionBackward"


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [ember.float64, ember.float32, ember.float16])
def test_the_array_kernel_matches_the_composite(causal, dtype, cpu_fused_kernels):
    """Output and log-sum-exp, and the gradients through both (the log-sum-exp's enters the backward)."""
    tensors = leaves((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 8), dtype=dtype)

    def both(q, k, v):  # a function of both outputs, so both gradients flow
        out, lse = O._scaled_dot_product_fused_attention(q, k, v, causal, scale=0.4)
        return out * 1.5 + lse.unsqueeze(-1).to(out.dtype)
    kernel = grads_of(both, tensors)
    with use_composite(FUSED), use_composite(BACKWARD):
        composite = grads_of(both, tensors)
    close(kernel, composite, {ember.float64: 1e-12, ember.float32: 1e-5, ember.float16: 1e-2}[dtype])
    lse = O._scaled_dot_product_fused_attention(*tensors, causal)[1]
    assert lse.dtype is (ember.float32 if dtype is ember.float16 else dtype)


def test_double_backward_through_the_saved_logsumexp(cpu_fused_kernels):
    q, k, v = leaves((1, 2, 4, 3), (1, 2, 5, 3), (1, 2, 5, 3), seed=3)
    assert ember.autograd.gradgradcheck(lambda *t: F.scaled_dot_product_attention(*t, is_causal=True), (q, k, v))


def test_bad_input_names_the_op():
    q, k, v = leaves((2, 4, 8), (2, 6, 8), (2, 6, 8))
    with pytest.raises(Exception, match=f"{FUSED}.*batch dims"):
        O._scaled_dot_product_fused_attention(q, k[:1], v[:1])
    with pytest.raises(Exception, match=f"{FUSED}.*one dtype.*float32"):
        O._scaled_dot_product_fused_attention(q, k.float(), v)
    out, lse = O._scaled_dot_product_fused_attention(q, k, v)
    with pytest.raises(Exception, match=f"{BACKWARD}.*logsumexp.*shape"):
        O._scaled_dot_product_fused_attention_backward(out, q, k, v, out, lse[:, :2])
    with pytest.raises(Exception, match=f"{BACKWARD}.*floating-point logsumexp"):
        O._scaled_dot_product_fused_attention_backward(out, q, k, v, out, lse.long())


def test_backends_without_the_kernels_keep_the_op_by_op_composite():
    q, k, v = leaves((2, 4, 8), (2, 6, 8), (2, 6, 8))
    assert F.scaled_dot_product_attention(q, k, v).grad_fn.name() != "ScaledDotProductFusedAttentionBackward"


@pytest.mark.parametrize("causal", [False, True])
def test_unrecorded_calls_on_cpu_take_the_fused_forward(causal):
    """cpu has the fused forward but not its backward: evaluation and sampling take the one kernel, training the
    op-by-op composite, with the same values."""
    q, k, v = leaves((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8))
    ember.dispatch.clear_plans()
    recorded = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert not cached(FUSED) and cached("softmax")
    ember.dispatch.clear_plans()
    with ember.no_grad():
        unrecorded = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert cached(FUSED) and not cached("softmax")
    close([unrecorded], [recorded.detach()], 1e-12)


@pytest.mark.skipif(OPENCL != "available", reason=f"opencl {OPENCL}")
def test_opencl_runs_the_pair_as_the_cpu():
    shapes = ((2, 2, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8))
    cpu = grads_of(lambda *t: F.scaled_dot_product_attention(*t, is_causal=True), leaves(*shapes, dtype=ember.float32))
    gpu = grads_of(lambda *t: F.scaled_dot_product_attention(*t, is_causal=True),
                   leaves(*shapes, dtype=ember.float32, device="opencl"))
    close(gpu, cpu, 1e-4)
