"""``ember.utils.data._utils``: PyTorch's module paths for the collate and worker helpers (re-exports)."""
from . import collate, worker  # noqa: F401
