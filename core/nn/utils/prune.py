"""``nn.utils.prune``: zero parts of a parameter through a mask that a forward pre-hook applies.

Pruning ``module.weight`` moves the parameter to ``weight_orig``, adds the buffer ``weight_mask`` and makes
``module.weight = weight_orig * weight_mask`` before every forward, so gradients reach only the kept
entries. Pruning the same tensor again combines the masks in a ``PruningContainer``: the new method only
sees the entries (or channels) still alive. ``remove`` makes the pruning permanent. Names, buffers and
semantics are PyTorch's.
"""
from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from typing import Iterable

from ...dispatch.ops import F
from ...tensor import Tensor
from ..modules.module import Module
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A pruning recipe: ``compute_mask`` says which entries to keep; the rest (the hook, the reparametrization,
    ``remove``) is shared. Subclasses set ``PRUNING_TYPE`` to 'unstructured', 'structured' or 'global'."""

    _tensor_name: str | None = None
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t`` (importance scores), keeping ``default_mask``'s zeros."""

    def apply_mask(self, module: Module) -> Tensor:
        if self._tensor_name is None:
            raise RuntimeError(f"Module {type(module).__name__} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores: Tensor | None = None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, chaining with earlier pruning of that tensor."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise ValueError(f"importance_scores should have the same shape as parameter {name} of "
                                 f"{type(module).__name__}, got {tuple(importance_scores.shape)} vs "
                                 f"{tuple(orig.shape)}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = F.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            object.__setattr__(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # leave the module as it was
                module._discard(name)
                module.register_parameter(name, module._parameters.pop(name + "_orig"))
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None):
        """``t`` times the mask this method computes (from ``importance_scores``, default ``t``)."""
        scores = t if importance_scores is None else importance_scores
        if tuple(scores.shape) != tuple(t.shape):
            raise ValueError(f"importance_scores should have the same shape as tensor t, got "
                             f"{tuple(scores.shape)} vs {tuple(t.shape)}")
        return t * self.compute_mask(scores, default_mask=F.ones_like(t) if default_mask is None else default_mask)

    def remove(self, module: Module) -> None:
        """Keep the pruned values as the plain parameter ``<name>`` and drop ``_orig``, ``_mask`` and the hook."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {type(module).__name__} has to be pruned before pruning can be removed")
        name = self._tensor_name
        weight = self.apply_mask(module)
        module.__dict__.pop(name, None)
        orig = module._parameters.pop(name + "_orig")
        orig.data = weight.detach()
        del module._buffers[name + "_mask"]
        module.register_parameter(name, orig)


def _composite_method(cls, module: Module, name: str, *args, **kwargs) -> BasePruningMethod:
    """The new method, or the container it joins when ``name`` was pruned before (its old hook removed)."""
    old = [(key, hook) for key, hook in module._forward_pre_hooks.items()
           if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(old) > 1:
        raise RuntimeError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                           f"{type(module).__name__}. Use a PruningContainer.")
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not old:
        return method
    key, previous = old[0]
    del module._forward_pre_hooks[key]
    if not isinstance(previous, PruningContainer):
        previous = PruningContainer(previous)
    previous.add_pruning_method(method)
    return previous


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor, in order; its mask is the last method's, computed on what the
    earlier ones left."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1 and isinstance(args[0], BasePruningMethod):
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, index):
        return self._pruning_methods[index]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        mask = default_mask.to(t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            alive = mask == 1
        elif method.PRUNING_TYPE == "structured":
            dim = method.dim % t.ndim
            others = tuple(d for d in range(t.ndim) if d != dim)
            alive = (slice(None),) * dim + (mask.sum(dim=others) != 0,)
        elif method.PRUNING_TYPE == "global":
            alive = (slice(None),) * t.ndim
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        mask[alive] = method.compute_mask(t[alive], default_mask=mask[alive]).to(mask.dtype)
        return mask


# -- the methods ------------------------------------------------------------------------------------------------

def _check_amount(amount) -> None:
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount, size: int) -> int:
    """How many of ``size`` units ``amount`` (a count, or a fraction) prunes."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return round(amount * size)


def _channel_mask(t: Tensor, dim: int, keep: Tensor) -> Tensor:
    """Ones on the kept channels (``keep``, a bool vector along ``dim``) of ``t``'s shape, zeros elsewhere."""
    shape = [1] * t.ndim
    shape[dim] = t.shape[dim]
    return F.expand(keep.to(t.dtype).reshape(shape), tuple(t.shape)).clone()


def _check_structured(t: Tensor, dim: int) -> int:
    if t.ndim <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {tuple(t.shape)} with {t.ndim} dims")
    if dim >= t.ndim or dim < -t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")
    return dim % t.ndim


class Identity(BasePruningMethod):
    """Prunes nothing: the reparametrization with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str):
        return super().apply(module, name)


class _UnstructuredAmount(BasePruningMethod):
    """Shared by the unstructured methods: zero the ``amount`` entries that ``_pruned_entries`` picks."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    @abstractmethod
    def _pruned_entries(self, t: Tensor, count: int) -> Tensor:
        """The flat indices of the ``count`` entries of ``t`` to prune."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        count = _count(self.amount, t.numel())
        mask = default_mask.clone()
        if count:
            flat = mask.view(-1)
            flat[self._pruned_entries(t, count)] = 0
        return mask


class RandomUnstructured(_UnstructuredAmount):
    """Prunes ``amount`` entries chosen uniformly at random."""

    def _pruned_entries(self, t: Tensor, count: int) -> Tensor:
        return F.rand_like(t).reshape(-1).topk(count).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_UnstructuredAmount):
    """Prunes the ``amount`` entries of smallest absolute value."""

    def _pruned_entries(self, t: Tensor, count: int) -> Tensor:
        return t.abs().reshape(-1).topk(count, largest=False).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount, importance_scores: Tensor | None = None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        dim = _check_structured(t, self.dim)
        count = _count(self.amount, t.shape[dim])
        if not count:
            return default_mask
        score = F.rand((t.shape[dim],), dtype=t.dtype, device=t.device)
        keep = F.ones_like(score).to(default_mask.dtype)
        keep[score.topk(count, largest=False).indices] = 0
        return _channel_mask(t, dim, keep != 0) * default_mask.to(t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount, dim: int = -1):
        return super().apply(module, name, amount=amount, dim=dim)


def _channel_norms(t: Tensor, n, dim: int) -> Tensor:
    """The L``n`` norm of each channel along ``dim`` (``n`` a number, ``inf``, ``-inf`` or 'fro')."""
    values = t.abs()
    others = tuple(d for d in range(t.ndim) if d != dim)
    if n == "fro":
        n = 2
    if n == math.inf:
        return values.amax(dim=others)
    if n == -math.inf:
        return values.amin(dim=others)
    if not isinstance(n, numbers.Real) or isinstance(n, bool):
        raise ValueError(f"ln_structured: n must be a number, inf, -inf or 'fro', got {n!r}")
    if n == 0:
        return (values != 0).to(t.dtype).sum(dim=others)
    return (values ** n).sum(dim=others) ** (1.0 / n)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        dim = _check_structured(t, self.dim)
        channels = t.shape[dim]
        count = _count(self.amount, channels)
        if not count:
            return default_mask
        norms = _channel_norms(t, self.n, dim)
        keep = F.zeros_like(norms)
        keep[norms.topk(channels - count, largest=True).indices] = 1
        return _channel_mask(t, dim, keep != 0) * default_mask.to(t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount, n, dim: int, importance_scores: Tensor | None = None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"custom_from_mask: mask of shape {tuple(self.mask.shape)} does not match the tensor's "
                             f"shape {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor):
        return super().apply(module, name, mask=mask)


# -- the functional API -----------------------------------------------------------------------------------------

def identity(module: Module, name: str) -> Module:
    """Reparametrize ``module.<name>`` with an all-ones mask (nothing pruned)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount) -> Module:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount, importance_scores: Tensor | None = None) -> Module:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount, dim: int) -> Module:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount, n, dim: int, importance_scores: Tensor | None = None) -> Module:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable, pruning_method, importance_scores: dict | None = None,
                        **kwargs) -> None:
    """Prune ``(module, name)`` pairs together: ``pruning_method`` (unstructured) ranks all their entries as one
    vector, so e.g. ``amount=10`` removes the 10 smallest entries wherever they are."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name)).detach()
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask", None) if hasattr(module, name + "_mask")
                                         else F.ones_like(getattr(module, name)) for module, name in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    method._tensor_name = "temp"
    container = PruningContainer(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        size = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + size].reshape(tuple(param.shape)))
        pointer += size


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: a plain parameter holding the pruned values."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {type(module).__name__} has to be pruned before pruning can be "
                     f"removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod) for sub in module.modules()
               for hook in sub._forward_pre_hooks.values())
