"""What the fuzzer passes: hypothesis strategies for every parameter type of the schema, valid and hostile alike
(out-of-range dims, negative and astronomical sizes, mismatched ranks, None, values of the wrong type), with
tensors made on the device under test."""
from __future__ import annotations

from hypothesis import strategies as st

import ember

HUGE = [2 ** 62, 10 ** 30, -(2 ** 63), 2 ** 70]
small_int = st.integers(-3, 6)
any_int = st.one_of(small_int, small_int, st.sampled_from(HUGE + [-1, 100]))
shape = st.lists(st.integers(0, 4), max_size=4).map(tuple)
int_list = st.lists(any_int, max_size=5)
HOSTILE = [None, "bogus", [1, "x"], object(), 1.5, float("nan"), 2 ** 70, -1, (), [[1], [2, 3]], ember.float32,
           "cpu", "nosuch:3", True]


class Draws:
    """The strategies for one device: ``argument(type_name)`` for a schema parameter, ``tensors()``, and
    ``generic`` (anything at all, for methods, whose parameters the schema does not describe)."""

    def __init__(self, device, dtypes) -> None:
        self.device = device
        self.dtypes = st.sampled_from(sorted(dtypes, key=lambda d: d.name))
        self.hostile = st.sampled_from(HOSTILE)
        tensor = self.tensors()
        index = self.tensors(index=True)
        self.by_type = {
            "Tensor": st.one_of(tensor, tensor, st.floats(allow_nan=True), small_int),
            "Index": index,
            "Tensor[]": st.lists(tensor, max_size=3),
            "Index?[]": st.lists(st.one_of(st.none(), index), max_size=3),
            "Scalar": st.one_of(st.floats(allow_nan=True), any_int, st.booleans()),
            "int": any_int, "dim": st.one_of(small_int, st.sampled_from([-7, 9, 2 ** 62])),
            "int[]": int_list, "dim[]": st.lists(st.integers(-6, 6), max_size=4),
            "bool": st.booleans(), "float": st.one_of(st.floats(allow_nan=True), small_int),
            "str": st.sampled_from(["mean", "sum", "none", "bogus", "", "reflect", "linear", "tanh"]),
            "dtype": self.dtypes,
            "device": st.sampled_from(["cpu", "cpu:0", "cpu:3", "nosuch", 0, "opencl:99", str(device)]),
            "Generator": st.sampled_from([None, "gen", 3]),
            "Any": st.one_of(small_int, st.floats(), tensor, st.none(), int_list),
        }
        self.generic = st.one_of(tensor, small_int, st.sampled_from(HUGE), st.floats(), int_list, self.dtypes,
                                 self.hostile, st.none(), st.lists(st.integers(-4, 4), max_size=3).map(tuple))

    def tensors(self, index: bool = False):
        device = self.device

        @st.composite
        def draw_tensor(draw):
            size = draw(shape)
            dt = ember.int64 if index else draw(self.dtypes)
            t = (ember.rand(*size, device=device) * 12 - 4).to(dt)
            if draw(st.booleans()) and t.ndim >= 2:
                t = t.transpose(0, 1)  # non-contiguous
            return t

        return draw_tensor()

    def argument(self, type_name: str):
        """Mostly a value of the declared type, sometimes anything hostile."""
        base = self.by_type[type_name.rstrip("?")]  # "dim[]?" -> "dim[]", "int?" -> "int"
        if type_name.endswith("?"):
            base = st.one_of(st.none(), base)
        return st.one_of(base, base, base, self.hostile)


def describe(value) -> str:
    """A fuzzed value as the report shows it: tensors by shape, dtype, device and layout, not by their values."""
    if isinstance(value, ember.Tensor):
        return (f"tensor(shape={tuple(value.shape)}, dtype={value.dtype}, device={value.device}, "
                f"non-contiguous={not value.is_contiguous()})")
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)
