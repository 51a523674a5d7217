"""The numba loop of the CPU's transposed convolution: col2im as a gather, one pass over the output.

Imported on the first call of a ``conv_kernels`` kernel, never with ember (importing numba takes a while).
The columns hold every kernel tap's contribution with the batch as the last dim, so each (channel, row,
column) of the output sums up to kh * kw contiguous batch vectors, which LLVM vectorizes; where the NumPy
kernel adds each tap's whole plane onto a zeroed canvas (kh * kw passes over the output), this reads every
column once and writes each output element once. ``cache=True``: later processes load the machine code.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def _source(position: int, tap: int, stride: int, padding: int, dilation: int, size: int) -> int:
    """The input position whose tap ``tap`` lands on output ``position``, or -1 when none does."""
    t = position + padding - tap * dilation
    if t < 0 or t % stride != 0 or t // stride >= size:
        return -1
    return t // stride


@njit(cache=True, error_model="numpy")
def col2im(cols, sh, sw, ph, pw, dh, dw, out):
    """``out[g, o, r, c, :] = sum over taps (a, b) of cols[g, a, b, o, i, j, :]`` where input (i, j) reaches
    output (r, c) through that tap. cols (groups, kh, kw, out_group, h, w, batch); out (groups, out_group,
    OH, OW, batch)."""
    groups, kh, kw, out_group, h, w, batch = cols.shape
    oh, ow = out.shape[2], out.shape[3]
    for g in range(groups):
        for o in range(out_group):
            for r in range(oh):
                for c in range(ow):
                    acc = out[g, o, r, c]
                    acc[:] = 0
                    for a in range(kh):
                        i = _source(r, a, sh, ph, dh, h)
                        if i < 0:
                            continue
                        for b in range(kw):
                            j = _source(c, b, sw, pw, dw, w)
                            if j < 0:
                                continue
                            src = cols[g, a, b, o, i, j]
                            for q in range(batch):
                                acc[q] += src[q]
