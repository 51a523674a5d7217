"""Call plans: what one kind of op call resolved to, worked out once and cached.

A call plan holds everything the dispatcher concluded from validating a call: the implementation
(the backend's kernel, the op's composite, or the CPU fallback), the device, the compute and result
dtypes, the converted attribute values, how each operand becomes a kernel argument, and whether the
call records for autograd. ``executor.runner`` turns it into the function that runs such calls.

Plans are cached in one table, keyed by the op and everything validation looked at: each tensor
operand's shape, dtype, device and ``requires_grad``, the grad mode, the default dtype and device,
and the attribute values. Shapes are part of the key because validation checks them (the op's
``meta``), so a hit skips every check. The elementwise fast path keys the same table more cheaply,
by (op, device, dtype, grad wanted), for plans built by the same code. An op's ``varying`` attributes (a
slice's bounds) are in the key too, but a call with values not seen before takes its family's plan
(``families``: keyed without them), its checks run on its own values, rather than a whole validation.

``use_composite`` is the public switch that makes an op run its composite definition instead of a
backend kernel (tests compare the two). ``statistics()`` counts the cache's misses (plans made anew) and
evictions, so that a test can assert a warm loop makes no plans.
"""
from __future__ import annotations

from contextlib import contextmanager
from copy import copy
from typing import Any, Callable, Iterator

from ..schema import OPS, OpDef

_CACHE_SIZE = 4096
#: Plans one op may hold. Keys hold attribute values, and a loop may pass a new one at every step (a decaying
#: ``lerp`` weight, ``x[i]`` over a dataset, a varying ``clamp`` bound): each would add a plan (about 1 KB) until
#: the table is full. Past this many, an op's oldest plan makes room, and the other ops' plans stay.
_PLANS_PER_OP = 256


class CallPlan:
    """One validated kind of call of one op (see the module docstring). ``run(values)`` executes it."""

    __slots__ = ("op", "kind", "impl", "device", "backend", "compute", "out", "attrs", "grad_on", "records",
                 "arguments", "run", "node_plans", "converts", "converted_attrs", "validates_every_call", "into")

    def __init__(self, op: OpDef, kind: str, impl: Callable | None, device, backend, compute, out,
                 attrs: tuple, grad_on: bool, records: bool, arguments: tuple) -> None:
        self.op = op
        self.kind = kind  # "kernel", "composite" or "fallback"
        self.impl = impl
        self.device = device
        self.backend = backend
        self.compute = compute  # the dtype tensor operands are cast to (None: the op takes them as they are)
        self.out = out  # the result dtype, or a tuple of them
        self.attrs = attrs  # the converted attribute values, in ``op.attr_positions`` order
        self.grad_on = grad_on  # grad mode is on and an operand requires grad
        self.records = records  # autograd records this call (grad_on, and the op is differentiable)
        self.arguments = arguments  # per tensor position: how the bound value becomes a kernel argument
        self.node_plans: dict = {}  # autograd's per-pattern node plans for this call plan
        self.run: Callable[[list], Any] | None = None  # set by the executor
        # set by the executor where an in-place call may write into its target with one kernel (``into.py``):
        # ``into(values)`` returns the target, or None where this call must take the copy road
        self.into: Callable[[list], Any] | None = None
        # (position, value) of each keyed attribute whose converted form differs from the one passed (dim=-1
        # -> 1): what a cached call puts in place of the values passed; empty where they are as passed
        self.converts: tuple = ()
        # (position, value) of each attribute that conversion changed, before the op's checks (normalize) ran:
        # where a plan's checks run on every call (they read values), each call's checks start from these
        self.converted_attrs: tuple = ()
        self.validates_every_call = False  # the op's checks read tensor values: run them on every call

    def sharing(self, converts: tuple) -> CallPlan:
        """This plan for calls whose keyed attributes convert to ``converts`` instead (another member of a
        ``varying`` op's family): everything else, the runner and autograd's node plans included, is shared."""
        twin = copy(self)
        twin.converts = converts
        return twin

    def __repr__(self) -> str:
        return (f"<CallPlan {self.op.name} {self.kind} on {self.device} compute={getattr(self.compute, 'name', None)} "
                f"records={self.records}>")


#: The one table of plans. Entry points read it directly (``table.get(key)``): a lookup runs on every call.
table: dict = {}
_keys_by_op: dict = {}  # op -> its keys in ``table``, oldest first (a dict as an ordered set)
#: Counted where the slow paths run, never on a hit: ``misses`` (plans made), ``evictions`` (plans dropped
#: to stay within the bounds), ``clears`` (the whole table emptied).
_counts = {"misses": 0, "evictions": 0, "clears": 0}


def statistics() -> dict[str, int]:
    """The plan cache's counts so far (``misses``, ``evictions``, ``clears``) and its current ``size``."""
    return {**_counts, "size": len(table)}


def count_miss() -> None:
    """Called by the dispatcher each time it makes a plan: the call found none it could use."""
    _counts["misses"] += 1


def store(key, plan: CallPlan) -> None:
    """Cache ``plan`` under ``key`` (whose first item is the op), within both bounds."""
    if len(table) >= _CACHE_SIZE:
        _counts["evictions"] += len(table)
        clear()
    keys = _keys_by_op.get(key[0])
    if keys is None:
        keys = _keys_by_op[key[0]] = {}
    if len(keys) >= _PLANS_PER_OP and key not in keys:
        oldest = next(iter(keys))
        del keys[oldest]
        table.pop(oldest, None)
        _counts["evictions"] += 1
    keys[key] = None
    table[key] = plan


#: The plan of each family of calls of ``varying`` ops (calls differing only in their varying attributes), by the
#: key without them: apart from ``table``, so that its members' own plans never evict it.
families: dict = {}


def store_family(key, plan: CallPlan) -> None:
    if len(families) >= _CACHE_SIZE:
        families.clear()
    families[key] = plan


def cached(op: OpDef | str) -> list[CallPlan]:
    """The cached plans of ``op`` (for inspection and tests)."""
    op = OPS[op] if isinstance(op, str) else op
    return [plan for plan in table.values() if isinstance(plan, CallPlan) and plan.op is op]  # not fast path markers


def clear() -> None:
    """Forget every cached plan; they are rebuilt on the next calls."""
    _counts["clears"] += 1
    table.clear()
    families.clear()
    _keys_by_op.clear()


_composite_only: dict[str, set | None] = {}  # op name -> device types forced to the composite (None: all)


def prefers_composite(op: OpDef, device_type: str) -> bool:
    forced = _composite_only.get(op.name, False)
    return forced is None or (forced is not False and device_type in forced)


@contextmanager
def use_composite(op: OpDef | str, device_type: str | None = None) -> Iterator[None]:
    """Within the block, ``op`` runs its composite definition (in Ember ops) instead of the backend's
    kernel, on ``device_type`` or on every device. For comparing a kernel with its definition."""
    op = OPS[op] if isinstance(op, str) else op
    if op.composite is None:
        raise ValueError(f"use_composite: {op.name} has no composite definition")
    previous = _composite_only.get(op.name, False)
    if device_type is None:
        _composite_only[op.name] = None
    else:
        _composite_only[op.name] = (set() if previous in (False, None) else set(previous)) | {device_type}
    clear()
    try:
        yield
    finally:
        if previous is False:
            _composite_only.pop(op.name, None)
        else:
            _composite_only[op.name] = previous
        clear()


__all__ = ["CallPlan", "table", "store", "families", "store_family", "cached", "clear", "use_composite",
           "prefers_composite", "statistics", "count_miss"]
