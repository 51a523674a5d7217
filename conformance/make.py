"""Seeded sample tensors on the device under test: the ``make`` of the ``OpDef.samples`` protocol."""
from __future__ import annotations

import math

import numpy as np

#: Value ranges [low, high) when a sample does not ask for one. Small enough that products and
#: powers of a few elements stay inside float16, wide enough to cover both signs.
FLOAT_RANGE = (-5.0, 5.0)
SIGNED_RANGE = (-9, 10)
UNSIGNED_RANGE = (0, 10)

#: Floats that kernels most often get wrong: NaN, infinities, signed zeros, halves (for rounding).
SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.75, 1e-3)

#: The complex counterpart: special parts against ordinary ones, and against each other (inf with nan, the
#: branch cuts of log and sqrt on the negative real axis with both signs of zero). As many as SPECIAL_FLOATS.
SPECIAL_COMPLEX = (complex(math.nan, 1.0), complex(1.0, math.nan), complex(math.inf, 0.0), complex(-math.inf, 2.0),
                   complex(0.5, math.inf), complex(math.inf, math.nan), complex(0.0, 0.0), complex(-0.0, -0.0),
                   complex(-2.0, 0.0), complex(-2.0, -0.0), complex(1.0, -1.0), complex(-0.5, 2.5))


class Unsupported(Exception):
    """A sample needs a dtype that the backend under test does not support."""


class Maker:
    """``make(shape, *, dtype, low, high, noncontiguous, nonzero)`` -> a tensor on the target's device."""

    def __init__(self, target, dtype, seed: int) -> None:
        self.device = target.device
        self.supported = target.dtypes
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)

    def __call__(self, shape=(), *, dtype=None, low=None, high=None, noncontiguous: bool = False,
                 nonzero: bool = False):
        from ember.dispatch.schema.dtypes import as_dtype
        dt = self.dtype if dtype is None else as_dtype(dtype)
        if dt not in self.supported:
            raise Unsupported(f"the sample needs {dt.name}")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        values = self.values(shape, dt, low, high, nonzero)
        if noncontiguous and values.ndim:
            return self.strided(values, dt)
        return self.tensor(values, dt)

    def values(self, shape: tuple, dt, low=None, high=None, nonzero: bool = False) -> np.ndarray:
        """Host values for a tensor of dtype ``dt``, drawn from [low, high)."""
        if dt.kind == "bool":
            out = self.rng.random(shape) < 0.5
            return np.ones(shape, bool) if nonzero else out
        if dt.kind == "int":
            default = SIGNED_RANGE if dt.is_signed else UNSIGNED_RANGE
            lo = default[0] if low is None else math.ceil(low)
            hi = default[1] if high is None else math.ceil(high)
            lo = max(lo, 0) if not dt.is_signed else lo
            out = self.rng.integers(lo, max(hi, lo + 1), shape, dtype=np.int64)
            if nonzero:
                out[out == 0] = 1 if hi > 1 else -1
            return out
        lo = FLOAT_RANGE[0] if low is None else low
        hi = FLOAT_RANGE[1] if high is None else high
        out = self.rng.uniform(lo, hi, shape)
        if dt.kind == "complex":  # both parts in [low, high): a domain (low=0 for sqrt) holds for each part
            out = out + 1j * self.rng.uniform(lo, hi, shape)
        out = np.asarray(out)  # an array even when 0-d, for the masking below
        if nonzero:
            out[np.abs(out) < 1e-3] = 1.0
        return out

    def tensor(self, values, dt):
        """A contiguous tensor on the device holding ``values`` converted to ``dt``."""
        import ember
        return ember.tensor(np.asarray(values), dtype=dt, device=self.device)

    def strided(self, values: np.ndarray, dt):
        """The same values as a non-contiguous view: every other column of a transposed buffer."""
        from ember.dispatch.ops import F
        last = values.ndim - 1
        layout = np.swapaxes(values, -1, -2) if values.ndim >= 2 else values
        buffer = np.zeros(layout.shape[:-1] + (2 * layout.shape[-1],), values.dtype)
        buffer[..., ::2] = layout
        view = F.slice(self.tensor(buffer, dt), last, None, None, 2)
        return F.transpose(view, last - 1, last) if values.ndim >= 2 else view

    def specials(self, shape=None, dtype=None):
        """Special values (NaN, infinities, signed zeros, halves; in either part for complex), reshaped to
        ``shape``."""
        from ember.dispatch.schema.dtypes import as_dtype
        dt = self.dtype if dtype is None else as_dtype(dtype)
        values = np.array(SPECIAL_COMPLEX if dt.is_complex else SPECIAL_FLOATS)
        return self.tensor(values if shape is None else values.reshape(shape), dt)
