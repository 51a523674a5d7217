"""PyTorch's operator declarations, read from the ``native_functions.yaml`` inside the torch wheel.

Each ``- func:`` entry is one overload: ``cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor``
with its ``variants`` (function, method), ``python_module`` (``linalg``, ``special``, ``nn``, ...) and
``tags``. The file is read line by line (its entries are flat), so no YAML library is needed.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ...dispatch.schema.opdef import split_top_level

_FUNC = re.compile(r"^(?P<name>[\w]+)(?:\.(?P<overload>\w+))?\((?P<args>.*)\)\s*->\s*(?P<returns>.*)$")
_ANNOTATION = re.compile(r"\([a-z]!?(?:\s*->\s*[a-z*]+)?\)")  # Tensor(a!) -> Tensor


@dataclass(frozen=True)
class Arg:
    """One declared argument: ``int[1]? dim=None`` is type ``int[1]?``, name ``dim``, default ``None``."""
    type: str
    name: str
    default: str | None = None  # the declaration's text; None: required
    kw_only: bool = False
    mutated: bool = False  # ``Tensor(a!)``: the argument is written to

    @property
    def optional(self) -> bool:
        return self.type.endswith("?")

    @property
    def base_type(self) -> str:
        """The type without ``?`` and without a fixed length: ``int[1]?`` -> ``int[]``, ``SymInt`` -> ``int``."""
        base = re.sub(r"\[\d+\]", "[]", self.type.rstrip("?")).replace("SymInt", "int")
        return base


@dataclass(frozen=True)
class Overload:
    name: str
    overload: str
    args: tuple[Arg, ...]
    returns: str
    variants: frozenset[str] = frozenset({"function"})
    python_module: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_out(self) -> bool:
        return any(a.mutated and a.kw_only for a in self.args)

    @property
    def is_inplace(self) -> bool:
        return self.name.endswith("_") and not self.name.endswith("__")

    @property
    def random(self) -> bool:
        return "nondeterministic_seeded" in self.tags

    def __str__(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name


def parse_signature(text: str) -> tuple[str, str, tuple[Arg, ...], str]:
    match = _FUNC.match(text.strip())
    if match is None:
        raise ValueError(f"not an operator declaration: {text!r}")
    args, kw_only = [], False
    for part in split_top_level(match["args"]):
        if part == "*":
            kw_only = True
            continue
        mutated = "!" in part.split(" ")[0]
        declared = _ANNOTATION.sub("", part)
        left, _, default = declared.partition("=")
        type_, name = left.rsplit(" ", 1)
        args.append(Arg(type_.strip(), name.strip(), default.strip() if _ else None, kw_only, mutated))
    return match["name"], match["overload"] or "", tuple(args), match["returns"].strip()


def yaml_path() -> str:
    import torchgen

    return os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")


@lru_cache(maxsize=None)
def overloads(path: str | None = None) -> tuple[Overload, ...]:
    """Every public (no leading underscore) overload the file declares, in its order."""
    found, entry = [], None

    def close():
        if entry is not None and not entry["func"][0].startswith("_"):
            name, overload, args, returns = entry["func"]
            found.append(Overload(name, overload, args, returns, entry["variants"], entry["python_module"],
                                  entry["tags"]))

    with open(path or yaml_path()) as lines:
        for line in lines:
            if line.startswith("- func:"):
                close()
                entry = {"func": parse_signature(line[len("- func:"):]), "variants": frozenset({"function"}),
                         "python_module": None, "tags": frozenset()}
            elif entry is not None and line.startswith("  variants:"):
                entry["variants"] = frozenset(v.strip() for v in line.split(":", 1)[1].split(","))
            elif entry is not None and line.startswith("  python_module:"):
                entry["python_module"] = line.split(":", 1)[1].strip()
            elif entry is not None and line.startswith("  tags:"):
                text = line.split(":", 1)[1].strip().strip("[]")
                entry["tags"] = frozenset(t.strip() for t in text.split(",") if t.strip())
    close()
    return tuple(found)
