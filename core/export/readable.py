"""An exported program as Python-like text: one line per op call, with each value's dtype and shape, grouped by
the source line that made it (``print_readable``, ``str(exported_program)``)."""
from __future__ import annotations

from ..dispatch.schema import OPS, REQUIRED
from .graph import PROGRAM_DEVICE, ProgramGraph, Ref

_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64", "int32": "i32",
          "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8"}


def annotation(program: ProgramGraph, slot: int) -> str:
    meta = program.metas.get(slot)
    if meta is None:
        return ""
    return f'"{_SHORT.get(meta.dtype, meta.dtype)}[{", ".join(str(s) for s in meta.shape)}]"'


def text(program: ProgramGraph, class_name: str = "GraphModule") -> str:
    """The program as the body of a ``forward``: placeholders as parameters, nodes as assignments."""
    names = program.names
    params = ", ".join(f"{p.name}: {annotation(program, p.slot)}" for p in program.placeholders)
    lines = [f"class {class_name}(ember.nn.Module):", f"    def forward(self, {params}):"]
    last_place = None
    for node in program.nodes:
        place = (node.line, node.scope)
        if node.line and place != last_place:
            if last_place is not None:
                lines.append("")
            lines.append(f"        # {node.line}" + (f"  (in module '{node.scope}')" if node.scope else ""))
            last_place = place
        call = f"ember.ops.{node.target.replace('::', '.')}({_arguments(node, names)})"
        op = OPS.get(node.target)
        if op is not None and op.mutates:
            lines.append(f"        {call}")
        elif len(node.outputs) == 1:
            slot = node.outputs[0]
            lines.append(f"        {names[slot]}: {annotation(program, slot)} = {call}")
        else:
            lines.append(f"        {node.name} = {call}")
            for i, slot in enumerate(node.outputs):
                lines.append(f"        {names[slot]}: {annotation(program, slot)} = {node.name}[{i}]")
    lines.append(f"        return {_render(program.result, names)}")
    return "\n".join(lines) + "\n"


def _arguments(node, names: dict) -> str:
    op = OPS.get(node.target)
    if op is None:
        return ", ".join(_render(v, names) for v in node.args)
    shown = []
    last_needed = max((i for i, (p, v) in enumerate(zip(op.params, node.args))
                       if not p.kw_only and (p.default is REQUIRED or not _is_default(p, v))), default=-1)
    for i, (p, v) in enumerate(zip(op.params, node.args)):
        if not p.kw_only and i <= last_needed:
            shown.append(_render(v, names))
        elif p.kw_only and not _is_default(p, v):
            shown.append(f"{p.name}={_render(v, names)}")
    return ", ".join(shown)


def _is_default(param, value) -> bool:
    if param.default is REQUIRED:
        return False
    try:
        return type(value) is type(param.default) and value == param.default or \
            (value is None and param.default is None) or \
            (isinstance(value, tuple) and isinstance(param.default, list) and list(value) == param.default)
    except Exception:  # noqa: BLE001
        return False


def _render(v, names: dict) -> str:
    if isinstance(v, Ref):
        return names.get(v.slot, f"%{v.slot}")
    if v is PROGRAM_DEVICE:
        return "device"
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        inner = ", ".join(_render(x, names) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_render(x, names) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_render(x, names)}" for k, x in v.items()) + "}"
    return str(v) if not isinstance(v, str) else repr(v)


__all__ = ["text", "annotation"]
