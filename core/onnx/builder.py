"""The graph builder that op lowerings write ONNX through.

An op's ``onnx`` lowering (declared with the op in the schema) is called as ``lower(g, **bound)``: ``bound``
holds the call's values by parameter name, tensors as ONNX value names (``None`` where absent, lists of
names for list parameters) and attributes as Python values, where an integer that follows a dynamic axis is
a ``SymbolicSize``. The lowering emits nodes with ``g.op`` and returns its output name (a tuple for several outputs).
Before the call, promoted tensor operands are cast to the op's compute dtype and Python numbers among the
tensor operands become constants of it, so a lowering sees operands of one dtype as the kernel does.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..export.dims import SymbolicSize, Unfitted
from .errors import SymbolicValueError, UnsupportedOperatorError

_ONNX_TYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
    "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL,
}


def onnx_type(dtype) -> int:
    """The ONNX element type of an Ember or NumPy dtype."""
    name = getattr(dtype, "name", None) or np.dtype(dtype).name
    try:
        return _ONNX_TYPES[name]
    except KeyError:
        raise UnsupportedOperatorError(f"ember.onnx.export: dtype {name} has no ONNX counterpart") from None


class GraphBuilder:
    """Collects nodes, initializers, inputs and outputs of one ONNX graph (see the module docstring)."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list = []
        self.initializers: dict = {}  # name -> TensorProto
        self.constant_arrays: dict = {}  # name -> the NumPy array of an initializer (for folding)
        self.inputs: list = []
        self.outputs: list = []
        self.scope = ""  # module path of the op being lowered, for node names
        self.op_name = ""  # the Ember op being lowered, for errors
        self.compute = None  # that op call's compute dtype (None: it takes its operands as they are)
        self.out_dtypes: tuple = ()  # and the dtypes of its results, which its lowering must produce
        self.known: dict = {}  # ONNX name -> (shape, dtype) of values whose shape and dtype the capture knows
        self.symbol_sources: dict = {}  # symbol -> (input name, axis)
        self._symbol_cache: dict = {}
        self._names: dict = {}
        self._const_cache: dict = {}

    # -- names ---------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        count = self._names.get(hint, 0)
        self._names[hint] = count + 1
        return hint if count == 0 else f"{hint}_{count}"

    # -- nodes ---------------------------------------------------------------------------------
    def op(self, op_type: str, *inputs, outputs: int = 1, **attributes):
        """Emit one node; returns its output name, or a tuple of names when ``outputs > 1``. ``None`` among the
        inputs is an omitted optional input."""
        for key, value in attributes.items():
            if _has_dim(value):
                raise SymbolicValueError(
                    f"ember.onnx.export: {self.op_name}: attribute {key}={value} of ONNX {op_type} follows a "
                    f"dynamic axis, but ONNX needs it fixed")
        prefix = f"{self.scope}/{op_type}" if self.scope else op_type
        node_name = self.fresh(prefix)
        names = tuple(self.fresh(f"{node_name}_output_{i}" if outputs > 1 else f"{node_name}_output")
                      for i in range(outputs))
        self.nodes.append(helper.make_node(op_type, ["" if i is None else i for i in inputs], list(names),
                                           name=node_name, **attributes))
        return names[0] if outputs == 1 else names

    def const(self, value, dtype=None, name: str | None = None) -> str:
        """An initializer holding ``value`` (a number, nested list or array) in ``dtype`` (Ember or NumPy)."""
        array = np.asarray(value, dtype=None if dtype is None else _numpy_dtype(dtype))
        if name is None:
            key = (array.dtype.str, array.shape, array.tobytes())
            cached = self._const_cache.get(key)
            if cached is not None:
                return cached
            name = self.fresh("const")
            self._const_cache[key] = name
        self.add_initializer(name, array)
        return name

    def add_initializer(self, name: str, array: np.ndarray) -> None:
        self.initializers[name] = _tensor_proto(array, name)
        self.constant_arrays[name] = array

    # -- integers that may follow dynamic axes --------------------------------------------------
    def ints(self, values) -> str:
        """A 1-D int64 tensor of ``values`` (ints and ``SymbolicSize``s): a constant where every one is fixed."""
        values = list(values)
        if not _has_dim(values):
            return self.const(np.asarray(values, dtype=np.int64).reshape(len(values)))
        pieces, run = [], []
        for v in values:
            if isinstance(v, SymbolicSize):
                if run:
                    pieces.append(self.const(np.asarray(run, dtype=np.int64)))
                    run = []
                pieces.append(self._dim_tensor(v))
            else:
                run.append(int(v))
        if run:
            pieces.append(self.const(np.asarray(run, dtype=np.int64)))
        return pieces[0] if len(pieces) == 1 else self.op("Concat", *pieces, axis=0)

    def scalar(self, value, dtype=np.int64) -> str:
        """A 0-d tensor of ``value`` (a number or a ``SymbolicSize``) in ``dtype``."""
        if not _has_dim(value):
            return self.const(np.asarray(value, dtype=_numpy_dtype(dtype)))
        scalar = self.op("Squeeze", self._dim_tensor(value), self.const(np.asarray([0], dtype=np.int64)))
        return scalar if _numpy_dtype(dtype) == np.int64 else self.cast(scalar, dtype)

    def static(self, value, what: str):
        """``value`` where it must not follow a dynamic axis; a clear error where it does."""
        if _has_dim(value):
            raise SymbolicValueError(
                f"ember.onnx.export: {self.op_name}: {what}={value} follows a dynamic axis, but its ONNX form "
                f"needs it fixed")
        return value

    def _dim_tensor(self, dim: SymbolicSize) -> str:
        cached = self._symbol_cache.get(dim)
        if cached is not None:
            return cached
        total = None
        for symbols, coef in dim.terms:
            term = self.const(np.asarray([coef], dtype=np.int64)) if not symbols or coef != 1 else None
            for s in symbols:
                size = self._symbol_size(s)
                term = size if term is None else self.op("Mul", term, size)
            total = term if total is None else self.op("Add", total, term)
        self._symbol_cache[dim] = total
        return total

    def _symbol_size(self, symbol: str) -> str:
        cached = self._symbol_cache.get(symbol)
        if cached is None:
            source, axis = self.symbol_sources[symbol]
            saved, self.scope = self.scope, ""
            cached = self.op("Shape", source, start=axis, end=axis + 1)
            self.scope = saved
            self._symbol_cache[symbol] = cached
        return cached

    # -- common shapes of lowerings --------------------------------------------------------------
    def cast(self, name: str, dtype) -> str:
        return self.op("Cast", name, to=onnx_type(dtype))

    def reduce(self, op_type: str, name: str, dims, keepdim: bool) -> str:
        """``op_type`` (ReduceSum, ReduceMax, ...) over ``dims`` (None: all), with the axes as an input or an
        attribute as the opset wants."""
        if dims is None:
            return self.op(op_type, name, keepdims=int(keepdim))
        axes = [int(d) for d in self.static(dims, "dim")]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, name, self.ints(axes), keepdims=int(keepdim))
        return self.op(op_type, name, axes=axes, keepdims=int(keepdim))

    def unsqueeze(self, name: str, axes) -> str:
        return self.op("Unsqueeze", name, self.ints(axes))

    def squeeze(self, name: str, axes) -> str:
        return self.op("Squeeze", name, self.ints(axes))

    def shape_of(self, name: str):
        """The captured shape of a value this op received or made (with ``SymbolicSize``s where it follows an axis)."""
        return self.known[name][0]

    def dtype_of(self, name: str):
        return self.known[name][1]

    def fail(self, why: str):
        raise UnsupportedOperatorError(f"ember.onnx.export: {self.op_name}: {why}")

    # -- the finished model -----------------------------------------------------------------------
    def model(self, graph_name: str, producer_version: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, graph_name, self.inputs, self.outputs,
                                  initializer=list(self.initializers.values()))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="ember", producer_version=producer_version)
        model.ir_version = min(model.ir_version, _IR_VERSION_FOR_OPSET.get(self.opset, model.ir_version))
        return model


#: The IR version each opset came with: onnxruntime refuses IR versions newer than it knows.
_IR_VERSION_FOR_OPSET = {17: 8, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10}


def value_info(name: str, dtype, shape) -> onnx.ValueInfoProto:
    """A graph input/output: ``shape`` holds ints, and strings (or ``SymbolicSize``s) for symbolic sizes."""
    dims = [d if isinstance(d, int) else str(d) for d in shape]
    return helper.make_tensor_value_info(name, onnx_type(dtype), dims)


def _has_dim(value) -> bool:
    if isinstance(value, Unfitted):
        raise SymbolicValueError(f"ember.onnx.export: a size ({value}) changes with the dynamic axes in a way the "
                                 f"exporter cannot write as a function of them")
    if isinstance(value, SymbolicSize):
        return True
    return isinstance(value, (list, tuple)) and any(_has_dim(v) for v in value)


def _numpy_dtype(dtype) -> np.dtype:
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None) or np.dtype(dtype).name
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _tensor_proto(array: np.ndarray, name: str):
    if array.dtype.name == "bfloat16":
        proto = helper.make_tensor(name, TensorProto.BFLOAT16, array.shape,
                                   array.view(np.uint16).ravel().tolist(), raw=False)
        return proto
    return numpy_helper.from_array(np.require(array, requirements="C"), name)  # ascontiguousarray makes 0-d 1-d


__all__ = ["GraphBuilder", "onnx_type", "value_info"]
