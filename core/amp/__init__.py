"""``ember.amp``: automatic mixed precision with PyTorch's ``torch.amp`` API.

``autocast`` regions run each op in the dtype its schema declaration gives (``casting``);
``GradScaler`` scales the loss so that float16 gradients do not underflow, and skips the steps whose
gradients overflowed.
"""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler
from .state import default_dtype

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available", "default_dtype"]
