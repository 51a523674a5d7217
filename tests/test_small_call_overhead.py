"""The short roads of small calls (issue 37): loops that real programs run, warm, make no new call plans, and the
short roads give PyTorch's answers.

No timings (CI stays deterministic): the plan cache's miss counter (``plan.statistics()``) says whether a warm
loop validated and planned its calls anew, which is where such loops lost their time (a dataset's slice
assignments, a sampling step's top-k mask and index ops). Parity tests skip where PyTorch is not installed.
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.dispatch.contract import registry
from ember.dispatch.execution import plan
from ember.dispatch.execution.plan import use_composite

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
from program_models import char_example  # noqa: E402  makemore's CharDataset.__getitem__, as benchmarked

WORDS = [[3, 1, 4], [1, 5, 9, 2, 6], [5, 3], [5, 8, 9, 7, 9, 3, 2, 3], [8, 4, 6, 2, 6, 4, 3], [3, 8]]
LENGTH = 10


def _misses() -> int:
    return plan.statistics()["misses"]


def sampling_step(lib, logits, idx, generator, top_k: int = 3):
    """minGPT's generate, one token: the last position, a top-k mask, softmax, a draw, and the sequence grown."""
    with lib.no_grad():
        logits = logits[:, -1, :] / 0.8
        v, _ = lib.topk(logits, top_k)
        logits[logits < v[:, [-1]]] = -float("Inf")
        probs = lib.nn.functional.softmax(logits, dim=-1)
        idx_next = lib.multinomial(probs, num_samples=1, generator=generator)
        return lib.cat((idx, idx_next), dim=1), probs


def _batch(lib):
    """A DataLoader's batch of the examples: the rows stacked."""
    return [lib.stack(list(rows)) for rows in zip(*(char_example(lib, word, LENGTH) for word in WORDS))]


def test_a_warm_dataset_loop_makes_no_plans():
    _batch(ember)  # warm: every length once
    before = _misses()
    inputs, targets = _batch(ember)
    assert _misses() == before
    assert targets[0].tolist() == [3, 1, 4, 0] + [-1] * 7


def test_the_dataset_loop_matches_pytorch():
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(_batch(ember), _batch(torch)):
        assert ours.tolist() == theirs.tolist()


def test_a_warm_sampling_step_makes_no_plans():
    rng = np.random.default_rng(0)
    logits = ember.tensor(rng.standard_normal((4, 5, 11), dtype=np.float32))
    idx = ember.zeros((4, 6), dtype=ember.long)
    generator = ember.Generator().manual_seed(0)
    sampling_step(ember, logits, idx, generator)
    before = _misses()
    for _ in range(3):
        grown, probs = sampling_step(ember, logits, idx, generator)
    assert _misses() == before
    assert tuple(grown.shape) == (4, 7) and int((probs > 0).sum(-1).max()) <= 3


def test_advanced_indexing_with_tensors_reuses_its_plan():
    """Index ops check index values on every call; their plans (once made for every call) are still cached,
    with negative indices wrapped, yet a bad index is still refused."""
    x = ember.arange(12.0).view(3, 4)
    rows = ember.tensor([2, -1, 0])
    assert x[rows].tolist() == x[ember.tensor([2, 2, 0])].tolist()

    def step():
        assert x[:, rows][:, 1].tolist() == [3.0, 7.0, 11.0]
        x[rows] = x[rows] * 1
    step()
    before = _misses()
    for _ in range(3):
        step()
    assert _misses() == before
    with pytest.raises(IndexError, match="index 5 is out of bounds for dim 1 with size 4"):
        x[:, ember.tensor([0, 5, 1])]
    with pytest.raises(IndexError, match="index_put_: index 3 is out of bounds for dim 0 with size 3"):
        x[ember.tensor([0, 3, 1])] = 0.0


def test_checks_on_every_call_start_from_the_arguments_passed():
    """A cached plan's per-call checks see each call's own arguments: one_hot's class count read from the data
    (num_classes=-1) follows the data, and a wrapped dim is wrapped again."""
    assert tuple(F.one_hot(ember.tensor([0, 1]), -1).shape) == (2, 2)
    assert tuple(F.one_hot(ember.tensor([0, 3]), -1).shape) == (2, 4)
    x = ember.arange(12.0).view(3, 4)
    for column in (0, 3):
        assert ember.gather(x, -1, ember.full((3, 1), column)).reshape(-1).tolist() == [column, column + 4, column + 8]
    with pytest.raises(IndexError, match="gather: index 4 is out of bounds for dim 1 with size 4"):
        ember.gather(x, -1, ember.full((3, 1), 4))


def test_slices_at_new_offsets_reuse_their_family_plan_and_are_still_checked():
    """``series.split(1, dim=1)`` over a long sequence, ``x[i]`` over a dataset: a slice or select at offsets not
    seen before takes the plan of its family, checked on its own bounds (negative, past the end), instead of
    a plan each; the backward of every piece finds its place."""
    series = ember.arange(2 * 600.0).view(2, 600).requires_grad_()
    table = ember.arange(50.0).view(5, 10)
    series.split(1, dim=1), table[0]  # warm: one piece of each family
    before = _misses()
    pieces = series.split(1, dim=1)
    rows = [table[i] for i in range(-5, 5)]
    assert _misses() == before
    assert [p.item() for p in pieces[598][:, 0]] == [598.0, 1198.0]
    assert [r[0].item() for r in rows] == [0.0, 10.0, 20.0, 30.0, 40.0] * 2
    sum(p.sum() * i for i, p in enumerate(pieces)).backward()
    assert series.grad[1].tolist() == [float(i) for i in range(600)]
    x = ember.arange(10.0)
    assert x[-3:].tolist() == [7.0, 8.0, 9.0] and x[8:20].tolist() == [8.0, 9.0] and x[7:2].tolist() == []
    assert x.narrow(0, -2, 2).tolist() == [8.0, 9.0]
    with pytest.raises(IndexError, match="select"):
        table[7]
    with pytest.raises(ValueError, match="step must be positive|steps must be positive"):
        x[::-1]


def test_the_sampling_step_matches_pytorch_up_to_the_draw():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 3, 9), dtype=np.float32)
    logits[0, -1, 4] = logits[0, -1, 7]  # a tie at the top-k boundary
    ours = sampling_step(ember, ember.tensor(logits), ember.zeros((2, 1), dtype=ember.long),
                         ember.Generator().manual_seed(0))[1]
    theirs = sampling_step(torch, torch.tensor(logits), torch.zeros((2, 1), dtype=torch.long),
                           torch.Generator().manual_seed(0))[1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=0)


INDICES = [(slice(None), -1, slice(None)), (slice(None), [-1]), ([1],), (slice(None), [0, 2, -1]),
           (slice(None), slice(-2, None)), (None, 1), (Ellipsis, [2]), (1, [3]), ([0, -1], slice(1, 3))]


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_short_indexing_roads_match_pytorch(index):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
    ours, theirs = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    got, want = ours[index], theirs[index]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    weights = np.arange(want.numel(), dtype=np.float32).reshape(tuple(want.shape))
    (got * ember.tensor(weights)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    for value in (7.5, np.full(tuple(want.shape), -2.0, np.float32)):  # a number, and one value per element
        written, expected = ember.tensor(values), torch.tensor(values)
        written[index] = value if isinstance(value, float) else ember.tensor(value)
        expected[index] = value if isinstance(value, float) else torch.tensor(value)
        np.testing.assert_array_equal(written.numpy(), expected.numpy())


def test_a_one_int_list_selects_a_copy():
    x = ember.arange(6.0).view(2, 3)
    column = x[:, [-1]]
    column[0, 0] = 100.0
    assert x[0, 2].item() == 2.0 and column.tolist() == [[100.0], [5.0]]


def test_python_index_lists_are_checked_on_the_host():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index: index 4 is out of bounds for dim 1 with size 4 \(expected -4..3"):
        x[:, [4]]
    with pytest.raises(IndexError, match="index_put_: index -4 is out of bounds for dim 0 with size 3"):
        x[[0, -4]] = 1.0


def test_mask_assignments_match_pytorch():
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    rows = np.array([True, False, True])
    cases = [(values > 0, -float("inf")), (values > 0, 2), (rows, 5.0), (rows, np.arange(4, dtype=np.float32)),
             (rows, np.ones((2, 4), np.float32)), (values > 0, np.array([1.5], np.float32))]
    for mask, value in cases:
        ours, theirs = ember.tensor(values), torch.tensor(values)
        ours[ember.tensor(mask)] = ember.tensor(value) if isinstance(value, np.ndarray) else value
        theirs[torch.tensor(mask)] = torch.tensor(value) if isinstance(value, np.ndarray) else value
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    small = ember.zeros(3, dtype=ember.uint8)
    small[ember.tensor([True, False, True])] = -1  # stored as PyTorch stores it: wrapped
    assert small.tolist() == [255, 0, 255]


def _stable_topk(a: np.ndarray, k: int, largest: bool):
    """topk by a stable sort along the last dim: ties in index order, NaN as the largest value."""
    if largest:
        order = a.shape[-1] - 1 - np.flip(np.argsort(np.flip(a, -1), -1, kind="stable"), -1)
    else:
        order = np.argsort(a, -1, kind="stable")
    order = order[..., :k]
    return np.take_along_axis(a, order, -1), order


def _shared_topk():
    from ember.backends.arraykernels import build_kernels
    from ember.backends.cpu.library import NUMPY
    return build_kernels(NUMPY)["topk"]


TOPK_KERNELS = {"cpu": lambda: registry.get_backend("cpu").kernels["topk"], "shared NumPy": _shared_topk}


@pytest.mark.parametrize("kernel", TOPK_KERNELS)
@pytest.mark.parametrize("shape", [(65,), (4, 65), (3, 2, 7), (2, 300)])
def test_topk_takes_ties_in_order_and_nan_as_largest(shape, kernel):
    kernel = TOPK_KERNELS[kernel]()
    a = np.random.default_rng(4).integers(0, 4, shape).astype(np.float32)
    a.reshape(-1)[3] = np.nan
    for k in (1, 2, 5):
        for largest in (True, False):
            values, indices = kernel(a, k, a.ndim - 1, largest, True)
            want_values, want_indices = _stable_topk(a, k, largest)
            np.testing.assert_array_equal(indices, want_indices)
            np.testing.assert_array_equal(values, want_values)
    along_first = kernel(np.moveaxis(a, -1, 0).copy(), 2, 0, True, True)
    np.testing.assert_array_equal(np.moveaxis(along_first[1], 0, -1), _stable_topk(a, 2, True)[1])


@pytest.mark.parametrize("shape, draws, replacement", [((9,), 1, False), ((4, 9), 1, False), ((3, 6), 4, False),
                                                       ((2, 5), 30, True), ((7,), 50, True)])
def test_the_multinomial_kernel_draws_what_its_composite_draws(shape, draws, replacement):
    weights = np.random.default_rng(5).random(shape).astype(np.float32)
    weights.reshape(-1)[0] = 0.0
    probabilities = ember.tensor(weights)
    got = ember.multinomial(probabilities, draws, replacement, generator=ember.Generator().manual_seed(9))
    with use_composite("multinomial"):
        want = ember.multinomial(probabilities, draws, replacement, generator=ember.Generator().manual_seed(9))
    assert got.dtype is ember.int64
    assert got.tolist() == want.tolist()


def test_methods_without_arguments_find_the_generic_plan():
    """``x.sum()`` builds its key from the tensor alone: the same plan as ``sum(x, None, False)``."""
    x = ember.tensor([1.0, 2.0, 4.0], requires_grad=True)
    x.sum()
    before = _misses()
    assert ember.sum(x, None, False).item() == x.sum().item() == 7.0
    assert _misses() == before
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    assert F.softmax(ember.tensor([[0.0, 0.0]]), -1).tolist() == [[0.5, 0.5]]
