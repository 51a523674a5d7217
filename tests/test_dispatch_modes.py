"""Dispatch modes see every op call on every path, may replace results, nest, and leave no trace when exited;
``detect_anomaly`` is built on them, and ``use_composite`` switches an op to its definition."""
from __future__ import annotations

import pytest

import ember
from ember.dispatch import DispatchMode, TorchDispatchMode, cached_plans, use_composite
from ember.dispatch.execution import modes
from ember.dispatch.ops import F


class Recording(DispatchMode):
    """Observes: the op names it sees, in order."""

    def __init__(self, nested: bool = False) -> None:
        self.seen: list[str] = []
        self.observes_nested = nested

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.__name__)
        return func(*args, **(kwargs or {}))


def test_a_mode_sees_calls_on_every_path():
    x = ember.tensor([1.0, 2.0, 3.0, 4.0])
    g = ember.tensor([1.0, 2.0], requires_grad=True)
    x + x, x * 2.0, x.exp()  # warm the fast path's plans first: a mode must see calls that hit them
    with Recording() as mode:
        x + x  # elementwise fast path, two tensors
        x * 2.0  # fast path with a Python number
        x.exp()  # unary fast path
        x.sum()  # generic path (cached plan)
        x.view(2, 2)
        x[1:3]  # indexing goes to the slice op
        ember.div(x, x, rounding_mode=None)  # generic path with a keyword
        (g * g).sum().backward()  # recorded calls, and the derivative's ops in backward
    assert mode.seen[:7] == ["add", "mul", "exp", "sum", "view", "slice", "div"]
    assert "mul" in mode.seen[9:], "the backward pass's ops go through the mode too"
    assert modes.active == []


def test_a_mode_can_replace_a_result():
    class AddIsSub(DispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__ == "add":
                return F.sub(*args, **(kwargs or {}))  # the mode is hidden here: no recursion
            return func(*args, **(kwargs or {}))

    x = ember.tensor([5.0, 7.0])
    with AddIsSub():
        assert (x + ember.tensor([1.0, 2.0])).tolist() == [4.0, 5.0]
    assert (x + ember.tensor([1.0, 2.0])).tolist() == [6.0, 9.0]


def test_modes_nest_innermost_first_and_types_name_the_tensor_class():
    order = []

    class Named(DispatchMode):
        def __init__(self, name):
            self.name = name

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            order.append((self.name, func.__name__, types))
            return func(*args, **(kwargs or {}))

    x = ember.tensor([1.0])
    with Named("outer"), Named("inner"):
        F.neg(x)
    assert order == [("inner", "neg", (ember.Tensor,)), ("outer", "neg", (ember.Tensor,))]


def test_a_nested_observer_sees_a_composite_decompose():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    with Recording() as top:
        F.mean(x)
    with Recording(nested=True) as deep:
        F.mean(x)
    assert top.seen == ["mean"]
    assert deep.seen[0] == "mean" and len(deep.seen) > 1, deep.seen  # mean runs sum and div inside


def test_an_error_inside_a_mode_leaves_the_stack_clean():
    class Failing(DispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        with Failing():
            ember.tensor([1.0]) + 1.0
    assert modes.active == []
    assert (ember.tensor([1.0]) + 1.0).tolist() == [2.0]


def test_torch_dispatch_mode_is_the_same_class():
    assert TorchDispatchMode is DispatchMode
    from ember.utils._python_dispatch import TorchDispatchMode as ported
    assert ported is DispatchMode


@pytest.mark.parametrize("form", ["plain", "keyword"])
def test_anomaly_reports_the_forward_stack_on_every_path(form):
    """The same op called with or without a keyword (fast path or generic path) is reported alike."""
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        out = ember.div(a, b) if form == "plain" else ember.div(a, b, rounding_mode=None)
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
    message = str(info.value)
    assert "DivBackward" in message and "forward op: div" in message
    assert "The forward call was made at" in message
    assert "test_anomaly_reports_the_forward_stack_on_every_path" in message


def test_anomaly_names_the_stack_of_a_decomposed_composite():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = F.rsqrt(x)  # a composite without a derivative: it records its inner ops' nodes
        with pytest.raises(RuntimeError, match="The forward call was made at") as info:
            y.sum().backward()
    assert "test_anomaly_names_the_stack_of_a_decomposed_composite" in str(info.value)


def test_set_detect_anomaly_turns_the_mode_on_and_off():
    ember.autograd.set_detect_anomaly(True)
    try:
        assert ember.autograd.is_anomaly_enabled() and len(modes.active) == 1
    finally:
        ember.autograd.set_detect_anomaly(False)
    assert not ember.autograd.is_anomaly_enabled() and modes.active == []


def test_use_composite_runs_the_definition_and_matches_the_kernel():
    x = ember.tensor([[-1.0, 0.5], [2.0, -3.0]])
    kernel_result = F.sigmoid(x).flatten().tolist()
    with Recording(nested=True) as kernel_calls:
        F.sigmoid(x)
    with use_composite("sigmoid"):
        with Recording(nested=True) as composite_calls:
            composite_result = F.sigmoid(x).flatten().tolist()
        assert all(plan.kind == "composite" for plan in cached_plans("sigmoid"))
    assert kernel_calls.seen == ["sigmoid"]
    assert composite_calls.seen[0] == "sigmoid" and len(composite_calls.seen) > 1
    assert composite_result == pytest.approx(kernel_result, rel=1e-6)
    with pytest.raises(ValueError, match="no composite"):
        with use_composite("exp"):
            pass
