"""``ember.jit.save`` and ``load``: a traced (or scripted and called) module as ``ember.export``'s archive."""
from __future__ import annotations

from ..export.archive import load as load_program, save as save_program


def save(m, f, _extra_files: dict | None = None) -> None:
    """Write ``m`` (from ``trace``, ``script`` or ``load``) to ``f``: one zip of program and weights that
    ``ember.jit.load`` and ``ember.export.load`` read without the model's source."""
    exported = getattr(m, "exported_program", None)
    if exported is None:
        raise TypeError(f"ember.jit.save: expected a module from ember.jit.trace, ember.jit.script or ember.jit.load, "
                        f"got {type(m).__name__}; trace it first (ember.jit.trace(model, example_inputs))")
    save_program(exported(), f, extra_files=_extra_files)


def load(f, map_location=None, _extra_files: dict | None = None, _restore_shapes: bool = False):
    """The module ``save`` wrote, its tensors on ``map_location`` (``ember.load``'s argument); nothing from the
    file runs. ``_extra_files`` maps names to fill with the stored contents, as in PyTorch."""
    from .tracing import TracedModule

    exported = load_program(f, extra_files=_extra_files, map_location=map_location)
    return TracedModule(exported, "RecursiveScriptModule")


__all__ = ["save", "load"]
