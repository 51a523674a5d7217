"""``ember.ops``: every op of the schema as an object, as PyTorch reaches its ops through ``torch.ops``.

``ember.ops.mylib.bias_gelu(x, b)`` calls the custom op ``"mylib::bias_gelu"`` through the dispatcher, as
``ember.library.custom_op``'s object does; ``ember.ops.linear`` (also ``ember.ops.aten.linear``) is Ember's own
``linear``, as ``ember.export`` prints its programs. ``.default`` is the same op (Ember has no overloads), and
``.op`` its ``OpDef``. Names are looked up in ``OPS`` on every access, so an op removed (its library destroyed)
is gone from here too. A custom namespace may not be named like one of Ember's ops (``Definition`` refuses it).
"""
from __future__ import annotations

from ..dispatch.execution.dispatcher import call
from ..dispatch.schema import OPS, OpDef


class OpOverloadPacket:
    """One custom op as ``ember.ops.<namespace>.<name>`` (PyTorch's OpOverloadPacket and OpOverload in one)."""

    __slots__ = ("op",)

    def __init__(self, op: OpDef) -> None:
        self.op = op

    def __call__(self, *args, **kwargs):
        return call(self.op, args, kwargs)

    @property
    def default(self) -> "OpOverloadPacket":
        """The op's one overload: itself."""
        return self

    def overloads(self) -> list[str]:
        return ["default"]

    @property
    def __name__(self) -> str:
        return self.op.name.partition("::")[2]

    @property
    def _qualified_op_name(self) -> str:
        return self.op.name

    @property
    def _schema(self) -> str:
        """A custom op's schema in PyTorch's language, with its name (``mylib::op(Tensor x) -> Tensor``); an
        Ember op's signature."""
        from .definition import DEFINITIONS
        definition = DEFINITIONS.get(self.op.name)
        return self.op.name + definition.schema.signature if definition is not None else self.op.signature

    def __repr__(self) -> str:
        return f"ember.ops.{self.op.name.replace('::', '.')}"

    def __eq__(self, other) -> bool:
        return isinstance(other, OpOverloadPacket) and other.op is self.op

    def __hash__(self) -> int:
        return hash(self.op.name)


#: the namespace of Ember's own ops, as PyTorch's are ``torch.ops.aten``
BUILTIN_NAMESPACE = "aten"


class OpNamespace:
    """``ember.ops.<namespace>``: its custom ops as attributes (``aten``: Ember's own ops)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _qualified(self, name: str) -> str:
        return name if self._name == BUILTIN_NAMESPACE else f"{self._name}::{name}"

    def __getattr__(self, name: str) -> OpOverloadPacket:
        op = OPS.get(self._qualified(name))
        if op is None or name.startswith("__") or (self._name == BUILTIN_NAMESPACE and op.category == "custom"):
            raise AttributeError(f"ember.ops.{self._name} has no op '{name}'"
                                 + (f" (its ops: {', '.join(self.__dir__()) or 'none'})"
                                    if self._name != BUILTIN_NAMESPACE else ""))
        return OpOverloadPacket(op)

    def __dir__(self) -> list[str]:
        if self._name == BUILTIN_NAMESPACE:
            return sorted(op.name for op in OPS.values() if op.category != "custom")
        prefix = f"{self._name}::"
        return sorted(n[len(prefix):] for n in OPS if n.startswith(prefix))

    def __repr__(self) -> str:
        return f"ember.ops.{self._name}"


class Ops:
    """``ember.ops``: Ember's ops by name, and one ``OpNamespace`` per namespace holding custom ops."""

    def __getattr__(self, name: str) -> OpOverloadPacket | OpNamespace:
        op = OPS.get(name)
        if op is not None:
            return OpOverloadPacket(op)
        if name == BUILTIN_NAMESPACE or (not name.startswith("__") and any(n.startswith(f"{name}::") for n in OPS)):
            return OpNamespace(name)
        raise AttributeError(f"ember.ops has no op or namespace '{name}' (custom op namespaces now: "
                             f"{', '.join(sorted({n.partition('::')[0] for n in OPS if '::' in n})) or 'none'})")

    def __dir__(self) -> list[str]:
        return sorted({n.partition("::")[0] for n in OPS if "::" in n} | {BUILTIN_NAMESPACE}
                      | {op.name for op in OPS.values() if op.category != "custom"})

    def __repr__(self) -> str:
        return "ember.ops"


ops = Ops()

__all__ = ["ops", "Ops", "OpNamespace", "OpOverloadPacket", "BUILTIN_NAMESPACE"]
