"""``ember.distributed.fsdp``: PyTorch's fully sharded data parallelism (FSDP and FSDP2's ``fully_shard``).

See docs/distributed.md. The units, their flat shards and their runtime are shared by both APIs.
"""
from .api import (BackwardPrefetch, CPUOffload, CPUOffloadPolicy, FullOptimStateDictConfig, FullStateDictConfig,
                  LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision, MixedPrecisionPolicy,
                  OffloadPolicy, OptimStateDictConfig, OptimStateKeyType, ShardedOptimStateDictConfig,
                  ShardedStateDictConfig, ShardingStrategy, StateDictConfig, StateDictSettings, StateDictType)
from . import wrap
from .fully_shard import FSDPModule, UnshardHandle, fully_shard, register_fsdp_forward_method
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = [
    "BackwardPrefetch", "CPUOffload", "CPUOffloadPolicy", "FSDPModule", "FullOptimStateDictConfig",
    "FullStateDictConfig", "FullyShardedDataParallel", "LocalOptimStateDictConfig", "LocalStateDictConfig",
    "MixedPrecision", "MixedPrecisionPolicy", "OffloadPolicy", "OptimStateDictConfig", "OptimStateKeyType",
    "ShardedOptimStateDictConfig", "ShardedStateDictConfig", "ShardingStrategy", "StateDictConfig",
    "StateDictSettings", "StateDictType", "UnshardHandle", "fully_shard", "register_fsdp_forward_method", "wrap",
]
