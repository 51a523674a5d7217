"""``custom_op``: a Python function made an op of the schema, and the ``CustomOpDef`` it returns.

``@ember.library.custom_op("mylib::op", mutates_args=())`` infers the op's schema from the function's type hints
(or takes ``schema=``), declares the op (``Definition``) and registers the function as its kernel for
``device_types`` (every device type when None). The ``CustomOpDef`` calls the op through the dispatcher and
carries PyTorch's registration methods; defining the same name again with ``custom_op`` replaces the op, as in
PyTorch (a notebook cell run twice). ``_destroy()`` removes the op.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence

from ..dispatch.execution.dispatcher import call
from ..dispatch.schema import OpDef
from . import registration
from .definition import DEFINITIONS, Definition, check_namespace, split_qualname
from .namespace import OpOverloadPacket
from .schema import SchemaError, infer_schema, parse

#: every CustomOpDef alive, by qualified name (PyTorch keeps its custom ops registered for the process)
OPDEFS: dict[str, "CustomOpDef"] = {}


class CustomOpDef:
    """A custom op made by ``custom_op`` (PyTorch's ``torch._library.custom_ops.CustomOpDef``): call it like the
    function it was made from; its ``register_*`` methods complete it."""

    def __init__(self, definition: Definition, fn: Callable) -> None:
        self._definition = definition
        self._init_fn = fn
        self._namespace, self._name = split_qualname(definition.qualname)
        self.__name__ = self._name
        self.__doc__ = fn.__doc__

    @property
    def _qualname(self) -> str:
        return self._definition.qualname

    @property
    def _schema(self) -> str:
        """The schema in PyTorch's language, without the name: ``(Tensor x) -> Tensor``."""
        return self._definition.schema.signature

    @property
    def op(self) -> OpDef:
        """The op's schema entry (``ember.dispatch.OPS[qualname]``)."""
        return self._definition.op

    @property
    def _opoverload(self) -> OpOverloadPacket:
        return OpOverloadPacket(self._definition.op)

    def __call__(self, *args, **kwargs):
        return call(self._definition.op, args, kwargs)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    # -- registrations (PyTorch's methods) -----------------------------------------------------------------------
    def register_kernel(self, device_types: str | Sequence[str] | None, fn: Callable | None = None, /):
        """The implementation for ``device_types``; a decorator without ``fn``."""
        return registration.register_kernel(self, device_types, fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """The fake function (output shapes, dtypes and devices from fake inputs); a decorator."""
        registration.register_fake(self, fn)
        return fn

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        registration.register_autograd(self, backward, setup_context=setup_context)

    def register_autocast(self, device_type: str, cast_inputs, /):
        registration.register_autocast(self, device_type, cast_inputs)

    def register_vmap(self, func: Callable | None = None, /):
        return registration.register_vmap(self, func)

    def register_torch_dispatch(self, torch_dispatch_class: type, fn: Callable | None = None, /):
        return registration.register_torch_dispatch(self, torch_dispatch_class, fn)

    def register_onnx(self, lowering=None, /):
        """Ember's: how ``ember.onnx.export`` writes the op (see ``ember.library.register_onnx``)."""
        return registration.register_onnx(self, lowering)

    @contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True) -> Iterator[None]:
        """Within the block, the kernel registered for ``device_type`` is off (``enabled=False``: the function
        the op was made from runs instead) or on again."""
        definition = self._definition
        was_disabled = device_type in definition.disabled
        (definition.disabled.discard if enabled else definition.disabled.add)(device_type)
        definition.refresh()
        try:
            yield
        finally:
            (definition.disabled.add if was_disabled else definition.disabled.discard)(device_type)
            definition.refresh()

    def _destroy(self) -> None:
        """Remove the op (from OPS and ``ember.ops``): tests leave the schema as they found it."""
        if OPDEFS.get(self._qualname) is self:
            del OPDEFS[self._qualname]
        self._definition.remove()


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: str | Iterable[str],
              device_types: str | Sequence[str] | None = None, schema: str | None = None, tags=None):
    """Make ``fn`` (a function on Ember tensors with type hints) the custom op ``name`` ("namespace::name") and
    its implementation for ``device_types`` (every device type when None). ``mutates_args`` names the arguments
    it writes into (it then returns None), or is ``"unknown"``. A decorator without ``fn``."""
    check_namespace(name)

    def inner(fn: Callable) -> CustomOpDef:
        if schema is None:
            try:
                text = infer_schema(fn, mutates_args=mutates_args)
            except SchemaError as error:
                raise SchemaError(f"{name}: {error}") from None
            parsed = parse(text, name)
        else:
            parsed = parse(schema, name)
            declared = set(parsed.mutated)
            if mutates_args != "unknown" and declared != set(mutates_args):
                raise ValueError(f"Attempted to create a custom op with `mutates_args={mutates_args}` and "
                                 f"`schema={schema}. The schema suggests that the op mutates {declared}which is "
                                 f"different from what was provided to us in `mutates_args`. Please make these "
                                 f"consistent.")
        previous = OPDEFS.get(name)
        if previous is not None:  # defined again: the new definition replaces it, as in PyTorch
            previous._destroy()
        elif name in DEFINITIONS:
            raise RuntimeError(f"{name} is already defined by a Library; destroy that library first")
        code = getattr(fn, "__code__", None)
        source = (code.co_filename, code.co_firstlineno) if code is not None else None
        result = CustomOpDef(Definition(name, parsed, source, (fn.__doc__ or "").strip()), fn)
        result._definition.init_fn = fn
        OPDEFS[name] = result
        result.register_kernel(device_types, fn)
        return result

    return inner if fn is None else inner(fn)


__all__ = ["CustomOpDef", "custom_op", "OPDEFS"]
