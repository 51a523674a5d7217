"""The objects a compiled program depends on besides its arguments, and their guards.

A program reads parameters and buffers as the tensors they are, and its replay must stop being used
when they change: a parameter replaced, a module switched between train and eval, ``requires_grad``
turned off, a gradient cleared. ``discover`` finds the modules and optimizers a function reaches (its
arguments, its bound ``self``, its closure and the globals it names); ``Watched`` turns their state into
a cheap key and checks that every one is still the object that was captured.
"""
from __future__ import annotations

import types
from typing import Any, Callable

from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer


_DEPTH = 3  # how many calls deep ``discover`` looks into functions it finds


class Watched:
    """Modules, their parameters and the optimizers' parameters, with identity checks for each source."""

    def __init__(self, roots: list, sources: list[tuple[Callable[[], Any], Any]]) -> None:
        modules: dict[int, Module] = {}
        leaves: dict[int, Any] = {}
        slots = []
        for root in roots:
            if isinstance(root, Module):
                for m in root.modules():
                    if id(m) not in modules:
                        modules[id(m)] = m
                        for name, p in m._parameters.items():
                            if p is not None:
                                slots.append((m._parameters, name, p))
                                leaves.setdefault(id(p), p)
            elif isinstance(root, Optimizer):
                for group in root.param_groups:
                    for p in group["params"]:
                        leaves.setdefault(id(p), p)
        self.roots = roots
        self.modules = list(modules.values())
        self.leaves = list(leaves.values())
        self.slots = slots
        self.sources = sources

    def key(self) -> tuple:
        leaves = self.leaves
        return (tuple([m.training for m in self.modules]), tuple([p.requires_grad for p in leaves]),
                tuple([p.grad is None for p in leaves]))

    def intact(self) -> bool:
        for store, name, p in self.slots:
            if store.get(name) is not p:
                return False
        for get, obj in self.sources:
            if get() is not obj:
                return False
        return True


def _is_stateful(obj) -> bool:
    return isinstance(obj, (Module, Optimizer))


def discover(function: Callable, args: tuple, kwargs: dict) -> Watched:
    """The modules and optimizers ``function`` reaches, with how to check each is still the one found: its
    arguments, its bound ``self`` (and that object's attributes), its closure and the globals it names, and
    the same for the functions found there, a few calls deep."""
    roots: list = []
    sources: list = []
    seen: set = set()

    def add(obj, get=None, depth: int = 0) -> None:
        if _is_stateful(obj):
            if all(obj is not r for r in roots):
                roots.append(obj)
                if get is not None:
                    sources.append((get, obj))
        elif depth < _DEPTH and (isinstance(obj, (types.FunctionType, types.MethodType))) and id(obj) not in seen:
            if get is not None:
                sources.append((get, obj))
            search(obj, depth + 1)

    def search(fn, depth: int) -> None:
        seen.add(id(fn))
        owner = getattr(fn, "__self__", None)
        target = getattr(fn, "__func__", fn)
        if owner is not None:
            add(owner)
            for name, value in list(vars(owner).items()) if hasattr(owner, "__dict__") else ():
                add(value, lambda o=owner, n=name: vars(o).get(n), depth)
        for cell in getattr(target, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            add(value, lambda c=cell: c.cell_contents, depth)
        code = getattr(target, "__code__", None)
        namespace = getattr(target, "__globals__", None)
        if code is not None and namespace is not None:
            for name in code.co_names:
                if name in namespace:
                    add(namespace[name], lambda g=namespace, n=name: g.get(n), depth)

    for value in (*args, *kwargs.values()):
        add(value)
    search(function, 0)
    return Watched(roots, sources)


__all__ = ["Watched", "discover"]
