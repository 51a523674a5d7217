"""Private helpers the random modules share: device-side checks read back in one transfer (sampling,
binomial)."""
from __future__ import annotations

from ..namespace import F


def _flags(*conditions) -> list:
    """Device-side booleans brought to the host with a single read."""
    return F.stack([F.any(c) for c in conditions]).tolist()
