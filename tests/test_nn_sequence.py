"""Sequence layers against PyTorch: RNN/LSTM/GRU and cells, MultiheadAttention, the Transformer family,
``scaled_dot_product_attention`` and ``interpolate``.

Each module is built in both frameworks, torch's weights are loaded into Ember through ``load_state_dict``
(so the parameter names must match too), and outputs and gradients (of the inputs, initial states and every
parameter) are compared: tightly in float64, loosely in float32. Dropout > 0 is checked in eval mode, with
p = 1 (which is deterministic), or by statistics.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.dispatch import ShapeError

torch = pytest.importorskip("torch")
# PyTorch's own notes on paths it takes (oneDNN, nested tensors, mixed mask types): not about Ember.
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*(oneDNN|enable_nested_tensor|mismatched key_padding_mask).*:UserWarning")
TF = torch.nn.functional
EF = ember.nn.functional

TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}
DTYPES = {"float64": (ember.float64, torch.float64), "float32": (ember.float32, torch.float32)}


# -- helpers ---------------------------------------------------------------------------------------------------

def pair(array, requires_grad=True):
    """The same values as an Ember and a torch tensor (bool and integer arrays never require grad)."""
    array = np.asarray(array)
    grad = requires_grad and array.dtype.kind == "f"
    return ember.tensor(array, requires_grad=grad), torch.tensor(array, requires_grad=grad)


def load_torch_weights(module, reference) -> None:
    """Copy ``reference``'s state_dict into ``module``; the keys must be PyTorch's, in PyTorch's order."""
    state = reference.state_dict()
    assert list(module.state_dict()) == list(state)
    module.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in state.items()})


def assert_close(actual, expected, dtype_name: str) -> None:
    if expected is None:
        assert actual is None
        return
    actual = actual.detach().numpy() if isinstance(actual, ember.Tensor) else np.asarray(actual)
    expected = expected.detach().numpy()
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, equal_nan=True, **TOL[dtype_name])


def flat(outputs) -> list:
    """Every tensor in a nested tuple of outputs, in order (None skipped)."""
    if outputs is None:
        return []
    if isinstance(outputs, (tuple, list)):
        return [t for o in outputs for t in flat(o)]
    return [outputs]


def backward_both(ember_outputs, torch_outputs, rng) -> None:
    """Backpropagate the same random cotangents through both frameworks' outputs."""
    e_total, t_total = None, None
    for e, t in zip(flat(ember_outputs), flat(torch_outputs)):
        cotangent = rng.standard_normal(tuple(t.shape)).astype(t.detach().numpy().dtype)
        e_term = (e * ember.tensor(cotangent)).sum()
        t_term = (t * torch.tensor(cotangent)).sum()
        e_total = e_term if e_total is None else e_total + e_term
        t_total = t_term if t_total is None else t_total + t_term
    e_total.backward()
    t_total.backward()


def compare_module(module, reference, e_inputs, t_inputs, dtype_name, rng, e_kwargs=None, t_kwargs=None):
    """Forward both modules, compare the outputs, backpropagate, compare every input and parameter gradient."""
    e_out = module(*e_inputs, **(e_kwargs or {}))
    t_out = reference(*t_inputs, **(t_kwargs or {}))
    e_flat, t_flat = flat(e_out), flat(t_out)
    assert len(e_flat) == len(t_flat)
    for e, t in zip(e_flat, t_flat):
        assert_close(e, t, dtype_name)
    backward_both(e_out, t_out, rng)
    for e, t in zip(flat(e_inputs), flat(t_inputs)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            assert_close(e.grad, t.grad, dtype_name)
    t_params = dict(reference.named_parameters())
    for name, param in module.named_parameters():
        assert_close(param.grad, t_params[name].grad, dtype_name)
    return e_out, t_out


# -- scaled_dot_product_attention ------------------------------------------------------------------------------

SDPA_CASES = {
    "plain": dict(),
    "causal": dict(is_causal=True),
    "causal, more queries than keys": dict(is_causal=True, q_len=9),
    "bool mask": dict(mask="bool"),
    "bool mask, a row fully masked": dict(mask="bool-dead"),
    "bool mask broadcast over heads": dict(mask="bool-batch"),
    "float mask": dict(mask="float"),
    "float mask with -inf": dict(mask="float-inf"),
    "scale": dict(scale=0.37),
    "3-D input": dict(shape="3d"),
    "grouped-query heads": dict(gqa=True),
}


def _sdpa_inputs(case, rng, dtype):
    batch, heads, length, source, e, ev = 2, 4, case.get("q_len", 5), 7, 8, 6
    kv_heads = 2 if case.get("gqa") else heads
    if case.get("shape") == "3d":
        shapes = [(batch, length, e), (batch, source, e), (batch, source, ev)]
    else:
        shapes = [(batch, heads, length, e), (batch, kv_heads, source, e), (batch, kv_heads, source, ev)]
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    mask = case.get("mask")
    if mask is None:
        mask_array = None
    elif mask.startswith("bool"):
        mask_array = rng.random((batch, 1, length, source) if mask == "bool-batch" else (length, source)) > 0.4
        mask_array[..., 0] = True
        if mask == "bool-dead":
            mask_array[2] = False
    else:
        mask_array = rng.standard_normal((length, source)).astype(dtype)
        if mask == "float-inf":
            mask_array[1, 2:] = -np.inf
    return arrays, mask_array


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("case_name", list(SDPA_CASES))
def test_sdpa_matches_torch(case_name, dtype_name):
    case = SDPA_CASES[case_name]
    rng = np.random.default_rng(0)
    arrays, mask = _sdpa_inputs(case, rng, dtype_name)
    e_in, t_in = zip(*(pair(a) for a in arrays))
    kwargs = dict(is_causal=case.get("is_causal", False), scale=case.get("scale"))
    if case.get("gqa"):
        kwargs["enable_gqa"] = True
    e_mask, t_mask = pair(mask, requires_grad=False) if mask is not None else (None, None)
    e_out = EF.scaled_dot_product_attention(*e_in, attn_mask=e_mask, **kwargs)
    t_out = TF.scaled_dot_product_attention(*t_in, attn_mask=t_mask, **kwargs)
    assert_close(e_out, t_out, dtype_name)
    assert not np.isnan(e_out.detach().numpy()).any()
    backward_both(e_out, t_out, rng)
    for e, t in zip(e_in, t_in):
        assert_close(e.grad, t.grad, dtype_name)
        assert not np.isnan(e.grad.numpy()).any()


def test_sdpa_dropout_keeps_the_expected_value():
    """Weights dropped with p and rescaled by 1/(1-p): each output row still averages value's mean."""
    ember.manual_seed(0)
    query = ember.zeros(1, 1, 400, 4)  # uniform attention weights 1/S
    key = ember.zeros(1, 1, 50, 4)
    value = ember.ones(1, 1, 50, 1)
    out = EF.scaled_dot_product_attention(query, key, value, dropout_p=0.5).numpy().ravel()
    assert abs(out.mean() - 1.0) < 0.03
    assert out.std() > 0.05  # something was dropped
    exact = EF.scaled_dot_product_attention(query, key, value, dropout_p=0.0).numpy()
    np.testing.assert_allclose(exact, 1.0, rtol=1e-6)


def test_sdpa_rejects_bad_inputs():
    q, k, v = ember.randn(2, 3, 4), ember.randn(2, 5, 4), ember.randn(2, 5, 6)
    with pytest.raises(ShapeError, match="query and key"):
        EF.scaled_dot_product_attention(q, ember.randn(2, 5, 3), v)
    with pytest.raises(ShapeError, match="same sequence length"):
        EF.scaled_dot_product_attention(q, k, ember.randn(2, 4, 6))
    with pytest.raises(ValueError, match="not both"):
        EF.scaled_dot_product_attention(q, k, v, attn_mask=ember.ones(3, 5, dtype=ember.bool), is_causal=True)
    with pytest.raises(ember.DtypeError, match="attn_mask"):
        EF.scaled_dot_product_attention(q, k, v, attn_mask=ember.ones(3, 5, dtype=ember.int64))


# -- interpolate -----------------------------------------------------------------------------------------------

INTERPOLATE_CASES = [
    ((2, 3, 7), "nearest"), ((2, 3, 7), "nearest-exact"), ((2, 3, 7), "linear"), ((2, 3, 7), "area"),
    ((2, 3, 5, 6), "nearest"), ((2, 3, 5, 6), "nearest-exact"), ((2, 3, 5, 6), "bilinear"),
    ((2, 3, 5, 6), "bicubic"), ((2, 3, 5, 6), "area"),
    ((1, 2, 3, 4, 5), "nearest"), ((1, 2, 3, 4, 5), "trilinear"), ((1, 2, 3, 4, 5), "area"),
]
RESIZES = {"size up": dict(size=(11, 9, 7)), "size down": dict(size=(2, 3, 3)), "size 1": dict(size=(1, 1, 1)),
           "scale 2": dict(scale_factor=2), "scale 1.7": dict(scale_factor=1.7), "scale 0.5": dict(scale_factor=0.5),
           "scale per dim, recomputed": dict(scale_factor=(1.5, 2.5, 0.8), recompute_scale_factor=True)}


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("resize", list(RESIZES))
@pytest.mark.parametrize("shape,mode", INTERPOLATE_CASES, ids=[f"{len(s)}d-{m}" for s, m in INTERPOLATE_CASES])
def test_interpolate_matches_torch(shape, mode, resize, dtype_name):
    spatial = len(shape) - 2
    kwargs = dict(RESIZES[resize])
    for key in ("size", "scale_factor"):
        if isinstance(kwargs.get(key), tuple):
            kwargs[key] = kwargs[key][:spatial]
    if mode == "area" and "scale_factor" in kwargs:
        kwargs["recompute_scale_factor"] = True  # PyTorch's area mode ignores the scale otherwise too
    corner_options = [None, True, False] if mode in ("linear", "bilinear", "bicubic", "trilinear") else [None]
    rng = np.random.default_rng(1)
    for align_corners in corner_options:
        x_e, x_t = pair(rng.standard_normal(shape).astype(dtype_name))
        e_out = EF.interpolate(x_e, mode=mode, align_corners=align_corners, **kwargs)
        t_out = TF.interpolate(x_t, mode=mode, align_corners=align_corners, **kwargs)
        assert e_out.dtype == x_e.dtype
        assert_close(e_out, t_out, dtype_name)
        backward_both(e_out, t_out, rng)
        assert_close(x_e.grad, x_t.grad, dtype_name)


def test_interpolate_nearest_keeps_integer_images():
    image = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.uint8)
    e_out = EF.interpolate(ember.tensor(image), size=(7, 3))
    t_out = TF.interpolate(torch.tensor(image), size=(7, 3))
    assert e_out.dtype == ember.uint8
    np.testing.assert_array_equal(e_out.numpy(), t_out.numpy())


def test_interpolate_half_precision_computes_in_float32():
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 4)).astype(np.float16)
    e_out = EF.interpolate(ember.tensor(x), scale_factor=1.5, mode="bilinear")
    t_out = TF.interpolate(torch.tensor(x).float(), scale_factor=1.5, mode="bilinear").half()
    assert e_out.dtype == ember.float16
    np.testing.assert_allclose(e_out.numpy().astype(np.float32), t_out.numpy().astype(np.float32), rtol=1e-3,
                               atol=1e-3)


def test_interpolate_rejects_bad_arguments():
    x = ember.randn(1, 2, 4, 4)
    with pytest.raises(ValueError, match="exactly one"):
        EF.interpolate(x)
    with pytest.raises(ValueError, match="exactly one"):
        EF.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners"):
        EF.interpolate(x, size=3, mode="nearest", align_corners=True)
    with pytest.raises(ShapeError, match="'linear' expects 3-D"):
        EF.interpolate(x, size=3, mode="linear")
    with pytest.raises(ValueError, match="mode must be one of"):
        EF.interpolate(x, size=3, mode="cubic")
    with pytest.raises(ValueError, match="2 elements"):
        EF.interpolate(x, size=(3, 3, 3))


# -- RNN, LSTM, GRU --------------------------------------------------------------------------------------------

RNN_KINDS = {"rnn-tanh": ("RNN", {}), "rnn-relu": ("RNN", dict(nonlinearity="relu")), "lstm": ("LSTM", {}),
             "gru": ("GRU", {})}
RNN_OPTIONS = {
    "default": dict(),
    "batch_first": dict(batch_first=True),
    "2 layers": dict(num_layers=2),
    "bidirectional": dict(bidirectional=True),
    "2 layers bidirectional batch_first": dict(num_layers=2, bidirectional=True, batch_first=True),
    "no bias": dict(bias=False),
    "initial state": dict(num_layers=2, bidirectional=True, initial=True),
    "unbatched": dict(unbatched=True, initial=True),
    "unbatched bidirectional": dict(unbatched=True, bidirectional=True),
    "dropout in eval mode": dict(num_layers=2, dropout=0.5, eval=True),
    "dropout 1 in training": dict(num_layers=2, dropout=1.0),
    "projection": dict(num_layers=2, bidirectional=True, proj_size=2, initial=True),
}
INPUT, HIDDEN, LENGTH, BATCH = 4, 5, 6, 3


def _build_rnn(kind, options, dtype_name, **extra):
    name, kwargs = RNN_KINDS[kind]
    kwargs = dict(kwargs, **{k: v for k, v in options.items() if k not in ("initial", "unbatched", "eval")}, **extra)
    e_dtype, t_dtype = DTYPES[dtype_name]
    reference = getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs).to(t_dtype)
    module = getattr(nn, name)(INPUT, HIDDEN, dtype=e_dtype, **kwargs)
    load_torch_weights(module, reference)
    if options.get("eval"):
        module.eval()
        reference.eval()
    return module, reference


def _rnn_inputs(kind, options, rng, dtype_name):
    unbatched = options.get("unbatched")
    shape = (LENGTH, INPUT) if unbatched else ((BATCH, LENGTH, INPUT) if options.get("batch_first")
                                                else (LENGTH, BATCH, INPUT))
    e_x, t_x = pair(rng.standard_normal(shape).astype(dtype_name))
    if not options.get("initial"):
        return (e_x,), (t_x,)
    layers = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    batch = () if unbatched else (BATCH,)
    hidden = options.get("proj_size") or HIDDEN
    e_h, t_h = pair(rng.standard_normal((layers,) + batch + (hidden,)).astype(dtype_name))
    if kind != "lstm":
        return (e_x, e_h), (t_x, t_h)
    e_c, t_c = pair(rng.standard_normal((layers,) + batch + (HIDDEN,)).astype(dtype_name))
    return (e_x, (e_h, e_c)), (t_x, (t_h, t_c))


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("kind,option", [(k, o) for k in RNN_KINDS for o in RNN_OPTIONS
                                         if k == "lstm" or "proj_size" not in RNN_OPTIONS[o]])
def test_rnn_matches_torch(kind, option, dtype_name):
    options = RNN_OPTIONS[option]
    rng = np.random.default_rng(3)
    module, reference = _build_rnn(kind, options, dtype_name)
    e_in, t_in = _rnn_inputs(kind, options, rng, dtype_name)
    e_out, _ = compare_module(module, reference, e_in, t_in, dtype_name, rng)
    assert len(e_out) == 2
    if kind == "lstm":
        assert isinstance(e_out[1], tuple) and len(e_out[1]) == 2


def test_rnn_parameter_names_shapes_and_init_follow_torch():
    for kind in RNN_KINDS:
        module, reference = _build_rnn(kind, dict(num_layers=2, bidirectional=True), "float32")
        fresh = getattr(nn, RNN_KINDS[kind][0])(INPUT, HIDDEN, num_layers=2, bidirectional=True,
                                                **RNN_KINDS[kind][1])
        shapes = {k: tuple(v.shape) for k, v in reference.state_dict().items()}
        assert {k: tuple(v.shape) for k, v in fresh.state_dict().items()} == shapes
        bound = 1 / math.sqrt(HIDDEN)
        values = np.concatenate([p.detach().numpy().ravel() for p in fresh.parameters()])
        assert np.abs(values).max() <= bound and values.std() > bound / 3
        assert all(isinstance(p, nn.Parameter) for p in fresh.parameters())
        assert len(fresh.all_weights) == 4 and len(fresh.all_weights[0]) == 4


def test_rnn_dropout_between_layers_drops_in_training_only():
    ember.manual_seed(0)
    module = nn.GRU(INPUT, HIDDEN, num_layers=2, dropout=0.5)
    x = ember.randn(LENGTH, BATCH, INPUT)
    first, second = module(x)[0].detach().numpy(), module(x)[0].detach().numpy()
    assert not np.allclose(first, second)
    module.eval()
    np.testing.assert_array_equal(module(x)[0].detach().numpy(), module(x)[0].detach().numpy())
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(INPUT, HIDDEN, dropout=0.2)


def test_rnn_rejects_bad_shapes():
    module = nn.LSTM(INPUT, HIDDEN, num_layers=2)
    with pytest.raises(ShapeError, match="input_size"):
        module(ember.randn(LENGTH, BATCH, INPUT + 1))
    with pytest.raises(ShapeError, match="expected hx size"):
        module(ember.randn(LENGTH, BATCH, INPUT), (ember.zeros(1, BATCH, HIDDEN), ember.zeros(2, BATCH, HIDDEN)))
    with pytest.raises(ShapeError, match="unbatched 2-D"):
        module(ember.randn(LENGTH, INPUT), (ember.zeros(2, 1, HIDDEN), ember.zeros(2, 1, HIDDEN)))
    with pytest.raises(ValueError, match="proj_size"):
        nn.RNNBase("GRU", INPUT, HIDDEN, proj_size=2)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(INPUT, HIDDEN, nonlinearity="sigmoid")


CELLS = {"rnn-tanh": ("RNNCell", {}), "rnn-relu": ("RNNCell", dict(nonlinearity="relu")), "lstm": ("LSTMCell", {}),
         "gru": ("GRUCell", {}), "gru no bias": ("GRUCell", dict(bias=False))}


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("state", ["zeros", "given", "unbatched"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_rnn_cells_match_torch(cell, state, dtype_name):
    name, kwargs = CELLS[cell]
    e_dtype, t_dtype = DTYPES[dtype_name]
    reference = getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs).to(t_dtype)
    module = getattr(nn, name)(INPUT, HIDDEN, dtype=e_dtype, **kwargs)
    load_torch_weights(module, reference)
    rng = np.random.default_rng(4)
    batch = () if state == "unbatched" else (BATCH,)
    e_x, t_x = pair(rng.standard_normal(batch + (INPUT,)).astype(dtype_name))
    e_in, t_in = (e_x,), (t_x,)
    if state != "zeros":
        states = [pair(rng.standard_normal(batch + (HIDDEN,)).astype(dtype_name)) for _ in range(2)]
        if name == "LSTMCell":
            e_in += ((states[0][0], states[1][0]),)
            t_in += ((states[0][1], states[1][1]),)
        else:
            e_in += (states[0][0],)
            t_in += (states[0][1],)
    compare_module(module, reference, e_in, t_in, dtype_name, rng)


def test_rnn_cell_unrolled_equals_rnn_layer():
    """An LSTM layer is its cell applied step by step; the two share the step function and the weights' names."""
    layer = nn.LSTM(INPUT, HIDDEN, dtype=ember.float64)
    cell = nn.LSTMCell(INPUT, HIDDEN, dtype=ember.float64)
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = ember.randn(LENGTH, BATCH, INPUT, dtype=ember.float64)
    out, (h, c) = layer(x)
    state = None
    for t in range(LENGTH):
        state = cell(x[t], state)
        np.testing.assert_allclose(state[0].detach().numpy(), out[t].detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(state[1].detach().numpy(), c[0].detach().numpy(), rtol=1e-12, atol=1e-12)


# -- MultiheadAttention ----------------------------------------------------------------------------------------

E, HEADS, L, S = 8, 2, 5, 6
MHA_CASES = {
    "self-attention": dict(),
    "batch_first": dict(batch_first=True),
    "cross-attention": dict(cross=True),
    "key is value": dict(cross=True, key_is_value=True),
    "kdim and vdim": dict(cross=True, kdim=3, vdim=7),
    "no bias": dict(bias=False),
    "bias_kv and zero_attn": dict(add_bias_kv=True, add_zero_attn=True, kpm="bool", mask="bool"),
    "key_padding_mask bool": dict(kpm="bool"),
    "key_padding_mask float": dict(kpm="float"),
    "attn_mask bool": dict(mask="bool"),
    "attn_mask float": dict(mask="float"),
    "attn_mask 3-D": dict(mask="bool3"),
    "attn_mask float 3-D and bool padding": dict(mask="float3", kpm="bool", batch_first=True),
    "causal with mask": dict(mask="causal", is_causal=True),
    "per-head weights": dict(average=False, kpm="bool"),
    "no weights": dict(need_weights=False, mask="float"),
    "unbatched": dict(unbatched=True, mask="bool3", kpm="bool"),
    "dropout in eval mode": dict(dropout=0.3, eval=True, kpm="bool"),
}


def _mha_masks(case, rng, batch, length, source, dtype_name):
    masks = {}
    kpm = case.get("kpm")
    if kpm:
        padding = rng.random((batch, source)) < 0.3
        padding[:, 0] = False
        if case.get("unbatched"):
            padding = padding[0]
        masks["key_padding_mask"] = padding if kpm == "bool" else np.where(padding, -1e4, 0.0).astype(dtype_name)
    mask = case.get("mask")
    if mask == "causal":
        masks["attn_mask"] = np.triu(np.ones((length, source), dtype=bool), 1)
    elif mask:
        shape = (length, source) if not mask.endswith("3") else ((1 if case.get("unbatched") else batch) * HEADS,
                                                                  length, source)
        if mask.startswith("bool"):
            blocked = rng.random(shape) < 0.3
            blocked[..., 0] = False
            masks["attn_mask"] = blocked
        else:
            masks["attn_mask"] = rng.standard_normal(shape).astype(dtype_name)
    return masks


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("case_name", list(MHA_CASES))
def test_multihead_attention_matches_torch(case_name, dtype_name):
    case = MHA_CASES[case_name]
    e_dtype, t_dtype = DTYPES[dtype_name]
    kwargs = dict(dropout=case.get("dropout", 0.0), bias=case.get("bias", True), batch_first=case.get("batch_first",
                  False), add_bias_kv=case.get("add_bias_kv", False), add_zero_attn=case.get("add_zero_attn", False),
                  kdim=case.get("kdim"), vdim=case.get("vdim"))
    reference = torch.nn.MultiheadAttention(E, HEADS, **kwargs).to(t_dtype)
    module = nn.MultiheadAttention(E, HEADS, dtype=e_dtype, **kwargs)
    load_torch_weights(module, reference)
    if case.get("eval"):
        module.eval()
        reference.eval()
    rng = np.random.default_rng(5)
    source = S if case.get("cross") else L

    def sequence(n, width):
        if case.get("unbatched"):
            return rng.standard_normal((n, width)).astype(dtype_name)
        return rng.standard_normal((BATCH, n, width) if case.get("batch_first") else (n, BATCH, width)).astype(
            dtype_name)
    e_q, t_q = pair(sequence(L, E))
    if not case.get("cross"):
        e_in, t_in = (e_q, e_q, e_q), (t_q, t_q, t_q)
    else:
        e_k, t_k = pair(sequence(S, case.get("kdim") or E))
        if case.get("key_is_value"):
            e_in, t_in = (e_q, e_k, e_k), (t_q, t_k, t_k)
        else:
            e_v, t_v = pair(sequence(S, case.get("vdim") or E))
            e_in, t_in = (e_q, e_k, e_v), (t_q, t_k, t_v)
    masks = _mha_masks(case, rng, BATCH, L, source, dtype_name)
    e_kwargs = {k: ember.tensor(v) for k, v in masks.items()}
    t_kwargs = {k: torch.tensor(v) for k, v in masks.items()}
    for name in ("need_weights", "is_causal"):
        if name in case:
            e_kwargs[name] = t_kwargs[name] = case[name]
    if "average" in case:
        e_kwargs["average_attn_weights"] = t_kwargs["average_attn_weights"] = case["average"]
    e_out, t_out = compare_module(module, reference, e_in, t_in, dtype_name, rng, e_kwargs, t_kwargs)
    assert (e_out[1] is None) == (not case.get("need_weights", True))


def test_multihead_attention_init_and_names_follow_torch():
    module = nn.MultiheadAttention(16, 4, add_bias_kv=True)
    reference = torch.nn.MultiheadAttention(16, 4, add_bias_kv=True)
    assert list(module.state_dict()) == list(reference.state_dict())
    bound = math.sqrt(6 / (16 + 48))  # xavier_uniform_ on (3E, E)
    weight = module.in_proj_weight.detach().numpy()
    assert np.abs(weight).max() <= bound and weight.std() > bound / 3
    assert not module.in_proj_bias.detach().numpy().any()
    assert not module.out_proj.bias.detach().numpy().any()
    separate = nn.MultiheadAttention(16, 4, kdim=5, vdim=6, bias=False)
    assert separate.in_proj_weight is None and separate.in_proj_bias is None
    assert tuple(separate.k_proj_weight.shape) == (16, 5)
    assert list(separate.state_dict()) == list(torch.nn.MultiheadAttention(16, 4, kdim=5, vdim=6,
                                                                           bias=False).state_dict())
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)


def test_multihead_attention_is_causal_alone_applies_the_causal_mask():
    module = nn.MultiheadAttention(E, HEADS, batch_first=True)
    x = ember.randn(BATCH, L, E)
    mask = nn.Transformer.generate_square_subsequent_mask(L)
    expected, _ = module(x, x, x, attn_mask=mask)
    actual, weights = module(x, x, x, is_causal=True)
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not np.triu(weights.detach().numpy(), 1).any()


def test_multihead_attention_dropout_changes_training_outputs_only():
    ember.manual_seed(0)
    module = nn.MultiheadAttention(E, HEADS, dropout=0.5)
    x = ember.randn(L, BATCH, E)
    first, second = module(x, x, x)[0].detach().numpy(), module(x, x, x)[0].detach().numpy()
    assert not np.allclose(first, second)
    module.eval()
    np.testing.assert_array_equal(module(x, x, x)[0].detach().numpy(), module(x, x, x)[0].detach().numpy())


def test_multihead_attention_rejects_bad_masks():
    module = nn.MultiheadAttention(E, HEADS)
    x = ember.randn(L, BATCH, E)
    with pytest.raises(ShapeError, match="attn_mask"):
        module(x, x, x, attn_mask=ember.zeros(L, L + 1))
    with pytest.raises(ShapeError, match="key_padding_mask"):
        module(x, x, x, key_padding_mask=ember.zeros(L, BATCH, dtype=ember.bool))
    with pytest.raises(ShapeError, match="embed_dim"):
        module(x, x, ember.randn(L, BATCH, E + 1))


# -- Transformer layers and stacks -----------------------------------------------------------------------------

D_MODEL, NHEAD, FF = 8, 2, 16
LAYER_CASES = {
    "post-norm": dict(),
    "pre-norm": dict(norm_first=True),
    "batch_first gelu": dict(batch_first=True, activation="gelu"),
    "callable activation": dict(activation="tanh"),
    "no bias": dict(bias=False, norm_first=True),
    "padding mask": dict(kpm=True, batch_first=True),
    "float mask": dict(mask="float"),
    "causal": dict(mask="causal", is_causal=True, norm_first=True),
    "dropout in eval mode": dict(eval=True, kpm=True),
}


def _layer_kwargs(case, dtype):
    kwargs = dict(dim_feedforward=FF, dropout=0.1 if case.get("eval") else 0.0, batch_first=case.get("batch_first",
                  False), norm_first=case.get("norm_first", False), bias=case.get("bias", True), dtype=dtype)
    activation = case.get("activation", "relu")
    return kwargs, activation


def _activation_for(framework, name):
    if name == "tanh":
        return framework.tanh
    return name


def _sequence(case, rng, n, dtype_name):
    shape = (BATCH, n, D_MODEL) if case.get("batch_first") else (n, BATCH, D_MODEL)
    return pair(rng.standard_normal(shape).astype(dtype_name))


def _layer_masks(case, rng, n, dtype_name, prefix):
    e_kwargs, t_kwargs = {}, {}
    mask = case.get("mask")
    if mask == "float":
        value = rng.standard_normal((n, n)).astype(dtype_name)
    elif mask == "causal":
        value = np.triu(np.full((n, n), -np.inf, dtype=dtype_name), 1)
    else:
        value = None
    names = {"enc": ("src_mask", "src_key_padding_mask", "is_causal"),
             "stack": ("mask", "src_key_padding_mask", "is_causal"),
             "dec": ("tgt_mask", "tgt_key_padding_mask", "tgt_is_causal")}[prefix]
    if value is not None:
        e_kwargs[names[0]], t_kwargs[names[0]] = ember.tensor(value), torch.tensor(value)
    if case.get("kpm"):
        padding = rng.random((BATCH, n)) < 0.3
        padding[:, 0] = False
        e_kwargs[names[1]], t_kwargs[names[1]] = ember.tensor(padding), torch.tensor(padding)
    if case.get("is_causal"):
        e_kwargs[names[2]] = t_kwargs[names[2]] = True
    return e_kwargs, t_kwargs


def _pair_modules(e_module, t_module, case):
    load_torch_weights(e_module, t_module)
    if case.get("eval"):
        e_module.eval()
        t_module.eval()
    return e_module, t_module


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("case_name", list(LAYER_CASES))
def test_transformer_encoder_layer_matches_torch(case_name, dtype_name):
    case = LAYER_CASES[case_name]
    e_dtype, t_dtype = DTYPES[dtype_name]
    kwargs, activation = _layer_kwargs(case, e_dtype)
    t_kwargs = dict(kwargs, dtype=t_dtype)
    module, reference = _pair_modules(
        nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation=_activation_for(ember, activation), **kwargs),
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation=_activation_for(torch, activation), **t_kwargs),
        case)
    rng = np.random.default_rng(6)
    e_x, t_x = _sequence(case, rng, L, dtype_name)
    e_masks, t_masks = _layer_masks(case, rng, L, dtype_name, "enc")
    compare_module(module, reference, (e_x,), (t_x,), dtype_name, rng, e_masks, t_masks)


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("case_name", list(LAYER_CASES))
def test_transformer_decoder_layer_matches_torch(case_name, dtype_name):
    case = LAYER_CASES[case_name]
    e_dtype, t_dtype = DTYPES[dtype_name]
    kwargs, activation = _layer_kwargs(case, e_dtype)
    t_kwargs = dict(kwargs, dtype=t_dtype)
    module, reference = _pair_modules(
        nn.TransformerDecoderLayer(D_MODEL, NHEAD, activation=_activation_for(ember, activation), **kwargs),
        torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, activation=_activation_for(torch, activation), **t_kwargs),
        case)
    rng = np.random.default_rng(7)
    e_tgt, t_tgt = _sequence(case, rng, L, dtype_name)
    e_mem, t_mem = _sequence(case, rng, S, dtype_name)
    e_masks, t_masks = _layer_masks(case, rng, L, dtype_name, "dec")
    if case.get("kpm"):
        padding = rng.random((BATCH, S)) < 0.3
        padding[:, 0] = False
        e_masks["memory_key_padding_mask"] = ember.tensor(padding)
        t_masks["memory_key_padding_mask"] = torch.tensor(padding)
    compare_module(module, reference, (e_tgt, e_mem), (t_tgt, t_mem), dtype_name, rng, e_masks, t_masks)


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("case_name", ["post-norm", "pre-norm", "padding mask", "causal"])
def test_transformer_stacks_match_torch(case_name, dtype_name):
    case = LAYER_CASES[case_name]
    e_dtype, t_dtype = DTYPES[dtype_name]
    kwargs, _ = _layer_kwargs(case, e_dtype)
    t_kwargs = dict(kwargs, dtype=t_dtype)
    rng = np.random.default_rng(8)
    encoder, t_encoder = _pair_modules(
        nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, **kwargs), 2,
                              norm=nn.LayerNorm(D_MODEL, dtype=e_dtype)),
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, **t_kwargs), 2,
                                    norm=torch.nn.LayerNorm(D_MODEL, dtype=t_dtype), enable_nested_tensor=False),
        case)
    e_x, t_x = _sequence(case, rng, L, dtype_name)
    e_masks, t_masks = _layer_masks(case, rng, L, dtype_name, "stack")
    e_mem, t_mem = compare_module(encoder, t_encoder, (e_x,), (t_x,), dtype_name, rng, e_masks, t_masks)

    decoder, t_decoder = _pair_modules(
        nn.TransformerDecoder(nn.TransformerDecoderLayer(D_MODEL, NHEAD, **kwargs), 2),
        torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, **t_kwargs), 2), case)
    e_tgt, t_tgt = _sequence(case, rng, S, dtype_name)
    e_masks, t_masks = _layer_masks(case, rng, S, dtype_name, "dec")
    e_mem, t_mem = pair(e_mem.detach().numpy())[0], pair(t_mem.detach().numpy())[1]
    compare_module(decoder, t_decoder, (e_tgt, e_mem), (t_tgt, t_mem), dtype_name, rng, e_masks, t_masks)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(batch_first):
    kwargs = dict(d_model=D_MODEL, nhead=NHEAD, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=FF,
                  dropout=0.0, batch_first=batch_first)
    module = nn.Transformer(dtype=ember.float64, **kwargs)
    reference = torch.nn.Transformer(dtype=torch.float64, **kwargs)
    load_torch_weights(module, reference)
    rng = np.random.default_rng(9)
    case = dict(batch_first=batch_first)
    e_src, t_src = _sequence(case, rng, S, "float64")
    e_tgt, t_tgt = _sequence(case, rng, L, "float64")
    mask = nn.Transformer.generate_square_subsequent_mask(L, dtype=ember.float64)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    np.testing.assert_array_equal(mask.numpy(), t_mask.numpy())
    compare_module(module, reference, (e_src, e_tgt), (t_src, t_tgt), "float64", rng, dict(tgt_mask=mask),
                   dict(tgt_mask=t_mask))


def test_transformer_stack_layers_are_independent_parameters():
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, dim_feedforward=FF)
    encoder = nn.TransformerEncoder(layer, 3)
    params = [dict(m.named_parameters()) for m in encoder.layers]
    assert len(list(encoder.parameters())) == 3 * len(list(layer.parameters()))
    assert all(isinstance(p, nn.Parameter) for p in encoder.parameters())
    with ember.no_grad():
        params[0]["linear1.weight"].fill_(1.0)
    assert not np.allclose(params[1]["linear1.weight"].detach().numpy(), 1.0)
    assert list(encoder.state_dict()) == list(torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, dim_feedforward=FF), 3, enable_nested_tensor=False
    ).state_dict())
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="swish")


def test_encoder_is_causal_alone_equals_the_causal_mask():
    """PyTorch needs the mask passed with is_causal; Ember builds it when it is missing."""
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, dim_feedforward=FF, dropout=0.0,
                                                               batch_first=True), 2)
    x = ember.randn(BATCH, L, D_MODEL)
    padding = ember.tensor(np.arange(L) >= L - 2).unsqueeze(0).expand(BATCH, L)
    mask = nn.Transformer.generate_square_subsequent_mask(L)
    expected = encoder(x, mask=mask, src_key_padding_mask=padding).detach().numpy()
    actual = encoder(x, is_causal=True, src_key_padding_mask=padding).detach().numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("extra", [dict(), dict(add_bias_kv=True), dict(add_zero_attn=True)])
def test_multihead_attention_causal_with_padding_matches_explicit_mask(extra):
    """is_causal alone, with left padding that blocks some rows entirely: same as the explicit float mask,
    and those rows come out finite."""
    module = nn.MultiheadAttention(E, HEADS, batch_first=True, dtype=ember.float64, **extra)
    x = ember.randn(BATCH, L, E, dtype=ember.float64)
    padding = ember.tensor(np.arange(L) < 2).unsqueeze(0).expand(BATCH, L)
    mask = nn.Transformer.generate_square_subsequent_mask(L, dtype=ember.float64)
    expected, expected_weights = module(x, x, x, attn_mask=mask, key_padding_mask=padding)
    actual, weights = module(x, x, x, is_causal=True, key_padding_mask=padding)
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), expected_weights.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    assert np.isfinite(actual.detach().numpy()).all()
