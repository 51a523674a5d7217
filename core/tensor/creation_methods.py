"""Creation methods: tensors made with this tensor's dtype and device (``new_zeros``, ``new_full``,
``new_tensor``, ``new_empty_strided``, the legacy ``new``), and the legacy constructor ``ember.Tensor(...)``."""
from __future__ import annotations

from ..creation import empty_strided, tensor
from ..dispatch.ops import F
from ..legacy_types import construct
from ..memory_format import strided
from . import Tensor


def legacy_constructor(cls, *args, **kwargs) -> Tensor:
    """PyTorch's legacy constructor: ``ember.Tensor([1., 2.])``, ``ember.Tensor(2, 3)`` (uninitialized),
    ``ember.Tensor()`` (empty); see ``legacy_types``. Ember's own code builds tensors with ``wrap``."""
    return construct(None, None, "Tensor", args, kwargs)


def new(self: Tensor, *args, **kwargs) -> Tensor:
    """The legacy constructor with this tensor's dtype and (unless ``device=`` says otherwise) device."""
    kwargs.setdefault("device", self.device)
    return construct(self.dtype, None, "new", args, kwargs)


def _sizes(args) -> tuple:
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else tuple(args)


def _options(self: Tensor, dtype, device) -> dict:
    return {"dtype": self.dtype if dtype is None else dtype, "device": self.device if device is None else device}


def _accept_layout_only(name: str, kwargs: dict) -> None:
    """PyTorch's ``layout=``/``pin_memory=`` are accepted and ignored (strided, unpinned memory only)."""
    unexpected = sorted(set(kwargs) - {"layout", "pin_memory"})
    if unexpected:
        raise TypeError(f"{name}: unexpected keyword argument(s) {unexpected}")


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


def _creator(make):
    """``new_zeros``/``new_ones``/``new_empty``: ``make(size)`` with this tensor's dtype and device by default."""
    def method(self, *size, dtype=None, device=None, requires_grad: bool = False, **kwargs):
        size = kwargs.pop("size", None) if not size and "size" in kwargs else _sizes(size)
        _accept_layout_only(f"new_{make.__name__}", kwargs)
        return _finish(make(tuple(size), **_options(self, dtype, device)), requires_grad)
    method.__name__ = method.__qualname__ = f"new_{make.__name__}"
    return method


new_zeros, new_ones, new_empty = _creator(F.zeros), _creator(F.ones), _creator(F.empty)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device by default."""
    _accept_layout_only("new_full", kwargs)
    if not isinstance(size, (list, tuple)):  # the entries are checked by full's binding
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    out = F.full(tuple(size), fill_value, **_options(self, dtype, device))
    return _finish(out, requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """A copy of ``data`` as a new leaf tensor, with this tensor's dtype and device by default."""
    _accept_layout_only("new_tensor", kwargs)
    if isinstance(data, Tensor):
        data = data.detach()
    out = tensor(data, **_options(self, dtype, device))
    return _finish(out, requires_grad)


def new_empty_strided(self: Tensor, size, stride, dtype=None, device=None, requires_grad: bool = False,
                      layout=strided, pin_memory: bool = False) -> Tensor:
    """``empty_strided`` with this tensor's dtype and device by default."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, layout=layout, device=device or self.device,
                         requires_grad=requires_grad)
