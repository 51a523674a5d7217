"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from __future__ import annotations

from collections import OrderedDict

from ..parameter import Parameter, is_parameter
from .module import Module


def _index(i: int, length: int, kind: str) -> int:
    if not -length <= i < length:
        raise IndexError(f"index {i} is out of range for a {kind} of length {length}")
    return i % length


class Sequential(Module):
    """Modules applied in order: ``Sequential(a, b)`` or ``Sequential(OrderedDict(name=module))``."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index):
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(items[index]))
        return items[_index(index, len(items), "Sequential")][1]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_index(index, len(self._modules), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)
        for key in (keys[index] if isinstance(index, slice) else [keys[_index(index, len(keys), "Sequential")]]):
            del self._modules[key]
        self._renumber()

    def _renumber(self) -> None:
        if all(k.isdigit() for k in self._modules):
            items = list(self._modules.values())
            self._modules.clear()
            for i, m in enumerate(items):
                self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "Sequential":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)
        return self


class ModuleList(Module):
    """A list of modules, registered so that their parameters are found."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        items = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(items[index])
        return items[_index(index, len(items), "ModuleList")]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_index(index, len(self), "ModuleList")), module)

    def __delitem__(self, index) -> None:
        items = list(self._modules.values())
        del items[index]
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules) -> "ModuleList":
        return self.extend(modules)

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """A dict of modules by name."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module


class ParameterList(Module):
    """A list of parameters (tensors are made parameters when added)."""

    def __init__(self, values=None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, index):
        items = list(self._parameters.values())
        if isinstance(index, slice):
            return ParameterList(items[index])
        return items[_index(index, len(items), "ParameterList")]

    def __setitem__(self, index: int, value) -> None:
        self.register_parameter(str(_index(index, len(self), "ParameterList")),
                                value if is_parameter(value) else Parameter(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value) -> "ParameterList":
        self.register_parameter(str(len(self)), value if is_parameter(value) else Parameter(value))
        return self

    def extend(self, values) -> "ParameterList":
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter containing: [tensor of shape {tuple(p.shape)} ({p.dtype.name})]"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters by name."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            pairs = parameters.items() if hasattr(parameters, "items") else parameters
            for key, value in pairs:
                self[key] = value

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, value if is_parameter(value) else Parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()


class Container(Module):
    """PyTorch's deprecated predecessor of Module: registers its keyword arguments as submodules."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        import warnings
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)
