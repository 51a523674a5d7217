"""A ``ProgramGraph`` as a JSON document, and back, with every reference checked before anything runs.

Reading checks what running would otherwise trip over later, or worse, trust: each node names an op this process
has (a custom op's library must be imported first) with one value per parameter; each tensor a node reads is
defined before it; each symbol a size uses is a dimension of some input; the inputs are the placeholders.
"""
from __future__ import annotations

from ..compiler.graph import leaves
from ..dispatch.schema import OPS
from ..dispatch.schema.dtypes import from_name
from .dims import SymbolicSize, Unfitted
from .encoding import decode, encode, slot, symbolic, text
from .errors import ExportLoadError
from .graph import Node, Placeholder, ProgramGraph, Ref, TensorMeta

FORMAT = "ember.export"
VERSION = 1
KINDS = ("user_input", "parameter", "buffer", "constant")


def to_json(program: ProgramGraph) -> dict:
    return {
        "format": FORMAT, "version": VERSION,
        "placeholders": [{"name": p.name, "slot": p.slot, "kind": p.kind, "target": p.target,
                          "path": None if p.path is None else encode(tuple(p.path), f"input {p.name}"),
                          "persistent": p.persistent} for p in program.placeholders],
        "nodes": [{"name": n.name, "target": n.target, "args": encode(tuple(n.args), f"node {n.name} ({n.target})"),
                   "outputs": list(n.outputs), "scope": n.scope, "line": n.line} for n in program.nodes],
        "metas": [[s, encode(tuple(m.shape), f"the shape of %{s}"), m.dtype] for s, m in program.metas.items()],
        "names": [[s, name] for s, name in program.names.items()],
        "result": encode(program.result, "the program's result"),
        "in_tree": encode(program.in_tree, "the program's inputs"),
        "ranges": [[name, low, high] for name, (low, high) in program.ranges.items()],
    }


def from_json(doc) -> ProgramGraph:
    """The program a document describes, checked whole (``ExportLoadError`` otherwise)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ExportLoadError("the program is not an ember.export program (its 'format' field is missing or wrong)")
    if doc.get("version") != VERSION:
        raise ExportLoadError(f"the program is of format version {doc.get('version')!r}; this Ember reads {VERSION}")
    for key in ("placeholders", "nodes", "metas", "names", "ranges"):
        if not isinstance(doc.get(key), list):
            raise ExportLoadError(f"the program's '{key}' field is missing or not a list")
    ranges = {}
    for entry in doc["ranges"]:
        name, low, high = _fields(entry, 3, "a range")
        if not isinstance(low, int) or low < 0 or not (high is None or isinstance(high, int) and high >= low):
            raise ExportLoadError(f"the range of '{name}' is not 0 <= min <= max: {low}, {high}")
        ranges[text(name, "a range")] = (low, high)
    placeholders = [_placeholder(p) for p in doc["placeholders"]]
    defined = {}
    for p in placeholders:
        if p.slot in defined:
            raise ExportLoadError(f"placeholder {p.name} reuses slot {p.slot}")
        defined[p.slot] = p.name
    nodes = [_node(n, defined) for n in doc["nodes"]]
    metas = {}
    for entry in doc["metas"]:
        s, shape, dtype_name = _fields(entry, 3, "a value's meta")
        shape = decode(shape, f"the shape of %{s}")
        if not isinstance(shape, tuple) or not all(map(_is_size, shape)):
            raise ExportLoadError(f"the shape of %{s} is not a tuple of sizes")
        try:
            from_name(text(dtype_name, f"the dtype of %{s}"))
        except TypeError:
            raise ExportLoadError(f"the dtype of %{s} is unknown: {dtype_name!r}") from None
        metas[slot(s, "a value's meta")] = TensorMeta(shape, dtype_name)
    pairs = [_fields(entry, 2, "a name") for entry in doc["names"]]
    names = {slot(s, "a value name"): text(n, "a value name") for s, n in pairs}
    result = decode(doc.get("result"), "the program's result")
    in_tree = decode(doc.get("in_tree"), "the program's inputs")
    program = ProgramGraph(placeholders, nodes, metas, names, result, in_tree, ranges)
    _check_references(program, defined)
    return program


def _is_size(n) -> bool:
    if isinstance(n, int):
        return not isinstance(n, bool) and n >= 0
    return isinstance(n, (SymbolicSize, Unfitted))


def _fields(entry, count: int, what: str) -> list:
    if not isinstance(entry, list) or len(entry) != count:
        raise ExportLoadError(f"{what} must be a list of {count} fields, got {str(entry)[:80]}")
    return entry


def _placeholder(p) -> Placeholder:
    if not isinstance(p, dict):
        raise ExportLoadError("a placeholder must be a JSON object")
    name = text(p.get("name"), "a placeholder's name")
    kind = p.get("kind")
    if kind not in KINDS:
        raise ExportLoadError(f"placeholder {name}: unknown kind {kind!r} (known: {', '.join(KINDS)})")
    target = p.get("target")
    path = p.get("path")
    if kind == "user_input":
        path = decode(path, f"placeholder {name}")
        if not isinstance(path, tuple) or len(path) < 2 or path[0] not in (0, 1):
            raise ExportLoadError(f"placeholder {name}: a user input's path must start with 0 (args) or 1 (kwargs)")
    else:
        target = text(target, f"placeholder {name}")
        path = None
    return Placeholder(name, slot(p.get("slot"), f"placeholder {name}"), kind, target, path,
                       bool(p.get("persistent", True)))


def _node(n, defined: dict) -> Node:
    if not isinstance(n, dict):
        raise ExportLoadError("a node must be a JSON object")
    name = text(n.get("name"), "a node's name")
    target = text(n.get("target"), f"node {name}")
    op = OPS.get(target)
    if op is None:
        hint = (" (a custom op: import the library that defines it before loading)" if "::" in target else "")
        raise ExportLoadError(f"node {name} calls the op '{target}', which this Ember does not have{hint}")
    args = decode(n.get("args"), f"node {name} ({target})")
    if not isinstance(args, tuple) or len(args) != len(op.params):
        raise ExportLoadError(f"node {name} ({target}) has {len(args) if isinstance(args, tuple) else '?'} "
                              f"arguments; the op takes {len(op.params)}: {op.signature}")
    for ref in _refs(args):
        if ref.slot not in defined:
            raise ExportLoadError(f"node {name} ({target}) reads %{ref.slot}, which no earlier node or input defines")
    outputs = n.get("outputs")
    if not isinstance(outputs, list):
        raise ExportLoadError(f"node {name}: outputs must be a list of slots")
    outputs = tuple(slot(s, f"node {name}") for s in outputs)
    for s in outputs:
        if s in defined and not op.mutates:
            raise ExportLoadError(f"node {name} ({target}) redefines %{s}")
        defined[s] = name
    return Node(name, target, list(args), outputs, text(n.get("scope", ""), f"node {name}"),
                text(n.get("line", ""), f"node {name}"))


def _refs(tree) -> list:
    return [leaf for leaf in leaves(tree) if isinstance(leaf, Ref)]


def _check_references(program: ProgramGraph, defined: dict) -> None:
    for ref in _refs(program.result):
        if ref.slot not in defined:
            raise ExportLoadError(f"the program's result reads %{ref.slot}, which nothing defines")
    user = {p.slot for p in program.user_inputs()}
    if not isinstance(program.in_tree, tuple) or len(program.in_tree) != 2:
        raise ExportLoadError("the program's inputs must be (args, kwargs)")
    if {r.slot for r in _refs(program.in_tree)} != user:
        raise ExportLoadError("the program's inputs do not match its user-input placeholders")
    roots = set()
    for p in program.user_inputs():
        meta = program.metas.get(p.slot)
        if meta is None:
            raise ExportLoadError(f"user input {p.name} has no shape")
        for size in meta.shape:
            if isinstance(size, SymbolicSize) and len(size.terms) == 1 and len(size.terms[0][0]) == 1:
                roots.add(size.terms[0][0][0])
    used = set()
    for node in program.nodes:
        used |= {s for v in leaves(list(node.args)) if isinstance(v, SymbolicSize) for s in v.symbols}
    for p in program.user_inputs():
        used |= {s for v in program.metas[p.slot].shape if isinstance(v, SymbolicSize) for s in v.symbols}
    unbound = used - roots
    if unbound:
        raise ExportLoadError(f"sizes use the symbols {sorted(unbound)}, which are no input's dimension")


__all__ = ["to_json", "from_json", "FORMAT", "VERSION", "symbolic"]
