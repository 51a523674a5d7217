"""FSDP's configuration types, with PyTorch's names and fields (``torch.distributed.fsdp``)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
from typing import Any


class ShardingStrategy(Enum):
    """What each rank keeps between uses: FULL_SHARD shards parameters, gradients and optimizer state and
    gathers parameters again for backward; SHARD_GRAD_OP keeps them gathered from forward to the end of
    backward; NO_SHARD replicates (DDP); HYBRID_SHARD shards within a group of ranks and replicates across
    groups (``_HYBRID_SHARD_ZERO2``: the same with SHARD_GRAD_OP inside the group)."""

    FULL_SHARD = auto()
    SHARD_GRAD_OP = auto()
    NO_SHARD = auto()
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    """When backward starts gathering the next unit's parameters: before this unit's gradient computation
    (BACKWARD_PRE) or after it (BACKWARD_POST)."""

    BACKWARD_PRE = auto()
    BACKWARD_POST = auto()


class StateDictType(Enum):
    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


class OptimStateKeyType(Enum):
    PARAM_NAME = auto()
    PARAM_ID = auto()


@dataclass
class MixedPrecision:
    """Dtypes for compute (``param_dtype``: gathered parameters), gradient reduction (``reduce_dtype``,
    default ``param_dtype``) and buffers; the sharded parameters and the optimizer keep full precision."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: tuple = ()


@dataclass
class CPUOffload:
    """``offload_params=True``: the sharded parameters and their gradients live in host memory; they are
    moved to the compute device for each gather."""

    offload_params: bool = False


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclass
class OptimStateDictConfig:
    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig


@dataclass
class MixedPrecisionPolicy:
    """FSDP2's mixed precision (``fully_shard(mp_policy=...)``)."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """FSDP2: no offloading."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """FSDP2: sharded parameters, gradients and optimizer state in host memory."""

    pin_memory: bool = True
