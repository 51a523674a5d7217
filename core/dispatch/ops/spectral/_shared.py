"""Private helpers of the spectral ops: the dtypes transforms compute in, torch.fft's ``norm`` strings as the
primitives' ``normalization``, a call's dims and signal sizes in canonical form (with PyTorch's checks and
messages), and an input cut or zero-padded to those sizes.
"""
from __future__ import annotations

from ...execution.dispatcher import wrap_dim
from ...schema.dtypes import SCALAR_TYPE_NAMES, get_default_dtype
from ...schema.errors import ArgumentError, DtypeError, describe
from ...schema.meta import shape
from .._shared import _with_size
from ..namespace import F

#: torch.fft's norm modes; None is "backward"
NORM_MODES = (None, "backward", "ortho", "forward")


# -- dtypes ---------------------------------------------------------------------------------------------

def complex_transform_dtype(rt):
    """The complex dtype a transform of ``rt`` computes in: integers and bool in the default float's, as torch.fft
    promotes them; float16 and bfloat16 in complex64 (Ember has no complex32)."""
    return (rt if rt.is_inexact else get_default_dtype()).to_complex()


def torch_name(op_name: str) -> str:
    """torch.fft's name of an op (``fft_rfft`` -> ``rfft``), which PyTorch's messages use."""
    return op_name.removeprefix("fft_")


def complex_out(rt, op, args):
    """Complex in, complex out: fft, ifft, fftn, _fft_c2c."""
    dt = complex_transform_dtype(rt)
    return dt, dt


def real_in_complex_out(rt, op, args):
    """A real signal's transform: rfft, ihfft, _fft_r2c; a complex input is PyTorch's error."""
    if rt.is_complex:
        raise DtypeError(f"{op.name}: {torch_name(op.name)} expects a real input tensor, but got "
                         f"{SCALAR_TYPE_NAMES[rt]} ({describe(args['input'])})")
    dt = complex_transform_dtype(rt)
    return dt.to_real(), dt


def real_out(rt, op, args):
    """A real signal from its non-redundant bins: irfft, hfft, _fft_c2r."""
    dt = complex_transform_dtype(rt)
    return dt, dt.to_real()


# -- norm, dims and sizes ----------------------------------------------------------------------------

def check_norm(op_name: str, norm: str | None) -> None:
    if norm not in NORM_MODES:
        raise ArgumentError(f'{op_name}: Invalid normalization mode: "{norm}" (expected one of "backward", '
                            f'"ortho", "forward" or None)')


def normalization(norm: str | None, forward: bool) -> int:
    """A (checked) ``norm`` as the primitives' normalization for a transform in this direction: "backward" (the
    default) scales inverses by 1/n, "forward" forward transforms, "ortho" both by 1/sqrt(n)."""
    if norm == "ortho":
        return 1
    return 2 if (norm == "forward") == forward else 0


def signal_dim(op_name: str, x, dim: int) -> int:
    """One dim to transform, wrapped: a 0-d tensor has none (PyTorch's ``wrap_scalar=False``)."""
    return wrap_dim(op_name, dim, len(shape(x)), x, scalar_ok=False)


def check_sizes(op_name: str, sizes) -> None:
    for size in sizes:
        if size < 1:
            raise ArgumentError(f"{op_name}: Invalid number of data points ({size}) specified")


def sizes_and_dims(op_name: str, x, s, dim) -> tuple[tuple, tuple]:
    """PyTorch's canonical signal sizes and dims of an n-d transform: dims default to the last len(s) (or all),
    an s of -1 keeps the input's size there; dims are unique and every size positive."""
    in_shape = shape(x)
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(s, int):
        s = (s,)
    if dim is not None:
        dims = tuple(wrap_dim(op_name, d, len(in_shape), x, scalar_ok=False) for d in dim)
        if len(set(dims)) != len(dims):
            raise ArgumentError(f"{op_name}: FFT dims must be unique, got dim={list(dim)}")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise ArgumentError(f"{op_name}: When given, dim and shape arguments must have the same length, got "
                                f"s={list(s)} and dim={list(dim)}")
        if len(s) > len(in_shape):
            raise ArgumentError(f"{op_name}: Got shape with {len(s)} values but input tensor only has "
                                f"{len(in_shape)} dimensions ({describe(x)})")
        if dim is None:
            dims = tuple(range(len(in_shape) - len(s), len(in_shape)))
        sizes = tuple(in_shape[d] if n == -1 else n for n, d in zip(s, dims))
    else:
        if dim is None:
            dims = tuple(range(len(in_shape)))
        sizes = tuple(in_shape[d] for d in dims)
    check_sizes(op_name, sizes)
    return sizes, dims


def require_axes(op_name: str, dims) -> None:
    """The transforms whose last dim is special (r2c, c2r) need one."""
    if not dims:
        raise ArgumentError(f"{op_name}: {torch_name(op_name)} must transform at least one axis")


def resized(x, dims, sizes):
    """``x`` with each of ``dims`` cut to, or zero-extended at its end up to, its entry of ``sizes``.

    Zeros are joined on with ``cat`` rather than ``pad``, which does not take complex tensors."""
    for d, size in zip(dims, sizes):
        have = x.shape[d]
        if have > size:
            x = F.narrow(x, d, 0, size)
        elif have < size:
            zeros = F.zeros(_with_size(tuple(x.shape), d, size - have), dtype=x.dtype, device=x.device)
            x = F.cat([x, zeros], d)
    return x
