"""PyTorch's module path for dispatch modes (``torch.utils._python_dispatch.TorchDispatchMode``)."""
from ..dispatch.execution.modes import DispatchMode, TorchDispatchMode

__all__ = ["TorchDispatchMode", "DispatchMode"]
