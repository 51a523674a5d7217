"""Indexing, scattering and sorting on NumPy, plus overrides of composites that NumPy does in one call.

Indices arrive validated and non-negative (each op's normalize wraps them), so nothing here checks.
Every kernel returns a fresh array, never a view of its input, except ``index_put_``, which writes
into its first argument.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import LOW_PRECISION


def _key(indices) -> tuple:
    """An ``Index?[]`` list as a NumPy index: None keeps the whole dim."""
    return tuple(slice(None) if i is None else i for i in indices)


def _index(a, indices):
    out = a[_key(indices)]
    return out.copy() if all(i is None for i in indices) else out  # only basic indexing returns a view


def _index_put_(a, indices, values, accumulate):
    if accumulate:
        np.add.at(a, _key(indices), values)
    else:
        a[_key(indices)] = values
    return a


def _at_least_1d(a):
    return a.reshape(1) if a.ndim == 0 else a


def _gather(a, dim, index):
    source, idx = _at_least_1d(a), _at_least_1d(index)
    window = tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(idx.shape))
    return np.take_along_axis(source[window], idx, axis=dim).reshape(index.shape)


def _scatter(write):
    """scatter / scatter_add: ``write(out, key, src)`` at the positions index names along dim."""
    def kernel(a, dim, index, src):
        out = _at_least_1d(a).copy()
        idx = _at_least_1d(index)
        key = list(np.indices(idx.shape, sparse=True))
        key[dim] = idx
        if src.ndim:  # a tensor src may be larger than index; a number (0-d) broadcasts
            src = _at_least_1d(src)[tuple(slice(0, s) for s in idx.shape)]
        write(out, tuple(key), src)
        return out.reshape(a.shape)
    return kernel


def _assign(out, key, src):
    out[key] = src


def _sort_key(a):
    """NumPy cannot sort bfloat16; float32 holds every half-precision value exactly."""
    return a.astype(np.float32) if a.dtype in LOW_PRECISION else a


def _stable_order(key, dim, descending):
    """Indices of a stable sort along dim; NumPy already puts NaN last, as the largest value."""
    if not descending:
        return np.argsort(key, axis=dim, kind="stable")
    # Sorting the reversed array ascending and reversing the result keeps ties in original order.
    reversed_order = np.argsort(np.flip(key, dim), axis=dim, kind="stable")
    return key.shape[dim] - 1 - np.flip(reversed_order, dim)


def _sort(a, dim, descending, stable):
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    order = _stable_order(_sort_key(a), dim, descending).astype(np.int64, copy=False)
    return np.take_along_axis(a, order, dim), order


# -- overrides of composites ---------------------------------------------------------------------

def _flip(a, dims):
    return np.flip(a, dims).copy() if a.ndim else a.copy()


def _roll(a, shifts, dims):
    return np.roll(a, shifts[0] if dims is None else shifts, axis=dims)


def _index_select(a, dim, index):
    if a.ndim == 0:
        return a.copy()
    return np.take(a, index.reshape(-1), axis=dim)


def _beyond(rows, threshold, largest):
    """Elements strictly before the threshold in topk's order (NaN counts as the largest)."""
    if largest:
        ahead = rows > threshold
    else:
        ahead = rows < threshold
    if rows.dtype.kind == "f":
        nan_rows, nan_threshold = np.isnan(rows), np.isnan(threshold)
        ahead |= (nan_rows & ~nan_threshold) if largest else (~nan_rows & nan_threshold)
    return ahead


def _ties(rows, threshold):
    same = rows == threshold
    if rows.dtype.kind == "f":
        same |= np.isnan(rows) & np.isnan(threshold)
    return same


def _topk_columns(rows, k, largest):
    """Per row, the k columns a stable sort would put first, in ascending column order.

    np.partition finds the k-th value; everything strictly ahead of it is in, and ties with it
    are taken by lowest column, as the stable sort would.
    """
    n = rows.shape[-1]
    kth = n - k if largest else k - 1
    threshold = np.partition(rows, kth, axis=-1)[..., kth:kth + 1]
    ahead = _beyond(rows, threshold, largest)
    ties = _ties(rows, threshold)
    missing = k - ahead.sum(axis=-1, keepdims=True)
    chosen = ahead | (ties & (np.cumsum(ties, axis=-1) <= missing))
    return np.nonzero(chosen)[-1].reshape(rows.shape[:-1] + (k,))


def _topk(a, k, dim, largest, sorted):
    """argpartition-style selection: O(n) per row plus a sort of only the k chosen values."""
    if a.ndim == 0 or k == 0 or 2 * k > a.shape[dim]:
        values, order = _sort(a, dim, largest, True)
        window = (slice(None),) * dim + (slice(0, k),)
        return (values, order) if a.ndim == 0 else (values[window].copy(), order[window].copy())
    rows = np.moveaxis(_sort_key(a), dim, -1)
    columns = _topk_columns(rows, k, largest)
    order = _stable_order(np.take_along_axis(rows, columns, -1), -1, largest)
    columns = np.take_along_axis(columns, order, -1)
    values = np.take_along_axis(np.moveaxis(a, dim, -1), columns, -1)
    return np.moveaxis(values, -1, dim).copy(), np.moveaxis(columns, -1, dim).astype(np.int64)


KERNELS = {
    "argwhere": np.argwhere,
    "index": _index,
    "index_put_": _index_put_,
    "gather": _gather,
    "scatter": _scatter(_assign),
    "scatter_add": _scatter(np.add.at),
    "sort": _sort,
    # overrides of composites
    "flip": _flip,
    "roll": _roll,
    "tril": np.tril,
    "triu": np.triu,
    "index_select": _index_select,
    "topk": _topk,
}
