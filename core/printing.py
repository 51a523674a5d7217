"""``repr(tensor)`` in PyTorch's format: ``tensor([1., 2.], dtype=ember.float64)``; ``set_printoptions``."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .dispatch.schema.dtypes import bool_, get_default_dtype, int64
from .printing_layout import values_text, with_suffixes


@dataclass
class PrintOptions:
    """What ``set_printoptions`` sets; the defaults are PyTorch's "default" profile."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None  # None: scientific notation only when the values' range asks for it


PROFILES = {"default": PrintOptions(), "short": PrintOptions(precision=2, edgeitems=2),
            "full": PrintOptions(threshold=float("inf"))}
_options = PrintOptions()


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print: ``precision`` digits after the point, summarise (``...``) past ``threshold``
    elements showing ``edgeitems`` at each end, lines of ``linewidth`` characters, ``sci_mode`` True/False to
    force or forbid scientific notation (None: automatic). ``profile`` ('default', 'short', 'full') resets
    everything first; the other arguments then apply on top, as in PyTorch."""
    global _options
    if profile is not None:
        if profile not in PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {', '.join(PROFILES)}, got {profile!r}")
        _options = replace(PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            setattr(_options, name, value)
    _options.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as a dict of ``set_printoptions``'s argument names."""
    return dict(vars(_options))


def _host_values(t) -> np.ndarray:
    """The values to print, widened as PyTorch prints them: floats as doubles, complex as complex128."""
    values = np.asarray(t._host())
    if t._dtype.is_complex:
        return values.astype(np.complex128)
    return values.astype(np.float64) if t._dtype.is_floating_point else values


def tensor_repr(t) -> str:
    """``tensor(values, suffixes)``: the suffixes say what the values do not (device, a dtype that is not a
    default one, autograd), as PyTorch's ``_str_intern``."""
    values = _host_values(t)
    prefix = "tensor("
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    default_float = get_default_dtype()
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if t._dtype is not default_float:  # an empty tensor has no values to tell an int64 one by
            suffixes.append(f"dtype={t._dtype!r}")
    else:
        if not _options.edgeitems:
            suffixes.append(f"size={tuple(values.shape)}")
        if t._dtype not in (default_float, default_float.to_complex(), int64, bool_):
            suffixes.append(f"dtype={t._dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    body = values_text(values, len(prefix), _options)
    return with_suffixes(prefix + body, suffixes, len(prefix), _options.linewidth)
