"""``DeviceMesh``: the ranks laid out on an n-d grid, one process group per grid dimension.

PyTorch's ``torch.distributed.device_mesh``. FSDP's HYBRID_SHARD (and FSDP2) shard along one mesh dimension and
replicate along another; the mesh names those dimensions and hands out each one's process group. Every rank
belongs to the mesh: it holds each rank of the default group exactly once.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence

from ..creation import tensor as make_tensor
from ..dispatch.ops import F
from ..dispatch.schema.dtypes import bool_, int32
from ..tensor import Tensor

from .process_group import ProcessGroup
from .state import default_group, get_rank, new_group

__all__ = ["DeviceMesh", "init_device_mesh"]

MeshDim = int | str


class DeviceMesh:
    """``mesh``: a nested list or an integer tensor of global ranks. Creating one is collective: every rank
    must create the same mesh, in the same order as its other ``new_group`` calls."""

    def __init__(self, device_type: str, mesh: Tensor | Sequence | None = None, *,
                 mesh_dim_names: tuple[str, ...] | None = None, backend_override=None) -> None:
        if mesh is None:
            raise ValueError("DeviceMesh: mesh is required (a nested list or tensor of global ranks)")
        _check_no_override(backend_override, "DeviceMesh")
        world = default_group("DeviceMesh").size()
        _check_device_type(device_type)
        ranks = _as_rank_tensor(mesh)
        names = _check_dim_names(mesh_dim_names, tuple(ranks.shape), "DeviceMesh")
        _check_holds_every_rank(ranks, world)
        strides = tuple(math.prod(ranks.shape[d + 1:]) for d in range(ranks.dim()))
        self._setup(device_type, ranks, names, _groups_of_each_dim(ranks, names), strides)

    def _setup(self, device_type: str, mesh: Tensor, names: tuple[str, ...] | None,
               groups: list[ProcessGroup], strides: tuple[int, ...]) -> None:
        self._device_type = device_type
        self._mesh = mesh
        self._mesh_dim_names = names
        self._groups = groups
        self._strides = strides  # of each dim in the root mesh's flat rank order, for __repr__ as PyTorch
        flat = mesh.reshape(-1).tolist()
        self._flat_ranks = tuple(flat)
        self._coordinate = _unravel(flat.index(get_rank()), tuple(mesh.shape))

    # -- the grid --------------------------------------------------------------------------------------
    @property
    def device_type(self) -> str:
        return self._device_type

    @property
    def mesh(self) -> Tensor:
        return self._mesh

    @property
    def mesh_dim_names(self) -> tuple[str, ...] | None:
        return self._mesh_dim_names

    @property
    def ndim(self) -> int:
        return self._mesh.dim()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._mesh.shape)

    def size(self, mesh_dim: MeshDim | None = None) -> int:
        if mesh_dim is None:
            return len(self._flat_ranks)
        return self.shape[self._dim_index(mesh_dim, "size")]

    # -- this rank -------------------------------------------------------------------------------------
    def get_rank(self) -> int:
        """This process's global rank."""
        return get_rank()

    def get_local_rank(self, mesh_dim: MeshDim | None = None) -> int:
        """This rank's rank in the group of ``mesh_dim`` (optional on a 1-d mesh)."""
        if mesh_dim is None and self.ndim > 1:
            raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg `mesh_dim` "
                               f"needs to be specified when device_mesh.ndim > 1.")
        return self.get_group(mesh_dim).rank()

    def get_coordinate(self) -> tuple[int, ...]:
        """This rank's index along every mesh dimension."""
        return self._coordinate

    # -- process groups --------------------------------------------------------------------------------
    def get_group(self, mesh_dim: MeshDim | None = None) -> ProcessGroup:
        """The group of this rank along ``mesh_dim`` (an index or a name; optional on a 1-d mesh)."""
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(
                    f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg `mesh_dim` needs to be "
                    f"specified when device_mesh.ndim > 1. If you want to get the list of all the ProcessGroups "
                    f"in the DeviceMesh, please use `get_all_groups()` instead.")
            mesh_dim = 0
        return self._groups[self._dim_index(mesh_dim, "get_group")]

    def get_all_groups(self) -> list[ProcessGroup]:
        return list(self._groups)

    # -- sub-meshes ------------------------------------------------------------------------------------
    def __getitem__(self, mesh_dim_names: str | tuple[str, ...]) -> DeviceMesh:
        """The sub-mesh of the named dimensions that holds this rank; it shares this mesh's groups."""
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if names == self._mesh_dim_names:
            return self
        if not names or any(name not in self._mesh_dim_names for name in names):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. "
                           f"Valid mesh_dim_names are {list(self._mesh_dim_names)}.")
        if len(set(names)) != len(names):
            raise RuntimeError(f"Slicing overlapping dim_names {names} is not allowed.")
        dims = [self._mesh_dim_names.index(name) for name in names]
        if dims != sorted(dims):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. "
                           f"Mesh dim indices should be in ascending order.")
        index = tuple(slice(None) if d in dims else c for d, c in enumerate(self._coordinate))
        sub = DeviceMesh.__new__(DeviceMesh)
        sub._setup(self._device_type, self._mesh[index].clone(), names, [self._groups[d] for d in dims],
                   tuple(self._strides[d] for d in dims))
        return sub

    # -- identity --------------------------------------------------------------------------------------
    def _key(self) -> tuple:
        return self._flat_ranks, self.shape, self._strides, self._device_type, self._mesh_dim_names

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, DeviceMesh) and self._key() == other._key())

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        sizes = f"({', '.join(f'{k}={v}' for k, v in zip(self._mesh_dim_names, self.shape))})" \
            if self._mesh_dim_names else f"{self.shape}"
        text = f"DeviceMesh({sizes}, '{self._device_type}', stride={self._strides}"
        if os.environ.get("TORCH_DISTRIBUTED_DEBUG", "") == "DETAIL":  # PyTorch's switch for the full mesh
            text += f", Mesh: {self._mesh.tolist()}"
        return text + ")"

    def _dim_index(self, mesh_dim: MeshDim, op_name: str) -> int:
        if isinstance(mesh_dim, str):
            if not self._mesh_dim_names:
                raise KeyError(f"{op_name}: No `mesh_dim_names` found; name the mesh dimensions to use "
                               f"{mesh_dim!r}.")
            if mesh_dim not in self._mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh dimensions are: "
                               f"mesh_dim_names={self._mesh_dim_names}")
            return self._mesh_dim_names.index(mesh_dim)
        if not isinstance(mesh_dim, int) or isinstance(mesh_dim, bool):
            raise TypeError(f"{op_name}: mesh_dim must be an int or a dimension name, got "
                            f"{type(mesh_dim).__name__}")
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"{op_name}: mesh_dim {mesh_dim} is out of range for a DeviceMesh of shape "
                             f"{self.shape}")
        return mesh_dim % self.ndim


def init_device_mesh(device_type: str, mesh_shape: Sequence[int], *,
                     mesh_dim_names: tuple[str, ...] | None = None, backend_override=None) -> DeviceMesh:
    """A mesh of ``mesh_shape`` over the default group's ranks in order (row-major): ``(2, 4)`` puts ranks
    0-3 on row 0. Collective, like ``DeviceMesh``."""
    _check_no_override(backend_override, "init_device_mesh")
    shape = tuple(mesh_shape)
    _check_dim_names(mesh_dim_names, shape, "init_device_mesh")
    _check_device_type(device_type)
    if not shape or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in shape):
        raise ValueError(f"init_device_mesh: mesh_shape must be a non-empty tuple of positive ints, got {shape}")
    world = default_group("init_device_mesh").size()
    if math.prod(shape) != world:
        raise RuntimeError(f"init_device_mesh: mesh_shape {shape} holds {math.prod(shape)} ranks, but the world "
                           f"size of the default process group is {world}; their product must equal the world "
                           f"size")
    mesh = F.arange(world, dtype=int32).reshape(shape)
    return DeviceMesh(device_type, mesh, mesh_dim_names=mesh_dim_names)


def _check_no_override(backend_override, op_name: str) -> None:
    """Every mesh dim's group runs on the default group's backend (MPI serves each device type once)."""
    if backend_override:
        raise ValueError(f"{op_name}: backend_override is not supported; each dim's group uses the default "
                         f"group's backend")


def _check_device_type(device_type: str) -> None:
    if not isinstance(device_type, str):
        raise TypeError(f"DeviceMesh: device_type must be a str such as 'cpu' or 'cuda', got "
                        f"{type(device_type).__name__}")
    if device_type and not device_type.isalpha():
        raise RuntimeError(f"Device type with index is not supported but got {device_type}. If you maintained an "
                           f"'ember.device' object, it's recommended to pass in 'device.type'.")


def _check_dim_names(names: Sequence[str] | None, shape: tuple[int, ...], op_name: str) -> tuple[str, ...] | None:
    if names is None:
        return None
    names = tuple(names)
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"{op_name}: mesh_dim_names must be strings, got {names}")
    if len(set(names)) != len(names):
        raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in mesh_dim_names "
                           f"{names}")
    if len(names) != len(shape):
        raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names): "
                           f"{len(names)} and len(mesh_shape):{len(shape)}.")
    return names


def _as_rank_tensor(mesh: Tensor | Sequence) -> Tensor:
    """``mesh`` as a fresh int32 cpu tensor (its own copy: the caller may change theirs)."""
    if not isinstance(mesh, Tensor):
        try:
            mesh = make_tensor(mesh)
        except ValueError as error:
            raise ValueError(f"DeviceMesh: mesh must be a rectangular nested list of integer ranks: {error}") \
                from None
    if mesh.dtype.is_inexact or mesh.dtype == bool_:
        raise TypeError(f"DeviceMesh: mesh must hold integer ranks, got a tensor of dtype {mesh.dtype} on "
                        f"{mesh.device}")
    if mesh.dim() == 0:
        raise ValueError("DeviceMesh: mesh must have at least one dimension, got a 0-d tensor")
    return make_tensor(mesh.tolist(), dtype=int32)


def _check_holds_every_rank(mesh: Tensor, world: int) -> None:
    flat = mesh.reshape(-1).tolist()
    if len(flat) != world:
        raise RuntimeError(f"DeviceMesh: the mesh of shape {tuple(mesh.shape)} holds {len(flat)} ranks, but the "
                           f"world size of the default process group is {world}; they must be equal")
    if len(set(flat)) != len(flat):
        raise RuntimeError(f"DeviceMesh cannot have duplicate values, but found {mesh.tolist()}")
    if sorted(flat) != list(range(world)):
        raise RuntimeError(f"DeviceMesh: the mesh {mesh.tolist()} must hold the global ranks 0..{world - 1}")


def _groups_of_each_dim(mesh: Tensor, names: tuple[str, ...] | None) -> list[ProcessGroup]:
    """This rank's group along each dimension. ``new_group`` is collective over the world, so every rank
    creates the group of every slice, in the same order, and keeps the ones it belongs to."""
    rank, mine = get_rank(), []
    for dim in range(mesh.dim()):
        others_first = [d for d in range(mesh.dim()) if d != dim] + [dim]
        desc = f"mesh_{names[dim] if names else f'dim_{dim}'}"
        for ranks in mesh.permute(*others_first).reshape(-1, mesh.shape[dim]).tolist():
            group = new_group(ranks, group_desc=desc)
            if rank in ranks:
                mine.append(group)
    return mine


def _unravel(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    coordinate = []
    for size in reversed(shape):
        flat_index, index = divmod(flat_index, size)
        coordinate.append(index)
    return tuple(reversed(coordinate))
