"""The bottom room of ``ember.dispatch``: the op schema and everything a declaration is written with.

``opdef`` holds ``OpDef``, ``defop`` and ``OPS`` (re-exported here, so ``from ember.dispatch.schema import
OPS, OpDef, defop`` is the schema's one spelling); beside it are what declarations and their hooks use:
arguments read by name (``bound``) and bound from a call (``binding``), shape rules (``meta``), dtypes and
type promotion (``dtypes``, ``promotion``, ``rules``, ``overflow``), devices and the default device
(``device``, ``defaults``) and Ember's errors (``errors``).

It is a room of its own because everything else stands on it: the declarations in ``ops/``, the call path in
``execution/`` and the backend contract in ``contract/`` read the schema, and the schema reads none of them
(``tests/test_import_cycles.py`` holds this, and names the few places where a device or a bound argument
still asks the contract or the tensor link).
"""
from .opdef import (ATTR_TYPES, AUTOCAST_CATEGORIES, AUTOCAST_LISTS, CATEGORIES, FLOAT32_ON_CUDA, KINDS, OPS,
                    REQUIRED, TENSOR_TYPES, Gauge, OpDef, Param, Sample, builtin_ops, composites, declare, defop,
                    parse_signature, primitives, undeclare)

__all__ = ["ATTR_TYPES", "AUTOCAST_CATEGORIES", "AUTOCAST_LISTS", "CATEGORIES", "FLOAT32_ON_CUDA", "KINDS", "OPS",
           "REQUIRED", "TENSOR_TYPES", "Gauge", "OpDef", "Param", "Sample", "builtin_ops", "composites", "declare",
           "defop", "parse_signature", "primitives", "undeclare"]
