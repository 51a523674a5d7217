"""The original model seen through its FSDP units: every parameter and buffer under its PyTorch name.

State dicts, optimizer state dicts and ``summon_full_params`` all start here, so they agree on names and
order (the order ``Module.state_dict`` gives the unwrapped model).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...nn.modules.module import Module
from ...tensor import Tensor
from .construction import is_unit
from .flat_param import FlatParamHandle, ParamInfo

WRAPPED = "_fsdp_wrapped_module"


@dataclass
class Entry:
    """One state: a managed parameter (``handle``/``index``), a plain parameter or buffer (``tensor``), or a
    unit's whole shard (kind "flat", for LOCAL state dicts)."""

    key: str
    kind: str  # "param", "buffer" or "flat"
    module: Module | None = None
    name: str = ""
    tensor: Tensor | None = None
    handle: FlatParamHandle | None = None
    index: int = -1
    alias: bool = False  # a tied parameter met again under another name

    @property
    def info(self) -> ParamInfo:
        return self.handle.infos[self.index]


def is_wrapper(module: Module) -> bool:
    """An FSDP wrapper (FSDP1): transparent in names, its module holds the parameters."""
    return is_unit(module) and WRAPPED in module._modules


def entries(top: Module, prefix: str = "") -> list[Entry]:
    found: list[Entry] = []
    seen: set = set()

    def add(entry: Entry) -> None:
        if entry.kind == "param":
            identity = (id(entry.handle), entry.index) if entry.handle is not None else id(entry.tensor)
            entry.alias = identity in seen
            seen.add(identity)
        found.append(entry)

    def visit(m: Module, prefix: str) -> None:
        if is_wrapper(m):
            handle = m._fsdp_state.handle
            if handle is not None:
                found.append(Entry(prefix + "_flat_param", "flat", handle=handle))
            visit(m._modules[WRAPPED], prefix)
            return
        if is_unit(m) and m._fsdp_state.handle is not None:
            found.append(Entry(prefix + "_flat_param", "flat", handle=m._fsdp_state.handle))
        managed = m.__dict__.get("_fsdp_managed", {})
        for name in m.__dict__.get("_fsdp_order", list(m._parameters)):
            if name in managed:
                handle, index = managed[name]
                add(Entry(prefix + name, "param", m, name, handle=handle, index=index))
            elif name != "_flat_param" and m._parameters.get(name) is not None:
                add(Entry(prefix + name, "param", m, name, tensor=m._parameters[name]))
        for name, buffer in m._buffers.items():
            if buffer is not None and name not in m._non_persistent_buffers:
                found.append(Entry(prefix + name, "buffer", m, name, tensor=buffer))
        for name, child in m._modules.items():
            if child is not None:
                visit(child, f"{prefix}{name}.")
    visit(top, prefix)
    return found


def handles(top: Module) -> list[FlatParamHandle]:
    """Every unit's handle under ``top``, once each, in the order ``entries`` meets them."""
    seen: dict[int, FlatParamHandle] = {}
    for entry in entries(top):
        if entry.handle is not None:
            seen.setdefault(id(entry.handle), entry.handle)
    return list(seen.values())
