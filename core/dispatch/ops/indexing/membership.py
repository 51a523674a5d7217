"""isin: whether each element of one tensor occurs among the elements of another."""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...schema.dtypes import bool_
from ...schema.meta import shape
from ...schema import Sample, defop
from ..elementwise.complex_support import refusing_complex
from ..namespace import F
from ..elementwise.float_args import as_tensors, promoted_dtype


def _isin(elements, test_elements, assume_unique=False, invert=False):
    """Every element against every test element (compared in their promoted dtype); ``assume_unique`` only
    allows a faster algorithm in PyTorch, the answer is the same."""
    elements, test_elements = as_tensors(promoted_dtype(elements, test_elements), elements, test_elements)
    candidates = F.reshape(test_elements, (-1,))
    if not candidates.shape[0]:
        found = F.zeros_like(elements, dtype=bool_)
    else:
        found = F.any(F.eq(F.unsqueeze(elements, -1), candidates), -1)
    return F.logical_not(found) if invert else found


def _isin_samples(make, dtype):
    x = make((3, 4))
    yield Sample((x, F.slice(F.reshape(x, (-1,)), 0, 2, 7)), note="half of the elements")
    yield Sample((make((5,)), make((2, 3))), {"invert": True}, note="invert")
    yield Sample((x, F.reshape(x, (-1,))), {"assume_unique": True}, note="all of them")
    yield Sample((make(()), make((0,))), note="against nothing")


defop("isin(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False)", "indexing",
      torch_keywords={"element": "elements", "test_element": "test_elements"},
      number_operands=("elements", "test_elements"),
      kind="composite", promotion=refusing_complex(rules.to_bool, "Unsupported input type encountered for isin()"),
      meta=lambda elements, *rest: shape(elements), composite=_isin,
      differentiable=False, samples=_isin_samples, method=False,
      reference=lambda elements, test, assume_unique=False, invert=False: np.isin(elements, test, invert=invert),
      doc="elementwise membership of elements in test_elements (memory: their product of sizes)")
