"""The autograd engine beyond single ops: accumulation, graphs kept or freed, hooks, custom Functions,
version counters, grad modes, higher order, anomaly detection, checkpointing and memory."""
from __future__ import annotations

import gc
import tracemalloc

import pytest

import ember
from ember.autograd import Function, grad


def leaf(values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


def test_backward_accumulates_across_calls():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    assert x.is_leaf and x.grad_fn is None and x.grad.grad_fn is None


def test_second_backward_needs_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_non_scalar_backward_needs_gradient():
    x = leaf([1.0, 2.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        y.backward()
    y.backward(ember.tensor([1.0, 10.0], dtype=ember.float64))
    assert x.grad.tolist() == [2.0, 20.0]


def test_broadcast_gradients_reduce_to_input_shape():
    a = leaf([[1.0], [2.0]])
    b = leaf([10.0, 20.0, 30.0])
    (a * b).sum().backward()
    assert a.grad.shape == (2, 1) and a.grad.tolist() == [[60.0], [60.0]]
    assert b.grad.tolist() == [3.0, 3.0, 3.0]


def test_gradients_keep_input_dtype_and_device():
    x = leaf([1.0, 2.0], dtype=ember.float32)
    (x * ember.tensor([1.0, 2.0], dtype=ember.float64)).sum().backward()
    assert x.grad.dtype is ember.float32 and x.grad.device == x.device


def test_grad_function_and_create_graph_give_second_derivatives():
    x = leaf([2.0, 3.0])
    y = (x * x * x).sum()
    (first,) = grad(y, x, create_graph=True)
    assert first.tolist() == [12.0, 27.0]
    (second,) = grad(first.sum(), x)
    assert second.tolist() == [12.0, 18.0]
    with pytest.raises(RuntimeError, match="not have been used"):
        grad((x * 2).sum(), [x, leaf([1.0])])
    assert grad((x * 2).sum(), [x, leaf([1.0])], allow_unused=True)[1] is None


def test_hooks_see_and_replace_gradients():
    x = leaf([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.tolist()))
    y = x * 3
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[30.0, 30.0]] and x.grad.tolist() == [30.0, 30.0]
    handle.remove()
    (x * 1).sum().backward()
    assert len(seen) == 1


def test_retain_grad_keeps_non_leaf_gradients():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0]
    z = x * 2
    (z * z).sum().backward()
    assert z.grad is None


def test_custom_function_with_saved_tensors_and_non_differentiable_outputs():
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
            assert ctx.needs_input_grad == (True,)
            return grad_cube * 3 * x * x

    x = leaf([1.0, -2.0])
    cube, sign = CubeAndSign.apply(x)
    assert cube.grad_fn.name() == "CubeAndSignBackward" and not sign.requires_grad
    cube.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]


def test_inplace_change_of_a_saved_tensor_is_detected():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_ops_on_non_leaves_are_differentiated():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.add_(1)
    y.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_inplace_on_a_leaf_that_requires_grad_raises_outside_no_grad():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        x.add_(1)
    with ember.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 3.0]


def test_grad_modes_as_context_managers_and_decorators():
    x = leaf([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with ember.inference_mode():
        assert not (x * 2).requires_grad and not ember.is_grad_enabled()

    @ember.no_grad()
    def evaluate():
        return x * 2
    assert not evaluate().requires_grad and ember.is_grad_enabled()


def test_detach_cuts_the_graph_and_shares_storage():
    x = leaf([1.0, 2.0])
    d = (x * 2).detach()
    assert not d.requires_grad and d.grad_fn is None
    y = x * 1
    y.detach().zero_()
    assert y.tolist() == [0.0, 0.0]


def test_anomaly_detection_names_the_forward_op():
    x = leaf([0.0, 1.0])
    with ember.autograd.detect_anomaly():
        y = x.sqrt()
        with pytest.raises(RuntimeError, match=r"SqrtBackward.*forward op: sqrt"):
            (y * 0).sum().backward()


def test_checkpoint_recomputes_and_matches_plain_backward():
    from ember.utils.checkpoint import checkpoint
    w = leaf([[0.5, -1.0], [2.0, 0.25]])

    def block(x):
        return (x @ w).tanh() @ w

    x1, x2 = leaf([[1.0, 2.0]]), leaf([[1.0, 2.0]])
    block(x1).sum().backward()
    expected_w, expected_x = w.grad.tolist(), x1.grad.tolist()
    w.grad = None
    out = checkpoint(block, x2)
    out.sum().backward()
    assert x2.grad.flatten().tolist() == pytest.approx(sum(expected_x, []))
    assert w.grad.flatten().tolist() == pytest.approx(sum(expected_w, []))


def test_training_loop_memory_does_not_grow():
    ember.manual_seed(0)
    w = ember.randn(64, 64, requires_grad=True)
    x = ember.randn(32, 64)

    def step():
        loss = ((x @ w).tanh() ** 2).mean()
        loss.backward()
        with ember.no_grad():
            w.sub_(w.grad * 0.01)
        w.grad = None

    for _ in range(5):
        step()
    gc.collect()
    tracemalloc.start()
    for _ in range(20):
        step()
    gc.collect()
    first, _ = tracemalloc.get_traced_memory()
    for _ in range(100):
        step()
    gc.collect()
    second, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert second - first < 64 * 1024, (first, second)


def test_backward_frees_saved_tensors():
    x = leaf([1.0, 2.0])
    y = x.exp()
    z = y * y
    node = z.grad_fn
    z.sum().backward()
    assert node.saved is None


def test_gradcheck_and_gradgradcheck_accept_correct_and_reject_wrong_gradients():
    x = leaf([0.3, -1.2, 2.0])
    assert ember.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
    assert ember.autograd.gradcheck(lambda t: (t * t).sin(), (x,), fast_mode=True)
    assert ember.autograd.gradgradcheck(lambda t: (t * t * t).sum(), (x,))

    class WrongSquare(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * t  # should be 2 * g * t

    with pytest.raises(ember.autograd.GradcheckError, match="mismatch"):
        ember.autograd.gradcheck(WrongSquare.apply, (x,))
    with pytest.raises(ember.autograd.GradcheckError, match="mismatch"):
        ember.autograd.gradcheck(WrongSquare.apply, (x,), fast_mode=True)
    assert not ember.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False)


def test_setitem_with_gradients_routes_them_to_the_value_and_the_rest():
    x = leaf([1.0, 2.0, 3.0])
    v = leaf([10.0])
    y = x * 2
    y[1:2] = v * 3
    (y * y).sum().backward()
    assert x.grad.tolist() == [8.0, 0.0, 24.0] and v.grad.tolist() == [180.0]
    z = x * 1
    with pytest.raises(RuntimeError, match="view of a tensor that requires grad"):
        z[0:2].mul_(2)


def test_max_along_dim_sends_the_gradient_to_the_selected_index():
    x = leaf([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    ember.max(x, dim=1).values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    x.grad = None
    x.amax(dim=1).sum().backward()  # amax shares ties evenly
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]


def test_pytorch_conventions_at_non_differentiable_points():
    x = leaf([0.0, -1.0, 2.0])
    x.abs().sum().backward()
    assert x.grad.tolist() == [0.0, -1.0, 1.0]
    if hasattr(ember, "relu"):
        x.grad = None
        ember.relu(x).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 1.0]


def test_integer_and_bool_outputs_do_not_require_grad():
    x = leaf([1.0, 2.0])
    assert not (x > 1).requires_grad
    assert not x.argmax().requires_grad
    assert ember.max(x, dim=0).values.requires_grad and not ember.max(x, dim=0).indices.requires_grad
