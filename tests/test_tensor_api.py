"""The Tensor's public surface: creation, conversions, metadata, printing, defaults and errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember


def test_tensor_infers_pytorch_dtypes():
    assert ember.tensor([1, 2]).dtype is ember.int64
    assert ember.tensor([1.0, 2]).dtype is ember.float32
    assert ember.tensor([True, False]).dtype is ember.bool
    assert ember.tensor(np.zeros(2, dtype=np.float64)).dtype is ember.float64
    assert ember.tensor(3.5).shape == ()
    assert ember.tensor(np.zeros(2, dtype=np.complex128)).dtype is ember.complex128
    assert ember.tensor([1 + 2j]).dtype is ember.complex64
    with pytest.raises(ember.DtypeError, match="uint16"):
        ember.tensor(np.zeros(2, dtype=np.uint16))


def test_tensor_copies_but_from_numpy_shares_memory():
    array = np.arange(4, dtype=np.float32)
    copied, shared = ember.tensor(array), ember.from_numpy(array)
    array[0] = 42
    assert copied[0].item() == 0 and shared[0].item() == 42
    shared.add_(1)
    assert array.tolist() == [43, 2, 3, 4]
    assert shared.numpy() is not None and np.shares_memory(shared.numpy(), array)


def test_metadata_and_size():
    x = ember.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(-1) == 4
    assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24 and x.shape.numel() == 24
    assert x.dtype is ember.float32 and x.device == ember.device("cpu") and x.device == "cpu"
    assert x.stride() == (12, 4, 1) and x.is_contiguous()
    assert not x.transpose(0, 2).is_contiguous()
    assert repr(x.shape) == "ember.Size([2, 3, 4])"


def test_conversions():
    x = ember.tensor([[1.5, -2.0]])
    assert x.tolist() == [[1.5, -2.0]]
    assert x[0, 0].item() == 1.5 and isinstance(ember.tensor(3).item(), int)
    assert x.to(ember.int32).tolist() == [[1, -2]]
    assert x.int().dtype is ember.int32 and x.double().dtype is ember.float64 and x.half().dtype is ember.float16
    assert x.to("cpu") is x and x.to("cpu", copy=True) is not x
    assert x.to(ember.zeros(1, dtype=ember.float64)).dtype is ember.float64
    assert float(ember.tensor(2.5)) == 2.5 and int(ember.tensor(7)) == 7
    with pytest.raises(ValueError, match="2 elements"):
        x.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)


def test_bfloat16_round_trip():
    x = ember.tensor([1.0, 2.5, 3.140625], dtype=ember.bfloat16)
    assert x.dtype is ember.bfloat16
    assert x.float().tolist() == [1.0, 2.5, 3.140625]
    assert (x * 2).dtype is ember.bfloat16


def test_repr_matches_pytorch_style():
    assert repr(ember.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ember.tensor([0.5], dtype=ember.float64)) == "tensor([0.5000], dtype=ember.float64)"
    assert repr(ember.tensor(True)) == "tensor(True)"


def test_default_dtype_and_device():
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.tensor([1.0]).dtype is ember.float64
        assert ember.zeros(2).dtype is ember.float64
        assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError, match="floating"):
        ember.set_default_dtype(ember.int32)
    ember.set_default_device("cpu")
    try:
        assert ember.ones(1).device == "cpu"
    finally:
        ember.set_default_device(None)


def test_manual_seed_and_generators_reproduce():
    ember.manual_seed(7)
    a = ember.rand(5)
    ember.manual_seed(7)
    assert ember.rand(5).tolist() == a.tolist()
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    assert ember.randn(4, generator=g1).tolist() == ember.randn(4, generator=g2).tolist()
    assert ember.randn(4, generator=g1).tolist() != ember.randn(4, generator=g1).tolist()


def test_argument_binding_errors_name_the_op():
    x = ember.ones(2)
    with pytest.raises(TypeError, match=r"add\(\) got an unexpected keyword argument 'beta'"):
        ember.add(x, x, beta=2)
    with pytest.raises(TypeError, match=r"sum\(\): argument 'dim' must be int, not str"):
        x.sum("0")
    with pytest.raises(IndexError, match=r"sum: dim 3 is out of range"):
        x.sum(3)
    with pytest.raises(TypeError, match=r"add\(\): argument 'other' must be a Tensor, not str"):
        ember.add(x, "a")


def test_fast_path_agrees_with_generic_path():
    """The cached elementwise path must give what the fully checked path gives, dtype included."""
    from ember.dispatch.execution.dispatcher import call
    from ember.dispatch.schema import OPS
    cases = [(ember.tensor([100, 27], dtype=ember.int8), 100), (ember.tensor([1.5], dtype=ember.float16), 2),
             (ember.tensor([250], dtype=ember.uint8), 10), (ember.tensor([1, 2]), 0.5),
             (ember.tensor([True]), 1), (ember.tensor([3.0]), ember.tensor([2.0]))]
    for a, b in cases:
        for name in ("add", "mul", "sub", "div", "maximum", "lt"):
            try:
                expected = call(OPS[name], (a, b), {})
            except ember.EmberError as exc:
                with pytest.raises(type(exc)):
                    getattr(ember, name)(a, b)
                continue
            got = getattr(ember, name)(a, b)
            assert got.dtype is expected.dtype, (name, a, b)
            assert got.tolist() == expected.tolist(), (name, a, b)


def test_python_operators():
    x = ember.tensor([1.0, 2.0, 3.0])
    assert (2 - x).tolist() == [1, 0, -1] and (1 / x)[1].item() == 0.5 and (x ** 2).tolist() == [1, 4, 9]
    assert (2 ** x).tolist() == [2, 4, 8] and (-x).tolist() == [-1, -2, -3] and abs(-x).tolist() == [1, 2, 3]
    assert ((x > 1) & (x < 3)).tolist() == [False, True, False] and (~(x > 1)).tolist() == [True, False, False]
    assert (x // 2).tolist() == [0, 1, 1] and (x % 2).tolist() == [1, 0, 1]
    assert (ember.tensor([6, 3]) & ember.tensor([3, 1])).tolist() == [2, 1]  # integers: bitwise, as PyTorch
    with pytest.raises(ember.DtypeError, match="bitwise"):
        x & x  # floats have no bits to combine
    y = x.clone()
    y += 1
    y *= ember.tensor(2.0)
    assert y.tolist() == [4, 6, 8]


def test_op_listing_command_prints_primitives_and_composites():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "ember.dispatch"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "primitives (" in out.stdout and "composites (" in out.stdout
    primitive_count = int(out.stdout.split("primitives (")[1].split(")")[0])
    assert 0 < primitive_count < 100
    assert "matmul(Tensor input, Tensor other)" in out.stdout
