"""Complex views (view_as_real, view_as_complex, real, imag) and conj, against PyTorch: values, memory sharing,
errors and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

COMPLEX = ["complex64", "complex128"]


def _pair(values, dtype: str, requires_grad: bool = False):
    """The same values as an Ember and a torch tensor."""
    array = np.asarray(values, dtype=dtype)
    return (ember.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _same(e, t) -> None:
    """Ember's result holds torch's values, shape and dtype."""
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(np.asarray(e.detach()), t.detach().numpy(), rtol=1e-6, atol=1e-6)


def _raises_like_torch(ember_call, torch_call, error=RuntimeError) -> None:
    """Both refuse, and Ember's message contains torch's."""
    with pytest.raises(RuntimeError) as expected:
        torch_call()
    with pytest.raises(error) as got:
        ember_call()
    assert str(expected.value).split(" (")[0] in str(got.value)


RNG = np.random.default_rng(39)
MATRIX = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "0-d", "empty"])
def test_view_as_real_matches_torch(dtype, layout):
    e, t = _pair(MATRIX, dtype)
    pick = {"contiguous": lambda x: x, "transposed": lambda x: x.t(), "strided": lambda x: x[:, ::2],
            "0-d": lambda x: x[1, 2], "empty": lambda x: x[:0]}[layout]
    _same(ember.view_as_real(pick(e)), torch.view_as_real(pick(t)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_view_as_complex_matches_torch(dtype):
    values = RNG.standard_normal((2, 3, 2))
    e, t = _pair(values, dtype)
    _same(ember.view_as_complex(e), torch.view_as_complex(t))
    _same(ember.view_as_complex(e.transpose(0, 1)), torch.view_as_complex(t.transpose(0, 1)))
    _same(ember.view_as_complex(e[1]), torch.view_as_complex(t[1]))
    _same(ember.view_as_complex(e[0, 1]), torch.view_as_complex(t[0, 1]))  # to 0-d


def test_views_share_memory_both_ways():
    x = ember.tensor([1 + 2j, 3 - 1j])
    pairs = ember.view_as_real(x)
    pairs[0, 1] = 7.0
    assert x.tolist() == [1 + 7j, 3 - 1j]
    x[1] = 5j
    assert pairs.tolist() == [[1.0, 7.0], [0.0, 5.0]]
    again = ember.view_as_complex(pairs)
    again[0] = 2 + 2j
    assert x.tolist() == [2 + 2j, 5j]
    assert pairs._base is x and again._base is x


def test_view_as_real_refuses_real_tensors():
    _raises_like_torch(lambda: ember.view_as_real(ember.zeros(3)), lambda: torch.view_as_real(torch.zeros(3)))


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(3, 3),  # last dim not 2
    lambda lib: lib.zeros(2, 3).t(),  # last dim not of stride 1
    lambda lib: lib.zeros(()),  # 0-d
    lambda lib: lib.zeros(3, 3)[:, :2],  # an odd stride
    lambda lib: lib.arange(9.0)[1:].view(4, 2),  # odd storage offset
], ids=["last-dim-size", "last-dim-stride", "0-d", "odd-stride", "odd-offset"])
def test_view_as_complex_refuses_like_torch(make):
    _raises_like_torch(lambda: ember.view_as_complex(make(ember)), lambda: torch.view_as_complex(make(torch)))


def test_view_as_complex_checks_the_offset_of_every_call():
    """The plan of an aligned call must not let a same-shaped, same-strided misaligned view through."""
    storage = ember.arange(10.0)
    assert ember.view_as_complex(storage[:8].view(4, 2)).tolist() == [1j, 2 + 3j, 4 + 5j, 6 + 7j]
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        ember.view_as_complex(storage[1:9].view(4, 2))
    assert ember.view_as_complex(storage[2:].view(4, 2)).tolist()[0] == 2 + 3j


def test_view_as_complex_refuses_other_dtypes_naming_them_as_torch():
    with pytest.raises(RuntimeError, match="but got a tensor of scalar type: Int"):
        torch.view_as_complex(torch.zeros(3, 2, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="but got a tensor of scalar type: Int"):
        ember.view_as_complex(ember.zeros(3, 2, dtype=ember.int32))
    with pytest.raises(RuntimeError, match="scalar type: Half.*complex32"):  # torch has complex32, Ember has not
        ember.view_as_complex(ember.zeros(3, 2, dtype=ember.float16))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_real_and_imag_are_views(dtype):
    e, t = _pair(MATRIX, dtype)
    _same(e.real, t.real)
    _same(e.imag, t.imag)
    _same(ember.real(e.t()), torch.real(t.t()))
    _same(ember.imag(e[:, 1]), torch.imag(t[:, 1]))
    e.real[0, 0] = 10.0
    e.imag[0, 1] = -10.0
    assert e[0, 0].item().real == 10.0 and e[0, 1].item().imag == -10.0


def test_real_of_a_real_tensor_is_itself_and_imag_refuses():
    x = ember.tensor([1, 2, 3])
    assert x.real is x and ember.real(x) is x
    _raises_like_torch(lambda: ember.tensor([1.0]).imag, lambda: torch.tensor([1.0]).imag)


def test_real_and_imag_are_assignable_like_torch():
    e, t = _pair([1 + 2j, 3 - 1j], "complex64")
    for x, lib in ((e, ember), (t, torch)):
        x.real = lib.tensor([5.0, 6.0])
        x.imag = 0.5
        x.imag.mul_(4)
    _same(e, t)
    r = ember.ones(2)
    r.real = ember.tensor([3.0, 4.0])
    assert r.tolist() == [3.0, 4.0]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_conj_matches_torch(dtype):
    e, t = _pair(MATRIX, dtype)
    _same(e.conj(), t.conj().resolve_conj())
    _same(ember.conj(e.t()), torch.conj(t.t()).resolve_conj())
    assert not ember.is_conj(e.conj()) and not e.conj().is_conj()
    assert ember.resolve_conj(e) is e


def test_conj_of_a_real_tensor_is_itself():
    x = ember.tensor([1.0, -2.0])
    assert x.conj() is x and ember.conj(x) is x
    assert ember.resolve_conj(x) is x and not x.is_conj()


@pytest.mark.parametrize("dtype", COMPLEX)
def test_conjugate_transposes_match_torch(dtype):
    e, t = _pair(MATRIX, dtype)
    _same(e.mH, t.mH.resolve_conj())
    _same(e.H, t.H.resolve_conj())
    batched_e, batched_t = _pair(np.stack([MATRIX, MATRIX * 1j]), dtype)
    _same(batched_e.mH, batched_t.mH.resolve_conj())


def test_conjugate_transposes_of_real_matrices_stay_views():
    x = ember.ones(2, 3)
    assert x.mH._base is x and x.H._base is x


def test_copies_do_not_share_memory():
    x = ember.tensor([1 + 2j])
    pairs = ember.view_as_real_copy(x)
    pairs[0, 0] = 9.0
    assert x.tolist() == [1 + 2j] and pairs.dtype == ember.float32
    z = ember.view_as_complex_copy(pairs)
    z[0] = 0j
    assert pairs.tolist() == [[9.0, 2.0]] and z.dtype == ember.complex64


# -- gradients (PyTorch's convention: the conjugate Wirtinger derivative) -----------------------------------

def _grads(lib, build, values, dtype):
    x = lib.tensor(np.asarray(values, dtype=dtype), requires_grad=True)
    build(lib, x).backward()
    return x.grad


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("build", [
    lambda lib, x: (lib.view_as_real(x) * lib.tensor([1.0, 2.0], dtype=lib.view_as_real(x).dtype)).sum(),
    lambda lib, x: lib.view_as_real(x.t()).pow(2).sum(),
    lambda lib, x: lib.view_as_real(x).expand(3, 3, 4, 2).sum(),
    lambda lib, x: (x.real * 3).sum() + x.imag.pow(2).sum(),
    lambda lib, x: (x.conj() * x.conj()).real.sum(),
], ids=["view_as_real", "transposed", "expanded", "real-imag", "conj"])
def test_complex_input_gradients_match_torch(dtype, build):
    _same(_grads(ember, build, MATRIX, dtype), _grads(torch, build, MATRIX, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_view_as_complex_gradient_matches_torch(dtype):
    values = RNG.standard_normal((3, 2))

    def build(lib, x):
        z = lib.view_as_complex(x)
        return (z * z).imag.sum() + lib.view_as_real(z * 2).pow(2).sum()
    _same(_grads(ember, build, values, dtype), _grads(torch, build, values, dtype))
