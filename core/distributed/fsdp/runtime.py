"""What happens around each FSDP unit's forward and backward; shared by ``FullyShardedDataParallel`` and
``fully_shard``.

Forward: gather the unit's parameters (or wait for a prefetch), start gathering the next unit when asked,
run the module, then free the gathered parameters again where the strategy says so; tensors saved for
backward that are parameter views are saved as tokens, so freeing really frees. Backward: a hook on the
unit's outputs gathers the parameters again before the unit's gradients are computed; when ``full.grad``
is complete the gradient is reduce-scattered and the parameters freed. The root unit queues one callback
that, at the end of backward, waits for every reduction and hands the gradients to the shards.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field

from ...autograd.engine import queue_callback
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.saved_hooks import saved_tensors_hooks
from ...tensor import Tensor
from ...utils._nested import map_tensors
from .flat_param import FlatParamHandle, installed_view

MAX_GATHERS_AHEAD = 2  # limit_all_gathers: gathered units waiting for their turn, at most


@dataclass
class UnitConfig:
    """How one unit behaves (FSDP's constructor arguments, or fully_shard's)."""

    reshard_after_forward: bool = True
    reshard_after_backward: bool = True
    forward_prefetch: bool = False
    backward_prefetch: object = None  # BackwardPrefetch or None
    limit_all_gathers: bool = True
    param_dtype: object = None
    cast_root_inputs: bool = True
    cast_inputs: bool = False


@dataclass
class Tree:
    """State shared by every unit under one root: the order units ran in, and this backward's flags."""

    units: list["UnitState"] = field(default_factory=list)
    forward_order: list["UnitState"] = field(default_factory=list)
    order_known: bool = False
    callback_queued: bool = False
    sync_grads: bool = True


class UnitState:
    """One unit: its handle (None when it owns no parameters), its configuration, its place in the tree."""

    def __init__(self, module, handle: FlatParamHandle | None, config: UnitConfig) -> None:
        self.module = module
        self.handle = handle
        self.config = config
        self.tree: Tree | None = None
        self.is_root = False
        self.backward_started = False
        self.state_dict_settings = None  # FSDP.state_dict_type's choice (state_dicts.py); None: the default
        if handle is not None:
            handle.on_grad = self._grad_ready

    # -- forward ---------------------------------------------------------------------------------------
    def run_forward(self, call, args: tuple, kwargs: dict):
        self._lazy_init()
        if self.is_root:
            self._start_iteration()
            if self.config.param_dtype is not None and self.config.cast_root_inputs:
                args, kwargs = _cast_floating((args, kwargs), self.config.param_dtype)
        elif self.config.param_dtype is not None and self.config.cast_inputs:
            args, kwargs = _cast_floating((args, kwargs), self.config.param_dtype)
        tree = self.tree
        if not tree.order_known and self not in tree.forward_order:
            tree.forward_order.append(self)
        if self.handle is not None:
            self.handle.unshard()
        if self.config.forward_prefetch and tree.order_known:
            self._prefetch(+1)
        frees = self._frees_after_forward()
        hooks = saved_tensors_hooks(_pack, _unpack) if frees and is_grad_enabled() else nullcontext()
        with hooks:
            output = call(*args, **kwargs)
        if frees:
            self.handle.reshard()
        if is_grad_enabled():
            self.backward_started = False
            _on_output_grads(output, self._pre_backward)
        return output

    def _frees_after_forward(self) -> bool:
        if self.handle is None:
            return False
        if not is_grad_enabled():
            return True  # no backward will come to use them
        return self.config.reshard_after_forward and not self.is_root

    def _lazy_init(self) -> None:
        if self.tree is not None:
            return
        tree = self.tree = Tree(units=[self])
        for module in self.module.modules():
            unit = getattr(module, "_fsdp_state", None)
            if isinstance(unit, UnitState) and unit.tree is None:
                unit.tree = tree
                tree.units.append(unit)
        self.is_root = True

    def _start_iteration(self) -> None:
        self.tree.callback_queued = False

    # -- backward --------------------------------------------------------------------------------------
    def _pre_backward(self, grad) -> None:
        if self.backward_started:
            return None
        self.backward_started = True
        tree = self.tree
        if not tree.callback_queued:
            tree.callback_queued = True
            queue_callback(self.tree_root()._finish_backward)
        if self.handle is not None:
            self.handle.unshard()
        if _is_pre(self.config.backward_prefetch) and tree.order_known:
            self._prefetch(-1)
        return None

    def _grad_ready(self, handle: FlatParamHandle, grad: Tensor) -> None:
        if self.tree is not None and not self.tree.sync_grads:
            handle.accumulate_unsynced(grad)
        else:
            handle.start_reduce(grad)
        if self.config.reshard_after_backward:
            handle.reshard()
        if self.config.backward_prefetch is not None and not _is_pre(self.config.backward_prefetch) and \
                self.tree is not None and self.tree.order_known:
            self._prefetch(-1)

    def tree_root(self) -> "UnitState":
        return next(u for u in self.tree.units if u.is_root)

    def _finish_backward(self) -> None:
        tree = self.tree
        for unit in tree.units:
            if unit.handle is not None:
                unit.handle.finish_reduce()
                if unit.config.reshard_after_backward:
                    unit.handle.reshard()
                if unit.handle.is_unsharded:  # kept gathered: fresh views, as backward freed the old ones' graph
                    unit.handle.install_views()
            unit.backward_started = False
        tree.order_known = True
        tree.callback_queued = False

    # -- prefetching -----------------------------------------------------------------------------------
    def _prefetch(self, step: int) -> None:
        """Start gathering the unit that runs next (forward: ``step`` +1; backward: -1)."""
        order = self.tree.forward_order
        if self not in order:
            return
        at = order.index(self) + step
        if not 0 <= at < len(order):
            return
        target = order[at].handle
        if target is None or target.is_unsharded:
            return
        if self.config.limit_all_gathers:
            waiting = sum(1 for u in order if u.handle is not None and u.handle._gathering is not None)
            if waiting >= MAX_GATHERS_AHEAD:
                return
        target.start_unshard()


def _is_pre(prefetch) -> bool:
    return prefetch is not None and getattr(prefetch, "name", "") == "BACKWARD_PRE"


class _Token:
    """A parameter view saved for backward, kept as its place in a unit rather than as its storage."""

    __slots__ = ("handle", "index")

    def __init__(self, handle: FlatParamHandle, index: int) -> None:
        self.handle, self.index = handle, index


def _pack(tensor):
    entry = installed_view(tensor)
    return tensor if entry is None else _Token(*entry)


def _unpack(packed):
    if packed.__class__ is _Token:
        packed.handle.unshard()
        return packed.handle.views[packed.index]
    return packed


def _on_output_grads(output, hook) -> None:
    """Run ``hook`` when the first gradient reaches any tensor of ``output`` (nested lists, tuples, dicts)."""
    if isinstance(output, Tensor):
        if output.requires_grad:
            output.register_hook(hook)
    elif isinstance(output, (list, tuple)):
        for item in output:
            _on_output_grads(item, hook)
    elif isinstance(output, dict):
        for item in output.values():
            _on_output_grads(item, hook)


def _cast_floating(obj, dtype):
    return map_tensors(obj, lambda t: t.to(dtype) if t.dtype.is_floating_point else t)
