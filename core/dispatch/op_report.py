"""One op's declaration and its implementations, as ``python -m ember.dispatch OPNAME`` prints them.

What a backend author or a reviewer asks about an op: where it is declared, what it accepts, how it
differentiates, and which installed backends run it with a kernel of their own, from its composite
definition, or not at all.
"""
from __future__ import annotations

import os

from .contract import registry
from .schema import OpDef

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds the ember package


def declared_at(op: OpDef) -> str:
    """``ember/dispatch/ops/nn/conv.py:123`` (``core/...`` in a checkout): the op's declaring statement."""
    if op.source is None:
        return "unknown"
    path, line = op.source
    return f"{os.path.relpath(path, _ROOT)}:{line}"


def derivative_text(op: OpDef) -> str:
    if not op.differentiable:
        return "none: not differentiable"
    if isinstance(op.derivative, dict):
        return "declared for " + ", ".join(op.derivative)
    if op.derivative is not None:
        return "declared"
    if op.kind == "composite":
        return "from its composite definition"
    return "none declared"


def jvp_text(op: OpDef) -> str:
    """How forward-mode AD gets the op's tangents (``OpDef.jvp``): a rule's name, "formula", "derived" (from the
    derivative, by the double-VJP construction) or "decomposed" (through the ops of a composite that declares
    no derivative)."""
    if not op.differentiable:
        return "none: not differentiable"
    if not op.tensor_positions:
        return "none: no tensor inputs"
    if op.jvp is None or op.jvp == "derived":
        return "decomposed" if op.jvp is None and op.kind == "composite" and op.derivative is None else "derived"
    return op.jvp if isinstance(op.jvp, str) else "formula"


def batch_text(op: OpDef) -> str:
    """How vmap batches the op (``OpDef.batch``): a family's name, "rule" (the op's own), "decomposed" (a
    composite's ops batch themselves) or "loop" (once per element, with a warning)."""
    if not op.tensor_positions and op.batch is None:
        return "none needed: no tensor inputs"
    if op.batch is None:
        return "decomposed" if op.kind == "composite" else "loop"
    return op.batch if isinstance(op.batch, str) else "rule"


def _kernel_description(op: OpDef, kernel) -> str:
    """"own kernel", what it is made from (its formula, rendered) and where its code is."""
    made = "own kernel"
    if getattr(kernel, "formula", None) == op.name:
        made += ", rendered from its formula" + (" (some calls by hand)" if getattr(kernel, "by_hand", None) else "")
    code = getattr(kernel, "__code__", None)
    if code is None:
        return made
    return f"{made}: {os.path.relpath(code.co_filename, _ROOT)}:{code.co_firstlineno}"


def implementations(op: OpDef) -> list[tuple[str, str]]:
    """(device type, how it runs the op) for every installed backend."""
    rows = []
    for name, backend in sorted(registry.backends().items()):
        reason = registry.unavailable_reason(name)
        if reason is not None:
            rows.append((name, f"backend unavailable here ({reason})"))
        elif op.name in backend.kernels:
            rows.append((name, _kernel_description(op, backend.kernels[op.name])))
        elif op.kind == "composite":
            rows.append((name, "composite definition (no kernel of its own)"))
        else:
            rows.append((name, "no kernel: fails unless the explicit CPU fallback is on (EMBER_FALLBACK=cpu)"))
    return rows


def report(op: OpDef) -> str:
    promotion = getattr(op.promotion, "__name__", repr(op.promotion))
    flags = [label for label, on in (("view", op.view), ("mutates its input", op.mutates),
                                     ("Tensor method", op.method), (f"in-place {op.name}_", op.inplace)) if on]
    lines = [f"{op.name}: {op.kind} op of category {op.category}",
             f"  signature:   {op.signature}",
             f"  declared at: {declared_at(op)}",
             f"  dtypes:      {op.dtypes} (promotion: {promotion}); outputs: {', '.join(op.outputs)}",
             f"  derivative:  {derivative_text(op)}",
             f"  transforms:  jvp {jvp_text(op)}; vmap {batch_text(op)}"]
    if flags:
        lines.append(f"  also:        {', '.join(flags)}")
    if op.doc:
        lines.append(f"  doc:         {op.doc}")
    lines.append("  backends:")
    lines += [f"    {name:<10} {how}" for name, how in implementations(op)]
    return "\n".join(lines)
