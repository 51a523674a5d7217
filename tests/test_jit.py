"""``ember.jit``: trace (on the export machinery), script (through ember.compile), save/load, and TorchScript's
annotations; one program written for ``torch.jit`` runs with only the import swapped and gives PyTorch's results."""
from __future__ import annotations

import io
import textwrap
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

import ember
from ember import jit, nn
from ember.export import ExportError


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.conv(x).relu().mean(dim=(2, 3)))


def _close(a, b, tol=1e-5) -> None:
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=tol, atol=tol)


def test_trace_keeps_sizes_the_model_follows_free_and_fixes_the_rest():
    ember.manual_seed(0)
    model = Net().eval()
    traced = jit.trace(model, ember.randn(2, 3, 8, 8))
    for shape in ((5, 3, 8, 8), (1, 3, 6, 10)):
        x = ember.randn(*shape)
        _close(traced(x), model(x))
    with pytest.raises(AssertionError, match=r"x\.size\(\)\[1\] == 3"):
        traced(ember.randn(2, 4, 8, 8))
    assert "ember.ops.conv2d" in traced.code and sorted(traced.state_dict()) == sorted(model.state_dict())


def test_trace_a_function_and_is_tracing():
    seen = []

    def f(a, b):
        seen.append(jit.is_tracing())
        return a * 2 + b.sum()

    traced = jit.trace(f, (ember.ones(3), ember.ones(2, 2)))
    assert seen[0] and not jit.is_tracing()  # traced while tracing (check_trace then calls it eagerly)
    _close(traced(ember.ones(4), ember.ones(5, 2)), ember.full((4,), 12.0))


def test_save_and_load_a_traced_module(tmp_path):
    model = Net().eval()
    traced = jit.trace(model, ember.randn(2, 3, 8, 8))
    jit.save(traced, tmp_path / "net.pt", _extra_files={"classes": "cat,dog"})
    extra = {"classes": ""}
    loaded = jit.load(tmp_path / "net.pt", map_location="cpu", _extra_files=extra)
    assert extra["classes"] == "cat,dog" and isinstance(loaded, jit.ScriptModule)
    x = ember.randn(3, 3, 7, 7)
    _close(loaded(x), model(x))
    buffer = io.BytesIO(loaded.save_to_buffer())
    _close(ember.export.load(buffer).module()(x), model(x))


def test_trace_refuses_control_flow_on_values():
    def f(x):
        return x * 2 if x.max() > 0 else x

    with pytest.raises(ExportError, match=r"test_jit\.py:\d+"):
        jit.trace(f, ember.randn(3))


def test_check_trace_warns_where_the_trace_differs():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    with pytest.warns(jit.TracerWarning, match="does not match"):
        jit.trace(model, ember.randn(8, 4))


def test_script_shares_the_modules_tensors_and_saves_after_a_call(tmp_path):
    model = Net().eval()
    scripted = jit.script(model)
    assert isinstance(scripted, jit.ScriptModule) and isinstance(scripted, Net)
    assert scripted.head.weight is model.head.weight
    with pytest.raises(RuntimeError, match="has not been called yet"):
        scripted.save(tmp_path / "s.pt")
    x = ember.randn(2, 3, 8, 8)
    _close(scripted(x), model(x))
    scripted.save(tmp_path / "s.pt")
    _close(jit.load(tmp_path / "s.pt")(ember.randn(4, 3, 8, 8)).detach() * 0, ember.zeros(4, 2))
    _close(jit.load(tmp_path / "s.pt")(x), model(x))
    scripted.eval()
    assert jit.freeze(scripted) is scripted


def test_script_a_function():
    @jit.script
    def gated(x, scale: float = 2.0):
        return ember.sigmoid(x) * scale

    assert isinstance(gated, jit.ScriptFunction)
    _close(gated(ember.zeros(3)), ember.ones(3))
    assert "sigmoid" in gated.code


def test_annotations_run_as_python():
    assert jit.is_scripting() is False
    assert jit.annotate(List[int], [1]) == [1]
    assert jit.isinstance([1, 2], List[int]) and not jit.isinstance([1, "a"], List[int])
    assert jit.isinstance({"a": ember.ones(1)}, Dict[str, ember.Tensor])
    assert jit.isinstance(None, Optional[int]) and jit.isinstance((1, "a"), Tuple[int, str])
    future = jit.fork(lambda a, b: a + b, 1, 2)
    assert future.done() and jit.wait(future) == 3
    failing = jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        jit.wait(failing)
    unit = jit.CompilationUnit("def double(x):\n    return x * 2\n")
    _close(unit.double(ember.ones(2)), ember.full((2,), 2.0))
    with pytest.raises(RuntimeError, match="eval mode"):
        jit.freeze(jit.script(Net()))
    assert jit.export_opnames(jit.trace(Net().eval(), ember.randn(1, 3, 4, 4))) == ["conv2d", "linear", "mean",
                                                                                    "relu"]


_PROGRAM = """
import io
import sys

import numpy as np
import torch
from torch import nn


@torch.jit.script
def fused_gate(x, y):
    return torch.sigmoid(x) * torch.tanh(y)


class Block(nn.Module):
    scale: torch.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.scale = 0.5
        self.proj = nn.Linear(6, 6)

    @torch.jit.ignore
    def debug(self, x):
        return x

    @torch.jit.unused
    def never(self, x):
        raise RuntimeError("not used")

    def forward(self, x):
        if not torch.jit.is_scripting():
            x = self.debug(x)
        h = fused_gate(self.proj(x), x)
        fut = torch.jit.fork(torch.relu, h)
        return torch.jit.wait(fut) * self.scale


data = np.load(sys.argv[1])
block = Block().eval()
block.load_state_dict({"proj.weight": torch.tensor(data["weight"]), "proj.bias": torch.tensor(data["bias"])})
x = torch.tensor(data["x"])
traced = torch.jit.trace(block, x)
buffer = io.BytesIO()
torch.jit.save(traced, buffer)
buffer.seek(0)
loaded = torch.jit.load(buffer)
scripted = torch.jit.script(block)
np.savez(sys.argv[2], traced=traced(x).detach().numpy(), loaded=loaded(x).detach().numpy(),
         scripted=scripted(x).detach().numpy(), other_batch=loaded(torch.tensor(data["x2"])).detach().numpy())
"""


def test_a_torch_jit_program_runs_with_the_import_swapped(tmp_path):
    import subprocess
    import sys

    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "data.npz", weight=rng.standard_normal((6, 6)).astype(np.float32),
             bias=rng.standard_normal(6).astype(np.float32), x=rng.standard_normal((4, 6)).astype(np.float32),
             x2=rng.standard_normal((7, 6)).astype(np.float32))
    program = textwrap.dedent(_PROGRAM)
    (tmp_path / "with_torch.py").write_text(program)
    (tmp_path / "with_ember.py").write_text(program.replace("import torch\nfrom torch import nn",
                                                            "import ember as torch\nfrom ember import nn"))
    for name in ("with_torch", "with_ember"):
        subprocess.run([sys.executable, str(tmp_path / f"{name}.py"), str(tmp_path / "data.npz"),
                        str(tmp_path / f"{name}.npz")], check=True, cwd=tmp_path)
    theirs, ours = np.load(tmp_path / "with_torch.npz"), np.load(tmp_path / "with_ember.npz")
    for key in ("traced", "loaded", "scripted", "other_batch"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-5)
