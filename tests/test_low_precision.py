"""float16/bfloat16 numerics and result dtypes against PyTorch (issue 23, part 3).

Reductions, losses and normalizations accumulate in float32 as PyTorch does; any/all of uint8 answer in uint8;
einsum of integers gives int64 where PyTorch's does; lerp uses PyTorch's two-sided formula in float32.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
from ember.dispatch.schema.errors import DtypeError  # noqa: E402

from low_precision_sweep import CASES, counts, sweep  # noqa: E402


@pytest.mark.parametrize("name", sorted(CASES))
def test_large_half_precision_values_match_torch(name):
    """A short seeded sweep: no result further from the exact answer than torch's, no inf where torch is finite."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # kl_div's notice about reduction='mean'
        failures = sweep(name, 15, seed=1)
    mismatches, _ = counts(failures)
    assert mismatches == 0, [f for f in failures if "more accurate" not in f][:5]


@pytest.mark.parametrize("op", ["std", "mean", "var"])
def test_float16_moments_do_not_overflow_on_the_way(op):
    values = [60000.0, -60000.0, 30000.0, 1000.0]
    got = getattr(ember.tensor(values, dtype=ember.float16), op)()
    want = getattr(torch.tensor(values, dtype=torch.float16), op)()
    assert got.dtype is ember.float16
    assert np.isinf(got.item()) == torch.isinf(want).item()
    if not torch.isinf(want):
        assert got.item() == pytest.approx(want.item(), rel=2e-3)


def test_half_precision_gradients_keep_the_input_dtype_and_stay_finite():
    """torch's float16 backward of std gives NaN here; ember's matches torch's float32 gradient."""
    values = [60000.0, -60000.0, 30000.0, 1000.0]
    x = ember.tensor(values, dtype=ember.float16, requires_grad=True)
    (x.std() + x.mean() + x.norm(dim=0) / 1000).backward()
    tx = torch.tensor(values, dtype=torch.float32, requires_grad=True)
    (tx.std() + tx.mean() + tx.norm(dim=0) / 1000).backward()
    assert x.grad.dtype is ember.float16
    np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.numpy(), rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "bool", "float32"])
@pytest.mark.parametrize("reduce", ["any", "all"])
def test_any_all_result_dtype(reduce, dtype):
    data = [[0, 1, 2], [3, 4, 5]]
    x, tx = ember.tensor(data, dtype=getattr(ember, dtype)), torch.tensor(data, dtype=getattr(torch, dtype))
    for args in ((), (0,), (1, True)):
        got, want = getattr(x, reduce)(*args), getattr(tx, reduce)(*args)
        assert str(got.dtype).rpartition(".")[2] == str(want.dtype).rpartition(".")[2]
        assert got.tolist() == want.tolist()


@pytest.mark.parametrize("equation, shapes", [
    ("ij->j", [(2, 3)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]), ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("i,i->", [(3,), (3,)]), ("i,j->", [(3,), (2,)]), ("ij,ik->i", [(2, 3), (2, 4)]), ("i,i->i", [(3,), (3,)]),
    ("ij,jk->", [(2, 3), (3, 4)]),
])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_einsum_integer_result_dtype(equation, shapes, dtype):
    arrays = [np.arange(int(np.prod(s))).reshape(s) % 7 for s in shapes]
    want = torch.einsum(equation, *(torch.tensor(a, dtype=getattr(torch, dtype)) for a in arrays))
    got = ember.einsum(equation, *(ember.tensor(a, dtype=getattr(ember, dtype)) for a in arrays))
    assert str(got.dtype).rpartition(".")[2] == str(want.dtype).rpartition(".")[2]
    assert got.tolist() == want.tolist()


def test_einsum_refuses_what_torch_cannot_contract():
    a, v = ember.ones(2, 3, dtype=ember.int32), ember.ones(3, dtype=ember.int32)
    with pytest.raises(RuntimeError):
        torch.einsum("ij,j->", torch.ones(2, 3, dtype=torch.int32), torch.ones(3, dtype=torch.int32))
    with pytest.raises(DtypeError, match="einsum"):
        ember.einsum("ij,j->", a, v)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_lerp_matches_torch_and_is_exact_at_the_ends(dtype):
    rng = np.random.default_rng(3)
    start, end = rng.uniform(-100, 100, 200), rng.uniform(-100, 100, 200)
    weight = np.concatenate([rng.uniform(0, 1, 198), [0.0, 1.0]])
    e = [ember.tensor(a.astype(np.float32)).to(getattr(ember, dtype)) for a in (start, end, weight)]
    t = [torch.tensor(a.astype(np.float32)).to(getattr(torch, dtype)) for a in (start, end, weight)]
    got, want = ember.lerp(*e), torch.lerp(*t)
    assert got.dtype is getattr(ember, dtype)
    same = np.array_equal if dtype != "float32" else lambda a, b: np.allclose(a, b, rtol=1e-6, atol=2e-5)  # torch fuses
    assert same(got.float().numpy(), want.float().numpy())
    assert got[-2].item() == e[0][-2].item() and got[-1].item() == e[1][-1].item()
    for w in (0.25, 0.75):  # a Python number for the weight
        assert same(ember.lerp(e[0], e[1], w).float().numpy(), torch.lerp(t[0], t[1], w).float().numpy())
