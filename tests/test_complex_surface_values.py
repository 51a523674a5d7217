"""Complex tensors as Python and NumPy values: item, tolist, the number protocols, creation from complex data,
conversions between dtypes, finfo/iinfo, and closeness (allclose, isclose, testing.assert_close), against
PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_item_tolist_and_complex_give_python_complex_numbers():
    z = ember.tensor(1 + 2j)
    assert z.item() == 1 + 2j and type(z.item()) is complex
    assert complex(z) == 1 + 2j
    assert ember.tensor([[1 + 2j], [3j]], dtype=ember.complex128).tolist() == [[1 + 2j], [3j]]
    assert complex(ember.tensor(2.5)) == 2.5 + 0j and complex(ember.tensor(3)) == 3 + 0j


@pytest.mark.parametrize("convert", [float, int, bool])
@pytest.mark.parametrize("value", [1 + 2j, 3 + 0j, 0j, -2.5 + 0j])
def test_number_protocols_of_complex_tensors_follow_torch(convert, value):
    """float() and int() keep the real part of a complex number without an imaginary part, else refuse."""
    try:
        expected = convert(torch.tensor(value))
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=str(error)):
            convert(ember.tensor(value))
        return
    assert convert(ember.tensor(value)) == expected


def test_complex_tensors_are_no_index():
    with pytest.raises(TypeError, match="only integer tensors"):
        [0, 1][ember.tensor(1 + 0j)]


def test_numpy_shares_memory_in_the_complex_dtype():
    x = ember.tensor([1 + 2j, 3j])
    array = x.numpy()
    assert array.dtype == np.complex64
    array[0] = 5
    assert x.tolist() == [5 + 0j, 3j]


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor([1 + 2j, 3]),
    lambda lib: lib.tensor([[1, 2.5], [1j, True]]),
    lambda lib: lib.tensor(2j),
    lambda lib: lib.tensor([1, 2.5j], dtype=lib.complex128),
    lambda lib: lib.tensor(np.array([1 + 2j])),
    lambda lib: lib.tensor(np.array([1 + 2j], dtype=np.complex64)),
    lambda lib: lib.as_tensor([1, 2j]),
    lambda lib: lib.asarray(np.array([1 + 1j], dtype=np.complex64)),
    lambda lib: lib.from_numpy(np.array([1 + 1j, 2], dtype=np.complex128)),
    lambda lib: lib.tensor([1.0, 2.0]).to(lib.complex64),
    lambda lib: lib.tensor([1, 2]).cfloat(),
    lambda lib: lib.tensor([1, 2]).cdouble(),
    lambda lib: lib.zeros(2, dtype=lib.cfloat),
    lambda lib: lib.full((2,), 1 + 2j),
    lambda lib: lib.frombuffer(bytearray(np.array([1 + 2j], np.complex64).tobytes()), dtype=lib.complex64),
], ids=["list", "mixed", "0-d", "dtype", "numpy128", "numpy64", "as_tensor", "asarray", "from_numpy", "to",
        "cfloat", "cdouble", "zeros", "full", "frombuffer"])
def test_creation_and_conversion_match_torch(make):
    e, t = make(ember), make(torch)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert e.tolist() == t.tolist()


def test_complex_data_with_a_real_dtype_is_refused_as_torch():
    with pytest.raises(TypeError, match="must be real number, not complex"):
        torch.tensor([1 + 2j], dtype=torch.float32)
    with pytest.raises(TypeError, match="must be real number, not complex"):
        ember.tensor([1 + 2j], dtype=ember.float32)
    as_bool = torch.tensor([1 + 2j, 0j], dtype=torch.bool).tolist()
    assert ember.tensor([1 + 2j, 0j], dtype=ember.bool).tolist() == as_bool


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_finfo_of_complex_is_that_of_its_component(dtype):
    e, t = ember.finfo(getattr(ember, dtype)), torch.finfo(getattr(torch, dtype))
    assert (e.bits, e.eps, e.max, e.min, e.tiny, e.resolution, e.dtype) == \
        (t.bits, t.eps, t.max, t.min, t.tiny, t.resolution, t.dtype)


def test_iinfo_refuses_complex():
    with pytest.raises(TypeError, match="requires an integer input type"):
        ember.iinfo(ember.complex64)


# -- closeness ---------------------------------------------------------------------------------------------

NAN = float("nan")
PAIRS = [
    ([1 + 2j], [1 + 2.00001j], {}),
    ([1 + 2j], [1 + 2.1j], {}),
    ([complex(NAN, 1)], [complex(1, NAN)], {"equal_nan": True}),
    ([complex(NAN, 1)], [complex(1, NAN)], {}),
    ([1 + 2j, 3j], [1 + 2j, 3.5j], {}),
    ([1 + 2j, 3j], [1 + 2.1j, 3.5j], {"rtol": 0.2, "atol": 0.0}),
]


@pytest.mark.parametrize("actual, expected, options", PAIRS)
def test_assert_close_on_complex_matches_torch(actual, expected, options):
    outcomes = []
    for lib in (torch, ember):
        try:
            lib.testing.assert_close(lib.tensor(actual), lib.tensor(expected), **options)
            outcomes.append(None)
        except AssertionError as error:
            outcomes.append(str(error))
    assert outcomes[1] == outcomes[0]


def test_assert_close_on_complex_numbers_matches_torch():
    for lib in (torch, ember):
        with pytest.raises(AssertionError, match="Expected \\(1\\+2.1j\\) but got \\(1\\+2j\\)"):
            lib.testing.assert_close(1 + 2j, 1 + 2.1j)
    ember.testing.assert_close(1 + 2j, 1 + 2j)


@pytest.mark.parametrize("actual, expected, options", PAIRS)
def test_isclose_and_allclose_on_complex_match_torch(actual, expected, options):
    e_args, t_args = (ember.tensor(actual), ember.tensor(expected)), (torch.tensor(actual), torch.tensor(expected))
    assert ember.isclose(*e_args, **options).tolist() == torch.isclose(*t_args, **options).tolist()
    assert ember.allclose(*e_args, **options) == torch.allclose(*t_args, **options)


def test_converting_complex_to_real_warns_once_as_torch(monkeypatch):
    from ember.tensor import conversion
    monkeypatch.setattr(conversion, "_imaginary_warned", [False])
    x = ember.tensor([1 + 2j])
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        assert x.float().tolist() == [1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.to(ember.float64).tolist() == [1.0]  # once per process, as PyTorch's TORCH_WARN_ONCE
        assert x.to(ember.complex128).tolist() == [1 + 2j]
