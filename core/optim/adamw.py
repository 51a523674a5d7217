"""``ember.optim.adamw``: PyTorch's module path for AdamW, defined beside Adam (it is Adam with decoupled decay)."""
from .adam import AdamW

__all__ = ["AdamW"]
