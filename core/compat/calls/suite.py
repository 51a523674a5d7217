"""The differential API suite: every public op PyTorch declares, called in every form on both frameworks.

``ops()`` groups ``native_functions.yaml``'s overloads by the Python name they are reached through;
``check(op)`` finds a base call PyTorch accepts for each overload, derives its call forms, makes each call
on PyTorch and on Ember, and returns one ``Verdict`` per form.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .forms import PythonOp, find_base, forms
from .native import overloads
from .outcome import Call, Unbuildable, exists, judge, run

#: python_module values whose ops PyTorch exposes under a public namespace of the same name.
NAMESPACES = (None, "linalg", "special")
#: Ops the suite does not call: from_file writes the file it is given (the guesses would litter the directory).
NOT_CALLED = frozenset({"from_file"})


@dataclass(frozen=True)
class Verdict:
    op: str
    call: Call
    mismatch: str | None  # None: the frameworks agree
    missing: bool = False  # Ember lacks this function or method

    @property
    def category(self) -> str:
        return self.call.category


def ops() -> list[PythonOp]:
    grouped: OrderedDict[tuple, list] = OrderedDict()
    for overload in overloads():
        if overload.python_module not in NAMESPACES or overload.name.endswith("_backward") \
                or overload.name in NOT_CALLED:
            continue
        grouped.setdefault((overload.python_module, overload.name), []).append(overload)
    return [PythonOp(name, module, members) for (module, name), members in grouped.items()]


def reachable(torch, op: PythonOp) -> bool:
    """Whether PyTorch itself exposes the op in Python (some declared ops are C++ only)."""
    return any(exists(torch, Call("", s, op.namespace, op.python_name(s), ()))
               for o in op.overloads for s in op.surfaces(o))


def check_protocols(torch, ember) -> list[Verdict]:
    """Python's protocols and assignment (``protocols.calls``), one verdict per call."""
    from .protocols import calls

    return [Verdict(f"python.{call.category}", call, judge(run(torch, call), run(ember, call))) for call in calls()]


def check(torch, ember, op: PythonOp) -> tuple[list[Verdict], list[str]]:
    """The verdicts of every call form, and the overloads for which no base call was found."""
    verdicts, seen, unmatched = [], set(), []
    for overload in op.overloads:
        if overload.is_out:
            continue
        base = find_base(torch, op, overload)
        if base is None:
            unmatched.append(str(overload))
            continue
        for call in forms(torch, base):
            key = str(call)
            if key in seen:
                continue
            seen.add(key)
            if not exists(torch, call):
                continue
            if not exists(ember, call):
                verdicts.append(Verdict(op.id, call, None, missing=True))
                continue
            try:
                mismatch = judge(run(torch, call), run(ember, call), values=not call.random,
                                 unique_outputs=call.unique_outputs)
            except Unbuildable:
                verdicts.append(Verdict(op.id, call, None, missing=True))
                continue
            verdicts.append(Verdict(op.id, call, mismatch))
    return verdicts, unmatched
