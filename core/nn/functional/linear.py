"""``F.linear`` and ``F.bilinear``: the schema's ops, whose signatures are already PyTorch's."""
from __future__ import annotations

from ...dispatch.ops import F as _F

__all__ = ["linear", "bilinear"]

#: linear(input, weight, bias=None): input @ weight^T + bias
linear = _F.linear
#: bilinear(input1, input2, weight, bias=None): input1[..., i] weight[o, i, j] input2[..., j] + bias[o]
bilinear = _F.bilinear
