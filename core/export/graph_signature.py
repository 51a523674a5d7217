"""What an exported program's inputs and outputs are (PyTorch's ``ExportGraphSignature``): which placeholders are
the user's inputs and which the model's parameters, buffers and constants, and which outputs the user's."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto

from ..compiler.graph import leaves
from ..dispatch.schema import OPS
from .graph import ProgramGraph, Ref


class InputKind(Enum):
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()
    CUSTOM_OBJ = auto()
    TOKEN = auto()


class OutputKind(Enum):
    USER_OUTPUT = auto()
    LOSS_OUTPUT = auto()
    BUFFER_MUTATION = auto()
    GRADIENT_TO_PARAMETER = auto()
    GRADIENT_TO_USER_INPUT = auto()
    USER_INPUT_MUTATION = auto()
    TOKEN = auto()


@dataclass(frozen=True)
class TensorArgument:
    name: str


@dataclass(frozen=True)
class InputSpec:
    kind: InputKind
    arg: TensorArgument
    target: str | None
    persistent: bool | None = None


@dataclass(frozen=True)
class OutputSpec:
    kind: OutputKind
    arg: TensorArgument
    target: str | None


_KINDS = {"user_input": InputKind.USER_INPUT, "parameter": InputKind.PARAMETER, "buffer": InputKind.BUFFER,
          "constant": InputKind.CONSTANT_TENSOR}


class ExportGraphSignature:
    """The placeholders and outputs of an exported program, by kind."""

    def __init__(self, input_specs: list, output_specs: list) -> None:
        self.input_specs = input_specs
        self.output_specs = output_specs

    @classmethod
    def of(cls, program: ProgramGraph) -> "ExportGraphSignature":
        inputs = [InputSpec(_KINDS[p.kind], TensorArgument(p.name), p.target,
                            p.persistent if p.kind == "buffer" else None) for p in program.placeholders]
        outputs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(program.names.get(r.slot, f"%{r.slot}")), None)
                   for r in leaves(program.result) if isinstance(r, Ref)]
        buffers = {p.slot: p for p in program.placeholders if p.kind == "buffer"}
        for node in program.nodes:
            op = OPS.get(node.target)
            if op is not None and op.mutates and node.outputs and node.outputs[0] in buffers:
                placeholder = buffers[node.outputs[0]]
                outputs.append(OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument(node.name), placeholder.target))
        return cls(inputs, outputs)

    def _names(self, kind) -> list:
        return [s.arg.name for s in self.input_specs if s.kind == kind]

    @property
    def parameters(self) -> list:
        return [s.target for s in self.input_specs if s.kind == InputKind.PARAMETER]

    @property
    def buffers(self) -> list:
        return [s.target for s in self.input_specs if s.kind == InputKind.BUFFER]

    @property
    def non_persistent_buffers(self) -> list:
        return [s.target for s in self.input_specs if s.kind == InputKind.BUFFER and not s.persistent]

    @property
    def lifted_tensor_constants(self) -> list:
        return [s.target for s in self.input_specs if s.kind == InputKind.CONSTANT_TENSOR]

    @property
    def user_inputs(self) -> list:
        return self._names(InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> list:
        return [s.arg.name for s in self.output_specs if s.kind == OutputKind.USER_OUTPUT]

    @property
    def inputs_to_parameters(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.BUFFER}

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.CONSTANT_TENSOR}

    @property
    def buffers_to_mutate(self) -> dict:
        return {s.arg.name: s.target for s in self.output_specs if s.kind == OutputKind.BUFFER_MUTATION}

    def __str__(self) -> str:
        lines = ["# inputs"]
        for s in self.input_specs:
            extra = f" target={s.target!r}" if s.target else ""
            extra += f" persistent={s.persistent}" if s.persistent is not None else ""
            lines.append(f"{s.arg.name}: {s.kind.name}{extra}")
        lines += ["", "# outputs"]
        for s in self.output_specs:
            lines.append(f"{s.arg.name}: {s.kind.name}" + (f" target={s.target!r}" if s.target else ""))
        return "\n".join(lines) + "\n"

    __repr__ = __str__


__all__ = ["ExportGraphSignature", "InputKind", "OutputKind", "InputSpec", "OutputSpec", "TensorArgument"]
