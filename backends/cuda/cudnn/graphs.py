"""cuDNN graphs for convolution specs (``specs.py``), built once per key, and the keys cuDNN refused.

``describe`` writes a spec as a frontend graph (``cudnn.pygraph``: plain Python, no library call), so CI checks
it. ``finalize`` is where the library decides (validation, heuristics, support, plan build), and needs
libcudnn and a GPU. ``Planner`` caches both outcomes by the spec's key: a built ``Plan``, or the reason it was
refused, so a configuration cuDNN cannot take is asked once and then goes straight to the fallback.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

from ember.dispatch import FLAGS

from .specs import DATA_TYPES, ConvSpec, contiguous_strides


@dataclass(frozen=True)
class Settings:
    """The switches a plan depends on (``ember.backends.cudnn``; ``use_deterministic_algorithms`` counts too)."""

    allow_tf32: bool
    deterministic: bool
    benchmark: bool

    @staticmethod
    def current() -> "Settings":
        return Settings(FLAGS.cudnn_allow_tf32, FLAGS.cudnn_deterministic or FLAGS.deterministic,
                        FLAGS.cudnn_benchmark)

    def for_dtype(self, dtype: str) -> tuple:
        """The part of the settings that changes the plan of ``dtype`` (TF32 only matters for float32)."""
        return (self.allow_tf32 and dtype == "float32", self.deterministic, self.benchmark)


@dataclass
class Plan:
    """A built graph and the uid of each operand (``x``, ``w``, ``y``) in its variant pack."""

    graph: Any
    uids: dict
    workspace: int = 0
    tuned: bool = False  # benchmark mode: the fastest plan has been picked by timing


def data_types(cudnn, dtype: str) -> tuple:
    """(io data type, compute data type) of ``dtype``, as cuDNN's enums."""
    io, compute = DATA_TYPES[dtype]
    return getattr(cudnn.data_type, io), getattr(cudnn.data_type, compute)


def describe(cudnn, spec: ConvSpec, handle=None) -> tuple:
    """(graph, operands): the spec as a frontend graph, with NCHW-contiguous tensors named x, w and y."""
    io, compute = data_types(cudnn, spec.dtype)
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=compute, compute_data_type=compute, handle=handle)

    def operand(name: str, dims: tuple):
        return graph.tensor(name=name, dim=list(dims), stride=list(contiguous_strides(dims)), data_type=io)

    attributes = {"pre_padding": list(spec.pre), "post_padding": list(spec.post), "stride": list(spec.stride),
                  "dilation": list(spec.dilation)}
    if spec.kind == "fprop":
        x, w = operand("x", spec.x), operand("w", spec.w)
        y = graph.conv_fprop(image=x, weight=w, compute_data_type=compute, **attributes)
        if list(y.get_dim()) != list(spec.y):  # the frontend infers the response's dims: they must be ours
            raise ValueError(f"cuDNN infers a response of {y.get_dim()} for {spec}, expected {list(spec.y)}")
        out, dims = y, spec.y
    elif spec.kind == "dgrad":
        y, w = operand("y", spec.y), operand("w", spec.w)
        x = graph.conv_dgrad(loss=y, filter=w, compute_data_type=compute, out_dims=list(spec.x), **attributes)
        out, dims = x, spec.x
    elif spec.kind == "wgrad":
        x, y = operand("x", spec.x), operand("y", spec.y)
        w = graph.conv_wgrad(image=x, loss=y, compute_data_type=compute, out_dims=list(spec.w), **attributes)
        out, dims = w, spec.w
    else:
        raise ValueError(f"unknown convolution kind {spec.kind!r}")
    out.set_dim(list(dims)).set_stride(list(contiguous_strides(dims))).set_data_type(io).set_output(True)
    return graph, {"x": x, "w": w, "y": y}


def finalize(cudnn, graph, settings: tuple) -> None:
    """Validate, plan and build ``graph`` with the plans the settings allow, as PyTorch filters them: never
    engines that down-convert inputs, no tensor cores for float32 without TF32, no nondeterministic engines
    when determinism is asked for. Benchmark mode builds every plan (``runtime.autotune`` picks one)."""
    allow_tf32, deterministic, benchmark = settings
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    notes = [cudnn.numerical_note.DOWN_CONVERT_INPUTS]
    io = graph.context.io_data_type
    if io == cudnn.data_type.FLOAT and not allow_tf32:
        notes.append(cudnn.numerical_note.TENSOR_CORE)
    if deterministic:
        notes.append(cudnn.numerical_note.NONDETERMINISTIC)
    graph.deselect_numeric_notes(notes)
    graph.check_support()
    graph.build_plans(cudnn.build_plan_policy.ALL if benchmark else cudnn.build_plan_policy.HEURISTICS_CHOICE)


@dataclass
class Planner:
    """Plans by key, and refusals by key with their reason.

    ``build(spec, device, settings)`` makes a ``Plan`` or raises; whatever it raises (the frontend's
    ``cudnnGraphNotSupportedError``, a validation error, a missing library) marks the key refused, so the caller
    uses its fallback from then on for that key.
    """

    build: Callable[[ConvSpec, int, tuple], Plan]
    plans: dict = field(default_factory=dict)
    refused: dict = field(default_factory=dict)

    def plan(self, spec: ConvSpec, device: int, settings: Settings | None = None) -> Plan | None:
        settings = (settings or Settings.current()).for_dtype(spec.dtype)
        key = spec.key(device, settings)
        found = self.plans.get(key)
        if found is not None or key in self.refused:
            return found
        try:
            found = self.plans[key] = self.build(spec, device, settings)
        except Exception as exc:  # noqa: BLE001 -- any failure to build means: use the fallback for this key
            self.refused[key] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return found

    def execute(self, run: Callable, plan: Plan, operands: dict, spec, device: int, what: str) -> bool:
        """``run(plan, operands, device)``; False where it raised: the key is refused from then on (with a warning
        once, naming ``what``), so the caller computes this call, and later ones, with its fallback."""
        try:
            run(plan, operands, device)
        except Exception as exc:  # noqa: BLE001 -- a built plan that cannot run: this key takes the fallback
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            self.refuse(spec, device, reason)
            warnings.warn(f"{what} failed for {spec}; using the fallback from now on ({reason})", RuntimeWarning,
                          stacklevel=4)
            return False
        return True

    def refuse(self, spec: ConvSpec, device: int, reason: str, settings: Settings | None = None) -> None:
        """Mark a key refused after the fact (a plan that failed when it ran)."""
        key = spec.key(device, (settings or Settings.current()).for_dtype(spec.dtype))
        self.plans.pop(key, None)
        self.refused[key] = reason
