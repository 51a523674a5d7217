"""Every model of the ONNX test set and the example GPT, exported with dynamic batch (and sequence) sizes, saved,
then loaded and run in a fresh process that has none of their source, on cpu and opencl, at other sizes than the
export's: the results equal the eager model's.

    python tests/test_export_models.py     # prints the worst absolute difference per model and device
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import ember
from ember import nn
from ember.export import Dim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_models import gpt_example  # noqa: E402
from test_onnx_models import CausalEncoderLM, SmallCNN, _trained_statistics  # noqa: E402
from test_onnx_rnn import MODELS as RNN_MODELS, LanguageModel, _inputs  # noqa: E402

DEVICES = [d for d in ("cpu", "opencl") if ember.backends.available().get(d) == "available"]
TOLERANCE = 1e-4


def _mlp():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4)), \
        (ember.randn(8, 12),), (ember.randn(3, 12),), ({0: Dim("batch")},)


def _cnn():
    model = SmallCNN()
    _trained_statistics(model, ember.randn(16, 3, 16, 16))
    return model, (ember.randn(4, 3, 16, 16),), (ember.randn(7, 3, 16, 16),), ({0: Dim("batch")},)


def _encoder():
    tokens = ({0: Dim("batch"), 1: Dim("sequence", max=64)},)
    return CausalEncoderLM().eval(), (ember.randint(0, 50, (2, 12)),), (ember.randint(0, 50, (5, 7)),), tokens


def _gpt():
    config = gpt_example.GPTConfig(vocab_size=65, block_size=16, n_layer=2, n_head=2, n_embd=32)
    dims = ({0: Dim("batch"), 1: Dim("sequence", max=16)},)
    return gpt_example.gpt(ember, config).eval(), (ember.randint(0, 65, (2, 16)),), \
        (ember.randint(0, 65, (3, 9)),), dims


def _language_model(name: str):
    def make():
        model = LanguageModel(RNN_MODELS[name]()).eval()
        batch, sequence = Dim("batch"), Dim("sequence")
        tokens = {0: batch, 1: sequence} if model.recurrent.batch_first else {0: sequence, 1: batch}
        export_args, run_args = _inputs(model, 5, 3), _inputs(model, 9, 2)
        return model, export_args, run_args, (tokens,) + tuple({1: batch} for _ in export_args[1:])
    return make


MODELS = {"mlp": _mlp, "cnn_batch_norm_pooling": _cnn, "transformer_encoder": _encoder, "gpt": _gpt,
          **{f"rnn_{name}": _language_model(name) for name in RNN_MODELS}}

_READER = """
import json, sys
import numpy as np
import ember

folder, devices = sys.argv[1], sys.argv[2].split(",")
assert not any(name in sys.modules for name in ("test_onnx_models", "test_onnx_rnn", "compile_models"))
worst = {}
for name in json.loads(open(f"{folder}/names.json").read()):
    inputs = np.load(f"{folder}/{name}.inputs.npz")
    expected = np.load(f"{folder}/{name}.expected.npz")
    for device in devices:
        module = ember.export.load(f"{folder}/{name}.pt2", map_location=device).module()
        args = [ember.tensor(inputs[f"arg{i}"], device=device) for i in range(len(inputs.files))]
        result = module(*args)
        results = result if isinstance(result, (tuple, list)) else (result,)
        worst[f"{name} {device}"] = max(float(np.abs(r.detach().cpu().numpy() - expected[f"out{i}"]).max())
                                        for i, r in enumerate(results))
print(json.dumps(worst))
"""


def export_all(folder: str) -> None:
    """Export, save, and keep the inputs at other sizes and the eager results there, for every model."""
    for name, make in MODELS.items():
        ember.manual_seed(0)
        model, export_args, run_args, dims = make()
        program = ember.export.export(model, export_args, dynamic_shapes=dims)
        ember.export.save(program, f"{folder}/{name}.pt2")
        expected = model(*run_args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        np.savez(f"{folder}/{name}.inputs.npz", **{f"arg{i}": a.numpy() for i, a in enumerate(run_args)})
        np.savez(f"{folder}/{name}.expected.npz", **{f"out{i}": e.detach().numpy() for i, e in enumerate(expected)})
    with open(f"{folder}/names.json", "w") as f:
        json.dump(list(MODELS), f)


def worst_differences(folder: str) -> dict:
    """name + device -> worst absolute difference, measured in a fresh process without the models' source."""
    done = subprocess.run([sys.executable, "-c", _READER, folder, ",".join(DEVICES)], capture_output=True,
                          text=True, cwd=folder)
    if done.returncode:
        raise RuntimeError(f"the reading process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_model_round_trips_through_a_file(tmp_path):
    export_all(str(tmp_path))
    worst = worst_differences(str(tmp_path))
    assert len(worst) == len(MODELS) * len(DEVICES)
    failing = {key: value for key, value in worst.items() if not value <= TOLERANCE}
    assert not failing, failing


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        export_all(directory)
        sizes = {name: os.path.getsize(f"{directory}/{name}.pt2") for name in MODELS}
        for key, value in worst_differences(directory).items():
            print(f"{key:40} max abs difference {value:.3g}   file {sizes[key.rsplit(' ', 1)[0]] / 1024:.0f} KiB")
