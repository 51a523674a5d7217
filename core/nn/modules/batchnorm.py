"""``ember.nn.modules.batchnorm``: PyTorch's module path for the batch-norm layers, defined in normalization."""
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
