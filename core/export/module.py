"""The runnable module of an exported program (``ExportedProgram.module()``, ``ember.jit.load``).

It holds the parameters and buffers under their original dotted names (so ``state_dict`` keys match the
model's and ``load_state_dict`` takes the model's), the lifted constants as non-persistent buffers (so that
``.to(device)`` moves them too), and runs the program on every call.
"""
from __future__ import annotations

from ..nn.modules.module import Module
from ..nn.parameter import is_parameter
from .interpreter import run
from .readable import text


class ExportedModule(Module):
    """``forward(*args, **kwargs)`` runs the exported program on this module's state."""

    def __init__(self, program, state_dict: dict, constants: dict, non_persistent: set) -> None:
        super().__init__()
        self._program = program
        self._lifted_constants = frozenset(name for name in constants if name not in non_persistent)
        for name, tensor in state_dict.items():
            _attach(self, name, tensor, persistent=True)
        for name, tensor in constants.items():
            _attach(self, name, tensor, persistent=False)

    def forward(self, *args, **kwargs):
        state = {p.target: _lookup(self, p.target) for p in self._program.placeholders if p.target is not None}
        return run(self._program, state, args, kwargs)

    @property
    def graph(self):
        return self._program

    @property
    def code(self) -> str:
        return text(self._program)

    def print_readable(self, print_output: bool = True, **options) -> str:
        from .program import GraphText

        return GraphText(self._program).print_readable(print_output, **options)


def _attach(root: Module, name: str, tensor, persistent: bool) -> None:
    """Register ``tensor`` at the dotted ``name``, making empty modules for the path on the way."""
    *path, leaf = name.split(".")
    owner = root
    for part in path:
        child = owner._modules.get(part)
        if child is None:
            child = Module()
            owner.add_module(part, child)
        owner = child
    if is_parameter(tensor):
        owner.register_parameter(leaf, tensor)
    else:
        owner.register_buffer(leaf, tensor, persistent=persistent)


def _lookup(root: Module, name: str):
    owner = root
    *path, leaf = name.split(".")
    for part in path:
        owner = owner._modules[part]
    found = owner._parameters.get(leaf)
    return found if found is not None else owner._buffers[leaf]


__all__ = ["ExportedModule"]
