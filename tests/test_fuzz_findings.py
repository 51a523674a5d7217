"""Item 1 of issue 40's fuzz findings on the cpu backend, each pinned against PyTorch itself:

- gather with an empty index, or one that does not fit the input: PyTorch's accepted and refused calls, its
  values, and its words ("Size does not match at dimension ...") instead of NumPy's IndexError;
- class-index losses: the target dtypes PyTorch takes (int64, and uint8 up to 2-D inputs) and its range check
  for each of them, a uint8 target compared with ignore_index as a number (-1 is not 255);
- reductions over an empty ``dim`` list: every dim (any and all: none), through one rule of the schema;
- half-precision losses and group_norm on values that overflow: NaN and inf where PyTorch has them.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import warnings

import numpy as np
import pytest

import ember
from ember.dispatch import OutOfRangeError, ShapeError, use_composite

torch = pytest.importorskip("torch")
TF = torch.nn.functional
EF = ember.nn.functional


def outcome(call):
    """(result, None) or (None, the exception) of ``call()``."""
    try:
        return call(), None
    except Exception as error:  # noqa: BLE001 - the test compares what each library raises
        return None, error


def as_numpy(t) -> np.ndarray:
    return np.asarray(t.detach().to(torch.float64).numpy() if isinstance(t, torch.Tensor)
                      else t.detach().to(ember.float64).numpy())


@contextlib.contextmanager
def path(name: str, ops: tuple):
    """'kernel': the CPU backend's kernels; 'composite': the core definitions other backends run."""
    with contextlib.ExitStack() as stack:
        if name == "composite":
            for op in ops:
                stack.enter_context(use_composite(op, "cpu"))
        yield


# -- gather ----------------------------------------------------------------------------------------------

def _shapes(max_rank: int = 2, max_size: int = 2):
    for rank in range(max_rank + 1):
        yield from itertools.product(range(max_size + 1), repeat=rank)


def _gather_cases():
    for in_shape, index_shape in itertools.product(_shapes(), _shapes(3)):
        for dim in range(-max(len(in_shape), 1), max(len(in_shape), 1)):
            yield in_shape, dim, index_shape


@pytest.mark.parametrize("method", [False, True], ids=["ember.gather", "Tensor.gather"])
def test_gather_accepts_and_refuses_the_shapes_pytorch_does(method):
    rng = np.random.default_rng(0)
    for in_shape, dim, index_shape in _gather_cases():
        x = rng.standard_normal(in_shape).astype(np.float32)
        length = in_shape[dim] if in_shape else 1
        index = rng.integers(0, max(length, 1), index_shape)
        expected, refused = outcome(lambda: torch.gather(torch.tensor(x), dim, torch.tensor(index)))
        source, idx = ember.tensor(x), ember.tensor(index)
        got, error = outcome(lambda: source.gather(dim, idx) if method else ember.gather(source, dim, idx))
        case = f"input {in_shape}, dim {dim}, index {index_shape}"
        if refused is not None:
            assert isinstance(error, RuntimeError), f"{case}: PyTorch refuses ({refused}), Ember gave {error!r}"
            assert "gather" in str(error), case
            continue
        assert error is None, f"{case}: PyTorch accepts, Ember raised {error!r}"
        assert tuple(got.shape) == tuple(expected.shape), case
        np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=case)


@pytest.mark.parametrize("in_shape, dim, index_shape, message", [
    ((3, 4), 0, (2, 5), r"gather: Size does not match at dimension 1: index of shape \(2, 5\) must be no larger "
                        r"than input of shape \(3, 4\) in every dim but dim 0"),
    ((0, 3), 1, (1, 2), r"gather: Size does not match at dimension 0: .* but dim 1"),
    ((3, 4), 0, (3,), "gather: Index tensor must have the same number of dimensions as input tensor"),
    ((5,), 0, (1, 1), "gather: Index tensor must have the same number of dimensions as input tensor"),
], ids=["too wide", "empty input", "fewer dims", "more dims"])
def test_gather_shape_errors_name_the_op_the_sizes_and_the_dim(in_shape, dim, index_shape, message):
    with pytest.raises(RuntimeError):
        torch.gather(torch.zeros(in_shape), dim, torch.zeros(index_shape, dtype=torch.int64))
    with pytest.raises(ShapeError, match=message):
        ember.gather(ember.zeros(in_shape), dim, ember.zeros(index_shape, dtype=ember.int64))


@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("in_shape, dim, index_shape", [((2, 3), 1, (3, 0)), ((3,), 0, (2, 0)), ((), 0, (0, 3)),
                                                        ((2, 3), 0, (0, 5, 1))])
def test_an_empty_index_of_any_shape_gathers_nothing(device, in_shape, dim, index_shape):
    """PyTorch checks nothing of an empty index; NumPy's take_along_axis raised 'shape mismatch' before."""
    if ember.backends.available().get(device) != "available":
        pytest.skip(f"{device} is not available here")
    expected = torch.gather(torch.zeros(in_shape), dim, torch.zeros(index_shape, dtype=torch.int64))
    x = ember.ones(in_shape, device=device, requires_grad=True)
    out = x.gather(dim, ember.zeros(index_shape, dtype=ember.int64, device=device))
    assert tuple(out.shape) == tuple(expected.shape) == index_shape
    out.sum().backward()
    assert x.grad.tolist() == ember.zeros(in_shape).tolist()


# -- class-index losses: target dtypes and values ------------------------------------------------------------

TARGET_DTYPES = ["int64", "uint8", "int32", "int16", "int8", "bool", "float32"]


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("dtype", TARGET_DTYPES)
@pytest.mark.parametrize("in_shape", [(5,), (4, 5), (4, 5, 3), (0, 5, 3)], ids=["(C)", "(N,C)", "(N,C,d)", "empty"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_class_losses_take_the_target_dtypes_pytorch_takes(loss, dtype, in_shape, reduction):
    target_shape = () if len(in_shape) == 1 else in_shape[:1] + in_shape[2:]
    expected, refused = outcome(lambda: getattr(TF, loss)(
        torch.zeros(in_shape), torch.zeros(target_shape, dtype=getattr(torch, dtype)), reduction=reduction))
    got, error = outcome(lambda: getattr(EF, loss)(
        ember.zeros(in_shape), ember.zeros(target_shape, dtype=getattr(ember, dtype)), reduction=reduction))
    if refused is None:
        assert error is None, f"PyTorch accepts, Ember raised {error!r}"
        np.testing.assert_array_equal(as_numpy(got), as_numpy(expected))
        return
    assert isinstance(error, ember.DtypeError) and isinstance(error, RuntimeError), repr(error)
    words = str(refused).splitlines()[0]  # "expected target dtype to be Long or Byte, but got Int", ...
    assert words in str(error)


@pytest.mark.parametrize("route", ["kernel", "composite"])
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("targets, ignore_index, bad", [
    ([0, 1, 7, 3], -100, 7), ([0, 1, 255, 3], -100, 255), ([0, 1, 255, 3], -1, 255), ([0, 9, 7, 3], 7, 9),
], ids=["7", "255", "255 with ignore_index -1", "9 with 7 ignored"])
def test_uint8_targets_out_of_range_are_pytorchs_index_error(route, loss, targets, ignore_index, bad):
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        getattr(TF, loss)(torch.zeros(4, 5), torch.tensor(targets, dtype=torch.uint8), ignore_index=ignore_index)
    with path(route, ("cross_entropy_indices", "nll_loss")):
        with pytest.raises(OutOfRangeError, match=f"Target {bad} is out of bounds"):
            getattr(EF, loss)(ember.zeros(4, 5), ember.tensor(targets, dtype=ember.uint8), ignore_index=ignore_index)


@pytest.mark.parametrize("route", ["kernel", "composite"])
@pytest.mark.parametrize("ignore_index", [-100, 156, 255])
def test_a_uint8_target_equals_ignore_index_as_a_number(route, ignore_index):
    """156 is a class of 200, not the default ignore_index -100 wrapped to uint8."""
    logits = np.random.default_rng(1).standard_normal((4, 200)).astype(np.float32)
    targets = np.array([156, 3, 255, 199], np.uint8)
    kwargs = dict(ignore_index=ignore_index, reduction="none")
    if ignore_index != 255:
        targets[2] = 7
    expected = TF.cross_entropy(torch.tensor(logits), torch.tensor(targets), **kwargs)
    with path(route, ("cross_entropy_indices",)):
        got = EF.cross_entropy(ember.tensor(logits), ember.tensor(targets), **kwargs)
    np.testing.assert_allclose(as_numpy(got), as_numpy(expected), rtol=1e-6)


# -- reductions over an empty dim list -------------------------------------------------------------------------

REDUCTIONS = {
    "sum": lambda L, x, dim, keepdim: L.sum(x, dim, keepdim=keepdim),
    "Tensor.sum": lambda L, x, dim, keepdim: x.sum(dim=dim, keepdim=keepdim),
    "nansum": lambda L, x, dim, keepdim: L.nansum(x, dim, keepdim=keepdim),
    "mean": lambda L, x, dim, keepdim: L.mean(x, dim, keepdim=keepdim),
    "nanmean": lambda L, x, dim, keepdim: L.nanmean(x, dim, keepdim=keepdim),
    "amax": lambda L, x, dim, keepdim: L.amax(x, dim, keepdim=keepdim),
    "amin": lambda L, x, dim, keepdim: L.amin(x, dim, keepdim=keepdim),
    "prod": lambda L, x, dim, keepdim: L.prod(x, dim, keepdim=keepdim),
    "var": lambda L, x, dim, keepdim: L.var(x, dim, keepdim=keepdim),
    "std": lambda L, x, dim, keepdim: L.std(x, dim, keepdim=keepdim),
    "var_mean": lambda L, x, dim, keepdim: L.var_mean(x, dim, keepdim=keepdim),
    "std_mean": lambda L, x, dim, keepdim: L.std_mean(x, dim, keepdim=keepdim),
    "logsumexp": lambda L, x, dim, keepdim: L.logsumexp(x, dim, keepdim=keepdim),
    "norm": lambda L, x, dim, keepdim: L.norm(x, dim=dim, keepdim=keepdim),
    "norm p=1": lambda L, x, dim, keepdim: L.norm(x, p=1, dim=dim, keepdim=keepdim),
    "linalg.vector_norm": lambda L, x, dim, keepdim: L.linalg.vector_norm(x, dim=dim, keepdim=keepdim),
    "linalg.norm": lambda L, x, dim, keepdim: L.linalg.norm(x, dim=dim, keepdim=keepdim),
    "count_nonzero": lambda L, x, dim, keepdim: L.count_nonzero(x, dim),
    "any": lambda L, x, dim, keepdim: L.any(x, dim, keepdim=keepdim),
    "all": lambda L, x, dim, keepdim: L.all(x, dim, keepdim=keepdim),
}


def _run_reduction(lib, name, values, dtype, dim, keepdim):
    x = lib.tensor(values, dtype=getattr(lib, dtype))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, error = outcome(lambda: REDUCTIONS[name](lib, x, dim, keepdim))
    results = result if isinstance(result, tuple) else (result,)
    return results, error, [str(w.message) for w in caught]


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("dim", [(), []], ids=["()", "[]"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_an_empty_dim_list_reduces_as_in_pytorch(name, dim, keepdim, dtype):
    values = [[1.0, 2.0, 0.0], [4.0, 5.0, 7.0]]
    expected, refused, torch_warnings = _run_reduction(torch, name, values, dtype, dim, keepdim)
    got, error, ember_warnings = _run_reduction(ember, name, values, dtype, dim, keepdim)
    if name == "logsumexp" and not keepdim and refused is not None:
        # PyTorch fails inside its kernel ("output with shape [] doesn't match the broadcast shape [1, 1]"), an
        # internal error where keepdim=True and empty inputs reduce every dim; Ember reduces every dim here too
        expected, _, torch_warnings = _run_reduction(torch, name, values, dtype, dim, True)
        expected, refused = tuple(t.reshape(()) for t in expected), None
    if refused is not None:
        assert isinstance(error, type(refused)), f"PyTorch raises {refused!r}, Ember gave {error!r}"
        return
    assert error is None, f"PyTorch accepts, Ember raised {error!r}"
    assert len(ember_warnings) == len(torch_warnings), (ember_warnings, torch_warnings)
    assert len(got) == len(expected)
    for ours, theirs in zip(got, expected):
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_allclose(as_numpy(ours), as_numpy(theirs), rtol=1e-6)


def test_an_empty_dim_list_after_an_empty_tuple_reaches_no_kernel_as_a_list():
    """Both spell one plan: the list must not reach NumPy's sum as an axis (a TypeError before)."""
    x = ember.ones(2, 3)
    assert ember.sum(x, ()).item() == ember.sum(x, []).item() == 6.0


# -- half-precision losses and group_norm on values that overflow -----------------------------------------------

INF, NAN, BIG = math.inf, math.nan, 65504.0
OVERFLOWING = np.array([[BIG, -BIG, 0.5, 1.0], [INF, 1.0, 2.0, 3.0], [-INF, 1.0, 2.0, 3.0], [NAN, 0.0, 1.0, 2.0],
                        [60000.0, 60000.0, 1.0, 2.0], [30000.0, -1000.0, 3.9, 2.8], [-BIG, -BIG, -BIG, -BIG],
                        [INF, INF, 0.0, 0.0]])
TARGETS = [0, 1, 0, 1, 2, 2, 0, 1]
# (1 - t) * x overflows before log_sigmoid(x) is taken off: -inf in PyTorch's steps, finite in float32
BCE_LOGITS = [[-60000.0, -30000.0, 60000.0, 3.0], [-BIG, 2.0, -3.0, 1000.0]]
BCE_TARGETS = [[-0.5, -1.5, 0.5, 2.0], [-0.25, 0.0, 1.0, 0.5]]


def _like(lib, values, x):
    return lib.tensor(values).to(x.dtype)


HALF_CASES = {
    "cross_entropy": lambda L, F, x: F.cross_entropy(x, L.tensor(TARGETS), reduction="none"),
    "cross_entropy mean": lambda L, F, x: F.cross_entropy(x[4:6], L.tensor(TARGETS[4:6])),
    "cross_entropy smoothing": lambda L, F, x: F.cross_entropy(x, L.tensor(TARGETS), reduction="none",
                                                               label_smoothing=0.1),
    "cross_entropy smoothing sum": lambda L, F, x: F.cross_entropy(x[4:6], L.tensor(TARGETS[4:6]),
                                                                   reduction="sum", label_smoothing=0.1),
    "cross_entropy weight": lambda L, F, x: F.cross_entropy(x, L.tensor(TARGETS), reduction="none",
                                                            weight=L.tensor([1.0, 2.0, 0.5, 3.0], dtype=x.dtype)),
    "cross_entropy probabilities": lambda L, F, x: F.cross_entropy(x, F.softmax(x.flip(1) % 3, 1), reduction="none"),
    "nll_loss weight": lambda L, F, x: F.nll_loss(x, L.tensor(TARGETS), reduction="none",
                                                  weight=L.tensor([1.0, BIG, 0.5, 3.0], dtype=x.dtype)),
    "bce_with_logits": lambda L, F, x: F.binary_cross_entropy_with_logits(
        _like(L, BCE_LOGITS, x), _like(L, BCE_TARGETS, x), reduction="none"),
    "bce_with_logits on OVERFLOWING": lambda L, F, x: F.binary_cross_entropy_with_logits(
        x, (x.abs() % 2 > 1).to(x.dtype), reduction="none"),
    "bce_with_logits pos_weight": lambda L, F, x: F.binary_cross_entropy_with_logits(
        _like(L, BCE_LOGITS, x), _like(L, BCE_TARGETS, x), pos_weight=_like(L, [1.0, BIG, 60000.0, -1.0], x),
        reduction="none"),
    "bce_with_logits weight": lambda L, F, x: F.binary_cross_entropy_with_logits(
        _like(L, BCE_LOGITS, x), _like(L, BCE_TARGETS, x), weight=_like(L, [2.0, BIG, 0.5, 1000.0], x),
        reduction="none"),
    "bce_with_logits mean": lambda L, F, x: F.binary_cross_entropy_with_logits(
        _like(L, BCE_LOGITS[:1], x), _like(L, [[-0.5, 0.0, 0.5, 2.0]], x)),
    "group_norm": lambda L, F, x: F.group_norm(x.reshape(2, 4, 4), 2),
    "group_norm affine": lambda L, F, x: F.group_norm(x.reshape(2, 4, 4), 2, L.tensor([BIG, -2.0, 0.5, 1.0]).to(
        x.dtype), L.tensor([60000.0, 1.0, -BIG, 0.0]).to(x.dtype)),
}
FUSED = ("cross_entropy_indices", "nll_loss", "group_norm")
TOLERANCES = {"float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.mark.parametrize("route", ["kernel", "composite"])
@pytest.mark.parametrize("dtype", list(TOLERANCES))
@pytest.mark.parametrize("case", list(HALF_CASES))
def test_half_precision_losses_overflow_where_pytorchs_do(case, dtype, route):
    expected = as_numpy(HALF_CASES[case](torch, TF, torch.tensor(OVERFLOWING, dtype=getattr(torch, dtype))))
    with path(route, FUSED):
        out = HALF_CASES[case](ember, EF, ember.tensor(OVERFLOWING).to(getattr(ember, dtype)))
    assert out.dtype is getattr(ember, dtype)
    got = as_numpy(out)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg="NaN positions")
    np.testing.assert_array_equal(np.where(np.isinf(got), got, 0), np.where(np.isinf(expected), expected, 0),
                                  err_msg="infinities")
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=TOLERANCES[dtype], atol=TOLERANCES[dtype])
