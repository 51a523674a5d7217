"""The GPU-only part of the cuDNN path: handles, streams, workspaces, plan builds and launches.

Kept to what cannot run without libcudnn and a GPU; everything it is given (specs, graphs, operands) is made
by code CI runs. One handle per device, always set to CuPy's current stream before a launch (Ember's work
runs there); workspaces come from CuPy's allocator, which is the backend's pool, and are freed on the same
stream, so the pool does not hand them out before the launch that uses them has run.
"""
from __future__ import annotations

from .graphs import Plan, describe, finalize
from .specs import ConvSpec


class Runtime:
    def __init__(self, cupy, cudnn) -> None:
        self._cupy, self._cudnn = cupy, cudnn
        self._handles: dict = {}

    def handle(self, device: int):
        found = self._handles.get(device)
        if found is None:
            with self._cupy.cuda.Device(device):
                found = self._handles[device] = self._cudnn.create_handle()
        return found

    def build(self, spec: ConvSpec, device: int, settings: tuple) -> Plan:
        """A built plan for ``spec`` on ``device`` (raises where cuDNN refuses it)."""
        with self._cupy.cuda.Device(device):
            graph, operands = describe(self._cudnn, spec, self.handle(device))
            finalize(self._cudnn, graph, settings)
            return Plan(graph, {name: t.get_uid() for name, t in operands.items()}, graph.get_workspace_size(),
                        tuned=not settings[2])

    def run(self, plan: Plan, operands: dict, device: int) -> None:
        """Launch ``plan`` on the current stream with ``operands`` (name -> contiguous CuPy array)."""
        cupy = self._cupy
        handle = self.handle(device)
        self._cudnn.set_stream(handle, cupy.cuda.get_current_stream().ptr)
        pack = {plan.uids[name]: array.data.ptr for name, array in operands.items()}
        if not plan.tuned:
            self._autotune(plan, pack, handle)
        workspace = cupy.empty(plan.workspace, cupy.uint8) if plan.workspace else None
        plan.graph.execute(pack, None if workspace is None else workspace.data.ptr, handle=handle)

    def _autotune(self, plan: Plan, pack: dict, handle) -> None:
        """``ember.backends.cudnn.benchmark``: time every built plan once (after a warm-up) on these operands
        and keep the fastest, as PyTorch's benchmark mode does on the first call of a configuration."""
        cupy, graph = self._cupy, plan.graph
        best = None
        for index in range(graph.get_execution_plan_count()):
            try:
                size = graph.get_workspace_size_plan_at_index(index)
                workspace = cupy.empty(size, cupy.uint8) if size else None
                pointer = None if workspace is None else workspace.data.ptr
                graph.execute_plan_at_index(pack, pointer, index, handle=handle)
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                start.record()
                graph.execute_plan_at_index(pack, pointer, index, handle=handle)
                end.record()
                end.synchronize()
                elapsed = cupy.cuda.get_elapsed_time(start, end)
            except Exception:  # noqa: BLE001 -- a plan that did not build or cannot run is not a candidate
                continue
            if best is None or elapsed < best[0]:
                best = (elapsed, index, size)
        if best is not None:
            graph.select_plan(best[1])
            plan.workspace = best[2]
        plan.tuned = True
