"""What cuDNN is asked for, per call of one of Ember's convolution ops: the dims of its image, filter and
response, its padding, stride and dilation, and the key its graph is cached under.

Plain Python over shapes, so CI checks it on the CPU. cuDNN's convolutions take an image ``(N, C, *spatial)``
and a filter ``(K, C / groups, *kernel)`` with 2 or 3 spatial dims, and give a response ``(N, K, *out)``; groups
follow from ``C / filter[1]``. Ember's ops map onto its three operations:

- ``conv{1,2,3}d`` is the forward operation (fprop) from the image and filter to the response;
- ``conv_transpose{1,2,3}d``, the adjoint of a convolution, is the data gradient (dgrad): its input is the
  response, its weight ``(in, out / groups, *kernel)`` the filter, its output the image;
- ``convolution_backward_weight`` is the weight gradient (wgrad) from the image and the response.

One spatial dim becomes two (a height of one); an unbatched input gets a batch of one.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

#: dtype name -> (the name of cuDNN's io data type, of its compute type); float16 accumulates in float32
DATA_TYPES = {"float16": ("HALF", "FLOAT"), "bfloat16": ("BFLOAT16", "FLOAT"), "float32": ("FLOAT", "FLOAT"),
              "float64": ("DOUBLE", "DOUBLE")}


@dataclass(frozen=True)
class ConvSpec:
    """One cuDNN convolution, its tensors NCHW contiguous. ``shape`` is Ember's result shape."""

    kind: str  # "fprop", "dgrad" or "wgrad"
    x: tuple  # image (N, C, *spatial)
    w: tuple  # filter (K, C / groups, *kernel)
    y: tuple  # response (N, K, *out)
    pre: tuple
    post: tuple
    stride: tuple
    dilation: tuple
    dtype: str
    shape: tuple  # the op's result, which the output operand (y, x or w by kind) is reshaped to

    def key(self, device: int, settings: tuple) -> tuple:
        """What a built graph depends on: kind, dims, strides, attributes, dtype, device and the flags."""
        return (self._identity, device, settings)

    @functools.cached_property
    def _identity(self) -> tuple:
        dims = (self.x, self.w, self.y)
        return (self.kind, dims, tuple(contiguous_strides(d) for d in dims), self.pre, self.post, self.stride,
                self.dilation, self.dtype)

    @property
    def output(self) -> str:
        """The operand the operation writes: y (fprop), x (dgrad) or w (wgrad)."""
        return {"fprop": "y", "dgrad": "x", "wgrad": "w"}[self.kind]


def contiguous_strides(dims: tuple) -> tuple:
    """Row-major (NCHW) strides in elements."""
    strides, step = [], 1
    for size in reversed(dims):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def windows(size: int, before: int, after: int, kernel: int, stride: int, dilation: int) -> int:
    """How many outputs a convolution has along one dim (cuDNN's and Ember's formula)."""
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def _lift(spatial: int, values: tuple, fill: int) -> tuple:
    """One spatial dim -> two: a leading height of one, whose padding is 0 and stride and dilation 1."""
    return ((fill,) if spatial == 1 else ()) + tuple(values)


def _image(shape: tuple, spatial: int) -> tuple:
    """(N, C, *spatial) with a batch of one for unbatched input and a height of one for 1-D."""
    shape = tuple(shape) if len(shape) == spatial + 2 else (1,) + tuple(shape)
    return shape[:2] + (1,) + shape[2:] if spatial == 1 else shape


def _refusal(dtype: str, *dims: tuple) -> str | None:
    """Why cuDNN is not even asked, or None."""
    if dtype not in DATA_TYPES:
        return f"cuDNN has no {dtype} convolution"
    if any(0 in d for d in dims):
        return "an empty operand"
    return None


@functools.lru_cache(maxsize=4096)  # pure in hashable arguments: a call per op call is a lookup
def forward_spec(x: tuple, w: tuple, padding: tuple, stride: tuple, dilation: tuple, groups: int,
                 dtype: str) -> ConvSpec | str:
    """conv{n}d(x, w, padding=((before, after), ...), ...) as cuDNN's fprop, or why not."""
    n = len(w) - 2
    out = tuple(windows(s, b, a, k, st, d) for s, (b, a), k, st, d in zip(x[-n:], padding, w[2:], stride, dilation))
    shape = ((x[0],) if len(x) == n + 2 else ()) + (w[0],) + out
    pre, post = _lift(n, (b for b, _ in padding), 0), _lift(n, (a for _, a in padding), 0)
    stride, dilation = _lift(n, stride, 1), _lift(n, dilation, 1)
    image = _image(x, n)
    filt = _image(w, n) if n == 1 else tuple(w)
    response = image[:1] + (w[0],) + ((1,) if n == 1 else ()) + out
    why = _refusal(dtype, image, filt, response)
    if why is not None:
        return why
    assert image[1] == filt[1] * groups, "the meta function checked the channels"
    return ConvSpec("fprop", image, filt, response, pre, post, stride, dilation, dtype, shape)


@functools.lru_cache(maxsize=4096)  # pure in hashable arguments: a call per op call is a lookup
def transpose_spec(x: tuple, w: tuple, stride: tuple, padding: tuple, output_padding: tuple, groups: int,
                   dilation: tuple, dtype: str) -> ConvSpec | str:
    """conv_transpose{n}d as cuDNN's dgrad: x is the response, w (in, out / groups, *kernel) the filter and the
    result the image. cuDNN derives the response's size from the image's, so the image may only be longer than
    the response needs by less than a stride (``output_padding < stride``); otherwise, or why not."""
    n = len(w) - 2
    size = tuple((i - 1) * s - 2 * p + d * (k - 1) + e + 1
                 for i, k, s, p, e, d in zip(x[-n:], w[2:], stride, padding, output_padding, dilation))
    channels = w[1] * groups
    shape = ((x[0],) if len(x) == n + 2 else ()) + (channels,) + size
    response = _image(x, n)
    filt = _image(w, n) if n == 1 else tuple(w)
    image = response[:1] + (channels,) + ((1,) if n == 1 else ()) + size
    if any(windows(z, p, p, k, s, d) != i for z, p, k, s, d, i in zip(size, padding, w[2:], stride, dilation,
                                                                      x[-n:])):
        return f"output_padding={tuple(output_padding)} is not below the stride {tuple(stride)}"
    why = _refusal(dtype, image, filt, response)
    if why is not None:
        return why
    pre = _lift(n, padding, 0)
    return ConvSpec("dgrad", image, filt, response, pre, pre, _lift(n, stride, 1), _lift(n, dilation, 1), dtype, shape)


@functools.lru_cache(maxsize=4096)  # pure in hashable arguments: a call per op call is a lookup
def weight_grad_spec(grad: tuple, x: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                     groups: int, dtype: str) -> tuple[ConvSpec, tuple] | str:
    """convolution_backward_weight as cuDNN's wgrad: ``(spec, crop)``, or why not.

    Ember's gradient may have fewer positions than the padded input has windows (a transposed convolution's
    weight gradient: input positions no window reaches). cuDNN wants exactly as many, so the padding after is
    cut by the surplus windows times the stride, and where that is more than the padding, the input itself:
    ``crop`` is the input's spatial size to keep (its leading part), which gives the same windows.
    """
    n = len(kernel)
    posts, crop = [], []
    for size, (before, after), k, s, d, o in zip(x[-n:], padding, kernel, stride, dilation, grad[-n:]):
        after -= (windows(size, before, after, k, s, d) - o) * s
        posts.append(max(after, 0))
        crop.append(size + min(after, 0))
    if min(crop) < 1:
        return "the gradient's windows end inside the padding before the input"
    channels = x[-n - 1]
    shape = (grad[-n - 1], channels // groups) + tuple(kernel)
    image = _image(tuple(x[:-n]) + tuple(crop), n)
    response = _image(grad, n)
    filt = _image(shape, n) if n == 1 else shape
    why = _refusal(dtype, image, filt, response)
    if why is not None:
        return why
    pre, post = _lift(n, (b for b, _ in padding), 0), _lift(n, posts, 0)
    spec = ConvSpec("wgrad", image, filt, response, pre, post, _lift(n, stride, 1), _lift(n, dilation, 1), dtype,
                    shape)
    assert all(windows(*a) == o for a, o in zip(zip(image[2:], pre, post, filt[2:], stride, dilation), response[2:]))
    return spec, tuple(crop)
