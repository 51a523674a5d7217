"""The last of the compat report's "other" names: each against PyTorch itself where it computes something."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.dispatch.schema.errors import DtypeError, ShapeError

torch = pytest.importorskip("torch")


def both(values, dtype="float32"):
    array = np.asarray(values, dtype=dtype)
    return ember.tensor(array), torch.tensor(array)


def same(ours, theirs, **tolerance):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tolerance)


# -- adjoint views, container protocols, facts ----------------------------------------------------------

def test_adjoint_views_match_torch():
    ours, theirs = both(np.arange(24.).reshape(2, 3, 4))
    same(ours.mH, theirs.mH)
    same(ours.adjoint(), theirs.adjoint())
    same(ember.adjoint(ours), torch.adjoint(theirs))
    same(ours[0].H, theirs[0].H)
    assert ours.mH.data_ptr_id() == ours.data_ptr_id()  # a view
    with pytest.raises(ShapeError, match="tensor.H"):
        _ = ours.H
    with pytest.raises(ShapeError, match="mH"):
        _ = ember.ones(3).mH
    with pytest.raises(ShapeError, match="adjoint"):
        ember.adjoint(ember.ones(3))


def test_container_protocols_match_torch():
    ours, theirs = both([[1., 2.], [3., 4.]])
    for element in (3.0, 7, 4):
        assert (element in ours) == (element in theirs)
    assert (ember.tensor([3., 4.]) in ours) == (torch.tensor([3., 4.]) in theirs)
    for tensor in (ours, theirs):  # a RuntimeError in PyTorch
        with pytest.raises(RuntimeError, match="__contains__"):
            _ = "a" in tensor
    same(reversed(ours), reversed(theirs))
    same(reversed(ember.tensor(5.)), reversed(torch.tensor(5.)))
    with pytest.raises(TypeError, match="does not support deleting"):
        del ours[0]


def test_facts():
    t = ember.ones(2, 3)
    assert t.is_cpu is True and t.is_meta is False and t.name is None
    assert t.is_distributed() is False and ember.is_distributed(t) is False
    assert t.const_data_ptr() == t.data_ptr()


def test_dim_order_matches_torch():
    for shape, perm in (((2, 3, 4), (0, 1, 2)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4, 5), (0, 2, 3, 1))):
        ours = ember.empty(shape).permute(*perm)
        theirs = torch.empty(shape).permute(*perm)
        assert ours.dim_order() == theirs.dim_order()
    with pytest.raises(RuntimeError, match="unique dim order"):
        ember.empty(2, 1, 4).dim_order(ambiguity_check=True)


def test_inference_tensors():
    normal = ember.ones(3)
    with ember.inference_mode():
        made = ember.ones(3) * 2
        view_of_normal = normal[:2]
    assert made.is_inference() and ember.is_inference(made) and made[1:].is_inference()
    assert not normal.is_inference() and not view_of_normal.is_inference()
    with torch.inference_mode():
        torch_made, torch_view = torch.ones(3) * 2, torch.ones(3)
        torch_view = torch_view[:2]
    assert made.is_inference() == torch_made.is_inference()


# -- as_subclass, module_load, map2_, pickling ----------------------------------------------------------

class Marked(ember.Tensor):
    pass


def test_as_subclass_shares_storage_and_graph():
    x = ember.ones(3, requires_grad=True)
    marked = x.as_subclass(Marked)
    assert type(marked) is Marked and marked.data_ptr_id() == x.data_ptr_id()
    (marked * ember.tensor([1., 2., 3.])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1., 2., 3.])
    with pytest.raises(TypeError, match="as_subclass"):
        x.as_subclass(int)


def test_module_load_matches_torch():
    ours, theirs = ember.zeros(3), torch.zeros(3)
    ours_other, theirs_other = both([1., 2., 3.])
    same(ours.module_load(ours_other), theirs.module_load(theirs_other))
    same(ours, theirs)  # assign=False copies into self
    assigned = ours.module_load(ours_other, assign=True)
    assert assigned.data_ptr_id() == ours_other.data_ptr_id() and assigned is not ours_other


def test_map2_matches_torch():
    ours, theirs = both([1., 2., 3.])
    (ox, tx), (oy, ty) = both([10., 20., 30.]), both([100.])
    ours.map2_(ox, oy, lambda s, a, b: s + a * b)
    theirs.map2_(tx, ty, lambda s, a, b: s + a * b)
    same(ours, theirs)
    with pytest.raises(TypeError, match="map2_"):
        ours.map2_(ember.ones(3, dtype=ember.float64), oy, lambda s, a, b: s)


def test_set_shares_the_source_storage_as_torch():
    ours, theirs = both(np.arange(6.))
    ours_target, theirs_target = ember.zeros(2), torch.zeros(2)
    ours_target.set_(ours)
    theirs_target.set_(theirs)
    same(ours_target, theirs_target)
    ours_target[0], theirs_target[0] = 9.0, 9.0
    same(ours, theirs)  # written through the other tensor
    ours_view, theirs_view = ember.zeros(1), torch.zeros(1)
    ours_view.set_(ours, 1, (2, 2), (2, 1))
    theirs_view.set_(theirs, 1, (2, 2), (2, 1))
    same(ours_view, theirs_view)
    assert tuple(ember.zeros(3).set_().shape) == tuple(torch.zeros(3).set_().shape) == (0,)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        ember.ones(2, requires_grad=True).set_(ours)
    with pytest.raises(DtypeError, match="set_"):
        ember.zeros(2).set_(ember.zeros(2, dtype=ember.int64))


@pytest.mark.filterwarnings("ignore:__array_wrap__ must accept:DeprecationWarning")  # torch's own __array_wrap__
def test_numpy_ufuncs_return_tensors_as_torch():
    ours, theirs = both([0., 1., 2.])
    for ufunc in (np.sin, np.exp):
        result, expected = ufunc(ours), ufunc(theirs)
        assert isinstance(result, ember.Tensor) and isinstance(expected, torch.Tensor)
        same(result, expected, rtol=1e-6)
    compared, expected = np.greater(ours, 1), np.greater(theirs, 1)
    assert compared.dtype.name == "uint8" and str(expected.dtype) == "torch.uint8"
    np.testing.assert_array_equal(compared.numpy(), expected.numpy())


def test_pickling_through_reduce_ex():
    t = ember.arange(6.).reshape(2, 3)
    assert t.__reduce_ex__(2)[0] is not None
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(t)).numpy(), t.numpy())
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(t.as_subclass(Marked))).numpy(), t.numpy())


# -- nonzero_static, rsub, detach, dropout_, empty_permuted -------------------------------------------------

@pytest.mark.parametrize("size", [0, 2, 3, 6])
def test_nonzero_static_matches_torch(size):
    ours, theirs = both([[0, 1, 2], [3, 0, 0]], "int64")
    np.testing.assert_array_equal(ember.nonzero_static(ours, size=size).numpy(),
                                  torch.nonzero_static(theirs, size=size).numpy())
    np.testing.assert_array_equal(ours.nonzero_static(size=size, fill_value=7).numpy(),
                                  theirs.nonzero_static(size=size, fill_value=7).numpy())
    with pytest.raises(ValueError, match="nonzero_static"):
        ember.nonzero_static(ours, size=-1)


def test_rsub_matches_torch():
    (oa, ta), (ob, tb) = both([[1., 2.], [3., 4.]]), both([10., 20.])
    same(ember.rsub(oa, ob), torch.rsub(ta, tb))
    same(ember.rsub(oa, ob, alpha=3), torch.rsub(ta, tb, alpha=3))
    same(ember.rsub(oa, 2.5, alpha=2), torch.rsub(ta, 2.5, alpha=2))
    ints, torch_ints = both([1, 2], "int64")
    assert ember.rsub(ints, 2.5).dtype.name == str(torch.rsub(torch_ints, 2.5).dtype).split(".")[1]


def test_detach_functions():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    detached = ember.detach(y)
    assert detached.grad_fn is None and not detached.requires_grad and detached.data_ptr_id() == y.data_ptr_id()
    assert ember.detach_(y) is y and y.grad_fn is None and not y.requires_grad


def test_dropout_in_place():
    ember.manual_seed(0)
    x = ember.ones(2000)
    out = ember.dropout_(x, 0.25, True)
    assert out is x
    values = set(np.unique(x.numpy()).tolist())
    assert values <= {0.0, float(np.float32(1 / 0.75))} and abs(float((x == 0).float().mean()) - 0.25) < 0.05
    y = ember.ones(5)
    ember.dropout_(y, 0.5, False)
    np.testing.assert_array_equal(y.numpy(), np.ones(5))


@pytest.mark.parametrize("size,layout", [((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 3, 4), (2, 1, 0)), ((3,), (0,))])
def test_empty_permuted_matches_torch(size, layout):
    ours = ember.empty_permuted(size, layout)
    theirs = torch.empty_permuted(size, layout)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert ember.empty_permuted(size, layout, dtype=ember.float64, requires_grad=True).requires_grad
    with pytest.raises(ShapeError, match="permutation"):
        ember.empty_permuted((2, 3), (0, 0))


# -- binomial ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("count,prob", [(6.0, 0.3), (200.0, 0.6), (1000.0, 0.05), (30.0, 0.99)])
def test_binomial_moments_match_torch(count, prob):
    ember.manual_seed(1)
    torch.manual_seed(1)
    n = 20000
    ours = ember.binomial(ember.full((n,), count), ember.full((n,), prob)).numpy()
    theirs = torch.binomial(torch.full((n,), count), torch.full((n,), prob)).numpy()
    assert np.all(ours == np.round(ours)) and ours.min() >= 0 and ours.max() <= count
    spread = np.sqrt(count * prob * (1 - prob))
    assert abs(ours.mean() - theirs.mean()) < 8 * spread / np.sqrt(n)
    assert abs(ours.std() - theirs.std()) < 0.05 * spread


def test_binomial_edges_and_errors():
    out = ember.binomial(ember.tensor([0., 5., 3.]), ember.tensor([0.3, 0., 1.]))
    np.testing.assert_array_equal(out.numpy(), [0., 0., 3.])
    assert tuple(ember.binomial(ember.full((2, 3), 4.), ember.full((3,), 0.5)).shape) == (2, 3)
    first = ember.binomial(ember.full((50,), 9.), ember.full((50,), 0.5), generator=ember.Generator().manual_seed(3))
    again = ember.binomial(ember.full((50,), 9.), ember.full((50,), 0.5), generator=ember.Generator().manual_seed(3))
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    with pytest.raises(ValueError, match="probabilities"):
        ember.binomial(ember.tensor([1.]), ember.tensor([1.5]))
    with pytest.raises(ValueError, match="count"):
        ember.binomial(ember.tensor([-1.]), ember.tensor([0.5]))
    with pytest.raises(DtypeError, match="binomial"):
        ember.binomial(ember.tensor([1.]), ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(DtypeError, match="binomial"):
        ember.binomial(ember.tensor([1]), ember.tensor([1]))


# -- switches and modules ----------------------------------------------------------------------------------

def test_warn_always_repeats_fallback_warnings():
    """A backend falling back to the CPU warns once per (op, backend); with warn_always, every time."""
    from ember.dispatch.execution import fallback
    from ember.dispatch.schema import OPS
    assert ember.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    op, device, before = OPS["hypot"], ember.device("opencl"), fallback.get_fallback()
    fallback.set_fallback("cpu")
    try:
        for warn_always, expected in ((False, 1), (True, 3)):
            fallback._warned.discard((op.name, device.type))
            ember.set_warn_always(warn_always)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(3):
                    fallback.refuse_or_warn(op, device)
            assert len([w for w in caught if "hypot" in str(w.message)]) == expected
            assert ember.is_warn_always_enabled() is warn_always
    finally:
        ember.set_warn_always(False)
        fallback.set_fallback(before)
        fallback._warned.discard((op.name, device.type))
    with pytest.raises(TypeError, match="set_warn_always"):
        ember.set_warn_always(1)


def test_get_device_module():
    assert ember.get_device_module("cpu") is ember.cpu and torch.get_device_module("cpu") is torch.cpu
    assert ember.get_device_module(ember.device("cuda", 0)) is ember.cuda
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        ember.get_device_module("template")


def test_grad_scaler_is_amp_grad_scaler():
    assert ember.GradScaler is ember.amp.GradScaler
    assert torch.GradScaler is torch.amp.GradScaler


@pytest.mark.parametrize("left,right", [("0.10.0", "0.9"), ("1.2", "1.2.0"), ("2.0.0a1", "2.0.0"),
                                        ("2.0.0.dev1", "2.0.0a0"), ("2.0.0.post1", "2.0.0"),
                                        ("1.10.0+cpu", "1.10.0"), ("parrot", "zebra")])
def test_torch_version_compares_as_torch(left, right):
    ours, theirs = ember.torch_version.TorchVersion(left), torch.torch_version.TorchVersion(left)
    for method in ("__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__ne__"):
        assert getattr(ours, method)(right) == getattr(theirs, method)(right), (left, method, right)
    assert (ours > (0, 9)) == (theirs > (0, 9)) if left[0].isdigit() else True


def test_ember_version_is_a_torch_version():
    assert isinstance(ember.__version__, ember.torch_version.TorchVersion)
    assert ember.__version__ >= "0.1" and ember.__version__ > (0, 0, 9) and ember.__version__ == "0.1.0"


def test_set_multithreading_enabled():
    from ember.autograd.multithreading import is_multithreading_enabled
    assert is_multithreading_enabled()
    with ember.autograd.set_multithreading_enabled(False):
        assert not is_multithreading_enabled()
        x = ember.ones(2, requires_grad=True)
        (x * 3).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [3., 3.])
    assert is_multithreading_enabled()

    @ember.autograd.set_multithreading_enabled(False)
    def inside():
        return is_multithreading_enabled()
    assert is_multithreading_enabled() and inside() is False and is_multithreading_enabled()


def test_common_types_names_match_torch():
    names = {n for n in vars(torch.nn.common_types) if n.startswith("_") and n.endswith("_t")}
    assert names <= set(vars(nn.common_types))


# -- nn.grad, conv_tbc -------------------------------------------------------------------------------------

@pytest.mark.parametrize("ndim,stride,padding,dilation,groups",
                         [(1, 1, 0, 1, 1), (1, 2, 1, 1, 2), (2, 1, 1, 1, 1), (2, 2, 0, 2, 2), (3, 1, 1, 1, 1)])
def test_nn_grad_matches_torch(ndim, stride, padding, dilation, groups):
    rng = np.random.default_rng(ndim)
    input_size = (2, 4) + (7,) * ndim
    weight_size = (6, 4 // groups) + (3,) * ndim
    (oi, ti) = both(rng.standard_normal(input_size))
    (ow, tw) = both(rng.standard_normal(weight_size))
    out = getattr(torch.nn.functional, f"conv{ndim}d")(ti, tw, None, stride, padding, dilation, groups)
    (og, tg) = both(rng.standard_normal(tuple(out.shape)))
    ours = getattr(nn.grad, f"conv{ndim}d_input")(input_size, ow, og, stride, padding, dilation, groups)
    theirs = getattr(torch.nn.grad, f"conv{ndim}d_input")(input_size, tw, tg, stride, padding, dilation, groups)
    same(ours, theirs, rtol=1e-4, atol=1e-4)
    ours = getattr(nn.grad, f"conv{ndim}d_weight")(oi, weight_size, og, stride, padding, dilation, groups)
    theirs = getattr(torch.nn.grad, f"conv{ndim}d_weight")(ti, weight_size, tg, stride, padding, dilation, groups)
    same(ours, theirs, rtol=1e-4, atol=1e-4)


def test_nn_grad_refuses_a_wrong_grad_output():
    with pytest.raises(ShapeError, match="conv2d_input"):
        nn.grad.conv2d_input((1, 2, 5, 5), ember.ones(3, 2, 3, 3), ember.ones(1, 3, 4, 4))
    with pytest.raises(ShapeError, match="conv1d_weight"):
        nn.grad.conv1d_weight(ember.ones(1, 2, 5), (3, 2), ember.ones(1, 3, 3))


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_matches_torch(pad):
    rng = np.random.default_rng(pad)
    (oi, ti), (ow, tw), (ob, tb) = (both(rng.standard_normal(s)) for s in ((6, 2, 3), (3, 3, 4), (4,)))
    same(nn.functional.conv_tbc(oi, ow, ob, pad), torch.conv_tbc(ti, tw, tb, pad), rtol=1e-5, atol=1e-5)
    oi.requires_grad_()
    ti.requires_grad_()
    nn.functional.conv_tbc(oi, ow, ob, pad).sum().backward()
    torch.conv_tbc(ti, tw, tb, pad).sum().backward()
    same(oi.grad, ti.grad, rtol=1e-5, atol=1e-5)
    with pytest.raises(ShapeError, match="conv_tbc"):
        nn.functional.conv_tbc(oi, ember.ones(3, 5, 4), ob)


# -- the compat report -------------------------------------------------------------------------------------

NAMES = {
    "torch": ["GradScaler", "detach", "detach_", "dropout_", "rsub", "adjoint", "binomial", "nonzero_static",
              "empty_permuted", "is_inference", "set_warn_always", "is_warn_always_enabled", "is_distributed",
              "torch_version", "get_device_module"],
    "torch.Tensor": ["H", "mH", "adjoint", "__contains__", "__reversed__", "__delitem__", "is_cpu", "is_meta", "name",
                     "as_subclass", "const_data_ptr", "dim_order", "nonzero_static", "map2_", "module_load",
                     "__reduce_ex__", "__array_wrap__", "is_inference", "is_distributed", "set_"],
    "torch.nn": ["grad", "common_types"],
    "torch.nn.functional": ["conv_tbc"],
    "torch.autograd": ["set_multithreading_enabled"],
}
REASONED = {"torch": ["AVG", "SUM", "masked", "hash_tensor", "slice_inverse"],
            "torch.Tensor": ["index", "hash_tensor", "slice_inverse", "__setstate__"],
            "torch.nn.functional": ["grouped_mm", "scaled_mm", "scaled_grouped_mm"],
            "torch.autograd": ["enforce_grad_layout_policy", "profiler_legacy", "profiler_util"]}


def test_compat_report_covers_these_names():
    from ember.compat.report import compare_all
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reports = {r.namespace: r for r in compare_all(torch, ember, ("torch", "Tensor", "nn", "nn.functional",
                                                                      "autograd"))}
    for namespace, names in NAMES.items():
        report = reports[namespace]
        for name in names:
            assert name in report.present, f"{namespace}.{name} missing"
            assert name not in report.mismatches, f"{namespace}.{name}: {report.mismatches.get(name)}"
    for namespace, names in REASONED.items():
        for name in names:
            assert reports[namespace].missing.get(name) is not None, f"{namespace}.{name} has no reason"
