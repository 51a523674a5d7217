"""Training-step ops: one call per parameter for a whole optimizer update (``optim``, with the
``adam_scalars`` backends' fused kernels share) and gradient scaling for ``ember.amp`` (``amp``).
"""
