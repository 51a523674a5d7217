"""``ember.autograd``: define-by-run gradients.

Every op call with grad mode on and an input that requires grad leaves a node in the graph;
``backward`` walks the graph once, running each op's declared derivative (written in Ember
ops, so it runs on the tensors' backend and can itself be differentiated).
"""
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx
from .gradients import backward, grad
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node
from .multithreading import set_multithreading_enabled
from . import install as _install

_install.install()

from . import profiler  # noqa: E402  (ember.autograd.profiler: PyTorch's older profiler interface)
from . import forward_ad, functional  # noqa: E402  (torch.autograd.forward_ad and torch.autograd.functional)

__all__ = ["backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "gradcheck", "gradgradcheck",
           "GradcheckError", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "Node", "set_multithreading_enabled"]
