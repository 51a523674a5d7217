"""Every way PyTorch's argument parser lets an op be called, derived from its declaration and one call
PyTorch accepts (the *base* call).

From the base call each form changes one thing: how an argument is passed (position, keyword, NumPy's
keyword name), what stands for it (a Python number for a tensor, a 0-d tensor or a NumPy scalar for a
number, a tuple or ``Size`` for a list), which optional arguments are given, ``out=``, or a value of the
wrong type (which PyTorch rejects, and so must Ember).
"""
from __future__ import annotations

from dataclasses import replace
from itertools import islice, product

from .candidates import PROFILES, Profile, candidates, supported
from .native import Arg, Overload
from .outcome import Call, run
from .values import Value, literal, npy, py, tensor

#: The NumPy keyword names PyTorch's argument parser takes for its own (python_arg_parser.cpp).
NUMPY_NAMES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"), "other": ("x2",)}
SEARCH_LIMIT = 48  # calls tried per overload to find one PyTorch accepts


class Base:
    """An overload with values for its required arguments that PyTorch accepts."""

    def __init__(self, op: "PythonOp", overload: Overload, profile: Profile, values: dict[str, Value]):
        self.op, self.overload, self.profile, self.values = op, overload, profile, values

    def required(self) -> list[Arg]:
        return [a for a in self.overload.args if a.default is None and not (a.mutated and a.kw_only)]

    def call(self, category: str, surface: str, replaced: dict[str, Value] | None = None,
             keywords: set[str] = frozenset(), extra: dict[str, Value] | None = None,
             renamed: dict[str, str] | None = None, positional_extra: list[Value] | None = None) -> Call:
        values = dict(self.values, **(replaced or {}))
        args, kwargs = [], []
        for arg in self.required():
            name = self.op.keyword(arg.name, surface)
            if arg.kw_only or arg.name in keywords:
                kwargs.append(((renamed or {}).get(arg.name, name), values[arg.name]))
            else:
                args.append(values[arg.name])
        args += positional_extra or []
        kwargs += [(self.op.keyword(k, surface), v) for k, v in (extra or {}).items()]
        return Call(category, surface, self.op.namespace, self.op.python_name(surface), tuple(args), tuple(kwargs),
                    self.overload.random or "empty" in self.overload.name, self.op.unique_outputs)


class PythonOp:
    """One op as Python sees it: ``torch.cumprod`` and ``Tensor.cumprod``, with every overload declared."""

    def __init__(self, name: str, module: str | None, overloads: list[Overload]):
        self.name, self.module, self.overloads = name, module, overloads
        self.namespace = module or ""
        self.function_name = name[len(module) + 1:] if module and name.startswith(module + "_") else name

    @property
    def unique_outputs(self) -> tuple[int, ...] | None:
        """Where Ember's declaration of the op says some outputs are unique only up to sign or basis
        (``OpDef.gauge``: singular and eigenvectors), the positions of the others."""
        from ember.dispatch import OPS

        declared = OPS.get(self.name)
        if declared is None or declared.gauge is None:
            return None
        gauged = {name for name, _ in declared.gauge.vectors}
        return tuple(i for i, name in enumerate(declared.outputs) if name not in gauged)

    def python_name(self, surface: str) -> str:
        return self.name if surface == "method" else self.function_name

    @staticmethod
    def keyword(name: str, surface: str) -> str:
        return "input" if name == "self" and surface == "function" else name

    def surfaces(self, overload: Overload) -> list[str]:
        found = []
        if "function" in overload.variants:
            found.append("function")
        if "method" in overload.variants and overload.args and overload.args[0].name == "self":
            found.append("method")
        return found

    @property
    def id(self) -> str:
        return f"{self.namespace}.{self.function_name}" if self.namespace else self.name


def find_base(torch, op: PythonOp, overload: Overload) -> Base | None:
    """The first guess PyTorch accepts (see ``candidates``), or None after ``SEARCH_LIMIT`` tries."""
    required = [a for a in overload.args if a.default is None and not (a.mutated and a.kw_only)]
    if not all(supported(a) for a in overload.args) or not op.surfaces(overload):
        return None
    if overload.is_out or any(a.mutated and a.name != "self" for a in overload.args):
        return None
    surface = op.surfaces(overload)[0]
    tries = 0
    for shape, dtype in PROFILES:
        profile = Profile(shape, dtype)
        choices = [candidates(a, profile) for a in required]
        if any(not c for c in choices):
            return None
        for combination in islice(product(*choices), 12):
            tries += 1
            base = Base(op, overload, profile, {a.name: v for a, v in zip(required, combination)})
            if run(torch, base.call("base", surface)).accepted:
                return base
            if tries >= SEARCH_LIMIT:
                return None
    return None


def forms(torch, base: Base) -> list[Call]:
    """The call forms of one overload, from its base call (see the module docstring)."""
    overload, calls = base.overload, []
    surfaces = base.op.surfaces(overload)
    required = base.required()
    optional = [a for a in overload.args if a.default is not None]
    for surface in surfaces:
        calls.append(base.call("positional" if surface == "function" else "method", surface))
        named = {a.name for a in required if not (surface == "method" and a.name == "self")}
        if named:
            calls.append(base.call("keywords", surface, keywords=named))
        for arg in required + optional:
            for numpy_name in NUMPY_NAMES.get(base.op.keyword(arg.name, surface), ()):
                if arg in optional:
                    value = candidates(arg, base.profile)[:1]
                    if value:
                        calls.append(base.call("numpy names", surface, extra={numpy_name: value[0]}))
                elif not (surface == "method" and arg.name == "self"):
                    calls.append(base.call("numpy names", surface, keywords={arg.name},
                                           renamed={arg.name: numpy_name}))
        calls += _defaults(base, surface, optional)
        calls += _stand_ins(base, surface, required)
    calls += _out_forms(torch, base)
    return calls


def _defaults(base: Base, surface: str, optional: list[Arg]) -> list[Call]:
    calls = []
    positional = []
    for arg in optional:
        default = literal(arg.default, arg.type)
        if default is not None:
            calls.append(base.call("defaults", surface, extra={arg.name: default}))
            if not arg.kw_only and len(positional) == optional.index(arg):
                positional.append(default)
        for value in candidates(arg, base.profile)[:2]:
            if default is None or str(value) != str(default):
                calls.append(base.call("options", surface, extra={arg.name: value}))
    if positional:
        calls.append(base.call("defaults", surface, positional_extra=positional))
    return calls


def _stand_ins(base: Base, surface: str, required: list[Arg]) -> list[Call]:
    """Each required argument replaced by another kind of value for the same thing."""
    calls = []
    for position, arg in enumerate(required):
        if surface == "method" and arg.name == "self":
            continue
        value = base.values[arg.name]
        for category, stand_in in _alternatives(arg, value, first=position == 0):
            calls.append(base.call(category, surface, replaced={arg.name: stand_in}))
        last_positional = [a for a in required if not a.kw_only][-1]
        if arg.base_type == "int[]" and value.kind == "list" and arg is last_positional:
            spread = base.call("int lists", surface)  # view(2, 3) for view((2, 3))
            calls.append(replace(spread, args=spread.args[:-1] + value.data))
    return calls


def _alternatives(arg: Arg, value: Value, first: bool) -> list[tuple[str, Value]]:
    base = arg.base_type
    found = [("wrong type", py("bogus"))]
    if not arg.optional:
        found.append(("wrong type", py(None)))
    if value.kind == "python" and isinstance(value.data, bool):
        found.append(("numpy scalars", npy(value.data, "bool")))
    elif value.kind == "python" and isinstance(value.data, (int, float)):
        number = value.data
        found += [("0-d tensors", tensor((), "int64" if isinstance(number, int) else "float32", "int")),
                  ("numpy scalars", npy(number, "int64" if isinstance(number, int) else "float64")),
                  ("numpy scalars", npy(number, "float32"))]
        if base in ("float", "Scalar") and isinstance(number, int):
            found.append(("numbers", py(float(number))))
        if base == "int":
            found.append(("wrong type", py(float(number) + 0.5)))
    elif value.kind == "list" and base == "int[]":
        items = [v.data for v in value.data]
        found += [("int lists", Value("tuple", value.data)), ("int lists", Value("size", tuple(items))),
                  ("int lists", Value("list", tuple(npy(i, "int64") for i in items)))]
        if len(items) == 1:
            found.append(("int lists", py(items[0])))
    elif value.kind == "tensor" and base == "Tensor" and not first:
        number = 1 if value.dtype in ("int64", "bool") else 0.5
        found += [("numbers as tensors", py(number)), ("0-d tensors", tensor((), value.dtype, value.fill)),
                  ("numbers as tensors", Value("list", (py(number),) * (value.shape[-1] if value.shape else 1)))]
    return found


def _out_forms(torch, base: Base) -> list[Call]:
    """``out=`` where the op declares an out overload, given a tensor of the result's shape and dtype."""
    op, overload = base.op, base.overload
    if "function" not in op.surfaces(overload) or overload.is_inplace:
        return []
    names = [a.name for a in overload.args]
    has_out = any(o.is_out and [a.name for a in o.args if not a.mutated] == names
                  and sum(a.mutated for a in o.args) == 1 for o in op.overloads)
    if not has_out:
        return []
    outcome = run(torch, base.call("base", "function"))
    result = outcome.result
    if not (outcome.accepted and isinstance(result, torch.Tensor)):
        return []
    out = tensor(tuple(result.shape), str(result.dtype).split(".")[-1])
    return [base.call("out=", "function", extra={"out": out})]
