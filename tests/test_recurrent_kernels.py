"""The fused recurrent layer pairs (``_rnn_layer_fused`` / ``_lstm_layer_fused`` and their backward ops) and the
kernels that run them: the CPU's numba gate loops and the shared array kernels that CUDA runs.

Checks that routing the layers and cells through the pair changes neither values nor gradients (against the
op-by-op loop it replaced, under ``use_composite``, and against PyTorch), that each kernel matches the ops'
composites, the workspace's own gradient included (what double backward sends), that the pair's gradients
are right by finite differences in float64, once and twice, that bad input is refused naming the op, and that
the loops' exp, sigmoid and tanh are accurate and keep NaN, infinities and signed zeros. The ops' per-dtype
values against the NumPy reference are the conformance suite's
(``pytest --pyargs ember.conformance --backend cpu -k "rnn_layer or lstm_layer"``).
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager

import numpy as np
import pytest

import ember
from ember import nn
from ember.dispatch import use_composite
from ember.dispatch.ops import F as ops

FUSED = ("_rnn_layer_fused", "_lstm_layer_fused")
KINDS = {"lstm": ("LSTM", {}), "gru": ("GRU", {}), "rnn-tanh": ("RNN", {}),
         "rnn-relu": ("RNN", {"nonlinearity": "relu"})}
OPTIONS = {
    "1 layer": {},
    "2 layers": {"num_layers": 2},
    "bidirectional": {"bidirectional": True},
    "2 layers bidirectional batch_first": {"num_layers": 2, "bidirectional": True, "batch_first": True},
    "no bias": {"bias": False},
}
TOL = {ember.float64: dict(rtol=1e-10, atol=1e-12), ember.float32: dict(rtol=1e-4, atol=1e-5)}
INPUT, HIDDEN, LENGTH, BATCH = 3, 5, 4, 2


@contextmanager
def composite_loops():
    """The layers and cells as the op-by-op time loop they were before the fused pair."""
    with ExitStack() as stack:
        for name in FUSED:
            stack.enter_context(use_composite(name))
        yield


def array(t) -> np.ndarray:
    return t.detach().float().numpy() if t.dtype not in (ember.float32, ember.float64) else t.detach().numpy()


def close(got: list, expected: list, dtype) -> None:
    """Equal lists of tensors; a gradient of None (the loop never used that parameter: an empty sequence) is
    taken as the zeros the fused op gives."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g, e = (ember.zeros_like(b) if a is None else a for a, b in ((g, e), (e, g)))
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(array(g), array(e), **TOL[dtype])


def weighted_sum(outputs, seed: int = 7):
    """A loss that depends on every element of every output (each with its own random weight)."""
    rng = np.random.default_rng(seed)
    total = 0
    for out in outputs:
        weight = ember.tensor(rng.standard_normal(tuple(out.shape)), dtype=out.dtype, device=out.device)
        total = total + (out * weight).sum()
    return total


def flat_outputs(result) -> list:
    output, state = result
    return [output] + (list(state) if isinstance(state, tuple) else [state])


def leaf(rng, shape, dtype):
    return ember.tensor(rng.standard_normal(shape), dtype=dtype).requires_grad_()


def rnn_case(kind: str, option: str, dtype, length: int = LENGTH, proj_size: int = 0):
    name, kwargs = KINDS[kind]
    options = dict(OPTIONS[option])
    if proj_size:
        options["proj_size"] = proj_size
    ember.manual_seed(0)
    module = getattr(nn, name)(INPUT, HIDDEN, dtype=dtype, **kwargs, **options)
    rng = np.random.default_rng(1)
    shape = (BATCH, length, INPUT) if options.get("batch_first") else (length, BATCH, INPUT)
    layers = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    hx = leaf(rng, (layers, BATCH, proj_size or HIDDEN), dtype)
    state = (hx, leaf(rng, (layers, BATCH, HIDDEN), dtype)) if name == "LSTM" else hx
    return module, (leaf(rng, shape, dtype), state)


def state_leaves(inputs: tuple) -> tuple:
    x, state = inputs
    return (x,) + (state if isinstance(state, tuple) else (state,))


def run_module(module, inputs: tuple) -> list:
    leaves = state_leaves(inputs)
    module.zero_grad()
    for t in leaves:
        t.grad = None
    outputs = flat_outputs(module(*inputs))
    weighted_sum(outputs).backward()
    return [o.detach() for o in outputs] + [t.grad for t in leaves] + [p.grad for p in module.parameters()]


# -- routing keeps values and gradients -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_fused_layers_match_the_op_by_op_loop(kind, option, dtype):
    module, inputs = rnn_case(kind, option, dtype)
    fused = run_module(module, inputs)
    assert module(*inputs)[0].grad_fn is not None
    with composite_loops():
        loop = run_module(module, inputs)
    close(fused, loop, dtype)


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("option", ["1 layer", "2 layers bidirectional batch_first", "no bias"])
def test_projected_lstm_matches_the_op_by_op_loop(option, dtype):
    module, inputs = rnn_case("lstm", option, dtype, proj_size=2)
    fused = run_module(module, inputs)
    with composite_loops():
        loop = run_module(module, inputs)
    close(fused, loop, dtype)


@pytest.mark.parametrize("kind", list(KINDS))
def test_empty_sequence_gives_the_initial_state_and_its_gradient(kind):
    module, inputs = rnn_case(kind, "bidirectional", ember.float64, length=0)
    fused = run_module(module, inputs)
    with composite_loops():
        loop = run_module(module, inputs)
    close(fused, loop, ember.float64)
    assert fused[0].shape == (0, BATCH, 2 * HIDDEN)


def test_layers_and_cells_record_one_node_per_layer_and_step():
    module, inputs = rnn_case("lstm", "1 layer", ember.float64)
    assert module(*inputs)[0].grad_fn.name() == "LstmLayerFusedBackward"
    cell = nn.GRUCell(INPUT, HIDDEN, dtype=ember.float64)
    assert cell(inputs[0][0]).grad_fn.name() == "RnnLayerFusedBackward"
    with composite_loops():
        assert module(*inputs)[0].grad_fn.name() != "LstmLayerFusedBackward"
        assert cell(inputs[0][0]).grad_fn.name() != "RnnLayerFusedBackward"


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_packed_sequences_match_the_op_by_op_loop(kind):
    """Lengths 4, 4, 2, 1: three runs of equal batch sizes a direction, one layer op each."""
    from ember.nn.utils import rnn as packing
    module, (x, _) = rnn_case(kind, "2 layers bidirectional batch_first", ember.float64)
    x = ember.cat([x, x], 0).detach().requires_grad_()

    def run():
        module.zero_grad()
        x.grad = None
        out, state = module(packing.pack_padded_sequence(x, [4, 1, 4, 2], batch_first=True, enforce_sorted=False))
        outputs = [out.data] + list(state if isinstance(state, tuple) else (state,))
        weighted_sum(outputs).backward()
        return [o.detach() for o in outputs] + [x.grad] + [p.grad for p in module.parameters()]
    fused = run()
    with composite_loops():
        loop = run()
    close(fused, loop, ember.float64)


@pytest.mark.skipif(ember.backends.available().get("opencl") != "available", reason="no OpenCL platform")
def test_a_backend_without_the_kernels_keeps_the_loop():
    """opencl has no kernels for the pairs: its layers and cells run the time loop of its own kernels."""
    module, inputs = rnn_case("gru", "bidirectional", ember.float32)
    expected = run_module(module, inputs)
    module.to("opencl")
    x, hx = (t.detach().to("opencl").requires_grad_() for t in inputs)
    assert module(x, hx)[0].grad_fn.name() != "RnnLayerFusedBackward"
    got = run_module(module, (x, hx))
    close([t.cpu() for t in got], expected, ember.float32)
    cell = nn.LSTMCell(INPUT, HIDDEN, device="opencl")
    assert cell(x[0])[0].grad_fn.name() != "LstmLayerFusedBackward"


# -- cells ----------------------------------------------------------------------------------------------------

CELLS = {"lstm": ("LSTMCell", {}), "gru": ("GRUCell", {}), "rnn-tanh": ("RNNCell", {}),
         "rnn-relu": ("RNNCell", {"nonlinearity": "relu"}), "gru no bias": ("GRUCell", {"bias": False})}


def cell_case(cell: str, dtype, batched: bool = True):
    name, kwargs = CELLS[cell]
    ember.manual_seed(0)
    module = getattr(nn, name)(INPUT, HIDDEN, dtype=dtype, **kwargs)
    rng = np.random.default_rng(2)
    batch = (BATCH,) if batched else ()
    x = leaf(rng, batch + (INPUT,), dtype)
    h = leaf(rng, batch + (HIDDEN,), dtype)
    state = (h, leaf(rng, batch + (HIDDEN,), dtype)) if name == "LSTMCell" else h
    return module, x, state


def run_cell(module, x, state, steps: int = 3) -> list:
    """A few steps from ``state``, every new state in the loss."""
    leaves = (x,) + (state if isinstance(state, tuple) else (state,))
    module.zero_grad()
    for t in leaves:
        t.grad = None
    outputs = []
    for _ in range(steps):
        state = module(x, state)
        outputs += list(state) if isinstance(state, tuple) else [state]
    weighted_sum(outputs).backward()
    return [o.detach() for o in outputs] + [t.grad for t in leaves] + [p.grad for p in module.parameters()]


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_cells_match_the_step_functions(cell, dtype, batched):
    module, x, state = cell_case(cell, dtype, batched)
    fused = run_cell(module, x, state)
    with composite_loops():
        steps = run_cell(module, x, state)
    close(fused, steps, dtype)


# -- against PyTorch --------------------------------------------------------------------------------------------

def torch_twin(module, torch):
    """The torch module of the same class and options, with ``module``'s weights."""
    names = ("bias",) if isinstance(module, nn.RNNCellBase) else ("num_layers", "bias", "batch_first", "dropout",
                                                                  "bidirectional")
    kwargs = {k: getattr(module, k) for k in names}
    if getattr(module, "proj_size", 0):
        kwargs["proj_size"] = module.proj_size
    if hasattr(module, "nonlinearity"):
        kwargs["nonlinearity"] = module.nonlinearity
    twin = getattr(torch.nn, type(module).__name__)(module.input_size, module.hidden_size, **kwargs).double()
    twin.load_state_dict({k: torch.tensor(v.detach().double().numpy()) for k, v in module.state_dict().items()})
    return twin


def to_torch(value, torch):
    if isinstance(value, tuple):
        return tuple(to_torch(v, torch) for v in value)
    return torch.tensor(value.detach().double().numpy(), requires_grad=True)


def run_torch_module(twin, inputs: tuple, torch) -> list:
    leaves = state_leaves(inputs)
    outputs = flat_outputs(twin(*inputs))
    rng = np.random.default_rng(7)
    loss = sum((o * torch.tensor(rng.standard_normal(tuple(o.shape)))).sum() for o in outputs)
    loss.backward()
    return [o.detach() for o in outputs] + [t.grad for t in leaves] + [p.grad for p in twin.parameters()]


def close_to_torch(got: list, expected: list, dtype) -> None:
    assert len(got) == len(expected)
    tol = dict(rtol=1e-9, atol=1e-11) if dtype is ember.float64 else dict(rtol=2e-4, atol=2e-5)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(array(g), e.numpy(), **tol)


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("kind, option", [(k, o) for k in KINDS for o in OPTIONS] + [("lstm", "projected")])
def test_fused_layers_match_torch(kind, option, dtype):
    torch = pytest.importorskip("torch")
    projected = option == "projected"
    module, inputs = rnn_case(kind, "2 layers bidirectional batch_first" if projected else option, dtype,
                              proj_size=2 if projected else 0)
    fused = run_module(module, inputs)
    torch_inputs = to_torch(inputs, torch)
    close_to_torch(fused, run_torch_module(torch_twin(module, torch), torch_inputs, torch), dtype)


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_cells_match_torch(cell, dtype):
    torch = pytest.importorskip("torch")
    module, x, state = cell_case(cell, dtype)
    fused = run_cell(module, x, state)
    twin = torch_twin(module, torch)
    tx, tstate = to_torch(x, torch), to_torch(state, torch)
    leaves = (tx,) + (tstate if isinstance(tstate, tuple) else (tstate,))
    outputs, s = [], tstate
    for _ in range(3):
        s = twin(tx, s)
        outputs += list(s) if isinstance(s, tuple) else [s]
    rng = np.random.default_rng(7)
    sum((o * torch.tensor(rng.standard_normal(tuple(o.shape)))).sum() for o in outputs).backward()
    expected = [o.detach() for o in outputs] + [t.grad for t in leaves] + [p.grad for p in twin.parameters()]
    close_to_torch(fused, expected, dtype)


# -- the kernels against the ops' composites ---------------------------------------------------------------------

def op_args(mode: str, dtype, length: int = LENGTH, biases: bool = True, projected: bool = False, seed: int = 3,
            batch: int = BATCH, features: int = INPUT):
    """Forward arguments of the fused op of ``mode`` (leaves requiring grad) and its keyword arguments."""
    rng = np.random.default_rng(seed)
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    out_size = 2 if projected else HIDDEN

    def t(*shape):
        return ember.tensor(rng.uniform(-0.8, 0.8, shape), dtype=dtype).requires_grad_()
    x, hx = t(length, batch, features), t(batch, out_size)
    weights = [t(gates * HIDDEN, features), t(gates * HIDDEN, out_size)]
    weights += [t(gates * HIDDEN), t(gates * HIDDEN)] if biases else [None, None]
    if mode == "LSTM":
        return (x, hx, t(batch, HIDDEN), *weights, t(out_size, HIDDEN) if projected else None), {}
    return (x, hx, *weights), {"mode": mode}


def fused_op(mode: str):
    return ops._lstm_layer_fused if mode == "LSTM" else ops._rnn_layer_fused


LAYER_CASES = [("LSTM", {}), ("LSTM", {"projected": True}), ("LSTM", {"biases": False}), ("GRU", {}),
               ("GRU", {"biases": False}), ("RNN_TANH", {}), ("RNN_RELU", {}), ("LSTM", {"length": 0}),
               ("GRU", {"length": 0}), ("LSTM", {"length": 1}), ("GRU", {"batch": 0}),
               ("RNN_TANH", {"features": 0})]


def op_grads(mode: str, args: tuple, kwargs: dict, reverse: bool) -> list:
    """Every output, then every input's gradient, for a loss on all outputs (the workspace's included)."""
    leaves = [a for a in args if a is not None]
    for t in leaves:
        t.grad = None
    outputs = fused_op(mode)(*args, reverse=reverse, **kwargs)
    weighted_sum(outputs).backward()
    return [o.detach() for o in outputs] + [t.grad for t in leaves]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("mode, options", LAYER_CASES, ids=[f"{m}-{o}" for m, o in LAYER_CASES])
def test_kernels_match_the_composites(mode, options, dtype, reverse):
    """Both ops of the pair, the workspace's gradient included: the loss weighs every plane of it."""
    args, kwargs = op_args(mode, dtype, **options)
    kernels = op_grads(mode, args, kwargs, reverse)
    name = "_lstm_layer_fused" if mode == "LSTM" else "_rnn_layer_fused"
    with use_composite(name), use_composite(name + "_backward"):
        composites = op_grads(mode, args, kwargs, reverse)
    close(kernels, composites, dtype)


@pytest.fixture
def array_kernels(monkeypatch):
    """The shared array kernels of the pairs (what cuda runs) in the cpu backend's table instead of the numba ones."""
    from ember.backends.arraykernels import recurrent
    from ember.backends.cpu.kernels import KERNELS
    from ember.backends.cpu.library import NUMPY
    for name, kernel in recurrent.build(NUMPY).items():
        monkeypatch.setitem(KERNELS, name, kernel)
    ember.dispatch.clear_plans()
    yield
    ember.dispatch.clear_plans()


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("mode, options", LAYER_CASES, ids=[f"{m}-{o}" for m, o in LAYER_CASES])
def test_array_kernels_match_the_composites(mode, options, dtype, array_kernels):
    args, kwargs = op_args(mode, dtype, **options)
    kernels = op_grads(mode, args, kwargs, reverse=True)
    name = "_lstm_layer_fused" if mode == "LSTM" else "_rnn_layer_fused"
    with use_composite(name), use_composite(name + "_backward"):
        composites = op_grads(mode, args, kwargs, reverse=True)
    close(kernels, composites, dtype)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_half_precision_computes_in_float32_and_rounds_once(mode, dtype):
    args, kwargs = op_args(mode, ember.float32)
    expected = op_grads(mode, args, kwargs, reverse=False)
    low = tuple(None if a is None else a.detach().to(dtype).requires_grad_() for a in args)
    got = op_grads(mode, low, kwargs, reverse=False)
    assert all(g.dtype is dtype for g in got)
    tol = 2e-2 if dtype is ember.float16 else 1e-1
    for g, e in zip(got, expected):
        np.testing.assert_allclose(array(g), array(e), rtol=tol, atol=tol)


# -- finite differences, once and twice ----------------------------------------------------------------------------

@pytest.mark.parametrize("mode, options", [("LSTM", {}), ("LSTM", {"projected": True}), ("GRU", {}),
                                           ("RNN_TANH", {"biases": False})])
def test_gradients_by_finite_differences(mode, options):
    args, kwargs = op_args(mode, ember.float64, length=3, **options)
    leaves = [a for a in args if a is not None]

    def fn(*values):
        values = iter(values)
        return fused_op(mode)(*(None if a is None else next(values) for a in args), reverse=True, **kwargs)
    assert ember.autograd.gradcheck(fn, leaves)
    assert ember.autograd.gradgradcheck(fn, leaves, fast_mode=True)


# -- errors ---------------------------------------------------------------------------------------------------------

def test_bad_input_names_the_op():
    args, _ = op_args("LSTM", ember.float64)
    x, hx, cx, w_ih, w_hh = args[:5]
    with pytest.raises(Exception, match="_lstm_layer_fused.*w_hh must have shape"):
        ops._lstm_layer_fused(x, hx, cx, w_ih, w_hh[:, :2])
    with pytest.raises(Exception, match="_rnn_layer_fused.*unknown mode 'LSTM'"):
        ops._rnn_layer_fused(x, hx, w_ih, w_hh, mode="LSTM")
    output, h, c, workspace = ops._lstm_layer_fused(x, hx, cx, w_ih, w_hh)
    with pytest.raises(Exception, match="_lstm_layer_fused_backward.*grad_workspace must have shape"):
        ops._lstm_layer_fused_backward(output, h, c, workspace[:, :3], x, hx, cx, w_ih, w_hh, None, output, workspace)


# -- the numba loops' elementary functions ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_loop_functions_are_accurate_and_keep_special_values(dtype):
    numba = pytest.importorskip("numba")
    from ember.backends.cpu import recurrent_loops
    loops = recurrent_loops.load()

    @numba.njit
    def apply(f, x, out):
        for i in range(x.size):
            out[i] = f(x[i])

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-30, 30, 20000), rng.uniform(-1, 1, 20000), 10.0 ** -np.arange(1, 30),
                        -(10.0 ** -np.arange(1, 30))]).astype(dtype)
    wide = x.astype(np.longdouble)
    for name, exact, ulps in (("sigmoid", 1 / (1 + np.exp(-wide)), 3), ("tanh", np.tanh(wide), 7)):
        got = np.empty_like(x)
        apply(getattr(loops, f"{name}_{dtype}"), x, got)
        error = np.abs(got - exact) / np.spacing(np.abs(exact).astype(dtype))
        assert error.max() <= ulps, f"{name}: {error.max()} ulps at {x[error.argmax()]}"
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype)
        apply(getattr(loops, f"{name}_{dtype}"), special, got[:5])
        expected = [np.nan, 1, 0 if name == "sigmoid" else -1, 0.5 if name == "sigmoid" else 0.0,
                    0.5 if name == "sigmoid" else -0.0]
        np.testing.assert_array_equal(got[:5], np.array(expected, dtype))
        if name == "tanh":
            assert np.signbit(got[4]) and not np.signbit(got[3])
    if dtype == "float64":  # the loops' own exp (float32's is ember.dispatch.fast_exp's, tested with it)
        x = np.concatenate([rng.uniform(-745, 709, 20000), [-746, 710, np.inf, -np.inf, np.nan, -744.5]])
        got = np.empty_like(x)
        apply(loops.exp64, x, got)
        exact = np.exp(x.astype(np.longdouble))
        normal = (exact > np.finfo(np.float64).tiny) & (exact < np.finfo(np.float64).max)
        assert (np.abs(got - exact)[normal] / np.spacing(exact[normal].astype(np.float64))).max() <= 1.5
        np.testing.assert_array_equal(got[-6:-1], [0, np.inf, np.inf, 0, np.nan])
        assert 0 < got[-1] < np.finfo(np.float64).tiny  # subnormal results are rounded, not flushed
