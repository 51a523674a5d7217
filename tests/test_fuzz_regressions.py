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


# -- seed 8675309 (cpu): NumPy's "array is too big" inside the cpu arange kernel, and a TypeError comparing an int
# -- with a list in tensordot's dims -----------------------------------------------------------------------------

@pytest.mark.parametrize("bounds", [
    dict(start=-9223372036854775808, end=-3.3581285859991668e+16, step=4),  # the fuzzer's call: 2.3e18 float32s
    dict(start=0, end=2 ** 62, step=1),
], ids=["fuzzed", "2**62"])
def test_an_arange_of_more_values_than_a_device_addresses_is_out_of_memory_as_in_pytorch(bounds):
    torch = pytest.importorskip("torch")
    assert issubclass(_pytorch_refuses(torch, lambda m: m.arange(**bounds)), RuntimeError)
    with pytest.raises(ember.OutOfMemoryError, match=r"arange: cannot allocate \d+ values .* a device can address"):
        ember.arange(**bounds)


@pytest.mark.parametrize("bounds", [(0.0, 1e20, 1.0), (0, 1e300, 1e-300)], ids=["1e20 values", "infinitely many"])
def test_an_arange_of_more_values_than_an_int64_counts_is_pytorchs_invalid_size(bounds):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="invalid size, possible overflow"):
        torch.arange(*bounds)
    with pytest.raises(ember.dispatch.ArgumentError, match=r"arange: invalid size, possible overflow\?"):
        ember.arange(*bounds)


def test_an_arange_just_within_reach_is_still_counted():
    assert ember.arange(-2 ** 63, -2 ** 63 + 6, 2).tolist() == [-2 ** 63, -2 ** 63 + 2, -2 ** 63 + 4]
    assert ember.arange(0.0, 1.0, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]


@pytest.mark.parametrize("dims, error, message", [
    (lambda m: m.ones(2, 2, 2, 4, dtype=m.int64), TypeError,  # the fuzzer's call
     r"argument 'dims_self' \(position 3\) must be tuple of ints, but found element of type list at pos 0"),
    (lambda m: m.tensor([1, 2]), TypeError, r"argument 'dims_self' \(position 3\) must be tuple of ints, not int"),
    (lambda m: m.tensor([[1.0, 2.0], [0.0, 1.0]]), TypeError, "found element of type float at pos 0"),
    (lambda m: ([1, 2], [0, "x"]), TypeError, "'dims_other'"),
    (lambda m: (1, 0), TypeError, r"argument 'dims_self' \(position 3\) must be tuple of ints, not int"),
    (lambda m: ([True], [False]), TypeError, "found element of type bool at pos 0"),
    (lambda m: "ab", RuntimeError, "tensordot expects dims to be int or tuple"),
    (lambda m: 2.0, RuntimeError, "tensordot expects dims to be int or tuple"),
    (lambda m: [1], ValueError, "not enough values to unpack|tensordot expects dims to be int or tuple"),
    (lambda m: -1, RuntimeError, r"tensordot expects dims >= 0, but got dims=-1"),
    (lambda m: 4, RuntimeError, r"tensordot expects dims < ndim_a or ndim_b, but got dims=4"),
    (lambda m: ([1, 2], [0]), RuntimeError, "both dimension lists should have same length"),
    (lambda m: ([1, 1], [0, 0]), RuntimeError, "appears multiple times in the list of dims"),
    (lambda m: ([1, 2], [1, 0]), RuntimeError, "contracted dimensions need to match, but first has size 3 in dim 1 "
                                               "and second has size 4 in dim 1"),
    (lambda m: m.tensor([[1, 2, 3], [0, 1, 2]]), IndexError, r"expected to be in range of \[-3, 2\], but got 3"),
], ids=["4-d tensor", "1-d tensor", "float tensor", "str element", "int halves", "bool elements", "str", "float",
        "one list", "negative", "too many", "unequal lists", "repeated dim", "sizes differ", "dim out of range"])
def test_malformed_tensordot_dims_are_refused_as_pytorch_refuses_them(dims, error, message):
    torch = pytest.importorskip("torch")
    with pytest.raises(error, match=message):
        torch.tensordot(torch.rand(2, 3, 4), torch.rand(3, 4, 5), dims=dims(torch))
    with pytest.raises(error, match=message):
        ember.tensordot(ember.rand(2, 3, 4), ember.rand(3, 4, 5), dims=dims(ember))


def test_a_tensordot_dims_tensor_whose_first_dim_is_not_two_is_a_clean_error():
    """PyTorch asserts (an AssertionError, which no caller catches for bad input); Ember raises a ShapeError."""
    with pytest.raises(ember.dispatch.ShapeError, match="tensordot: dims tensor must have size 2 in first dimension"):
        ember.tensordot(ember.rand(2, 3, 4), ember.rand(3, 4, 5), dims=ember.ones(3, 2, dtype=ember.int64))


@pytest.mark.parametrize("dims", [
    lambda m: m.tensor([[1, 2], [0, 1]]), lambda m: m.tensor(2), lambda m: m.tensor(2.7),
    lambda m: m.tensor([[1], [0]]), lambda m: ([1, 2], [0, 1]), lambda m: ((1,), (0,)),
    lambda m: ([m.tensor(1)], [0]), lambda m: ([], []),
], ids=["2x2 tensor", "0-d tensor", "0-d float tensor", "2x1 tensor", "lists", "tuples", "0-d tensor element",
        "no dims"])
def test_well_formed_tensordot_dims_match_pytorch(dims):
    torch = pytest.importorskip("torch")
    a, b = ember.rand(2, 3, 4), ember.rand(3, 4, 5)
    expected = torch.tensordot(torch.tensor(a.tolist()), torch.tensor(b.tolist()), dims=dims(torch))
    ours = ember.tensordot(a, b, dims=dims(ember))
    assert ours.shape == tuple(expected.shape)
    assert ours.numpy() == pytest.approx(expected.numpy(), rel=1e-5, abs=1e-5)
