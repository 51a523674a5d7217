"""``DistributedDataParallel``: one model replica per process, gradients averaged across processes.

At construction every rank takes rank 0's parameters and buffers; each forward runs the local replica on
the local batch (buffers first re-broadcast from rank 0 with ``broadcast_buffers``), and backward
averages the gradients in buckets while it runs (see ``reducer``), so after ``loss.backward()`` every
rank holds the gradient of the whole global batch and the optimizers stay in step.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ... import distributed as dist
from ...autograd.grad_mode import is_grad_enabled
from ...dispatch.schema.device import device
from ...utils._nested import map_tensors
from ..modules.module import Module
from .buckets import FIRST_BUCKET_BYTES, MIB
from .reducer import Reducer
from .states import broadcast_coalesced

DEFAULT_BUCKET_CAP_MB = 25

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data parallelism across the ranks of ``process_group`` (default: the whole world)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False) -> None:
        super().__init__()
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        if process_group is None and not dist.is_initialized():
            raise ValueError("DistributedDataParallel: the default process group has not been initialized; call "
                             "ember.distributed.init_process_group(...) first")
        self.module = module
        self.process_group = process_group
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.check_reduction = check_reduction  # accepted for compatibility; PyTorch ignores it too
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.device_ids, self.output_device = _single_device(module, device_ids, output_device)
        self.bucket_bytes_cap = int((DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * MIB)
        self._src = 0 if process_group is None else dist.get_global_rank(process_group, 0)
        params = [p for _, p in named]
        if init_sync:
            _verify_same_parameters(process_group, named)
            states = list(module.parameters()) + (list(module.buffers()) if broadcast_buffers else [])
            broadcast_coalesced(dist, states, self._src, process_group)
        first_bucket = FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self.reducer = Reducer(dist, process_group, params, [name for name, _ in named], self.bucket_bytes_cap,
                               first_bucket, find_unused_parameters, gradient_as_bucket_view, static_graph)

    # -- forward ---------------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs) -> Any:
        syncing = is_grad_enabled() and self.require_backward_grad_sync
        if syncing:
            self.reducer.prepare_for_forward()
        if self.will_sync_module_buffers():
            self._sync_buffers()
        if self.device_ids:
            target = self.device_ids[0]
            inputs, kwargs = map_tensors((inputs, kwargs), lambda t: t.to(target))
        output = self.module(*inputs, **kwargs)
        if syncing:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(output)
        else:
            self.require_forward_param_sync = False
        return output

    def will_sync_module_buffers(self) -> bool:
        """Buffers are re-broadcast before a forward that follows a synchronized one."""
        return self.require_forward_param_sync and self.broadcast_buffers and any(True for _ in self.module.buffers())

    def _sync_buffers(self) -> None:
        broadcast_coalesced(dist, list(self.module.buffers()), self._src, self.process_group)

    # -- gradient accumulation -------------------------------------------------------------------------
    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside accumulate gradients locally; the first synchronized one averages the sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


def _single_device(module: Module, device_ids, output_device):
    """PyTorch's rule: ``device_ids`` names the one device of a single-device module, or is None."""
    if not device_ids:
        if output_device is not None:
            raise ValueError(f"DistributedDataParallel: output_device={output_device} needs device_ids as well")
        return None, None
    if len(device_ids) > 1:
        raise ValueError("device_ids can only be None or contain a single element.")
    devices = {p.device for p in module.parameters()}
    if len(devices) != 1:
        raise ValueError(f"DistributedDataParallel device_ids and output_device arguments only work with "
                         f"single-device modules, but got device_ids {device_ids} and module parameters on "
                         f"{sorted(str(d) for d in devices)}")
    (home,) = devices
    wanted = _as_device(device_ids[0], home)
    if wanted != home:
        raise ValueError(f"DistributedDataParallel: device_ids {device_ids} name {wanted}, but the module's "
                         f"parameters are on {home}")
    return [wanted], _as_device(device_ids[0] if output_device is None else output_device, home)


def _as_device(spec, home):
    """An int is an index on the module's device type, as in PyTorch."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        return device(home.type, spec)
    return device(spec)


def _verify_same_parameters(group, named: list) -> None:
    """Every rank must wrap the same architecture: compare parameter names, shapes and dtypes with rank 0's."""
    mine = [(name, tuple(p.shape), str(p.dtype)) for name, p in named]
    everyone: list = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, mine, group=group)
    reference = everyone[0]
    for rank, theirs in enumerate(everyone):
        if theirs == reference:
            continue
        if len(theirs) != len(reference):
            detail = f"rank 0 has {len(reference)} parameters requiring grad, rank {rank} has {len(theirs)}"
        else:
            ours, other = next((a, b) for a, b in zip(reference, theirs) if a != b)
            detail = (f"rank 0 has parameter {ours[0]} of shape {ours[1]} and dtype {ours[2]}, rank {rank} has "
                      f"{other[0]} of shape {other[1]} and dtype {other[2]}")
        raise RuntimeError(f"DistributedDataParallel expects the same model on every rank, but {detail}")

