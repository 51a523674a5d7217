"""Recurrent layers as ops: one call runs one layer in one direction over a whole time-major sequence.

``rnn_layer`` (modes RNN_TANH, RNN_RELU, GRU) and ``lstm_layer`` are composites whose definition is the time
loop over the step functions below; ``ember.nn``'s RNN/LSTM/GRU call them per layer and direction, and the
cells call the same step functions (``cell_step``), so layers and cells compute the same thing. Being one op,
a layer is one node for the tracers: ``ember.onnx.export`` writes it as ONNX RNN/GRU/LSTM, whose sequence
length may change at run time.

Where the backend has kernels for them, the layers and cells run the fused pairs of ``recurrent_fused`` instead
(one op forward and one backward per layer, or per cell step); elsewhere autograd unrolls the loop through the
inner ops (backpropagation through time). ``use_composite`` on a fused op routes back to the loop.

The input projection ``x W_ih^T + b_ih`` does not depend on the recurrence, so it is one matmul for every
time step before the loop; the loop does only the hidden-to-hidden product and the gate arithmetic.
"""
from __future__ import annotations

import numpy as np

from ...schema.errors import EmberError
from ...schema.meta import require, shape
from ...schema import OPS, Sample, defop
from ..namespace import F

# -- one time step ---------------------------------------------------------------------------------------------
# ``gi`` is the input projection ``x W_ih^T + b_ih`` of this step. A state is a tuple: ``(h,)``, or ``(h, c)``
# for the LSTM. Given a list ``planes``, a step appends what its backward needs (the fused layer ops' workspace,
# ``WORKSPACE_PLANES``: (k, N, H) stacked), which the fused ops' composites collect.


def tanh_step(gi, state, w_hh, b_hh, w_hr=None, planes=None):
    return (F.tanh(F.add(gi, F.linear(state[0], w_hh, b_hh))),)


def relu_step(gi, state, w_hh, b_hh, w_hr=None, planes=None):
    return (F.relu(F.add(gi, F.linear(state[0], w_hh, b_hh))),)


def lstm_step(gi, state, w_hh, b_hh, w_hr=None, planes=None):
    """Gates in PyTorch's order i, f, g, o; ``c' = f c + i g``, ``h' = o tanh(c')``, projected by ``w_hr``.
    Planes: the activated gates, ``c'`` and ``tanh(c')``."""
    h, c = state
    i, f, g, o = F.chunk(F.add(gi, F.linear(h, w_hh, b_hh)), 4, -1)
    i, f, g, o = F.sigmoid(i), F.sigmoid(f), F.tanh(g), F.sigmoid(o)
    c = F.add(F.mul(f, c), F.mul(i, g))
    tanh_c = F.tanh(c)
    h = F.mul(o, tanh_c)
    if planes is not None:
        planes.append(F.stack([i, f, g, o, c, tanh_c]))
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def gru_step(gi, state, w_hh, b_hh, w_hr=None, planes=None):
    """Gates r, z, n; PyTorch's ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``, ``h' = (1 - z) n + z h``.

    ``b_hn`` sits inside the product with ``r``, so the hidden bias cannot be folded into ``gi`` as for the
    other cells. Planes: r, z, n and ``W_hn h + b_hn``.
    """
    h = state[0]
    i_r, i_z, i_n = F.chunk(gi, 3, -1)
    h_r, h_z, h_n = F.chunk(F.linear(h, w_hh, b_hh), 3, -1)
    r = F.sigmoid(F.add(i_r, h_r))
    z = F.sigmoid(F.add(i_z, h_z))
    n = F.tanh(F.add(i_n, F.mul(r, h_n)))
    if planes is not None:
        planes.append(F.stack([r, z, n, h_n]))
    return (F.add(n, F.mul(z, F.sub(h, n))),)


STEPS = {"RNN_TANH": tanh_step, "RNN_RELU": relu_step, "LSTM": lstm_step, "GRU": gru_step}
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
WORKSPACE_PLANES = {"RNN_TANH": 0, "RNN_RELU": 0, "LSTM": 6, "GRU": 4}
RNN_MODES = ("RNN_TANH", "RNN_RELU", "GRU")
#: the fused pair that runs a whole layer where the backend has kernels for it (``recurrent_fused``)
FUSED = {"LSTM": "_lstm_layer_fused", "GRU": "_rnn_layer_fused", "RNN_TANH": "_rnn_layer_fused",
         "RNN_RELU": "_rnn_layer_fused"}


def fused_kernels_on(device, mode: str) -> bool:
    """Whether ``device``'s backend runs ``mode``'s fused layer pair as kernels of its own. As composites the
    pair would be slower than the plain loop: autograd would unroll the same steps, and their backward too."""
    from ...contract import registry
    from ...execution.plan import prefers_composite
    name = FUSED[mode]
    return name in registry.get_backend(device.type).kernels and not prefers_composite(OPS[name], device.type)


def cell_step(mode: str, x, state: tuple, w_ih, w_hh, b_ih=None, b_hh=None) -> tuple:
    """One step of a cell (``nn.RNNCell``/``GRUCell``/``LSTMCell``) from ``x`` (N, H_in): the new state tuple.
    Where the backend has the fused kernels it is the fused layer over a sequence of one step: one op forward
    and one backward instead of a dozen each."""
    if not fused_kernels_on(x.device, mode):
        return STEPS[mode](F.linear(x, w_ih, b_ih), state, w_hh, b_hh)
    sequence = F.unsqueeze(x, 0)
    if mode == "LSTM":
        _, h, c, _ = F._lstm_layer_fused(sequence, state[0], state[1], w_ih, w_hh, b_ih, b_hh)
        return h, c
    return (F._rnn_layer_fused(sequence, state[0], w_ih, w_hh, b_ih, b_hh, mode=mode)[1],)


# -- the time loop, shared by both ops and their fused pairs' composites -----------------------------------------

def scan(mode: str, x, state: tuple, w_ih, w_hh, b_ih, b_hh, w_hr, reverse: bool, planes: list | None = None):
    """One layer in one direction over ``x`` of shape ``(L, N, H_in)``; returns ``(L, N, H)`` and the last state.
    Given a list ``planes``, it is filled with each step's planes, in time order."""
    if b_ih is not None and b_hh is not None and mode != "GRU":
        # RNN and LSTM add both biases to the same sum: fold b_hh in once rather than at every step.
        b_ih, b_hh = F.add(b_ih, b_hh), None
    step = STEPS[mode]
    inputs = F.unbind(F.linear(x, w_ih, b_ih), 0)
    outputs = [None] * len(inputs)
    step_planes = [] if planes is not None else None
    for t in (reversed(range(len(inputs))) if reverse else range(len(inputs))):
        state = step(inputs[t], state, w_hh, b_hh, w_hr, step_planes)
        outputs[t] = state[0]
    if planes is not None:
        planes.extend(reversed(step_planes) if reverse else step_planes)
    if not outputs:  # made from the state, so that autograd still links the empty output to the op's inputs
        first = state[0]
        return F.clone(F.expand(F.unsqueeze(first, 0), (0,) + tuple(first.shape))), state
    return F.stack(outputs), state


def _rnn_layer(x, hx, w_ih, w_hh, b_ih=None, b_hh=None, mode="RNN_TANH", reverse=False):
    """The fused pair where the backend has its kernels, the time loop of Ember ops otherwise."""
    if fused_kernels_on(x.device, mode):
        return F._rnn_layer_fused(x, hx, w_ih, w_hh, b_ih, b_hh, mode=mode, reverse=reverse)[:2]
    output, (h,) = scan(mode, x, (hx,), w_ih, w_hh, b_ih, b_hh, None, reverse)
    return output, F.clone(h) if h is hx else h  # an empty sequence still gives a fresh h_n


def _lstm_layer(x, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    if fused_kernels_on(x.device, "LSTM"):
        return F._lstm_layer_fused(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, reverse=reverse)[:3]
    output, (h, c) = scan("LSTM", x, (hx, cx), w_ih, w_hh, b_ih, b_hh, w_hr, reverse)
    return output, F.clone(h) if h is hx else h, F.clone(c) if c is cx else c


# -- meta ---------------------------------------------------------------------------------------------------------

def _check_layer(name: str, gates: int, x, states: tuple, w_ih, w_hh, b_ih, b_hh, out_size: int, hidden: int):
    """Shapes of one layer's call: ``x (L, N, H_in)``, ``w_ih (gates*hidden, H_in)``, ``w_hh (gates*hidden,
    out_size)``, biases ``(gates*hidden,)`` and each state ``(N, size)``."""
    require(len(shape(x)) == 3, name, "expected a time-major input of shape (L, N, H_in)", x)
    length, batch, features = shape(x)
    rows = gates * hidden
    require(shape(w_ih) == (rows, features), name,
            f"w_ih must have shape {(rows, features)} ({gates} gates x hidden size {hidden}, input size "
            f"{features})", w_ih, x)
    require(shape(w_hh) == (rows, out_size), name, f"w_hh must have shape {(rows, out_size)}", w_hh)
    for label, bias in (("b_ih", b_ih), ("b_hh", b_hh)):
        if bias is not None:
            require(shape(bias) == (rows,), name, f"{label} must have shape {(rows,)}", bias)
    for label, state, size in states:
        require(shape(state) == (batch, size), name, f"{label} must have shape {(batch, size)} (N, hidden)",
                state, x)
    return (length, batch, out_size)


def rnn_layer_shapes(name: str, x, hx, w_ih, w_hh, b_ih, b_hh, mode: str) -> tuple:
    """The output's and h_n's shapes of an ``rnn_layer`` call (or its fused op's, ``name``), checked."""
    if mode not in RNN_MODES:
        raise EmberError(f"{name}: unknown mode '{mode}'; expected one of {', '.join(RNN_MODES)}")
    require(len(shape(w_hh)) == 2, name, "expected a 2-D w_hh", w_hh)
    hidden = shape(w_hh)[1]
    out = _check_layer(name, GATES[mode], x, (("hx", hx, hidden),), w_ih, w_hh, b_ih, b_hh, hidden, hidden)
    return out, out[1:]


def lstm_layer_shapes(name: str, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr) -> tuple:
    """The output's, h_n's and c_n's shapes of an ``lstm_layer`` call (or its fused op's, ``name``), checked."""
    require(len(shape(w_ih)) == 2 and shape(w_ih)[0] % 4 == 0, name,
            "expected a 2-D w_ih of 4 * hidden_size rows", w_ih)
    hidden = shape(w_ih)[0] // 4
    out_size = hidden
    if w_hr is not None:
        require(len(shape(w_hr)) == 2 and shape(w_hr)[1] == hidden, name,
                f"w_hr must have shape (proj_size, {hidden})", w_hr)
        out_size = shape(w_hr)[0]
    out = _check_layer(name, 4, x, (("hx", hx, out_size), ("cx", cx, hidden)), w_ih, w_hh, b_ih, b_hh,
                       out_size, hidden)
    return out, out[1:], out[1:2] + (hidden,)


def _rnn_layer_meta(x, hx, w_ih, w_hh, b_ih=None, b_hh=None, mode="RNN_TANH", reverse=False):
    return rnn_layer_shapes("rnn_layer", x, hx, w_ih, w_hh, b_ih, b_hh, mode)


def _lstm_layer_meta(x, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    return lstm_layer_shapes("lstm_layer", x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)


def outputs_like_input(count: int):
    """The promotion rule of an op with ``count`` outputs, all in the promoted input type."""
    def rule(rt, op, args):
        return rt, (rt,) * count
    rule.__doc__ = f"{count} outputs in the promoted input type"
    return rule


# -- NumPy reference ------------------------------------------------------------------------------------------------

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _reference_step(mode: str, w_hr):
    """``step(gi, gh, states) -> (states, planes)`` in NumPy: ``gi`` and ``gh`` are both projections with their
    biases, ``planes`` the step's workspace planes (as ``STEPS`` append them), stacked."""
    def step(gi, gh, states):
        if mode == "RNN_TANH":
            return (np.tanh(gi + gh),), np.zeros((0,) + gi.shape)
        if mode == "RNN_RELU":
            return (np.maximum(gi + gh, 0),), np.zeros((0,) + gi.shape)
        if mode == "GRU":
            i_r, i_z, i_n = np.split(gi, 3, -1)
            h_r, h_z, h_n = np.split(gh, 3, -1)
            r, z = _sigmoid(i_r + h_r), _sigmoid(i_z + h_z)
            n = np.tanh(i_n + r * h_n)
            return ((1 - z) * n + z * states[0],), np.stack([r, z, n, h_n])
        i, f, g, o = np.split(gi + gh, 4, -1)
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        c = f * states[1] + i * g
        h = o * np.tanh(c)
        planes = np.stack([i, f, g, o, c, np.tanh(c)])
        return ((h if w_hr is None else h @ np.asarray(w_hr, np.float64).T), c), planes
    return step


def reference_layer(mode: str, x, states: tuple, w_ih, w_hh, b_ih, b_hh, w_hr, reverse: bool) -> tuple:
    """One layer in NumPy, in float64: ``(output, *last states, workspace)`` in ``x``'s dtype."""
    dtype = np.asarray(x).dtype
    x, w_ih, w_hh = (np.asarray(t, np.float64) for t in (x, w_ih, w_hh))
    states = tuple(np.asarray(s, np.float64) for s in states)
    b_ih = 0 if b_ih is None else np.asarray(b_ih, np.float64)
    b_hh = 0 if b_hh is None else np.asarray(b_hh, np.float64)
    step = _reference_step(mode, w_hr)
    length, batch = x.shape[:2]
    outputs, planes = [None] * length, [None] * length
    for t in (reversed(range(length)) if reverse else range(length)):
        states, planes[t] = step(x[t] @ w_ih.T + b_ih, states[0] @ w_hh.T + b_hh, states)
        outputs[t] = states[0]
    output = np.stack(outputs) if outputs else np.zeros((0,) + states[0].shape)
    hidden = w_ih.shape[0] // GATES[mode]
    workspace = np.stack(planes) if planes else np.zeros((0, WORKSPACE_PLANES[mode], batch, hidden))
    return tuple(a.astype(dtype) for a in (output,) + states + (workspace,))


def _rnn_layer_reference(x, hx, w_ih, w_hh, b_ih=None, b_hh=None, mode="RNN_TANH", reverse=False):
    return reference_layer(mode, x, (hx,), w_ih, w_hh, b_ih, b_hh, None, reverse)[:2]


def _lstm_layer_reference(x, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    return reference_layer("LSTM", x, (hx, cx), w_ih, w_hh, b_ih, b_hh, w_hr, reverse)[:3]


# -- samples: small, since gradient checks of a loop are slow --------------------------------------------------------

def _layer_weights(make, gates: int, hidden: int, features: int, out_size: int):
    def w(*sizes):
        return make(sizes, low=-0.7, high=0.7)
    return w(gates * hidden, features), w(gates * hidden, out_size), w(gates * hidden), w(gates * hidden)


def rnn_layer_samples(make, dtype):
    for mode in RNN_MODES:
        gates = 3 if mode == "GRU" else 1
        w_ih, w_hh, b_ih, b_hh = _layer_weights(make, gates, 3, 2, 3)
        yield Sample((make((3, 2, 2)), make((2, 3)), w_ih, w_hh, b_ih, b_hh), {"mode": mode}, note=mode)
    w_ih, w_hh, b_ih, b_hh = _layer_weights(make, 3, 2, 3, 2)
    yield Sample((make((2, 1, 3)), make((1, 2)), w_ih, w_hh), {"mode": "GRU", "reverse": True},
                 note="GRU reverse, no biases")
    w_ih, w_hh, b_ih, b_hh = _layer_weights(make, 1, 2, 3, 2)
    yield Sample((make((3, 2, 3), noncontiguous=True), make((2, 2)), w_ih, w_hh, b_ih, b_hh),
                 {"mode": "RNN_TANH", "reverse": True}, note="reverse, noncontiguous input")
    yield Sample((make((0, 2, 3)), make((2, 2)), w_ih, w_hh, b_ih, b_hh), note="empty sequence")


def lstm_layer_samples(make, dtype):
    w_ih, w_hh, b_ih, b_hh = _layer_weights(make, 4, 2, 3, 2)
    yield Sample((make((3, 2, 3)), make((2, 2)), make((2, 2)), w_ih, w_hh, b_ih, b_hh))
    yield Sample((make((2, 1, 3)), make((1, 2)), make((1, 2)), w_ih, w_hh), {"reverse": True},
                 note="reverse, no biases")
    w_ih, w_hh, b_ih, b_hh = _layer_weights(make, 4, 3, 2, 2)
    w_hr = make((2, 3), low=-0.7, high=0.7)
    yield Sample((make((2, 2, 2)), make((2, 2)), make((2, 3)), w_ih, w_hh, b_ih, b_hh, w_hr),
                 note="projected (proj_size 2, hidden 3)")
    w_ih, w_hh, b_ih, b_hh = _layer_weights(make, 4, 2, 3, 2)
    yield Sample((make((0, 2, 3)), make((2, 2)), make((2, 2)), w_ih, w_hh, b_ih, b_hh), note="empty sequence")


# -- ONNX: RNN, GRU and LSTM nodes ------------------------------------------------------------------------------------

#: Where each of ONNX's gates sits among PyTorch's: LSTM i,f,g,o -> ONNX i,o,f,c; GRU r,z,n -> ONNX z,r,h.
_ONNX_GATE_ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN_TANH": (0,), "RNN_RELU": (0,)}


def _onnx_gates(g, weight, mode: str, hidden: int) -> str:
    """A PyTorch weight or bias (gates stacked along dim 0) with its gates in ONNX's order, as ``[1, ...]``."""
    order = _ONNX_GATE_ORDER[mode]
    if len(order) > 1:
        pieces = g.op("Split", weight, g.ints([hidden] * len(order)), axis=0, outputs=len(order))
        weight = g.op("Concat", *(pieces[i] for i in order), axis=0)
    return g.unsqueeze(weight, [0])


def _onnx_bias(g, b_ih, b_hh, mode: str, hidden: int):
    """ONNX's ``B``: ``[1, 2 * gates * hidden]``, input bias then hidden bias; None when the layer has neither."""
    if b_ih is None and b_hh is None:
        return None
    zeros = g.const(np.zeros(GATES[mode] * hidden), g.compute)
    pieces = [_onnx_gates(g, zeros if b is None else b, mode, hidden) for b in (b_ih, b_hh)]
    return g.op("Concat", *pieces, axis=1)


def _onnx_layer(g, mode: str, x, states: list, w_ih, w_hh, b_ih, b_hh, reverse: bool) -> tuple:
    """One ONNX recurrent node over the whole sequence; returns ``(output, *final states)`` as Ember shapes."""
    hidden = int(g.static(g.shape_of(w_hh)[1], "hidden_size"))
    length = g.shape_of(x)[0]
    if length == 0:  # ONNX's recurrent nodes need a step; an empty sequence leaves the states as they are
        batch = g.shape_of(x)[1]
        empty = g.cast(g.op("ConstantOfShape", g.ints([0, batch, hidden])), g.compute)
        return (empty,) + tuple(g.op("Identity", s) for s in states)
    if g.compute.name not in ("float32", "float64"):
        g.fail(f"onnxruntime runs {mode} in float32 and float64 only, got {g.compute.name}")
    attributes = {"hidden_size": hidden, "direction": "reverse" if reverse else "forward"}
    if mode == "GRU":
        attributes["linear_before_reset"] = 1
    elif mode != "LSTM":
        attributes["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"]
    onnx_type = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "RNN")
    initial = [g.unsqueeze(s, [0]) for s in states]
    results = g.op(onnx_type, x, _onnx_gates(g, w_ih, mode, hidden), _onnx_gates(g, w_hh, mode, hidden),
                   _onnx_bias(g, b_ih, b_hh, mode, hidden), None, *initial, outputs=1 + len(states), **attributes)
    return (g.squeeze(results[0], [1]),) + tuple(g.squeeze(s, [0]) for s in results[1:])


def _rnn_layer_onnx(g, input, hx, w_ih, w_hh, b_ih, b_hh, mode, reverse):
    return _onnx_layer(g, mode, input, [hx], w_ih, w_hh, b_ih, b_hh, reverse)


def _lstm_layer_onnx(g, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, reverse):
    if w_hr is not None:
        g.fail("a projected LSTM (proj_size > 0) has no ONNX form")
    return _onnx_layer(g, "LSTM", input, [hx, cx], w_ih, w_hh, b_ih, b_hh, reverse)


# -- declarations -----------------------------------------------------------------------------------------------------

defop("rnn_layer(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None, *, "
      "str mode='RNN_TANH', bool reverse=False)", "nn", kind="composite", promotion=outputs_like_input(2),
      dtypes="float", meta=_rnn_layer_meta, composite=_rnn_layer, reference=_rnn_layer_reference,
      samples=rnn_layer_samples, outputs=("output", "h_n"), method=False, onnx=_rnn_layer_onnx,
      doc="one Elman (tanh/relu) or GRU layer in one direction over a time-major (L, N, H_in) input from the state "
          "(N, H): the output (L, N, H) and the last state")

defop("lstm_layer(Tensor input, Tensor hx, Tensor cx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None, "
      "Tensor? w_hr=None, *, bool reverse=False)", "nn", kind="composite", promotion=outputs_like_input(3),
      dtypes="float", meta=_lstm_layer_meta, composite=_lstm_layer, reference=_lstm_layer_reference,
      samples=lstm_layer_samples, outputs=("output", "h_n", "c_n"), method=False, onnx=_lstm_layer_onnx,
      doc="one LSTM layer in one direction over a time-major (L, N, H_in) input from the states (N, H) (hx is "
          "(N, proj_size) when w_hr projects it): the output and the last hidden and cell states")
