"""``nn.utils.parametrize``: a module's tensor computed by modules from other, stored tensors.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` and makes ``module.weight`` a property that returns
``P(original)`` on every access (or once per ``cached()`` block); assigning ``module.weight = X`` stores
``P.right_inverse(X)``. The property lives on a subclass made for the module (``ParametrizedLinear``), so
other instances of the class are untouched. The layout and state_dict keys are PyTorch's.
"""
from __future__ import annotations

import collections.abc
import contextlib
import copy
from typing import Iterator, Sequence

from ...autograd import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter, is_parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations"]

_cache_depth = [0]
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor at most once inside the block (e.g. a weight used at every step of an
    RNN); the values are dropped when the outermost block ends."""
    _cache_depth[0] += 1
    try:
        yield
    finally:
        _cache_depth[0] -= 1
        if not _cache_depth[0]:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if is_parameter(value):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest: Tensor, src: Tensor) -> None:
    """Give ``dest`` the values (and shape) of ``src`` while keeping the object, so a Parameter stays itself."""
    dest.data = src.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in registration order, plus the tensor(s) they act on:
    ``original``, or ``original0``, ``original1``, ... where the first ``right_inverse`` returns a sequence."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != original.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if new is not original:
                _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                                     f"tuple...). Got element {i} of the sequence with type {type(part).__name__}.")
                part = part.detach().clone()
                if is_parameter(original):
                    part = Parameter(part, original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not unsafe:
            value = self()
            if not isinstance(value, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
            if value.dtype != dtype:
                raise ValueError(f"Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {dtype}\n"
                                 f"parametrized dtype: {value.dtype}")
            if tuple(value.shape) != shape:
                raise ValueError(f"Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {shape}\n"
                                 f"parametrized shape: {tuple(value.shape)}")

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` through the ``right_inverse`` of every parametrization, last registered first."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_in_place(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence) or len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got {type(value).__name__}.")
            for i, tensor in enumerate(value):
                original = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor) or tensor.dtype != original.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` must be a tensor of dtype "
                                     f"{original.dtype}, got {getattr(tensor, 'dtype', type(tensor).__name__)}")
                _set_in_place(original, tensor)

    def forward(self) -> Tensor:
        modules = list(self)
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(): save "
                       "module.state_dict() and load it into a module parametrized the same way")


def _deepcopy(self, memo):
    """A copy of the instance (sharing the per-instance class, like an unparametrized module shares its class)."""
    replica = self.__class__.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own (a subclass of its class), on which properties can be set."""
    cls = module.__class__
    members = {"_original_class": cls, "__getstate__": _refuse_pickling}
    if "__deepcopy__" not in dir(cls):
        members["__deepcopy__"] = _deepcopy
    object.__setattr__(module, "__class__", type(f"Parametrized{cls.__name__}", (cls,), members))


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth[0]:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization, or one on ``tensor_name``."""
    parametrizations = module._modules.get("parametrizations") if isinstance(module, Module) else None
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization``; a second call on the same name chains
    another parametrization after the first. ``unsafe`` skips the shape and dtype consistency checks."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            result = parametrization(current)
            if not isinstance(result, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(result).__name__}.")
            if result.dtype != current.dtype or tuple(result.shape) != tuple(current.shape):
                raise ValueError(f"Registering a parametrization may not change the dtype or shape of the tensor, "
                                 f"unless the `unsafe` flag is enabled: module.{tensor_name} is {current.dtype} "
                                 f"{tuple(current.shape)}, the parametrization returns {result.dtype} "
                                 f"{tuple(result.shape)}")
            if hasattr(parametrization, "right_inverse"):
                back = parametrization.right_inverse(result)
                if not isinstance(back, Tensor) or back.dtype != current.dtype or \
                        tuple(back.shape) != tuple(current.shape):
                    raise ValueError(f"parametrization.right_inverse must return a tensor of module.{tensor_name}'s "
                                     f"dtype {current.dtype} and shape {tuple(current.shape)}, unless the `unsafe` "
                                     f"flag is enabled")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{type(module).__name__}' does not have a parameter, a buffer, or a parametrized "
                         f"element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = parametrizations
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain parameter (or buffer)
    again, holding its current parametrized value (``leave_parametrized``) or the stored original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {type(module).__name__} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            if value.dtype != original.dtype:
                raise ValueError(f"remove_parametrizations: the parametrized value has dtype {value.dtype}, the "
                                 f"original {original.dtype}; leave_parametrized=True cannot keep both")
            _set_in_place(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name).detach().clone()
        original = Parameter(value, parametrizations.original0.requires_grad) \
            if is_parameter(parametrizations.original0) else value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        object.__setattr__(module, "__class__", module.__class__._original_class)
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations replaced it by their subclass."""
    return module.__class__._original_class if is_parametrized(module) else type(module)
