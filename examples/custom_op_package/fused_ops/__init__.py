"""Fused ops for Ember, shipped as a third-party package ships custom ops: importing it defines them.

    import fused_ops
    y = fused_ops.bias_gelu(x, bias)                  # or ember.ops.fused_ops.bias_gelu(x, bias)
"""
from .bias_gelu import bias_gelu

__all__ = ["bias_gelu"]
