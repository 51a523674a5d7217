"""The autograd engine on the backend's device, beyond single ops.

The engine is device-agnostic core code, but everything it does runs through the backend:
accumulating ``.grad`` (an add on the device), freeing and checking saved tensors, hooks,
custom Functions, grad modes, recomputation under checkpointing (including the device's random
numbers), higher-order graphs, and casting gradients back to each leaf's dtype. These tests run
each of those on the device under test; ``test_gradients`` covers the ops one by one.
"""
from __future__ import annotations

import pytest

import ember
from ember.autograd import Function, grad
from ember.conformance.cases import target_dtypes
from ember.utils.checkpoint import checkpoint


def pytest_generate_tests(metafunc) -> None:
    if "float_dtype" in metafunc.fixturenames:
        floating = [d for d in target_dtypes(metafunc.config) if d.is_floating_point]
        metafunc.parametrize("float_dtype", [pytest.param(d, id=d.name) for d in floating])


@pytest.fixture
def leaf(device):
    """``leaf(values, dtype=float32)``: a tensor on the device that requires grad (float32: every backend has it)."""
    def make(values, dtype=ember.float32):
        return ember.tensor(values, dtype=dtype, device=device, requires_grad=True)
    return make


def _on(device, t):
    assert t.device == device, f"a gradient landed on {t.device}, expected {device}"
    return t.tolist()


def test_backward_accumulates_across_calls(leaf, device):
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    (x * 3).sum().backward()
    assert _on(device, x.grad) == [5.0, 7.0]
    assert x.is_leaf and x.grad.grad_fn is None and not x.grad.requires_grad


def test_retain_graph_allows_a_second_backward_and_freeing_forbids_a_third(leaf, device):
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert _on(device, x.grad) == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_hooks_observe_and_replace_gradients(leaf, device):
    x = leaf([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: seen.append(_on(device, g)))
    y = x * 3
    y.register_hook(lambda g: g * 10)  # a non-leaf hook that replaces the gradient flowing on
    y.sum().backward()
    assert seen == [[30.0, 30.0]] and _on(device, x.grad) == [30.0, 30.0]
    handle.remove()
    (x * 1).sum().backward()
    assert len(seen) == 1, "a removed hook still ran"


def test_retain_grad_keeps_a_non_leaf_gradient(leaf, device):
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    (y * y).sum().backward()
    assert _on(device, y.grad) == [4.0, 8.0]
    z = x * 2
    (z * z).sum().backward()
    assert z.grad is None, "a non-leaf kept its gradient without retain_grad()"


def test_custom_function_runs_its_backward_on_the_device(leaf, device):
    class CubeAndSign(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            sign = x.sign()
            ctx.mark_non_differentiable(sign)
            return x * x * x, sign

        @staticmethod
        def backward(ctx, grad_cube, grad_sign):
            (x,) = ctx.saved_tensors
            assert ctx.needs_input_grad == (True,) and x.device == device
            return grad_cube * 3 * x * x

    x = leaf([1.0, -2.0])
    cube, sign = CubeAndSign.apply(x)
    assert cube.device == device and cube.grad_fn.name() == "CubeAndSignBackward"
    assert not sign.requires_grad
    cube.sum().backward()
    assert _on(device, x.grad) == [3.0, 12.0]


@pytest.mark.parametrize("saved", ["input", "output"])
def test_inplace_change_of_a_saved_tensor_is_detected(leaf, saved):
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * y if saved == "input" else y.exp()  # mul saves its inputs, exp its result
    (y if saved == "input" else z).add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_ops_on_non_leaves_are_differentiated(leaf, device):
    x = leaf([1.0, 2.0])
    y = x * 2
    y.add_(1)
    y.mul_(3)
    y.sum().backward()
    assert _on(device, x.grad) == [6.0, 6.0]


def test_grad_modes(leaf):
    x = leaf([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad and not ember.is_grad_enabled()
        with ember.enable_grad():
            assert (x * 2).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with ember.inference_mode():
        assert not (x * 2).requires_grad and ember.autograd.is_inference_mode_enabled()
    assert ember.is_grad_enabled() and not ember.autograd.is_inference_mode_enabled()

    @ember.no_grad()
    def evaluate():
        return x * 2
    assert not evaluate().requires_grad and ember.is_grad_enabled()


def test_checkpoint_recomputes_the_same_values_and_random_numbers(leaf, device):
    ember.manual_seed(3)
    w = ember.randn(2, 16, device=device).requires_grad_()
    v = ember.randn(16, 2, device=device).requires_grad_()

    def block(x):
        h = (x @ w).tanh()
        keep = ember.bernoulli(ember.full_like(h, 0.5))  # drawn on the device, redrawn in backward
        return (h * keep) @ v

    def gradients(run):
        w.grad = v.grad = None
        x = leaf([[1.0, 2.0], [-0.5, 0.75], [0.25, -1.5]])
        ember.manual_seed(7)
        run(x).sum().backward()
        return [_on(device, t.grad.flatten()) for t in (x, w, v)]

    plain = gradients(block)
    checkpointed = gradients(lambda x: checkpoint(block, x))
    for got, expected in zip(checkpointed, plain):
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_grad_with_create_graph_gives_higher_derivatives(leaf, device):
    x = leaf([2.0, 3.0])
    (first,) = grad((x * x * x).sum(), x, create_graph=True)
    assert _on(device, first) == [12.0, 27.0] and first.requires_grad
    (second,) = grad(first.sum(), x, create_graph=True)
    assert _on(device, second) == [12.0, 18.0]
    (third,) = grad(second.sum(), x)
    assert _on(device, third) == [6.0, 6.0]
    assert x.grad is None, "autograd.grad accumulated into .grad"


def test_gradients_take_the_dtype_and_device_of_their_leaves(float_dtype, device, backend):
    """A leaf of each floating dtype, mixed with a leaf of another: each gradient comes back in its own dtype."""
    others = [d for d in backend.dtypes if d.is_floating_point and d is not float_dtype]
    other_dtype = others[-1] if others else float_dtype
    x = ember.tensor([1.0, 2.0], dtype=float_dtype, device=device, requires_grad=True)
    y = ember.tensor([3.0, 0.5], dtype=other_dtype, device=device, requires_grad=True)
    (x * y).sum().backward()
    for leaf_, expected in ((x, [3.0, 0.5]), (y, [1.0, 2.0])):
        assert leaf_.grad.dtype is leaf_.dtype, f"a {leaf_.dtype.name} leaf got a {leaf_.grad.dtype.name} gradient"
        assert _on(device, leaf_.grad) == expected
