"""Which of PyTorch's names are public: the denominator of every coverage figure.

For a module ``m`` (``torch``, ``torch.nn``, ...):

- where ``m`` defines ``__all__``, every name in it (PyTorch declared them public, constants
  such as ``torch.pi`` included), plus the names ``m`` defines itself (the object comes from
  ``m`` or a public module below it) but left out of ``__all__``: ``torch.set_grad_enabled``,
  ``torch.unique``, ``torch.broadcast_shapes``, the layouts and memory formats
  (``torch.strided``, ``torch.channels_last``);
- where it does not (``torch.nn``, ``torch.nn.functional``, ``torch.linalg``), ``dir(m)``
  less what is not API: names starting with ``_``; imports of other libraries (the object
  comes from a module outside ``torch``: ``typing.Callable``, ``math``, ``warnings``,
  ``TYPE_CHECKING``); Python functions and classes that another torch namespace owns
  (``torch.nn.functional.Tensor`` is ``torch.Tensor``); TorchScript annotations and the
  ``__torch_function__`` protocol helpers torch's function bodies use (objects from
  ``torch._jit_internal`` or ``torch.overrides``, names containing ``torch_function``); and
  ``HELPERS``, two undocumented helpers torch leaves without an underscore;
- in both cases, a public submodule counts as a name (``torch.nn.init``, ``torch.linalg``,
  ``torch.distributions.constraints``), while a submodule that is implementation detail does
  not: one whose own public names the parent re-exports, all of them (``torch.nn.modules``,
  ``torch.distributions.bernoulli``), or which defines none (``torch.nn.common_types``).

Dtypes (``torch.float32``), layouts and constants are names users write every day, so they
count. For ``torch.Tensor`` (see ``tensor_names``): every attribute without a leading
underscore (methods and properties alike), plus the special methods that make Python syntax
and interop work on tensors: operators (``a + b``, ``a += b``, ``2 - a``, ``a @ b``,
``a < b``), ``len``/indexing/iteration, conversions (``float(t)``, ``bool(t)``, ``int``
indexing), ``hash``, ``repr``/``format``, ``copy.deepcopy`` and pickling, NumPy's
``__array__`` protocol and DLPack. Left out: dunders Python 3 never calls (``__div__``,
``__nonzero__``, ``__long__``), class machinery (``__new__``, ``__dict__``, ...), and
PyTorch's own extension hooks (``__torch_function__``, ``__torch_dispatch__``).
"""
from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

HELPERS = frozenset({"factory_kwargs", "assert_int_or_pair"})
_MACHINERY = ("torch._jit_internal", "torch.overrides")

_OPERATORS = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift",
              "and", "or", "xor")
PROTOCOL_DUNDERS = frozenset(
    [f"__{op}__" for op in _OPERATORS] + [f"__r{op}__" for op in _OPERATORS]
    + [f"__i{op}__" for op in _OPERATORS]
    + [f"__{name}__" for name in (
        "neg", "pos", "abs", "invert", "lt", "le", "eq", "ne", "gt", "ge",
        "bool", "int", "float", "complex", "index", "len", "getitem", "setitem", "delitem", "iter",
        "reversed", "contains", "hash", "repr", "format", "deepcopy", "reduce_ex", "setstate",
        "array", "array_wrap", "array_priority", "dlpack", "dlpack_device", "cuda_array_interface")])


def origin(obj: Any) -> str | None:
    """The module an object comes from: a module's own name, else ``__module__`` (of its type)."""
    if isinstance(obj, ModuleType):
        return obj.__name__
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else type(obj).__module__


def _is_public_module_name(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _within(name: str | None, package: str) -> bool:
    return name is not None and (name == package or name.startswith(package + "."))


def _own_public_names(module: ModuleType) -> dict[str, Any]:
    """Public-looking names whose objects ``module`` (or a module below it) defines."""
    found = {}
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if not isinstance(obj, ModuleType) and _within(origin(obj), module.__name__):
            found[name] = obj
    return found


def is_public_submodule(parent: ModuleType, name: str, obj: Any) -> bool:
    if not isinstance(obj, ModuleType) or obj.__name__ != f"{parent.__name__}.{name}":
        return False  # not a module, or an alias of a module living elsewhere (``torch.nn.functional.torch``)
    own = _own_public_names(obj)
    return any(getattr(parent, key, None) is not value for key, value in own.items())


def _is_foreign(obj: Any) -> bool:
    source = origin(obj)
    return source is not None and source.split(".")[0] != "torch"


def _is_dir_api(module: ModuleType, name: str, obj: Any) -> bool:
    """The filter applied to ``dir()`` names of a module without ``__all__``."""
    if name in HELPERS or "torch_function" in name or _is_foreign(obj):
        return False
    source = origin(obj) or ""
    if source.startswith(_MACHINERY):
        return False
    owned_elsewhere = (inspect.isclass(obj) or inspect.isfunction(obj)) and _is_public_module_name(source) \
        and not _within(source, module.__name__)
    return not owned_elsewhere


def public_names(module: ModuleType) -> list[str]:
    """PyTorch's public names in ``module``, by the rules in this module's docstring."""
    declared = getattr(module, "__all__", None)
    names = set(declared) if declared is not None else set()
    for name in dir(module):
        if name.startswith("_") or name in names:
            continue
        obj = getattr(module, name, None)
        if isinstance(obj, ModuleType):
            keep = is_public_submodule(module, name, obj)
        elif declared is not None:
            source = origin(obj)
            keep = not _is_foreign(obj) and _is_public_module_name(source or "_") and _within(source, module.__name__)
        else:
            keep = _is_dir_api(module, name, obj)
        if keep:
            names.add(name)
    return sorted(names)


def defines(cls: type, name: str) -> bool:
    """``cls`` has ``name`` of its own, not merely ``object``'s default (or ``__hash__ = None``)."""
    value = getattr(cls, name, None)
    return value is not None and value is not getattr(object, name, None)


def tensor_names(tensor_class: type) -> list[str]:
    """PyTorch's public ``Tensor`` attributes: see the module docstring."""
    return sorted(name for name in dir(tensor_class)
                  if not name.startswith("_") or (name in PROTOCOL_DUNDERS and defines(tensor_class, name)))
