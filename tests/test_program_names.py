"""The names PyTorch programs reach for, checked against PyTorch: comparisons, Tensor methods,
legacy constructors and types, and formatting of tensors."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def as_torch(t: ember.Tensor):
    """The same values as a torch tensor (bfloat16 through float32, which NumPy lacks)."""
    if t.dtype is ember.bfloat16:
        return torch.from_numpy(np.array(t.float().tolist(), dtype=np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(t.tolist(), dtype=t.dtype.name if t.dtype is not ember.bool else np.bool_))


def same(e: ember.Tensor, t) -> None:
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).removeprefix("torch."), (e.dtype, t.dtype)
    np.testing.assert_array_equal(np.array(e.float().tolist() if e.dtype is ember.bfloat16 else e.tolist()),
                                  np.array(t.float().tolist() if t.dtype == torch.bfloat16 else t.tolist()))


# -- isclose, allclose, equal -----------------------------------------------------------------------

CLOSENESS_VALUES = [1.0, 1.0 + 1e-6, 1.001, 100.0, 100.05, 0.0, 1e-9, -2.5, NAN, INF, -INF]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("tolerances", [{}, {"rtol": 1e-3, "atol": 0.0}, {"rtol": 0.0, "atol": 0.1},
                                        {"rtol": 0.0, "atol": 0.0}, {"equal_nan": True}])
def test_isclose_matches_torch_on_floats(dtype, tolerances):
    a = np.array(CLOSENESS_VALUES)
    pairs = np.array(np.meshgrid(a, a)).reshape(2, -1)
    x = ember.tensor(pairs[0], dtype=getattr(ember, dtype))
    y = ember.tensor(pairs[1], dtype=getattr(ember, dtype))
    same(ember.isclose(x, y, **tolerances), torch.isclose(as_torch(x), as_torch(y), **tolerances))
    assert ember.allclose(x, y, **tolerances) == torch.allclose(as_torch(x), as_torch(y), **tolerances)
    same(x.isclose(y, **tolerances), torch.isclose(as_torch(x), as_torch(y), **tolerances))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "bool"])
def test_isclose_matches_torch_on_integers_and_bools(dtype):
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.integers(0, 2 if dtype == "bool" else 6, 40), dtype=getattr(ember, dtype))
    y = ember.tensor(rng.integers(0, 2 if dtype == "bool" else 6, 40), dtype=getattr(ember, dtype))
    for tolerances in ({}, {"rtol": 0.0, "atol": 1.0}, {"rtol": 0.5, "atol": 0.0}):
        same(ember.isclose(x, y, **tolerances), torch.isclose(as_torch(x), as_torch(y), **tolerances))


def test_isclose_broadcasts_and_checks_like_torch():
    x, y = ember.tensor([[1.0], [2.0]]), ember.tensor([1.0, 2.0, 2.000001])
    same(ember.isclose(x, y), torch.isclose(as_torch(x), as_torch(y)))
    assert ember.allclose(ember.ones(2), ember.ones(2, 1)) is True
    with pytest.raises(ember.DtypeError, match="isclose.*float32.*float64"):
        ember.isclose(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="rtol must be greater than or equal to zero"):
        ember.isclose(ember.ones(2), ember.ones(2), rtol=-1.0)
    with pytest.raises(ember.ShapeError):
        ember.allclose(ember.ones(2), ember.ones(3))
    with pytest.raises(TypeError, match="other must be a tensor"):
        ember.isclose(ember.ones(2), 1.0)


def test_equal_matches_torch():
    cases = [(ember.ones(2), ember.ones(2)), (ember.ones(2), ember.ones(2, dtype=ember.int64)),
             (ember.ones(2), ember.ones(1)), (ember.tensor([NAN]), ember.tensor([NAN])),
             (ember.tensor([1, 2]), ember.tensor([1, 3])), (ember.zeros(0), ember.zeros(0))]
    for a, b in cases:
        assert ember.equal(a, b) == torch.equal(as_torch(a), as_torch(b))
        assert a.equal(b) == torch.equal(as_torch(a), as_torch(b))
    with pytest.raises(TypeError, match="equal"):
        ember.equal(ember.ones(2), 1)


# -- narrow, new_*, repeat, clip --------------------------------------------------------------------

def test_narrow_matches_torch_and_is_a_view():
    e, t = ember.arange(12.0).view(3, 4), torch.arange(12.0).view(3, 4)
    for args in [(1, 1, 2), (1, -1, 1), (0, 0, 3), (1, 4, 0), (-1, 2, 2)]:
        same(e.narrow(*args), t.narrow(*args))
        same(ember.narrow(e, *args), torch.narrow(t, *args))
    same(e.narrow(1, ember.tensor(1), 2), t.narrow(1, torch.tensor(1), 2))
    view = e.narrow(1, 1, 2)
    view.fill_(-1.0)
    assert e[0].tolist() == [0.0, -1.0, -1.0, 3.0]
    for args, error in [((1, 3, 2), RuntimeError), ((2, 0, 1), IndexError), ((1, -5, 1), IndexError),
                        ((1, 0, -1), RuntimeError)]:
        with pytest.raises(error):
            t.narrow(*args)
        with pytest.raises(error, match="narrow"):
            e.narrow(*args)
    with pytest.raises(RuntimeError, match="0-dim"):
        ember.tensor(1.0).narrow(0, 0, 1)


def test_new_creators_take_dtype_and_device_from_self():
    e, t = ember.ones(2, dtype=ember.float64), torch.ones(2, dtype=torch.float64)
    same(e.new_zeros(2, 3), t.new_zeros(2, 3))
    same(e.new_zeros((2, 3), dtype=ember.int32), t.new_zeros((2, 3), dtype=torch.int32))
    same(e.new_ones([2]), t.new_ones([2]))
    same(e.new_zeros(size=(2,)), t.new_zeros(size=(2,)))
    same(e.new_full((2,), 3), t.new_full((2,), 3))
    same(e.new_full((2,), 3, dtype=ember.int64), t.new_full((2,), 3, dtype=torch.int64))
    assert e.new_empty(2, 3).shape == (2, 3) and e.new_empty(2, 3).dtype is ember.float64
    assert e.new_empty((2, 3), requires_grad=True).requires_grad
    same(e.new_tensor([1, 2]), t.new_tensor([1, 2]))
    same(e.new_tensor(3), t.new_tensor(3))
    same(ember.ones(2, dtype=ember.int32).new_tensor([1.5]), torch.ones(2, dtype=torch.int32).new_tensor([1.5]))
    source = ember.ones(2, requires_grad=True)
    copied = e.new_tensor(source)
    assert not copied.requires_grad and copied.dtype is ember.float64 and copied.device == e.device


@pytest.mark.parametrize("shape,repeats", [((2, 3), (2, 1)), ((2, 3), (2, 1, 2)), ((3,), (0,)), ((), (3,)),
                                           ((), ()), ((0, 2), (2, 2)), ((2,), (1, 1))])
def test_repeat_matches_torch(shape, repeats):
    e = ember.arange(float(np.prod(shape))).reshape(shape)
    t = torch.arange(float(np.prod(shape))).reshape(shape)
    same(e.repeat(*repeats) if repeats else e.repeat(()), t.repeat(*repeats) if repeats else t.repeat(()))
    same(e.repeat(repeats), t.repeat(repeats))


def test_repeat_copies_differentiates_and_rejects_too_few_repeats():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    out = x.repeat(3, 2)
    out.backward(ember.arange(12.0).view(3, 4))
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    tx.repeat(3, 2).backward(torch.arange(12.0).view(3, 4))
    assert x.grad.tolist() == tx.grad.tolist()
    y = ember.ones(2)
    copy = y.repeat(1)
    copy.fill_(5.0)
    assert y.tolist() == [1.0, 1.0]
    with pytest.raises(ember.ShapeError, match="repeat"):
        ember.ones(2, 2).repeat(2)


def test_clip_is_clamp():
    e, t = ember.arange(12.0).view(3, 4), torch.arange(12.0).view(3, 4)
    same(e.clip(2, 5), t.clip(2, 5))
    same(ember.clip(e, max=3), torch.clip(t, max=3))
    e.clip_(min=4)
    t.clip_(min=4)
    same(e, t)


# -- index_add ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_index_add_matches_torch(dtype):
    rng = np.random.default_rng(1)
    base = rng.integers(-5, 5, (4, 5))
    index = np.array([0, 4, 4, 1, 0, 2])
    source = rng.integers(-5, 5, (4, 6))
    e, t = ember.tensor(base, dtype=getattr(ember, dtype)), torch.tensor(base, dtype=getattr(torch, dtype))
    es, ts = ember.tensor(source, dtype=e.dtype), torch.tensor(source, dtype=t.dtype)
    for alpha in (1, 2, 2.5):
        same(e.index_add(1, ember.tensor(index), es, alpha=alpha),
             t.index_add(1, torch.tensor(index), ts, alpha=alpha))
        same(ember.index_add(e, -1, ember.tensor(index), es, alpha=alpha),
             torch.index_add(t, -1, torch.tensor(index), ts, alpha=alpha))
    result = e.index_add_(1, ember.tensor(index), es)
    t.index_add_(1, torch.tensor(index), ts)
    assert result is e
    same(e, t)


def test_index_add_zero_dim_bool_and_gradients():
    same(ember.zeros(()).index_add(0, ember.tensor([0]), ember.ones(())),
         torch.zeros(()).index_add(0, torch.tensor([0]), torch.ones(())))
    same(ember.zeros(3, dtype=ember.bool).index_add(0, ember.tensor([0, 0]), ember.tensor([True, False])),
         torch.zeros(3, dtype=torch.bool).index_add(0, torch.tensor([0, 0]), torch.tensor([True, False])))
    x, s = ember.zeros(3, requires_grad=True), ember.ones(2, requires_grad=True)
    x.index_add(0, ember.tensor([0, 0]), s, alpha=3).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0] and s.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("args,error,match", [
    ((1, [0, 3], (2, 2)), IndexError, "out of bounds"),
    ((1, [0, -1], (2, 2)), IndexError, "out of bounds"),
    ((1, [0, 1], (2, 3)), ember.OutOfRangeError, "number of indices"),
    ((0, [[0]], (1, 3)), IndexError, "vector"),
    ((1, [0, 1], (3, 2)), ember.OutOfRangeError, "shape except along dim"),
])
def test_index_add_errors(args, error, match):
    dim, index, source_shape = args
    with pytest.raises((RuntimeError, IndexError)):
        torch.zeros(2, 3).index_add(dim, torch.tensor(index), torch.ones(source_shape))
    with pytest.raises(error, match=match):
        ember.zeros(2, 3).index_add(dim, ember.tensor(index), ember.ones(source_shape))


def test_index_add_dtype_errors():
    with pytest.raises(ember.DtypeError, match="index_add.*float64"):
        ember.zeros(2, 3).index_add(1, ember.tensor([0, 1]), ember.ones(2, 2, dtype=ember.float64))
    with pytest.raises(ember.DtypeError, match="index_add.*integer"):
        ember.zeros(2, 3).index_add(1, ember.tensor([0.0, 1.0]), ember.ones(2, 2))


# -- memory facts --------------------------------------------------------------------------------------

def test_data_ptr_storage_offset_nbytes_itemsize():
    e, t = ember.ones(2, 3), torch.ones(2, 3)
    for view_e, view_t in [(e, t), (e[1:], t[1:]), (e[:, 1], t[:, 1]), (e.narrow(1, 2, 1), t.narrow(1, 2, 1)),
                           (e.t(), t.t()), (e.expand(2, 2, 3), t.expand(2, 2, 3))]:
        assert view_e.storage_offset() == view_t.storage_offset()
        assert view_e.nbytes == view_t.nbytes
        assert view_e.itemsize == view_t.itemsize
        assert view_e.data_ptr() - e.data_ptr() == view_t.data_ptr() - t.data_ptr()
    assert ember.ones(2, dtype=ember.float16).itemsize == 2 and ember.ones(3, dtype=ember.int64).nbytes == 24
    assert e.clone().data_ptr() != e.data_ptr()


def test_pin_memory_follows_torch_without_and_with_an_accelerator():
    x = ember.arange(4.0)
    assert x.is_pinned() is False and torch.arange(4.0).is_pinned() is False
    if not ember.accelerator.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            x.pin_memory()
        return
    pinned = x.pin_memory()
    assert pinned.tolist() == x.tolist() and pinned.data_ptr() != x.data_ptr()
    device = ember.accelerator.current_accelerator()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        x.to(device).pin_memory()


def test_apply_and_map_match_torch():
    e, t = ember.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    assert e.apply_(lambda v: v * 2) is e
    t.apply_(lambda v: v * 2)
    same(e, t)
    ei, ti = ember.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    ei.apply_(lambda v: v / 2)
    ti.apply_(lambda v: v / 2)
    same(ei, ti)
    seen = []
    ember.tensor([[1, 2]]).apply_(lambda v: seen.append(type(v)) or v)
    assert seen == [int, int]
    em, tm = ember.ones(2, 3), torch.ones(2, 3)
    assert em.map_(ember.tensor([1.0, 2.0, 3.0]), lambda a, b: a + b) is em
    tm.map_(torch.tensor([1.0, 2.0, 3.0]), lambda a, b: a + b)
    same(em, tm)
    with pytest.raises(TypeError, match=r"map_: expected torch.FloatTensor for 'other' \(got torch.LongTensor\)"):
        ember.ones(3).map_(ember.tensor([1, 2, 3]), lambda a, b: a)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.ones(3).map_(2, lambda a, b: a)
    with pytest.raises(RuntimeError, match="requires grad"):
        ember.ones(3, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(TypeError, match="apply_"):
        ember.tensor([1, 2]).apply_(lambda v: "a")


def test_apply_and_map_are_cpu_only():
    device = ember.accelerator.current_accelerator()
    if device is None:
        pytest.skip("no accelerator backend here")
    x = ember.ones(2).to(device)
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        x.apply_(lambda v: v)
    with pytest.raises(TypeError, match="map_ is only implemented on CPU tensors"):
        x.map_(x, lambda a, b: a)


# -- legacy constructors and types -------------------------------------------------------------------

@pytest.mark.parametrize("args", [(), (2, 3), ((2, 3),), ([2, 3],), ([[1, 2]],), (np.array([1, 2]),), ([],),
                                  (ember.Size([2, 3]),), (3,)])
def test_tensor_constructor_matches_torch(args):
    e = ember.Tensor(*args)
    t = torch.Tensor(*[torch.Size(a) if isinstance(a, ember.Size) else a for a in args])
    assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.float32
    if not args or not all(isinstance(a, int) or isinstance(a, ember.Size) for a in args):
        same(e, t)


def test_tensor_constructor_follows_default_dtype_and_aliases_tensors():
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.Tensor(2).dtype is ember.float64 and ember.Tensor([1]).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    a = ember.ones(2, requires_grad=True)
    alias = ember.Tensor(a)
    assert alias is not a and alias.data_ptr() == a.data_ptr() and alias.requires_grad
    (alias * 2).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    ints = ember.ones(2, dtype=ember.int64)
    assert ember.Tensor(ints).dtype is ember.int64  # an alias keeps the dtype, as torch.Tensor(other) does
    assert ember.Tensor([1, 2], device="cpu").tolist() == [1.0, 2.0]


@pytest.mark.parametrize("args,error", [((2.5,), TypeError), (("x",), TypeError), ((-1,), ValueError),
                                        ((2, "a"), TypeError)])
def test_tensor_constructor_errors(args, error):
    with pytest.raises((TypeError, RuntimeError, ValueError)):
        torch.Tensor(*args)
    with pytest.raises(error):
        ember.Tensor(*args)
    with pytest.raises(TypeError, match="device"):
        ember.Tensor([1], foo=1)


TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
         "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", TYPES)
def test_typed_constructors_and_isinstance(name):
    e_cls, t_cls = getattr(ember, name), getattr(torch, name)
    data = [1, 0, 1.7] if name != "BoolTensor" else [1, 0, 1]
    same(e_cls(data), t_cls(data))
    assert e_cls(2, 3).shape == (2, 3) and e_cls().shape == (0,)
    assert e_cls(2).dtype.name == str(t_cls(2).dtype).removeprefix("torch.")
    made = e_cls(data)
    assert isinstance(made, e_cls) and isinstance(made, ember.Tensor)
    others = [getattr(ember, n) for n in TYPES if n != name]
    assert not any(isinstance(made, other) for other in others)
    assert not isinstance(made, getattr(ember.cuda, name))
    assert not issubclass(e_cls, ember.Tensor) and not issubclass(t_cls, torch.Tensor)
    assert repr(e_cls) == f"<class 'ember.{name}'>" and e_cls.dtype is made.dtype
    assert made.type() == t_cls(data).type() == f"torch.{name}"


def test_typed_constructor_refuses_a_tensor_of_another_dtype():
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="FloatTensor.*float32.*int64"):
        ember.FloatTensor(ember.ones(2, dtype=ember.int64))
    same_dtype = ember.ones(2)
    assert ember.FloatTensor(same_dtype).data_ptr() == same_dtype.data_ptr()


def test_type_converts_like_torch():
    e, t = ember.ones(2), torch.ones(2)
    for spec_e, spec_t in [("torch.LongTensor", "torch.LongTensor"), (ember.LongTensor, torch.LongTensor),
                           (ember.int32, torch.int32), ("torch.DoubleTensor", "torch.DoubleTensor"),
                           ("ember.HalfTensor", "torch.HalfTensor")]:
        same(e.type(spec_e), t.type(spec_t))
    assert e.type(ember.float32) is e and e.type("torch.FloatTensor") is e
    for bad in ("torch.int32", "float", "torch.FloatTensorX"):
        with pytest.raises(ValueError):
            t.type(bad)
        with pytest.raises(ValueError, match="invalid type"):
            e.type(bad)
    assert ember.tensor([True]).type() == "torch.BoolTensor"


def test_type_to_cuda_goes_through_the_cuda_backend():
    if ember.cuda.is_available():
        assert ember.ones(2).type("torch.cuda.FloatTensor").device.type == "cuda"
    else:
        with pytest.raises(ember.DeviceError, match="cuda"):
            ember.ones(2).type("torch.cuda.FloatTensor")
        with pytest.raises(ember.DeviceError, match="cuda"):
            ember.cuda.FloatTensor([1.0])


# -- formatting ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype", [(1.5, "float32"), (2.0 / 3.0, "float64"), (3, "int64"), (True, "bool")])
@pytest.mark.parametrize("spec", ["", ".4f", ".3e", "10.2f", "g"])
def test_zero_dim_tensors_format_as_numbers(value, dtype, spec):
    e, t = ember.tensor(value, dtype=getattr(ember, dtype)), torch.tensor(value, dtype=getattr(torch, dtype))
    assert format(e, spec) == format(t, spec)
    assert f"{e}" == f"{t}"


def test_format_spec_on_a_non_scalar_tensor_raises_like_torch():
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        format(torch.ones(2), ".3f")
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        format(ember.ones(2), ".3f")
    assert f"{ember.ones(2)}" == repr(ember.ones(2))
