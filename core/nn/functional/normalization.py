"""Normalization functions: batch_norm, layer_norm, group_norm, rms_norm and local_response_norm (the schema's ops),
instance_norm in nn.functional's argument order, and normalize."""
from __future__ import annotations

from ...dispatch.ops import F as _F

__all__ = ["batch_norm", "layer_norm", "group_norm", "normalize", "instance_norm", "rms_norm", "local_response_norm"]

#: batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5)
batch_norm = _F.batch_norm
#: layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)
layer_norm = _F.layer_norm
#: group_norm(input, num_groups, weight=None, bias=None, eps=1e-5)
group_norm = _F.group_norm


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """input / max(||input||_p, eps) along dim: unit-norm vectors, with eps guarding all-zero ones."""
    result = _F.div(input, _F.clamp(_F.norm(input, p, dim, True), eps))
    return result if out is None else _F.copy_(out, result)


#: rms_norm(input, normalized_shape, weight=None, eps=None)
rms_norm = _F.rms_norm
#: local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0)
local_response_norm = _F.local_response_norm


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
    """Standardizes each channel of each sample of an (N, C, *) input over its spatial dims (or by the running
    statistics when not use_input_stats, which training updates), then scales and shifts per channel."""
    return _F.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, False)
