"""The op schema: every operator is declared once, here, by one ``OpDef``.

An OpDef carries the signature (parsed from a PyTorch-style string), the category,
whether it is a primitive (every backend implements it) or a composite (defined
in Ember ops, overridable by a backend), the promotion rule, the meta function
that infers output shapes, the NumPy reference and sample hints used by the
conformance suite (with the outputs unique only up to sign: ``Gauge``), a slot
for the derivative that autograd fills, and for elementwise ops the scalar
formula that fusion renders into kernels.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from .bound import BoundArgs
from .dtypes import ALL_DTYPES, dtype

#: "custom": an op made at run time by ``ember.library`` (named ``namespace::name``), not one of Ember's own: the
#: lists of Ember's ops (``builtin_ops``, ``primitives``, ``composites``: conformance, stubs, docs) leave it out.
CATEGORIES = ("elementwise", "reduction", "view", "linalg", "indexing", "creation", "random", "nn", "custom")
KINDS = ("primitive", "composite")
#: Autocast's cast categories (``ember.autocast``), as PyTorch's lists define them: "lower" runs the op in
#: the region's low-precision dtype, "float32" in float32, "promote" in the widest floating dtype among the
#: operands; "banned" refuses the op (it is unsafe to autocast). A dtype in place of a category casts the
#: operands to that dtype (``ember.library.register_autocast``, PyTorch's ``cast_inputs``). See ``OpDef.autocast``.
AUTOCAST_CATEGORIES = ("lower", "float32", "promote", "banned")
#: The device types with lists of their own; every other device type follows the "cuda" list.
AUTOCAST_LISTS = ("cpu", "cuda")
#: Ops PyTorch runs in float32 under CUDA autocast (float16's narrow range) but not under CPU autocast,
#: whose list is made for bfloat16 (float32's range).
FLOAT32_ON_CUDA = {"cuda": "float32"}
#: Forward-mode AD (``OpDef.jvp``): "elementwise" (the Jacobian is diagonal, so the derivative applied to an
#: input's tangent is that input's share of the output's tangent), "linear" (the op applied to the tangents in
#: place of its inputs), "multilinear" (linear in each input alone, plus an added ``bias``: the sum over inputs
#: of the op with that one replaced by its tangent), "zero" (piecewise constant: the tangent is 0), "derived"
#: (from the derivative, as for ops without a rule: for a view whose meaning is its input's memory, as_strided).
JVP_RULES = ("elementwise", "linear", "multilinear", "zero", "derived")
#: vmap (``OpDef.batch``), by op family: "elementwise" (inputs broadcast: the batch dim leads), "dims" (one
#: batched input, every dim attribute moves past the batch dim), "trailing" (the op reads only the last dims, as
#: ``tril``, ``layer_norm``: the batch dim leads, attributes unchanged), "random" (by vmap's ``randomness``),
#: "loop" (once per element: ops whose meaning is a memory layout, as ``as_strided``).
BATCH_RULES = ("elementwise", "dims", "trailing", "random", "loop")
REQUIRED = object()
#: An op's ``dtypes`` category -> whether it accepts a real computation dtype.
DTYPE_CATEGORIES = {
    "all": lambda d: True,
    "numeric": lambda d: d.kind != "bool",
    "float": lambda d: d.is_floating_point,
    "integral": lambda d: d.kind in ("bool", "int"),
    "int": lambda d: d.kind == "int",
}

#: Parameter types. Tensor inputs: "Tensor" takes part in type promotion (and accepts a Python
#: number), "Index" is an integer tensor that does not, "Tensor[]" is a list of promoted tensors,
#: "Index?[]" a list of index tensors and Nones (advanced indexing).
TENSOR_TYPES = {"Tensor", "Tensor?", "Index", "Index?", "Tensor[]", "Index?[]"}
ATTR_TYPES = {"Scalar", "Scalar?", "int", "int?", "int[]", "int[]?", "bool", "bool?", "float", "float?",
              "str", "str?", "dim", "dim?", "dim[]?", "dtype", "dtype?", "device?", "Generator?", "Any"}


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: Any = REQUIRED
    kw_only: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.type in TENSOR_TYPES

    @property
    def optional(self) -> bool:
        return self.type.endswith("?")

    def __post_init__(self) -> None:
        # Read on every dispatch, so computed once: a default the dispatcher may pass on as is
        # (dims need wrapping, lists become tuples, dtypes and devices are looked up).
        canonical = self.default is None or (
            self.type not in ("dim", "dim?", "dim[]?", "int[]", "int[]?", "dtype", "dtype?", "device?")
            and not isinstance(self.default, list))
        object.__setattr__(self, "default_is_canonical", canonical)


@dataclass(frozen=True)
class Gauge:
    """Outputs that the op's math determines only up to a change of basis: eigen- and singular vectors.

    A real eigenvector is unique only up to its sign, a pair of singular vectors (u_i, v_i) up to one sign for
    both (A = U diag(S) Vh holds as well with both negated, not with one), and where values repeat, only the
    space they span is fixed: any orthonormal basis of it serves, turned the same way in every output. LAPACK
    and cuSOLVER choose differently, and PyTorch documents no choice, so tests compare such outputs up to this
    freedom and differentiate only functions of them that do not depend on it (``ember.conformance.gauge``).

    ``values`` names the output whose entry i belongs to vector i of every output in ``vectors``, which pairs
    each output's name with the axis that counts its vectors (-1 for columns, as U's; -2 for rows, as Vh's).
    Vectors past the last value (U's columns beyond min(m, n) with ``full_matrices``) belong to no value: they
    are a basis of what the others leave, each output's own.
    """
    values: str
    vectors: tuple[tuple[str, int], ...]


@dataclass(eq=False)
class OpDef:
    name: str
    params: tuple[Param, ...]
    category: str
    kind: str
    promotion: Any
    meta: Callable[..., Any]
    reference: Callable[..., Any] | None = None
    composite: Callable[..., Any] | None = None
    samples: Callable[..., Any] | None = None
    derivative: Any = None  # filled by ember.autograd: the vector-Jacobian product
    # which computation dtypes the op accepts: a category of DTYPE_CATEGORIES (real dtypes), with "+complex" where it
    # also computes in complex64 and complex128 ("float+complex": exp; "all+complex": add)
    dtypes: str = "all"
    outputs: tuple[str, ...] = ("out",)
    method: bool = True  # also a Tensor method
    inplace: bool = False  # has an in-place Tensor method ``name_``
    tolerances: dict = field(default_factory=dict)
    domain: dict = field(default_factory=dict)  # input name -> make() keywords for generated samples
    doc: str = ""
    differentiable: bool = True
    # False where the derivative itself cannot be differentiated (say why at the declaration); the
    # conformance suite then reports the op instead of running gradgradcheck on it
    second_order: bool = True
    # input name -> make() keywords (low, high) for gradient checks, where the op is smooth and finite only
    # on part of the default sample range (log on the positive reals); those inputs are redrawn there
    grad_domain: dict = field(default_factory=dict)
    # names of floating tensor inputs that get no gradient by design (batch norm's running statistics)
    nondifferentiable_inputs: tuple = ()
    view: bool = False  # the output shares storage with the first input
    mutates: bool = False  # writes into its first input and returns it (copy_, index_put_)
    # (or a tuple of names of ``Tensor[]`` parameters: writes into their tensors and returns None, as the
    # multi-tensor optimizer steps ``_fused_adam_`` ... do; empty lists are then allowed after the first)
    normalize: Callable[..., Any] | None = None  # rewrites bound values before meta, e.g. wraps dims
    # the meta or normalize reads the first input's strides (view), so the plan cache keys on them
    layout_dependent: bool = False
    # autocast's category (AUTOCAST_CATEGORIES) for this op: one for every device type, or a dict by
    # AUTOCAST_LISTS, since PyTorch's CPU and CUDA lists differ (exp runs in float32 under CUDA autocast
    # only); None: the op runs in the dtypes it is called with
    autocast: str | dict | None = None
    # names of attributes whose values no check looks at and no plan depends on (an optimizer step's count
    # and learning rate): calls differing only in them share one cached plan instead of being validated anew
    unkeyed: tuple = ()
    # names of attributes that change from call to call and that the checks read (a slice's bounds, ``select``'s
    # index: ``x[i]`` over a dataset, ``split`` into a thousand pieces): a call with values not seen before reuses
    # the plan of a call that differed only in them, its checks (``normalize``, ``meta``) run on its own values,
    # instead of being validated whole; values seen before still find their own plan, which checks nothing
    varying: tuple = ()
    # the value of one element as a formula of ``ember.dispatch.fusion``'s language, or a callable taking the
    # attribute values by keyword and returning one (None: not fusible); None: the op is never fused
    scalar: str | Callable[..., str | None] | None = None
    # how ``ember.onnx.export`` writes this op in ONNX: the ONNX operator's name where the op has no attributes
    # and maps onto it input for input ("Exp"), or a function ``lower(g, **bound)`` that emits nodes through the
    # exporter's graph builder ``g`` (``ember.onnx.builder``) and returns the output names; None: not exportable
    # (a composite is then exported through the ops it is made of)
    onnx: str | Callable[..., Any] | None = None
    # where the op is declared: (file, line) of the module-level statement that declares it (set by defop)
    source: tuple[str, int] | None = None
    # a primitive that a backend may leave out (LAPACK-backed decompositions): calls on such a backend need the
    # explicit CPU fallback (``ember.dispatch.execution.fallback``), and the conformance suite reports them so
    optional_kernel: bool = False
    # outputs unique only up to a sign or basis per eigen- or singular space (see Gauge); None: unique
    gauge: Gauge | None = None
    # PyTorch's keyword name -> this op's parameter, where PyTorch names one otherwise: its Python binding
    # calls ``self`` ``input`` (linalg's ``A``), and its overloads may name one parameter several ways
    # (tensor_split's ``sections``, ``indices``); the binder takes them on its error path, at no cost to calls
    # by Ember's names
    torch_keywords: dict = field(default_factory=dict)
    # False for the ops PyTorch writes in Python (torch.norm, torch.split): Python binds their arguments, which
    # takes none of NumPy's names (axis, keepdims, x), so Ember's binder does not either
    numpy_keywords: bool = True
    # PyTorch lets add, sub, mul, div and floor_divide take two numbers (torch.mul(2, 3) is tensor(6)): the
    # first becomes a 0-d tensor on the default device; every other op needs a tensor operand
    numbers_alone: bool = False
    # The Tensor parameters of a non-elementwise op that also take a Python number, where PyTorch has a Scalar
    # overload for them (masked_fill's ``value``, quantile's ``q``); a number for any other one is PyTorch's
    # TypeError (tests/test_number_operands.py derives the lists from native_functions.yaml). Elementwise ops
    # take a number for any operand but not for all of them
    number_operands: tuple[str, ...] = ()
    # forward-mode AD (``ember.autograd.forward_ad``, ``ember.func.jvp``): how the output's tangent follows from the
    # inputs' (JVP_RULES), or a function ``jvp(tangents, **bound)`` given one tangent (or None) per tensor input
    # in parameter order (and the outputs as ``result``, where it names it); None: derived from ``derivative`` by
    # the double-VJP construction, or for a composite
    # without one, from its decomposition. Elementwise ops with a derivative default to "elementwise", views to
    # "linear"
    jvp: str | Callable[..., Any] | None = None
    # vmap (``ember.func.vmap``): the batching rule, a family of BATCH_RULES or a function ``batch(vmap_call)``;
    # None: composites run their decomposition under vmap, primitives run once per batch element with a warning
    # naming the op. Elementwise ops default to "elementwise", random ops to "random"
    batch: str | Callable[..., Any] | None = None
    # an empty ``dim`` list (``x.sum(dim=())``) reduces every dim, as PyTorch's reductions read it; False where it
    # reduces none (PyTorch's any and all) or names no reduction at all. None: True for the reductions
    empty_dim_reduces_all: bool | None = None
    # a custom op's own kernels (``ember.library``): device type -> a function on Ember tensors, with the key
    # None for every device type and "privateuse1" for every device type but cpu and cuda; the dispatcher runs
    # one as a plan's kernel (``execution/user_kernels.py``). None for Ember's ops, whose kernels are backends'
    kernels: dict | None = None
    # how the op computes on complex operands from real ops, where that serves every backend better than a complex
    # kernel (convolution as Gauss's three real convolutions, as PyTorch does): a function on the op's bound
    # values; a call whose computation dtype is complex runs it, each inner op recording its own node, in place of
    # the backend's kernel and the composite. None: complex calls go where real ones go (``dtypes`` must say
    # "+complex" for either)
    complex_decomposition: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        self.param_index = {p.name: i for i, p in enumerate(self.params)}
        category, _, extra = self.dtypes.partition("+")
        if category not in DTYPE_CATEGORIES or extra not in ("", "complex"):
            raise ValueError(f"{self.name}: dtypes {self.dtypes!r} is not one of {sorted(DTYPE_CATEGORIES)}, "
                             "optionally with '+complex'")
        self.accepted_dtypes = frozenset(d for d in ALL_DTYPES if (
            extra == "complex" if d.kind == "complex" else DTYPE_CATEGORIES[category](d)))
        self.tensor_positions = tuple(i for i, p in enumerate(self.params) if p.is_tensor)
        self.attr_positions = tuple(i for i, p in enumerate(self.params) if not p.is_tensor)
        for field_name in ("unkeyed", "varying"):
            unknown = set(getattr(self, field_name)) - {self.params[i].name for i in self.attr_positions}
            if unknown:
                raise ValueError(f"{self.name}: {field_name} names no attribute: {sorted(unknown)}")
        if self.gauge is not None:
            _check_gauge(self.name, self.gauge, self.outputs)
        self.keyed_attr_positions = tuple(i for i in self.attr_positions if self.params[i].name not in self.unkeyed)
        self.varying_positions = tuple(i for i in self.attr_positions if self.params[i].name in self.varying)
        # the key of a plan shared by calls that differ only in varying attributes
        self.family_attr_positions = tuple(i for i in self.keyed_attr_positions if i not in self.varying_positions)
        self.single_tensor = [p.type for p in self.params if p.is_tensor] in (["Tensor"], ["Index"])
        self.sole_tensor = self.tensor_positions[0] if self.single_tensor else None  # its position
        self.positional_count = sum(not p.kw_only for p in self.params)
        self.tensor_param_names = tuple(self.params[i].name for i in self.tensor_positions)
        self.default_values = tuple(p.default for p in self.params)
        required = [i for i, p in enumerate(self.params) if p.default is REQUIRED]
        self.min_args = (required[-1] + 1 if required else 0) if all(
            not self.params[i].kw_only for i in required) else len(self.params) + 1
        self.special_positions = tuple(self.param_index.get(name) for name in ("device", "generator", "dtype"))
        # parameters holding a list of tensors (each element is one graph input)
        self.list_positions = tuple(i for i, p in enumerate(self.params) if p.type in ("Tensor[]", "Index?[]"))
        # how many leading parameters are the tensor inputs, where they come first and none is a list (most
        # ops): the graph's inputs are then ``values[:n]``; None otherwise
        leading = len(self.tensor_positions)
        self.leading_tensors = leading if (not self.list_positions
                                           and self.tensor_positions == tuple(range(leading))) else None
        # the parameters a mutating op writes into: its first input (mutates=True), or those ``mutates`` names
        self.written_positions = ((self.tensor_positions[0],) if self.mutates is True else
                                  tuple(self.param_index[n] for n in self.mutates) if self.mutates.__class__ is tuple
                                  else ())
        if self.empty_dim_reduces_all is None:
            self.empty_dim_reduces_all = self.category == "reduction"
        self.autocast_policy = _autocast_policy(self.name, self.autocast, own_lists=self.category == "custom")
        _default_transforms(self)
        self.accepts_out = accepts_out(self)  # the dispatcher takes PyTorch's out= keyword for it

    def normalize_values(self, values: list) -> None:
        """Run the ``normalize`` hook on a call's bound values (in place), the hook reading them by name."""
        if self.normalize is not None:
            self.normalize(self, BoundArgs(self, values))

    def promote(self, result_type, values: list):
        """``(compute_dtype, out_dtype)`` by this op's promotion rule, which reads the values by name."""
        return self.promotion(result_type, self, BoundArgs(self, values))

    def autocast_category(self, device_type: str):
        """This op's autocast category on ``device_type`` (or the dtype it casts to; None: it runs as called)."""
        policy = self.autocast_policy
        if policy is None:
            return None
        return policy[device_type] if device_type in policy else policy[None]

    def redeclare(self, **fields) -> None:
        """Change declared fields of an op made at run time (``ember.library``'s registrations complete a custom
        op's declaration one by one) and work out again what follows from them. Plans made before are stale:
        the caller clears them (``execution.plan.clear``)."""
        for name, value in fields.items():
            setattr(self, name, value)
        self.__post_init__()

    @property
    def tensor_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_tensor)

    @property
    def signature(self) -> str:
        parts, star = [], False
        for p in self.params:
            if p.kw_only and not star:
                parts.append("*")
                star = True
            default = "" if p.default is REQUIRED else f"={p.default!r}"
            parts.append(f"{p.type} {p.name}{default}")
        return f"{self.name}({', '.join(parts)})"


def _check_gauge(name: str, gauge: Gauge, outputs: tuple) -> None:
    """A gauge names outputs the op has, and counts vectors along one of the last two (matrix) axes."""
    named = [gauge.values] + [output for output, _ in gauge.vectors]
    unknown = [output for output in named if output not in outputs]
    if unknown:
        raise ValueError(f"{name}: the gauge names {unknown}, which are not among the outputs {outputs}")
    axes = {axis for _, axis in gauge.vectors}
    if not gauge.vectors or not axes <= {-1, -2}:
        raise ValueError(f"{name}: a gauge needs vector outputs counted along axis -1 or -2, not {gauge.vectors}")


def _default_transforms(op: OpDef) -> None:
    """The ``jvp`` and ``batch`` rules an op's category implies, where its declaration gives none; checks both."""
    if op.jvp is None and op.differentiable:
        if op.category == "elementwise" and op.derivative is not None:
            op.jvp = "elementwise"
        elif op.category == "view" and op.view:
            op.jvp = "linear"
    if op.batch is None:
        if op.category == "elementwise":
            op.batch = "elementwise"
        elif op.category == "random":
            op.batch = "random"
    for field_name, known in (("jvp", JVP_RULES), ("batch", BATCH_RULES)):
        rule = getattr(op, field_name)
        if isinstance(rule, str) and rule not in known:
            raise ValueError(f"{op.name}: unknown {field_name} rule {rule!r} (known: {known})")


def _autocast_policy(name: str, declared, own_lists: bool = False) -> dict | None:
    """``OpDef.autocast`` as a dict with a category (or None) for each of AUTOCAST_LISTS, and under the key None
    the one device types without a list of their own follow (cuda's); None for no policy. With ``own_lists`` (a
    custom op), any device type may have a list, and device types without one run as called."""
    if declared is None:
        return None
    policy = dict.fromkeys(AUTOCAST_LISTS, declared) if not isinstance(declared, dict) else dict(declared)
    unknown = set(policy) - set(AUTOCAST_LISTS)
    if unknown and not own_lists:
        raise ValueError(f"{name}: autocast lists are {AUTOCAST_LISTS}, not {sorted(unknown)}")
    for category in policy.values():
        if category is not None and category not in AUTOCAST_CATEGORIES and not isinstance(category, dtype):
            raise ValueError(f"{name}: unknown autocast category {category!r} (known: {AUTOCAST_CATEGORIES}, or "
                             f"a dtype to cast to)")
    lists = {key: policy.get(key) for key in AUTOCAST_LISTS}
    if own_lists:
        return {**lists, **policy, None: None}
    return {**lists, None: lists["cuda"]}


def accepts_out(op) -> bool:
    """Ops that make new tensors take ``out=``; views, in-place and mutating ops do not, nor do the shape ops
    but the joins (``cat``, ``stack``, ``hstack`` ...), as in PyTorch."""
    if op.view or op.mutates or op.name.endswith("_") or "out" in op.param_index or op.category == "custom":
        return False
    return op.category != "view" or op.name.endswith(("cat", "stack"))


OPS: dict[str, OpDef] = {}


@dataclass
class Sample:
    """One call of an op for the conformance suite: ``op(*args, **kwargs)``.

    ``args`` hold Ember tensors (made by the suite's ``make``), numbers, lists of tensors
    and attributes, in the op's parameter order; the suite hands the same values, with
    tensors turned into NumPy arrays, to the op's ``reference``.
    """
    args: tuple
    kwargs: dict = field(default_factory=dict)
    note: str = ""
    # False where the op's gradient at this sample is a convention rather than the derivative (the
    # padding row of embedding gets none): finite differences skip it, comparisons with the CPU do not
    gradcheck: bool = True


#: ``OpDef.samples(make, dtype)`` yields Samples. ``make(shape, *, dtype=dtype, low=None, high=None,
#: noncontiguous=False)`` returns a tensor on the backend under test, with seeded random values in
#: [low, high) (integers and bools included), for the dtype being tested; ``nonzero=True`` keeps zeros out.
#: ``OpDef.domain`` gives the same keywords per input for the samples the suite generates itself, e.g.
#: ``domain={"other": {"nonzero": True}}`` for integer division, ``{"condition": {"dtype": "bool"}}``.


def parse_signature(text: str) -> tuple[str, tuple[Param, ...]]:
    """``"add(Tensor input, Tensor other, *, Scalar alpha=1)"`` -> name and params."""
    name, _, rest = text.strip().partition("(")
    if not rest.endswith(")"):
        raise ValueError(f"bad signature {text!r}")
    params, kw_only = [], False
    for item in split_top_level(rest[:-1]):
        if item == "*":
            kw_only = True
            continue
        decl, eq, default_text = item.partition("=")
        ptype, pname = decl.split()
        if ptype not in TENSOR_TYPES and ptype not in ATTR_TYPES:
            raise ValueError(f"{name}: unknown parameter type {ptype!r}")
        default = ast.literal_eval(default_text.strip()) if eq else REQUIRED
        params.append(Param(pname, ptype, default, kw_only))
    return name.strip(), tuple(params)


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets (a signature's parameters), each stripped."""
    items, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        items.append(current.strip())
    return items


def defop(signature: str, category: str, *, kind: str = "primitive", promotion, meta,
          composite: Callable | None = None, **fields) -> OpDef:
    """Declare one operator. Called once per op, at import of the ``ember.dispatch.ops`` modules."""
    name, params = parse_signature(signature)
    return declare(name, params, category, kind=kind, promotion=promotion, meta=meta, composite=composite,
                   **fields)


def declare(name: str, params: tuple[Param, ...], category: str, *, kind: str = "primitive", promotion, meta,
            composite: Callable | None = None, **fields) -> OpDef:
    """Declare one operator from its parsed signature: ``defop``'s work after the parsing, and how
    ``ember.library`` declares the custom ops it makes at run time (``category="custom"``)."""
    if name in OPS:
        raise ValueError(f"op {name!r} is declared twice")
    if category not in CATEGORIES:
        raise ValueError(f"{name}: unknown category {category!r}")
    if kind not in KINDS:
        raise ValueError(f"{name}: unknown kind {kind!r}")
    if kind == "composite" and composite is None:
        raise ValueError(f"{name}: a composite op needs its definition")
    fields.setdefault("source", _declaring_statement())
    op = OpDef(name=name, params=params, category=category, kind=kind, promotion=promotion, meta=meta,
               composite=composite, **fields)
    OPS[name] = op
    return op


def _declaring_statement() -> tuple[str, int] | None:
    """(file, line) of the module-level statement that led to this ``defop`` call: the line to search for,
    also where a factory in the module makes the call."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def undeclare(name: str) -> OpDef:
    """Remove a custom op from OPS (``ember.library``: a library destroyed, an op redefined); Ember's own ops stay."""
    op = OPS.get(name)
    if op is None or op.category != "custom":
        raise ValueError(f"{name!r} is not a custom op (only ops made by ember.library can be removed)")
    return OPS.pop(name)


def builtin_ops() -> list[OpDef]:
    """Ember's own ops: OPS without the custom ops of ``ember.library`` (what conformance, stubs and docs cover)."""
    return [op for op in OPS.values() if op.category != "custom"]


def primitives() -> list[OpDef]:
    return [op for op in OPS.values() if op.kind == "primitive" and op.category != "custom"]


def composites() -> list[OpDef]:
    return [op for op in OPS.values() if op.kind == "composite" and op.category != "custom"]
