"""What the fuzz campaigns of issue 40 found beyond its list (``python -m ember.conformance.fuzzing``), each
pinned here: the call, and PyTorch's answer to it where PyTorch has the op."""
from __future__ import annotations

import itertools

import pytest

import ember
from ember.dispatch import OutOfRangeError
from ember.dispatch.ops import F


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_triangle_indices_count_in_constant_time_and_match_pytorch(name):
    torch = pytest.importorskip("torch")
    for row, col, offset in itertools.product(range(6), range(6), range(-7, 8)):
        assert getattr(ember, name)(row, col, offset).tolist() == getattr(torch, name)(row, col, offset).tolist()
    assert getattr(ember, name)(2 ** 62, 0).shape == (2, 0)  # counted at once, not row by row (a hang before)
    if name == "triu_indices":  # a tall matrix has a small upper triangle
        assert ember.triu_indices(2 ** 62, 5, 1).tolist() == torch.triu_indices(2 ** 62, 5, 1).tolist()
    else:
        with pytest.raises(ember.OutOfMemoryError, match=f"{name}: cannot allocate"):
            ember.tril_indices(2 ** 62, 5)


def test_gradient_of_a_0d_tensor_along_a_dim_is_an_index_error():
    with pytest.raises(OutOfRangeError, match="gradient: dimension specified as -1 but .* has no dimensions"):
        ember.gradient(ember.tensor(1.0), dim=-1)
    assert ember.gradient(ember.tensor(1.0)) == ()


@pytest.mark.parametrize("call, message", [
    (lambda t: F.put(t, ember.tensor([0]), 1.5), r"put\(\): argument 'source' \(position 3\) must be Tensor, not float"),
    (lambda t: F.cosine_similarity(1.5, t), r"cosine_similarity\(\): argument 'x1' .* must be Tensor, not float"),
    (lambda t: F.pairwise_distance(t, 2), r"pairwise_distance\(\): argument 'x2' .* must be Tensor, not int"),
    (lambda t: t.histogram(None), r"histogram\(\): argument 'bins' .* must be int, not NoneType"),
    (lambda t: t.histogram([1, 2]), r"histogram\(\): argument 'bins' .* must be int, not list"),
], ids=["put", "cosine_similarity", "pairwise_distance", "histogram None", "histogram list"])
def test_a_wrong_kind_of_argument_is_pytorchs_type_error(call, message):
    with pytest.raises(TypeError, match=message):
        call(ember.rand(2, 3))


def test_a_generator_of_the_wrong_type_is_a_clean_error_for_storage_only_dtypes():
    with pytest.raises(TypeError, match="random_\\(\\): argument 'generator' must be Generator, not list"):
        F.random_(ember.zeros(3, dtype=ember.bfloat16), generator=[1, "x"])


@pytest.mark.parametrize("batch", [(3,), (), (0,)])
def test_pivots_to_permutation_of_no_pivots_is_the_identity(batch):
    perm = F.lu_pivots_to_permutation(ember.ones(*batch, 0, dtype=ember.int64), 2)
    assert perm.shape == batch + (2,) and (perm.numel() == 0 or perm.reshape(-1, 2).tolist()[0] == [0, 1])


# -- refused as PyTorch refuses them: the differential fuzzer's "accepted where PyTorch rejects" and its
# -- "both reject, with another kind of exception", fixed where the argument is bound, once for every op

def _pytorch_refuses(torch, call) -> type:
    with pytest.raises(Exception) as refused:
        call(torch)
    return type(refused.value)


@pytest.mark.parametrize("call", [
    lambda m: m.sum(m.ones(2, 3), 0, keepdim=7),
    lambda m: m.full_like(m.ones(2), 2, pin_memory=1),
    lambda m: m.zeros(2, requires_grad=1),
    lambda m: m.ones(2).random_(1, to=2, generator=-1),
    lambda m: m.ones(2).bernoulli(0.5, generator=True),
    lambda m: m.zeros(2, layout=()),
    lambda m: m.rand(2, 3, layout=7),
], ids=["keepdim=7", "pin_memory=1", "requires_grad=1", "generator=-1", "generator=True", "layout=()", "layout=7"])
def test_an_argument_of_the_wrong_type_is_a_type_error_as_in_pytorch(call):
    torch = pytest.importorskip("torch")
    assert issubclass(_pytorch_refuses(torch, call), TypeError)
    with pytest.raises(TypeError, match=r"argument '\w+' must be (bool|Generator|layout), not \w+"):
        call(ember)


def test_none_for_the_factory_flags_and_real_generators_are_still_taken():
    assert not ember.zeros(2, requires_grad=None, pin_memory=None).requires_grad
    assert ember.ones(4).exponential_(generator=ember.Generator().manual_seed(1)).shape == (4,)
    with pytest.raises(ValueError, match="layout=ember.sparse_coo is not supported here"):
        ember.zeros(2, layout=ember.sparse_coo)


# -- the fuzzer's own judgement (ember.conformance.fuzzing.verdicts) -------------------------------------------

def _raised(call):
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - the exception is what is judged
        return exc
    raise AssertionError("the call did not raise")


@pytest.mark.parametrize("method", ["permute", "view", "reshape", "expand", "repeat", "tile"])
def test_a_method_called_without_its_sizes_is_pytorchs_type_error_and_judged_clean(method):
    from ember.conformance.fuzzing.verdicts import judge

    exc = _raised(getattr(ember.ones(2, 3), method))
    torch = pytest.importorskip("torch")
    theirs = _raised(getattr(torch.ones(2, 3), method))
    assert type(exc) is TypeError and type(theirs) is TypeError
    assert judge(exc, __file__) is None


def test_the_fuzzer_tells_internal_off_type_and_vague_errors_apart():
    from ember.conformance.fuzzing.verdicts import judge
    from ember.dispatch import ShapeError

    internal = _raised(lambda: ember.ones(2).numpy().reshape(5))  # NumPy's ValueError, from inside NumPy
    assert judge(internal, __file__).kind == "internal"
    assert judge(_raised(lambda: {}["key"]), __file__).kind == "off-type"
    assert judge(ShapeError("bad"), __file__).kind == "vague"
    assert judge(ShapeError("add: shapes (2,) and (3,) do not broadcast"), __file__) is None


def test_what_the_final_campaigns_found():
    """seed 90817 (cpu and opencl): a hang on astronomically many sections, an IndexError on a 0-d tau, and a
    TypeError inside the cpu foreach kernel for a huge bound on bfloat16."""
    with pytest.raises(ember.dispatch.EmberError, match="tensor_split: .* sections would make .* tensors"):
        ember.ones(3).tensor_split(10 ** 30)
    assert [t.tolist() for t in ember.arange(3).tensor_split(5)] == [[0], [1], [2], [], []]
    with pytest.raises(ember.dispatch.ShapeError, match=r"ormqr: tau must have shape \(\) \+ \(k,\)"):
        ember.ones(3, 3).ormqr(ember.tensor(1.0), ember.ones(3, 3))
    tensors = [ember.ones(2, dtype=ember.bfloat16), ember.ones(2)]
    F._foreach_clamp_min_(tensors, 2 ** 70)
    assert tensors[1].tolist() == [float(2 ** 70)] * 2 and tensors[0].dtype is ember.bfloat16


def test_what_the_seed_271828_campaigns_found():
    """randint bounds beyond int64 (NumPy's ValueError before), a float dim for gradient, a dtype or list for
    to_sparse_csr's dense_dim, and pivots beyond m (NumPy's IndexError inside the kernel before)."""
    with pytest.raises(ember.dispatch.NumberOverflowError, match=r"randint: \[low, high\) = \[0, \d+\) goes beyond"):
        ember.randint(0, 2 ** 70, (2,))
    assert ember.randint(-2 ** 63, 2 ** 63, (4,)).dtype is ember.int64
    with pytest.raises(TypeError, match=r"gradient\(\): argument 'dim' must be int, not float"):
        ember.gradient(ember.rand(3), dim=1.5)
    with pytest.raises(TypeError, match=r"to_sparse_csr\(\): argument 'dense_dim' must be int, not list"):
        ember.rand(3, 3).to_sparse_csr([1])
    with pytest.raises(IndexError, match="pivots must lie between 1 and m = 1, inclusive"):
        F.lu_pivots_to_permutation(ember.tensor([7]), 1)


def test_glu_with_a_dim_out_of_range_is_pytorchs_index_error():
    """seed 314159 (cpu and opencl): an implicit IndexError from glu's shape check before."""
    with pytest.raises(OutOfRangeError, match="glu: dim 5 is out of range"):
        ember.nn.functional.glu(ember.rand(2, 4), 5)
