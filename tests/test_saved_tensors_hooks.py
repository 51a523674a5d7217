"""ember.autograd.graph.saved_tensors_hooks, disable_saved_tensors_hooks and save_on_cpu, against PyTorch."""
import numpy as np
import pytest

import ember
from ember.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
W = np.array([[1.0, 2.0], [-0.5, 0.3], [0.7, -1.2]])
EXPRESSIONS = {
    "mul": lambda lib, x, w: (x * w.T).sum(),
    "matmul": lambda lib, x, w: (x @ w).sum(),
    "exp and tanh": lambda lib, x, w: (x.exp() * (x @ w).tanh().sum()).sum(),
    "linear": lambda lib, x, w: lib.nn.functional.linear(x, w.T).pow(2).sum(),
}


def gradients(lib, expression, unpack_scale: float):
    """x's and w's gradients when every saved tensor is unpacked multiplied by ``unpack_scale``."""
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(W, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t * unpack_scale):
        y = expression(lib, x, w)
    y.backward()
    return x.grad.numpy(), w.grad.numpy()


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_backward_reads_what_the_unpack_hook_returns_as_pytorch_does(name, scale):
    torch = pytest.importorskip("torch")
    ours = gradients(ember, EXPRESSIONS[name], scale)
    theirs = gradients(torch, EXPRESSIONS[name], scale)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_the_innermost_hooks_apply_and_functions_saved_tensors_go_through_them():
    seen = []

    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t):
        with saved_tensors_hooks(lambda t: seen.append("inner") or ("boxed", t), lambda box: box[1] * 10):
            y = Square.apply(x).sum()
    y.backward()
    assert seen and set(seen) == {"inner"}
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])


def test_disabled_hooks_raise_the_given_message():
    with disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


def test_an_unpack_hook_must_give_a_tensor():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack hook of saved_tensors_hooks returned str"):
        y.backward()


def test_save_on_cpu_gives_the_same_gradients():
    x = ember.tensor(X, requires_grad=True)
    with save_on_cpu():
        (x.exp() * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X) * (1 + X), rtol=1e-12)
