"""Normalization functions: batch_norm, layer_norm and group_norm (the schema's ops), plus normalize."""
from __future__ import annotations

from ...dispatch.ops import F as _F

__all__ = ["batch_norm", "layer_norm", "group_norm", "normalize"]

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
