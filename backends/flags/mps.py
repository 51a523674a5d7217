"""``ember.backends.mps``: Apple's Metal device, which Ember has a backend for only if a plugin provides "mps"."""
from __future__ import annotations

from ember.dispatch import registry


def is_built() -> bool:
    """Whether a backend plugin for device type "mps" is installed."""
    return "mps" in registry.backends()


def is_available() -> bool:
    """Whether tensors can be placed on "mps" here."""
    backend = registry.backends().get("mps")
    return backend is not None and backend.unavailable_reason() is None and backend.device_count() > 0
