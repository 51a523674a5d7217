"""``explain``: what ``ember.compile`` captures from a call, and where and why it cannot (PyTorch's
``torch._dynamo.explain``). The call runs once, for real, under a fresh capture."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .graph import OpNode


@dataclass
class BreakReason:
    """One graph break: what happened and the user's source line."""
    reason: str

    def __str__(self) -> str:
        return self.reason


@dataclass
class ExplainOutput:
    """PyTorch's fields (``graphs``, ``graph_count``, ``graph_break_count``, ``break_reasons``, ``op_count``,
    ``ops_per_graph``, ``out_guards``, ``compile_times``) plus Ember's: kernel launches per replay of each graph
    after fusion, fused groups, and capture-and-build seconds."""
    graphs: list = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list = field(default_factory=list)
    out_guards: list = field(default_factory=list)
    compile_times: str = ""
    kernels_per_graph: list = field(default_factory=list)
    #: ``mode="reduce-overhead"``: why programs are not replayed as device graphs where they are not (fallbacks
    #: to the default mode also appear in ``break_reasons``; a backend without device graphs only here)
    cudagraph_skip_reasons: list = field(default_factory=list)
    fused_groups_per_graph: list = field(default_factory=list)
    compile_seconds: float = 0.0
    result: Any = None

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", f"Kernels per replay (after fusion): {self.kernels_per_graph}",
                 "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons)]
        notes = [r for r in self.cudagraph_skip_reasons if r not in {str(b) for b in self.break_reasons}]
        if notes:
            lines += ["Device Graphs Not Used:"] + [f"  {r}" for r in notes]
        lines.append(f"Compile Time: {self.compile_seconds:.3f} s")
        return "\n".join(lines)


def explain(fn: Callable, *extra_args, **extra_kwargs) -> Callable[..., ExplainOutput]:
    """``explain(fn)(*args, **kwargs)``: run ``fn`` once under a capture and describe it."""
    from .api import CompiledFunction
    from ..nn.modules.module import Module
    if extra_args or extra_kwargs:
        return explain(fn)(*extra_args, **extra_kwargs)
    compiled_before = fn._compiled_call if hasattr(fn, "_orig_mod") else getattr(fn, "_ember_compiled", None)
    mode = getattr(compiled_before, "mode", None)  # an ember.compile'd callable: explain it in its own mode
    if hasattr(fn, "_orig_mod"):
        fn = fn._orig_mod
    target = fn.__call__ if isinstance(fn, Module) else getattr(fn, "__wrapped__", fn)

    def run(*args, **kwargs) -> ExplainOutput:
        compiled = CompiledFunction(target, mode=mode)
        out = ExplainOutput(result=compiled(*args, **kwargs))
        for graph, entry, seconds in compiled.captures:
            out.compile_seconds += seconds
            out.break_reasons += [BreakReason(r) for r in graph.breaks]
            if entry is None:  # the graphs Dynamo would make: the op calls between breaks
                pieces: list[list[str]] = [[]]
                for step in graph.steps:
                    if isinstance(step, OpNode):
                        pieces[-1].append(step.op.name)
                    if getattr(step, "_break_after", False):
                        pieces.append([])
                out.ops_per_graph += [p for p in pieces if p]
                continue
            skips = list(getattr(entry, "cudagraph_skips", ()))
            out.break_reasons += [BreakReason(r) for r in skips]
            out.cudagraph_skip_reasons += skips + list(getattr(entry, "cudagraph_notes", ()))
            for program in entry.programs:
                out.graphs.append(program)
                out.ops_per_graph.append([s.op.name for s in program.steps_captured])
                out.kernels_per_graph.append(program.kernels)
                out.fused_groups_per_graph.append(program.fused_groups)
        out.graph_count = len(out.ops_per_graph)
        out.graph_break_count = len(out.break_reasons)
        out.op_count = sum(map(len, out.ops_per_graph))
        out.out_guards = ["arguments: shape, dtype, device, requires_grad", "grad mode, default dtype, autocast",
                          "modules: identity of parameters, training flags; parameters: requires_grad, grad set"]
        out.compile_times = f"capture and build: {out.compile_seconds:.3f} s"
        return out
    return run


__all__ = ["explain", "ExplainOutput", "BreakReason"]
