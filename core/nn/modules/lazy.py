"""Lazy modules: layers whose input size is read from the first input instead of the constructor.

Their parameters start as ``UninitializedParameter`` (buffers as ``UninitializedBuffer``): registered, but
without a shape. The first call materializes them from the input's shape, initialises them as the eager
layer does, and turns the module into that layer (``LazyLinear`` becomes a ``Linear``), as in PyTorch.
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...dispatch.ops import F
from ...tensor import Tensor, rehouse
from ..parameter import _register
from . import conv, instancenorm, linear, normalization

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class _Uninitialized(Tensor):
    """A tensor without a shape yet (it holds no elements); ``materialize`` gives it one, in place, and makes
    it a plain tensor: whatever holds it (a module, an optimizer) keeps holding the same object."""

    __slots__ = ()
    saved_without_values = True  # ember.save pickles it through __reduce_ex__, as its class and arguments

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        placeholder = rehouse(F.empty((0,), dtype=dtype, device=device), cls)
        placeholder.requires_grad = requires_grad
        return placeholder

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Gives the tensor ``shape`` (its values uninitialised), on ``device`` and in ``dtype`` if given."""
        data = F.empty(tuple(shape), dtype=dtype if dtype is not None else self._dtype,
                       device=device if device is not None else self._device)
        self._data, self._dtype, self._device = data._data, data._dtype, data._device
        self.__class__ = Tensor

    def to(self, *args, **kwargs):
        """Moves or casts in place and stays uninitialized, so that a lazy module can be moved (``.to(device)``,
        ``.double()``) before its first call."""
        converted = Tensor.to(self, *args, **kwargs)
        self._data, self._dtype, self._device = converted._data, converted._dtype, converted._device
        return self

    @property
    def shape(self):
        raise RuntimeError(f"Can't access the shape of an uninitialized parameter or buffer ({self!r}). This "
                           f"error usually happens in `load_state_dict` when trying to load an uninitialized "
                           f"parameter into an initialized one. Call `forward` to initialize the parameters "
                           f"before accessing their attributes.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return type(self), (self.requires_grad, self._device, self._dtype)

    def __deepcopy__(self, memo):
        copy = type(self)(self.requires_grad, self._device, self._dtype)
        memo[id(self)] = copy
        return copy


class UninitializedParameter(_Uninitialized):
    """A parameter whose shape the first forward decides (see the lazy modules)."""

    __slots__ = ()

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        placeholder = super().__new__(cls, requires_grad, device, dtype)
        _register(placeholder)
        return placeholder


class UninitializedBuffer(_Uninitialized):
    """A buffer whose shape the first forward decides (see the lazy batch and instance norms). ``persistent``
    is accepted for PyTorch's signature; persistence is decided where the module registers the buffer."""

    __slots__ = ()

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        return super().__new__(cls, requires_grad, device, dtype)


def is_lazy(t) -> bool:
    return isinstance(t, _Uninitialized)


class LazyModuleMixin:
    """Materializes the module's uninitialized parameters and buffers at its first call
    (``initialize_parameters(*inputs)``), then becomes ``cls_to_become``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define initialize_parameters(input)")

    @staticmethod
    def _infer_parameters(module, args):
        module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module.__dict__["_initialize_hook"]
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Uninitialized parameters and buffers take the checkpoint's shapes first, so that a trained lazy
        module's checkpoint loads into a fresh one."""
        for store in (self._parameters, self._buffers):
            for name, t in store.items():
                if is_lazy(t) and hasattr(state_dict, "keys") and name in state_dict:
                    t.materialize(tuple(state_dict[name].shape))
        return super().load_state_dict(state_dict, strict, assign)


# -- LazyLinear --------------------------------------------------------------------------------------------

class LazyLinear(LazyModuleMixin, linear.Linear):
    """A Linear whose in_features is the last dim of its first input."""

    cls_to_become = linear.Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False, device, dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


# -- LazyConv*d and LazyConvTranspose*d ---------------------------------------------------------------------

class _LazyConvMixin(LazyModuleMixin):
    """in_channels from dim 1 of a batched input (dim 0 of an unbatched one)."""

    def _make_lazy(self, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = self._lazy_out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args) -> None:
        if not self.has_uninitialized_params():
            return
        self.in_channels = input.shape[0] if input.ndim == self._spatial + 1 else input.shape[1]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        else:
            shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        with no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name: str, base: type, doc: str) -> type:
    """The lazy form of the convolution class ``base``: PyTorch's constructor without in_channels."""
    if base._transposed:
        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                     bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
            self._lazy_out_channels = out_channels
            _LazyConvMixin.__init__(self, 0, out_channels, kernel_size, stride, padding, output_padding, groups,
                                    False, dilation, padding_mode, device, dtype)
            self._make_lazy(bias, device, dtype)
    else:
        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                     bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
            self._lazy_out_channels = out_channels
            _LazyConvMixin.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, False,
                                    padding_mode, device, dtype)
            self._make_lazy(bias, device, dtype)
    return type(name, (_LazyConvMixin, base), {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                                               "__module__": __name__})


def _conv_class(name: str):
    return getattr(conv, name, None)


_LAZY_CONVS = {}
for _lazy_name, _base_name in (("LazyConv1d", "Conv1d"), ("LazyConv2d", "Conv2d"), ("LazyConv3d", "Conv3d"),
                               ("LazyConvTranspose1d", "ConvTranspose1d"), ("LazyConvTranspose2d", "ConvTranspose2d"),
                               ("LazyConvTranspose3d", "ConvTranspose3d")):
    _base = _conv_class(_base_name)
    if _base is not None:  # each exists once its eager convolution does
        _LAZY_CONVS[_lazy_name] = _lazy_conv(_lazy_name, _base, f"A {_base_name} whose in_channels is read from the "
                                                                f"channel dim of its first input.")
globals().update(_LAZY_CONVS)
__all__ = [name for name in __all__ if not name.startswith("LazyConv") or name in _LAZY_CONVS]


# -- LazyBatchNorm*d and LazyInstanceNorm*d -------------------------------------------------------------------

class _LazyNormMixin(LazyModuleMixin):
    """num_features from the channel dim of the first input; weight, bias and running statistics materialize
    with it."""

    def _make_lazy(self, device, dtype) -> None:
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if not self.has_uninitialized_params():
            return
        unbatched = getattr(self, "_unbatched", 0)
        self.num_features = input.shape[0] if unbatched and input.ndim == unbatched else input.shape[1]
        with no_grad():
            for t in (*self._parameters.values(), *self._buffers.values()):
                if is_lazy(t):
                    t.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name: str, base: type, affine: bool, track_running_stats: bool) -> type:
    """The lazy form of the normalization class ``base``: its constructor without num_features."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = affine,
                 track_running_stats: bool = track_running_stats, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        _LazyNormMixin.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self._make_lazy(device, dtype)

    doc = f"A {base.__name__} whose num_features is read from the channel dim of its first input."
    return type(name, (_LazyNormMixin, base), {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                                              "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", normalization.BatchNorm1d, True, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", normalization.BatchNorm2d, True, True)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", normalization.BatchNorm3d, True, True)
# PyTorch's lazy instance norms default to affine=True and track_running_stats=True, unlike the eager ones
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", instancenorm.InstanceNorm1d, True, True)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", instancenorm.InstanceNorm2d, True, True)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", instancenorm.InstanceNorm3d, True, True)
