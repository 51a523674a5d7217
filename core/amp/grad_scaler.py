"""``ember.amp.GradScaler``: PyTorch's ``torch.amp.GradScaler``, loss scaling for low-precision training.

The loss is multiplied by a scale factor before backward, so that small float16 gradients do not flush to
zero; ``step`` divides the gradients by it again and skips the optimizer step when any of them overflowed;
``update`` lowers the scale after an overflow and raises it after ``growth_interval`` clean steps.

Everything stays on the device until the step decides: per device, one fused op
(``_amp_foreach_non_finite_check_and_unscale``) checks and unscales all of an optimizer's gradients, and
one op (``_amp_update_scale``) updates the scale; ``step`` reads one flag per device to the host.
"""
from __future__ import annotations

import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any, Iterable

from ..autograd.grad_mode import no_grad
from ..compiler.state import runs_eagerly
from ..dispatch.contract import registry
from ..dispatch.schema.dtypes import float16, float32, int32
from ..dispatch.ops import F
from ..tensor import Tensor

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    """Where one optimizer is in the current iteration."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDevice:
    """One tensor's copies on the devices asked for, each made once (the scale for outputs on several devices)."""

    def __init__(self, master: Tensor) -> None:
        self.master = master
        self.tensors: dict = {}

    def get(self, device) -> Tensor:
        copy = self.tensors.get(device)
        if copy is None:
            copy = self.tensors[device] = self.master.to(device)
        return copy


def _unavailable_reason(device_type: str) -> str | None:
    """Why tensors cannot be placed on ``device_type`` here, or None where they can."""
    status = registry.status(device_type)
    if status is None:
        return f"no backend plugin provides device type {device_type!r}"
    if status != "available":
        return status.removeprefix("unavailable: ")
    if registry.get_backend(device_type).device_count() == 0:
        return "it has no devices"
    return None


class GradScaler:
    """``GradScaler(device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)``: the usual iteration is ::

        scaler.scale(loss).backward()
        scaler.step(optimizer)   # optionally after scaler.unscale_(optimizer) and gradient clipping
        scaler.update()

    A device type that cannot run here disables the scaler with a warning, as PyTorch does for "cuda"
    without a GPU; a disabled scaler passes everything through unchanged.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        self._device_type = str(device).split(":")[0]  # "cuda:0" names the type "cuda"
        if enabled:
            reason = _unavailable_reason(self._device_type)
            if reason is not None:
                label = "CUDA" if self._device_type == "cuda" else repr(self._device_type)
                warnings.warn(f"ember.amp.GradScaler is enabled, but {label} is not available ({reason}).  "
                              f"Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale: Tensor | None = None  # made by the first scale(), on the outputs' device
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker: Tensor | None = None  # consecutive unskipped steps, an int32 beside the scale
        self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_refresh_per_optimizer_state)

    # -- the scale and its tracker ------------------------------------------------------------------

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = F.full((), self._init_scale, dtype=float32, device=device)
        self._growth_tracker = F.full((), self._init_growth_tracker, dtype=int32, device=device)

    def scale(self, outputs: Tensor | Iterable) -> Tensor | Iterable:
        """``outputs`` (a tensor, or lists, tuples and other iterables of tensors) times the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)
        scales: list[_PerDevice] = []  # made at the first tensor found

        def apply_scale(value):
            if isinstance(value, Tensor):
                if not scales:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(value.device)
                    scales.append(_PerDevice(self._scale))
                return value * scales[0].get(value.device)
            if isinstance(value, abc.Iterable):
                scaled = map(apply_scale, value)
                return type(value)(scaled) if isinstance(value, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    # -- unscaling ----------------------------------------------------------------------------------

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, allow_fp16: bool) -> dict:
        """Unscales every gradient of ``optimizer`` in place: one fused op per device. Returns each device's
        found_inf flag (a 0-d float32 tensor, nonzero where a gradient held an inf or nan)."""
        per_device_grads: dict = defaultdict(list)
        for group in optimizer.param_groups:
            for param in group["params"]:
                if not isinstance(param, Tensor):
                    raise AssertionError(f"expected param to be ember.Tensor, got {type(param).__name__}")
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype is float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                per_device_grads[param.grad.device].append(param.grad)
        inv_scales = _PerDevice(inv_scale)
        found_inf_per_device = {}
        with no_grad():
            for device, grads in per_device_grads.items():
                *unscaled, found_inf = F._amp_foreach_non_finite_check_and_unscale(grads, inv_scales.get(device))
                for grad, value in zip(grads, unscaled):
                    grad.copy_(value)  # in place: the optimizer may hold the gradient tensors
                found_inf_per_device[device] = found_inf
        return found_inf_per_device

    @runs_eagerly
    def unscale_(self, optimizer) -> None:
        """Divides ``optimizer``'s gradients by the scale factor, in place (for clipping or inspecting them
        before ``step``); at most once per optimizer per iteration. Reads nothing to the host."""
        if not self._enabled:
            return
        scale, _ = self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, F.reciprocal(scale), False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _check_inf_per_device(self, optimizer) -> dict:
        """Checks the gradients for infs without unscaling them (for optimizers that unscale themselves)."""
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        ones = F.full((), 1.0, dtype=float32, device=scale.device)
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, ones, True)
        return state["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    # -- the step -----------------------------------------------------------------------------------

    @runs_eagerly
    def step(self, optimizer, *args: Any, **kwargs: Any) -> Any:
        """Unscales the gradients (unless ``unscale_`` did already) and runs ``optimizer.step(*args, **kwargs)``
        unless a gradient holds an inf or nan. Returns what ``optimizer.step`` returned, or None if skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_scaling_optimizer(optimizer, optimizer_state, args, kwargs)
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(found_inf.item() for found_inf in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)  # one host read per device, above
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def _step_scaling_optimizer(self, optimizer, optimizer_state: dict, args: tuple, kwargs: dict) -> Any:
        """PyTorch's contract with optimizers that handle scaled gradients themselves
        (``_step_supports_amp_scaling``): they get ``grad_scale`` and ``found_inf`` as attributes, or, where
        ``step`` takes a ``grad_scaler`` keyword (deprecated), the scaler itself."""
        passes_scaler = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if passes_scaler:
            warnings.warn("GradScaler is going to stop passing itself as a keyword argument to the passed "
                          "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                          "`found_inf: Tensor` to the passed optimizer and let the optimizer use them directly.",
                          FutureWarning, stacklevel=3)
            kwargs = {**kwargs, "grad_scaler": self}
        else:
            if optimizer_state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scale = self._scale
            found_inf = None
            for flag in optimizer_state["found_inf_per_device"].values():
                flag = flag.to(scale.device)
                found_inf = flag if found_inf is None else found_inf + flag
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                    if optimizer_state["stage"] is OptState.UNSCALED
                                    else scale * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = found_inf if found_inf is not None else 0
        retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        if not passes_scaler:
            del optimizer.grad_scale
            del optimizer.found_inf
        return retval

    # -- the update ---------------------------------------------------------------------------------

    @runs_eagerly
    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Ends the iteration: sets ``new_scale`` if given, else backs the scale off after an inf/nan (in any
        optimizer's gradients) and grows it after ``growth_interval`` clean iterations. On the device."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._set_scale(new_scale)
        else:
            found_infs = [found_inf.to(scale.device) for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for found_inf in found_infs[1:]:
                found_inf_combined = found_inf_combined + found_inf
            self._scale, self._growth_tracker = F._amp_update_scale(
                scale, growth_tracker, found_inf_combined, self._growth_factor, self._backoff_factor,
                self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _set_scale(self, new_scale: float | Tensor) -> None:
        if isinstance(new_scale, (int, float)) and not isinstance(new_scale, bool):
            self._scale.fill_(float(new_scale))
            return
        reason = (f"new_scale should be a float or a 1-element floating tensor on device type "
                  f"{self._device_type!r} with requires_grad=False.")
        if not isinstance(new_scale, Tensor):
            raise TypeError(f"{reason} Got {type(new_scale).__name__}.")
        if new_scale.device.type != self._device_type or new_scale.numel() != 1 or new_scale.requires_grad:
            raise AssertionError(reason)
        self._scale.copy_(new_scale.reshape(()))

    # -- reading and setting the configuration ------------------------------------------------------

    def _get_scale_async(self) -> Tensor | None:
        return self._scale

    def get_scale(self) -> float:
        """The current scale factor as a Python float (1.0 when disabled); reads it from the device."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    # -- checkpoints --------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's five entries, as Python numbers (an empty dict when disabled); take it after ``update``."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the scale and tracker as numbers, remade lazily on first use; refused mid-iteration."""
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
