"""The fused recurrent layer pairs (``_rnn_layer_fused`` / ``_lstm_layer_fused`` and their backward ops) as time
loops of one GEMM and a few whole-array expressions per step, for NumPy and CuPy alike.

The forward projects the input for every step with one GEMM (biases folded in), then per step multiplies the
previous state by ``W_hh^T`` and runs the gate arithmetic, which writes the new state and the step's workspace
(the activated gates, and for the LSTM the cell state and its tanh). The backward walks the steps in reverse
with one GEMM per step for the state's gradient, keeping each step's gate gradients; ``W_ih``, ``W_hh``, the
input and the biases then get theirs from whole-sequence GEMMs and sums. Half-precision inputs compute in
float32 and every result is rounded once.

The gate arithmetic of a step is a pair of functions (``StepMath``) that a backend may replace: the CPU passes
numba loops (``ember.backends.cpu.recurrent_kernels``); the array expressions here are what CUDA runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .library import ArrayLib

#: weight rows per hidden unit, and the (k, N, H) planes of one step's workspace, by mode (the schema's)
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}
WORKSPACE_PLANES = {"RNN_TANH": 0, "RNN_RELU": 0, "GRU": 4, "LSTM": 6}


@dataclass(frozen=True)
class StepMath:
    """The gate arithmetic of one time step, each function writing into arrays the driver owns.

    ``forward(gi, gh, bias, h_prev, c_prev, ws, h)``: ``gi`` is the step's input projection (for the GRU with
    ``b_ih``), ``gh`` the previous state times ``W_hh^T`` (scratch afterwards), ``bias`` the bias added to ``gh``
    (the GRU's ``b_hh``, both biases summed for the others; None without biases); it writes the workspace planes
    ``ws`` (k, N, H) and the new (unprojected) state ``h``.

    ``backward(dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh)``: ``dh`` is the gradient of the new unprojected
    state (the GRU overwrites it with the part carried straight to the previous state, ``dh * z``; the others
    may clobber it), ``dc`` the LSTM's cell gradient from later steps, replaced by the one for ``c_prev``;
    ``gws`` the workspace's own gradient; it writes the gradients of ``gi`` into ``dgi`` and, for the GRU
    (whose ``b_hn`` sits inside ``r * (...)``), of ``h_prev W_hh^T + b_hh`` into ``dgh``.
    """
    forward: Callable
    backward: Callable


def array_steps(lib: ArrayLib) -> dict[str, StepMath]:
    """The gate arithmetic of each mode as whole-array expressions of ``lib.xp``."""
    xp, sigmoid = lib.xp, lib.expit

    def lstm_forward(gi, gh, bias, h_prev, c_prev, ws, h):
        hidden = ws.shape[2]
        gh += gi
        if bias is not None:
            gh += bias
        for k, activate in enumerate((sigmoid, sigmoid, xp.tanh, sigmoid)):
            activate(gh[:, k * hidden:(k + 1) * hidden], out=ws[k])
        i, f, g, o, c, tanh_c = ws
        xp.multiply(f, c_prev, out=c)
        c += i * g
        xp.tanh(c, out=tanh_c)
        xp.multiply(o, tanh_c, out=h)

    def lstm_backward(dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh):
        hidden = ws.shape[2]
        i, f, g, o, c, tanh_c = ws
        d_i, d_f, d_g, d_o = (dgi[:, k * hidden:(k + 1) * hidden] for k in range(4))
        xp.multiply(dh, tanh_c, out=d_o)
        d_o += gws[3]
        d_o *= o * (1 - o)
        dh *= o
        dh += gws[5]
        dh *= 1 - tanh_c * tanh_c
        dc += dh
        dc += gws[4]
        xp.multiply(dc, g, out=d_i)
        d_i += gws[0]
        d_i *= i * (1 - i)
        xp.multiply(dc, c_prev, out=d_f)
        d_f += gws[1]
        d_f *= f * (1 - f)
        xp.multiply(dc, i, out=d_g)
        d_g += gws[2]
        d_g *= 1 - g * g
        dc *= f

    def gru_forward(gi, gh, bias, h_prev, c_prev, ws, h):
        hidden = ws.shape[2]
        if bias is not None:
            gh += bias
        r, z, n, h_n = ws
        sigmoid(gi[:, :hidden] + gh[:, :hidden], out=r)
        sigmoid(gi[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden], out=z)
        h_n[...] = gh[:, 2 * hidden:]
        xp.multiply(r, h_n, out=n)
        n += gi[:, 2 * hidden:]
        xp.tanh(n, out=n)
        xp.subtract(h_prev, n, out=h)
        h *= z
        h += n

    def gru_backward(dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh):
        hidden = ws.shape[2]
        r, z, n, h_n = ws
        d_n = dh * (1 - z)
        d_n += gws[2]
        d_n *= 1 - n * n
        dgi[:, 2 * hidden:] = d_n
        d_r = d_n * h_n
        d_r += gws[0]
        d_r *= r * (1 - r)
        xp.multiply(d_n, r, out=dgh[:, 2 * hidden:])
        dgh[:, 2 * hidden:] += gws[3]
        d_z = dh * (h_prev - n)
        d_z += gws[1]
        d_z *= z * (1 - z)
        for rows in (dgi, dgh):
            rows[:, :hidden] = d_r
            rows[:, hidden:2 * hidden] = d_z
        dh *= z

    def tanh_forward(gi, gh, bias, h_prev, c_prev, ws, h):
        xp.add(gi, gh, out=h)
        if bias is not None:
            h += bias
        xp.tanh(h, out=h)

    def tanh_backward(dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh):
        xp.multiply(h, h, out=dgi)
        xp.subtract(1, dgi, out=dgi)
        dgi *= dh

    def relu_forward(gi, gh, bias, h_prev, c_prev, ws, h):
        xp.add(gi, gh, out=h)
        if bias is not None:
            h += bias
        xp.maximum(h, 0, out=h)

    def relu_backward(dh, dc, ws, gws, h_prev, c_prev, h, dgi, dgh):
        xp.multiply(dh, h > 0, out=dgi)

    return {"LSTM": StepMath(lstm_forward, lstm_backward), "GRU": StepMath(gru_forward, gru_backward),
            "RNN_TANH": StepMath(tanh_forward, tanh_backward), "RNN_RELU": StepMath(relu_forward, relu_backward)}


def build(lib: ArrayLib, step_math: Callable[[str, np.dtype], StepMath] | None = None) -> dict:
    """The four kernels for ``lib``; ``step_math(mode, compute_dtype)`` chooses each call's gate arithmetic
    (default: ``array_steps``)."""
    xp, low = lib.xp, lib.low_precision
    if step_math is None:
        by_mode = array_steps(lib)

        def step_math(mode, dtype):
            return by_mode[mode]

    def widen(a):
        return a.astype(np.float32) if a is not None and a.dtype in low else a

    def steps_in_order(length: int, reverse: bool):
        """(t, the step before it or None) in the order the forward pass runs them."""
        order = range(length - 1, -1, -1) if reverse else range(length)
        before = None
        for t in order:
            yield t, before
            before = t

    def scan(mode, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, reverse):
        dtype = x.dtype
        x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr = (widen(a) for a in (x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr))
        length, batch, features = x.shape
        hidden = w_ih.shape[0] // GATES[mode]
        math = step_math(mode, x.dtype)
        gi = xp.matmul(x.reshape(length * batch, features), w_ih.T).reshape(length, batch, w_ih.shape[0])
        if mode == "GRU":  # b_hh sits inside r * (...): only b_ih can join the input projection
            if b_ih is not None:
                gi += b_ih
            bias = b_hh
        else:  # both join the step's sum, in the gate arithmetic's pass
            bias = b_hh if b_ih is None else (b_ih if b_hh is None else b_ih + b_hh)
        output = xp.empty((length, batch, hx.shape[1]), x.dtype)
        ws = xp.empty((length, WORKSPACE_PLANES[mode], batch, hidden), x.dtype)
        gh = xp.empty((batch, w_hh.shape[0]), x.dtype)
        unprojected = xp.empty((batch, hidden), x.dtype) if w_hr is not None else None
        h, c = xp.ascontiguousarray(hx), None if cx is None else xp.ascontiguousarray(cx)
        # small GEMMs with a transposed operand ran at half speed (NumPy, 20x200 @ 200x800: 143 against 79 us),
        # which pays for the copy from the second step on
        w_hh_t, w_hr_t = (w if w is None or length < 2 else xp.ascontiguousarray(w) for w in (
            w_hh.T, None if w_hr is None else w_hr.T))
        for t, _ in steps_in_order(length, reverse):
            xp.matmul(h, w_hh_t, out=gh)
            math.forward(gi[t], gh, bias, h, c, ws[t], output[t] if w_hr is None else unprojected)
            if w_hr is not None:
                xp.matmul(unprojected, w_hr_t, out=output[t])
            h = output[t]
            if cx is not None:
                c = ws[t, 4]
        finals = (h,) if cx is None else (h, c)  # the last step's, or the initial states for an empty input
        results = (output,) + tuple(xp.array(a) for a in finals) + (ws,)
        return tuple(a.astype(dtype, copy=False) for a in results)

    def scan_backward(mode, grad_output, grad_h_n, grad_c_n, grad_ws, x, hx, cx, w_ih, w_hh, w_hr, output, ws,
                      reverse):
        dtype = x.dtype
        (grad_output, grad_h_n, grad_c_n, grad_ws, x, hx, cx, w_ih, w_hh, w_hr, output, ws) = (
            widen(a) for a in (grad_output, grad_h_n, grad_c_n, grad_ws, x, hx, cx, w_ih, w_hh, w_hr, output, ws))
        length, batch, features = x.shape
        rows, hidden = w_ih.shape[0], w_ih.shape[0] // GATES[mode]
        math = step_math(mode, x.dtype)
        dgi = xp.empty((length, batch, rows), x.dtype)
        dgh = xp.empty_like(dgi) if mode == "GRU" else dgi
        dh = xp.array(grad_h_n)
        dc = None if cx is None else xp.array(grad_c_n)
        recurrent = xp.empty_like(dh)
        projected_grads = xp.empty_like(output) if w_hr is not None else None
        d_unprojected = xp.empty((batch, hidden), x.dtype) if w_hr is not None else None
        for t, before in reversed(list(steps_in_order(length, reverse))):
            dh += grad_output[t]
            h_prev = hx if before is None else output[before]
            c_prev = None if cx is None else (cx if before is None else ws[before, 4])
            if w_hr is not None:
                projected_grads[t] = dh
                xp.matmul(dh, w_hr, out=d_unprojected)
                d_state = d_unprojected
            else:
                d_state = dh
            math.backward(d_state, dc, ws[t], grad_ws[t], h_prev, c_prev, output[t], dgi[t], dgh[t])
            xp.matmul(dgh[t], w_hh, out=recurrent)
            if mode == "GRU":
                dh += recurrent
            else:
                dh, recurrent = recurrent, dh
        flat_gi, flat_gh = dgi.reshape(-1, rows), dgh.reshape(-1, rows)
        grad_input = xp.matmul(flat_gi, w_ih).reshape(x.shape)
        grad_w_ih = xp.matmul(flat_gi.T, x.reshape(length * batch, features))
        if length:  # the first step's previous state is hx, every other step's its neighbour's output
            grad_w_hh = xp.matmul(dgh[length - 1 if reverse else 0].T, hx)
        else:
            grad_w_hh = xp.zeros(w_hh.shape, x.dtype)
        if length > 1:
            later, earlier = (slice(None, -1), slice(1, None)) if reverse else (slice(1, None), slice(None, -1))
            grad_w_hh += xp.matmul(dgh[later].reshape(-1, rows).T, output[earlier].reshape(-1, output.shape[2]))
        grad_b_ih = flat_gi.sum(0)
        grad_b_hh = flat_gh.sum(0) if mode == "GRU" else grad_b_ih.copy()  # both biases join the same sum
        if w_hr is not None:
            unprojected = (ws[:, 3] * ws[:, 5]).reshape(-1, hidden)
            grad_w_hr = xp.matmul(projected_grads.reshape(-1, output.shape[2]).T, unprojected)
        else:
            grad_w_hr = xp.zeros((0, hidden), x.dtype)
        grads = (grad_input, dh) + (() if cx is None else (dc,)) + (grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh)
        if cx is not None:
            grads += (grad_w_hr,)
        return tuple(g.astype(dtype, copy=False) for g in grads)

    def _rnn_layer_fused(input, hx, w_ih, w_hh, b_ih=None, b_hh=None, mode="RNN_TANH", reverse=False):
        return scan(mode, input, hx, None, w_ih, w_hh, b_ih, b_hh, None, reverse)

    def _rnn_layer_fused_backward(grad_output, grad_h_n, grad_workspace, input, hx, w_ih, w_hh, output, workspace,
                                  mode="RNN_TANH", reverse=False):
        return scan_backward(mode, grad_output, grad_h_n, None, grad_workspace, input, hx, None, w_ih, w_hh, None,
                             output, workspace, reverse)

    def _lstm_layer_fused(input, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
        return scan("LSTM", input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)

    def _lstm_layer_fused_backward(grad_output, grad_h_n, grad_c_n, grad_workspace, input, hx, cx, w_ih, w_hh,
                                   w_hr, output, workspace, reverse=False):
        return scan_backward("LSTM", grad_output, grad_h_n, grad_c_n, grad_workspace, input, hx, cx, w_ih, w_hh,
                             w_hr, output, workspace, reverse)

    return {"_rnn_layer_fused": _rnn_layer_fused, "_rnn_layer_fused_backward": _rnn_layer_fused_backward,
            "_lstm_layer_fused": _lstm_layer_fused, "_lstm_layer_fused_backward": _lstm_layer_fused_backward}
