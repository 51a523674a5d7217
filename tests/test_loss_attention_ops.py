"""The loss and attention ops against PyTorch: their autocast dtypes on cpu (bfloat16), values and gradients
under autocast, and PyTorch's rules that the op forms brought in (integer l1_loss, non-differentiable
loss weights, scaled_dot_product_attention's dtype and shape checks)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatch import OPS

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def both(array, requires_grad=False):
    """The same float32 values as an Ember tensor and a torch tensor."""
    array = np.asarray(array, np.float32)
    return (ember.tensor(array, requires_grad=requires_grad), torch.tensor(array, requires_grad=requires_grad))


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    probs = rng.uniform(0.05, 1, (4, 6))
    return {"a": rng.standard_normal((4, 5)), "b": rng.standard_normal((5, 6)), "t": rng.standard_normal((4, 6)),
            "p": probs / probs.sum(-1, keepdims=True), "w": rng.uniform(0.5, 2, (4, 6)),
            "q": rng.standard_normal((2, 2, 3, 4)), "k": rng.standard_normal((2, 2, 5, 4)),
            "v": rng.standard_normal((2, 2, 5, 6))}


#: name -> the call, given the functional module and the tensors; ``x`` is a bfloat16 matmul result
CALLS = {
    "mse_loss": lambda f, x, v: f.mse_loss(x, v["t"]),
    "mse_loss weighted": lambda f, x, v: f.mse_loss(x, v["t"], weight=v["w"]),
    "l1_loss": lambda f, x, v: f.l1_loss(x, v["t"], reduction="sum"),
    "smooth_l1_loss": lambda f, x, v: f.smooth_l1_loss(x, v["t"], beta=0.5),
    "huber_loss": lambda f, x, v: f.huber_loss(x, v["t"], reduction="none", delta=0.7),
    "kl_div": lambda f, x, v: f.kl_div(f.log_softmax(x, -1), v["p"], reduction="batchmean"),
    "binary_cross_entropy_with_logits": lambda f, x, v: f.binary_cross_entropy_with_logits(x, v["p"],
                                                                                           pos_weight=v["w"][0]),
    "cross_entropy (probabilities)": lambda f, x, v: f.cross_entropy(x, v["p"], label_smoothing=0.1),
    "cross_entropy (indices)": lambda f, x, v: f.cross_entropy(x, v["labels"]),
    "nll_loss": lambda f, x, v: f.nll_loss(x, v["labels"]),
    "binary_cross_entropy": lambda f, x, v: f.binary_cross_entropy(x.sigmoid(), v["p"]),
    "scaled_dot_product_attention": lambda f, x, v: f.scaled_dot_product_attention(v["q"], v["k"], v["v"],
                                                                                   is_causal=True),
    "scaled_dot_product_attention, float mask": lambda f, x, v: f.scaled_dot_product_attention(
        v["q"], v["k"], v["v"], attn_mask=v["t"][:3, :5]),
}


def _run_under_autocast(lib, functional, name, values):
    """The call under cpu autocast, on float32 inputs and a bfloat16 ``x``; returns (output, gradient of a)."""
    tensors = {key: lib.tensor(np.asarray(value, np.float32)) for key, value in values.items()}
    tensors["labels"] = lib.tensor([0, 3, 5, 1])
    a = lib.tensor(np.asarray(values["a"], np.float32), requires_grad=True)
    for key in ("q", "k"):
        tensors[key].requires_grad_()
    with lib.autocast("cpu"):
        x = a @ tensors["b"]
        out = CALLS[name](functional, x, tensors)
    out.float().sum().backward()
    return out, a.grad, tensors["q"].grad


@pytest.mark.parametrize("name", list(CALLS))
def test_autocast_dtypes_values_and_gradients_match_torch_on_cpu(name):
    values = _inputs()
    e_out, e_grad, e_qgrad = _run_under_autocast(ember, F, name, values)
    t_out, t_grad, t_qgrad = _run_under_autocast(torch, TF, name, values)
    assert str(e_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1]
    assert e_out.dtype in (ember.float32, ember.bfloat16)
    np.testing.assert_allclose(e_out.float().detach().numpy(), t_out.float().detach().numpy(), rtol=2e-2, atol=2e-2)
    for e, t in ((e_grad, t_grad), (e_qgrad, t_qgrad)):
        assert (e is None) == (t is None)
        if e is not None:
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=3e-2, atol=3e-2)


def test_transformer_encoder_layer_attention_runs_in_bfloat16_like_torch():
    """MultiheadAttention without weights runs the scaled_dot_product_attention op, as PyTorch's does."""
    ember.manual_seed(0)
    layer = nn.MultiheadAttention(8, 2, batch_first=True)
    x = ember.randn(2, 5, 8)
    with ember.autocast("cpu"):
        out, weights = layer(x, x, x, need_weights=False)
        _, returned = layer(x, x, x)
    assert out.dtype is ember.bfloat16 and weights is None
    assert returned.dtype in (ember.bfloat16, ember.float32)


def test_declared_policies_follow_pytorch_lists():
    """CUDA's lists cannot be run here; binary_cross_entropy is the op whose lists differ."""
    assert OPS["binary_cross_entropy"].autocast_category("cuda") == "banned"
    assert OPS["binary_cross_entropy"].autocast_category("cpu") == "float32"
    assert OPS["binary_cross_entropy_with_logits"].autocast_category("cuda") == "float32"
    assert OPS["scaled_dot_product_attention"].autocast_category("cuda") == "lower"
    for backward in ("nll_loss_backward", "cross_entropy_indices_backward"):
        assert OPS[backward].autocast_policy is None


# -- l1_loss of integers ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_l1_loss_of_integers_matches_torch(reduction):
    a, b = [3, -2, 7], [1, 4, 7]
    out = F.l1_loss(ember.tensor(a, dtype=ember.int32), ember.tensor(b, dtype=ember.int32), reduction=reduction)
    expected = TF.l1_loss(torch.tensor(a, dtype=torch.int32), torch.tensor(b, dtype=torch.int32), reduction=reduction)
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_l1_loss_mean_of_integers_is_refused():
    with pytest.raises(ember.DtypeError, match="l1_loss: reduction='mean' needs floating point inputs"):
        F.l1_loss(ember.tensor([1, 2]), ember.tensor([0, 2]))


# -- weights are constants ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("argument", ["weight", "pos_weight"])
def test_binary_cross_entropy_with_logits_weights_requiring_grad_are_refused_like_torch(argument):
    x, t = ember.randn(3, 4), ember.rand(3, 4)
    weight = ember.rand(4, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"not differentiable with respect to argument '{argument}'"):
        TF.binary_cross_entropy_with_logits(torch.randn(3, 4), torch.rand(3, 4),
                                            **{argument: torch.rand(4, requires_grad=True)})
    with pytest.raises(RuntimeError, match=f"binary_cross_entropy_with_logits: not differentiable with respect "
                                           f"to argument '{argument}'"):
        F.binary_cross_entropy_with_logits(x, t, **{argument: weight})
    with ember.no_grad():  # nothing is recorded, so nothing to refuse
        F.binary_cross_entropy_with_logits(x, t, **{argument: weight})


# -- scaled_dot_product_attention's checks -----------------------------------------------------------------------

def _qkv(dtype=ember.float32):
    return ember.randn(2, 3, 4, dtype=dtype), ember.randn(2, 5, 4, dtype=dtype), ember.randn(2, 5, 6, dtype=dtype)


def test_sdpa_refuses_a_float_mask_of_another_dtype_like_torch():
    q, k, v = _qkv()
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        TF.scaled_dot_product_attention(torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6),
                                        attn_mask=torch.zeros(3, 5, dtype=torch.float64))
    with pytest.raises(ember.DtypeError, match=r"scaled_dot_product_attention: expected attn_mask to be bool or of "
                                               r"the query's dtype float32, got attn_mask.dtype float64"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=ember.zeros(3, 5, dtype=ember.float64))


def test_sdpa_refuses_query_key_value_of_different_dtypes_like_torch():
    q, k, v = _qkv()
    with pytest.raises(RuntimeError, match="same dtype"):
        TF.scaled_dot_product_attention(torch.randn(2, 3, 4, dtype=torch.float64), torch.randn(2, 5, 4),
                                        torch.randn(2, 5, 6))
    with pytest.raises(ember.DtypeError, match="query.dtype float64, key.dtype float32 and value.dtype float32"):
        F.scaled_dot_product_attention(q.double(), k, v)


def test_sdpa_refuses_a_mask_that_would_enlarge_the_scores():
    q, k, v = _qkv()
    with pytest.raises(ember.ShapeError, match=r"attn_mask of shape \(4, 2, 3, 5\) must broadcast to the attention "
                                               r"scores' shape \(2, 3, 5\)"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=ember.zeros(4, 2, 3, 5))


def test_sdpa_shape_errors_name_the_shapes():
    q, k, v = _qkv()
    with pytest.raises(ember.ShapeError, match=r"at least 2 dimensions.*shape=\(4,\)"):
        F.scaled_dot_product_attention(ember.randn(4), k, v)
    with pytest.raises(ember.ShapeError, match="multiple of key's and value's"):
        F.scaled_dot_product_attention(ember.randn(1, 4, 3, 4), ember.randn(1, 3, 5, 4), ember.randn(1, 3, 5, 6),
                                       enable_gqa=True)
    with pytest.raises(ValueError, match="dropout_p has to be between 0 and 1"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.5)


def test_sdpa_output_dtype_is_the_query_dtype_with_a_bool_mask():
    q, k, v = _qkv(ember.float64)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.ones(3, 5, dtype=ember.bool))
    assert out.dtype is ember.float64 and tuple(out.shape) == (2, 3, 6)
