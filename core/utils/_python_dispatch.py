"""PyTorch's module path for dispatch modes (``torch.utils._python_dispatch.TorchDispatchMode``)."""
from ..dispatch.modes import DispatchMode, TorchDispatchMode

__all__ = ["TorchDispatchMode", "DispatchMode"]
