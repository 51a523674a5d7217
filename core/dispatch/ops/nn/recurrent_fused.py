"""The fused recurrent layer pairs: ``_rnn_layer_fused`` / ``_lstm_layer_fused`` and their backward ops.

``rnn_layer`` and ``lstm_layer`` (``recurrent.py``) route to these where the backend has kernels for them, and
the cells run them over a sequence of one step. One op runs a whole layer in one direction and returns, beside
the output and the last states, a workspace: per step the planes its backward needs (``WORKSPACE_PLANES``: the
LSTM's activated gates i, f, g, o, the cell state c and tanh(c); the GRU's r, z, n and ``W_hn h + b_hn``;
nothing for the Elman cells, whose backward needs only their output), shaped ``(L, k, N, H)``. The backward op
takes the gradients of all three (four) outputs and returns those of every input, so autograd records one node
per layer instead of a dozen per step; a kernel runs it as one GEMM per step plus whole-sequence GEMMs for the
weights (``ember.backends.arraykernels.recurrent``).

The composites below are the definitions: the forward is the layer's own time loop collecting the planes, the
backward backpropagation through time in Ember ops, so that it runs on every backend and can be differentiated
again (double backward reaches the workspace, whose gradient the backward takes exactly). The forward ops'
NumPy reference is the layers' own; the backward ops' is their composite's definition evaluated with NumPy in
float64 (``_NumPyOps``). The conformance suite also checks the pair through the forward ops' gradients (finite
differences, and double backward through the composite).
"""
from __future__ import annotations

import numpy as np

from ...schema.meta import require, shape
from ...schema import Sample, defop
from ..namespace import F
from .recurrent import (GATES, WORKSPACE_PLANES, lstm_layer_samples, lstm_layer_shapes, outputs_like_input,
                        reference_layer, rnn_layer_samples, rnn_layer_shapes, scan)

_RNN, _LSTM = "_rnn_layer_fused", "_lstm_layer_fused"
_RNN_BACKWARD, _LSTM_BACKWARD = _RNN + "_backward", _LSTM + "_backward"


# -- forward: the layer's loop, keeping the planes ----------------------------------------------------------------

def _workspace(planes: list, mode: str, x, hidden: int):
    if planes:
        return F.stack(planes)
    return F.zeros((x.shape[0], WORKSPACE_PLANES[mode], x.shape[1], hidden), dtype=x.dtype, device=x.device)


def _fresh(state, initial):
    """A final state that is still the initial one (an empty sequence) as a tensor of its own."""
    return F.clone(state) if state is initial else state


def _empty_or(output, x):
    """The output, or for an empty sequence plain zeros of its shape: the scan's empty output is an expanded view
    made to keep autograd's link, which this op's own derivative does not need (and which traces to ONNX's Expand,
    whose 1-to-0 broadcast onnxruntime does not follow)."""
    return output if x.shape[0] else F.zeros(tuple(output.shape), dtype=output.dtype, device=output.device)


def _rnn_fused(x, hx, w_ih, w_hh, b_ih=None, b_hh=None, mode="RNN_TANH", reverse=False):
    planes = []
    output, (h,) = scan(mode, x, (hx,), w_ih, w_hh, b_ih, b_hh, None, reverse, planes)
    return _empty_or(output, x), _fresh(h, hx), _workspace(planes, mode, x, w_hh.shape[1])


def _lstm_fused(x, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    planes = []
    output, (h, c) = scan("LSTM", x, (hx, cx), w_ih, w_hh, b_ih, b_hh, w_hr, reverse, planes)
    return _empty_or(output, x), _fresh(h, hx), _fresh(c, cx), _workspace(planes, "LSTM", x, cx.shape[1])


# -- backward: one step of each cell, then the loop -------------------------------------------------------------
# Written against ``F``, a namespace of Ember's ops (the composite) or ``_NumPyOps`` (the NumPy reference: the same
# definition, in float64). A step gets the gradient ``dh`` of its new (unprojected) state, the LSTM's cell gradient
# ``dc`` from later steps, its planes and their gradients, and returns (gradient of the input projection, gradient
# of the hidden projection ``h_prev W_hh^T + b_hh``, the part of dh carried straight to h_prev or None, the cell
# gradient for c_prev).

def _slope(F, s):
    """The sigmoid's derivative from its value: s (1 - s)."""
    return F.mul(s, F.rsub(s, 1))


def _tanh_slope(F, t):
    return F.rsub(F.square(t), 1)


def _lstm_backward_step(F, dh, dc, planes, grad_planes, h_prev, c_prev, h):
    i, f, g, o, c, tanh_c = planes
    d_i, d_f, d_g, d_o, d_c, d_tanh_c = grad_planes
    d_o = F.add(F.mul(dh, tanh_c), d_o)
    dc = F.add(F.add(dc, F.mul(F.add(F.mul(dh, o), d_tanh_c), _tanh_slope(F, tanh_c))), d_c)
    d_i = F.mul(F.add(F.mul(dc, g), d_i), _slope(F, i))
    d_f = F.mul(F.add(F.mul(dc, c_prev), d_f), _slope(F, f))
    d_g = F.mul(F.add(F.mul(dc, i), d_g), _tanh_slope(F, g))
    gates = F.cat([d_i, d_f, d_g, F.mul(d_o, _slope(F, o))], -1)
    return gates, gates, None, F.mul(dc, f)


def _gru_backward_step(F, dh, dc, planes, grad_planes, h_prev, c_prev, h):
    r, z, n, h_n = planes
    d_r, d_z, d_n, d_h_n = grad_planes
    d_n = F.mul(F.add(F.mul(dh, F.rsub(z, 1)), d_n), _tanh_slope(F, n))
    d_r = F.mul(F.add(F.mul(d_n, h_n), d_r), _slope(F, r))
    d_z = F.mul(F.add(F.mul(dh, F.sub(h_prev, n)), d_z), _slope(F, z))
    d_h_n = F.add(F.mul(d_n, r), d_h_n)
    return F.cat([d_r, d_z, d_n], -1), F.cat([d_r, d_z, d_h_n], -1), F.mul(dh, z), None


def _tanh_backward_step(F, dh, dc, planes, grad_planes, h_prev, c_prev, h):
    d = F.mul(dh, _tanh_slope(F, h))
    return d, d, None, None


def _relu_backward_step(F, dh, dc, planes, grad_planes, h_prev, c_prev, h):
    d = F.where(F.gt(h, 0), dh, F.zeros_like(dh))
    return d, d, None, None


_BACKWARD_STEPS = {"LSTM": _lstm_backward_step, "GRU": _gru_backward_step, "RNN_TANH": _tanh_backward_step,
                   "RNN_RELU": _relu_backward_step}


def _flat(F, t):
    """(L, N, k) as (L * N, k), spelled out: -1 is ambiguous when k is 0 (input_size 0)."""
    return F.reshape(t, (t.shape[0] * t.shape[1], t.shape[-1]))


def _backward(F, mode, grad_output, grad_h_n, grad_c_n, grad_workspace, x, hx, cx, w_ih, w_hh, w_hr, output,
              workspace, reverse):
    """Backpropagation through time: the steps in reverse, then the weights' gradients over the whole sequence."""
    length = x.shape[0]
    hidden = w_ih.shape[0] // GATES[mode]
    outputs, grads_out = F.unbind(output, 0), F.unbind(grad_output, 0)
    planes, grad_planes = F.unbind(workspace, 0), F.unbind(grad_workspace, 0)
    d_gi, d_gh, d_projected = [None] * length, [None] * length, [None] * length
    dh, dc = grad_h_n, grad_c_n
    step = _BACKWARD_STEPS[mode]
    earlier = [t + 1 if reverse else t - 1 for t in range(length)]  # the step that ran before t, if any
    earlier = [e if 0 <= e < length else None for e in earlier]
    previous = [hx if e is None else outputs[e] for e in earlier]
    for t in (range(length) if reverse else reversed(range(length))):
        dh = F.add(dh, grads_out[t])
        d_state = dh
        if w_hr is not None:
            d_projected[t], d_state = dh, F.matmul(dh, w_hr)
        c_prev = None if cx is None else (cx if earlier[t] is None else planes[earlier[t]][4])
        d_gi[t], d_gh[t], carried, dc = step(F, d_state, dc, F.unbind(planes[t], 0), F.unbind(grad_planes[t], 0),
                                             previous[t], c_prev, outputs[t])
        dh = F.matmul(d_gh[t], w_hh) if carried is None else F.add(carried, F.matmul(d_gh[t], w_hh))
    rows = w_ih.shape[0]
    if length == 0:
        def zeros(*sizes):
            return F.zeros(sizes, dtype=x.dtype, device=x.device)
        grad_input, grad_w_ih, grad_w_hh = zeros(*x.shape), zeros(*w_ih.shape), zeros(*w_hh.shape)
        grad_b_ih, grad_b_hh = zeros(rows), zeros(rows)
        grad_w_hr = zeros(*(w_hr.shape if w_hr is not None else (0, hidden)))
        dh, dc = F.clone(dh), None if dc is None else F.clone(dc)
    else:
        flat_gi, flat_gh = _flat(F, F.stack(d_gi)), _flat(F, F.stack(d_gh))
        grad_input = F.reshape(F.matmul(flat_gi, w_ih), tuple(x.shape))
        grad_w_ih = F.matmul(F.t(flat_gi), _flat(F, x))
        grad_w_hh = F.matmul(F.t(flat_gh), _flat(F, F.stack(previous)))
        grad_b_ih, grad_b_hh = F.sum(flat_gi, 0), F.sum(flat_gh, 0)
        if w_hr is not None:
            unprojected = F.stack([F.mul(p[3], p[5]) for p in planes])
            grad_w_hr = F.matmul(F.t(_flat(F, F.stack(d_projected))), _flat(F, unprojected))
        else:
            grad_w_hr = F.zeros((0, hidden), dtype=x.dtype, device=x.device)
    grads = (grad_input, dh) + (() if cx is None else (dc,)) + (grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh)
    return grads + (() if cx is None else (grad_w_hr,))


def _rnn_fused_backward(grad_output, grad_h_n, grad_workspace, input, hx, w_ih, w_hh, output, workspace,
                        mode="RNN_TANH", reverse=False):
    return _backward(F, mode, grad_output, grad_h_n, None, grad_workspace, input, hx, None, w_ih, w_hh, None, output,
                     workspace, reverse)


def _lstm_fused_backward(grad_output, grad_h_n, grad_c_n, grad_workspace, input, hx, cx, w_ih, w_hh, w_hr, output,
                         workspace, reverse=False):
    return _backward(F, "LSTM", grad_output, grad_h_n, grad_c_n, grad_workspace, input, hx, cx, w_ih, w_hh, w_hr,
                     output, workspace, reverse)


# -- derivatives: the forward ops' gradients are their backward ops ----------------------------------------------
# Every output's gradient goes in, the workspace's included (zeros unless double backward reaches it), and the
# backward ops return one gradient per tensor input of the forward, in its order (the biases' even when absent).

def _rnn_fused_derivative(grads, input, hx, w_ih, w_hh, mode, reverse, results):
    output, _, workspace = results
    return F._rnn_layer_fused_backward(grads[0], grads[1], grads[2], input, hx, w_ih, w_hh, output, workspace,
                                       mode=mode, reverse=reverse)


def _lstm_fused_derivative(grads, input, hx, cx, w_ih, w_hh, w_hr, reverse, results):
    output, _, _, workspace = results
    return F._lstm_layer_fused_backward(grads[0], grads[1], grads[2], grads[3], input, hx, cx, w_ih, w_hh, w_hr,
                                        output, workspace, reverse=reverse)


# -- metas --------------------------------------------------------------------------------------------------------

def _rnn_shapes(name, x, hx, w_ih, w_hh, b_ih, b_hh, mode) -> tuple:
    out, h = rnn_layer_shapes(name, x, hx, w_ih, w_hh, b_ih, b_hh, mode)
    return out, h, (out[0], WORKSPACE_PLANES[mode], out[1], out[2])


def _lstm_shapes(name, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr) -> tuple:
    out, h, c = lstm_layer_shapes(name, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    return out, h, c, (out[0], WORKSPACE_PLANES["LSTM"], out[1], c[1])


def _rnn_fused_meta(x, hx, w_ih, w_hh, b_ih=None, b_hh=None, mode="RNN_TANH", reverse=False):
    return _rnn_shapes(_RNN, x, hx, w_ih, w_hh, b_ih, b_hh, mode)


def _lstm_fused_meta(x, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    return _lstm_shapes(_LSTM, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)


def _require_like(name: str, labels: tuple, tensors: tuple, shapes: tuple) -> None:
    """Each of ``tensors`` (the forward's outputs or their gradients) has the forward output's shape."""
    for label, t, expected in zip(labels, tensors, shapes):
        require(shape(t) == expected, name, f"{label} must have shape {expected}, as the forward gives it", t)


def _rnn_fused_backward_meta(grad_output, grad_h_n, grad_workspace, x, hx, w_ih, w_hh, output, workspace,
                             mode="RNN_TANH", reverse=False):
    out, h, ws = _rnn_shapes(_RNN_BACKWARD, x, hx, w_ih, w_hh, None, None, mode)
    _require_like(_RNN_BACKWARD, ("grad_output", "grad_h_n", "grad_workspace", "output", "workspace"),
                  (grad_output, grad_h_n, grad_workspace, output, workspace), (out, h, ws, out, ws))
    rows = (shape(w_ih)[0],)
    return shape(x), h, shape(w_ih), shape(w_hh), rows, rows


def _lstm_fused_backward_meta(grad_output, grad_h_n, grad_c_n, grad_workspace, x, hx, cx, w_ih, w_hh, w_hr, output,
                              workspace, reverse=False):
    out, h, c, ws = _lstm_shapes(_LSTM_BACKWARD, x, hx, cx, w_ih, w_hh, None, None, w_hr)
    _require_like(_LSTM_BACKWARD, ("grad_output", "grad_h_n", "grad_c_n", "grad_workspace", "output", "workspace"),
                  (grad_output, grad_h_n, grad_c_n, grad_workspace, output, workspace), (out, h, c, ws, out, ws))
    rows = (shape(w_ih)[0],)
    return shape(x), h, c, shape(w_ih), shape(w_hh), rows, rows, shape(w_hr) if w_hr is not None else (0, c[1])


# -- references and samples ---------------------------------------------------------------------------------------

def _rnn_fused_reference(x, hx, w_ih, w_hh, b_ih=None, b_hh=None, mode="RNN_TANH", reverse=False):
    return reference_layer(mode, x, (hx,), w_ih, w_hh, b_ih, b_hh, None, reverse)


def _lstm_fused_reference(x, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    return reference_layer("LSTM", x, (hx, cx), w_ih, w_hh, b_ih, b_hh, w_hr, reverse)


class _NumPyOps:
    """The ops ``_backward`` calls, as NumPy functions: evaluated with them, in float64, the backward's own
    definition is its NumPy reference, against which the suite checks every backend's kernels (the CPU's numba
    loops, the array kernels CUDA runs) and the composite in the lower-precision dtypes."""
    add, sub, mul, matmul, square, where, gt = np.add, np.subtract, np.multiply, np.matmul, np.square, np.where, \
        np.greater
    stack, reshape, t, zeros_like, clone = np.stack, np.reshape, np.transpose, np.zeros_like, np.copy

    @staticmethod
    def rsub(a, b):
        return b - a

    @staticmethod
    def cat(arrays, dim):
        return np.concatenate(arrays, dim)

    @staticmethod
    def unbind(a, dim):
        return list(np.moveaxis(a, dim, 0))

    @staticmethod
    def sum(a, dim):
        return np.sum(a, dim)

    @staticmethod
    def zeros(sizes, dtype=None, device=None):
        return np.zeros(sizes)


def _backward_reference(mode: str, arrays: tuple, reverse: bool) -> tuple:
    dtype = np.asarray(arrays[4]).dtype  # the input's
    wide = [None if a is None else np.asarray(a, np.float64) for a in arrays]
    return tuple(np.asarray(g).astype(dtype) for g in _backward(_NumPyOps, mode, *wide, reverse))


def _rnn_fused_backward_reference(grad_output, grad_h_n, grad_workspace, input, hx, w_ih, w_hh, output, workspace,
                                  mode="RNN_TANH", reverse=False):
    return _backward_reference(mode, (grad_output, grad_h_n, None, grad_workspace, input, hx, None, w_ih, w_hh, None,
                                      output, workspace), reverse)


def _lstm_fused_backward_reference(grad_output, grad_h_n, grad_c_n, grad_workspace, input, hx, cx, w_ih, w_hh, w_hr,
                                   output, workspace, reverse=False):
    return _backward_reference("LSTM", (grad_output, grad_h_n, grad_c_n, grad_workspace, input, hx, cx, w_ih, w_hh,
                                        w_hr, output, workspace), reverse)


def _backward_samples(forward: str, forward_samples, meta, weights_of):
    """The backward op's samples: each forward sample's inputs, its output and workspace as the ``forward`` op
    gives them, and random gradients for every output. ``weights_of(args)`` picks the forward arguments the
    backward takes."""
    def samples(make, dtype):
        for sample in forward_samples(make, dtype):
            args, kwargs = sample.args, dict(sample.kwargs)
            shapes = meta(*args, **kwargs)
            if dtype.is_floating_point:
                results = getattr(F, forward)(*args, **kwargs)
                output, workspace = results[0], results[-1]
            else:  # (the dtype checks' samples, never computed)
                output, workspace = make(shapes[0]), make(shapes[-1])
            grads = tuple(make(tuple(s)) for s in shapes)
            # relu's outputs sit at its kink (0) wherever it clipped: no finite differences through them
            yield Sample(grads + weights_of(args) + (output, workspace), kwargs, note=sample.note,
                         gradcheck=kwargs.get("mode") != "RNN_RELU")
    return samples


def _rnn_weights(args):
    x, hx, w_ih, w_hh = args[:4]
    return x, hx, w_ih, w_hh


def _lstm_weights(args):
    x, hx, cx, w_ih, w_hh = args[:5]
    return x, hx, cx, w_ih, w_hh, args[7] if len(args) > 7 else None


# -- declarations ---------------------------------------------------------------------------------------------------

#: the composite in bfloat16 rounds every op of every step to 8 bits, and the weights' gradients sum terms of
#: either sign over the sequence: 0.13 off at -0.87 in a GRU sample (the kernels compute in float32, round once)
_BACKWARD_TOLERANCES = {"bfloat16": (5e-2, 0.15)}


defop("_rnn_layer_fused(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None, *, "
      "str mode='RNN_TANH', bool reverse=False)", "nn", kind="composite", promotion=outputs_like_input(3),
      dtypes="float", meta=_rnn_fused_meta, composite=_rnn_fused, derivative=_rnn_fused_derivative,
      reference=_rnn_fused_reference, samples=rnn_layer_samples, outputs=("output", "h_n", "workspace"),
      method=False,
      doc="rnn_layer (one Elman or GRU layer in one direction), with the workspace (L, k, N, H) its backward needs")
defop("_rnn_layer_fused_backward(Tensor grad_output, Tensor grad_h_n, Tensor grad_workspace, Tensor input, "
      "Tensor hx, Tensor w_ih, Tensor w_hh, Tensor output, Tensor workspace, *, str mode='RNN_TANH', "
      "bool reverse=False)", "nn", kind="composite", promotion=outputs_like_input(6), dtypes="float",
      meta=_rnn_fused_backward_meta, composite=_rnn_fused_backward, reference=_rnn_fused_backward_reference,
      tolerances=_BACKWARD_TOLERANCES,
      samples=_backward_samples(_RNN, rnn_layer_samples, _rnn_fused_meta, _rnn_weights),
      outputs=("grad_input", "grad_hx", "grad_w_ih", "grad_w_hh", "grad_b_ih", "grad_b_hh"), method=False,
      doc="the gradients of _rnn_layer_fused's inputs (both biases' always) from those of its three outputs")
defop("_lstm_layer_fused(Tensor input, Tensor hx, Tensor cx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
      "Tensor? b_hh=None, Tensor? w_hr=None, *, bool reverse=False)", "nn", kind="composite",
      promotion=outputs_like_input(4), dtypes="float", meta=_lstm_fused_meta, composite=_lstm_fused,
      derivative=_lstm_fused_derivative, reference=_lstm_fused_reference, samples=lstm_layer_samples,
      outputs=("output", "h_n", "c_n", "workspace"), method=False,
      doc="lstm_layer (one LSTM layer in one direction), with the workspace (L, 6, N, H) its backward needs")
defop("_lstm_layer_fused_backward(Tensor grad_output, Tensor grad_h_n, Tensor grad_c_n, Tensor grad_workspace, "
      "Tensor input, Tensor hx, Tensor cx, Tensor w_ih, Tensor w_hh, Tensor? w_hr, Tensor output, Tensor workspace, "
      "*, bool reverse=False)", "nn", kind="composite", promotion=outputs_like_input(8), dtypes="float",
      meta=_lstm_fused_backward_meta, composite=_lstm_fused_backward, reference=_lstm_fused_backward_reference,
      tolerances=_BACKWARD_TOLERANCES,
      samples=_backward_samples(_LSTM, lstm_layer_samples, _lstm_fused_meta, _lstm_weights),
      outputs=("grad_input", "grad_hx", "grad_cx", "grad_w_ih", "grad_w_hh", "grad_b_ih", "grad_b_hh",
               "grad_w_hr"), method=False,
      doc="the gradients of _lstm_layer_fused's inputs (both biases' always; grad_w_hr is (0, H) without a "
          "projection) from those of its four outputs")
