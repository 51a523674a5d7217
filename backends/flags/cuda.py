"""``ember.backends.cuda.matmul`` and ``ember.backends.cuda.is_built()``, as ``torch.backends.cuda``'s."""
from __future__ import annotations

from ember.dispatch import FLAGS, registry


def is_built() -> bool:
    """Whether a backend plugin for device type "cuda" is installed (CUDA may still be unavailable here)."""
    return "cuda" in registry.backends()


def _reduction_setting(name: str, value) -> tuple:
    """A bool, or (allow_reduced_precision[, allow_split_k]) as PyTorch accepts."""
    if isinstance(value, bool):
        return value, True
    if isinstance(value, (list, tuple)) and 1 <= len(value) <= 2 and all(isinstance(v, bool) for v in value):
        return tuple(value) + (True,) * (2 - len(value))
    raise TypeError(f"{name} expects a bool or a tuple/list of one or two bools, got {value!r}")


class MatmulFlags:
    """``matmul.allow_tf32`` and friends: attribute reads and writes of ``ember.dispatch.FLAGS``.

    ``allow_tf32`` is another view of ``ember.get_float32_matmul_precision()``: True unless "highest".
    Unknown attribute names raise AttributeError, as in PyTorch, so a typo does not pass silently.
    """

    def __getattr__(self, name: str):
        if name == "allow_tf32":
            return FLAGS.float32_matmul_precision != "highest"
        if name in ("allow_fp16_reduced_precision_reduction", "allow_fp16_reduced_precision_reduction_split_k"):
            return FLAGS.fp16_reduced_precision_reduction[name.endswith("split_k")]
        if name in ("allow_bf16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction_split_k"):
            return FLAGS.bf16_reduced_precision_reduction[name.endswith("split_k")]
        if name == "allow_fp16_accumulation":
            return FLAGS.fp16_accumulation
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value) -> None:
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise TypeError(f"allow_tf32 expects a bool, got {value!r}")
            FLAGS.float32_matmul_precision = "high" if value else "highest"
        elif name == "allow_fp16_reduced_precision_reduction":
            FLAGS.fp16_reduced_precision_reduction = _reduction_setting(name, value)
        elif name == "allow_bf16_reduced_precision_reduction":
            FLAGS.bf16_reduced_precision_reduction = _reduction_setting(name, value)
        elif name == "allow_fp16_accumulation":
            if not isinstance(value, bool):
                raise TypeError(f"allow_fp16_accumulation expects a bool, got {value!r}")
            FLAGS.fp16_accumulation = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = MatmulFlags()
