"""What a call should produce, worked out from the op's declaration alone, never from a kernel.

Output dtypes come from the promotion rule, output shapes from the meta function,
values from the NumPy reference. The reference gets the very values the op got:
tensors become NumPy arrays in the op's computation dtype (half precision widened
to float64, so the reference is exact and only the op's own rounding counts).
"""
from __future__ import annotations

import warnings

import numpy as np

from ember.dispatch.schema import binding
from ember.dispatch.schema.promotion import result_type_of

#: Parameter types whose tensors take part in type promotion.
PROMOTED = ("Tensor", "Tensor?", "Tensor[]")
_NUMBER = (bool, int, float, complex)


def numpy_dtype(dt) -> np.dtype:
    """The NumPy dtype that holds values of the ember dtype ``dt`` (bfloat16 from ml_dtypes)."""
    if dt.name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dt.name)


def reference_dtype(dt) -> np.dtype:
    """Where a reference computes for ``dt``: the dtype itself, float64 for half precision."""
    return np.dtype(np.float64) if dt.is_floating_point and dt.itemsize == 2 else numpy_dtype(dt)


def host(t) -> np.ndarray:
    """A private NumPy copy of a tensor's values, in its storage's own dtype, from any device."""
    return np.array(t.numpy(force=True), copy=True)


def wide(t) -> np.ndarray:
    """A tensor's values on the host in float64, or complex128 for complex tensors: for arithmetic on them."""
    return host(t).astype(np.complex128 if t.dtype.is_complex else np.float64)


def is_tensor(value) -> bool:
    return hasattr(value, "_data") and hasattr(value, "dtype")


def bound_values(op, args: tuple, kwargs: dict) -> list:
    """The values the op's meta and promotion rule see: bound, converted and normalized like a real call."""
    values = binding.bind(op, args, kwargs)
    tensors = [t for i in op.tensor_positions
               for t in (values[i] if isinstance(values[i], (list, tuple)) else (values[i],)) if is_tensor(t)]
    ndim = tensors[0].ndim if tensors else 0
    for i in op.attr_positions:
        values[i] = binding.convert(op, op.params[i], values[i], ndim)
    op.normalize_values(values)
    return values


def promoted_type(op, values):
    """PyTorch's rule: tensors with dims outrank zero-dim tensors, which outrank Python numbers."""
    dims, zeros, scalars, first = [], [], [], None
    for i in op.tensor_positions:
        items = values[i] if isinstance(values[i], (list, tuple)) else (values[i],)
        for v in items:
            if is_tensor(v):
                first = first or v.dtype
                if op.params[i].type in PROMOTED:
                    (dims if v.ndim else zeros).append(v.dtype)
            elif isinstance(v, _NUMBER) and op.params[i].type in PROMOTED:
                scalars.append(v)
    if dims or zeros or scalars:
        return result_type_of(dims, zeros, scalars)
    return first


def expected_dtypes(op, values):
    """``(compute, out)`` by the op's promotion rule; ``out`` is a tuple for multi-output ops."""
    return op.promote(promoted_type(op, values), values)


def expected_shapes(op, values):
    """The meta function's answer: one shape, or one per output for multi-output ops."""
    return op.meta(*values)


def multi_output(op) -> bool:
    return len(op.outputs) > 1 or op.outputs == ("*",)


def outputs_of(op, result) -> list:
    """A call's result as a list of tensors."""
    return list(result) if multi_output(op) else [result]


def reference_inputs(op, args: tuple, kwargs: dict, compute):
    """``args`` and ``kwargs`` with tensors as NumPy arrays, as the op's kernel would see them."""
    def convert(param, value):
        if isinstance(value, (list, tuple)) and any(is_tensor(v) for v in value):
            return [convert(param, v) for v in value]
        if not is_tensor(value):
            return value
        array = host(value)
        if compute is not None and param.type in PROMOTED:
            return array.astype(reference_dtype(compute))
        return array.astype(reference_dtype(value.dtype))
    ref_args = tuple(convert(op.params[i], v) for i, v in enumerate(args))
    ref_kwargs = {k: convert(op.params[op.param_index[k]], v) for k, v in kwargs.items()}
    return ref_args, ref_kwargs


def run_reference(op, args: tuple, kwargs: dict, compute) -> list:
    """The reference's outputs as a list of arrays (NumPy floating-point warnings silenced)."""
    ref_args, ref_kwargs = reference_inputs(op, args, kwargs, compute)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice and the like: NaN is the answer
        out = op.reference(*ref_args, **ref_kwargs)
    return [np.asarray(o) for o in out] if multi_output(op) else [np.asarray(out)]
