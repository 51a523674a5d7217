"""``ember.backends``: the bundled backend plugins, and the registry's public face."""
import importlib as _importlib
import sys as _sys

from ember.dispatch import available, get_fallback, register_plugin, registry, set_fallback

registered = registry.backends

# PyTorch's switch namespaces torch.backends.cudnn / .mps (not plugins: see ember.backends.flags),
# importable under the same paths, e.g. ``import ember.backends.cudnn as cudnn``.
from .flags import cudnn, mps  # noqa: E402

_sys.modules.setdefault(__name__ + ".cudnn", cudnn)
_sys.modules.setdefault(__name__ + ".mps", mps)

__all__ = ["available", "registered", "register_plugin", "set_fallback", "get_fallback", "cudnn", "mps"]

_BUNDLED_PLUGINS = ("cpu", "cuda", "opencl")


def __getattr__(name: str):
    """``ember.backends.cuda`` (for ``.matmul.allow_tf32``) without an import first, as in PyTorch; the
    plugin packages import no device library, so this is cheap and never fails for a missing GPU."""
    if name in _BUNDLED_PLUGINS:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
