"""Private helpers the reduction modules share: the ``dim``/``keepdim`` metas, NumPy references and the
derivatives of extrema (``reduction`` declares with them; ``nan_reductions`` and ``order_statistics`` too)."""
from __future__ import annotations

import numpy as np

from ...schema.meta import reduced, require, shape
from ..namespace import F


def _reduce_meta(name, needs_elements=False):
    def meta(x, dim=None, keepdim=False, *rest):
        dims = (dim,) if isinstance(dim, int) else dim
        in_shape = shape(x)
        if needs_elements:
            empty = [d for d in (dims if dims is not None else range(len(in_shape))) if in_shape[d] == 0] \
                if in_shape else []
            require(not empty and (dims is not None or 0 not in in_shape), name,
                    "cannot reduce over a dimension of size 0 (the result would have no identity)", x)
        return reduced(in_shape, dims, keepdim)
    return meta


def _np_axis(x, dim):
    """NumPy's axis for a user's ``dim``: a tuple for lists, None for every dim and for 0-d inputs
    (which accept dim 0 and -1 in PyTorch, but no axis in NumPy)."""
    if dim is None or np.ndim(x) == 0:
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def _np_reduce(fn):
    def reference(x, dim=None, keepdim=False, dtype=None):
        return fn(x, axis=_np_axis(x, dim), keepdims=keepdim)
    return reference


def keep_reduced_dims(t, in_shape: tuple, dim, keepdim: bool):
    """A reduction's output (or its gradient) viewed with the reduced dims kept as size 1."""
    if keepdim:
        return t
    dims = range(len(in_shape)) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    return F.reshape(t, reduced(in_shape, tuple(dims), True))


def _extremum_derivative(grad, input, dim, keepdim, result):
    """amax/amin: the gradient is shared evenly by the elements equal to the extremum."""
    in_shape = tuple(input.shape)
    result = keep_reduced_dims(result, in_shape, dim, keepdim)
    hits = F.to_dtype(F.eq(input, result), grad.dtype)
    count = F.sum(hits, dim, True)
    return F.mul(F.div(hits, count), keep_reduced_dims(grad, in_shape, dim, keepdim))


def _moment_meta(name):
    """var/std take correction before keepdim."""
    inner = _reduce_meta(name)
    return lambda x, dim=None, correction=1, keepdim=False: inner(x, dim, keepdim)


def _var_reference(x, dim=None, correction=1, keepdim=False):
    return np.var(x, axis=_np_axis(x, dim), ddof=correction, keepdims=keepdim)


def _selected_derivative(grads, input, dim, keepdim, results):
    """max/min along dim: the whole gradient goes to the selected index, as in PyTorch."""
    in_shape = tuple(input.shape)
    if not in_shape:
        return grads[0]
    indices = keep_reduced_dims(results[1], in_shape, dim, keepdim)
    grad = keep_reduced_dims(grads[0], in_shape, dim, keepdim)
    return F.scatter(F.zeros_like(input, dtype=grad.dtype), dim, indices, grad)


def _dim_pair_meta(name):
    inner = _reduce_meta(name, needs_elements=True)

    def meta(x, dim, keepdim=False):
        out = inner(x, dim, keepdim)
        return out, out
    return meta
