"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with PyTorch's parameters and formulas.

Each layer and direction is one call of the ops ``rnn_layer`` / ``lstm_layer`` (``ember.dispatch.ops.nn.recurrent``),
which run the time loop: as one fused op forward and one backward where the backend has kernels for them, else
as Ember ops that autograd unrolls (backpropagation through time). A cell's step is the same fused op over a
sequence of one step, or the same step function (``recurrent.cell_step``), so layers and cells compute the same
thing. A packed sequence runs one layer op per run of steps with the same batch size.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ...dispatch.schema.errors import ShapeError
from ...dispatch.ops import F as ops
from ...dispatch.ops.nn.recurrent import GATES as _GATES
from ...dispatch.ops.nn.recurrent import STEPS as _STEPS
from ...dispatch.ops.nn.recurrent import cell_step as _cell_step
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, packed_steps
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _uniform_reset(module: Module, hidden_size: int) -> None:
    """PyTorch's init for every recurrent weight and bias: U(-1/sqrt(hidden), 1/sqrt(hidden))."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for param in module.parameters():
        init.uniform_(param, -bound, bound)


def _runs(batch_sizes: list) -> list[tuple[int, int, int]]:
    """``(offset, count, steps)`` of each run of consecutive time steps with the same batch size in packed data."""
    runs = []
    for offset, count in packed_steps(batch_sizes):
        if runs and runs[-1][1] == count:
            runs[-1] = (runs[-1][0], count, runs[-1][2] + 1)
        else:
            runs.append((offset, count, 1))
    return runs


def _run_input(data, offset: int, count: int, steps: int):
    """A run's rows of packed ``data`` as a time-major ``(steps, count, H_in)`` sequence (a view)."""
    return data[offset:offset + count * steps].reshape(steps, count, data.shape[1])


# -- full layers -----------------------------------------------------------------------------------------------

class RNNBase(Module):
    """A stack of recurrent layers, optionally bidirectional. Subclasses pick the cell with ``mode``.

    Parameters follow PyTorch's names and shapes (``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``,
    ``bias_hh_l{k}``, ``weight_hr_l{k}`` for a projected LSTM, ``_reverse`` for the backward direction), in
    PyTorch's registration order, so state_dicts load both ways.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        if mode not in _STEPS:
            raise ValueError(f"{type(self).__name__}: unknown mode '{mode}'; expected one of {', '.join(_STEPS)}")
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        for name, value, low in (("hidden_size", hidden_size, 1), ("num_layers", num_layers, 1),
                                 ("input_size", input_size, 0), ("proj_size", proj_size, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{type(self).__name__}: {name} must be an integer >= {low}, got {value!r}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size and proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers=1")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size or hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(ops.empty(shape, dtype=dtype, device=device)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_reset(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch compatibility (cuDNN weight packing has no counterpart here)."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters grouped per layer and direction, as PyTorch's ``all_weights``."""
        per_group = len(self._flat_weights_names) // (self.num_layers * self._directions)
        weights = self._flat_weights
        return [weights[i:i + per_group] for i in range(0, len(weights), per_group)]

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _layer_weights(self, layer: int, direction: int):
        """``(W_ih, W_hh, b_ih, b_hh, W_hr)`` of one layer and direction, None where absent."""
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = self._parameters.get
        return (get("weight_ih" + suffix), get("weight_hh" + suffix), get("bias_ih" + suffix),
                get("bias_hh" + suffix), get("weight_hr" + suffix))

    def forward(self, input, hx=None):
        """``input`` is ``(L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``), unbatched ``(L, H_in)``, or a
        ``PackedSequence``, which gives a ``PackedSequence`` output and each sequence's state at its own last step.

        Returns ``(output, h_n)``, and ``(output, (h_n, c_n))`` for the LSTM. States are always
        ``(num_layers * num_directions, N, H)``, batch_first or not, as in PyTorch.
        """
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = type(self).__name__
        if input.ndim not in (2, 3):
            raise ShapeError(f"{name}: expected input to be 2-D (unbatched) or 3-D, got {input.ndim}-D tensor "
                             f"of shape {tuple(input.shape)}")
        batched = input.ndim == 3
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                             f"got {input.shape[-1]}")
        if not batched:
            x = input.unsqueeze(1)
        else:
            x = input.transpose(0, 1) if self.batch_first else input
        state = self._initial_state(x, hx, batched)
        output, final = self._stack(x, state)
        if not batched:
            output = output.squeeze(1)
            final = tuple(s.squeeze(1) for s in final)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, (final if self.mode == "LSTM" else final[0])

    def _forward_packed(self, packed: PackedSequence, hx):
        """The layers over a packed batch: at step ``t`` only the ``batch_sizes[t]`` longest sequences advance.

        ``hx`` and ``h_n`` are in the caller's batch order; inside, rows follow ``sorted_indices``.
        """
        data = packed.data
        if data.ndim != 2 or data.shape[-1] != self.input_size:
            raise ShapeError(f"{type(self).__name__}: packed input data must be (sum of lengths, {self.input_size}),"
                             f" got {tuple(data.shape)}")
        batch_sizes = [int(n) for n in packed.batch_sizes.tolist()]
        batch = batch_sizes[0] if batch_sizes else 0
        shape_of_input = ops.empty((0, batch, self.input_size), dtype=data.dtype, device=data.device)
        state = self._initial_state(shape_of_input, hx, batched=True)
        if packed.sorted_indices is not None:
            state = tuple(s.index_select(1, packed.sorted_indices) for s in state)
        directions, finals = self._directions, []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                scan = self._scan_packed_reverse if direction else self._scan_packed
                output, final = scan(data, batch_sizes, tuple(s[index] for s in state),
                                     self._layer_weights(layer, direction))
                outputs.append(output)
                finals.append(final)
            data = outputs[0] if directions == 1 else ops.cat(outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout, training=True)
        final = tuple(ops.stack([f[i] for f in finals]) for i in range(len(state)))
        if packed.unsorted_indices is not None:
            final = tuple(s.index_select(1, packed.unsorted_indices) for s in final)
        output = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        return output, (final if self.mode == "LSTM" else final[0])

    def _scan_packed(self, data, batch_sizes: list, state: tuple, weights: tuple):
        """Forward in time, one layer op per run of steps with the same batch: a sequence leaves the batch (its
        rows are last) after its final step, and its state at that moment is its final state."""
        outputs, done = [], []  # done: finished rows, last ones first
        for offset, count, steps in _runs(batch_sizes):
            if count < state[0].shape[0]:
                done.append(tuple(s[count:] for s in state))
                state = tuple(s[:count] for s in state)
            output, state = self._scan(_run_input(data, offset, count, steps), state, weights, reverse=False)
            outputs.append(output.reshape(count * steps, output.shape[-1]))
        done.append(state)
        final = tuple(ops.cat([rows[i] for rows in reversed(done)], 0) for i in range(len(state)))
        return ops.cat(outputs, 0), final

    def _scan_packed_reverse(self, data, batch_sizes: list, state: tuple, weights: tuple):
        """Backward in time, one layer op per run: a sequence joins the batch, from its initial state, at its own
        last step."""
        initial, outputs = state, []
        state = tuple(s[:0] for s in initial)
        for offset, count, steps in reversed(_runs(batch_sizes)):
            if count > state[0].shape[0]:
                state = tuple(ops.cat([s, s0[s.shape[0]:count]], 0) for s, s0 in zip(state, initial))
            output, state = self._scan(_run_input(data, offset, count, steps), state, weights, reverse=True)
            outputs.append(output.reshape(count * steps, output.shape[-1]))
        return ops.cat(outputs[::-1], 0), state

    def _initial_state(self, x, hx, batched: bool) -> tuple:
        """``hx`` checked and batched as a tuple of ``(layers * directions, N, size)`` tensors; zeros if None."""
        batch = x.shape[1]
        layers = self.num_layers * self._directions
        sizes = [self.proj_size or self.hidden_size] + ([self.hidden_size] if self.mode == "LSTM" else [])
        if hx is None:
            return tuple(ops.zeros((layers, batch, size), dtype=x.dtype, device=x.device) for size in sizes)
        states = tuple(hx) if self.mode == "LSTM" else (hx,)
        if len(states) != len(sizes):
            raise ValueError(f"{type(self).__name__}: expected hx to be a tuple (h_0, c_0), got {len(states)} tensors")
        checked = []
        for label, state, size in zip(("hx", "cx"), states, sizes):
            if state.ndim != (3 if batched else 2):
                raise ShapeError(f"{type(self).__name__}: for {'batched 3-D' if batched else 'unbatched 2-D'} "
                                 f"input, {label} should also be {3 if batched else 2}-D but got {state.ndim}-D "
                                 f"tensor")
            if not batched:
                state = state.unsqueeze(1)
            if tuple(state.shape) != (layers, batch, size):
                raise ShapeError(f"{type(self).__name__}: expected {label} size {(layers, batch, size)}, got "
                                 f"{tuple(state.shape)}")
            checked.append(state)
        return tuple(checked)

    def _stack(self, x, state: tuple):
        """Run every layer and direction over time-major ``x``; returns the last layer's output and final states."""
        directions = self._directions
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                start = tuple(s[index] for s in state)
                output, final = self._scan(x, start, self._layer_weights(layer, direction), reverse=direction == 1)
                outputs.append(output)
                finals.append(final)
            x = outputs[0] if directions == 1 else ops.cat(outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        stacked = tuple(ops.stack([final[i] for final in finals]) for i in range(len(state)))
        return x, stacked

    def _scan(self, x, state: tuple, weights: tuple, reverse: bool):
        """One layer in one direction over ``x`` of shape ``(L, N, H_in)``; returns ``(L, N, H)`` and the last state."""
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        if self.mode == "LSTM":
            output, h, c = ops.lstm_layer(x, *state, w_ih, w_hh, b_ih, b_hh, w_hr, reverse=reverse)
            return output, (h, c)
        output, h = ops.rnn_layer(x, *state, w_ih, w_hh, b_ih, b_hh, mode=self.mode, reverse=reverse)
        return output, (h,)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first:
            s += f", batch_first={self.batch_first}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`` with ``nonlinearity`` 'tanh' or 'relu'."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity='{self.nonlinearity}'"


class LSTM(RNNBase):
    """Long short-term memory; ``forward(input, (h_0, c_0))`` returns ``(output, (h_n, c_n))``.

    With ``proj_size > 0`` the hidden state is projected by ``weight_hr_l{k}`` (shape ``(proj_size, hidden)``).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit, with PyTorch's placement of ``b_hn`` inside the reset gate's product."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


# -- cells -----------------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """One time step: parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``, as in PyTorch."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.mode, self.input_size, self.hidden_size, self.bias = mode, input_size, hidden_size, bias
        gates = _GATES[mode] * hidden_size
        self.weight_ih = Parameter(ops.empty((gates, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(ops.empty((gates, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(ops.empty((gates,), dtype=dtype, device=device))
            self.bias_hh = Parameter(ops.empty((gates,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_reset(self, self.hidden_size)

    def forward(self, input, hx=None):
        """``input`` is ``(N, H_in)`` or unbatched ``(H_in)``; returns the new state (``(h', c')`` for LSTMCell)."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ShapeError(f"{name}: Expected input to be 1-D or 2-D but received {input.ndim}-D tensor")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input has inconsistent input_size: got {input.shape[-1]} expected "
                             f"{self.input_size}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            zeros = ops.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
            state = (zeros, zeros) if self.mode == "LSTM" else (zeros,)
        else:
            state = tuple(hx) if self.mode == "LSTM" else (hx,)
            for s in state:
                if s.ndim != input.ndim:
                    raise ShapeError(f"{name}: expected hidden state to be {input.ndim}-D like the input, got "
                                     f"{s.ndim}-D tensor of shape {tuple(s.shape)}")
            if not batched:
                state = tuple(s.unsqueeze(0) for s in state)
            for s in state:
                if tuple(s.shape) != (x.shape[0], self.hidden_size):
                    raise ShapeError(f"{name}: expected hidden state of shape {(x.shape[0], self.hidden_size)}, "
                                     f"got {tuple(s.shape)}")
        state = _cell_step(self.mode, x, state, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not batched:
            state = tuple(s.squeeze(0) for s in state)
        return state if self.mode == "LSTM" else state[0]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        return s


class RNNCell(RNNCellBase):
    """``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`` for one step, ``nonlinearity`` 'tanh' or 'relu'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, bias,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity='{self.nonlinearity}'"


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c))`` returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, bias, device=device, dtype=dtype)


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, h)`` returns ``h'``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, bias, device=device, dtype=dtype)
