"""``Optimizer``: parameter groups, per-parameter state and checkpoints, shared by every optimizer.

Written only in Ember tensor operations, so one optimizer runs on every backend.

SGD, Adam, AdamW, RMSprop and Adagrad update a whole parameter group with one multi-tensor op per (device,
dtype) and step (``_fused_sgd_``, ``_fused_adam_`` ...; ``foreach=None`` or ``True`` and ``fused=True``, as
PyTorch's ``foreach``/``fused`` implementations), which a backend runs as one kernel loop or launch. That op
writes the parameters *and* their state tensors (``exp_avg``, ``momentum_buffer``, ...) in place, so state
tensors keep their identity across steps (a ``state_dict()`` holds references, as in PyTorch: copy it to keep
a snapshot). ``foreach=False`` runs the per-parameter updates, and ``differentiable=True`` their composition
of tensor ops recorded by autograd (admitting non-leaf parameters), as in PyTorch; those rebind state tensors.

``state["step"]`` is a Python int, not a 0-d tensor: reading a device scalar every step would cost an op and,
on asynchronous backends, a synchronisation. With ``capturable=True`` (on the multi-tensor path) it is a 0-d
float32 tensor on the parameter's device instead, incremented and read there, so that a step recorded once
(a CUDA graph) advances it on every replay; ``_graph_safe()`` says when that holds for a whole optimizer.
Other scalar state (NAdam's ``mu_product``, ASGD's ``eta`` and ``mu``) is a Python float.
"""
from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from itertools import chain
from typing import Any, Callable, Iterable, Iterator

from ..autograd import enable_grad, set_grad_enabled
from ..compiler.state import runs_eagerly
from ..dispatch.ops import F
from ..dispatch.schema.dtypes import float32
from ..tensor import Tensor


class _RequiredParameter:
    """Marks a hyperparameter that every param group must give (PyTorch's ``optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _marks_called(step):
    """Wrap ``step`` to record on the optimizer that it ran (PyTorch warns when a scheduler steps first).
    Inside code ``ember.compile`` captured, the step runs as itself on every call: its Python state (the step
    count behind Adam's bias correction, rebound moment tensors) changes each time."""
    @functools.wraps(step)
    def marked_step(self, *args, **kwargs):
        self._opt_called = True
        return step(self, *args, **kwargs)
    marked_step = runs_eagerly(marked_step)
    marked_step._marks_called = True
    return marked_step


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts
    (param groups) whose ``"params"`` entry holds them and whose other entries override
    ``defaults`` for that group. Subclasses state what their update needs (``_state_names`` or
    ``_initial_state``, ``_options`` and ``_update``), or implement ``_step_group(group)``, or
    override ``step`` entirely.
    """

    #: The state tensors a parameter starts with (zeros shaped like it), after ``step`` where it is counted.
    _state_names: tuple[str, ...] = ()
    #: Whether the state counts the parameter's updates in ``step``: SGD's and Muon's do not, as in PyTorch.
    _counts_steps: bool = True

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got ember.Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __init_subclass__(cls, **kwargs) -> None:
        """Mark each subclass's own ``step``, so that LR schedulers can tell whether it ran before them."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_marks_called", False):
            cls.step = _marks_called(step)

    # -- param groups ---------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group (a dict with ``"params"`` and optional hyperparameters), e.g. when unfreezing layers."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names and len(names) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__module__}.{type(p).__name__}")
            if not (p.is_leaf or p.retains_grad or self.defaults.get("differentiable")):
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group, params=params)
        if names:
            group["param_names"] = names
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            group.setdefault(name, default)

        ids = [id(p) for p in params]
        if len(set(ids)) != len(ids):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; each is updated "
                          "once per occurrence", stacklevel=3)
        for i, other in enumerate(self.param_groups):
            if ("param_names" in other) != ("param_names" in group):
                raise ValueError("all optimizer param groups should be with/without names. cannot add param "
                                 f"group {'with' if names else 'without'} names to the optimizer")
            if not set(ids).isdisjoint(id(p) for p in other["params"]):
                raise ValueError(f"some parameters appear in more than one parameter group "
                                 f"(group {i} and the new group {len(self.param_groups)})")
        self.param_groups.append(group)

    # -- stepping ------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop the gradients (``set_to_none=True``, the default) or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    @_marks_called
    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; ``closure`` re-evaluates the loss first.

        The update itself is recorded by autograd only with ``differentiable=True``.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _params_with_grad(self, group: dict[str, Any]) -> Iterator[tuple[Tensor, Tensor, dict[str, Any]]]:
        """``(param, grad, state)`` for each parameter of ``group`` that has a gradient: the loop of every
        optimizer. With ``fused=True`` the parameters must be floating point, as in PyTorch."""
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if group.get("fused") and not p.is_floating_point():
                raise RuntimeError(f"`fused=True` requires all the params to be floating point Tensors, but "
                                   f"{type(self).__name__} got a parameter of dtype {p.dtype} on {p.device}")
            yield p, grad, self.state[p]

    def _step_group(self, group: dict[str, Any]) -> None:
        """The loop every optimizer shares: each parameter with a gradient gets its state on first use, counts
        the step, then ``_update`` runs with the group's hyperparameters (read once per group); or, on the
        multi-tensor path, ``_multi_tensor_step`` runs once per (device, dtype) of the group's parameters."""
        if type(self)._update is Optimizer._update:  # fail even where no parameter has a gradient
            raise NotImplementedError(f"{type(self).__name__} must implement step() or _step_group(group)")
        options, update, counts_steps = self._options(group), self._update, self._counts_steps
        multi = self._uses_multi_tensor(group)
        buckets: dict[tuple, list] = {}
        complex_states: list = []
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state.update(self._initial_state(p, grad, group))
            if counts_steps:
                step = state["step"]
                if isinstance(step, Tensor):
                    step.add_(1)  # on the device: a replayed graph advances it
                else:
                    state["step"] = step + 1
            if p._dtype.is_complex:  # stepped as its real view, as PyTorch does: each part has its own moments
                real_state = real_view_state(state)
                p, grad = F.view_as_real(p), F.view_as_real(grad)
                complex_states.append((state, real_state, dict(real_state), p.shape))
                state = real_state
            if multi:
                buckets.setdefault((p.device, p.dtype), []).append((p, grad, state))
            elif isinstance(state.get("step"), Tensor):  # a capturable state on the per-parameter path
                step = state["step"]
                state["step"] = int(step.item())
                try:
                    update(p, grad, state, options)
                finally:
                    state["step"] = step
            else:
                update(p, grad, state, options)
        for entries in buckets.values():
            self._multi_tensor_step(group, entries, options)
        for state, real_state, views, real_shape in complex_states:
            write_back_complex_state(state, real_state, views, real_shape)

    def _uses_multi_tensor(self, group: dict[str, Any]) -> bool:
        """Whether ``group`` steps through the multi-tensor op: where the optimizer has one, unless
        ``foreach=False`` or ``differentiable=True`` asks for the per-parameter path (``fused=True`` wins)."""
        if type(self)._multi_tensor_step is Optimizer._multi_tensor_step or group.get("differentiable", False):
            return False
        return bool(group.get("fused")) or group.get("foreach") is not False

    def _multi_tensor_step(self, group: dict[str, Any], entries: list, options: Any) -> None:
        """Update ``entries`` (``(param, grad, state)`` of one device and dtype, states made and steps counted)
        with one multi-tensor op call, in place."""
        raise NotImplementedError(f"{type(self).__name__} has no multi-tensor step")

    def _device_steps(self, group: dict[str, Any]) -> bool:
        """Whether ``group`` counts steps in 0-d device tensors (``capturable`` on the multi-tensor path)."""
        return bool(group.get("capturable")) and self._counts_steps and self._uses_multi_tensor(group)

    def _graph_safe(self) -> bool:
        """Whether ``step()`` can be recorded once and replayed (``ember.compile(mode="reduce-overhead")`` asks):
        every group steps through the multi-tensor op, keeps any step count on the device (``capturable``),
        and every parameter in it already has its state, so that no step changes Python-side state. The
        hyperparameters (``lr``, ...) are part of a recording: changing them calls for a new one."""
        for group in self.param_groups:
            if not self._uses_multi_tensor(group):
                return False
            if self._counts_steps and not self._device_steps(group):
                return False
            if not all(self._has_state(self.state.get(p, {}), group) for p in group["params"]):
                return False
        return True

    def _make_capturable(self) -> bool:
        """Keep step counts on the device from now on (``capturable=True`` in every group), as ``torch.compile``
        does for an optimizer whose step it records into CUDA graphs; returns ``_graph_safe()`` afterwards.
        Groups on the per-parameter path cannot be recorded, so then nothing changes and the answer is False."""
        if not all(self._uses_multi_tensor(group) for group in self.param_groups):
            return False
        for group in self.param_groups:
            group["capturable"] = True
            for p in group["params"]:
                state = self.state.get(p)
                step = state.get("step") if state else None
                if step is not None and not isinstance(step, Tensor):
                    state["step"] = F.full((), float(step), dtype=float32, device=p.device)
        return self._graph_safe()

    def _has_state(self, state: dict[str, Any], group: dict[str, Any]) -> bool:
        """Whether a parameter's state is complete, so that its next step creates nothing (``_graph_safe``)."""
        return bool(state)

    def _initial_state(self, p: Tensor, grad: Tensor | None, group: dict[str, Any]) -> dict[str, Any]:
        """A parameter's first state: ``step`` (where counted) and ``_state_names`` as zeros, in that order,
        which is the order ``state_dict()`` lists them in. ``grad`` is None where the state is made before a
        step (Adagrad)."""
        state: dict[str, Any] = {}
        if self._counts_steps:
            state["step"] = F.zeros((), dtype=float32, device=p.device) if self._device_steps(group) else 0
        for name in self._state_names:
            state[name] = F.zeros_like(p)
        return state

    def _options(self, group: dict[str, Any]) -> Any:
        """What ``_update`` needs from ``group``, read once per step: for most optimizers, the keyword arguments
        of their update function."""
        return {}

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], options: Any) -> None:
        """One parameter's update: write it into ``p`` and rebind ``state``'s entries."""
        raise NotImplementedError(f"{type(self).__name__} must implement _update for Optimizer._step_group")

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``.

        Parameters appear as their position in the groups, never as tensors, so a
        checkpoint can be loaded into an optimizer built around new parameter objects.
        """
        index: dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): dict(v) for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state and hyperparameters saved by ``state_dict()``.

        Groups are matched by position and must hold as many parameters as the saved
        ones. State tensors are copied onto each parameter's device; floating ones also
        take the parameter's dtype, as in PyTorch.
        """
        saved_groups = saved_param_groups(self, state_dict, "load_state_dict", "state_dict", ValueError)
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't match the size of "
                                 f"optimizer's group: group {i} has {len(saved['params'])} saved parameters, "
                                 f"the optimizer's has {len(group['params'])}")
        by_index = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                            chain.from_iterable(g["params"] for g in self.param_groups)))
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            param = by_index.get(key)
            if param is None:
                state[key] = value
            else:
                state[param] = {k: _cast_state(param, v, k) for k, v in value.items()}
        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            new = {k: _copy_value(v) for k, v in saved.items()}
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                new["param_names"] = group["param_names"]
            for name, default in self.defaults.items():
                new.setdefault(name, default)
            new_groups.append(new)
        self.state = state
        self.param_groups = new_groups
        for group in new_groups:  # step counts as the group keeps them: on the device where capturable
            device_steps = self._device_steps(group)
            for p in group["params"]:
                step = state[p].get("step") if p in state else None
                if device_steps and step is not None and not isinstance(step, Tensor):
                    state[p]["step"] = F.full((), float(step), dtype=float32, device=p.device)
                elif device_steps and isinstance(step, Tensor):
                    state[p]["step"] = step.to(p.device, float32, copy=True).reshape(())

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        return "\n".join(lines) + "\n)"


def saved_param_groups(optimizer: Optimizer, state_dict: dict[str, Any], caller: str, argument: str,
                       mismatch: type[Exception]) -> list[dict[str, Any]]:
    """``state_dict["param_groups"]``, after checking ``state_dict`` looks like ``Optimizer.state_dict()``'s
    (else ValueError) and has as many groups as ``optimizer`` (else ``mismatch``)."""
    if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
        raise ValueError(f"{caller}: {argument} must be a dict with keys 'state' and 'param_groups', as returned "
                         f"by Optimizer.state_dict()")
    groups = state_dict["param_groups"]
    if len(groups) != len(optimizer.param_groups):
        raise mismatch(f"{caller}: {argument} has a different number of parameter groups: {len(groups)} saved, "
                       f"{len(optimizer.param_groups)} in the optimizer")
    return groups


def real_view_state(state: dict[str, Any]) -> dict[str, Any]:
    """A complex parameter's state as its optimizer sees it: every complex tensor as its real view."""
    return {k: F.view_as_real(v) if isinstance(v, Tensor) and v._dtype.is_complex else v for k, v in state.items()}


def write_back_complex_state(state: dict[str, Any], real_state: dict[str, Any], views: dict[str, Any],
                             real_shape) -> None:
    """Keep in a complex parameter's own ``state`` what its update rebound in ``real_state`` (new moment
    tensors, a momentum buffer made on the first step, the step count), complex where it has the parameter's
    real-view shape; the ``views`` it was given and wrote into in place already changed it."""
    for k, v in real_state.items():
        if v is views.get(k, state):  # unchanged, or written in place
            continue
        per_element = isinstance(v, Tensor) and not v._dtype.is_complex and v.shape == real_shape
        state[k] = F.view_as_complex(v.contiguous()) if per_element else v


def _cast_state(param: Tensor, value, key=None):
    """A copy of one saved state value, with tensors moved to ``param``'s device (and float dtype)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value.item() if value.numel() == 1 else value.clone()
        dtype = param.dtype if value.is_floating_point() and param.is_floating_point() else value.dtype
        return value.to(param.device, dtype, copy=True)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


def _copy_value(value):
    """Hyperparameters are copied so that later edits to a loaded checkpoint don't reach the optimizer."""
    if isinstance(value, list):
        return [_copy_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy_value(v) for k, v in value.items()}
    return value


def check_implementation_flags(*, foreach: bool | None = None, fused: bool | None = None,
                               differentiable: bool = False) -> None:
    """PyTorch's rules for combining ``fused`` with ``foreach`` and ``differentiable``."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def check_betas(betas) -> tuple[float, float]:
    """``betas`` as a pair of floats in [0, 1), with PyTorch's messages."""
    if len(betas) != 2:
        raise ValueError(f"Invalid betas: expected a pair (beta1, beta2), got {betas!r}")
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    return float(betas[0]), float(betas[1])


def hyperparameters(group: dict[str, Any], *floats: str, flags: tuple[str, ...] = ()) -> dict[str, Any]:
    """The keyword arguments of an update function, read from a param group: ``floats`` as floats (``betas``
    as ``beta1`` and ``beta2``), ``flags`` as given."""
    options: dict[str, Any] = {}
    for name in floats:
        if name == "betas":
            options["beta1"], options["beta2"] = float(group["betas"][0]), float(group["betas"][1])
        else:
            options[name] = float(group[name])
    options.update((name, group[name]) for name in flags)
    return options


def check_non_negative(**values: float) -> None:
    """``ValueError("Invalid <what>: <value>")`` for each negative hyperparameter, as PyTorch words it."""
    labels = {"lr": "learning rate", "eps": "epsilon value"}
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {labels.get(name, name + ' value')}: {value}")
