"""``conv_tbc``: a 1-d convolution over sequences laid out (time, batch, channels), as fairseq's models use."""
from __future__ import annotations

from ...dispatch.schema.binding import tensor_argument
from ...dispatch.schema.errors import ShapeError, describe
from ...dispatch.ops import F

__all__ = ["conv_tbc"]


def conv_tbc(input, weight, bias, pad: int = 0):
    """``input`` (time, batch, in_channels) convolved with ``weight`` (kernel_width, in_channels, out_channels)
    plus ``bias`` (out_channels), ``pad`` zero steps at each end of time: (time', batch, out_channels)."""
    for position, (name, value, ndim) in enumerate((("input", input, 3), ("weight", weight, 3), ("bias", bias, 1))):
        if tensor_argument("conv_tbc", name, value, position=position).ndim != ndim:
            raise ShapeError(f"conv_tbc: {name} must have {ndim} dims, got {describe(value)}")
    if input.shape[2] != weight.shape[1]:
        raise ShapeError(f"conv_tbc: input channels ({input.shape[2]}) must equal weight's in_channels "
                         f"({weight.shape[1]}); input {describe(input)}, weight {describe(weight)}")
    if bias.shape[0] != weight.shape[2]:
        raise ShapeError(f"conv_tbc: bias ({describe(bias)}) must have weight's out_channels ({weight.shape[2]})")
    out = F.conv1d(F.permute(input, (1, 2, 0)), F.permute(weight, (2, 1, 0)), bias, 1, pad)
    return F.permute(out, (2, 0, 1))
