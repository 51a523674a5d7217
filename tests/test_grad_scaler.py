"""``ember.amp.GradScaler`` behaves as ``torch.amp.GradScaler``: scaling, the fused unscale with its inf check,
skipped steps, the scale's growth and backoff, the per-optimizer stages, checkpoints, the disabled scaler;
on every device type available here, and against PyTorch itself."""
from __future__ import annotations

import io
import math
import pickle

import numpy as np
import pytest

import ember
from ember.amp.grad_scaler import GradScaler
from ember.dispatch import DispatchMode, registry
from ember.dispatch.execution import dispatcher

DEVICES = [d for d in ("cpu", "opencl", "cuda") if registry.available().get(d) == "available"]
INF, NAN = math.inf, math.nan


class SeenOps(DispatchMode):
    """Counts the op calls it sees, by name."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen[func.__name__] = self.seen.get(func.__name__, 0) + 1
        return func(*args, **(kwargs or {}))


def model_and_optimizer(device, lr=0.1, seed=0):
    ember.manual_seed(seed)
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 2)).to(device)
    return model, ember.optim.SGD(model.parameters(), lr=lr)


def batch(device, poison=None):
    x = ember.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), device=device)
    if poison is not None:
        x[2, 1] = poison
    return x


def scaled_backward(scaler, model, device, poison=None):
    loss = model(batch(device, poison)).pow(2).mean()
    scaler.scale(loss).backward()
    return loss


def snapshot(model):
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# -- scale ---------------------------------------------------------------------------------------

def test_scale_multiplies_a_tensor_and_nested_outputs(device):
    scaler = GradScaler(device, init_scale=8.0)
    t = ember.tensor([1.0, -2.0], device=device)
    assert scaler.get_scale() == 8.0 and scaler._scale is None, "the scale tensor is made lazily"
    np.testing.assert_array_equal(scaler.scale(t).numpy(force=True), [8.0, -16.0])
    assert scaler._scale.device == t.device and scaler._scale.dtype is ember.float32
    nested = scaler.scale([t, (t * 2, [t])])
    assert isinstance(nested, list) and isinstance(nested[1], tuple) and isinstance(nested[1][1], list)
    np.testing.assert_array_equal(nested[1][1][0].numpy(force=True), [8.0, -16.0])
    lazy = scaler.scale(x for x in (t, t))
    assert not isinstance(lazy, (list, tuple))
    assert [v.tolist() for v in lazy] == [[8.0, -16.0]] * 2
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([t, 3.0])


def test_scale_keeps_a_low_precision_output_low():
    scaler = GradScaler("cpu", init_scale=4.0)
    assert scaler.scale(ember.tensor([1.5], dtype=ember.bfloat16)).dtype is ember.bfloat16


# -- unscale_ and step ---------------------------------------------------------------------------

def test_unscale_restores_the_gradients_in_place_then_clipping_sees_them(device):
    model, opt = model_and_optimizer(device)
    loss = model(batch(device)).pow(2).mean()
    loss.backward()
    plain = [p.grad.numpy(force=True).copy() for p in model.parameters()]
    norm = math.sqrt(sum(float((g ** 2).sum()) for g in plain))
    opt.zero_grad()

    scaler = GradScaler(device, init_scale=1024.0)
    scaled_backward(scaler, model, device)
    grads = [p.grad for p in model.parameters()]
    np.testing.assert_allclose(grads[0].numpy(force=True), plain[0] * 1024, rtol=1e-5, atol=1e-6)
    scaler.unscale_(opt)
    assert all(p.grad is g for p, g in zip(model.parameters(), grads)), "unscaled in place"
    for p, expected in zip(model.parameters(), plain):
        np.testing.assert_allclose(p.grad.numpy(force=True), expected, rtol=1e-5, atol=1e-7)
    total = ember.nn.utils.clip_grad_norm_(model.parameters(), max_norm=norm / 2)
    assert float(total) == pytest.approx(norm, rel=1e-5)
    before = snapshot(model)
    scaler.step(opt)
    scaler.update()
    for b, p, g in zip(before, model.parameters(), plain):  # stepped with the clipped, unscaled gradients
        np.testing.assert_allclose(p.detach().numpy(force=True), b - 0.1 * g / 2, rtol=1e-4, atol=1e-6)


def test_unscale_is_one_fused_op_per_device_and_reads_nothing_to_the_host(device):
    model, opt = model_and_optimizer(device)
    scaler = GradScaler(device)
    scaled_backward(scaler, model, device)
    reads = dispatcher._activity
    with SeenOps() as mode:
        scaler.unscale_(opt)
    assert dispatcher._activity == reads, "unscale_ must not read values to the host"
    assert mode.seen["_amp_foreach_non_finite_check_and_unscale"] == 1
    assert mode.seen["copy_"] == len(list(model.parameters()))


@pytest.mark.parametrize("poison", [INF, -INF, NAN])
def test_step_is_skipped_when_a_gradient_overflows(device, poison):
    model, opt = model_and_optimizer(device)
    scaler = GradScaler(device, init_scale=256.0)
    before = snapshot(model)
    scaled_backward(scaler, model, device, poison)
    scaler.unscale_(opt)
    reads = dispatcher._activity
    assert scaler.step(opt) is None
    assert dispatcher._activity == reads + 1, "step reads one found_inf flag per device"
    scaler.update()
    for b, a in zip(before, snapshot(model)):
        np.testing.assert_array_equal(a, b)
    assert scaler.get_scale() == 128.0 and scaler._get_growth_tracker() == 0


def test_step_returns_what_the_optimizer_step_returns(device):
    class CountingSGD(ember.optim.SGD):
        def step(self, closure=None):
            super().step(closure)
            return "stepped"

    model, _ = model_and_optimizer(device)
    opt = CountingSGD(model.parameters(), lr=0.1)
    scaler = GradScaler(device)
    scaled_backward(scaler, model, device)
    assert scaler.step(opt) == "stepped"
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: 0.0)


def test_an_optimizer_that_handles_scaling_itself_gets_grad_scale_and_found_inf(device):
    class SelfUnscalingSGD(ember.optim.SGD):
        _step_supports_amp_scaling = True

        def step(self, closure=None):
            self.seen = (self.grad_scale.item(), self.found_inf.item())
            return "own step"

    p = ember.nn.Parameter(ember.ones(2, device=device))
    opt = SelfUnscalingSGD([p], lr=1.0)
    scaler = GradScaler(device, init_scale=8.0, growth_interval=1)
    scaler.scale((p * 3).sum()).backward()
    assert scaler.step(opt) == "own step"
    assert opt.seen == (8.0, 0.0) and not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf")
    assert p.grad.tolist() == [24.0, 24.0], "left scaled, for the optimizer to unscale"
    scaler.update()
    assert scaler.get_scale() == 16.0


def test_scale_grows_after_growth_interval_clean_steps_and_backs_off_on_overflow(device):
    model, opt = model_and_optimizer(device, lr=1e-3)
    scaler = GradScaler(device, init_scale=16.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    overflow = {3, 4, 9}
    scales, trackers = [], []
    for i in range(12):
        opt.zero_grad()
        scaled_backward(scaler, model, device, INF if i in overflow else None)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        trackers.append(scaler._get_growth_tracker())
    assert scales == [16.0, 16.0, 64.0, 16.0, 4.0, 4.0, 4.0, 16.0, 16.0, 4.0, 4.0, 4.0]
    assert trackers == [1, 2, 0, 0, 0, 1, 2, 0, 1, 0, 1, 2]


def test_lowering_growth_interval_below_the_count_stops_growth_as_in_pytorch(device):
    model, opt = model_and_optimizer(device, lr=1e-3)
    scaler = GradScaler(device, init_scale=4.0, growth_interval=5)
    for i in range(4):
        if i == 2:
            scaler.set_growth_interval(2)  # the count is already 2: it must equal the interval to grow
        opt.zero_grad()
        scaled_backward(scaler, model, device)
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 4.0 and scaler._get_growth_tracker() == 4


def test_a_scale_that_would_overflow_does_not_grow(device):
    model, opt = model_and_optimizer(device)
    scaler = GradScaler(device, init_scale=2.0 ** 127, growth_interval=1)
    scaled_backward(scaler, model, device)
    scaler.unscale_(opt)
    opt.zero_grad()  # clean gradients, so the update tries to grow the scale past float32's range
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 127 and scaler._get_growth_tracker() == 0


def test_update_takes_a_new_scale_as_a_number_or_a_one_element_tensor(device):
    model, opt = model_and_optimizer(device)
    scaler = GradScaler(device, init_scale=64.0)
    scaled_backward(scaler, model, device)
    scaler.step(opt)
    scaler.update(32.0)
    assert scaler.get_scale() == 32.0
    scaler.update(ember.tensor([5.0], device=device))
    assert scaler.get_scale() == 5.0
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(ember.tensor([1.0, 2.0], device=device))
    with pytest.raises(AssertionError, match="requires_grad=False"):
        scaler.update(ember.tensor([1.0], device=device, requires_grad=True))
    with pytest.raises(TypeError, match="new_scale should be a float"):
        scaler.update("big")


def test_new_scale_on_another_device_type_is_refused():
    if "opencl" not in DEVICES:
        pytest.skip("needs a second device type")
    scaler = GradScaler("cpu")
    scaler.scale(ember.tensor(1.0))
    with pytest.raises(AssertionError, match="new_scale should be"):
        scaler.update(ember.tensor([2.0], device="opencl"))


# -- stages --------------------------------------------------------------------------------------

def test_stage_errors_follow_pytorch(device):
    model, opt = model_and_optimizer(device)
    scaler = GradScaler(device)
    with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None"):
        scaler.unscale_(opt)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    scaled_backward(scaler, model, device)
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the "
                                           r"last update\(\)\."):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)\."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)\."):
        scaler.unscale_(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
    scaler.scale(model(batch(device)).sum())  # no backward: no gradients to check
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer."):
        scaler.step(opt)


def test_factors_are_checked_and_settable():
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        GradScaler("cpu", backoff_factor=1.0)
    scaler = GradScaler("cpu")
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (2.0, 0.5, 2000)
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.125)
    scaler.set_growth_interval(7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.125, 7)


def test_float16_gradients_are_refused_and_bfloat16_ones_unscaled():
    for dtype, refused in ((ember.float16, True), (ember.bfloat16, False)):
        p = ember.nn.Parameter(ember.ones(3, dtype=dtype))
        opt = ember.optim.SGD([p], lr=1.0)
        scaler = GradScaler("cpu", init_scale=4.0)
        scaler.scale((p * 3).sum()).backward()
        if refused:
            with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
                scaler.unscale_(opt)
        else:
            scaler.step(opt)
            assert p.grad.dtype is ember.bfloat16 and p.grad.tolist() == [3.0, 3.0, 3.0]
            assert p.tolist() == [-2.0, -2.0, -2.0]


def test_gradients_on_two_devices_are_checked_per_device():
    if "opencl" not in DEVICES:
        pytest.skip("needs a second device")
    a = ember.nn.Parameter(ember.ones(2))
    b = ember.nn.Parameter(ember.ones(2, device="opencl"))
    opt = ember.optim.SGD([a, b], lr=1.0)
    scaler = GradScaler("cpu", init_scale=2.0)
    for poisoned in (False, True):
        opt.zero_grad()
        remote = (b * (INF if poisoned else 2.0)).sum()
        for loss in scaler.scale([(a * 3).sum(), remote]):  # one scale, copied to the second device
            loss.backward()
        scaler.unscale_(opt)
        assert set(map(str, scaler._found_inf_per_device(opt))) == {"cpu", "opencl:0"}
        reads = dispatcher._activity
        scaler.step(opt)
        assert dispatcher._activity == reads + 2, "one read per device"
        scaler.update()
        assert a.tolist() == [-2.0, -2.0] and b.tolist() == [-1.0, -1.0], "the poisoned step is skipped"
    assert scaler.get_scale() == 1.0


# -- checkpoints -----------------------------------------------------------------------------------

def test_state_dict_round_trip_through_ember_save(device, tmp_path):
    fresh = GradScaler(device, init_scale=512.0, growth_interval=5)
    assert fresh.state_dict() == {"scale": 512.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                  "growth_interval": 5, "_growth_tracker": 0}
    model, opt = model_and_optimizer(device)
    for poison in (None, INF, None, None):
        opt.zero_grad()
        scaled_backward(fresh, model, device, poison)
        fresh.step(opt)
        fresh.update()
    state = fresh.state_dict()
    assert state == {"scale": 256.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                     "_growth_tracker": 2}
    ember.save(state, tmp_path / "scaler.pt")
    loaded = ember.load(tmp_path / "scaler.pt")
    unused = GradScaler(device)
    unused.load_state_dict(loaded)
    assert unused.state_dict() == state
    used = GradScaler(device, init_scale=2.0)
    used.scale(ember.tensor(1.0, device=device))
    used.load_state_dict(loaded)
    assert used.get_scale() == 256.0 and used._get_growth_tracker() == 2
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        used.load_state_dict({})


def test_pickling_is_refused_mid_iteration_and_keeps_the_scale(device):
    model, opt = model_and_optimizer(device)
    scaler = GradScaler(device, init_scale=64.0, growth_interval=3)
    scaled_backward(scaler, model, device)
    scaler.step(opt)
    with pytest.raises(AssertionError, match="may only be pickled at the beginning of an iteration"):
        pickle.dumps(scaler)
    scaler.update()
    buffer = io.BytesIO()
    ember.save(scaler, buffer)
    buffer.seek(0)
    copy = ember.load(buffer, weights_only=False)
    assert copy._scale is None and copy.state_dict() == scaler.state_dict()
    assert copy.state_dict()["_growth_tracker"] == 1


# -- disabled --------------------------------------------------------------------------------------

def test_a_disabled_scaler_passes_everything_through(device):
    model, opt = model_and_optimizer(device)
    scaler = GradScaler(device, enabled=False)
    loss = model(batch(device, INF)).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled()
    loss.backward()
    scaler.unscale_(opt)
    before = snapshot(model)
    scaler.step(opt)  # no inf check: the step runs
    scaler.update()
    assert any(not np.array_equal(b, a, equal_nan=True) for b, a in zip(before, snapshot(model)))
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and scaler._get_growth_tracker() == 0
    scaler.load_state_dict({"scale": 4.0})
    assert scaler.get_scale() == 1.0


def test_an_unavailable_device_type_disables_the_scaler_with_a_warning():
    if ember.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.warns(UserWarning, match="CUDA is not available.*Disabling"):
        scaler = GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0
    with pytest.warns(UserWarning, match="'nosuchdevice' is not available"):
        assert not GradScaler("nosuchdevice").is_enabled()


# -- against PyTorch -------------------------------------------------------------------------------

OVERFLOWS = {2: INF, 3: INF, 9: NAN, 14: INF, 15: INF, 16: INF, 23: NAN}  # step -> what the loss is multiplied by
DATA_INF = {19, 27}  # steps with an inf in the input batch


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_thirty_steps_skip_and_scale_exactly_as_pytorch(device, optimizer):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    e_model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 1))
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        e.data.copy_(ember.tensor(t.detach().numpy()))
    e_model.to(device)
    hyper = {"SGD": dict(lr=0.05, momentum=0.9), "Adam": dict(lr=1e-2)}[optimizer]
    t_opt = getattr(torch.optim, optimizer)(t_model.parameters(), **hyper)
    e_opt = getattr(ember.optim, optimizer)(e_model.parameters(), **hyper)
    t_scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    e_scaler = GradScaler(device, init_scale=2.0 ** 10, growth_interval=3)
    rng = np.random.default_rng(0)
    t_log, e_log = [], []
    for step in range(30):
        x = rng.normal(size=(16, 4)).astype(np.float32)
        y = (x.sum(1, keepdims=True) * 0.5).astype(np.float32)
        if step in DATA_INF:
            x[3, 1] = INF
        factor = OVERFLOWS.get(step, 1.0)
        for lib, model, opt, scaler, log, on in ((torch, t_model, t_opt, t_scaler, t_log, "cpu"),
                                                  (ember, e_model, e_opt, e_scaler, e_log, device)):
            opt.zero_grad()
            xs, ys = lib.tensor(x).to(on), lib.tensor(y).to(on)
            loss = ((model(xs) - ys) ** 2).mean() * factor
            scaler.scale(loss).backward()
            before = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            log.append((scaler.get_scale() < before, scaler.get_scale(), scaler.state_dict()["_growth_tracker"]))
    assert [s for s, (skipped, *_) in enumerate(e_log) if skipped] == sorted({*OVERFLOWS, *DATA_INF})
    assert e_log == t_log
    assert e_scaler.state_dict() == t_scaler.state_dict()
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        np.testing.assert_allclose(e.detach().numpy(force=True), t.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_fresh_state_dict_matches_pytorch():
    torch = pytest.importorskip("torch")
    for kwargs in ({}, dict(init_scale=8.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=9)):
        assert GradScaler("cpu", **kwargs).state_dict() == torch.amp.GradScaler("cpu", **kwargs).state_dict()
    assert GradScaler("cpu", enabled=False).state_dict() == torch.amp.GradScaler("cpu", enabled=False).state_dict()
