"""``nn.Module``: parameters, buffers and submodules registered by attribute assignment.

Behaviour, names and state_dict keys follow PyTorch's, so models and checkpoints port over.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from ...autograd.grad_mode import no_grad
from ...compiler.state import module_overrides as _compiled_modules
from ...dispatch.schema.device import device as Device
from ...dispatch.schema.dtypes import as_dtype, bfloat16, float16, float32, float64
from ...tensor import Tensor
from ..parameter import Buffer, Parameter, _register, is_parameter
from .hooks import RemovableHandle, attach_backward_hooks

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Base class of every layer and model. Subclasses set attributes in ``__init__`` and define ``forward``."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments: got {args} {kwargs}")
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers", set())
        set_(self, "_modules", OrderedDict())
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_backward_hooks", OrderedDict())

    forward: Callable[..., Any]

    def forward(self, *args, **kwargs):  # noqa: F811
        raise NotImplementedError(f"{type(self).__name__} has no forward(); define forward(self, ...) in the subclass")

    # -- calling -----------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _compiled_modules:  # a compiled function whose capture broke runs this module compiled
            compiled = _compiled_modules.get(id(self))
            if compiled is not None and not compiled.running:
                return compiled(*args, **kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks):
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        if self._backward_hooks:
            args, finish = attach_backward_hooks(self, args, list(self._backward_hooks.values()))
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        if self._backward_hooks:
            output = finish(output)
        return output

    # -- registration ------------------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Buffer):
            self.register_buffer(name, value.data, value.persistent)
        elif is_parameter(value):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._discard(name)
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign modules before Module.__init__() call")
            self._discard(name)
            self._modules[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(nn.Parameter or None expected)")
            params[name] = None
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(nn.Module or None expected)")
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name: str) -> None:
        for store in (self.__dict__, self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            values = d.get(store)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name: str, param) -> None:
        _check_name(self, name, "parameter")
        if param is not None and not is_parameter(param):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            f"(nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None "
                            f"required)")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module) -> None:
        _check_name(self, name, "module", allow_dots=False)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        module = self
        for part in filter(None, target.split(".")):
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no submodule '{part}' (looking up '{target}')")
            module = child
        return module

    def _get_member(self, target: str, store: str, kind: str):
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner)
        members = getattr(module, store)
        if name not in members:
            raise AttributeError(f"{type(module).__name__} has no {kind} '{name}'")
        return members[name]

    def get_parameter(self, target: str):
        return self._get_member(target, "_parameters", "parameter")

    def get_buffer(self, target: str):
        return self._get_member(target, "_buffers", "buffer")

    # -- traversal ---------------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        memo = set() if memo is None else memo
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # -- modes -------------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                with no_grad():
                    param.grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- moving and casting ------------------------------------------------------------------------
    def _apply(self, convert: Callable[[Tensor], Tensor], floating_only: bool = False,
               complex_too: bool = False) -> "Module":
        """Convert every parameter and buffer (only floating ones, and complex ones with ``complex_too``, where
        ``floating_only``); parameters keep their identity (optimizers hold them)."""
        def skipped(t: Tensor | None) -> bool:
            return t is None or (floating_only and not (t._dtype.is_floating_point
                                                        or (complex_too and t._dtype.is_complex)))

        for module in self.modules():
            for name, param in module._parameters.items():
                if skipped(param):
                    continue
                with no_grad():
                    converted = convert(param)
                if converted is not param:
                    param.data = converted
                if param.grad is not None:
                    with no_grad():
                        param.grad = convert(param.grad)
            for name, buffer in module._buffers.items():
                if skipped(buffer):
                    continue
                module._buffers[name] = convert(buffer)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """``to(device)``, ``to(dtype)`` (floating and complex tensors only), ``to(device, dtype)``, ``to(tensor)``."""
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, (str, Device)):
                device = a
            elif a is not None:
                dtype = a
        if dtype is not None:
            dtype = as_dtype(dtype)
            if not dtype.is_inexact:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")
        if device is not None:
            self._apply(lambda t: t.to(device))
        if dtype is not None:
            self._apply(lambda t: t.to(dtype), floating_only=True, complex_too=True)
        return self

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def float(self) -> "Module":
        return self._apply(lambda t: t.to(float32), floating_only=True)

    def double(self) -> "Module":
        return self._apply(lambda t: t.to(float64), floating_only=True)

    def half(self) -> "Module":
        return self._apply(lambda t: t.to(float16), floating_only=True)

    def bfloat16(self) -> "Module":
        return self._apply(lambda t: t.to(bfloat16), floating_only=True)

    # -- state -------------------------------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers by dotted name, PyTorch's keys. Values are detached."""
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Copy values in place (or assign them); report missing/unexpected keys and shape mismatches."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                mismatched.append(f'While copying the parameter named "{key}", expected a Tensor, got '
                                  f'{type(value).__name__}.')
                continue
            if tuple(value.shape) != tuple(target.shape):
                mismatched.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from "
                                  f"checkpoint, the shape in current model is {tuple(target.shape)}.")
        errors = []
        if strict:
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        errors.extend(mismatched)
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        for key, target in own.items():
            if key in state_dict:
                self._load_one(key, target, state_dict[key], assign)
        return IncompatibleKeys(missing, unexpected)

    def _load_one(self, key: str, target: Tensor, value: Tensor, assign: bool) -> None:
        owner, _, name = key.rpartition(".")
        module = self.get_submodule(owner)
        if assign:
            if name in module._parameters:
                module._parameters[name] = Parameter(value.detach(), requires_grad=target.requires_grad)
            else:
                module._buffers[name] = value
            return
        with no_grad():
            target.copy_(value.to(target.device))

    # -- hooks -------------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        return RemovableHandle.add(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook) -> RemovableHandle:
        return RemovableHandle.add(self._forward_hooks, hook)

    def register_full_backward_hook(self, hook) -> RemovableHandle:
        return RemovableHandle.add(self._backward_hooks, hook)

    # -- printing ----------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            child = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        body = "\n  ".join(lines)
        return f"{self._get_name()}(\n  {body}\n)"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state) -> None:
        """Copies (deepcopy, pickle) hold new tensor objects: register them as parameters again."""
        self.__dict__.update(state)
        for param in state.get("_parameters", {}).values():
            if param is not None and not is_parameter(param):
                _register(param)


def _check_name(module: Module, name: str, kind: str, allow_dots: bool = False) -> None:
    if "_parameters" not in module.__dict__:
        raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if not name or ("." in name and not allow_dots):
        raise KeyError(f'{kind} name can\'t be empty or contain ".", got: "{name}"')
    if hasattr(module, name) and name not in module._parameters and name not in module._buffers \
            and name not in module._modules:
        raise KeyError(f"attribute '{name}' already exists")
