"""Recurrent language models exported to ONNX and run in onnxruntime at other batch sizes and sequence lengths.

Each layer and direction is one ``rnn_layer`` / ``lstm_layer`` op, written as one ONNX RNN, GRU or LSTM node, so
the exported graph does not depend on the sequence length it was captured at. The initial states are inputs.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.dispatch.ops import F
from ember.onnx import UnsupportedOperatorError

from onnx_check import Fn, check_export, export_bytes, onnx

VOCAB = 30
EXPORT_LENGTH, EXPORT_BATCH = 5, 3
RUN_LENGTH, RUN_BATCH = 9, 2


class LanguageModel(nn.Module):
    """Embedding -> recurrent stack -> Linear decoder; returns the logits and the final state(s)."""

    def __init__(self, recurrent: nn.Module) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, recurrent.input_size)
        self.recurrent = recurrent
        directions = 2 if recurrent.bidirectional else 1
        self.decoder = nn.Linear(recurrent.hidden_size * directions, VOCAB)

    def forward(self, tokens, *state):
        output, final = self.recurrent(self.embedding(tokens), state[0] if len(state) == 1 else state)
        finals = final if isinstance(final, tuple) else (final,)
        return (self.decoder(output),) + finals


def _inputs(model: LanguageModel, length: int, batch: int) -> tuple:
    rnn = model.recurrent
    tokens = ember.randint(0, VOCAB, (batch, length) if rnn.batch_first else (length, batch))
    layers = rnn.num_layers * (2 if rnn.bidirectional else 1)
    states = 2 if isinstance(rnn, nn.LSTM) else 1
    return (tokens,) + tuple(ember.randn(layers, batch, rnn.hidden_size) * 0.5 for _ in range(states))


def _dynamic_axes(model: LanguageModel, names: list) -> dict:
    tokens = {0: "batch", 1: "sequence"} if model.recurrent.batch_first else {0: "sequence", 1: "batch"}
    return {names[0]: tokens, **{name: {1: "batch"} for name in names[1:]}}


MODELS = {
    "lstm": lambda: nn.LSTM(16, 32, num_layers=2),
    "gru": lambda: nn.GRU(16, 32, num_layers=2),
    "lstm_bidirectional": lambda: nn.LSTM(16, 24, num_layers=2, bidirectional=True),
    "gru_batch_first": lambda: nn.GRU(16, 32, num_layers=2, batch_first=True),
    "rnn_tanh": lambda: nn.RNN(16, 32, num_layers=2, nonlinearity="tanh"),
    "rnn_relu_bidirectional": lambda: nn.RNN(16, 20, nonlinearity="relu", bidirectional=True),
}
MAX_ABS_DIFFERENCES: dict = {}  # model -> max abs difference against onnxruntime (printed for the closing note)


@pytest.mark.parametrize("name", list(MODELS))
def test_language_model_runs_in_onnxruntime_at_other_sizes(name):
    ember.manual_seed(0)
    model = LanguageModel(MODELS[name]()).eval()
    export_args = _inputs(model, EXPORT_LENGTH, EXPORT_BATCH)
    run_args = _inputs(model, RUN_LENGTH, RUN_BATCH)
    names = ["tokens", "h0", "c0"][:len(export_args)]
    worst = check_export(model, export_args, run_args, input_names=names,
                         dynamic_axes=_dynamic_axes(model, names), atol=2e-5, rtol=1e-4)
    MAX_ABS_DIFFERENCES[name] = worst
    print(f"\n{name}: max abs difference against onnxruntime {worst:.3g} (opset 18)")
    assert worst < 2e-5


def test_each_layer_and_direction_is_one_onnx_node():
    model = LanguageModel(nn.LSTM(8, 12, num_layers=2, bidirectional=True)).eval()
    data = export_bytes(model, _inputs(model, 4, 2), input_names=["tokens", "h0", "c0"])
    ops = [node.op_type for node in onnx.load_from_string(data).graph.node]
    assert ops.count("LSTM") == 4  # 2 layers x 2 directions, whatever the sequence length
    assert "Tanh" not in ops and "Sigmoid" not in ops  # no unrolled time steps


@pytest.mark.parametrize("opset", [17, 21])
def test_gru_exports_at_other_opsets(opset):
    ember.manual_seed(1)
    model = LanguageModel(nn.GRU(8, 12)).eval()
    names = ["tokens", "h0"]
    worst = check_export(model, _inputs(model, 4, 2), _inputs(model, 6, 3), input_names=names,
                         dynamic_axes=_dynamic_axes(model, names), opset_version=opset, atol=2e-5, rtol=1e-4)
    assert worst < 2e-5


def test_projected_lstm_is_refused_with_a_clear_error():
    model = LanguageModel(nn.LSTM(8, 12, proj_size=4)).eval()
    model.decoder = nn.Linear(4, VOCAB)
    tokens = ember.randint(0, VOCAB, (3, 2))
    with pytest.raises(UnsupportedOperatorError, match=r"lstm_layer.*recurrent.*proj_size"):
        export_bytes(model, (tokens, ember.zeros(1, 2, 4), ember.zeros(1, 2, 12)), input_names=["t", "h", "c"])


def test_rnn_layer_op_matches_onnxruntime_without_biases_in_reverse():
    """The op itself: no biases, reverse direction, the state passed in."""
    ember.manual_seed(2)
    w_ih, w_hh = ember.randn(3 * 4, 5) * 0.5, ember.randn(3 * 4, 4) * 0.5
    fn = Fn(lambda x, h: F.rnn_layer(x, h, w_ih, w_hh, mode="GRU", reverse=True))
    worst = check_export(fn, (ember.randn(3, 2, 5), ember.randn(2, 4)), (ember.randn(7, 1, 5), ember.randn(1, 4)),
                         input_names=["x", "h"], dynamic_axes={"x": {0: "L", 1: "N"}, "h": {0: "N"}})
    assert np.isfinite(worst) and worst < 1e-5
