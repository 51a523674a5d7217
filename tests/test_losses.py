"""Every loss of ``ember.nn.functional`` and ``ember.nn`` against PyTorch: values and input gradients in
float64 (tight) and float32, every reduction and option, and PyTorch's validation.

Cross-entropy over class indices and nll_loss run twice, through the CPU backend's fused kernels and
through the core definitions in Ember ops (what other backends run), so both paths stay correct.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import ember
from ember.dispatch import use_composite
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = {"float64": (ember.float64, torch.float64, dict(rtol=1e-10, atol=1e-12)),
          "float32": (ember.float32, torch.float32, dict(rtol=1e-5, atol=1e-6))}
REDUCTIONS = ("none", "mean", "sum")
FUSED = ("cross_entropy_indices", "cross_entropy_indices_backward", "nll_loss", "nll_loss_backward")


@pytest.fixture(params=list(DTYPES))
def dtype(request):
    return request.param


@pytest.fixture(params=["kernel", "composite"])
def path(request, monkeypatch):
    """Run the class-index losses through the CPU kernels or through their Ember-op definitions."""
    with contextlib.ExitStack() as stack:
        if request.param == "composite":
            for name in FUSED:
                stack.enter_context(use_composite(name, "cpu"))
        yield request.param


# -- running a loss in both frameworks ------------------------------------------------------------------

class Pair:
    """One value as an Ember tensor and a torch tensor (floats in the dtype under test, leaves that require
    grad when ``grad``; integer arrays stay int64)."""

    def __init__(self, array, dtype: str, grad: bool = True) -> None:
        array = np.asarray(array)
        floating = array.dtype.kind == "f"
        ember_dtype, torch_dtype, _ = DTYPES[dtype]
        self.ember = ember.tensor(array, dtype=ember_dtype if floating else ember.int64)
        self.torch = torch.tensor(array, dtype=torch_dtype if floating else torch.int64)
        if grad and floating:
            self.ember.requires_grad_()
            self.torch.requires_grad_()


def assert_close(actual, expected, dtype: str, what: str = "value") -> None:
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               equal_nan=True, err_msg=what, **DTYPES[dtype][2])


def compare(loss, torch_loss, *values, dtype: str, grad_seed: int = 0) -> None:
    """``loss(*values)`` against ``torch_loss(*values)``: the value, then the gradient of every float input
    under a random upstream gradient (so that reduction='none' is checked element by element)."""
    out, expected = loss(*(v.ember for v in values)), torch_loss(*(v.torch for v in values))
    assert tuple(out.shape) == tuple(expected.shape)
    assert out.dtype is DTYPES[dtype][0]
    assert_close(out.detach().numpy(), expected.detach().numpy(), dtype)
    leaves = [v for v in values if v.torch.requires_grad]
    if not leaves:
        return
    upstream = np.random.default_rng(grad_seed).standard_normal(tuple(expected.shape))
    out.backward(Pair(upstream, dtype, grad=False).ember)
    expected.backward(Pair(upstream, dtype, grad=False).torch)
    for k, v in enumerate(leaves):
        assert_close(v.ember.grad.numpy(), v.torch.grad.numpy(), dtype, f"gradient of float input {k}")


def rng(seed=0):
    return np.random.default_rng(seed)


def class_case(shape, seed=0, ignore=None, low=-3.0, high=3.0):
    """Logits of ``shape`` (classes along dim 1, or dim 0 when 1-D) and matching class-index targets; the
    ``ignore`` value replaces about a third of them."""
    r = rng(seed)
    logits = r.uniform(low, high, shape)
    classes = shape[1] if len(shape) >= 2 else shape[0]
    target_shape = shape[:1] + shape[2:] if len(shape) >= 2 else ()
    targets = r.integers(0, classes, target_shape)
    if ignore is not None:
        targets = np.where(r.random(target_shape) < 0.35, ignore, targets)
    return logits, targets, r.uniform(0.2, 2.0, classes)


# -- cross_entropy over class indices ---------------------------------------------------------------------

SHAPES = {"N,C": (7, 5), "N,C,d1,d2": (3, 4, 2, 3), "C": (6,)}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ignore_index", [-100, -1, 1])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
def test_cross_entropy_indices(path, dtype, reduction, shape, weighted, ignore_index, label_smoothing):
    logits, targets, weights = class_case(SHAPES[shape], seed=len(shape), ignore=ignore_index)
    w = Pair(weights, dtype, grad=False) if weighted else None
    options = dict(ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)
    compare(lambda x, t: F.cross_entropy(x, t, None if w is None else w.ember, **options),
            lambda x, t: TF.cross_entropy(x, t, None if w is None else w.torch, **options),
            Pair(logits, dtype), Pair(targets, dtype), dtype=dtype)


@pytest.mark.parametrize("dt", [ember.float16, ember.bfloat16], ids=["float16", "bfloat16"])
def test_cross_entropy_in_half_precision_accumulates_in_float32(path, dt):
    logits, targets, weights = class_case((16, 7), seed=2, ignore=3)
    x = ember.tensor(logits, dtype=dt, requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor(targets), weight=ember.tensor(weights, dtype=dt), ignore_index=3,
                           label_smoothing=0.1)
    loss.backward()
    assert loss.dtype is dt and x.grad.dtype is dt
    xt = torch.tensor(ember.to_dtype(x, ember.float64).detach().numpy(), requires_grad=True)
    expected = TF.cross_entropy(xt, torch.tensor(targets), torch.tensor(ember.to_dtype(
        ember.tensor(weights, dtype=dt), ember.float64).numpy()), ignore_index=3, label_smoothing=0.1)
    expected.backward()
    np.testing.assert_allclose(loss.float().item(), expected.item(), rtol=2e-2)
    np.testing.assert_allclose(x.grad.float().numpy(), xt.grad.numpy(), rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("loss,node", [(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
                                        "CrossEntropyIndicesBackward"), (F.nll_loss, "NllLossBackward")])
def test_class_index_losses_are_one_graph_node(loss, node):
    """Each leaves a single node between the loss and the scores (speed: one backward kernel)."""
    x = ember.randn(4, 3, requires_grad=True)
    out = loss(x, ember.tensor([0, 2, 1, 1]))
    assert out.grad_fn.name() == node
    assert out.grad_fn.next_functions[0][0].variable is x


def test_cross_entropy_large_logits_are_stable(path, dtype):
    logits, targets, _ = class_case((5, 4), seed=3, low=-1000, high=1000)
    compare(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
            lambda x, t: TF.cross_entropy(x, t, label_smoothing=0.1), Pair(logits, dtype), Pair(targets, dtype),
            dtype=dtype)


def test_cross_entropy_every_target_ignored_gives_nan_mean_and_zero_gradient(path):
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor([-100, -100, -100]), weight=ember.ones(4, dtype=ember.float64))
    assert np.isnan(loss.item()) and np.isnan(TF.cross_entropy(torch.zeros(3, 4), torch.full((3,), -100)).item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4)))


def test_cross_entropy_empty_batch(path):
    x = ember.zeros(0, 5, requires_grad=True)
    assert F.cross_entropy(x, ember.zeros(0, dtype=ember.int64), reduction="sum").item() == 0
    assert tuple(F.cross_entropy(x, ember.zeros(0, dtype=ember.int64), reduction="none").shape) == (0,)
    assert np.isnan(F.cross_entropy(x, ember.zeros(0, dtype=ember.int64)).item())


def test_cross_entropy_takes_the_target_dtypes_pytorch_takes(path):
    """int64 or (for inputs of at most 2 dims) uint8 class indices, as PyTorch; int32 and int16 are refused with
    its words, so that code written against Ember runs on PyTorch too."""
    logits, targets, _ = class_case((6, 4), seed=5)
    expected = TF.cross_entropy(torch.tensor(logits), torch.tensor(targets)).item()
    got = F.cross_entropy(ember.tensor(logits), ember.tensor(targets, dtype=ember.uint8)).item()
    assert got == pytest.approx(expected, rel=1e-12)
    for dt in (ember.int32, ember.int16):
        with pytest.raises(ember.dispatch.DtypeError, match="expected target dtype to be Long or Byte"):
            F.cross_entropy(ember.tensor(logits), ember.tensor(targets, dtype=dt))


@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_double_backward(path, label_smoothing):
    """The backward op's core definition is Ember ops, so gradients of gradients flow (create_graph=True)."""
    logits, targets, weights = class_case((5, 4), seed=7, ignore=2)
    x, t, w = Pair(logits, "float64"), Pair(targets, "float64"), Pair(weights, "float64", grad=False)
    v = rng(8).standard_normal((5, 4))
    kwargs = dict(ignore_index=2, label_smoothing=label_smoothing)
    (g,) = ember.autograd.grad(F.cross_entropy(x.ember, t.ember, weight=w.ember, **kwargs), [x.ember],
                               create_graph=True)
    (gt,) = torch.autograd.grad(TF.cross_entropy(x.torch, t.torch, weight=w.torch, **kwargs), [x.torch],
                                create_graph=True)
    assert_close(g.detach().numpy(), gt.detach().numpy(), "float64", "first derivative")
    (ember.sum(g * ember.tensor(v))).backward()
    (gt * torch.tensor(v)).sum().backward()
    assert_close(x.ember.grad.numpy(), x.torch.grad.numpy(), "float64", "second derivative")


def test_cross_entropy_checks_backward_targets_again_after_an_in_place_change(path):
    """The forward's range check is remembered for the same, unmodified target tensor only."""
    x = ember.randn(3, 4, requires_grad=True)
    target = ember.tensor([0, 1, 2])
    F.cross_entropy(x, target)
    grad = ember.tensor(1.0)
    ember.nn.functional.cross_entropy_indices_backward(grad, x.detach(), target)  # the remembered target
    target[0] = 7
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        ember.nn.functional.cross_entropy_indices_backward(grad, x.detach(), target)


# -- cross_entropy with class probabilities ---------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_probabilities(dtype, reduction, shape, weighted, label_smoothing):
    logits, _, weights = class_case(SHAPES[shape], seed=11)
    cdim = 1 if len(SHAPES[shape]) >= 2 else 0
    probs = np.exp(logits[::-1].copy()) / np.sum(np.exp(logits[::-1]), axis=cdim, keepdims=True)
    w = Pair(weights, dtype, grad=False) if weighted else None
    compare(lambda x, t: F.cross_entropy(x, t, weight=None if w is None else w.ember, reduction=reduction,
                                         label_smoothing=label_smoothing),
            lambda x, t: TF.cross_entropy(x, t, weight=None if w is None else w.torch, reduction=reduction,
                                          label_smoothing=label_smoothing),
            Pair(logits, dtype), Pair(probs, dtype), dtype=dtype)


# -- nll_loss -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ignore_index", [-100, 0])
def test_nll_loss(path, dtype, reduction, shape, weighted, ignore_index):
    scores, targets, weights = class_case(SHAPES[shape], seed=13, ignore=ignore_index)
    w = Pair(weights, dtype, grad=False) if weighted else None
    compare(lambda x, t: F.nll_loss(x, t, None if w is None else w.ember, ignore_index=ignore_index,
                                    reduction=reduction),
            lambda x, t: TF.nll_loss(x, t, None if w is None else w.torch, ignore_index=ignore_index,
                                     reduction=reduction),
            Pair(scores, dtype), Pair(targets, dtype), dtype=dtype)


def test_nll_loss_of_log_softmax_matches_cross_entropy():
    x = ember.randn(6, 5, 3, dtype=ember.float64)
    t = ember.randint(0, 5, (6, 3))
    np.testing.assert_allclose(F.nll_loss(F.log_softmax(x, 1), t).item(), F.cross_entropy(x, t).item(), rtol=1e-12)


# -- binary cross-entropy -------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (4, 3), (3,)], ids=["unweighted", "full weight", "broadcast weight"])
def test_binary_cross_entropy(dtype, reduction, weight_shape):
    r = rng(17)
    x, t = r.uniform(0.01, 0.99, (4, 3)), r.uniform(0, 1, (4, 3))
    w = None if weight_shape is None else Pair(r.uniform(0.2, 2, weight_shape), dtype, grad=False)
    compare(lambda a, b: F.binary_cross_entropy(a, b, None if w is None else w.ember, reduction=reduction),
            lambda a, b: TF.binary_cross_entropy(a, b, None if w is None else w.torch, reduction=reduction),
            Pair(x, dtype), Pair(t, dtype), dtype=dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_at_probabilities_0_and_1(dtype, reduction):
    """Logs clamped at -100 give finite losses, and PyTorch's slopes (x - t) / max(x (1 - x), 1e-12) there."""
    x = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.3])
    t = np.array([0.0, 1.0, 0.5, 0.0, 1.0, 0.5, 1.0])
    compare(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
            lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction),
            Pair(x, dtype), Pair(t, dtype, grad=False), dtype=dtype)
    # the target's gradient -logit(x) is infinite at 0 and 1, as in PyTorch
    compare(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
            lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction),
            Pair(x, dtype, grad=False), Pair(t, dtype), dtype=dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits(dtype, reduction, weights):
    r = rng(19)
    x, t = r.uniform(-4, 4, (5, 3)), r.uniform(0, 1, (5, 3))
    w = Pair(r.uniform(0.2, 2, (5, 3)), dtype, grad=False) if weights in ("weight", "both") else None
    pw = Pair(r.uniform(0.5, 3, (3,)), dtype, grad=False) if weights in ("pos_weight", "both") else None

    def loss(framework, function):
        def run(a, b):
            return function(a, b, None if w is None else getattr(w, framework), reduction=reduction,
                            pos_weight=None if pw is None else getattr(pw, framework))
        return run
    compare(loss("ember", F.binary_cross_entropy_with_logits), loss("torch", TF.binary_cross_entropy_with_logits),
            Pair(x, dtype), Pair(t, dtype), dtype=dtype)


def test_binary_cross_entropy_with_logits_is_stable_for_huge_logits(dtype):
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    t = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    compare(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none", pos_weight=ember.tensor(
                [2.0], dtype=a.dtype)),
            lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction="none", pos_weight=torch.tensor(
                [2.0], dtype=a.dtype)),
            Pair(x, dtype), Pair(t, dtype), dtype=dtype)


# -- regression losses ----------------------------------------------------------------------------------------

REGRESSION = {
    "mse_loss": ({}, {}),
    "l1_loss": ({}, {}),
    "smooth_l1_loss": ({"beta": 1.0}, {"beta": 0.5}),
    "huber_loss": ({"delta": 1.0}, {"delta": 0.7}),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", list(REGRESSION))
@pytest.mark.parametrize("variant", [0, 1])
def test_regression_losses(dtype, reduction, name, variant):
    r = rng(23)
    x, t = r.uniform(-3, 3, (4, 5)), r.uniform(-3, 3, (4, 5))
    x[0, 0] = t[0, 0]  # equal values: every loss has slope 0 there
    options = REGRESSION[name][variant]
    compare(lambda a, b: getattr(F, name)(a, b, reduction=reduction, **options),
            lambda a, b: getattr(TF, name)(a, b, reduction=reduction, **options),
            Pair(x, dtype), Pair(t, dtype), dtype=dtype)


def test_smooth_l1_loss_with_beta_0_is_l1_loss(dtype):
    x, t = rng(29).uniform(-1, 1, (2, 6)), rng(30).uniform(-1, 1, (2, 6))
    compare(lambda a, b: F.smooth_l1_loss(a, b, beta=0.0), lambda a, b: TF.smooth_l1_loss(a, b, beta=0.0),
            Pair(x, dtype), Pair(t, dtype), dtype=dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_regression_losses_with_element_weights(dtype, reduction, name):
    """PyTorch 2.13's weight=: mse and l1 means divide by the weights' sum, huber's by the element count."""
    r = rng(31)
    x, t, w = r.uniform(-3, 3, (3, 4)), r.uniform(-3, 3, (3, 4)), r.uniform(0.1, 2, (3, 4))
    weight = Pair(w, dtype, grad=False)
    compare(lambda a, b: getattr(F, name)(a, b, reduction=reduction, weight=weight.ember),
            lambda a, b: getattr(TF, name)(a, b, reduction=reduction, weight=weight.torch),
            Pair(x, dtype), Pair(t, dtype), dtype=dtype)


@pytest.mark.parametrize("name", list(REGRESSION))
def test_regression_losses_broadcast_a_different_target_with_a_warning(name):
    x, t = rng(37).uniform(-1, 1, (3, 1)), rng(38).uniform(-1, 1, (3,))
    with pytest.warns(UserWarning, match=r"target size \(ember.Size\(\[3\]\)\).*input size \(ember.Size\(\[3, 1\]\)\)"):
        out = getattr(F, name)(ember.tensor(x), ember.tensor(t), reduction="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(TF, name)(torch.tensor(x), torch.tensor(t), reduction="none")
    assert tuple(out.shape) == (3, 3)
    assert_close(out.numpy(), expected.numpy(), "float64")


@pytest.mark.parametrize("name", list(REGRESSION))
def test_regression_losses_refuse_shapes_that_do_not_broadcast(name):
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=rf"{name}.*\(3,\).*\(2,\)"):
        getattr(F, name)(ember.zeros(3), ember.zeros(2))


# -- kl_div ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(dtype, reduction, log_target):
    r = rng(41)
    log_p = np.log(r.dirichlet(np.ones(5), 4))
    q = r.dirichlet(np.ones(5), 4)
    q[0, 1] = 0.0  # a zero target contributes 0 (and no NaN in the input's gradient)
    target = np.log(r.dirichlet(np.ones(5), 4)) if log_target else q
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
                lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target),
                Pair(log_p, dtype), Pair(target, dtype, grad=log_target), dtype=dtype)


def test_kl_div_target_gradient(dtype):
    r = rng(43)
    log_p, q = np.log(r.dirichlet(np.ones(4), 3)), r.dirichlet(np.ones(4), 3)
    compare(lambda a, b: F.kl_div(a, b, reduction="batchmean"), lambda a, b: TF.kl_div(a, b, reduction="batchmean"),
            Pair(log_p, dtype), Pair(q, dtype), dtype=dtype)


def test_kl_div_mean_warns_like_pytorch():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(ember.zeros(2, 3), ember.ones(2, 3) / 3)


# -- validation and messages -------------------------------------------------------------------------------------

LOSS_CALLS = {
    "cross_entropy": lambda **kw: F.cross_entropy(ember.randn(3, 4), ember.tensor([0, 1, 2]), **kw),
    "cross_entropy (probabilities)": lambda **kw: F.cross_entropy(ember.randn(3, 4), ember.rand(3, 4), **kw),
    "nll_loss": lambda **kw: F.nll_loss(ember.randn(3, 4), ember.tensor([0, 1, 2]), **kw),
    "mse_loss": lambda **kw: F.mse_loss(ember.randn(3), ember.randn(3), **kw),
    "l1_loss": lambda **kw: F.l1_loss(ember.randn(3), ember.randn(3), **kw),
    "smooth_l1_loss": lambda **kw: F.smooth_l1_loss(ember.randn(3), ember.randn(3), **kw),
    "huber_loss": lambda **kw: F.huber_loss(ember.randn(3), ember.randn(3), **kw),
    "binary_cross_entropy": lambda **kw: F.binary_cross_entropy(ember.rand(3), ember.rand(3), **kw),
    "binary_cross_entropy_with_logits": lambda **kw: F.binary_cross_entropy_with_logits(ember.randn(3),
                                                                                         ember.rand(3), **kw),
    "kl_div": lambda **kw: F.kl_div(ember.randn(3), ember.rand(3), **kw),
}


@pytest.mark.parametrize("name", list(LOSS_CALLS))
def test_unknown_reduction_is_a_value_error_naming_it(name):
    with pytest.raises(ValueError, match="'?average'? is not a valid value for reduction"):
        LOSS_CALLS[name](reduction="average")


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy"])
def test_deprecated_size_average_and_reduce_map_like_pytorch(name):
    expected = {(None, False): "none", (False, None): "sum", (True, True): "mean"}
    for (size_average, reduce), reduction in expected.items():
        ember.manual_seed(0)
        with pytest.warns(UserWarning, match=f"reduction='{reduction}'"):
            legacy = LOSS_CALLS[name](size_average=size_average, reduce=reduce)
        ember.manual_seed(0)
        modern = LOSS_CALLS[name](reduction=reduction)
        np.testing.assert_allclose(legacy.numpy(), modern.numpy())


def test_cross_entropy_batch_size_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)") as info:
        F.cross_entropy(ember.randn(3, 4), ember.tensor([0, 1]))
    assert "(3, 4)" in str(info.value) and "(2,)" in str(info.value)


def test_cross_entropy_spatial_target_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"Expected target size \(3, 5\), got \(3, 2\)") as info:
        F.cross_entropy(ember.randn(3, 4, 5), ember.zeros(3, 2, dtype=ember.int64))
    assert "(3, 4, 5)" in str(info.value)


def test_nll_loss_needs_a_class_dim():
    with pytest.raises(ValueError, match="nll_loss.*1 or more dimensions"):
        F.nll_loss(ember.tensor(1.0), ember.tensor(0))


@pytest.mark.parametrize("target", [[0, 1, 4], [0, -1, 2]], ids=["too large", "negative"])
@pytest.mark.parametrize("loss", [F.cross_entropy, F.nll_loss], ids=["cross_entropy", "nll_loss"])
def test_out_of_range_targets_are_index_errors(target, loss):
    bad = max(target) if max(target) > 3 else min(target)
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        loss(ember.randn(3, 4), ember.tensor(target))
    loss(ember.randn(3, 4), ember.tensor(target), ignore_index=bad)  # fine once it is the ignored value


def test_class_weight_of_the_wrong_size_is_refused():
    with pytest.raises(ValueError, match="weight tensor should be defined either for all 4 classes.*\\(3,\\)"):
        F.cross_entropy(ember.randn(3, 4), ember.tensor([0, 1, 2]), weight=ember.ones(3))


def test_class_weight_requiring_grad_is_refused_like_pytorch():
    weight = ember.ones(4, requires_grad=True)
    for loss in (F.cross_entropy, F.nll_loss):
        with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
            loss(ember.randn(3, 4), ember.tensor([0, 1, 2]), weight=weight)
        with ember.no_grad():
            loss(ember.randn(3, 4), ember.tensor([0, 1, 2]), weight=weight)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.binary_cross_entropy(ember.rand(3), ember.rand(3), weight=ember.ones(3, requires_grad=True))


def test_float_class_targets_of_another_shape_are_dtype_errors():
    with pytest.raises(ember.DtypeError, match="integer dtype"):
        F.cross_entropy(ember.randn(3, 4), ember.rand(3))


def test_integer_targets_of_the_input_shape_must_be_probabilities():
    with pytest.raises(ember.DtypeError, match="Expected floating point type for target with class probabilities"):
        F.cross_entropy(ember.randn(3, 4), ember.zeros(3, 4, dtype=ember.int64))


def test_ignore_index_is_refused_with_probability_targets():
    with pytest.raises(ValueError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(ember.randn(3, 4), ember.rand(3, 4), ignore_index=1)


@pytest.mark.parametrize("value", [-0.1, 1.5])
@pytest.mark.parametrize("target", ["indices", "probabilities"])
def test_label_smoothing_must_lie_in_0_1(value, target):
    t = ember.tensor([0, 1, 2]) if target == "indices" else ember.rand(3, 4)
    with pytest.raises(ValueError, match=f"label_smoothing must be between 0.0 and 1.0. Got: {value}"):
        F.cross_entropy(ember.randn(3, 4), t, label_smoothing=value)


def test_binary_cross_entropy_size_mismatch_names_both_sizes():
    with pytest.raises(ValueError, match=r"target size \(ember.Size\(\[3, 1\]\)\).*input size \(ember.Size\(\[3\]\)\)"):
        F.binary_cross_entropy(ember.rand(3), ember.rand(3, 1))
    with pytest.raises(ValueError, match=r"Target size \(ember.Size\(\[2\]\)\) must be the same as input size "
                                         r"\(ember.Size\(\[3\]\)\)"):
        F.binary_cross_entropy_with_logits(ember.rand(3), ember.rand(2))


@pytest.mark.parametrize("bad", ["input", "target"])
@pytest.mark.parametrize("value", [-0.5, 1.5, float("nan")])
def test_binary_cross_entropy_checks_the_unit_interval(bad, value):
    values = {"input": ember.tensor([0.5, 0.2]), "target": ember.tensor([0.5, 0.2])}
    values[bad] = ember.tensor([0.5, value])
    with pytest.raises(RuntimeError, match=f"all elements of {bad} should be between 0 and 1"):
        F.binary_cross_entropy(values["input"], values["target"])


def test_smooth_l1_and_huber_refuse_bad_thresholds():
    with pytest.raises(ValueError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(ember.zeros(2), ember.zeros(2), beta=-1.0)
    with pytest.raises(ValueError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(ember.zeros(2), ember.zeros(2), delta=0.0)
    with pytest.raises(TypeError, match="delta must be a float or int"):
        nn.HuberLoss(delta="1")


def test_weighted_regression_losses_need_the_input_size():
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(ember.zeros(2, 3), ember.zeros(2, 3), weight=ember.ones(3))


# -- modules -------------------------------------------------------------------------------------------------

def _module_pairs(r):
    w4, pw = r.uniform(0.5, 2, 4), r.uniform(0.5, 2, 4)
    return [
        (nn.CrossEntropyLoss(ember.tensor(w4), ignore_index=1, label_smoothing=0.1),
         torch.nn.CrossEntropyLoss(torch.tensor(w4), ignore_index=1, label_smoothing=0.1), "classes"),
        (nn.NLLLoss(ember.tensor(w4), None, 2, None, "sum"), torch.nn.NLLLoss(torch.tensor(w4), None, 2, None, "sum"),
         "classes"),
        (nn.MSELoss(reduction="sum"), torch.nn.MSELoss(reduction="sum"), "pairs"),
        (nn.L1Loss(), torch.nn.L1Loss(), "pairs"),
        (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), "pairs"),
        (nn.HuberLoss("none", 0.5), torch.nn.HuberLoss("none", 0.5), "pairs"),
        (nn.BCELoss(ember.tensor(w4)), torch.nn.BCELoss(torch.tensor(w4)), "probabilities"),
        (nn.BCEWithLogitsLoss(ember.tensor(w4), pos_weight=ember.tensor(pw)),
         torch.nn.BCEWithLogitsLoss(torch.tensor(w4), pos_weight=torch.tensor(pw)), "pairs"),
        (nn.KLDivLoss(reduction="batchmean", log_target=True), torch.nn.KLDivLoss(reduction="batchmean",
                                                                                  log_target=True), "pairs"),
    ]


@pytest.mark.parametrize("index", range(9))
def test_modules_match_pytorch(index):
    r = rng(47)
    module, reference, kind = _module_pairs(r)[index]
    x = r.uniform(0.05, 0.95, (5, 4)) if kind == "probabilities" else r.uniform(-2, 2, (5, 4))
    t = r.integers(0, 4, (5,)) if kind == "classes" else r.uniform(0, 1, (5, 4))
    compare(module, reference, Pair(x, "float64"), Pair(t, "float64", grad=False), dtype="float64")
    assert repr(module) == repr(reference)


@pytest.mark.parametrize("cls,names", [(nn.CrossEntropyLoss, ["weight"]), (nn.NLLLoss, ["weight"]),
                                       (nn.BCELoss, ["weight"]), (nn.BCEWithLogitsLoss, ["weight", "pos_weight"])])
def test_weights_are_buffers(cls, names):
    kwargs = {name: ember.ones(3) for name in names}
    module = cls(**kwargs)
    assert [name for name, _ in module.named_buffers()] == names
    assert list(module.state_dict()) == names
    assert all(getattr(module.double(), name).dtype is ember.float64 for name in names)
    assert list(cls().state_dict()) == []  # no weight, no entry, as in PyTorch


def test_module_options_are_attributes_like_pytorch():
    loss = nn.CrossEntropyLoss(ignore_index=3, reduction="sum", label_smoothing=0.2)
    assert (loss.ignore_index, loss.reduction, loss.label_smoothing, loss.weight) == (3, "sum", 0.2, None)
    assert nn.SmoothL1Loss(beta=2.0).beta == 2.0 and nn.HuberLoss(delta=3).delta == 3
    assert nn.KLDivLoss(log_target=True).log_target is True
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
