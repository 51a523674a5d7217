"""Autograd on complex tensors, as PyTorch does it: complex leaves, conjugate Wirtinger gradients, the real part for a
real input that feeds a complex op, complex ``.grad`` accumulation, the refusal of an implicit gradient for a
complex output, and ``gradcheck``/``gradgradcheck`` on complex functions (compared with PyTorch's own verdict)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import GradcheckError, gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

Z = np.array([1 + 2j, -0.5 + 1j, 2 - 0.25j])
X = np.array([0.5, -1.5, 2.0])


def _host(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.array(t.tolist())


def _leaf(lib, values, dtype=None):
    t = lib.tensor(values) if dtype is None else lib.tensor(values, dtype=dtype)
    return t.requires_grad_()


@pytest.mark.parametrize("make", [
    lambda: ember.tensor(Z, requires_grad=True),
    lambda: ember.tensor(Z).to(ember.complex64).requires_grad_(),
    lambda: ember.zeros((2,), dtype=ember.complex64, requires_grad=True),
    lambda: ember.randn((2,), dtype=ember.complex128, requires_grad=True),
])
def test_complex_tensors_can_require_grad(make):
    t = make()
    assert t.requires_grad and t.is_leaf and t.dtype.is_complex


def test_integer_tensors_still_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        ember.tensor([1, 2]).requires_grad_()


def test_complex_results_of_recorded_ops_require_grad():
    z = ember.tensor(Z, requires_grad=True)
    out = ember.cumsum(z, 0)
    assert out.requires_grad and out.grad_fn is not None


def test_real_input_feeding_a_complex_op_gets_the_real_part():
    """PyTorch keeps the real part of a complex gradient arriving at a real tensor (x.to(complex) * w)."""
    w = Z
    grads = []
    for lib in (torch, ember):
        x = _leaf(lib, X)
        y = lib.mul(x.to(lib.complex128), lib.tensor(w))
        y.backward(lib.tensor(np.array([1 - 1j, 2j, 0.5 + 0.5j])))
        assert x.grad.dtype == lib.float64
        grads.append(_host(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_real_input_broadcast_into_a_complex_op():
    """The engine fits the gradient to the input's shape and then its real dtype (sum, then real part)."""
    grads = []
    for lib in (torch, ember):
        x = _leaf(lib, np.array([0.5]))
        z = _leaf(lib, Z)
        out = lib.cumprod(lib.add(z, x), 0)
        out.backward(lib.tensor(np.array([1j, 1.0, -1 + 1j])))
        assert x.grad.dtype == lib.float64 and z.grad.dtype == lib.complex128
        grads.append((_host(x.grad), _host(z.grad)))
    for actual, expected in zip(grads[1], grads[0]):
        np.testing.assert_allclose(actual, expected, rtol=1e-12)


def test_complex_gradients_accumulate_into_grad():
    grads = []
    for lib in (torch, ember):
        z = _leaf(lib, Z)
        lib.prod(z).backward(lib.tensor(1 + 1j, dtype=lib.complex128))
        first = _host(z.grad).copy()
        lib.sum(z).backward(lib.tensor(2 - 1j, dtype=lib.complex128))
        assert z.grad.dtype == lib.complex128
        grads.append((first, _host(z.grad)))
    for actual, expected in zip(grads[1], grads[0]):
        np.testing.assert_allclose(actual, expected, rtol=1e-12)
    assert not np.allclose(grads[1][0], grads[1][1])  # the second backward did add to .grad


def test_backward_of_a_complex_scalar_needs_an_explicit_gradient():
    for lib in (torch, ember):
        z = _leaf(lib, Z)
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs"):
            lib.sum(z).backward()


def test_a_real_loss_of_complex_inputs_backpropagates_implicitly():
    grads = []
    for lib in (torch, ember):
        z = _leaf(lib, Z)
        lib.var(z).backward()  # real for complex input
        grads.append(_host(z.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


class _SquareWithoutConj(ember.autograd.Function):
    """z * z with the holomorphic derivative left unconjugated: wrong under PyTorch's convention."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return ember.mul(z, z)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return ember.mul(grad, ember.mul(z, 2))


class _TorchSquareWithoutConj(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * 2 * z


# (ember function, torch function, inputs): complex in, complex out; complex in, real out; real in, complex out
GRADCHECK_CASES = {
    "prod": (lambda z: ember.prod(z), lambda z: torch.prod(z), (Z,)),
    "cumprod": (lambda z: ember.cumprod(z, 0), lambda z: torch.cumprod(z, 0), (Z,)),
    "var": (lambda z: ember.var(z), lambda z: torch.var(z), (Z,)),
    "norm": (lambda z: ember.norm(z, 3), lambda z: torch.norm(z, 3), (Z,)),
    "real_times_complex": (lambda x: ember.mul(x, 1 - 2j), lambda x: torch.mul(x, 1 - 2j), (X,)),
    "mixed": (lambda x, z: ember.cumsum(ember.mul(x, z), 0), lambda x, z: torch.cumsum(x * z, 0), (X, Z)),
    "wrong_derivative": (_SquareWithoutConj.apply, _TorchSquareWithoutConj.apply, (Z,)),
}


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("name", sorted(GRADCHECK_CASES))
def test_gradcheck_agrees_with_torch(name, fast_mode):
    ember_fn, torch_fn, arrays = GRADCHECK_CASES[name]
    expected = torch.autograd.gradcheck(torch_fn, [_leaf(torch, a) for a in arrays], raise_exception=False,
                                        fast_mode=fast_mode)
    actual = gradcheck(ember_fn, [_leaf(ember, a) for a in arrays], raise_exception=False, fast_mode=fast_mode)
    assert actual == expected
    assert expected == (name != "wrong_derivative")


def test_gradcheck_names_the_complex_parts_it_compared():
    with pytest.raises(GradcheckError, match="imaginary part of complex outputs.*input 0"):
        gradcheck(_SquareWithoutConj.apply, [_leaf(ember, Z)])


def test_gradcheck_refuses_single_precision_complex():
    with pytest.raises(GradcheckError, match="complex64.*complex128"):
        gradcheck(ember.prod, [ember.tensor(Z, dtype=ember.complex64).requires_grad_()])


@pytest.mark.parametrize("name", ["prod", "cumprod", "var"])
def test_gradgradcheck_on_complex(name):
    ember_fn, torch_fn, arrays = GRADCHECK_CASES[name]
    assert torch.autograd.gradgradcheck(torch_fn, [_leaf(torch, a) for a in arrays])
    assert gradgradcheck(ember_fn, [_leaf(ember, a) for a in arrays])


def test_custom_function_with_a_complex_output_is_recorded():
    z = _leaf(ember, Z)
    out = _SquareWithoutConj.apply(z)
    assert out.requires_grad and out.grad_fn is not None


def test_anomaly_mode_checks_complex_gradients():
    z = _leaf(ember, Z)
    with ember.autograd.detect_anomaly():
        ember.cumprod(z, 0).backward(ember.tensor(np.ones(3, dtype=complex)))
    assert z.grad.dtype is ember.complex128


def test_forward_mode_tangents_of_complex_duals():
    import ember.autograd.forward_ad as fwAD
    tangent = np.array([1j, 1.0, 1 - 1j])
    with fwAD.dual_level():
        dual = fwAD.make_dual(ember.tensor(Z), ember.tensor(tangent))
        actual = fwAD.unpack_dual(ember.cumprod(dual, 0)).tangent
    _, expected = torch.func.jvp(lambda x: torch.cumprod(x, 0), (torch.tensor(Z),), (torch.tensor(tangent),))
    np.testing.assert_allclose(_host(actual), _host(expected), rtol=1e-12)
