"""The backend under test: ``--backend NAME`` resolved through Ember's plugin registry."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    """What the suite runs against. ``reason`` is set (and everything else empty) when it cannot run here."""

    name: str
    device: Any = None
    impl: Any = None  # the ember.dispatch.Backend
    dtypes: tuple = ()  # the dtypes the device supports, in ALL_DTYPES order
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None

    def supports(self, *dtypes) -> bool:
        return all(d is None or d in self.dtypes for d in dtypes)


def resolve(name: str) -> Target:
    """Look ``name`` (a device type, or a device such as ``cuda:1``) up in the registry, never raising."""
    import ember  # noqa: F401  (installs the Tensor hooks; discovers the plugins)
    from ember.dispatch import ALL_DTYPES, registry

    try:
        device = registry.resolve_device(name)
        impl = registry.get_backend(device.type)
        supported = impl.supported_dtypes(device.index)
    except Exception as exc:  # unknown, unavailable or broken: every test skips with this reason
        return Target(name, reason=f"{type(exc).__name__}: {exc}")
    return Target(name, device, impl, tuple(d for d in ALL_DTYPES if d in supported))


def all_dtypes() -> tuple:
    """Every dtype Ember knows: what tests are parametrized over when the target is unavailable."""
    from ember.dispatch import ALL_DTYPES
    return ALL_DTYPES


@contextmanager
def optional_kernels_fall_back(target):
    """Primitives a backend may leave out (``OpDef.optional_kernel``: the LAPACK decompositions) run on it as a user
    runs them there, through the explicit CPU fallback (``EMBER_FALLBACK=cpu``), which warns once per op. Off where
    the backend has every kernel."""
    from ember.dispatch import primitives
    from ember.dispatch.execution.fallback import get_fallback, set_fallback

    lacking = target.available and any(op.optional_kernel and op.name not in target.impl.kernels
                                       for op in primitives())
    previous = get_fallback()
    if lacking:
        set_fallback("cpu")
    try:
        yield
    finally:
        if lacking:
            set_fallback(previous)
