"""Shape inference shared by the op declarations. Each helper raises ShapeError naming the op."""
from __future__ import annotations

from .errors import OutOfRangeError, ShapeError, describe

_broadcast_cache: dict = {}


def broadcast_shapes(op_name: str, *shapes: tuple) -> tuple:
    """NumPy/PyTorch broadcasting of ``shapes``; cached because the same pairs recur in training loops."""
    key = (op_name, shapes)
    out = _broadcast_cache.get(key)
    if out is not None:
        return out
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -axis:
                d = s[axis]
                if d != 1:
                    if size != 1 and d != size:
                        raise ShapeError(f"{op_name}: shapes {', '.join(str(tuple(x)) for x in shapes)} cannot be "
                                         f"broadcast together (dim {axis}: {size} vs {d})")
                    size = d
        result.append(size)
    out = tuple(result)
    if len(_broadcast_cache) < 4096:
        _broadcast_cache[key] = out
    return out


def shape(t) -> tuple:
    """The shape of a tensor operand; () for a Python number."""
    data = getattr(t, "_data", None)
    return tuple(data.shape) if data is not None else ()


def elementwise(op_name: str):
    """Meta of an elementwise op over all of its tensor operands."""
    def meta(*values):
        shapes = [shape(v) for v in values if hasattr(v, "_data")]
        return broadcast_shapes(op_name, *shapes) if len(shapes) > 1 else (shapes[0] if shapes else ())
    return meta


def reduced(in_shape: tuple, dims, keepdim: bool) -> tuple:
    """The shape after reducing ``dims`` (None: all of them)."""
    if dims is None:
        dims = range(len(in_shape))
    dims = set(dims)
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(in_shape))
    return tuple(s for i, s in enumerate(in_shape) if i not in dims)


def require(condition: bool, op_name: str, message: str, *operands) -> None:
    """Raise ShapeError ``"op: message (operands)"`` unless ``condition``."""
    if not condition:
        suffix = f" ({', '.join(describe(o) for o in operands)})" if operands else ""
        raise ShapeError(f"{op_name}: {message}{suffix}")


def require_dims(op_name: str, x, error: type = ShapeError) -> None:
    """Raise ``error`` for a 0-d ``x``: ops that take one dimension's length need a dimension to take it from."""
    if not shape(x):
        raise error(f"{op_name}: expects at least a 1-dimensional tensor, got a 0-dim tensor ({describe(x)})")


def check_index(op_name: str, x, dim: int, index: int) -> int:
    """``index`` along ``dim`` of ``x`` made non-negative; OutOfRangeError naming both unless it is there."""
    length = shape(x)[dim]
    if not -length <= index < length:
        raise OutOfRangeError(f"{op_name}(): index {index} out of range for dimension {dim} of size {length} "
                              f"({describe(x)})")
    return index % length


def numel(shape_: tuple) -> int:
    n = 1
    for s in shape_:
        n *= s
    return n
