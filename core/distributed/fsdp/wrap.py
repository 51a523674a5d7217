"""FSDP's wrap policies (PyTorch's ``torch.distributed.fsdp.wrap``) and ``plan_wrapping``, which FSDP asks
which submodules become their own FSDP units.

Two kinds of policy, as in PyTorch: a callable ``policy(module=, recurse=, nonwrapped_numel=) -> bool`` is asked
twice per module, on the way down (visit the children?) and on the way up (wrap this module, given the numel its
wrapped descendants left over?); a ``_Policy`` (``ModuleWrapPolicy``, ``CustomPolicy``) decides module by module.
"""
from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable
from typing import Any

from ... import nn

__all__ = [
    "CustomPolicy", "ModuleWrapPolicy", "always_wrap_policy", "enable_wrap", "lambda_auto_wrap_policy",
    "plan_wrapping", "size_based_auto_wrap_policy", "transformer_auto_wrap_policy", "wrap",
]

Overrides = dict[str, Any]
WrapPlan = list[tuple[nn.Module, Overrides]]


# -- callable policies ------------------------------------------------------------------------------------
def always_wrap_policy(*args: Any, **kwargs: Any) -> bool:
    """Wrap every submodule."""
    return True


def lambda_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                            lambda_fn: Callable[[nn.Module], bool]) -> bool:
    """Wrap the modules for which ``lambda_fn`` is true (use with ``functools.partial``)."""
    return True if recurse else lambda_fn(module)


def transformer_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls: Iterable[type[nn.Module]]) -> bool:
    """Wrap every instance of ``transformer_layer_cls`` (use with ``functools.partial``)."""
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


def size_based_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8),
                                force_leaf_modules: set[type[nn.Module]] | None = None,
                                exclude_wrap_modules: set[type[nn.Module]] | None = None) -> bool:
    """Wrap a module once at least ``min_num_params`` of its subtree's parameters are not in a wrapped
    descendant. ``force_leaf_modules``' children are never wrapped; ``exclude_wrap_modules`` are never
    wrapped themselves (containers without a forward of their own)."""
    force_leaf = size_based_auto_wrap_policy.FORCE_LEAF_MODULES if force_leaf_modules is None \
        else force_leaf_modules
    exclude = size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES if exclude_wrap_modules is None \
        else exclude_wrap_modules
    is_large = nonwrapped_numel >= min_num_params
    if recurse:
        return is_large and not isinstance(module, tuple(force_leaf))
    return is_large and not isinstance(module, tuple(exclude))


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {nn.ModuleList, nn.ModuleDict}
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {nn.MultiheadAttention}


# -- module-by-module policies ----------------------------------------------------------------------------
class _Policy(ABC):
    """A policy that decides for each module on its own, without the size bookkeeping of the callable kind."""

    @abstractmethod
    def _overrides_for(self, module: nn.Module) -> Overrides | None:
        """None: leave ``module`` in its parent's unit; a dict: wrap it, with these kwargs overrides."""


class ModuleWrapPolicy(_Policy):
    """Wrap every instance of ``module_classes``."""

    def __init__(self, module_classes: Iterable[type[nn.Module]]) -> None:
        self._module_classes = set(module_classes)
        self._module_classes_str = str(self._module_classes)

    def _overrides_for(self, module: nn.Module) -> Overrides | None:
        return {} if isinstance(module, tuple(self._module_classes)) else None

    def __call__(self, module: nn.Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        return transformer_auto_wrap_policy(module, recurse, -1, self._module_classes)

    def __repr__(self) -> str:
        return super().__repr__() + f"({self._module_classes_str})"


class CustomPolicy(_Policy):
    """``lambda_fn(module)``: False or {} leaves it unwrapped; True wraps it with the root's kwargs; a non-empty
    dict wraps it with those kwargs overriding the root's."""

    def __init__(self, lambda_fn: Callable[[nn.Module], bool | Overrides]) -> None:
        self._lambda_fn = lambda_fn

    def _overrides_for(self, module: nn.Module) -> Overrides | None:
        decision = self._lambda_fn(module)
        if not isinstance(decision, (dict, bool)):
            raise ValueError(f"The lambda_fn passed to CustomPolicy should return False/True or a kwarg dict, but "
                             f"it returned {decision}")
        if not decision:
            return None
        return dict(decision) if isinstance(decision, dict) else {}


# -- the planner FSDP calls -------------------------------------------------------------------------------
def plan_wrapping(root: nn.Module, policy: Callable[..., bool] | _Policy | None,
                  ignored_params: Iterable[int] = (), *,
                  ignored_modules: Iterable[nn.Module] = ()) -> WrapPlan:
    """The submodules of ``root`` that ``policy`` makes FSDP units, children before parents, each with its
    kwargs overrides. ``root`` itself is never listed (the caller always wraps it). ``ignored_params`` holds the
    ids of parameters to leave out of every count; ``ignored_modules``' subtrees are neither visited nor wrapped.

    As PyTorch's ``_recursive_wrap``, except that a parameter counts once: one shared with a module already
    chosen belongs to that module's unit and is not counted again.
    """
    if policy is None:
        return []
    skipped = {id(m) for ignored in ignored_modules for m in ignored.modules()}
    if isinstance(policy, _Policy):
        return [(module, overrides) for module in _post_order(root, skipped) if module is not root
                and (overrides := policy._overrides_for(module)) is not None]
    if not callable(policy):
        raise TypeError(f"plan_wrapping: the auto_wrap_policy must be a callable or a policy such as "
                        f"ModuleWrapPolicy, got {type(policy).__name__}")
    return _SizeAwarePlanner(policy, set(ignored_params), skipped).plan(root)


class _SizeAwarePlanner:
    """One walk of a callable policy over the tree, keeping track of the parameters already in a unit."""

    def __init__(self, policy: Callable[..., bool], ignored_params: set[int], skipped: set[int]) -> None:
        self.policy = policy
        self.uncounted = set(ignored_params)  # ids of parameters ignored or already in a chosen module's unit
        self.visited = set(skipped)  # ids of modules not to visit (again)
        self.chosen: WrapPlan = []

    def plan(self, root: nn.Module) -> WrapPlan:
        self.visited.add(id(root))
        self._visit(root, is_root=True)
        return self.chosen

    def _visit(self, module: nn.Module, is_root: bool = False) -> None:
        if not self.policy(module=module, recurse=True, nonwrapped_numel=self._nonwrapped_numel(module)):
            return
        for child in module.children():
            if id(child) not in self.visited:
                self.visited.add(id(child))
                self._visit(child)
        if not is_root and self.policy(module=module, recurse=False, nonwrapped_numel=self._nonwrapped_numel(module)):
            self.chosen.append((module, {}))
            self.uncounted.update(id(p) for p in module.parameters())

    def _nonwrapped_numel(self, module: nn.Module) -> int:
        return sum(p.numel() for p in module.parameters() if id(p) not in self.uncounted)


def _post_order(root: nn.Module, skipped: set[int]) -> list[nn.Module]:
    """Every module under ``root`` once, children before parents, in registration order."""
    order: list[nn.Module] = []
    seen = set(skipped) | {id(root)}

    def visit(module: nn.Module) -> None:
        for child in module.children():
            if id(child) not in seen:
                seen.add(id(child))
                visit(child)
        order.append(module)

    visit(root)
    return order


# -- manual wrapping --------------------------------------------------------------------------------------
class _WrapContext:
    """What ``enable_wrap`` set: the wrapper class and its kwargs, while the context is open."""

    wrapper_cls: Callable[..., nn.Module] | None = None
    kwargs: Overrides = {}


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls: Callable[..., nn.Module], **wrapper_kwargs: Any) -> Generator[None, None, None]:
    """Within the context, ``wrap(module)`` returns ``wrapper_cls(module, **wrapper_kwargs)``."""
    if _WrapContext.wrapper_cls is not None:
        raise NotImplementedError("You are already within an autowrap context and we currently do not supported "
                                  "nested autowrap.")
    _WrapContext.wrapper_cls, _WrapContext.kwargs = wrapper_cls, wrapper_kwargs
    try:
        yield
    finally:
        _WrapContext.wrapper_cls, _WrapContext.kwargs = None, {}


def wrap(module: nn.Module, **wrap_overrides: Any) -> nn.Module:
    """``module`` wrapped when inside ``enable_wrap`` (``wrap_overrides`` win over its kwargs, and a module's
    own ``_wrap_overrides`` attribute over both), else ``module`` unchanged: model code can call it
    either way."""
    if _WrapContext.wrapper_cls is None:
        return module
    kwargs = {**_WrapContext.kwargs, **wrap_overrides, **getattr(module, "_wrap_overrides", {})}
    return _WrapContext.wrapper_cls(module, **kwargs)
