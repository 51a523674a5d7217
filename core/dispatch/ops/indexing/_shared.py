"""Private helpers the indexing modules share: index validation (dtypes, shapes, bounds, negative indices
wrapped, remembered checks) and the metas, references and samples of advanced indexing and gather/scatter
(``indexing`` declares with them; ``scatter_ops`` and ``sorting`` too)."""
from __future__ import annotations

import numpy as np

from ...execution.dispatcher import note_value_read
from ...schema import Sample
from ...schema.dtypes import bool_, int64
from ...schema.errors import DtypeError, OutOfRangeError, ShapeError, describe
from ...schema.meta import broadcast_shapes, numel, require, shape
from .._shared import _is_tensor
from ..namespace import F
from .value_checks import MISSING, CheckedValues, check_extremes, defers, extremes_now, vouched


def _size(in_shape: tuple, dim: int) -> int:
    """The length of ``dim``; a 0-d tensor counts as one element along dim 0, as in PyTorch."""
    return in_shape[dim] if in_shape else 1


def _check_index_dtype(op_name: str, index, what: str = "index") -> None:
    if index._dtype.kind != "int":
        hint = "; turn a bool mask into indices with nonzero() first" if index._dtype is bool_ else ""
        raise DtypeError(f"{op_name}: {what} must be an integer tensor, got {describe(index)}{hint}")


def _check_mask_dtype(op_name: str, mask) -> None:
    if mask._dtype is not bool_:
        raise DtypeError(f"{op_name}: mask must be a bool tensor, got {describe(mask)}")


def _check_range(op_name: str, index, dim: int, size: int, negative_ok: bool, wrap: bool = False):
    """Raise OutOfRangeError unless every index fits dim, and return the index the kernel may use.

    Where the device defers value checks (``value_checks``) the error comes at its next synchronisation, so
    the kernel must not meet a bad index meanwhile: the index returned is brought into range on the device
    (negatives wrapped where they are accepted, the rest clamped; one elementwise op), and a bad one is
    reported later. Elsewhere the check reads at once and the index comes back as it is, with negative
    indices wrapped when ``wrap`` (kernels that do not count from the end). Uses Ember reductions so it
    runs on any backend; this is the one data-dependent check.
    """
    note_value_read()  # also when remembered: the dispatcher must not cache this validation
    if index.numel() == 0 or vouched.depth:
        return index
    deferred = defers(index)
    if deferred and size == 0:
        raise OutOfRangeError(f"{op_name}: index out of bounds for dim {dim} with size 0 (expected no index: "
                              f"the dim is empty; {describe(index)})")
    key = (size, negative_ok)
    low = _checked_indices.recall(index, key)
    if low is MISSING:
        low = _read_range(op_name, index, dim, size, negative_ok, deferred)
        _checked_indices.remember(index, key, low)
    if deferred:  # remembered or not, its check may still be pending
        return _wrapped(index, size) if negative_ok else F.clamp(index, 0, size - 1)
    return _wrapped(index, size) if wrap and low < 0 else index


def _read_range(op_name: str, index, dim: int, size: int, negative_ok: bool, deferred: bool) -> int | None:
    """The check itself; the smallest index, or None where the check was deferred."""
    smallest = -size if negative_ok else 0
    description = describe(index)

    def verdict(low, high):
        bad = high if high >= size else (low if low < smallest else None)
        if bad is None:
            return None
        accepted = f"{-size}..{size - 1}" if negative_ok else f"0..{size - 1}"
        return OutOfRangeError(f"{op_name}: index {bad} is out of bounds for dim {dim} with size {size} "
                               f"(expected {accepted if size else 'no index: the dim is empty'}; {description})")
    if deferred:
        check_extremes(index, verdict)
        return None
    low, high = extremes_now(index)
    error = verdict(low, high)
    if error is not None:
        raise error
    return low


_checked_indices = CheckedValues()  # indices found in range, with their smallest value


def _wrapped(index, size: int):
    """Negative indices made non-negative, in int64 so that adding ``size`` cannot overflow a narrow dtype."""
    if index._dtype is not int64:
        index = F.to_dtype(index, int64)
    return F.remainder(index, size)


def _checked_index(op_name: str, index, dim: int, size: int):
    return _check_range(op_name, index, dim, size, negative_ok=True, wrap=True)


def _advanced_shape(op_name: str, in_shape: tuple, indices) -> tuple:
    """NumPy's result shape of ``input[indices]`` (None = the whole dim).

    Adjacent index tensors replace their dims in place by their broadcast shape; separated ones
    put the broadcast shape first, followed by the remaining dims.
    """
    dims = [d for d, index in enumerate(indices) if index is not None]
    if not dims:
        return in_shape
    try:
        broadcast = broadcast_shapes(op_name, *(shape(indices[d]) for d in dims))
    except ShapeError:
        raise ShapeError(f"{op_name}: index tensors of shapes "
                         f"{', '.join(str(shape(indices[d])) for d in dims)} cannot be broadcast together "
                         f"(indexing a tensor of shape {in_shape})") from None
    if dims == list(range(dims[0], dims[-1] + 1)):
        return in_shape[:dims[0]] + broadcast + in_shape[dims[-1] + 1:]
    return broadcast + tuple(s for d, s in enumerate(in_shape) if d not in dims)


def _normalize_indices(op, args):
    """Validate an ``Index?[]`` list (count, dtypes, shapes, bounds) and wrap negative indices."""
    x, indices = args.first_input, list(args["indices"])
    in_shape = shape(x)
    if len(indices) > len(in_shape):
        raise OutOfRangeError(f"{op.name}: too many indices for a tensor of dimension {len(in_shape)} "
                         f"(got {len(indices)}; {describe(x)})")
    for d, index in enumerate(indices):
        if index is not None:
            _check_index_dtype(op.name, index, f"the index for dim {d}")
    _advanced_shape(op.name, in_shape, indices)  # shape errors before reading any data
    args["indices"] = [None if index is None else _checked_index(op.name, index, d, in_shape[d])
                 for d, index in enumerate(indices)]


def _np_key(indices) -> tuple:
    return tuple(slice(None) if index is None else index for index in indices)


def _broadcasts_to(source: tuple, target: tuple) -> bool:
    return len(source) <= len(target) and all(s in (1, t) for s, t in zip(reversed(source), reversed(target)))


def _index_put_meta(x, indices, values, accumulate=False):
    target = _advanced_shape("index_put_", shape(x), indices)
    require(_broadcasts_to(shape(values), target), "index_put_",
            f"values of shape {shape(values)} cannot be broadcast to the indexed shape {target}", x, values)
    return shape(x)


def _index_put_reference(x, indices, values, accumulate=False):
    out = np.array(x)
    values = np.asarray(values).astype(out.dtype)
    if accumulate:
        key = _np_key(indices)
        # NumPy 2.4's add.at adds wrong values when ``values`` must broadcast to the indexed shape: broadcast first
        np.add.at(out, key, np.broadcast_to(values, out[key].shape))
    else:
        out[_np_key(indices)] = values
    return out


def sort_keys(make, shape_: tuple):
    """Random values of the sample dtype to argsort into distinct positions; complex samples draw real ones, which
    have an order."""
    return make(shape_, dtype=make.dtype.to_real())


def _index_put_samples(make, dtype):
    x = make((6,))
    yield Sample((x, [F.arange(-6, 0, 2, device=x.device)], make((3,))), note="distinct negative positions")
    yield Sample((make((4, 5)), [make((2, 3), dtype=int64, low=-4, high=4)], make((5,)), True),
                 note="accumulate with duplicates and negative indices; values broadcast")
    yield Sample((make((4, 5, 6), noncontiguous=True), [make((3,), dtype=int64, low=0, high=4), None,
                                                        make((1,), dtype=int64, low=0, high=6)], make(()), True),
                 note="separated indices, 0-d values")
    yield Sample((make((3, 4)), [make((0,), dtype=int64, low=0, high=3)], make(())), note="empty index")
    yield Sample((make((2,)), [make((2, 2), dtype=int64, low=0, high=2)], make((2,)), True),
                 note="accumulate, values broadcast along the index's leading dim (NumPy 2.4's add.at gets it wrong)")


def _rank(value) -> int:
    return max(len(shape(value)), 1)


def _padded(value) -> tuple:
    return shape(value) or (1,)


def _check_gather_shapes(op_name: str, x, dim: int, index, src=None) -> None:
    """PyTorch's rules: equal ranks; index no larger than src anywhere, nor than input off dim. An empty index
    is exempt from all of them (PyTorch checks nothing then: the op reads and writes nothing)."""
    if numel(shape(index)) == 0:
        return
    require(_rank(index) == _rank(x), op_name, "Index tensor must have the same number of dimensions as "
            f"{'input' if src is None else 'self'} tensor", x, index)
    if src is not None:
        require(_rank(index) == _rank(src), op_name, "Index tensor must have the same number of dimensions as src "
                "tensor", index, src)
    index_shape, in_shape = _padded(index), _padded(x)
    too_long = next((d for d, (i, s) in enumerate(zip(index_shape, in_shape)) if d != dim and i > s), None)
    require(too_long is None, op_name, f"Size does not match at dimension {too_long}: "
            f"index of shape {shape(index)} must be no larger than input of shape {shape(x)} "
            f"in every dim but dim {dim}", x, index)
    if src is not None:
        require(all(i <= s for i, s in zip(index_shape, _padded(src))), op_name,
                f"index of shape {shape(index)} must be no larger than src of shape {shape(src)}", index, src)


def _along_dim_normalize(op, args):
    """gather and scatter: dtypes, then index bounds (no negative indices, as in PyTorch)."""
    x, dim, index = args["input"], args["dim"], args["index"]
    _check_index_dtype(op.name, index)
    src = args.get("src")
    if _is_tensor(src) and src._dtype is not x._dtype:
        raise DtypeError(f"{op.name}: src must have input's dtype {x._dtype.name}, got {describe(src)}")
    args["index"] = _check_range(op.name, index, dim, _size(shape(x), dim), negative_ok=False)


def _scatter_meta(name):
    def meta(x, dim, index, src):
        _check_gather_shapes(name, x, dim, index, src if _is_tensor(src) else None)
        return shape(x)
    return meta
