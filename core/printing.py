"""``repr(tensor)`` in PyTorch's format: ``tensor([1., 2.], dtype=ember.float64)``; ``set_printoptions``."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .dispatch.schema.dtypes import bool_, float32, get_default_dtype, int64


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


def _format_values(values: np.ndarray, floating: bool) -> str:
    if floating:
        values = values.astype(np.float64)
        finite = values[np.isfinite(values)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size and (np.abs(finite).max() >= 1e8 or (np.abs(finite[finite != 0]).min(initial=1) < 1e-4))
        if _options.sci_mode is not None:
            big = _options.sci_mode
        digits = _options.precision

        def fmt(x):
            if not np.isfinite(x):
                return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
            if big:
                return f"{x:.{digits}e}"
            return f"{x:.0f}." if integral else f"{x:.{digits}f}"
        formatter = {"float_kind": fmt}
    else:
        formatter = None
    threshold = _options.threshold
    return np.array2string(values, separator=", ", prefix="tensor(", formatter=formatter,
                           threshold=int(min(threshold, np.iinfo(np.int64).max)), edgeitems=_options.edgeitems,
                           max_line_width=_options.linewidth)


def tensor_repr(t) -> str:
    host = t._host()
    body = _format_values(np.asarray(host), t._dtype.is_floating_point)
    if host.size == 0 and host.ndim != 1:
        body = f"[], size={tuple(host.shape)}"
    extras = []
    if t._device.type != "cpu":
        extras.append(f"device='{t._device}'")
    default_float = get_default_dtype()
    if t._dtype not in (default_float, int64, bool_) or (t._dtype is float32 and default_float is not float32):
        if not (host.size == 0 and t._dtype is default_float):
            extras.append(f"dtype={t._dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return f"tensor({body}{''.join(', ' + e for e in extras)})"
