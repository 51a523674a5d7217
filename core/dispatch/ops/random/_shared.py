"""Private helpers the random modules share: device-side checks read back in one transfer (sampling,
binomial)."""
from __future__ import annotations

from ...contract import registry
from ...execution import deferred_checks
from ...execution.dispatcher import note_value_read
from ..namespace import F


def _flags(*conditions) -> list:
    """Device-side booleans brought to the host with a single read."""
    return F.stack([F.any(c) for c in conditions]).tolist()


def _numbers(*values) -> list:
    """0-d tensors' values for a check: read as they are where the device's memory is the host's (no
    synchronisation: a sampling loop checks every step), else brought over in one counted read."""
    note_value_read()
    if registry.get_backend(values[0]._device.type).defers_value_checks:
        return F.stack(list(values)).tolist()
    return deferred_checks.numbers(values)
