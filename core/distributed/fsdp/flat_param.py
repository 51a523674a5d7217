"""One FSDP unit's parameters as one flat, padded vector, split into equal shards across ranks.

The unit's parameters are concatenated in a fixed order and padded to a multiple of the shard group's size;
each rank keeps one slice, ``flat_param`` (what the optimizer updates). ``unshard`` gathers the whole vector
into ``full``: one leaf tensor for the unit's life (autograd's edges point at it) whose storage comes and
goes, so that between uses a rank holds only its shard. While gathered, the module's parameters are views
of ``full``; backward accumulates ``full.grad``, which ``start_reduce`` reduce-scatters into the shard's
gradient (averaged over every rank, replicas of a hybrid group included).
"""
from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field

from ...dispatch.ops import F
from ...autograd.function import Function
from ...autograd.grad_mode import enable_grad, no_grad
from ...dispatch.schema.errors import DtypeError
from ...nn.modules.module import Module
from ...nn.parameter import Parameter
from ...nn.utils.clip_grad import register_sharded
from ...tensor import Tensor, wrap
from .. import collectives
from ..reduce_op import ReduceOp

# id(view) -> (weak reference to the handle, index) of the parameter views now installed: what the
# saved-tensor hooks recognise
_installed: dict[int, tuple[weakref.ref, int]] = {}


@dataclass
class ParamInfo:
    """Where one original parameter lives: its module and attribute, its name relative to the unit's module,
    its shape, and its element range in the flat vector."""

    module: Module
    name: str
    fqn: str
    shape: tuple
    numel: int
    start: int
    param: Tensor
    aliases: list = field(default_factory=list)  # other (module, attribute) places of a tied parameter

    def places(self) -> list[tuple[Module, str]]:
        return [(self.module, self.name)] + self.aliases

    def view_of(self, whole: Tensor) -> Tensor:
        """This parameter's part of a whole flat vector (gathered), in its own shape."""
        return whole[self.start:self.start + self.numel].view(self.shape)


@dataclass
class ShardGroups:
    """The ranks a unit shards over (None: one rank, nothing sharded) and the ranks that hold replicas of
    each shard (None: no replicas)."""

    shard: object = None
    replicate: object = None

    def shard_size(self) -> int:
        return 1 if self.shard is None else self.shard.size()

    def shard_rank(self) -> int:
        return 0 if self.shard is None else self.shard.rank()


class FlatParamHandle:
    """The flat shard, its gathered form, and the gradient traffic of one unit."""

    def __init__(self, infos: list[ParamInfo], groups: ShardGroups, compute_device, compute_dtype,
                 reduce_dtype, offload: bool, use_orig_params: bool) -> None:
        dtypes = {info.param.dtype for info in infos}
        if len(dtypes) > 1:
            raise DtypeError(f"FSDP: a unit's parameters must share one dtype to be flattened, got "
                             f"{sorted(d.name for d in dtypes)} ({', '.join(i.fqn for i in infos)}); wrap the "
                             f"modules of each dtype in their own unit")
        requires = {info.param.requires_grad for info in infos}
        if len(requires) > 1 and not use_orig_params:
            raise ValueError("Must flatten tensors with uniform requires_grad when use_orig_params=False "
                             f"({', '.join(i.fqn + ('' if i.param.requires_grad else ' (frozen)') for i in infos)})")
        self.infos = infos
        self.groups = groups
        self.dtype = infos[0].param.dtype
        self.compute_device = compute_device
        self.compute_dtype = compute_dtype or self.dtype
        self.reduce_dtype = reduce_dtype or self.compute_dtype
        self.offload = offload
        self.use_orig_params = use_orig_params
        size, rank = groups.shard_size(), groups.shard_rank()
        total = sum(info.numel for info in infos)
        self.shard_numel = -(-total // size)
        self.padded_numel = self.shard_numel * size
        self.shard_start = rank * self.shard_numel
        pad = self.padded_numel - total
        self.split_sizes = [info.numel for info in infos] + ([pad] if pad else [])
        home = "cpu" if offload else compute_device
        with no_grad():
            pieces = [info.param.detach().to(compute_device).reshape(-1) for info in infos]
            if self.padded_numel > total:
                pieces.append(F.zeros((self.padded_numel - total,), dtype=self.dtype, device=compute_device))
            flat = F.cat(pieces)
            shard = flat[self.shard_start:self.shard_start + self.shard_numel].clone().to(home)
        self.flat_param = Parameter(shard, requires_grad=any(requires))
        self._aliased = groups.shard is None and not offload and self.compute_dtype == self.dtype
        freed = self._placeholder(self.padded_numel, self.compute_dtype)
        self.full = wrap(freed._data, freed.dtype, freed.device)  # a leaf of its own, not a view
        self.full.requires_grad = self.flat_param.requires_grad
        self._freed = self.full._data
        self.views: list[Tensor] | None = None
        self._view_ids: set[int] = set()  # this handle's keys in _installed, dropped with the handle
        weakref.finalize(self, _forget_ids, self._view_ids)
        self.is_unsharded = False
        self._gathering = None  # (work, out) of an all-gather started ahead of use
        self.unsynced_grad: Tensor | None = None  # accumulated under no_sync
        self._reducing: list = []  # (work, out) of reduce-scatters not yet finished
        self.on_grad = None  # set by the runtime: called with (handle, grad) after full.grad accumulates
        self.registered_on: Module | None = None  # the module holding flat_param as "_flat_param", if any
        if self.full.requires_grad:
            self.full.register_post_accumulate_grad_hook(self._full_grad_ready)
        self._placeholders = [self._placeholder(info.shape, self.dtype) for info in infos]
        if use_orig_params:
            self._point_originals_at_shard()
        else:  # the originals' storage is the shard's now: keep nothing else alive
            for info, placeholder in zip(infos, self._placeholders):
                info.param.data = placeholder
        if groups.shard is not None:
            combine = functools.partial(_combine_norm, groups.shard)  # the group, not the handle: no cycle
            for tensor in [info.param for info in infos] if use_orig_params else [self.flat_param]:
                register_sharded(tensor, combine)

    # -- the flat vector's ranges ------------------------------------------------------------------
    def local_range(self, info: ParamInfo) -> tuple[int, int]:
        """The part of ``info``'s elements in this rank's shard, as (first, end) in the parameter's flattened
        numbering; first == end when the shard holds none of it."""
        lo = max(info.start, self.shard_start)
        hi = min(info.start + info.numel, self.shard_start + self.shard_numel)
        return (lo - info.start, hi - info.start) if lo < hi else (0, 0)

    def shard_slice(self, vector: Tensor, info: ParamInfo) -> Tensor:
        """``info``'s part of a shard-sized vector (a 1-d view; empty when the shard holds none of it)."""
        first, end = self.local_range(info)
        at = info.start + first - self.shard_start
        return vector[at:at + end - first] if end > first else vector[0:0]

    # -- gathering -------------------------------------------------------------------------------------
    def start_unshard(self) -> None:
        """Begin gathering ``full`` (asynchronously where the engine allows it)."""
        if self.is_unsharded or self._gathering is not None:
            return
        self._gathering = self._gather(self.compute_dtype, async_op=True)

    def unshard(self) -> None:
        """Make ``full`` hold every rank's shard and install the parameter views in the modules."""
        if self.is_unsharded:
            return
        if self._gathering is None:
            self._gathering = self._gather(self.compute_dtype, async_op=True)
        work, out = self._gathering
        self._gathering = None
        if work is not None:
            work.wait()
        self.full._data = out._data
        self.is_unsharded = True
        self.install_views()

    def reshard(self) -> None:
        """Free ``full``'s storage (nothing is freed when it is the shard itself) and take the views out."""
        if not self.is_unsharded or self._aliased:
            return
        self.full._data = self._freed
        self.is_unsharded = False
        self.uninstall_views()

    def gather_full(self, source: Tensor | None = None) -> Tensor:
        """The whole flat vector of ``source`` (a shard-sized vector; default the shard itself: its parameters)
        on the compute device: what state dicts and ``summon_full_params`` read. Every rank of the shard group
        must call it."""
        source = self.flat_param if source is None else source
        work, out = self._gather(source.dtype, async_op=False, source=source)
        return out

    def _gather(self, dtype, async_op: bool, source: Tensor | None = None):
        source = (self.flat_param if source is None else source).detach()
        source = source.to(device=self.compute_device, dtype=dtype)
        if self.groups.shard is None:
            return None, source
        out = F.empty((self.padded_numel,), dtype=dtype, device=self.compute_device)
        work = collectives.all_gather_into_tensor(out, source, group=self.groups.shard, async_op=async_op)
        return work, out

    # -- the parameters the modules see ----------------------------------------------------------------
    def install_views(self) -> None:
        """Point each module attribute at its parameter's view of ``full`` (recorded against ``full``, so
        gradients reach it even when made inside backward, as activation checkpointing does)."""
        self._forget_views()
        with enable_grad():
            self.views = list(_Unflatten.apply(self.full, self.split_sizes, [info.shape for info in self.infos]))
        this = weakref.ref(self)
        for i, (info, view) in enumerate(zip(self.infos, self.views)):
            _installed[id(view)] = (this, i)
            self._view_ids.add(id(view))
            self._set_attribute(info, view)

    def uninstall_views(self) -> None:
        self._forget_views()
        for info, placeholder in zip(self.infos, self._placeholders):
            self._set_attribute(info, info.param if self.use_orig_params else placeholder)

    def _forget_views(self) -> None:
        _forget_ids(self._view_ids)
        self.views = None

    def _set_attribute(self, info: ParamInfo, value: Tensor) -> None:
        for module, name in info.places():
            if self.use_orig_params:
                module._parameters[name] = value
            else:
                object.__setattr__(module, name, value)

    def _point_originals_at_shard(self) -> None:
        """With ``use_orig_params``: each original parameter becomes its (1-d, maybe empty) part of the
        shard, so an optimizer built on ``module.parameters()`` updates the shard in place."""
        shard = self.flat_param.detach()
        for info in self.infos:
            info.param.data = self.shard_slice(shard, info)

    def _placeholder(self, shape, dtype) -> Tensor:
        """A tensor of ``shape`` that holds no memory (an expanded scalar): what a freed view shows."""
        with no_grad():
            return F.zeros((), dtype=dtype, device=self.compute_device).expand(shape)

    # -- gradients -------------------------------------------------------------------------------------
    def _full_grad_ready(self, full: Tensor) -> None:
        grad, full.grad = full.grad, None
        if self.on_grad is not None:
            self.on_grad(self, grad)

    def accumulate_unsynced(self, grad: Tensor) -> None:
        """Under ``no_sync``: keep the unsharded gradient; the next synchronized backward reduces the sum."""
        grad = grad.detach().to(self.dtype)
        self.unsynced_grad = grad if self.unsynced_grad is None else self.unsynced_grad + grad

    def start_reduce(self, grad: Tensor) -> None:
        """Reduce-scatter ``grad`` (averaged) toward this rank's shard; ``finish_reduce`` completes it."""
        grad = grad.detach()
        if self.unsynced_grad is not None:
            grad, self.unsynced_grad = self.unsynced_grad + grad.to(self.dtype), None
        grad = grad.to(self.reduce_dtype)
        if self.groups.shard is None:
            self._reducing.append((None, grad))
            return
        out = F.empty((self.shard_numel,), dtype=self.reduce_dtype, device=self.compute_device)
        work = collectives.reduce_scatter_tensor(out, grad, op=ReduceOp.AVG, group=self.groups.shard,
                                                 async_op=True)
        self._reducing.append((work, out))

    def finish_reduce(self) -> None:
        """Wait for the reductions started this backward and add their results to the shard's gradients."""
        reducing, self._reducing = self._reducing, []
        for work, out in reducing:
            if work is not None:
                work.wait()
            if self.groups.replicate is not None:
                collectives.all_reduce(out, op=ReduceOp.AVG, group=self.groups.replicate)
            with no_grad():
                self._add_shard_grad(out.to(device=self.flat_param.device, dtype=self.dtype))

    def _add_shard_grad(self, grad: Tensor) -> None:
        if not self.use_orig_params:
            flat = self.flat_param
            flat.grad = grad if flat.grad is None else flat.grad + grad
            return
        for info in self.infos:
            if not info.param.requires_grad:
                continue
            piece = self.shard_slice(grad, info)
            info.param.grad = piece if info.param.grad is None else info.param.grad + piece

    def shard_grad(self) -> Tensor | None:
        """This rank's gradient as one shard-sized vector (None when no parameter has one)."""
        if not self.use_orig_params:
            return self.flat_param.grad
        grads = [info.param.grad for info in self.infos]
        if all(g is None for g in grads):
            return None
        out = F.zeros((self.shard_numel,), dtype=self.dtype, device=self.flat_param.device)
        with no_grad():
            for info, grad in zip(self.infos, grads):
                if grad is not None:
                    self.shard_slice(out, info).copy_(grad.reshape(-1))
        return out

    def set_shard_grad(self, grad: Tensor) -> None:
        """Replace this rank's gradients with ``grad`` (a shard-sized vector), as clipping does."""
        if not self.use_orig_params:
            self.flat_param.grad = grad
            return
        for info in self.infos:
            if info.param.grad is not None:
                info.param.grad = self.shard_slice(grad, info).clone()


def installed_view(tensor) -> tuple[FlatParamHandle, int] | None:
    """The handle and parameter index of ``tensor`` when it is a parameter view now installed."""
    entry = _installed.get(id(tensor))
    handle = entry[0]() if entry is not None else None
    if handle is None or handle.views is None or handle.views[entry[1]] is not tensor:
        return None
    return handle, entry[1]


class _Unflatten(Function):
    """``full`` as its parameters' views. Backward joins their gradients with one concatenation: views made
    one op at a time would each save their input (keeping the gathered storage alive after resharding) and
    each make a full-size gradient to add up."""

    @staticmethod
    def forward(ctx, full: Tensor, sizes: list[int], shapes: list[tuple]):
        ctx.sizes, ctx.dtype, ctx.device = sizes, full.dtype, full.device
        ctx.set_materialize_grads(False)
        return tuple(chunk.view(shape) for chunk, shape in zip(full.split(sizes), shapes))

    @staticmethod
    def backward(ctx, *grads):
        pieces = [F.zeros((n,), dtype=ctx.dtype, device=ctx.device) if g is None else g.reshape(-1)
                  for g, n in zip(list(grads) + [None] * (len(ctx.sizes) - len(grads)), ctx.sizes)]
        return F.cat(pieces), None, None


def _forget_ids(ids: set[int]) -> None:
    for key in ids:
        _installed.pop(key, None)
    ids.clear()


def _combine_norm(group, value: Tensor, op: str) -> None:
    """A gradient norm's share combined across the shard group (``nn.utils.clip_grad_norm_`` calls it)."""
    collectives.all_reduce(value, op=ReduceOp.MAX if op == "max" else ReduceOp.SUM, group=group)
