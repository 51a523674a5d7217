"""``ExportedProgram``: a captured graph of schema ops, its signature, and the state it reads.

What ``ember.export.export`` returns and ``ember.export.load`` rebuilds. It is not called itself (as in PyTorch):
``module()`` gives the runnable module; ``run_decompositions()`` the same program down to primitive ops.
"""
from __future__ import annotations

from typing import Any

from ..dispatch.schema import OPS
from .graph import ProgramGraph
from .module import ExportedModule
from .readable import text
from .graph_signature import ExportGraphSignature


class ValueRange:
    """The sizes a dynamic dimension takes: ``lower`` to ``upper`` (None: unbounded)."""

    def __init__(self, lower: int, upper: int | None) -> None:
        self.lower, self.upper = lower, upper

    def __repr__(self) -> str:
        return f"VR[{self.lower}, {'int_oo' if self.upper is None else self.upper}]"

    def __eq__(self, other) -> bool:
        return isinstance(other, ValueRange) and (self.lower, self.upper) == (other.lower, other.upper)

    def __hash__(self) -> int:
        return hash((self.lower, self.upper))


class GraphText:
    """``exported_program.graph_module``: the graph as text (``print_readable``, ``code``)."""

    def __init__(self, program: ProgramGraph) -> None:
        self.graph = program

    @property
    def code(self) -> str:
        return text(self.graph)

    def print_readable(self, print_output: bool = True, **options) -> str:
        readable = text(self.graph)
        if print_output:
            print(readable)
        return readable


class ExportedProgram:
    """A model's forward as a graph of schema ops, with the parameters, buffers and constants it reads."""

    def __init__(self, program: ProgramGraph, state_dict: dict, constants: dict, example_inputs: Any = None) -> None:
        self._program = program
        self.state_dict = state_dict
        self.constants = constants
        self.example_inputs = example_inputs
        self.graph_signature = ExportGraphSignature.of(program)

    @property
    def graph(self) -> ProgramGraph:
        return self._program

    @property
    def graph_module(self) -> GraphText:
        return GraphText(self._program)

    @property
    def range_constraints(self) -> dict:
        return {name: ValueRange(low, high) for name, (low, high) in self._program.ranges.items()}

    def module(self) -> ExportedModule:
        """A module that runs the program on this program's state (the same tensors, not copies)."""
        return ExportedModule(self._program, self.state_dict, self.constants,
                              set(self.graph_signature.non_persistent_buffers))

    def run_decompositions(self, decomp_table: dict | None = None, decompose_custom_triton_ops: bool = False
                           ) -> "ExportedProgram":
        """The program with every composite op in ``decomp_table`` (default: all of them, down to primitives)
        replaced by the ops its definition runs; a table entry may map an op to a function of the user's that
        replaces it instead (see ``default_decompositions``)."""
        from .exporting import redo

        return redo(self, DecompositionTable.default() if decomp_table is None else DecompositionTable(decomp_table))

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def named_parameters(self):
        for name in self.graph_signature.parameters:
            yield name, self.state_dict[name]

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def named_buffers(self):
        for name in self.graph_signature.buffers:
            yield name, self.state_dict[name] if name in self.state_dict else self.constants[name]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def __str__(self) -> str:
        body = "\n".join("    " + line if line else "" for line in text(self._program).splitlines())
        return (f"ExportedProgram:\n{body}\nGraph signature: \n{self.graph_signature}\n"
                f"Range constraints: {self.range_constraints}\n")

    __repr__ = __str__


class DecompositionTable(dict):
    """Op name -> how ``run_decompositions`` replaces the op: its own definition (the default) or a function.

    Keys may be given as names, ``ember.ops`` functions or ``OpDef``s; ``del table[ember.ops.linear]`` keeps
    ``linear`` whole (PyTorch's ``default_decompositions()``, edited)."""

    def __init__(self, entries=()) -> None:
        super().__init__()
        for key, value in dict(entries).items():
            self[key] = value

    @classmethod
    def default(cls) -> "DecompositionTable":
        return cls({op.name: op.composite for op in OPS.values() if op.kind == "composite"})

    @staticmethod
    def _name(key) -> str:
        op = getattr(key, "op", key)
        name = getattr(op, "name", op)
        if not isinstance(name, str) or name not in OPS:
            raise KeyError(f"decomposition table: {key!r} is not an op of Ember's schema")
        return name

    def __setitem__(self, key, value) -> None:
        name = self._name(key)
        if not callable(value):
            raise TypeError(f"decomposition table: the entry for '{name}' must be callable, not {value!r}")
        super().__setitem__(name, value)

    def __getitem__(self, key):
        return super().__getitem__(self._name(key))

    def __delitem__(self, key) -> None:
        super().__delitem__(self._name(key))

    def __contains__(self, key) -> bool:
        try:
            return super().__contains__(self._name(key))
        except KeyError:
            return False

    def pop(self, key, *default):
        return super().pop(self._name(key), *default)

    def overrides(self) -> dict:
        """name -> function, for the entries that replace an op by something other than its own definition."""
        return {name: fn for name, fn in self.items() if fn is not OPS[name].composite}


def default_decompositions() -> DecompositionTable:
    """Every composite op and its definition: what ``run_decompositions()`` decomposes."""
    return DecompositionTable.default()


__all__ = ["ExportedProgram", "ValueRange", "GraphText", "DecompositionTable", "default_decompositions"]
