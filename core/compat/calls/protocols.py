"""Python's protocols on tensors, and assignment, as call forms: every operator with every kind of other
operand on either side, conversions and copies of tensors of every small shape, ``x[index] = value`` for
every index kind with every value kind and broadcastable shape, and the in-place writes that broadcast.

Each is a ``Call`` with surface ``python``: its name is a key of ``PYTHON``, a function of the
library-made arguments, so that the same judge compares the outcomes on both frameworks.
"""
from __future__ import annotations

import copy
import operator
import pickle
from itertools import product

from .outcome import Call
from .values import Value, ints, npy, py, tensor


def _setitem(target, index, value):
    target[index] = value
    return target


def _inplace(name: str):
    def write(target, *args):
        getattr(target, name)(*args)
        return target
    return write


#: name -> how Python spells it, as a function of the call's arguments.
PYTHON = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">=": operator.ge, "+": operator.add,
    "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv, "**": operator.pow,
    "%": operator.mod, "&": operator.and_, "|": operator.or_, "@": operator.matmul,
    "+=": operator.iadd, "*=": operator.imul, "in": lambda t, item: item in t,
    "bool": bool, "len": len, "list(iter)": list, "int": int, "float": float, "index": operator.index,
    "format": format, "hash is id": lambda t: hash(t) == id(t), "copy.copy": copy.copy,
    "copy.deepcopy": copy.deepcopy, "pickle": lambda t: pickle.loads(pickle.dumps(t)),
    "setitem": _setitem, "copy_": _inplace("copy_"), "index_put_": _inplace("index_put_"),
    "masked_fill_": _inplace("masked_fill_"), "masked_scatter_": _inplace("masked_scatter_"),
}


def _array(shape: tuple, dtype: str) -> Value:
    return Value("ndarray", shape=shape, dtype=dtype)


_OTHERS = [py(None), py("text"), py(2), py(2.5), py(True), npy(2.0, "float64"), npy(2.0, "float32"), npy(2, "int64"),
           npy(True, "bool"), _array((2, 3), "float64"), _array((), "float32"), _array((3,), "int64"), ints((1, 2, 3)),
           Value("tuple", (py(1), py(2), py(3))), tensor((), "float64"), tensor((3,), "int64"), tensor((2, 3), "bool")]
_BINARY = ("==", "!=", "<", ">=", "+", "-", "*", "/", "//", "**", "%", "&", "|", "@", "+=", "*=")


def _python(category: str, name: str, *args: Value) -> Call:
    return Call(category, "python", "", name, tuple(args))


def operator_calls() -> list[Call]:
    """Every binary operator, a tensor on either side of every kind of other operand."""
    calls = []
    for name, dtype, other in product(_BINARY, ("float32", "int64"), _OTHERS):
        mine = tensor((2, 3) if name != "@" else (3, 3), dtype)
        calls.append(_python("operators", name, mine, other))
        if not name.endswith("="):
            calls.append(_python("reflected operators", name, other, mine))
    for item in (py(None), py(1), py(0.5), py("text"), tensor((), "float32"), tensor((3,), "float32")):
        calls.append(_python("operators", "in", tensor((2, 3), "float32"), item))
    return calls


def conversion_calls() -> list[Call]:
    """``bool``, ``len``, ``iter``, ``int``, ``float``, ``__index__``, ``format``, ``hash`` and copies, of
    tensors of every small shape and of float, int and bool dtypes."""
    calls = []
    for name, shape, dtype in product(("bool", "len", "list(iter)", "int", "float", "index", "hash is id",
                                       "copy.copy", "copy.deepcopy", "pickle"),
                                      ((), (1,), (1, 1), (2, 3), (0,)), ("float32", "int64", "bool")):
        calls.append(_python("conversions", name, tensor(shape, dtype)))
    for spec, shape in product(("", ".2f", ">8", "d", "s"), ((), (2,))):
        calls.append(_python("conversions", "format", tensor(shape, "float32"), py(spec)))
        calls.append(_python("conversions", "format", tensor(shape, "int64"), py(spec)))
    return calls


_INDICES = [py(0), py(-1), Value("slice", (None, None, None)), Value("slice", (0, 1, None)), py(None),
            Value("ellipsis"), tensor((2,), "bool"), tensor((2,), "int64", "index"), ints((0, 1)),
            Value("tuple", (py(0), py(1))), Value("tuple", (Value("ellipsis"), py(1))),
            Value("tuple", (Value("slice", (None, None, None)), tensor((2,), "int64", "index"))),
            tensor((2, 3), "bool")]


def _values(dtype: str) -> list[Value]:
    shapes = [(), (1,), (3,), (1, 3), (1, 1, 3), (2, 3), (2, 1), (1, 2, 3)]
    return ([tensor(s, dtype) for s in shapes] + [tensor((3,), "int64"), tensor((3,), "float64")]
            + [_array(s, "float64") for s in ((3,), (1, 3))]
            + [py(2), py(2.5), py(True), npy(2.0, "float64"), ints((1, 2, 3)), py(None), py("text")])


def assignment_calls() -> list[Call]:
    """``x[index] = value`` for every index kind and value kind, into float32 and int64 tensors; ``copy_``,
    ``index_put_``, ``masked_fill_`` and ``masked_scatter_`` with broadcast operands."""
    calls = []
    for dtype, index in product(("float32", "int64"), _INDICES):
        for value in _values(dtype):
            calls.append(_python("assignment", "setitem", tensor((2, 3), dtype), index, value))
    for source in (tensor((3,), "float32"), tensor((1, 3), "float64"), tensor((2, 1), "int64"), tensor((2, 3), "bool"),
                   tensor((4,), "float32"), tensor((1, 2, 3), "float32"), py(2.0), _array((2, 3), "float64")):
        calls.append(_python("assignment", "copy_", tensor((2, 3), "float32"), source))
    mask_shapes = ((2, 3), (3,), (1, 3), (2, 1))
    fills = (py(2.0), tensor((), "float32"), tensor((), "float64"), tensor((3,), "float32"), py(2))
    for mask, value in product(mask_shapes, fills):
        calls.append(_python("assignment", "masked_fill_", tensor((2, 3), "float32"), tensor(mask, "bool"), value))
    sources = (tensor((6,), "float32"), tensor((2, 3), "float32"), tensor((2,), "float32"))
    for mask, source in product(mask_shapes, sources):
        calls.append(_python("assignment", "masked_scatter_", tensor((2, 3), "float32"), tensor(mask, "bool"), source))
    for values, accumulate in product((tensor((), "float32"), tensor((3,), "float32"), tensor((1, 3), "float32"),
                                       tensor((2, 3), "float32"), tensor((4,), "float32"), tensor((2,), "float64")),
                                      (False, True)):
        index = Value("list", (tensor((2,), "int64", "index"),))
        calls.append(_python("assignment", "index_put_", tensor((2, 3), "float32"), index, values, py(accumulate)))
    return calls


def calls() -> list[Call]:
    return operator_calls() + conversion_calls() + assignment_calls()
