"""PyTorch's saved-tensor hooks (``torch.autograd.graph``): decide how the tensors backward needs are kept.

Inside ``saved_tensors_hooks(pack, unpack)`` every tensor an op or a Function saves for backward goes through
``pack``, and backward reads ``unpack(packed)`` instead. FSDP uses them to keep gathered parameters out of
the graph between forward and backward; ``save_on_cpu`` keeps activations in host memory.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from . import saved as saving


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it are packed with ``pack_hook`` and unpacked with
    ``unpack_hook`` when backward runs. Nested contexts: the innermost pair applies."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if saving.hook_stack and isinstance(saving.hook_stack[-1][0], str):
            raise RuntimeError(saving.hook_stack[-1][0])
        saving.hook_stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> None:
        saving.hook_stack.pop()


@contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside, registering saved-tensor hooks (or saving a tensor under outer hooks) raises ``error_message``."""
    saving.hook_stack.append((error_message, None))
    try:
        yield
    finally:
        saving.hook_stack.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors wait for backward in host memory and return to their device when needed."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(tensor):
            return tensor.device, tensor.detach().to("cpu")

        def unpack(packed):
            home, kept = packed
            return kept.to(home)
        super().__init__(pack, unpack)
