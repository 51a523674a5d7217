"""The margin, embedding and likelihood losses against PyTorch: values and input gradients for every reduction,
the modules' constructors and legacy size_average/reduce, and the validation errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
REDUCTIONS = ("none", "mean", "sum")


def _floats(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape)


def _signs(*shape):
    return RNG.choice([-1.0, 1.0], shape)


def _run(name: str, arrays: list, differentiable: tuple, kwargs: dict):
    """The loss ``name`` in Ember and in torch on the same float64 arrays (int64 arrays stay integer), with
    the gradients of the inputs at ``differentiable`` positions after backpropagating random weights."""
    ours, theirs = [], []
    for i, a in enumerate(arrays):
        floating = np.issubdtype(np.asarray(a).dtype, np.floating)
        ours.append(ember.tensor(a, dtype=ember.float64 if floating else ember.int64,
                                 requires_grad=i in differentiable))
        theirs.append(torch.tensor(a, dtype=torch.float64 if floating else torch.int64,
                                   requires_grad=i in differentiable))
    out, tout = getattr(F, name)(*ours, **kwargs), getattr(torch.nn.functional, name)(*theirs, **kwargs)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-7, atol=1e-10)
    weights = RNG.standard_normal(tuple(tout.shape))
    (out * ember.tensor(weights, dtype=ember.float64)).sum().backward()
    (tout * torch.tensor(weights, dtype=torch.float64)).sum().backward()
    for i in differentiable:
        np.testing.assert_allclose(ours[i].grad.numpy(), theirs[i].grad.numpy(), rtol=1e-6, atol=1e-9,
                                   err_msg=f"{name}: gradient of input {i}")


def _multilabel_targets(rows, classes):
    """Class indices per row, ended early by -1 in some rows, with repeats."""
    target = RNG.integers(0, classes, (rows, classes))
    for row in range(rows):
        end = RNG.integers(0, classes + 1)
        if end < classes:
            target[row, end] = -1
    return target


CASES = {
    "margin_ranking_loss": (lambda: [_floats(6), _floats(6), _signs(6)], (0, 1), {"margin": 0.3}),
    "hinge_embedding_loss": (lambda: [_floats(4, 5, low=0.1, high=3), _signs(4, 5)], (0,), {"margin": 1.5}),
    "soft_margin_loss": (lambda: [_floats(4, 5, low=-40, high=40), _signs(4, 5)], (0,), {}),
    "cosine_embedding_loss": (lambda: [_floats(5, 4), _floats(5, 4), _signs(5)], (0, 1), {"margin": 0.1}),
    "multilabel_soft_margin_loss": (lambda: [_floats(4, 6), RNG.integers(0, 2, (4, 6)).astype(float),
                                             _floats(6, low=0.5, high=2)], (0,), {}),
    "multi_margin_loss": (lambda: [_floats(5, 4), RNG.integers(0, 4, 5)], (0,), {"p": 2, "margin": 0.7}),
    "multilabel_margin_loss": (lambda: [_floats(5, 4), _multilabel_targets(5, 4)], (0,), {}),
    "triplet_margin_loss": (lambda: [_floats(5, 3), _floats(5, 3), _floats(5, 3)], (0, 1, 2),
                            {"p": 1.5, "swap": True}),
    "poisson_nll_loss": (lambda: [_floats(4, 5), RNG.integers(0, 6, (4, 5)).astype(float)], (0,), {"full": True}),
    "gaussian_nll_loss": (lambda: [_floats(4, 3), _floats(4, 3), _floats(4, 1, low=0.1, high=2)], (0, 1, 2),
                          {"full": True}),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_matches_torch(name, reduction):
    make, differentiable, kwargs = CASES[name]
    _run(name, make(), differentiable, {**kwargs, "reduction": reduction})


@pytest.mark.parametrize("name,arrays,kwargs", [
    ("multi_margin_loss", lambda: [_floats(6), np.int64(2)], {"weight": None}),
    ("multilabel_margin_loss", lambda: [_floats(5), np.array([3, 0, -1, 1, 1])], {}),
    ("multilabel_soft_margin_loss", lambda: [_floats(5), RNG.uniform(0, 1, 5)], {}),
    ("cosine_embedding_loss", lambda: [_floats(4), _floats(4), np.float64(-1.0)], {"margin": -0.5}),
    ("triplet_margin_loss", lambda: [_floats(4), _floats(4), _floats(4)], {}),
    ("poisson_nll_loss", lambda: [_floats(6, low=0.1, high=3), RNG.integers(0, 4, 6).astype(float)],
     {"log_input": False}),
])
@pytest.mark.parametrize("reduction", ("none", "mean"))
def test_unbatched_and_options(name, arrays, kwargs, reduction):
    _run(name, arrays(), (0,), {**kwargs, "reduction": reduction})


def test_multi_margin_loss_with_class_weights():
    weight = _floats(4, low=0.5, high=2)
    ours = F.multi_margin_loss(ember.tensor(_x := _floats(5, 4)), ember.tensor(t := RNG.integers(0, 4, 5)),
                               weight=ember.tensor(weight))
    theirs = torch.nn.functional.multi_margin_loss(torch.tensor(_x), torch.tensor(t), weight=torch.tensor(weight))
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-6)


def test_gaussian_nll_loss_variance_shapes_and_clamp():
    x, t = _floats(4, 3), _floats(4, 3)
    for var in (_floats(4, low=0.1, high=2), 0.5, np.full((4, 3), 1e-9)):  # one per row, one float, clamped
        ours_var = var if isinstance(var, float) else ember.tensor(var, dtype=ember.float64, requires_grad=True)
        theirs_var = var if isinstance(var, float) else torch.tensor(var, dtype=torch.float64, requires_grad=True)
        out = F.gaussian_nll_loss(ember.tensor(x), ember.tensor(t), ours_var)
        tout = torch.nn.functional.gaussian_nll_loss(torch.tensor(x), torch.tensor(t), theirs_var)
        np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-7)
        if not isinstance(var, float):  # the clamp is not recorded: the gradient passes through as PyTorch's
            out.backward()
            tout.backward()
            np.testing.assert_allclose(ours_var.grad.numpy(), theirs_var.grad.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(ember.zeros(3), ember.zeros(3), ember.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(ember.ShapeError, match="var is of incorrect size"):
        F.gaussian_nll_loss(ember.zeros(4, 3), ember.zeros(4, 3), ember.ones(2, 3))


def test_triplet_margin_with_distance_loss_custom_distance():
    a, p, n = (_floats(5, 3) for _ in range(3))

    def ours_distance(x, y):
        return 1.0 - F.cosine_similarity(x, y)

    def theirs_distance(x, y):
        return 1.0 - torch.nn.functional.cosine_similarity(x, y)
    for distance in (None, "cosine"):
        kwargs_ours = {} if distance is None else {"distance_function": ours_distance}
        kwargs_theirs = {} if distance is None else {"distance_function": theirs_distance}
        ta = torch.tensor(a, requires_grad=True)
        ea = ember.tensor(a, requires_grad=True)
        out = nn.TripletMarginWithDistanceLoss(**kwargs_ours, margin=0.5, swap=True)(ea, ember.tensor(p),
                                                                                     ember.tensor(n))
        tout = torch.nn.TripletMarginWithDistanceLoss(**kwargs_theirs, margin=0.5, swap=True)(
            ta, torch.tensor(p), torch.tensor(n))
        np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-6)
        out.backward()
        tout.backward()
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-9)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(ember.zeros(2, 3), ember.zeros(2, 3), ember.zeros(2, 3), margin=0.0)


MODULES = [
    ("MarginRankingLoss", {"margin": 0.2}, "margin_ranking_loss"),
    ("HingeEmbeddingLoss", {"margin": 2.0}, "hinge_embedding_loss"),
    ("SoftMarginLoss", {}, "soft_margin_loss"),
    ("CosineEmbeddingLoss", {"margin": 0.1}, "cosine_embedding_loss"),
    ("MultiLabelSoftMarginLoss", {}, "multilabel_soft_margin_loss"),
    ("MultiMarginLoss", {"p": 2}, "multi_margin_loss"),
    ("MultiLabelMarginLoss", {}, "multilabel_margin_loss"),
    ("TripletMarginLoss", {"margin": 0.5, "p": 3.0}, "triplet_margin_loss"),
    ("PoissonNLLLoss", {"log_input": True, "full": True}, "poisson_nll_loss"),
    ("GaussianNLLLoss", {"eps": 1e-3}, "gaussian_nll_loss"),
]


@pytest.mark.parametrize("name,kwargs,function", MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(name, kwargs, function):
    arrays = CASES[function][0]()
    if name == "MultiLabelSoftMarginLoss":  # its class weights are a constructor argument
        kwargs = {"weight": ember.tensor(arrays.pop())}
    for reduction in REDUCTIONS:
        ours = getattr(nn, name)(**kwargs, reduction=reduction)
        theirs = getattr(torch.nn, name)(**{k: torch.tensor(v.numpy()) if isinstance(v, ember.Tensor) else v
                                            for k, v in kwargs.items()}, reduction=reduction)
        assert repr(ours) == repr(theirs)
        args = [ember.tensor(a) for a in arrays]
        targs = [torch.tensor(a) for a in arrays]
        np.testing.assert_allclose(ours(*args).numpy(), theirs(*targs).numpy(), rtol=1e-6, atol=1e-9)


def test_legacy_size_average_and_reduce():
    x, y, t = _floats(6), _floats(6), _signs(6)
    for size_average, reduce in ((False, None), (None, False), (True, True)):
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            ours = nn.MarginRankingLoss(0.1, size_average, reduce)(ember.tensor(x), ember.tensor(y), ember.tensor(t))
        theirs = torch.nn.MarginRankingLoss(0.1, size_average, reduce)(torch.tensor(x), torch.tensor(y),
                                                                       torch.tensor(t))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    with pytest.warns(UserWarning):
        ours = F.poisson_nll_loss(ember.tensor(x), ember.tensor(np.abs(y)), True, False, False)
    theirs = torch.nn.functional.poisson_nll_loss(torch.tensor(x), torch.tensor(np.abs(y)), True, False, False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_validation_errors_name_the_loss():
    with pytest.raises(ValueError, match="soft_margin_loss: bad is not a valid value for reduction"):
        F.soft_margin_loss(ember.zeros(3), ember.ones(3), reduction="bad")
    with pytest.raises(ember.ShapeError, match="margin_ranking_loss: all input tensors should have the same"):
        F.margin_ranking_loss(ember.zeros(3), ember.zeros(1, 3), ember.ones(3))
    with pytest.raises(ember.ShapeError, match="cosine_embedding_loss: 1D target tensor expects 2D input"):
        F.cosine_embedding_loss(ember.zeros(3), ember.zeros(3), ember.ones(3))
    with pytest.raises(ember.OutOfRangeError, match="multi_margin_loss: target 4 is out of range"):
        F.multi_margin_loss(ember.zeros(2, 4), ember.tensor([0, 4]))
    with pytest.raises(ember.ShapeError, match="inconsistent target size"):
        F.multi_margin_loss(ember.zeros(2, 4), ember.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(ember.zeros(2, 4), ember.tensor([0, 1]), p=3)
    with pytest.raises(ember.DtypeError, match="multilabel_margin_loss: expected target to hold class indices"):
        F.multilabel_margin_loss(ember.zeros(2, 4), ember.zeros(2, 4))
    with pytest.raises(ember.ShapeError, match="triplet_margin_loss: The anchor, positive, and negative"):
        F.triplet_margin_loss(ember.zeros(2, 3), ember.zeros(3), ember.zeros(2, 3))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)


def test_nll_loss_2d_is_the_deprecated_nll_loss():
    x, t = _floats(2, 3, 4, 4), RNG.integers(0, 3, (2, 4, 4))
    with pytest.warns(UserWarning, match="NLLLoss2d has been deprecated"):
        ours = nn.NLLLoss2d(reduction="sum")
    np.testing.assert_allclose(ours(ember.tensor(x), ember.tensor(t)).item(),
                               torch.nn.NLLLoss(reduction="sum")(torch.tensor(x), torch.tensor(t)).item(), rtol=1e-7)


def test_autocast_dtypes_follow_torch_cpu_lists():
    x, y = _floats(4, 5), _floats(4, 5)
    calls = {
        "margin_ranking_loss": lambda f, t, a, b: f.margin_ranking_loss(a[:, 0], b[:, 0], t.sign(b[:, 1])),
        "hinge_embedding_loss": lambda f, t, a, b: f.hinge_embedding_loss(a, t.sign(b)),
        "multilabel_soft_margin_loss": lambda f, t, a, b: f.multilabel_soft_margin_loss(a, (b > 0).to(a.dtype)),
        "gaussian_nll_loss": lambda f, t, a, b: f.gaussian_nll_loss(a, b, b.abs() + 0.1),
        "triplet_margin_loss": lambda f, t, a, b: f.triplet_margin_loss(a, b, a),
    }
    for name, call in calls.items():
        with ember.autocast("cpu", dtype=ember.bfloat16):
            ours = call(F, ember, ember.tensor(x).bfloat16(), ember.tensor(y).bfloat16())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            theirs = call(torch.nn.functional, torch, torch.tensor(x).bfloat16(), torch.tensor(y).bfloat16())
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), name
