"""Indexing, scattering and sorting, plus overrides of composites the library does in one call.

Indices arrive validated and non-negative (each op's normalize wraps them), so nothing here checks.
Every kernel returns a fresh array, never a view of its input, except ``index_put_``, which writes
into its first argument.
"""
from __future__ import annotations

import numpy as np

from .library import ArrayLib


#: Rows up to this long are sorted whole by topk: cheaper than partitioning them, at the sizes samplers use.
_SHORT_ROW = 128


def build(lib: ArrayLib) -> dict:
    xp = lib.xp
    low = lib.low_precision
    add_at, argsort = lib.add_at, lib.argsort_stable

    def _key(indices) -> tuple:
        """An ``Index?[]`` list as an array index: None keeps the whole dim."""
        return tuple(slice(None) if i is None else i for i in indices)

    def _index(a, indices):
        out = a[_key(indices)]
        return out.copy() if all(i is None for i in indices) else out  # only basic indexing returns a view

    def _index_put_(a, indices, values, accumulate):
        if accumulate:
            key = _key(indices)
            # NumPy 2.4's add.at adds wrong values when ``values`` must broadcast to the indexed shape (add.at(a,
            # (i,), v) with i of shape (2, 2) and v of shape (2,)): broadcast them first. The indexed shape is
            # read off a bool stand-in of a's shape (zero strides: nothing of a's size is allocated)
            indexed = xp.broadcast_to(xp.zeros((), bool), a.shape)[key].shape
            if values.shape != indexed:
                values = xp.broadcast_to(values, indexed)
            add_at(a, key, values)
        else:
            a[_key(indices)] = values
        return a

    def _at_least_1d(a):
        return a.reshape(1) if a.ndim == 0 else a

    def _gather(a, dim, index):
        if index.size == 0:  # any shape and rank is valid then (PyTorch's rule), and nothing is read
            return xp.empty(index.shape, a.dtype)
        source, idx = _at_least_1d(a), _at_least_1d(index)
        window = tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(idx.shape))
        return xp.take_along_axis(source[window], idx, axis=dim).reshape(index.shape)

    def _open_grid(shape: tuple) -> list:
        """One index array per dim, each shaped to broadcast against the others (np.indices(sparse=True))."""
        ndim = len(shape)
        return [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1)) for d, n in enumerate(shape)]

    def _scatter(write):
        """scatter / scatter_add: ``write(out, key, src)`` at the positions index names along dim."""
        def kernel(a, dim, index, src):
            if index.size == 0:  # any shape and rank is valid then (PyTorch's rule), and nothing is written
                return a.copy()
            out = _at_least_1d(a).copy()
            idx = _at_least_1d(index)
            key = _open_grid(idx.shape)
            key[dim] = idx
            if src.ndim:  # a tensor src may be larger than index; a number (0-d) broadcasts
                src = _at_least_1d(src)[tuple(slice(0, s) for s in idx.shape)]
            write(out, tuple(key), src)
            return out.reshape(a.shape)
        return kernel

    def _assign(out, key, src):
        out[key] = src

    def _sort_key(a):
        """Sorts see half precision as float32, which holds every such value exactly (NumPy cannot sort bfloat16)."""
        return a.astype(np.float32) if a.dtype in low else a

    def _stable_order(key, dim, descending):
        """Indices of a stable sort along dim; NaN goes last, as the largest value."""
        if not descending:
            return argsort(key, dim)
        # Sorting the reversed array ascending and reversing the result keeps ties in original order.
        reversed_order = argsort(xp.flip(key, dim), dim)
        return key.shape[dim] - 1 - xp.flip(reversed_order, dim)

    def _sort(a, dim, descending, stable):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        order = _stable_order(_sort_key(a), dim, descending).astype(np.int64, copy=False)
        return xp.take_along_axis(a, order, dim), order

    # -- overrides of composites -------------------------------------------------------------------

    def _flip(a, dims):
        return xp.flip(a, dims).copy() if a.ndim else a.copy()

    def _roll(a, shifts, dims):
        return xp.roll(a, shifts[0] if dims is None else shifts, axis=dims)

    def _index_select(a, dim, index):
        if a.ndim == 0:
            return a.copy()
        return xp.take(a, index.reshape(-1), axis=dim)

    def _beyond(rows, threshold, largest):
        """Elements strictly before the threshold in topk's order (NaN counts as the largest)."""
        ahead = rows > threshold if largest else rows < threshold
        if rows.dtype.kind == "f":
            nan_rows, nan_threshold = xp.isnan(rows), xp.isnan(threshold)
            ahead |= (nan_rows & ~nan_threshold) if largest else (~nan_rows & nan_threshold)
        return ahead

    def _ties(rows, threshold):
        same = rows == threshold
        if rows.dtype.kind == "f":
            same |= xp.isnan(rows) & xp.isnan(threshold)
        return same

    def _topk_columns(rows, k, largest):
        """Per row, the k columns a stable sort would put first, in ascending column order.

        partition finds the k-th value; everything strictly ahead of it is in, and ties with it
        are taken by lowest column, as the stable sort would.
        """
        n = rows.shape[-1]
        kth = n - k if largest else k - 1
        threshold = xp.partition(rows, kth, axis=-1)[..., kth:kth + 1]
        ahead = _beyond(rows, threshold, largest)
        ties = _ties(rows, threshold)
        missing = k - ahead.sum(axis=-1, keepdims=True)
        chosen = ahead | (ties & (xp.cumsum(ties, axis=-1) <= missing))
        return xp.nonzero(chosen)[-1].reshape(rows.shape[:-1] + (k,))

    def _topk_by_sort(a, k, dim, largest):
        values, order = _sort(a, dim, largest, True)
        if a.ndim == 0:
            return values, order
        window = (slice(None),) * dim + (slice(0, k),)
        return values[window].copy(), order[window].copy()

    def _topk(a, k, dim, largest, sorted):
        """Short rows (a sampler's vocabulary) and k=1 (greedy decoding) as a few whole-array calls on the rows
        as a matrix: each library call costs more than the arithmetic there. Long rows by partition: O(n) per
        row plus a sort of only the k chosen values."""
        if a.ndim == 0 or k == 0:
            return _topk_by_sort(a, k, dim, largest)
        n = a.shape[dim]
        if (k == 1 and largest) or n <= _SHORT_ROW:
            return _topk_of_rows(a, k, dim, largest)
        if 2 * k > n:
            return _topk_by_sort(a, k, dim, largest)
        rows = xp.moveaxis(_sort_key(a), dim, -1)
        columns = _topk_columns(rows, k, largest)
        order = _stable_order(xp.take_along_axis(rows, columns, -1), -1, largest)
        columns = xp.take_along_axis(columns, order, -1)
        values = xp.take_along_axis(xp.moveaxis(a, dim, -1), columns, -1)
        return xp.moveaxis(values, -1, dim).copy(), xp.moveaxis(columns, -1, dim).astype(np.int64)

    def _topk_of_rows(a, k, dim, largest):
        """topk along dim with the other dims flattened into rows: argmax for the largest one (its first
        occurrence, NaN counting as the largest, as the stable order has it), else a stable sort of each row."""
        last = dim == a.ndim - 1
        rows = a if last else xp.moveaxis(a, dim, -1)
        kept = rows.shape[:-1]
        rows = rows.reshape(-1, rows.shape[-1])
        key = _sort_key(rows)
        if k == 1 and largest:
            columns = xp.argmax(key, -1)[:, None]
        elif largest:  # ascending over the reversed rows, reversed: descending, ties in their original order
            columns = (key.shape[-1] - 1) - argsort(key[:, ::-1], -1)[:, :-k - 1:-1]
        else:
            columns = argsort(key, -1)[:, :k]
        values = rows[xp.arange(rows.shape[0])[:, None], columns]
        columns = columns.astype(np.int64, copy=False)
        values, columns = values.reshape(kept + (k,)), columns.reshape(kept + (k,))
        if last:
            return values, columns
        return xp.moveaxis(values, -1, dim).copy(), xp.moveaxis(columns, -1, dim).copy()

    def _topk_sorting(a, k, dim, largest, sorted):
        """topk as a stable sort and a slice: for libraries whose partition sorts anyway."""
        return _topk_by_sort(a, k, dim, largest)

    return {
        "argwhere": xp.argwhere,
        "index": _index,
        "index_put_": _index_put_,
        "gather": _gather,
        "scatter": _scatter(_assign),
        "scatter_add": _scatter(add_at),
        "sort": _sort,
        # overrides of composites
        "flip": _flip,
        "roll": _roll,
        "tril": xp.tril,
        "triu": xp.triu,
        "index_select": _index_select,
        "topk": _topk_sorting if lib.extra.get("topk_by_sort") else _topk,
    }
