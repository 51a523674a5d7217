"""Compare one PyTorch namespace with Ember's: which names Ember has, and whose signatures differ."""
from __future__ import annotations

import importlib
import inspect
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .names import defines, public_names, tensor_names
from .reasons import reason_for
from .signatures import compare, method_signature, signature_of
from .stubs import is_stub, stubbed_members

#: torch.X is compared with ember.X; "Tensor" with the attributes of the Tensor classes.
NAMESPACES = ("torch", "Tensor", "nn", "nn.functional", "nn.init", "optim", "optim.lr_scheduler", "autograd",
              "utils.data", "linalg", "special", "fft", "distributions", "sparse", "func", "autograd.functional",
              "autograd.forward_ad", "export", "jit", "library", "distributed.fsdp", "distributed.checkpoint",
              "distributed.device_mesh")
_ABSENT = object()


@dataclass
class NamespaceReport:
    namespace: str
    torch_names: list[str]
    present: list[str] = field(default_factory=list)
    missing: dict[str, str | None] = field(default_factory=dict)  # name -> known reason, if any
    stubs: list[str] = field(default_factory=list)  # missing because every call raises NotImplementedError
    mismatches: dict[str, list[str]] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # callable on both sides, a signature unreadable
    compared: int = 0
    ember_found: bool = True

    @property
    def coverage(self) -> float:
        return 100.0 * len(self.present) / len(self.torch_names) if self.torch_names else 100.0

    @property
    def in_scope(self) -> int:
        """How many torch names no out-of-scope reason excludes (present ones always count)."""
        return len(self.torch_names) - sum(reason is not None for reason in self.missing.values())

    @property
    def in_scope_coverage(self) -> float:
        return 100.0 * len(self.present) / self.in_scope if self.in_scope else 100.0


def resolve(root: ModuleType, path: str) -> Any:
    """``root.<path>`` as a module or attribute (``"torch"``: root itself); None where it does not exist."""
    if path == "torch":
        return root
    if path == "Tensor":
        return getattr(root, "Tensor", None)
    full = f"{root.__name__}.{path}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as error:
        if error.name is None or not full.startswith(error.name):
            raise  # the namespace exists but an import inside it is broken: that is a bug to see
    obj: Any = root
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def _lookup(namespace: Any, name: str, is_class: bool) -> Any:
    if namespace is None:
        return _ABSENT
    if is_class:
        if name.startswith("__") and not defines(namespace, name):
            return _ABSENT
        try:
            return inspect.getattr_static(namespace, name)
        except AttributeError:
            return _ABSENT
    return getattr(namespace, name, _ABSENT)


def _is_stubbed(ours: Any, theirs: Any) -> bool:
    if inspect.isclass(ours):
        return inspect.isclass(theirs) and bool(stubbed_members(ours, theirs))
    return is_stub(ours)


def _signatures(name: str, theirs: Any, ours: Any, is_class: bool):
    """(theirs, ours) parameter lists, or None when this name takes no comparison."""
    if is_class:
        theirs, ours = getattr(theirs, "__func__", theirs), getattr(ours, "__func__", ours)
        if name.startswith("__") or isinstance(ours, property) or not (callable(theirs) and callable(ours)):
            return None
        return method_signature(theirs, name, has_self=False), method_signature(ours, name, has_self=True)
    if isinstance(theirs, ModuleType) or not (callable(theirs) and callable(ours)):
        return None
    return signature_of(theirs, name), signature_of(ours, name)


def compare_namespace(label: str, theirs: Any, ours: Any) -> NamespaceReport:
    """PyTorch's ``theirs`` (a module, or the Tensor class) against Ember's ``ours`` (None: absent)."""
    is_class = inspect.isclass(theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated torch aliases warn when merely looked at
        names = tensor_names(theirs) if is_class else public_names(theirs)
        report = NamespaceReport(label, names, ember_found=ours is not None)
        for name in names:
            their_obj = inspect.getattr_static(theirs, name) if is_class else getattr(theirs, name, None)
            our_obj = _lookup(ours, name, is_class)
            stubbed = our_obj is not _ABSENT and _is_stubbed(our_obj, their_obj)
            if our_obj is _ABSENT or stubbed:
                report.missing[name] = reason_for(name, their_obj, label)
                if stubbed:
                    report.stubs.append(name)
                continue
            report.present.append(name)
            pair = _signatures(name, their_obj, our_obj, is_class)
            if pair is None:
                continue
            if None in pair:
                report.unknown.append(name)
                continue
            report.compared += 1
            problems = compare(*pair)
            if problems:
                report.mismatches[name] = problems
    return report


def compare_all(torch: ModuleType, ember: ModuleType, namespaces=NAMESPACES) -> list[NamespaceReport]:
    reports = []
    for path in namespaces:
        theirs = resolve(torch, path)
        if theirs is None:
            raise ValueError(f"ember.compat: torch has no namespace {path!r}; choose from {', '.join(NAMESPACES)}")
        label = "torch.Tensor" if path == "Tensor" else ("torch" if path == "torch" else f"torch.{path}")
        reports.append(compare_namespace(label, theirs, resolve(ember, path)))
    return reports
