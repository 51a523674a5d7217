"""The values tried for an argument while looking for a call PyTorch accepts, chosen by type and name.

Every op gets the same first guesses (a (2, 3) float tensor, ``dim=1``, ``Scalar 2``); the name of an
argument narrows them where the name says what it holds (``index`` is an int64 tensor of valid indices,
``size`` a shape of the same number of elements). PyTorch then decides which guess is a valid call.
"""
from __future__ import annotations

from dataclasses import dataclass

from .native import Arg
from .values import Value, ints, py, tensor

#: Tensor shapes and dtypes tried, in order: the first profile PyTorch accepts becomes the base call.
PROFILES = (((2, 3), "float32"), ((3, 3), "float32"), ((3,), "float32"), ((2, 3, 4), "float32"),
            ((), "float32"), ((2, 3), "int64"), ((2, 3), "bool"), ((1, 2, 4, 4), "float32"))

UNSUPPORTED_TYPES = ("Dimname", "Storage", "Stream", "Layout", "MemoryFormat", "Generator")

_DIM_NAMES = {"dim", "dim0", "dim1", "dim2", "start_dim", "end_dim", "source", "destination", "axis", "axis0",
              "axis1", "src_dim", "dst_dim"}
_INDEX_NAMES = {"index", "indices", "target", "sorted_sequence_idx"}
_BOOL_NAMES = {"mask", "condition"}
_STRINGS = {"reduce": ["sum", "prod", "mean", "amax"], "rounding_mode": ["floor", "trunc"],
            "interpolation": ["linear"], "side": ["left"], "mode": ["reduced"], "UPLO": ["L"], "uplo": ["L"],
            "driver": [None], "approximate": ["none"], "padding_mode": ["zeros"], "indexing": ["ij"]}


@dataclass(frozen=True)
class Profile:
    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)


def supported(arg: Arg) -> bool:
    return not any(t in arg.type for t in UNSUPPORTED_TYPES) or arg.default is not None


def tensor_for(arg: Arg, profile: Profile) -> Value:
    if arg.name in _INDEX_NAMES:
        return tensor(profile.shape, "int64", "index")
    if arg.name in _BOOL_NAMES:
        return tensor(profile.shape, "bool")
    return tensor(profile.shape, profile.dtype)


def candidates(arg: Arg, profile: Profile) -> list[Value]:
    """Guesses for a required argument, best first."""
    base = arg.base_type
    if base == "Tensor":
        return [tensor_for(arg, profile)]
    if base == "Tensor[]":
        return [Value("list", (tensor_for(arg, profile), tensor_for(arg, profile)))]
    if base == "Tensor?[]":
        return [Value("list", (tensor((2,), "int64", "index"),))]
    if base == "int":
        return [py(1), py(0), py(-1)] if arg.name in _DIM_NAMES else [py(1), py(2), py(0)]
    if base == "int[]":
        return _int_lists(arg.name, profile)
    if base in ("float", "Scalar"):
        return [py(2), py(0.5)] if base == "Scalar" else [py(0.5), py(2.0)]
    if base == "bool":
        return [py(False), py(True)]
    if base == "str":
        return [py(s) for s in _STRINGS.get(arg.name, ["sum"])]
    if base == "ScalarType":
        return [Value("dtype", "float64")]
    if base == "Device":
        return [py("cpu")]
    if base in ("float[]", "Scalar[]"):
        return [Value("list", (py(0.5), py(0.5)))]
    if base == "bool[]":
        return [Value("list", (py(True), py(False)))]
    return []


def _int_lists(name: str, profile: Profile) -> list[Value]:
    shape = profile.shape
    if name in ("size", "shape", "sizes"):
        return [ints(shape), ints(shape[::-1]), ints((-1,)), ints((2, 3))]
    if name in ("dim", "dims", "perm", "axis"):
        full = tuple(range(profile.ndim))
        return [ints((0,)), ints(full[::-1]), ints(full), ints((0, 1))]
    if name == "stride":  # the row-major strides of the shape: a layout without overlaps
        strides = [1]
        for size in reversed(shape[1:]):
            strides.insert(0, strides[0] * size)
        return [ints(tuple(strides[:len(shape)]) or (1,))]
    if name in ("repeats",):
        return [ints((2,) * max(profile.ndim, 1))]
    if name in ("split_sizes", "split_size", "indices", "tensor_indices_or_sections"):
        return [ints((1, 1)), ints((1, 2))]
    return [ints((1,)), ints((1, 1)), ints((2,) * max(profile.ndim, 1))]
