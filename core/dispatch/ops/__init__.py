"""The operator declarations, in families, and the callable namespace built from them.

Each family is a folder of topic modules (``elementwise/``, ``reductions/``, ``indexing/``, ``shapes/``,
``linalg/``, ``nn/``, ``random/``, ``creation/``, ``training/``); a family's ``_shared.py`` holds the
private helpers its modules use from one another, and ``ops/_shared.py`` those used across families.
``onnx_support`` holds the ONNX building blocks lowerings of every family share.

``ember.dispatch.ops.F`` (``namespace``) holds one Python function per declared op; composite
definitions call other ops through it, so they run on any backend.
"""
from __future__ import annotations

from .namespace import F, populate
from . import _declare  # noqa: F401  (declares every op, in order)

populate()
