"""ember.autocast: the cast categories, nesting, the decorator, the weight cache and the API around them."""
from __future__ import annotations

import warnings

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.amp.casting import MODE
from ember.dispatch.execution import modes
from ember.dispatch.schema.errors import DtypeError, EmberError

AVAILABLE = [name for name, status in ember.backends.available().items() if status == "available"]


def _autocast_devices() -> list:
    """Every available device type, skipped where its device offers no low-precision autocast dtype."""
    params = []
    for kind in AVAILABLE:
        backend = ember.dispatch.registry.get_backend(kind)
        offered = backend.autocast_dtypes(backend.default_index())
        params.append(pytest.param(kind, marks=pytest.mark.skipif(
            not offered, reason=f"{kind} ({backend.describe(backend.default_index())}) has no float16/bfloat16")))
    return params


DEVICES = _autocast_devices()


def _low(kind: str):
    return ember.amp.default_dtype(kind)


@pytest.fixture(autouse=True)
def no_region_left_behind():
    yield
    assert MODE not in modes.active, "an autocast region leaked its mode"
    assert not any(ember.is_autocast_enabled(kind) for kind in ("cpu", "cuda", "opencl"))


@pytest.mark.parametrize("kind", DEVICES)
def test_lower_precision_category(kind):
    a, b = ember.randn(3, 4, device=kind), ember.randn(4, 5, device=kind)
    w, bias = ember.randn(5, 4, device=kind), ember.randn(5, device=kind)
    image, kernel = ember.randn(1, 2, 6, 6, device=kind), ember.randn(3, 2, 3, 3, device=kind)
    low = _low(kind)
    with ember.autocast(kind):
        assert (a @ b).dtype is low
        assert ember.mm(a, b).dtype is low
        assert ember.bmm(a[None], b[None]).dtype is low
        assert F.linear(a, w, bias).dtype is low
        assert F.conv2d(image, kernel).dtype is low
        assert ember.einsum("ij,jk->ik", a, b).dtype is low
        assert (a @ b).relu().dtype is low  # ops without a category run in what they get
        assert (a.long() @ b.long()).dtype is ember.int64  # integers are never cast
        assert (a.double() @ b.double()).dtype is ember.float64  # nor is float64
    assert (a @ b).dtype is ember.float32


@pytest.mark.parametrize("kind", DEVICES)
def test_float32_category(kind):
    """prod is float32 on every list; exp and softmax only on the cuda list (other accelerators follow it)."""
    low = _low(kind)
    x = ember.rand(3, 4, device=kind).to(low)
    with ember.autocast(kind):
        assert ember.prod(x, 1).dtype is ember.float32
        on_cuda_list = ember.float32 if kind != "cpu" else low
        assert ember.exp(x).dtype is on_cuda_list
        assert ember.softmax(x, -1).dtype is on_cuda_list
        # an explicit dtype= names the computation dtype itself: nothing is cast
        assert ember.softmax(x, -1, dtype=ember.float64 if kind == "cpu" else low).dtype is not ember.float32


@pytest.mark.parametrize("kind", DEVICES)
def test_promote_category(kind):
    low = _low(kind)
    x = ember.randn(2, 3, device=kind)
    with ember.autocast(kind):
        assert ember.cat([x.to(low), x]).dtype is ember.float32
        assert ember.stack([x.to(low), x.to(low)]).dtype is low
        assert ember.cat([x.to(low), x.double()]).dtype is ember.float64  # float64 joins by ordinary promotion


@pytest.mark.parametrize("kind", DEVICES)
def test_gradients_reach_float32_weights_in_float32(kind):
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)).to(kind)
    x = ember.randn(6, 4, device=kind)
    with ember.autocast(kind):
        out = model(x)
    assert out.dtype is _low(kind)
    out.float().sum().backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.dtype is ember.float32


def test_nesting_and_enabled_false():
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    with ember.autocast("cpu"):
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert (a @ b).dtype is ember.float32
            with ember.autocast("cpu", dtype=ember.float16):
                assert (a @ b).dtype is ember.float16
            assert (a @ b).dtype is ember.float32
        assert ember.is_autocast_enabled("cpu") and ember.get_autocast_dtype("cpu") is ember.bfloat16
        assert (a @ b).dtype is ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")


def test_decorator_runs_each_call_in_its_own_region():
    @ember.autocast("cpu")
    def product(a, b):
        assert ember.is_autocast_enabled("cpu")
        return a @ b

    a, b = ember.randn(3, 4), ember.randn(4, 5)
    assert product(a, b).dtype is ember.bfloat16
    assert product(a, b).dtype is ember.bfloat16  # the decorator is reusable
    assert not ember.is_autocast_enabled("cpu")

    @ember.amp.autocast("cpu", enabled=False)
    def plain(a, b):
        return a @ b

    with ember.autocast("cpu"):
        assert plain(a, b).dtype is ember.float32
        assert (a @ b).dtype is ember.bfloat16


def test_region_restores_state_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with ember.autocast("cpu"):
            1 / 0
    assert not ember.is_autocast_enabled("cpu")


class _CastCounter(modes.DispatchMode):
    """Counts the casts each tensor goes through (entered outside autocast, it sees autocast's casts)."""

    def __init__(self):
        self.casts = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.name() == "to_dtype":
            self.casts.append(id(args[0]))
        return func(*args, **(kwargs or {}))


def test_weight_casts_are_cached_within_a_region():
    layer = nn.Linear(4, 4)
    x = ember.randn(2, 4)
    with _CastCounter() as counter:
        with ember.autocast("cpu"):
            for _ in range(3):
                layer(x)
            assert counter.casts.count(id(layer.weight)) == 1
            assert counter.casts.count(id(x)) == 3  # activations are not cached
            with ember.no_grad():
                layer.weight.add_(1.0)  # an in-place change makes the cached cast stale
            out = layer(x)
            assert counter.casts.count(id(layer.weight)) == 2
        assert MODE._cache == {}  # leaving the outermost region empties the cache
        with ember.autocast("cpu"):
            layer(x)
        assert counter.casts.count(id(layer.weight)) == 3
        with ember.autocast("cpu", cache_enabled=False):
            layer(x)
            layer(x)
        assert counter.casts.count(id(layer.weight)) == 5
    expected = F.linear(x.bfloat16(), layer.weight.bfloat16(), layer.bias.bfloat16())
    assert ember.equal(out, expected)


def test_cached_cast_still_carries_the_gradient():
    layer = nn.Linear(3, 3)
    x = ember.randn(4, 3)
    with ember.autocast("cpu"):
        loss = layer(x).float().sum() + layer(x).float().sum()
    loss.backward()
    with ember.autocast("cpu", enabled=False):
        reference = nn.Linear(3, 3)
        reference.load_state_dict(layer.state_dict())
        (reference(x).sum() * 2).backward()
    assert ember.allclose(layer.weight.grad, reference.weight.grad, rtol=2e-2, atol=2e-2)


def test_other_device_types_are_left_alone():
    """A cpu region does not cast tensors of another device type, nor a cuda region cpu tensors."""
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "cuda" may be unavailable here: the region is then disabled
        with ember.autocast("cuda"):
            assert (a @ b).dtype is ember.float32
    if "opencl" in AVAILABLE:
        x, y = a.to("opencl"), b.to("opencl")
        with ember.autocast("cpu"):
            assert (x @ y).dtype is ember.float32
            assert (a @ b).dtype is ember.bfloat16


def test_opencl_without_fp16_is_a_clear_error():
    if "opencl" not in AVAILABLE:
        pytest.skip("no OpenCL device")
    backend = ember.dispatch.registry.get_backend("opencl")
    if ember.float16 in backend.autocast_dtypes(backend.default_index()):
        assert ember.autocast("opencl").fast_dtype is ember.float16
        return
    with pytest.raises(DtypeError, match=r"opencl device .* cannot autocast to float16 .*use float32"):
        ember.autocast("opencl")


def test_unsupported_and_unavailable_device_types():
    with pytest.raises(ember.DeviceError, match="unsupported device_type 'tpu'"):
        ember.autocast("tpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(ember.device("cpu"))
    with pytest.warns(UserWarning, match="float32 is not a low-precision dtype"):
        region = ember.autocast("cpu", dtype=ember.float32)
    with region:
        assert (ember.randn(2, 2) @ ember.randn(2, 2)).dtype is ember.float32
    if "cuda" not in AVAILABLE:
        with pytest.warns(UserWarning, match="'cuda', but it is not available"):
            with ember.autocast("cuda"):
                assert not ember.is_autocast_enabled("cuda")


def test_legacy_spellings():
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    with ember.cpu.amp.autocast():
        assert ember.is_autocast_cpu_enabled() and ember.get_autocast_cpu_dtype() is ember.bfloat16
        assert (a @ b).dtype is ember.bfloat16
    with ember.cpu.amp.autocast(dtype=ember.float16):
        assert (a @ b).dtype is ember.float16
    from ember.cuda.amp import GradScaler, autocast  # noqa: F401  (programs import these at the top)
    assert ember.get_autocast_gpu_dtype() is ember.float16
    assert ember.amp.is_autocast_available("cpu")
    assert not ember.amp.is_autocast_available("tpu")


def test_set_autocast_enabled_functions():
    ember.set_autocast_enabled("cpu", True)
    try:
        assert MODE in modes.active
        assert (ember.randn(2, 3) @ ember.randn(3, 2)).dtype is ember.bfloat16
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert MODE not in modes.active


def test_banned_op_is_refused_on_the_cuda_list():
    """binary_cross_entropy is banned under CUDA autocast; the cpu list runs it in float32."""
    op = ember.dispatch.schema.OPS["binary_cross_entropy"]
    if op.autocast_category("cuda") != "banned":
        pytest.skip("binary_cross_entropy declares no autocast ban")
    x, target = ember.rand(4), ember.rand(4)
    with ember.autocast("cpu"):
        assert F.binary_cross_entropy(x.bfloat16(), target.bfloat16()).dtype is ember.float32
    # the cuda list's ban, exercised on cpu tensors by handing the mode the cuda list's category
    original = op.autocast_category
    op.autocast_category = lambda device_type: original("cuda")
    MODE.dtypes = {"cpu": ember.bfloat16}
    try:
        with pytest.raises(EmberError, match="binary_cross_entropy is unsafe to autocast"):
            MODE.__torch_dispatch__(modes.OpCall(op, 0, lambda *args: None), (), (x, target), {})
    finally:
        MODE.dtypes = {}
        del op.autocast_category


class _Scale(ember.autograd.Function):
    @staticmethod
    @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        assert not ember.is_autocast_enabled("cpu")
        return a @ b

    @staticmethod
    @ember.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        assert ember.is_autocast_enabled("cpu")  # the forward ran in a region
        return grad @ b.t(), a.t() @ grad


def test_custom_fwd_and_bwd():
    a = ember.randn(3, 4, requires_grad=True)
    b = ember.randn(4, 2, requires_grad=True)
    with ember.autocast("cpu"):
        out = _Scale.apply(a.bfloat16(), b)
    assert out.dtype is ember.float32  # cast_inputs=float32 ran the forward outside autocast
    out.sum().backward()
    assert a.grad.dtype is ember.float32 and b.grad is not None


def test_dispatch_command_shows_categories(capsys):
    from ember.dispatch.__main__ import main
    main(["--autocast"])
    printed = capsys.readouterr().out
    assert "matmul(Tensor input, Tensor other)  [autocast cpu=lower cuda=lower]" in printed
    assert "exp(Tensor input)  [autocast cuda=float32]" in printed
    assert "cat(" in printed and "cpu=promote" in printed
    assert "relu(" not in printed
