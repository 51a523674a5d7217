"""Elementwise ops: one output element from the elements at the same position of the (broadcast) inputs.

Arithmetic, comparisons and logic (``elementwise``), more math as composites (``pointwise_math``,
``trigonometric``, ``rounding``, ``bitwise``), ``closeness`` (isclose), the activations (``activations``),
the special functions (``special`` and ``special_*``, with their shared pieces in ``special_support``) and the
ops of complex numbers (``complex_numbers``: angle, sgn, conj_physical, complex, polar; ``complex_support`` holds
what the complex-capable ops share: free conjugation of real values and PyTorch's refusals).
``float_args`` (the one float dtype of a composite's operands) and ``opmath`` (half precision computed in
float32, rounded once) are helpers; ``opmath`` serves the reductions and nn families too.

A family because its ops share one shape rule (broadcasting), the ``scalar=`` formulas fusion renders, and
these helpers.
"""
