"""Dispatch modes: objects that see every op call, as PyTorch's ``TorchDispatchMode`` does.

A mode is entered as a context manager and handles each op call made while it is active in
``__torch_dispatch__(func, types, args, kwargs)``: it may look at the op, its arguments and the
result, and return that result (observe), or return something else (replace). Calling
``func(*args, **kwargs)`` from inside the handler runs the op through the modes entered before
this one and then the op itself; the handling mode does not see that call again.

Modes nest: the innermost (most recently entered) sees a call first. By default a mode is hidden
while its own handler runs, so ops it calls itself do not come back to it (PyTorch's rule). A mode
with ``observes_nested = True`` stays visible: it also sees the ops that an op runs internally (a
composite's decomposition), which is what the profiler wants. Such a mode must run ``func`` at most
once per call and must not call ops itself outside it.

The autograd engine tells the active modes which graph node's backward is running
(``backward_node``), so that a mode can link backward work to the forward call that recorded it.

Every op entry point checks ``active`` first; with no mode entered that check is all a mode costs.
The stack is process-wide, not per thread.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from . import links

#: The modes that see the next op call, innermost last. Never rebound: the dispatcher keeps a reference.
active: list["DispatchMode"] = []


#: Per handler running now (innermost last): the modes standing aside for it, the handling one first, then those
#: that handled the call before it. A handler that must issue ops the modes above it should see (forward AD's
#: tangent rules, on batched tangents) puts them back for a block with ``restored``.
standing_above: list[list] = []


@contextmanager
def restored(modes_: list) -> Iterator[None]:
    """Make ``modes_`` active again on top of the stack for the block (see ``standing_above``)."""
    at = len(active)
    active.extend(modes_)
    try:
        yield
    finally:
        del active[at:at + len(modes_)]


class DispatchMode:
    """Base of interception modes. Subclasses override ``__torch_dispatch__`` (the default observes)."""

    observes_nested: bool = False
    #: Whether the mode sees an in-place call (``x.add_(y)``) as one call of its op, returning the target as
    #: the call ran (one kernel writing into it, where the backend can), as PyTorch's modes see ``add_``.
    #: False (the default): it sees the op's out-of-place call and then ``copy_`` writing the result into
    #: the target, which a tracer or autocast can replace; only a mode that observes should set True.
    sees_inplace_calls: bool = False
    #: Whether the handler reads ``types`` (the operands' tensor classes, PyTorch's argument); the function
    #: transforms' modes, which see every call, do not, and are spared collecting them.
    reads_types: bool = True

    def __torch_dispatch__(self, func: "OpCall", types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        return func(*args, **(kwargs or {}))

    def backward_node(self, node) -> "contextmanager | None":
        """A context manager around the backward of graph node ``node``, or None (the default)."""
        return None

    def __enter__(self):
        active.append(self)
        return self

    def __exit__(self, *exc) -> None:
        for i in range(len(active) - 1, -1, -1):  # the innermost entry of this mode
            if active[i] is self:
                del active[i]
                return

    @classmethod
    def push(cls, *args, **kwargs) -> "DispatchMode":
        """Make and enter a mode: ``with MyMode.push(): ...``, as PyTorch's modes allow."""
        return cls(*args, **kwargs)


#: PyTorch's name for the same base class (``torch.utils._python_dispatch.TorchDispatchMode``).
TorchDispatchMode = DispatchMode


class OpCall:
    """The ``func`` a mode's handler receives: the op, callable to run it below the handling mode."""

    __slots__ = ("op", "_level", "_run")

    def __init__(self, op, level: int, run: Callable) -> None:
        self.op, self._level, self._run = op, level, run

    @property
    def __name__(self) -> str:
        return self.op.name

    def name(self) -> str:
        return self.op.name

    def __call__(self, *args, **kwargs):
        return dispatch(self.op, args, kwargs, self._run, self._level)

    def __repr__(self) -> str:
        return f"ember.ops.{self.op.name}"

    def __eq__(self, other) -> bool:
        return getattr(other, "op", None) is self.op

    def __hash__(self) -> int:
        return hash(self.op.name)


#: Handlers registered for one op and one mode class (``ember.library.register_torch_dispatch``, PyTorch's
#: rule): ``rules[(op, cls)](mode, func, types, args, kwargs)`` handles the op's calls in place of the
#: ``__torch_dispatch__`` of a mode of exactly that class.
rules: dict = {}


def _handler(mode: DispatchMode, op) -> Callable:
    """The mode's handler for calls of ``op``: a rule registered for the pair, else its ``__torch_dispatch__``."""
    rule = rules.get((op, mode.__class__))
    if rule is None:
        return mode.__torch_dispatch__
    return lambda func, types, args, kwargs: rule(mode, func, types, args, kwargs)


def dispatch(op, args: tuple, kwargs: dict, run: Callable, level: int | None = None):
    """Hand an op call to the innermost mode below ``level`` (all of them when None); below the last
    mode, ``run(op, args, kwargs)`` executes the op. Called by the dispatcher when ``active`` is non-empty."""
    if level is None:
        level = len(active)
    if level <= 0:
        return run(op, args, kwargs)
    mode = active[level - 1]
    func = OpCall(op, level - 1, run)
    types = _tensor_types(args, kwargs) if mode.reads_types else ()
    handler = _handler(mode, op) if rules else mode.__torch_dispatch__
    if mode.observes_nested:
        return handler(func, types, args, kwargs)
    hidden = active[level - 1:]
    del active[level - 1:]  # the handling mode, and those that handled the call before it, stand aside
    standing_above.append(hidden)
    try:
        return handler(func, types, args, kwargs)
    finally:
        standing_above.pop()
        active[level - 1:level - 1] = hidden


@contextmanager
def standing_aside(mode: DispatchMode) -> Iterator[None]:
    """Hide ``mode`` (its innermost entry) while the block runs: for a mode with ``observes_nested`` whose
    handler must not see the ops it calls itself for some calls (autocast casting an op's operands)."""
    for at in range(len(active) - 1, -1, -1):
        if active[at] is mode:
            break
    else:
        yield
        return
    del active[at]
    try:
        yield
    finally:
        active.insert(at, mode)


def tensors_in(args: tuple, kwargs: dict | None):
    """The tensors among an op call's arguments (lists and tuples looked into one level)."""
    Tensor = links.tensor.type
    for value in (*args, *(kwargs.values() if kwargs else ())):
        for item in (value if isinstance(value, (list, tuple)) else (value,)):
            if isinstance(item, Tensor):
                yield item


def _tensor_types(args: tuple, kwargs: dict) -> tuple:
    """The distinct tensor classes among the arguments, as ``types`` of ``__torch_dispatch__``."""
    return tuple(dict.fromkeys(t.__class__ for t in tensors_in(args, kwargs)))


@contextmanager
def backward_node(node) -> Iterator[None]:
    """Run by the autograd engine around one node's backward while modes are active."""
    scopes = [scope for mode in list(active) if (scope := mode.backward_node(node)) is not None]
    for scope in scopes:
        scope.__enter__()
    try:
        yield
    finally:
        for scope in reversed(scopes):
            scope.__exit__(None, None, None)


__all__ = ["DispatchMode", "TorchDispatchMode", "OpCall", "active", "dispatch", "backward_node", "standing_aside",
           "tensors_in", "standing_above", "restored", "rules"]
