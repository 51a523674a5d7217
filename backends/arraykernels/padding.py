"""The pad override: constant, reflect, replicate and circular padding in one new array."""
from __future__ import annotations

from .common import grower
from .library import ArrayLib


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    grow = grower(lib)

    def _pad(a, pad, mode, value):
        """Negative padding crops: circular crops before it wraps, reflect and replicate read the uncropped
        input (PyTorch's rules), constant does either."""
        pairs = [(0, 0)] * a.ndim
        for k in range(len(pad) // 2):
            pairs[a.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
        crop = tuple(slice(max(-b, 0), n - max(-e, 0)) for (b, e), n in zip(pairs, a.shape))
        widths = [(max(b, 0), max(e, 0)) for b, e in pairs]
        if mode in ("constant", "circular"):
            return grow(a[crop], widths, mode, value)
        out = grow(a, widths, mode, value)
        return xp.ascontiguousarray(out[tuple(slice(c.start, c.stop + b + e) for c, (b, e) in zip(crop, widths))])

    return {"pad": _pad}
