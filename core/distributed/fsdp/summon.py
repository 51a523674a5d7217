"""``summon_full_params``: the original parameters, whole, as ``nn.Parameter``s of their modules, for a while.

Changes made inside are written back to each rank's shard on exit (``writeback``). The values are gathered
in the parameters' own dtype, not a mixed-precision compute dtype.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ...autograd.grad_mode import no_grad
from ...nn.modules.module import Module
from ...nn.parameter import Parameter
from .. import state as dist_state
from .construction import is_unit
from .flat_param import FlatParamHandle


@contextmanager
def full_params(module: Module, recurse: bool = True, writeback: bool = True, rank0_only: bool = False,
                offload_to_cpu: bool = False, with_grads: bool = False) -> Iterator[None]:
    if rank0_only and writeback:
        raise ValueError("summon_full_params: writeback=True and rank0_only=True cannot be combined: the other "
                         "ranks would have nothing to write back")
    if offload_to_cpu and writeback:
        raise ValueError("summon_full_params: offload_to_cpu=True needs writeback=False")
    units = [m.__dict__["_fsdp_state"] for m in module.modules() if is_unit(m)]
    if not recurse:
        units = units[:1]
    handles = [u.handle for u in units if u.handle is not None]
    show = not rank0_only or not dist_state.is_initialized() or dist_state.get_rank() == 0
    summoned = []
    for handle in handles:
        full = handle.gather_full()
        grad = handle.shard_grad() if with_grads else None
        grads = handle.gather_full(grad) if grad is not None else None
        if offload_to_cpu:
            full, grads = full.cpu(), (grads.cpu() if grads is not None else None)
        previous = [info.param.grad for info in handle.infos]
        summoned.append((handle, full, previous))
        if show:
            _show(handle, full, grads)
    try:
        yield
    finally:
        for handle, full, previous in summoned:
            if writeback:
                with no_grad():
                    handle.flat_param.detach().copy_(
                        full[handle.shard_start:handle.shard_start + handle.shard_numel].to(handle.flat_param.device))
            if show:
                _hide(handle, previous)


def _show(handle: FlatParamHandle, full, grads) -> None:
    if handle.registered_on is not None:
        handle.registered_on._parameters.pop("_flat_param", None)
    for info in handle.infos:
        view = info.view_of(full)
        if handle.use_orig_params:
            info.param.data = view
            param = info.param
        else:
            param = Parameter(view, requires_grad=info.param.requires_grad)
            for module, name in info.places():
                module.__dict__.pop(name, None)
                module._parameters[name] = param
        if grads is not None:
            param.grad = info.view_of(grads)


def _hide(handle: FlatParamHandle, previous_grads: list) -> None:
    for info, grad in zip(handle.infos, previous_grads):
        if handle.use_orig_params:
            info.param.grad = grad
        else:
            for module, name in info.places():
                module._parameters.pop(name, None)
    if handle.use_orig_params:
        handle._point_originals_at_shard()
    if handle.registered_on is not None:
        handle.registered_on._parameters["_flat_param"] = handle.flat_param
    if handle.is_unsharded:
        handle.install_views()
    else:
        handle.uninstall_views()
