"""Indexing: ops that select, place or order elements by index tensors or values.

Advanced indexing, gather and scatter (``indexing``), writing into copies (``scatter_ops``), sorting
(``sorting``), sets (``sets``: unique) and membership (``membership``: isin), and remembered value checks
(``value_checks``, which nn's embedding and losses use for their index inputs too).

A family because its ops validate index tensors the same way (dtypes, shapes, bounds, negative indices
wrapped before a kernel sees them): ``_shared`` holds that validation.
"""
