"""Inputs for every op: its declared ``samples``, or samples generated from its signature and category.

Fixed samples (``fixed_samples``) are a small deterministic set per op and dtype.
Generated samples (``draw_sample``) let hypothesis pick shapes, layouts and values for
elementwise ops and reductions. Both respect ``OpDef.domain`` (make() keywords per input).
"""
from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

from ember.dispatch.schema import REQUIRED, Sample

from .make import SPECIAL_FLOATS, Unsupported
from .oracle import PROMOTED

#: Shapes of the inputs of an elementwise op, by number of tensor inputs: equal shapes, 0-d,
#: empty, and size-1 broadcasting in both directions.
ELEMENTWISE_SHAPES = {
    1: [((),), ((0,),), ((5,),), ((2, 3),), ((3, 1, 4),)],
    2: [((), ()), ((4,), (4,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((2, 3), ()), ((0, 3), (1, 3)),
        ((2, 3, 4), (2, 3, 4))],
    3: [((), (), ()), ((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (3,)), ((0,), (1,), ()), ((4,), (), (2, 1, 4))],
}
REDUCTION_SHAPES = [(), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]
GENERIC_SHAPES = [(), (4,), (2, 3), (0, 3)]
#: The lean complex cases (see ``_complex_samples``): one shape set each, and two declared samples (first, last).
COMPLEX_ELEMENTWISE_SHAPES = {1: [((2, 3),)], 2: [((2, 1), (1, 3))], 3: [((2, 1), (1, 3), (3,))]}
COMPLEX_REDUCTION_SHAPES = [(3, 4)]
COMPLEX_GENERIC_SHAPES = [(2, 3)]
COMPLEX_DECLARED_SAMPLES = 2
DIM_TYPES = ("dim", "dim?", "dim[]?")


def fixed_samples(op, make, dtype) -> list:
    """The op's declared samples, plus the defaults that its signature and category allow.

    Elementwise ops and reductions always get the generated defaults (declared samples add
    attribute variants to them); other ops get defaults only when they declare no samples.
    """
    declared = _until_unsupported(op.samples(make, dtype)) if op.samples is not None else []
    if dtype is not None and dtype.is_complex:
        return _complex_samples(op, make, dtype, declared)
    if op.category == "elementwise" and _elementwise_signature(op):
        return declared + _until_unsupported(_elementwise_samples(op, make, dtype))
    if op.category == "reduction" and _reduction_signature(op):
        return declared + _until_unsupported(_reduction_samples(op, make))
    return declared or _until_unsupported(_generic_samples(op, make))


def _complex_samples(op, make, dtype, declared: list) -> list:
    """The lean set for complex dtypes (CI compiles every kernel variant on OpenCL): the op's first and last
    declared samples (the simplest and the largest, by convention), and for elementwise ops and reductions
    one broadcasting (or reducing) sample, one non-contiguous, and the special values; the real dtypes'
    samples already cover shapes, dims and attributes."""
    if op.category == "elementwise" and _elementwise_signature(op):
        generated = _elementwise_samples(op, make, dtype, COMPLEX_ELEMENTWISE_SHAPES)
    elif op.category == "reduction" and _reduction_signature(op):
        generated = _reduction_samples(op, make, COMPLEX_REDUCTION_SHAPES, lean=True)
    elif declared:
        return _ends(declared)
    else:
        generated = _generic_samples(op, make, COMPLEX_GENERIC_SHAPES)
    return _ends(declared) + _until_unsupported(generated)


def _ends(samples: list) -> list:
    """The first and the last of ``samples`` (all of them when there are no more than two)."""
    return samples if len(samples) <= COMPLEX_DECLARED_SAMPLES else [samples[0], samples[-1]]


def _until_unsupported(samples) -> list:
    """The samples a generator yields before it asks ``make`` for a dtype the backend lacks.

    (Declarations should put samples that need other dtypes last.)"""
    out = []
    try:
        for sample in samples:
            out.append(sample)
    except Unsupported:
        pass
    return out


def has_generated_samples(op) -> bool:
    """Whether hypothesis can generate inputs for ``op`` from its signature alone."""
    if op.reference is None:
        return False
    if op.category == "elementwise":
        return _elementwise_signature(op)
    return op.category == "reduction" and _reduction_signature(op)


# -- signatures the generators understand ------------------------------------------------------

def _tensor_params(op):
    return [p for p in op.params if p.is_tensor]


def _elementwise_signature(op) -> bool:
    """Tensor inputs (at least one) plus attributes that all have defaults."""
    return bool(_tensor_params(op)) and all(p.type in ("Tensor", "Tensor?", "Index") or p.default is not REQUIRED
                                            for p in op.params)


def _reduction_signature(op) -> bool:
    """One tensor input first, then dims, keepdim and attributes with defaults."""
    first, *rest = op.params
    return first.type == "Tensor" and all(not p.is_tensor and (p.type in DIM_TYPES or p.default is not REQUIRED)
                                          for p in rest)


def _sample(op, values: dict, note: str) -> Sample:
    """A Sample passing ``values`` (param name -> value) positionally where the signature allows."""
    args, kwargs = [], {}
    last_positional = max((i for i, p in enumerate(op.params) if p.name in values and not p.kw_only), default=-1)
    for i, p in enumerate(op.params):
        if p.kw_only:
            if p.name in values:
                kwargs[p.name] = values[p.name]
        elif i <= last_positional:
            args.append(values[p.name] if p.name in values else p.default)
    return Sample(tuple(args), kwargs, note)


def _make_input(op, p, make, shape, noncontiguous=False):
    return make(shape, noncontiguous=noncontiguous, **op.domain.get(p.name, {}))


def _scalar_for(op, p, make):
    """A Python number of the dtype under test, inside the input's domain."""
    return make((), **op.domain.get(p.name, {})).item()


# -- elementwise ---------------------------------------------------------------------------------

def _elementwise_samples(op, make, dtype, shapes_by_arity=None):
    params = _tensor_params(op)
    n = len(params)
    shape_sets = (shapes_by_arity or ELEMENTWISE_SHAPES).get(n, [((2, 3),) * n])
    for shapes in shape_sets:
        yield _sample(op, {p.name: _make_input(op, p, make, s) for p, s in zip(params, shapes)}, f"shapes {shapes}")
    yield _sample(op, {p.name: _make_input(op, p, make, (2, 3, 4), noncontiguous=True) for p in params},
                  "non-contiguous (2, 3, 4)")
    for k, p in enumerate(params if n >= 2 and shapes_by_arity is None else ()):
        if p.type == "Tensor":
            values = {q.name: _make_input(op, q, make, (2, 3)) for q in params}
            values[p.name] = _scalar_for(op, p, make)
            yield _sample(op, values, f"Python number {p.name}")
    for p in params if shapes_by_arity is None else ():
        if p.optional:
            values = {q.name: _make_input(op, q, make, (2, 3)) for q in params}
            values[p.name] = None
            yield _sample(op, values, f"{p.name}=None")
    if dtype.is_inexact:
        yield _special_sample(op, params, make)


def _special_sample(op, params, make):
    """NaN, infinities and signed zeros against each other: input k varies along axis k."""
    n = len(params)
    values = {}
    for k, p in enumerate(params):
        shape = tuple(len(SPECIAL_FLOATS) if i == k else 1 for i in range(n))
        free = p.name not in op.domain and p.type != "Index"
        values[p.name] = make.specials(shape) if free else _make_input(op, p, make, shape)
    return _sample(op, values, "special values (nan, inf, -0.0, ...)")


# -- reductions ----------------------------------------------------------------------------------

def _dim_choices(p, ndim: int) -> list:
    rank = max(ndim, 1)
    single = [0, -1] + ([1] if rank >= 2 else [])
    if p.type == "dim":
        return single
    choices = ([] if p.default is REQUIRED else [None]) + single
    if p.type == "dim[]?" and rank >= 2:
        choices.append((0, -1))
    return choices


def _reduction_samples(op, make, shapes=REDUCTION_SHAPES, lean: bool = False):
    """Every dim choice with and without keepdim; ``lean``: the first dim choice, keepdim left out."""
    first, *rest = op.params
    dim_param = next((p for p in rest if p.type in DIM_TYPES), None)
    keepdims = (False, True) if "keepdim" in op.param_index and not lean else (None,)
    for shape in shapes:
        x = _make_input(op, first, make, shape)
        dims = _dim_choices(dim_param, len(shape)) if dim_param else [None]
        for dim in dims[:1] if lean else dims:
            for keep in keepdims:
                values = {first.name: x}
                if dim_param:
                    values[dim_param.name] = dim
                if keep is not None:
                    values["keepdim"] = keep
                yield _sample(op, values, f"shape {shape}, dim={dim!r}, keepdim={keep}")
    values = {first.name: _make_input(op, first, make, (3, 4), noncontiguous=True)}
    if dim_param:
        values[dim_param.name] = -1
    yield _sample(op, values, "non-contiguous (3, 4), dim=-1")


# -- anything else whose attributes all have defaults --------------------------------------------

def _generic_samples(op, make, shapes=GENERIC_SHAPES):
    params = _tensor_params(op)
    if not params or any(p.default is REQUIRED for p in op.params if not p.is_tensor):
        return
    required = [p for p in params if not p.optional]
    for shape in shapes:
        values = {}
        for p in required:
            if p.type == "Tensor[]":
                values[p.name] = [_make_input(op, p, make, shape), _make_input(op, p, make, shape)]
            elif p.type in ("Tensor", "Index"):
                values[p.name] = _make_input(op, p, make, shape)
            else:
                return
        yield _sample(op, values, f"shape {shape}")
    yield _sample(op, {p.name: _make_input(op, p, make, (2, 3), noncontiguous=True) for p in required
                       if p.type in ("Tensor", "Index")}, "non-contiguous (2, 3)")


# -- hypothesis-generated samples ------------------------------------------------------------------

def draw_sample(data, op, make) -> Sample:
    """One sample for ``op`` with shapes, layouts and dims chosen by hypothesis."""
    if op.category == "elementwise":
        return _draw_elementwise(data, op, make)
    return _draw_reduction(data, op, make)


def _draw_elementwise(data, op, make) -> Sample:
    params = _tensor_params(op)
    shapes = data.draw(mutually_broadcastable_shapes(num_shapes=len(params), min_dims=0, max_dims=3, max_side=4),
                       label="shapes").input_shapes
    # at most one operand a Python number (never the only operand, so the result has a device)
    number = data.draw(st.integers(0, 3 * len(params)), label="operand that is a number") if len(params) > 1 else -1
    values = {}
    for k, (p, shape) in enumerate(zip(params, shapes)):
        if k == number and p.type in PROMOTED:
            values[p.name] = _scalar_for(op, p, make)
        else:
            values[p.name] = _make_input(op, p, make, shape,
                                         data.draw(st.booleans(), label=f"{p.name} non-contiguous"))
    return _sample(op, values, "generated")


def _draw_dim(data, p, ndim: int):
    rank = max(ndim, 1)
    single = st.integers(-rank, rank - 1)
    options = [single]
    if p.type != "dim" and p.default is not REQUIRED:
        options.append(st.none())
    if p.type == "dim[]?":
        options.append(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(tuple))
    return data.draw(st.one_of(options), label=p.name)


def _draw_reduction(data, op, make) -> Sample:
    first, *rest = op.params
    shape = data.draw(array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4), label="shape")
    values = {first.name: _make_input(op, first, make, shape, data.draw(st.booleans(), label="non-contiguous"))}
    for p in rest:
        if p.type in DIM_TYPES:
            values[p.name] = _draw_dim(data, p, len(shape))
        elif p.name == "keepdim":
            values[p.name] = data.draw(st.booleans(), label="keepdim")
    return _sample(op, values, "generated")
