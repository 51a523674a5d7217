"""``F``: one Python function per declared op. Composite definitions call other ops through it, so they run
on any backend. The op modules import it from here (not from their package, which imports them), and the
package fills it once every declaration has run."""
from __future__ import annotations

from types import SimpleNamespace

from ..execution.dispatcher import call
from ..execution.fastpath import call_or_not_implemented, make_defaults_call, make_function as make_fast
from ..schema import OPS, OpDef

F = SimpleNamespace()


def _generic(op: OpDef):
    alone = make_defaults_call(op)
    if alone is not None:  # F.sum(x): the plan found by the tensor alone
        def function(*args, **kwargs):
            if len(args) == 1 and not kwargs:
                return alone(args[0])
            return call(op, args, kwargs)
        return function

    def function(*args, **kwargs):
        return call(op, args, kwargs)
    return function


def _make_function(op: OpDef):
    fast = make_fast(op)
    function = fast or _generic(op)
    function.__name__ = op.name
    # pickle finds it as ember.dispatch.ops.F.<name>, where every Ember version has kept it
    function.__module__, function.__qualname__ = "ember.dispatch.ops", f"F.{op.name}"
    function.__doc__ = f"{op.signature}\n\n{op.doc}".strip()
    function.op = op
    function.is_fast_path = fast is not None
    return function


def operator_function(name: str):
    """The function Python's operators call for op ``name`` (``x + y``, ``x == y``): ``F.<name>``'s fast path,
    NotImplemented where the call raises TypeError (see ``fastpath.call_or_not_implemented``)."""
    op = OPS[name]
    function = make_fast(op, operator=True)
    if function is None:
        def function(*args, **kwargs):
            return call_or_not_implemented(op, args, kwargs)
    function.__name__, function.__qualname__ = f"operator_{name}", f"operator_{name}"
    function.op = op  # (the stubs read the op's signature from here, as from F's functions)
    return function


def populate() -> None:
    """One function on ``F`` for every op declared so far."""
    for name, op in OPS.items():
        setattr(F, name, _make_function(op))
