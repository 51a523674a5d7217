"""``ember.utils``: checkpointing now; data loading comes with the nn issue."""
from . import checkpoint  # noqa: F401
from . import data  # noqa: F401
from . import dlpack  # noqa: F401
