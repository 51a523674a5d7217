"""Issue 23's fuzzed op calls: each failure is one of Ember's typed errors, naming the op, shapes, dtypes and
device; allocations that cannot succeed say how many bytes were asked for and where."""
from __future__ import annotations

import pytest

import ember
import ember.nn.functional as F
from ember.dispatch import OPS
from ember.dispatch.execution import plan
from ember.dispatch.schema.errors import (DtypeError, EmberError, NumberOverflowError, OutOfMemoryError,
                                          OutOfRangeError, ShapeError)
from ember.dispatch.execution.memory import ADDRESSABLE, result_bytes
from ember.dispatch.schema.overflow import fits

OPERAND = "tensor(shape=(2, 3), dtype=float32, device=cpu)"


def _x():
    return ember.arange(6.0).reshape(2, 3)


# -- the error types -------------------------------------------------------------------------------------

def test_typed_errors_are_the_builtin_kinds_pytorch_raises():
    assert issubclass(OutOfRangeError, IndexError) and issubclass(OutOfRangeError, EmberError)
    assert issubclass(OutOfMemoryError, RuntimeError) and not issubclass(OutOfMemoryError, MemoryError)
    assert all(issubclass(NumberOverflowError, kind) for kind in (RuntimeError, ValueError, OverflowError))
    assert ember.OutOfMemoryError is OutOfMemoryError and ember.cuda.OutOfMemoryError is OutOfMemoryError
    assert ember.OutOfRangeError is OutOfRangeError and ember.NumberOverflowError is NumberOverflowError


# -- out-of-range dims -----------------------------------------------------------------------------------

DIM_CALLS = {
    "chunk": lambda x: x.chunk(2, 5),
    "split": lambda x: x.split(1, 5),
    "select": lambda x: x.select(5, 0),
    "unflatten": lambda x: x.unflatten(5, (1, 2)),
    "sum": lambda x: x.sum(5),
    "cumsum": lambda x: ember.cumsum(x, 5),
    "softmax": lambda x: ember.softmax(x, 5),
    "index_select": lambda x: ember.index_select(x, 5, ember.tensor([0])),
    "gather": lambda x: ember.gather(x, 5, ember.zeros(2, 3, dtype=ember.int64)),
    "transpose": lambda x: x.transpose(0, 5),
    "squeeze": lambda x: x.squeeze(5),
}


@pytest.mark.parametrize("name", list(DIM_CALLS))
def test_dim_out_of_range_is_pytorchs_index_error_naming_op_and_operand(name):
    with pytest.raises(OutOfRangeError) as info:
        DIM_CALLS[name](_x())
    message = str(info.value)
    assert message.startswith(f"{name}: dim 5 is out of range")
    assert "Dimension out of range (expected to be in range of [-2, 1], but got 5)" in message
    assert OPERAND in message


@pytest.mark.parametrize("method", ["size", "stride"])
def test_size_and_stride_of_a_missing_dim(method):
    with pytest.raises(OutOfRangeError, match=r"size: dim 5 is out of range|stride: dim 5 is out of range"):
        getattr(_x(), method)(5)
    with pytest.raises(OutOfRangeError, match=f"{method}: Dimension specified as 0 but tensor has no dimensions"):
        getattr(ember.tensor(1.0), method)(0)
    assert getattr(_x(), method)(-1) == (3 if method == "size" else 1)


@pytest.mark.parametrize("name,error", [("chunk", ShapeError), ("split", ShapeError), ("select", OutOfRangeError),
                                        ("unflatten", ShapeError)])
def test_ops_taking_a_dims_length_refuse_0d_tensors(name, error):
    calls = {"chunk": lambda s: s.chunk(2, 0), "split": lambda s: s.split(1, 0), "select": lambda s: s.select(0, 0),
             "unflatten": lambda s: s.unflatten(0, (1,))}
    with pytest.raises(error, match=f"{name}: expects at least a 1-dimensional tensor.*shape=\\(\\)"):
        calls[name](ember.tensor(3.0))


def test_select_index_out_of_range_is_checked_by_the_schema_once_per_plan():
    x = _x()
    with pytest.raises(OutOfRangeError, match=r"select\(\): index 3 out of range for dimension 1 of size 3"):
        x.select(1, 3)
    assert x.select(1, -1).tolist() == [2.0, 5.0]
    assert x[-1].tolist() == [3.0, 4.0, 5.0]


# -- the *_copy ops name themselves, not the view whose checks they borrow ----------------------------------

#: one refused call per copy op, each failing in the check that the copy borrows from its view where it has one
COPY_CALLS = {
    "alias_copy": lambda: ember.alias_copy("not a tensor"),
    "as_strided_copy": lambda: ember.as_strided_copy(ember.zeros(4), (5,), (1,)),
    "detach_copy": lambda: ember.detach_copy("not a tensor"),
    "diagonal_copy": lambda: ember.diagonal_copy(ember.zeros(3, 3), 0, 1, 1),
    "expand_copy": lambda: ember.expand_copy(ember.zeros(2, 3), (4, 3)),
    "narrow_copy": lambda: ember.narrow_copy(ember.zeros(4), 0, 2, 5),
    "permute_copy": lambda: ember.permute_copy(ember.zeros(2, 3), (0,)),
    "select_copy": lambda: ember.select_copy(ember.zeros(2, 3), 0, 5),
    "slice_copy": lambda: ember.slice_copy(ember.zeros(2, 3), 0, 0, 2, 0),
    "split_copy": lambda: ember.split_copy(ember.zeros(4), -1),
    "split_with_sizes_copy": lambda: ember.split_with_sizes_copy(ember.zeros(4), [1, 2]),
    "squeeze_copy": lambda: ember.squeeze_copy(ember.zeros(2, 3), 5),
    "t_copy": lambda: ember.t_copy(ember.zeros(2, 3, 4)),
    "transpose_copy": lambda: ember.transpose_copy(ember.zeros(2, 3), 0, 5),
    "view_as_complex_copy": lambda: ember.view_as_complex_copy(ember.zeros(2, 3)),
    "view_as_real_copy": lambda: ember.view_as_real_copy(ember.zeros(2, 3)),
    "unbind_copy": lambda: ember.unbind_copy(ember.tensor(1.0)),
    "unfold_copy": lambda: ember.unfold_copy(ember.zeros(5), 0, 9, 1),
    "unsqueeze_copy": lambda: ember.unsqueeze_copy(ember.zeros(2, 3), 5),
    "view_copy": lambda: ember.view_copy(ember.zeros(2, 3), (4, 4)),
}


def _copy_ops() -> list:
    """The copy ops of the schema (the view category's ``*_copy``)."""
    return sorted(op.name for op in OPS.values() if op.category == "view" and op.name.endswith("_copy"))


@pytest.mark.parametrize("name", _copy_ops())
def test_a_copy_op_names_itself_in_its_errors(name):
    assert name in COPY_CALLS, f"{name}: add a refused call of it to COPY_CALLS"
    with pytest.raises((EmberError, TypeError, ValueError, IndexError)) as info:
        COPY_CALLS[name]()
    assert name in str(info.value), f"{name}'s error does not name it: {info.value}"


# -- impossible allocations ------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: ember.ones(10 ** 12), lambda: ember.zeros(10 ** 6, 10 ** 6),
                                  lambda: ember.empty(10 ** 13), lambda: ember.full((10 ** 12,), 1.0)],
                         ids=["ones", "zeros", "empty", "full"])
def test_terabytes_raise_out_of_memory_with_bytes_and_device(make):
    with pytest.raises(OutOfMemoryError) as info:
        make()
    message = str(info.value)
    assert "out of memory on cpu" in message or "cannot allocate" in message
    assert any(f"{n} bytes" in message for n in (4 * 10 ** 12, 40 * 10 ** 12)), message


@pytest.mark.parametrize("size", [2 ** 62, 2 ** 70, 10 ** 30])
def test_more_than_addressable_is_refused_before_the_backend_sees_it(size):
    with pytest.raises(OutOfMemoryError, match=f"ones: cannot allocate {size * 4} bytes .* on cpu .* "
                                               f"more than the {ADDRESSABLE} bytes"):
        ember.ones(size)


def test_a_huge_result_of_another_op_is_out_of_memory_too():
    row, column = ember.ones(10 ** 6, 1), ember.ones(1, 10 ** 6)
    with pytest.raises(OutOfMemoryError, match=r"add: out of memory on cpu: tried to allocate 4000000000000 bytes"):
        ember.add(row, column, alpha=2)
    huge = ember.ones(1).expand(2 ** 40)  # a view allocates nothing
    assert huge.shape == (2 ** 40,)
    with pytest.raises(OutOfMemoryError, match=r"clone: out of memory on cpu: tried to allocate 4398046511104 bytes "
                                               r"\(4.00 TiB\)"):
        huge.clone()
    with pytest.raises(ShapeError, match=r"expand: a result of shape \(4611686018427387904,\) and dtype float32 "
                                         r"cannot be represented"):
        ember.ones(1).expand(2 ** 62)


def test_an_empty_shape_no_array_can_index_is_a_shape_error():
    with pytest.raises(ShapeError, match=r"empty: a result of shape \(0, 4611686018427387904\)"):
        ember.empty(0, 2 ** 62)
    assert ember.empty(0, 2 ** 20).shape == (0, 2 ** 20)


def test_result_bytes_sums_outputs():
    assert result_bytes((2, 3), ember.float32) == 24
    assert result_bytes(((2, 3), (2, 3)), (ember.float32, ember.int64)) == 24 + 48
    assert result_bytes((None, 2), ember.int64) == 0  # sizes known only after running


# -- class indices, index ranks, index values -------------------------------------------------------------

@pytest.mark.parametrize("loss", [F.cross_entropy, F.nll_loss])
@pytest.mark.parametrize("bad", [7, -3])
def test_class_index_out_of_range(loss, bad):
    with pytest.raises(OutOfRangeError, match=f"Target {bad} is out of bounds.*dtype=int64, device=cpu"):
        loss(ember.randn(4, 5), ember.tensor([0, 1, bad, 2]))


def test_class_index_equal_to_ignore_index_is_not_out_of_range():
    loss = F.cross_entropy(ember.randn(3, 5), ember.tensor([0, -100, 4]))
    assert loss.shape == ()


@pytest.mark.parametrize("call,words", [
    (lambda: ember.gather(_x(), 1, ember.tensor([0, 1])), "same number of dimensions as input tensor"),
    (lambda: _x().scatter(1, ember.tensor([0, 1]), ember.ones(2, 3)), "same number of dimensions as self tensor"),
], ids=["gather", "scatter"])
def test_index_rank_mismatch(call, words):
    with pytest.raises(ShapeError, match=f"Index tensor must have the {words}") as info:
        call()
    assert OPERAND in str(info.value) and "shape=(2,), dtype=int64" in str(info.value)


@pytest.mark.parametrize("index", [[0, 5], [0, -1], [-3]])
def test_index_select_takes_only_indices_in_range(index):
    with pytest.raises(OutOfRangeError, match=r"index_select: index -?\d is out of bounds for dim 1 with size 3 "
                                              r"\(expected 0..2"):
        ember.index_select(_x(), 1, ember.tensor(index))
    assert ember.index_select(_x(), 1, ember.tensor([2, 0])).tolist() == [[2.0, 0.0], [5.0, 3.0]]


# -- Python numbers that do not fit ---------------------------------------------------------------------

@pytest.mark.parametrize("data", [2 ** 63, -2 ** 63 - 1, [1, 2 ** 63], [[1], [2 ** 70]], [True, 2 ** 64]])
def test_tensor_of_an_int_beyond_int64(data):
    with pytest.raises(NumberOverflowError, match="tensor: value cannot be converted to type int64 without overflow"):
        ember.tensor(data)


def test_tensor_edges_of_int64_and_floats_among_big_ints():
    assert ember.tensor([2 ** 63 - 1, -2 ** 63]).tolist() == [2 ** 63 - 1, -2 ** 63]
    mixed = ember.tensor([1.0, 2 ** 64])
    assert mixed.dtype is ember.float32 and mixed.tolist() == [1.0, float(2 ** 64)]
    assert ember.tensor(2 ** 64, dtype=ember.float64).item() == float(2 ** 64)
    with pytest.raises(NumberOverflowError, match="too large for float64"):
        ember.tensor([1.0, 2 ** 2000])


def test_tensor_with_an_integer_dtype_too_small_for_the_data():
    with pytest.raises(NumberOverflowError, match=r"int8 without overflow: 300 is outside -128..127"):
        ember.tensor([1, 300], dtype=ember.int8)
    assert ember.tensor([-1, 255], dtype=ember.uint8).tolist() == [255, 255]  # negatives wrap, as in PyTorch


@pytest.mark.parametrize("store", [
    lambda y, v: y.__setitem__(0, v), lambda y, v: y.__setitem__(slice(None), v), lambda y, v: y.fill_(v),
    lambda y, v: y.__setitem__(ember.tensor([True, False, True]), v),
    lambda y, v: y.masked_fill(ember.tensor([True, False, True]), v),
    lambda y, v: ember.full((2,), v, dtype=y.dtype),
], ids=["item", "slice", "fill_", "mask", "masked_fill", "full"])
@pytest.mark.parametrize("dtype,value", [(ember.int8, 300), (ember.int8, -129), (ember.uint8, 256),
                                         (ember.int32, 2 ** 31), (ember.int64, 2 ** 63), (ember.int16, 1e10),
                                         (ember.int32, float("nan"))])
def test_storing_a_number_the_integer_dtype_cannot_hold(store, dtype, value):
    y = ember.zeros(3, dtype=dtype)
    with pytest.raises(NumberOverflowError, match=f"value cannot be converted to type {dtype.name} without overflow"):
        store(y, value)
    assert y.tolist() == [0, 0, 0]


def test_the_storing_rule():
    assert fits(-128, ember.int8) and not fits(128, ember.int8)
    assert fits(-255, ember.uint8) and not fits(-256, ember.uint8) and not fits(-1.0, ember.uint8)
    assert fits(2 ** 64, ember.bool) and fits(1e300, ember.float32) and not fits(2 ** 1100, ember.float64)
    y = ember.zeros(2, dtype=ember.int8)
    y[0] = 127
    y += 300  # arithmetic wraps; only stores are checked
    assert y.dtype is ember.int8


# -- vague errors in the loss functions -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss", "kl_div",
                                  "cross_entropy"])
def test_bogus_reduction_names_the_loss(name):
    target = ember.tensor([1, 0, 2]) if name == "cross_entropy" else ember.rand(3)
    with pytest.raises(ValueError, match=f"{name}: bogus is not a valid value for reduction"):
        getattr(F, name)(ember.rand(3) if name != "cross_entropy" else ember.rand(3, 4), target, reduction="bogus")


def test_binary_cross_entropy_size_mismatch_names_function_shapes_and_dtypes():
    with pytest.raises(ShapeError) as info:
        F.binary_cross_entropy(ember.rand(3), ember.rand(4, dtype=ember.float64))
    message = str(info.value)
    assert message.startswith("binary_cross_entropy: Using a target size (ember.Size([4])) that is different to "
                              "the input size (ember.Size([3])) is deprecated.")
    assert "dtype=float32" in message and "dtype=float64" in message
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits: Target size \(ember.Size\(\[4\]\)\) must "
                                         r"be the same as input size \(ember.Size\(\[3\]\)\)"):
        ember.nn.BCEWithLogitsLoss()(ember.rand(3), ember.rand(4))


# -- calls accepted where PyTorch rejects them ------------------------------------------------------------

def test_t_of_more_than_two_dims():
    with pytest.raises(ShapeError, match=r"t: t\(\) expects a tensor with <= 2 dimensions, but self is 4D"):
        ember.randn(2, 3, 4, 5).t()
    assert ember.t(_x()).tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert ember.arange(3).t().tolist() == [0, 1, 2] and ember.tensor(1.0).t().shape == ()


@pytest.mark.parametrize("call,words", [
    (lambda b, i: b - b, "with two bool tensors"), (lambda b, i: b - True, "with two bool tensors"),
    (lambda b, i: b - 1, "with a bool tensor"), (lambda b, i: 1 - b, "with a bool tensor"),
    (lambda b, i: i - b, "with a bool tensor"), (lambda b, i: i - True, "with a bool tensor"),
    (lambda b, i: b.clone().sub_(b), "with two bool tensors"),
], ids=["b-b", "b-True", "b-1", "1-b", "i-b", "i-True", "sub_"])
def test_bool_subtraction(call, words):
    with pytest.raises(DtypeError, match=f"sub: Subtraction, the `-` operator, {words} is not supported"):
        call(ember.tensor([True, False]), ember.tensor([1, 2]))


def test_subtraction_of_numbers_still_works_on_the_fast_path():
    i = ember.tensor([1, 2])
    assert (i - 1).tolist() == [0, 1] and (3 - i).tolist() == [2, 1] and (i - i).tolist() == [0, 0]


@pytest.mark.parametrize("name", ["permute", "expand", "view", "reshape", "repeat"])
def test_size_methods_need_their_sizes(name):
    with pytest.raises(TypeError, match=f"{name}\\(\\) missing 1 required positional arguments"):
        getattr(_x(), name)()
    assert ember.tensor(1.0).permute(()).shape == () and _x().permute(dims=(1, 0)).shape == (3, 2)


@pytest.mark.parametrize("input,target", [(ember.tensor([1, 2]), ember.tensor([1, 2])),
                                          (ember.tensor([0.5, 0.5]), ember.tensor([1, 2])),
                                          (ember.tensor([1, 2]), ember.tensor([0.5, 0.5]))],
                         ids=["both", "target", "input"])
def test_kl_div_on_integers(input, target):
    with pytest.raises(DtypeError, match="kl_div: Integral inputs not supported"):
        F.kl_div(input, target, reduction="sum")


@pytest.mark.parametrize("low,high", [("t", 1.0), (0.0, "t")])
def test_clamp_with_a_tensor_bound_and_a_number_bound(low, high):
    x = ember.tensor([-1.0, 0.5, 2.0])
    bound = ember.zeros(3)
    low, high = (bound if v == "t" else v for v in (low, high))
    for call in (lambda: ember.clamp(x, low, high), lambda: x.clamp(min=low, max=high),
                 lambda: x.clone().clamp_(low, high), lambda: ember.clip(x, low, high)):
        with pytest.raises(TypeError, match="clamp\\(\\): min and max must both be numbers or both be tensors"):
            call()
    assert ember.clamp(x, ember.tensor(0.0), 1.0).tolist() == [0.0, 0.5, 1.0]  # a 0-d tensor is a number
    assert ember.clamp(x, bound, None).tolist() == [0.0, 0.5, 2.0]


# -- the hot path -----------------------------------------------------------------------------------------

def test_checks_run_at_validation_not_on_every_call():
    plan.clear()
    x = _x()
    first = x.select(1, 2)
    plans = len(plan.table)
    for _ in range(3):
        x.select(1, 2)
    assert len(plan.table) == plans and first.tolist() == [2.0, 5.0]
    assert not any(p.validates_every_call for p in plan.cached("select") + plan.cached("full"))


# -- what kernels raise, typed in one place (both the validated path and the fast path) ---------------------

def test_a_python_int_beyond_int64_in_integer_arithmetic():
    x = ember.ones(2, dtype=ember.int64)
    for _ in range(2):  # the second call runs through the elementwise fast path's cached plan
        assert (x * 5).tolist() == [5, 5]
        with pytest.raises(NumberOverflowError, match="mul: Overflow when unpacking long.*int64"):
            x * 2 ** 70
    assert (ember.ones(2) * 2 ** 70).tolist() == [2.0 ** 70] * 2  # floats take it, as in PyTorch


def test_integer_division_by_zero_is_a_typed_zero_division_error():
    from ember.dispatch.schema.errors import DivisionByZeroError

    x = ember.tensor([4, 5])
    for call in (lambda: x // 0, lambda: ember.remainder(x, 0), lambda: x.div(ember.zeros(2, dtype=ember.int64),
                                                                              rounding_mode="trunc")):
        with pytest.raises(DivisionByZeroError, match="integer division by zero") as caught:
            call()
        assert isinstance(caught.value, ZeroDivisionError) and isinstance(caught.value, RuntimeError)


def test_an_op_called_with_numbers_only_needs_a_tensor():
    """Except add, sub, mul, div and floor_divide, which PyTorch lets take two numbers (a 0-d result)."""
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        ember.maximum(2, 3)
    assert ember.mul(2, 3).item() == 6 and ember.mul(2, 3).dtype is ember.int64
    assert ember.div(3, 2).item() == 1.5 and ember.sub(1, 2.5).item() == -1.5
    with pytest.raises(TypeError, match=r"layer_norm\(\): argument 'input' \(position 1\) must be Tensor"):
        F.layer_norm(0.0, [], None, ember.zeros(()))
    assert ember.mul(ember.tensor(2), 3).item() == 6


def test_expand_to_a_negative_size():
    with pytest.raises(ShapeError, match="expand: the size -2 at dim 0 is negative"):
        ember.ones(1).expand(-2)
