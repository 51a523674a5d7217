"""``ember.export.save``/``load`` and ``ember.jit.save``/``load``: a program in one file that loads in a process
without the model's source, on any backend, and that loading never runs code from (the crafted files of
``hostile_exports``)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import nn
from ember.export import Dim, ExportError, ExportLoadError, export

sys.path.insert(0, os.path.dirname(__file__))
import hostile_exports  # noqa: E402

OPENCL = ember.backends.available().get("opencl") == "available"


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def test_round_trip_in_memory_with_extra_files():
    model = _model()
    ep = export(model, (ember.randn(3, 4),), dynamic_shapes=({0: Dim("batch")},))
    buffer = io.BytesIO()
    ember.export.save(ep, buffer, extra_files={"note": "trained on digits"})
    buffer.seek(0)
    extra = {"note": ""}
    loaded = ember.export.load(buffer, extra_files=extra)
    assert extra == {"note": "trained on digits"}
    x = ember.randn(6, 4)
    np.testing.assert_allclose(loaded.module()(x).detach().numpy(), model(x).detach().numpy(), atol=1e-6)
    assert str(loaded.graph_signature) == str(ep.graph_signature)


def test_a_failed_save_leaves_the_previous_file(tmp_path):
    path = tmp_path / "model.pt2"
    ember.export.save(export(_model(), (ember.randn(3, 4),)), path)
    before = path.read_bytes()

    class Noisy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.generator = ember.Generator().manual_seed(1)

        def forward(self, x):
            return x + ember.rand(x.shape, generator=self.generator)

    with pytest.raises(ExportError, match="holds a Generator"):
        ember.export.save(export(Noisy(), (ember.randn(2, 2),)), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt2"]


_WRITER = """
import sys, numpy as np, ember
sys.path.insert(0, sys.argv[1])
from private_model import Net
ember.manual_seed(0)
model = Net().eval()
ep = ember.export.export(model, (ember.randint(0, 20, (2, 6)),),
                         dynamic_shapes=({0: ember.export.Dim("batch"), 1: ember.export.Dim("seq", max=12)},))
ember.export.save(ep, sys.argv[2])
tokens = ember.tensor(np.load(sys.argv[3]))
np.save(sys.argv[4], model(tokens).detach().numpy())
"""

_READER = """
import sys, numpy as np, ember
assert "private_model" not in sys.modules
module = ember.export.load(sys.argv[1]).module().to(sys.argv[4])
tokens = ember.tensor(np.load(sys.argv[2]), device=sys.argv[4])
np.save(sys.argv[3], module(tokens).detach().cpu().numpy())
"""

_MODEL = """
import ember
from ember import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.rnn = nn.GRU(8, 16, batch_first=True)
        self.head = nn.Linear(16, 20)

    def forward(self, tokens):
        output, _ = self.rnn(self.embed(tokens))
        return self.head(output).log_softmax(-1)
"""


@pytest.mark.parametrize("device", ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    not OPENCL, reason="opencl is not available here"))])
def test_loads_and_runs_in_a_process_without_the_source(tmp_path, device):
    source = tmp_path / "source"
    source.mkdir()
    (source / "private_model.py").write_text(textwrap.dedent(_MODEL))
    tokens = np.random.default_rng(0).integers(0, 20, (3, 9))
    np.save(tmp_path / "tokens.npy", tokens)
    run = [sys.executable, "-c"]
    subprocess.run(run + [_WRITER, str(source), str(tmp_path / "m.pt2"), str(tmp_path / "tokens.npy"),
                          str(tmp_path / "expected.npy")], check=True, cwd=tmp_path)
    (source / "private_model.py").unlink()
    subprocess.run(run + [_READER, str(tmp_path / "m.pt2"), str(tmp_path / "tokens.npy"), str(tmp_path / "got.npy"),
                          device], check=True, cwd=tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "got.npy"), np.load(tmp_path / "expected.npy"), atol=1e-5)


def test_every_hostile_file_is_refused_cleanly(tmp_path):
    outcomes = hostile_exports.run_all(str(tmp_path))
    unclean = [f"{o.case.category}/{o.case.name}: {o.result}: {o.message[:120]} (peak {o.peak})"
               for o in outcomes if not o.clean]
    assert not unclean, "\n".join(unclean)
    assert len(outcomes) >= 50
    assert not any(o.ran_code for o in outcomes)


def test_a_missing_custom_op_names_its_library(tmp_path):
    path = tmp_path / "custom.pt2"
    path.write_bytes(hostile_exports.program_edit(
        hostile_exports._set(["nodes", 0, "target"], "mylib::fused"))())
    with pytest.raises(ExportLoadError, match=r"'mylib::fused'.*import the library that defines it"):
        ember.export.load(path)


def test_weights_load_where_map_location_puts_them(tmp_path):
    path = tmp_path / "m.pt2"
    ember.export.save(export(_model(), (ember.randn(3, 4),)), path)
    loaded = ember.export.load(path, map_location="cpu")
    assert all(t.device.type == "cpu" for t in loaded.state_dict.values())
    if OPENCL:
        on_opencl = ember.export.load(path, map_location="opencl")
        x = ember.randn(3, 4)
        np.testing.assert_allclose(on_opencl.module()(x.to("opencl")).detach().cpu().numpy(),
                                   loaded.module()(x).detach().numpy(), atol=1e-5)


def test_custom_ops_survive_save_and_load_while_their_library_is_loaded(tmp_path):
    from library_ops import ops_left_as_found

    path = tmp_path / "custom.pt2"
    with ops_left_as_found():
        @ember.library.custom_op("exporttest::scaled_tanh", mutates_args=())
        def scaled_tanh(x: ember.Tensor, scale: float) -> ember.Tensor:
            return ember.tanh(x) * scale

        @ember.library.custom_op("exporttest::add_into", mutates_args=("out",))
        def add_into(out: ember.Tensor, x: ember.Tensor) -> None:
            out.copy_(out + x)

        class Model(nn.Module):
            def forward(self, x):
                accumulated = ember.zeros_like(x)
                add_into(accumulated, scaled_tanh(x, 2.0))
                add_into(accumulated, x)
                return accumulated

        x = ember.randn(3, 4)
        ep = export(Model(), (x,), dynamic_shapes=({0: Dim("batch")},))
        assert [n.target for n in ep.graph.nodes].count("exporttest::add_into") == 2
        ember.export.save(ep, path)
        y = ember.randn(5, 4)
        np.testing.assert_allclose(ember.export.load(path).module()(y).numpy(), (ember.tanh(y) * 2 + y).numpy(),
                                   rtol=1e-6, atol=1e-6)
    with pytest.raises(ExportLoadError, match="'exporttest::scaled_tanh'.*import the library"):
        ember.export.load(path)
