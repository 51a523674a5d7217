"""Gradients of the complex elementwise ops against PyTorch's (conjugate Wirtinger derivatives): a complex upstream
gradient is passed to both frameworks, so no real loss (nor real/imag) is needed; real inputs of complex outputs
(complex, polar, a real tensor times a complex one) get the real part, as PyTorch's do. Then gradcheck on
complex128 and forward-mode AD against torch.func.jvp."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatch.ops.namespace import F

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(39)
#: points away from every branch cut and zero (inverse trigonometric functions, log, sqrt, angle)
Z = (_RNG.uniform(-1, 1, 6) + 1j * _RNG.uniform(-1, 1, 6)) * 0.8 + 0.1
W = (_RNG.uniform(-1, 1, 6) + 1j * _RNG.uniform(-1, 1, 6)) + 0.2
UPSTREAM = _RNG.normal(size=6) + 1j * _RNG.normal(size=6)

UNARY = ["neg", "abs", "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "log2", "reciprocal",
         "rsqrt", "sigmoid", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log10", "square",
         "angle", "sgn", "conj_physical", "exp2", "sinc", "silu"]


def _torch_function(name: str):
    if name == "silu":  # (PyTorch's silu has no complex derivative; x * sigmoid(x) is Ember's composite)
        return lambda t: t * torch.sigmoid(t)
    return getattr(torch, name, None) or getattr(torch.special, name)


def _ember_function(name: str):
    return ember.nn.functional.silu if name == "silu" else getattr(F, name)


def _grads(function, inputs, upstream, framework):
    """The gradients of ``function(*inputs)`` for the given upstream gradient, in ``framework``."""
    if framework is torch:
        leaves = [torch.tensor(x, requires_grad=True) for x in inputs]
        out = function(*leaves)
        grad = torch.tensor(upstream if out.is_complex() else upstream.real)
        return [g.numpy() for g in torch.autograd.grad(out, leaves, grad)]
    leaves = [ember.tensor(x, requires_grad=True) for x in inputs]
    out = function(*leaves)
    grad = ember.tensor(upstream if out.dtype.is_complex else upstream.real)
    return [g.numpy() for g in ember.autograd.grad(out, leaves, grad_outputs=grad)]


def _assert_grads_match(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", UNARY)
def test_unary_gradients_match_pytorch(name):
    got = _grads(_ember_function(name), [Z], UPSTREAM, ember)
    _assert_grads_match(got, _grads(_torch_function(name), [Z], UPSTREAM, torch))


_BINARY = {"add": {}, "add_alpha": {"alpha": 2 - 1j}, "sub": {}, "sub_alpha": {"alpha": 0.5j}, "mul": {}, "div": {},
           "pow": {}, "float_power": {}, "logaddexp": {}}


@pytest.mark.parametrize("case", sorted(_BINARY))
def test_binary_gradients_match_pytorch(case):
    name = case.split("_alpha")[0]
    kwargs = _BINARY[case]
    got = _grads(lambda a, b: getattr(F, name)(a, b, **kwargs), [Z, W], UPSTREAM, ember)
    want = _grads(lambda a, b: getattr(torch, name)(a, b, **kwargs), [Z, W], UPSTREAM, torch)
    _assert_grads_match(got, want)


@pytest.mark.parametrize("exponent", [2, 0.5, 1.5j, 0])
def test_pow_gradients_with_number_operands(exponent):
    got = _grads(lambda a: F.pow(a, exponent), [Z], UPSTREAM, ember)
    _assert_grads_match(got, _grads(lambda a: torch.pow(a, exponent), [Z], UPSTREAM, torch))
    got = _grads(lambda a: F.pow(1.5 - 0.5j, a), [Z], UPSTREAM, ember)
    _assert_grads_match(got, _grads(lambda a: torch.pow(1.5 - 0.5j, a), [Z], UPSTREAM, torch))


def test_lerp_and_where_gradients_match_pytorch():
    weight = W * 0.3 + 0.1j
    got = _grads(lambda a, b, w: F.lerp(a, b, w), [Z, W, weight], UPSTREAM, ember)
    _assert_grads_match(got, _grads(lambda a, b, w: torch.lerp(a, b, w), [Z, W, weight], UPSTREAM, torch))
    mask = Z.real > 0
    got = _grads(lambda a, b: F.where(ember.tensor(mask), a, b), [Z, W], UPSTREAM, ember)
    _assert_grads_match(got, _grads(lambda a, b: torch.where(torch.tensor(mask), a, b), [Z, W], UPSTREAM, torch))


@pytest.mark.parametrize("name", ["complex", "polar"])
def test_real_inputs_of_complex_outputs_get_real_gradients(name):
    """complex: real(grad) and imag(grad); polar: PyTorch's real(conj(grad) sgn(result)) and real(conj(grad) i
    result). Both arrive as float64, the dtype of the inputs."""
    magnitude, phase = np.abs(Z) + 0.1, W.real
    got = _grads(getattr(F, name), [magnitude, phase], UPSTREAM, ember)
    _assert_grads_match(got, _grads(getattr(torch, name), [magnitude, phase], UPSTREAM, torch))


def test_real_operands_of_complex_ops_get_real_gradients():
    real = Z.real.copy()
    for function in ("mul", "div", "add", "pow"):
        got = _grads(getattr(F, function), [real, W], UPSTREAM, ember)
        _assert_grads_match(got, _grads(getattr(torch, function), [real, W], UPSTREAM, torch))


def test_zero_is_where_abs_angle_and_sgn_have_pytorchs_gradient():
    """At 0: abs's is 0 (sgn(0) = 0), angle's and sgn's are 0, as PyTorch's."""
    z = np.array([0j, 1 + 1j])
    for name in ("abs", "angle", "sgn"):
        got = _grads(getattr(F, name), [z], UPSTREAM[:2], ember)
        _assert_grads_match(got, _grads(getattr(torch, name), [z], UPSTREAM[:2], torch))


def test_real_derivatives_are_unchanged():
    """Real tensors take the real formulas (conj is the identity there): gradients stay real and match torch's."""
    x = np.abs(Z.real) + 0.2
    for name in ("exp", "log", "sqrt", "abs", "asin", "acosh", "sigmoid", "reciprocal"):
        point = x + 1.0 if name == "acosh" else x * 0.5 if name == "asin" else x
        got = _grads(getattr(F, name), [point], UPSTREAM, ember)
        _assert_grads_match(got, _grads(getattr(torch, name), [point], UPSTREAM, torch))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "abs", "angle", "sgn", "conj_physical", "asin", "tanh",
                                  "sigmoid", "reciprocal"])
def test_gradcheck_on_complex128(name):
    z = ember.tensor(Z, requires_grad=True)
    assert ember.autograd.gradcheck(getattr(F, name), (z,))


def test_gradcheck_of_binary_and_building_ops():
    z, w = ember.tensor(Z, requires_grad=True), ember.tensor(W, requires_grad=True)
    assert ember.autograd.gradcheck(F.pow, (z, w))
    assert ember.autograd.gradcheck(F.div, (z, w))
    magnitude = ember.tensor(np.abs(Z) + 0.1, requires_grad=True)
    phase = ember.tensor(W.real, requires_grad=True)
    assert ember.autograd.gradcheck(F.polar, (magnitude, phase))
    assert ember.autograd.gradcheck(F.complex, (magnitude, phase))


@pytest.mark.parametrize("name", ["exp", "sin", "log", "sqrt", "tanh", "asin", "abs", "angle", "sgn", "conj_physical",
                                  "reciprocal", "sigmoid"])
def test_forward_ad_matches_torch_func_jvp(name):
    _, want = torch.func.jvp(getattr(torch, name), (torch.tensor(Z),), (torch.tensor(W),))
    _, got = ember.func.jvp(getattr(F, name), (ember.tensor(Z),), (ember.tensor(W),))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["mul", "div", "pow", "complex", "polar"])
def test_forward_ad_of_two_operands_matches_torch_func_jvp(name):
    first, second = (np.abs(Z) + 0.1, W.real) if name in ("complex", "polar") else (Z, W)
    tangents = (UPSTREAM.real, Z.real) if name in ("complex", "polar") else (UPSTREAM, Z)
    _, want = torch.func.jvp(getattr(torch, name), (torch.tensor(first), torch.tensor(second)),
                             tuple(torch.tensor(t) for t in tangents))
    _, got = ember.func.jvp(getattr(F, name), (ember.tensor(first), ember.tensor(second)),
                            tuple(ember.tensor(t) for t in tangents))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
