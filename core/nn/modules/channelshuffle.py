"""ChannelShuffle: ShuffleNet's interleaving of channel groups."""
from __future__ import annotations

from ...dispatch.ops import F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Splits the C channels of (N, C, *) input into ``groups`` and interleaves them."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
