"""How much of PyTorch's public API Ember has: ``python -m ember.compat``.

For each PyTorch namespace (``torch``, ``torch.Tensor``, ``torch.nn`` ... ``torch.distributions``,
see ``report.NAMESPACES``) the report lists PyTorch's public names (``names``: what counts,
and what is left out and why), marks each present in the matching Ember namespace or missing
(a name whose every call raises ``NotImplementedError`` is missing: ``stubs``), compares the
parameters of callables both have (``signatures``), and groups missing names into a few
known families (``reasons``). It reports on whichever ``ember`` it imports and needs
PyTorch installed; importing this package does not import torch.
"""
from .report import NAMESPACES, NamespaceReport, compare_all, compare_namespace

__all__ = ["NAMESPACES", "NamespaceReport", "compare_all", "compare_namespace"]
