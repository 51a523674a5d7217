"""Complex tensors leaving and entering Ember: its own checkpoints, PyTorch's ``.pt`` files, safetensors,
DLPack (NumPy and PyTorch on the other side) and ONNX export, which refuses them by name."""
from __future__ import annotations

import io

import numpy as np
import pytest

import ember
from ember.onnx import UnsupportedOperatorError


def _checkpoint_tensors() -> dict:
    return {"c64": ember.tensor([[1 + 2j, -3j], [0.5, 2 - 2j]]),
            "c128": ember.tensor([1e300 + 1j, -0.0j], dtype=ember.complex128),
            "strided": ember.tensor([1 + 1j, 2 + 2j, 3 + 3j])[::2],
            "empty": ember.zeros(0, 3, dtype=ember.complex64),
            "param": ember.nn.Parameter(ember.tensor([1j, 2]))}


def _same(loaded, expected) -> None:
    assert loaded.dtype == expected.dtype and tuple(loaded.shape) == tuple(expected.shape)
    assert loaded.tolist() == expected.tolist()
    assert loaded.requires_grad == expected.requires_grad


def test_ember_checkpoints_round_trip_complex(tmp_path):
    tensors = _checkpoint_tensors()
    ember.save(tensors, tmp_path / "c.pt")
    loaded = ember.load(tmp_path / "c.pt")
    for name, t in tensors.items():
        _same(loaded[name], t)
    assert isinstance(loaded["param"], ember.nn.Parameter)


def test_torch_written_complex_checkpoints_load():
    torch = pytest.importorskip("torch")
    z = torch.tensor([[1 + 2j, 3 - 1j], [0.5j, 4]], dtype=torch.complex128)
    buffer = io.BytesIO()
    torch.save({"z": z, "t": z.t(), "row": z[1], "c64": z.to(torch.complex64),
                "grad": torch.tensor([1j], requires_grad=True),
                "param": torch.nn.Parameter(torch.tensor([2 + 1j]))}, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer)
    assert loaded["z"].dtype == ember.complex128 and loaded["c64"].dtype == ember.complex64
    for name in ("z", "t", "row", "c64", "grad", "param"):
        assert loaded[name].tolist() == torch.load(io.BytesIO(buffer.getvalue()))[name].tolist(), name
    assert loaded["grad"].requires_grad and isinstance(loaded["param"], ember.nn.Parameter)


def test_torch_conjugate_and_negative_bits_are_resolved_on_load():
    """PyTorch saves a lazily conjugated (or negated) view with its storage unchanged and a bit in its metadata."""
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    torch.save({"conj": torch.tensor([1 + 2j, 3 - 1j]).conj(), "neg": torch.tensor([1.0, -2.0])._neg_view()},
               buffer)
    buffer.seek(0)
    loaded = ember.load(buffer)
    assert loaded["conj"].tolist() == [1 - 2j, 3 + 1j]
    assert loaded["neg"].tolist() == [-1.0, 2.0]


def test_safetensors_hold_complex64_both_ways(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    x = ember.tensor([[1 + 2j, 3j]])
    ember.serialization.save_safetensors({"x": x}, tmp_path / "e.safetensors")
    assert safetensors_torch.load_file(tmp_path / "e.safetensors")["x"].tolist() == x.tolist()
    safetensors_torch.save_file({"y": torch.tensor([5 - 1j, 2])}, tmp_path / "t.safetensors")
    loaded = ember.serialization.load_safetensors(tmp_path / "t.safetensors")["y"]
    assert loaded.dtype == ember.complex64 and loaded.tolist() == [5 - 1j, 2 + 0j]


def test_safetensors_refuses_complex128_by_name(tmp_path):
    """The format has C64 but no C128: refused before anything is written."""
    with pytest.raises(ember.DtypeError, match="safetensors format has no complex128 dtype.*'z'"):
        ember.serialization.save_safetensors({"z": ember.tensor([1j], dtype=ember.complex128)},
                                             tmp_path / "z.safetensors")
    assert not (tmp_path / "z.safetensors").exists()


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_dlpack_with_numpy_shares_complex_memory(dtype):
    x = ember.tensor([[1 + 2j, 3j], [4, 5 - 1j]], dtype=getattr(ember, dtype)).t()
    array = np.from_dlpack(x)
    assert array.dtype == np.dtype(dtype) and array.tolist() == x.tolist()
    back = ember.from_dlpack(np.array([1 + 2j, 2j], dtype=dtype))
    assert back.dtype == getattr(ember, dtype) and back.tolist() == [1 + 2j, 2j]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_dlpack_with_torch_both_ways(dtype):
    torch = pytest.importorskip("torch")
    source = torch.tensor([1 + 2j, 5j], dtype=getattr(torch, dtype))
    shared = ember.from_dlpack(source)
    shared[0] = 7
    assert source.tolist() == [7 + 0j, 5j] and shared.dtype == getattr(ember, dtype)
    x = ember.tensor([[1 + 1j, 2], [3, 4j]], dtype=getattr(ember, dtype))
    out = torch.from_dlpack(x.t())
    assert out.dtype == getattr(torch, dtype) and out.tolist() == x.t().tolist()


class _Doubles(ember.nn.Module):
    def forward(self, x):
        return x * 2


class _ThroughComplex(ember.nn.Module):
    def forward(self, x):
        return ember.view_as_real(ember.view_as_complex(x) * 2)


def test_onnx_export_refuses_complex_inputs_by_name():
    pytest.importorskip("onnx")
    with pytest.raises(UnsupportedOperatorError, match="input 'input_0': complex64 tensors cannot be exported"):
        ember.onnx.export(_Doubles(), (ember.tensor([1 + 2j]),), io.BytesIO())


def test_onnx_export_refuses_complex_computation_by_op():
    pytest.importorskip("onnx")
    with pytest.raises(UnsupportedOperatorError, match="op 'view_as_complex'.*complex64 tensors cannot be exported"):
        ember.onnx.export(_ThroughComplex(), (ember.ones(3, 2),), io.BytesIO())
