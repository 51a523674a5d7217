"""``repr(tensor)`` in PyTorch's format: ``tensor([1., 2.], dtype=ember.float64)``."""
from __future__ import annotations

import numpy as np

from .dispatch.dtypes import bool_, float32, get_default_dtype, int64


def _format_values(values: np.ndarray, floating: bool) -> str:
    if floating:
        values = values.astype(np.float64)
        finite = values[np.isfinite(values)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size and (np.abs(finite).max() >= 1e8 or (np.abs(finite[finite != 0]).min(initial=1) < 1e-4))

        def fmt(x):
            if not np.isfinite(x):
                return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
            if big:
                return f"{x:.4e}"
            return f"{x:.0f}." if integral else f"{x:.4f}"
        formatter = {"float_kind": fmt}
    else:
        formatter = None
    return np.array2string(values, separator=", ", prefix="tensor(", formatter=formatter, threshold=1000,
                           edgeitems=3, max_line_width=80)


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
