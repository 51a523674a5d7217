"""THE Tensor surface: every Tensor attribute and torch-level name that is not the class's own metadata, in
one table, and ``install()``, the only code that writes them.

Where a name goes:
- it computes on values: a schema op (``core/dispatch/ops``); its method, in-place method and function are
  generated (``generated``, ``ember.functions``);
- it is PyTorch's other name for an op: an entry of ``ember.aliases.ALIASES``;
- anything else (metadata, conversions, Python protocols, methods whose PyTorch form differs from their
  op's): a function in the topic module of this package, listed once in ``_hand_written()`` below.
A name the table lists is never generated, so each attribute has exactly one writer and one definition.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from .. import accelerator, comparison, creation, functions, legacy_types
from ..cuda import streams as cuda_streams
from ..aliases import method_function, positive
from ..autograd import tensor_methods as autograd_methods
from ..dispatch.contract import flags
from ..linalg import legacy as linalg_legacy
from ..nn.functional.dropout import TORCH_FUNCTIONS as DROPOUT_FUNCTIONS
from . import Tensor, callables, conversion, creation_methods, facts, generated, indexing, inplace, op_forms
from . import complex_parts, protocols, sparse_methods, transposes
from .numpy_names import accept_numpy_names_in, accepting_numpy_names

Kind = Literal["method", "property", "function", "both"]


@dataclass(frozen=True)
class Entry:
    """One name: what implements it, and whether it is a Tensor method, a Tensor property, a torch-level
    function, or both a method and a function (``x.is_nonzero()`` and ``ember.is_nonzero(x)``)."""

    implementation: Any
    kind: Kind


def _entries(kind: Kind, implementations: dict[str, Any]) -> dict[str, Entry]:
    return {name: Entry(implementation, kind) for name, implementation in implementations.items()}


def _hand_written() -> dict[str, Entry]:
    """Every hand-written name, by topic. A name listed twice is an error (``_merge``)."""
    return _merge(
        _entries("method", {  # conversion
            "numpy": conversion.numpy, "__array__": conversion.__array__, "__dlpack__": conversion.__dlpack__,
            "__dlpack_device__": conversion.__dlpack_device__, "item": conversion.item, "tolist": conversion.tolist,
            "__bool__": conversion.__bool__, "__float__": conversion.__float__, "__int__": conversion.__int__,
            "__complex__": conversion.__complex__, "__index__": conversion.__index__, "to": conversion.to,
            "cpu": conversion.cpu, "cuda": conversion.cuda,
            "type": conversion.legacy_type, "type_as": conversion.type_as, "contiguous": conversion.contiguous,
            "pin_memory": conversion.pin_memory, **conversion.DTYPE_METHODS}),
        _entries("method", {  # creation
            "__new__": staticmethod(creation_methods.legacy_constructor), "new": creation_methods.new,
            "new_zeros": creation_methods.new_zeros, "new_ones": creation_methods.new_ones,
            "new_empty": creation_methods.new_empty, "new_full": creation_methods.new_full,
            "new_tensor": creation_methods.new_tensor, "new_empty_strided": creation_methods.new_empty_strided}),
        _entries("method", {  # facts
            "ndimension": facts.ndimension, "is_set_to": facts.is_set_to, "data_ptr": facts.data_ptr,
            "const_data_ptr": facts.const_data_ptr, "storage_offset": facts.storage_offset,
            "is_pinned": facts.is_pinned, "dim_order": facts.dim_order}),
        _entries("property", {
            "output_nr": facts.output_nr, "nbytes": facts.nbytes, "itemsize": facts.itemsize, "is_cpu": facts.is_cpu,
            "is_meta": facts.is_meta, "name": facts.name}),
        _entries("both", {
            "is_signed": facts.is_signed, "is_floating_point": facts.is_floating_point, "is_complex": facts.is_complex,
            "is_nonzero": facts.is_nonzero, "is_same_size": facts.is_same_size, "is_neg": facts.is_neg,
            "resolve_neg": facts.resolve_neg, "get_device": facts.get_device, "is_inference": facts.is_inference,
            "is_distributed": facts.is_distributed, "is_conj": facts.is_conj}),
        _entries("method", {  # Python's protocols
            "__repr__": protocols.repr_, "__str__": protocols.repr_, "__format__": protocols.format_,
            "__deepcopy__": protocols.deepcopy, "__contains__": protocols.contains,
            "__reversed__": protocols.reversed_, "__delitem__": protocols.delitem,
            "__reduce_ex__": protocols.reduce_ex, "__array_wrap__": protocols.array_wrap,
            "as_subclass": protocols.as_subclass, "__getitem__": indexing.getitem,
            "__setitem__": indexing.setitem}),
        _entries("method", {  # in-place writes
            "copy_": inplace.copy_, "fill_": inplace.fill_, "zero_": inplace.zero_,
            "float_power_": inplace.float_power_, "set_": inplace.set_, "module_load": inplace.module_load,
            "transpose_": inplace.transpose_, "swapaxes_": inplace.swapaxes_, "t_": inplace.t_,
            "squeeze_": inplace.squeeze_, "unsqueeze_": inplace.unsqueeze_, "resize_": inplace.resize_,
            "resize_as_": inplace.resize_as_, "as_strided_": inplace.as_strided_, "resize": inplace.resize,
            "resize_as": inplace.resize_as}),
        _entries("method", sparse_methods.METHODS), _entries("property", sparse_methods.PROPERTIES),  # ember.sparse
        _entries("method", op_forms.methods()),
        _entries("both", {"swapaxes": op_forms.swapaxes, "allclose": comparison.allclose,
                          "equal": comparison.equal, "positive": positive, "lu": linalg_legacy.lu}),
        _entries("property", {"T": transposes.all_dims_reversed, "mT": transposes.matrix_transpose,
                              "H": complex_parts.hermitian, "mH": complex_parts.matrix_adjoint,
                              "data": (autograd_methods.get_data, autograd_methods.set_data),
                              "retains_grad": autograd_methods.retains_grad,
                              "real": (complex_parts.get_real, complex_parts.set_real),
                              "imag": (complex_parts.get_imag, complex_parts.set_imag)}),
        _entries("method", {  # autograd, Python callables
            "backward": autograd_methods.backward, "register_hook": autograd_methods.register_hook,
            "register_post_accumulate_grad_hook": autograd_methods.register_post_accumulate_grad_hook,
            "retain_grad": autograd_methods.retain_grad, "record_stream": cuda_streams.record_stream,
            "apply_": callables.apply_, "map_": callables.map_, "map2_": callables.map2_}),
        _entries("function", {  # torch-level only
            "asarray": creation.asarray, "frombuffer": creation.frombuffer, "empty_strided": creation.empty_strided,
            "empty_permuted": creation.empty_permuted, "atleast_1d": creation.atleast_1d,
            "atleast_2d": creation.atleast_2d, "atleast_3d": creation.atleast_3d,
            "get_device_module": accelerator.get_device_module, "typename": legacy_types.typename,
            "set_warn_always": flags.set_warn_always, "is_warn_always_enabled": flags.is_warn_always_enabled,
            "set_deterministic_debug_mode": flags.set_deterministic_debug_mode,
            "get_deterministic_debug_mode": flags.get_deterministic_debug_mode,
            "detach": method_function("detach", "input.detach(): a tensor sharing input's storage, cut off from "
                                                "the autograd graph."),
            "chain_matmul": linalg_legacy.chain_matmul, **DROPOUT_FUNCTIONS}),
    )


def _merge(*tables: dict[str, Entry]) -> dict[str, Entry]:
    merged: dict[str, Entry] = {}
    for table in tables:
        for name, entry in table.items():
            if name in merged:
                raise RuntimeError(f"ember.tensor.surface: {name!r} is listed twice")
            merged[name] = entry
    return merged


@cache
def table() -> dict[str, Entry]:
    """Every name of the surface: the hand-written ones, then each op's generated method, the operators and
    the aliases, for the names nothing else takes."""
    hand = _hand_written()
    own = set(vars(Tensor))
    methods = {name: entry.implementation for name, entry in hand.items() if entry.kind in ("method", "both")}
    taken = own | set(hand)
    methods.update(generated.op_methods(taken))
    entries = dict(hand)
    entries.update(_entries("method", {name: method for name, method in methods.items() if name not in hand}))
    entries.update(_entries("method", {name: method for name, method in generated.operators().items()
                                       if name not in taken}))
    entries.update(_entries("method", {name: method for name, method in generated.aliases(methods).items()
                                       if name not in taken and name not in entries}))
    return entries


def _as_attribute(name: str, entry: Entry) -> Any:
    if entry.kind != "property":
        return accepting_numpy_names(name, entry.implementation)
    if isinstance(entry.implementation, tuple):
        return property(*entry.implementation)
    return property(entry.implementation, doc=entry.implementation.__doc__)


def install(namespace: dict[str, Any]) -> None:
    """Write the table: Tensor's attributes, then the torch-level functions into ``namespace`` (``ember``'s),
    the ops' generated functions first (``ember.functions``). Refuses to overwrite an attribute the class
    already has: each is installed once."""
    entries = table()
    for name, entry in entries.items():
        if entry.kind == "function":
            continue
        if name in vars(Tensor):
            raise RuntimeError(f"ember.tensor.surface: Tensor.{name} is already defined; the surface installs "
                               f"each attribute once")
        setattr(Tensor, name, _as_attribute(name, entry))
    functions.export(namespace)
    namespace.update({name: entry.implementation for name, entry in entries.items()
                      if entry.kind in ("function", "both")})
    accept_numpy_names_in(namespace)
