"""``ember.nn.modules.batchnorm``: PyTorch's module path for the batch-norm layers, defined in normalization
(the lazy ones in lazy)."""
from ..lazy_paths import lazy_attributes
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, _BatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]

__getattr__ = lazy_attributes(__name__, ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"))
