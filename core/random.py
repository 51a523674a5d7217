"""Seeding and generators: ``ember.manual_seed`` seeds every backend's default generator."""
from __future__ import annotations

from .dispatch.contract import registry


def manual_seed(seed: int):
    """Seed the default generator of every available backend, for reproducible runs."""
    global _last_seed
    _last_seed = seed = int(seed)
    for backend in registry.loaded().values():
        if registry.unavailable_reason(backend.device_type) is None:
            backend.manual_seed(seed)
    return default_generator


_last_seed: int | None = None


def _seed_late_backend(backend) -> None:
    """A plugin imported after ``manual_seed`` (plugins load on first use) starts from that seed too."""
    if _last_seed is not None and registry.unavailable_reason(backend.device_type) is None:
        backend.manual_seed(_last_seed)


registry.on_backend_registered(_seed_late_backend)


def seed() -> int:
    """Seed from OS entropy and return the seed used."""
    import secrets
    value = secrets.randbits(63)
    manual_seed(value)
    return value


class Generator:
    """A random-number generator on one device, for ``generator=`` arguments."""

    def __init__(self, device="cpu") -> None:
        self.device = registry.resolve_device(device)
        self._native = registry.get_backend(self.device.type).new_generator(self.device.index)

    def manual_seed(self, seed: int) -> "Generator":
        self._native.manual_seed(int(seed))
        return self

    def initial_seed(self) -> int:
        return self._native.initial_seed

    def get_state(self):
        """The generator's state as a uint8 tensor (as in PyTorch), so checkpoints can hold it."""
        from .creation import tensor
        from .dispatch.schema.dtypes import uint8
        return tensor(list(self._native.get_state()), dtype=uint8)

    def set_state(self, state) -> "Generator":
        self._native.set_state(bytes(state.tolist()) if hasattr(state, "tolist") else bytes(state))
        return self


class _DefaultGenerator(Generator):
    """The CPU default generator, as ``ember.default_generator``."""

    def __init__(self) -> None:
        pass

    @property
    def device(self):
        return registry.resolve_device("cpu")

    @property
    def _native(self):
        dev = registry.resolve_device("cpu")
        return registry.get_backend("cpu").default_generator(dev.index)


default_generator = _DefaultGenerator()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    """The CPU default generator's state, as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)
