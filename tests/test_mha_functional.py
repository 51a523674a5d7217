"""F.multi_head_attention_forward against torch's, with every option; nn.MultiheadAttention delegates to it."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn import functional as F

torch = pytest.importorskip("torch")

E, H, L, S, N = 6, 2, 3, 4, 2


def _arrays(seed=0, kdim=E, vdim=E):
    rng = np.random.default_rng(seed)
    return {"query": rng.standard_normal((L, N, E)), "key": rng.standard_normal((S, N, kdim)),
            "value": rng.standard_normal((S, N, vdim)), "in_proj_weight": rng.standard_normal((3 * E, E)) * 0.3,
            "in_proj_bias": rng.standard_normal(3 * E) * 0.1, "out_proj_weight": rng.standard_normal((E, E)) * 0.3,
            "out_proj_bias": rng.standard_normal(E) * 0.1, "bias_k": rng.standard_normal((1, 1, E)),
            "bias_v": rng.standard_normal((1, 1, E)), "q_proj_weight": rng.standard_normal((E, E)) * 0.3,
            "k_proj_weight": rng.standard_normal((E, kdim)) * 0.3, "v_proj_weight": rng.standard_normal((E, vdim)) * 0.3,
            "static_k": rng.standard_normal((N * H, S, E // H)), "static_v": rng.standard_normal((N * H, S, E // H))}


def _run(lib, arrays, *, use=(), grads=(), **options):
    make = ember.tensor if lib is ember else torch.tensor
    t = {name: make(value, requires_grad=name in grads) for name, value in arrays.items()}
    function = F.multi_head_attention_forward if lib is ember else torch.nn.functional.multi_head_attention_forward
    for name in ("key_padding_mask", "attn_mask"):
        if name in options and isinstance(options[name], np.ndarray):
            options[name] = make(options[name])
    extra = {name: t[name] for name in use}
    output, weights = function(t["query"], t["key"], t["value"], E, H, t["in_proj_weight"], t["in_proj_bias"],
                               extra.get("bias_k"), extra.get("bias_v"), options.pop("add_zero_attn", False), 0.0,
                               t["out_proj_weight"], t["out_proj_bias"], **{k: v for k, v in extra.items()
                                                                            if k not in ("bias_k", "bias_v")},
                               **options)
    loss = (output ** 2).sum() + (0 if weights is None else (weights ** 2).sum())
    loss.backward()
    return output, weights, {name: t[name].grad for name in grads}


def _compare(arrays, grads=("query", "in_proj_weight"), **options):
    ours = _run(ember, arrays, grads=grads, **dict(options))
    theirs = _run(torch, arrays, grads=grads, **dict(options))
    np.testing.assert_allclose(ours[0].detach().numpy(), theirs[0].detach().numpy(), rtol=1e-10, atol=1e-10)
    assert (ours[1] is None) == (theirs[1] is None)
    if ours[1] is not None:
        np.testing.assert_allclose(ours[1].detach().numpy(), theirs[1].detach().numpy(), rtol=1e-10, atol=1e-10)
    for name in grads:
        np.testing.assert_allclose(ours[2][name].numpy(), theirs[2][name].numpy(), rtol=1e-9, atol=1e-10)


def test_packed_projection_with_masks_and_weights():
    padding = np.zeros((N, S), dtype=bool)
    padding[1, -1] = True
    causal = np.triu(np.ones((L, S), dtype=bool), 1)
    _compare(_arrays(), key_padding_mask=padding, attn_mask=causal)
    _compare(_arrays(1), attn_mask=np.random.default_rng(2).standard_normal((N * H, L, S)),
             average_attn_weights=False)
    _compare(_arrays(3), attn_mask=causal, is_causal=True, need_weights=False)


def test_bias_kv_zero_attn_and_separate_projections():
    _compare(_arrays(4), use=("bias_k", "bias_v"), add_zero_attn=True,
             key_padding_mask=np.array([[False] * S, [False, True, False, True]]))
    arrays = _arrays(5, kdim=3, vdim=5)
    _compare(arrays, grads=("query", "k_proj_weight", "v_proj_weight"),
             use=("q_proj_weight", "k_proj_weight", "v_proj_weight"), use_separate_proj_weight=True)


def test_static_keys_values_and_unbatched():
    _compare(_arrays(6), grads=("query", "static_k"), use=("static_k", "static_v"))
    arrays = _arrays(7)
    for name in ("query", "key", "value"):
        arrays[name] = arrays[name][:, 0]
    _compare(arrays, key_padding_mask=np.array([False, False, True, False]))


def test_errors_name_the_function():
    a = {k: ember.tensor(v) for k, v in _arrays().items()}
    with pytest.raises(ember.ShapeError, match="embedding dimension"):
        F.multi_head_attention_forward(a["query"], a["key"], a["value"], E + 1, H, a["in_proj_weight"], None, None,
                                       None, False, 0.0, a["out_proj_weight"], None)
    with pytest.raises(RuntimeError, match="is_causal"):
        F.multi_head_attention_forward(a["query"], a["key"], a["value"], E, H, a["in_proj_weight"], None, None,
                                       None, False, 0.0, a["out_proj_weight"], None, is_causal=True)
