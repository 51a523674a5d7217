"""The host side of cuDNN's attention (``ember.backends.cuda.cudnn.attention``), on the CPU with NumPy.

What runs here: Ember's shapes -> cuDNN's (B, H, S, D) dims and the refusal rules, the plan key, the padded
operands that carry the log-sum-exp's gradient (checked against the shared kernel: the identity the cuDNN
backward relies on), the kernels' plumbing with a planner that cannot build (every call falls back, the refusal
is remembered), and, where ``nvidia-cudnn-frontend`` is importable, the frontend graphs with their inferred
dims. What does not: validation, plan builds and launches, which need libcudnn and a GPU
(``python scripts/check_cudnn.py`` compares them with the fallback there).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from ember.backends.arraykernels import build_kernels
from ember.backends.cpu.library import NUMPY
from ember.backends.cuda.cudnn import attention, graphs
from cudnn_frontend import frontend

SHARED = build_kernels(NUMPY)
FORWARD, BACKWARD = (SHARED[name] for name in attention.OPS)


@pytest.mark.parametrize("lead, batch, heads", [((2, 3), 2, 3), ((2, 5, 3), 10, 3), ((4,), 4, 1), ((), 1, 1)])
def test_dims_fold_the_batch_dims_into_batch_and_heads(lead, batch, heads):
    spec = attention.attention_spec("fwd", lead + (7, 16), lead + (9, 16), lead + (9, 32), True, None, "float16")
    assert (spec.batch, spec.heads) == (batch, heads)
    assert spec.q == (batch, heads, 7, 16) and spec.k == (batch, heads, 9, 16)
    assert spec.v == (batch, heads, 9, 32) and spec.o == (batch, heads, 7, 32)
    assert spec.stats == (batch, heads, 7, 1)
    assert spec.scale == pytest.approx(1 / math.sqrt(16)) and spec.causal


@pytest.mark.parametrize("q, k, v, dtype, why", [
    ((2, 4, 16), (2, 4, 16), (2, 4, 16), "float32", "float16 and bfloat16"),
    ((2, 4, 16), (2, 4, 16), (2, 4, 16), "float64", "not float64"),
    ((2, 4, 12), (2, 4, 12), (2, 4, 16), "float16", "head dim of 12"),
    ((2, 4, 256), (2, 4, 256), (2, 4, 256), "bfloat16", "up to 128"),
    ((2, 4, 16), (2, 4, 16), (2, 4, 20), "float16", "value head dim of 20"),
    ((2, 0, 16), (2, 4, 16), (2, 4, 16), "float16", "empty"),
])
def test_refusals_say_why(q, k, v, dtype, why):
    found = attention.attention_spec("fwd", q, k, v, False, None, dtype)
    assert isinstance(found, str) and why in found


def test_padding_needs_equal_head_dims_and_adds_columns():
    spec = attention.attention_spec("bwd", (1, 2, 3, 16), (1, 2, 5, 16), (1, 2, 5, 16), False, 0.5, "float16", True)
    assert spec.q[-1] == spec.v[-1] == 16 + attention.PAD and spec.scale == 0.5
    refused = attention.attention_spec("bwd", (1, 3, 16), (1, 5, 16), (1, 5, 32), False, 0.5, "float16", True)
    assert "different" in refused
    full = attention.attention_spec("bwd", (1, 3, 128), (1, 5, 128), (1, 5, 128), False, 0.5, "float16", True)
    assert "over 128" in full
    assert attention.attention_spec("bwd", (1, 3, 128), (1, 5, 128), (1, 5, 128), False, 0.5, "float16").q[-1] == 128


def test_the_key_tells_apart_what_changes_a_graph():
    def key(**change):
        args = dict(kind="fwd", query=(2, 3, 8, 16), key=(2, 3, 8, 16), value=(2, 3, 8, 16), is_causal=False,
                    scale=None, dtype="float16")
        args.update(change)
        return attention.attention_spec(**args).key(0, (False, False, False))
    base = key()
    assert base == key()
    for change in ({"kind": "bwd"}, {"is_causal": True}, {"scale": 0.3}, {"dtype": "bfloat16"},
                   {"query": (2, 3, 4, 16)}, {"key": (2, 3, 9, 16), "value": (2, 3, 9, 16)}):
        assert key(**change) != base, change


@pytest.mark.parametrize("causal", [False, True])
def test_padded_operands_carry_the_logsumexp_gradient(causal):
    """The shared backward on the padded operands, without dLSE, equals it on the originals with dLSE: what the
    cuDNN backward computes from the same operands."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, n, 8)) for n in (5, 6, 6))
    out, lse = FORWARD(q, k, v, causal, 0.4)
    grad, grad_lse = rng.standard_normal(out.shape), rng.standard_normal(lse.shape)
    expected = BACKWARD(grad, q, k, v, out, lse, grad_lse, causal, 0.4)
    spec = attention.attention_spec("bwd", q.shape, k.shape, v.shape, causal, 0.4, "float16", True)
    pack = attention.padded_operands(np, spec, q, k, v, out, grad, grad_lse)
    assert {name: a.shape for name, a in pack.items()} == {name: spec.dims(name) for name in pack}
    got = BACKWARD(pack["dO"], pack["q"], pack["k"], pack["v"], pack["o"], lse, None, causal, 0.4)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g[..., :e.shape[-1]], e, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[0][..., 8:], 0, atol=1e-12)  # the zero columns of Q get no gradient


def test_kernels_fall_back_and_remember_the_refusal():
    def build(spec, device, settings):
        raise RuntimeError("no libcudnn here")
    planner = graphs.Planner(build)
    table = attention.kernels(np, planner, lambda *a: pytest.fail("nothing may launch"), SHARED, lambda a: 0)
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 4, 8)).astype(np.float16) for _ in range(3))
    out, lse = table[attention.OPS[0]](q, k, v, True, None)
    expected = FORWARD(q, k, v, True, None)
    np.testing.assert_array_equal(out, expected[0])
    np.testing.assert_array_equal(lse, expected[1])
    assert lse.dtype == np.float32 and out.dtype == np.float16
    assert list(planner.refused.values()) == ["RuntimeError: no libcudnn here"]
    grads = table[attention.OPS[1]](out, q, k, v, out, lse, np.zeros_like(lse), True, None)
    for g, e in zip(grads, BACKWARD(out, q, k, v, out, lse, np.zeros_like(lse), True, None)):
        np.testing.assert_array_equal(g, e)
    assert len(planner.refused) == 2  # the padded backward's key too
    table[attention.OPS[0]](q, k, v, True, None)
    assert len(planner.refused) == 2  # asked once per key
    q32 = q.astype(np.float32)  # float32: cuDNN is not even asked
    table[attention.OPS[0]](q32, q32, q32, False, None)
    assert len(planner.refused) == 2


@pytest.mark.parametrize("lead", [(2, 3), (4,)])
@pytest.mark.parametrize("causal", [False, True])
def test_the_frontend_graphs_have_our_dims(lead, causal):
    cudnn = frontend()
    spec = attention.attention_spec("fwd", lead + (7, 16), lead + (9, 16), lead + (9, 32), causal, 0.3, "float16")
    graph, operands = attention.describe(cudnn, spec)
    assert list(operands["o"].get_dim()) == list(spec.o)
    assert list(operands["stats"].get_dim()) == list(spec.stats)
    assert operands["stats"].get_data_type() == cudnn.data_type.FLOAT
    back = attention.attention_spec("bwd", lead + (7, 16), lead + (9, 16), lead + (9, 16), causal, 0.3, "bfloat16",
                                    True)
    graph, operands = attention.describe(cudnn, back)
    for name in ("dQ", "dK", "dV"):
        assert list(operands[name].get_dim()) == list(back.dims(name))
    assert back.q[-1] == 16 + attention.PAD
