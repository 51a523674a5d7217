"""The CPU's bfloat16 paths: bfloat16 is storage-only there (kernel calls compute in float32), to_dtype rounds
float32 to it in one vectorized loop, and some kernels bring their own bfloat16 forms (one-pass loops, or data
moved as stored). Each is checked bit for bit against the float32 road: widen with ml_dtypes, compute in
float32 with NumPy, round with ml_dtypes."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatch import OPS, bfloat16, registry
from ember.dispatch.execution.storage_dtypes import through_float32
from ember.dispatch.ops import F as ops

ml_dtypes = pytest.importorskip("ml_dtypes")
pytest.importorskip("numba")

BF16 = np.dtype(ml_dtypes.bfloat16)
CPU = registry.get_backend("cpu")


def _awkward_float32(shape: tuple, seed: int = 0) -> np.ndarray:
    """Random values over many binades, with NaNs (payloads of both signs), infinities, signed zeros,
    subnormals, the largest finite value and exact ties between two bfloat16 neighbours."""
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(shape) * np.exp2(rng.integers(-30, 30, shape))).astype(np.float32)
    bits = np.array([0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000,
                     0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F808000, 0x3F818000, 0x3F808001,
                     0xBF818000, 0x7F7F8000], np.uint32)
    flat = values.reshape(-1)
    flat[:bits.size] = bits[:flat.size].view(np.float32)
    return values


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16)


def _road(function, *operands) -> np.ndarray:
    """``function`` computed the float32 way: bfloat16 operands widened, the result rounded by ml_dtypes."""
    wide = [o.astype(np.float32) if isinstance(o, np.ndarray) else o for o in operands]
    with np.errstate(all="ignore"):
        return np.asarray(function(*wide)).astype(BF16)


def _same_bits(ours: np.ndarray, expected: np.ndarray) -> None:
    """Equal bits, where any NaN equals any other: IEEE leaves open which operand's NaN a sum of two NaNs
    returns, and a compiled loop may add in the other order."""
    assert ours.dtype == BF16 and ours.shape == expected.shape
    canonical = [np.where(np.isnan(a.astype(np.float32)), np.uint16(0x7FC0), _bits(a)) for a in (ours, expected)]
    np.testing.assert_array_equal(*canonical)


def test_bfloat16_is_storage_only_on_the_cpu():
    assert CPU.storage_only_dtypes(CPU.default_index()) == frozenset({bfloat16})


def test_rounding_matches_ml_dtypes_bit_for_bit():
    values = _awkward_float32((64, 65))  # above the size from which the loop rounds
    ours = ember.tensor(values).to(ember.bfloat16)
    _same_bits(ours.numpy(), values.astype(BF16))
    np.testing.assert_array_equal(ours.float().numpy().view(np.uint32), values.astype(BF16).astype(np.float32)
                                  .view(np.uint32))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "permuted", "sliced", "small"])
def test_rounding_keeps_the_memory_layout(layout):
    values = _awkward_float32((8, 48, 40), seed=1)
    array = {"contiguous": values, "transposed": values.T, "permuted": values.transpose(1, 0, 2),
             "sliced": values[:, ::2], "small": values[:2, :3]}[layout]
    ours = CPU.kernels["to_dtype"](array, bfloat16)
    expected = array.astype(BF16)
    assert ours.strides == expected.strides
    np.testing.assert_array_equal(ours.view(np.uint16), expected.view(np.uint16))


def test_masks_become_zeros_and_ones():
    mask = np.random.default_rng(2).random((3, 5, 7)) < 0.5
    ours = CPU.kernels["to_dtype"](mask[:, ::2], bfloat16)
    np.testing.assert_array_equal(ours.astype(np.float32), mask[:, ::2].astype(np.float32))
    assert ours.dtype == BF16


def _pair(shape: tuple = (40, 70)) -> tuple:
    a = ember.tensor(_awkward_float32(shape, seed=3)).bfloat16()
    b = ember.tensor(_awkward_float32(shape, seed=4)[::-1].copy()).bfloat16()
    return a, b


ARITHMETIC = [
    ("add", lambda a, b: a + b, np.add),
    ("add alpha", lambda a, b: ember.add(a, b, alpha=0.3), lambda a, b: a + b * np.float32(0.3)),
    ("sub", lambda a, b: a - b, np.subtract),
    ("sub alpha", lambda a, b: ember.sub(a, b, alpha=3), lambda a, b: a - b * np.float32(3)),
    ("mul", lambda a, b: a * b, np.multiply),
    ("div", lambda a, b: a / b, np.divide),
    ("add number", lambda a, b: a + 0.1, lambda a, b: a + np.float32(0.1)),
    ("sub number", lambda a, b: a - 3, lambda a, b: a - np.float32(3)),
    ("mul number", lambda a, b: a * 1.00390625, lambda a, b: a * np.float32(1.00390625)),
    ("number mul", lambda a, b: 0.7 * a, lambda a, b: np.float32(0.7) * a),
    ("div number", lambda a, b: a / 3.0, lambda a, b: a / np.float32(3.0)),
    ("relu", lambda a, b: ember.relu(a), lambda a, b: np.maximum(a, np.float32(0))),
    ("threshold_backward", lambda a, b: ops.threshold_backward(a, b, 0.25),
     lambda a, b: (b > np.float32(0.25)).astype(np.float32) * a),
]


@pytest.mark.parametrize("name, ours, numpy", ARITHMETIC, ids=[case[0] for case in ARITHMETIC])
def test_one_pass_loops_match_the_float32_road(name, ours, numpy, monkeypatch):
    loops = __import__("ember.backends.cpu.bfloat16_loops", fromlist=["_"])
    ran = []
    for loop in ("add", "add_number", "mul", "mul_number", "div", "div_number", "relu", "threshold_backward"):
        compiled = getattr(loops, loop)
        monkeypatch.setattr(loops, loop, lambda *args, compiled=compiled, loop=loop: (ran.append(loop),
                                                                                      compiled(*args))[1])
    a, b = _pair()
    result = ours(a, b)
    assert result.dtype is ember.bfloat16
    _same_bits(result.numpy(), _road(numpy, a.numpy(), b.numpy()))
    assert ran, f"{name} took the float32 road, not its loop"


@pytest.mark.parametrize("case", ["broadcast", "strided", "number first", "floor division"])
def test_calls_the_loops_do_not_take_compute_in_float32(case):
    a, b = _pair((6, 8))
    if case == "broadcast":
        result, expected = a * b[0], _road(np.multiply, a.numpy(), b.numpy()[0])
    elif case == "strided":
        result, expected = a.t() + b.t(), _road(np.add, a.numpy().T, b.numpy().T)
    elif case == "number first":
        result, expected = 2.0 - a, _road(lambda x: np.float32(2.0) - x, a.numpy())
    else:
        result, expected = ember.div(a, b, rounding_mode="floor"), _road(np.floor_divide, a.numpy(), b.numpy())
    assert result.dtype is ember.bfloat16
    _same_bits(result.numpy(), expected)


@pytest.mark.parametrize("dims", [(0, 1), (0,), 0, (1, 2), (0, 2), (-1,), None, (1,)], ids=str)
def test_sums_around_kept_dims_read_bfloat16_and_add_in_float32(dims, monkeypatch):
    loops = __import__("ember.backends.cpu.bfloat16_loops", fromlist=["_"])
    ran = []
    for loop in ("sum_rows", "sum_around"):
        compiled = getattr(loops, loop)
        monkeypatch.setattr(loops, loop, lambda *args, compiled=compiled: (ran.append(1), compiled(*args))[1])
    x = ember.tensor(np.random.default_rng(5).standard_normal((6, 40, 24)).astype(np.float32)).bfloat16()
    ours = x.sum() if dims is None else x.sum(dims)
    wide = x.numpy().astype(np.float64)
    exact = wide.sum() if dims is None else wide.sum(dims)
    assert ours.dtype is ember.bfloat16 and ours.shape == np.shape(exact)
    np.testing.assert_allclose(ours.float().numpy(), exact, rtol=2 ** -8, atol=1e-6)  # within bfloat16's rounding
    assert bool(ran) == (dims != (1,)), "a sum around one block of kept dims runs the loop, others widen"
    kept = x.sum(dims, keepdim=True, dtype=ember.float32) if dims is not None else None
    if kept is not None:
        assert kept.dtype is ember.float32
        np.testing.assert_allclose(kept.numpy(), wide.sum(dims, keepdims=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 2, 1), (3, 1, 1)])
def test_max_pooling_reads_bfloat16_bits_and_matches_the_float32_road(kernel, stride, padding, monkeypatch):
    widened = []
    cast = CPU.kernels["to_dtype"]
    monkeypatch.setitem(CPU.kernels, "to_dtype", lambda a, dtype: (widened.append(a.shape), cast(a, dtype))[1])
    ember.dispatch.clear_plans()  # plans made before hold the unwatched cast
    values = _awkward_float32((2, 3, 9, 7), seed=6)
    values[values > 1e30] = 1.0  # infinities and NaNs kept; only the huge finite ones go
    x = ember.tensor(values).bfloat16().requires_grad_()
    out = ember.nn.functional.max_pool2d(x, kernel, stride, padding)
    grad = ember.tensor(_awkward_float32(tuple(out.shape), seed=7)).bfloat16()
    out.backward(grad)
    assert widened == [(2, 3, 9, 7), tuple(out.shape)]  # only the two casts this test makes
    wide = ember.tensor(x.detach().float().numpy()).requires_grad_()
    reference = ember.nn.functional.max_pool2d(wide, kernel, stride, padding)
    reference.backward(grad.float())
    _same_bits(out.detach().numpy(), reference.detach().numpy().astype(BF16))
    _same_bits(x.grad.numpy(), wide.grad.numpy().astype(BF16))
    ember.dispatch.clear_plans()


def test_data_moving_kernels_run_on_bfloat16_as_stored():
    from ember.backends.cpu.bfloat16_kernels import MOVES_ELEMENTS
    for name in MOVES_ELEMENTS:
        kernel = CPU.kernels[name]
        assert kernel.for_storage_dtypes(None) is kernel, name
    a, b = _pair((3, 4))
    _same_bits(ember.cat([a, b], 1).numpy(), np.concatenate([a.numpy(), b.numpy()], 1))
    _same_bits(a.clone().numpy(), a.numpy())
    _same_bits(ember.where(a > 0, a, b).numpy(), np.where(a.numpy() > 0, a.numpy(), b.numpy()))


def test_full_ones_and_zeros_fill_the_rounded_value():
    for value in (0, 1.7, -np.inf, 1.00390625):
        ours = ember.full((5, 3), value, dtype=ember.bfloat16).numpy()
        _same_bits(ours, np.full((5, 3), value, BF16))
    assert ember.full((), 2.5, dtype=ember.bfloat16).item() == 2.5
    _same_bits(ember.ones(2, 3, dtype=ember.bfloat16).numpy(), np.ones((2, 3), BF16))
    _same_bits(ember.zeros(4, dtype=ember.bfloat16).numpy(), np.zeros(4, BF16))


def test_a_kernels_own_form_replaces_the_float32_road():
    """The dispatcher's hook: ``for_storage_dtypes`` receives the float32 road and returns what the plan runs."""
    received = []

    def kernel(a, b):
        raise AssertionError("the float32 kernel is reached only through the road")

    def own_form(widened):
        received.append(widened)
        return lambda a, b: "own"
    kernel.for_storage_dtypes = own_form
    x = ember.zeros(2, dtype=ember.bfloat16)
    run = through_float32(OPS["mul"], kernel, [x, x], bfloat16, bfloat16, frozenset({bfloat16}),
                          CPU.kernels["to_dtype"])
    assert run(None, None) == "own"
    assert received[0].__wrapped__ is kernel
    assert through_float32(OPS["mul"], kernel, [x, x], bfloat16, bfloat16, frozenset(), None) is None
