"""Every bundled kernel of an op with a scalar formula is that formula rendered, or listed with its reason in
``ember.backends.codegen.handwritten`` (and every listed entry still applies)."""
from __future__ import annotations

import pytest

import ember
from ember.backends.arraykernels import build_kernels
from ember.backends.codegen.handwritten import HANDWRITTEN
from ember.backends.cpu.library import NUMPY
from ember.dispatch import OPS, registry

FORMULA_OPS = sorted(name for name, op in OPS.items() if op.scalar is not None)
#: CUDA's overrides of the shared table rendered from their formula (backends/cuda/fused/gelu.py)
CUDA_RENDERED = ("gelu",)


def _cuda_table() -> dict:
    """The kernels CUDA builds from the shared array code (built here for NumPy: CI has no GPU), less the
    overrides rendered from formulas."""
    return {name: kernel for name, kernel in build_kernels(NUMPY).items() if name not in CUDA_RENDERED}


def _table(backend: str) -> dict:
    if backend == "cuda":
        return _cuda_table()
    if ember.backends.available().get(backend) != "available":
        pytest.skip(f"{backend} is {ember.backends.available().get(backend)}")
    return registry.get_backend(backend).kernels


@pytest.mark.parametrize("backend", ["cpu", "cuda", "opencl"])
def test_formula_ops_have_rendered_kernels_or_a_listed_reason(backend):
    kernels, listed = _table(backend), HANDWRITTEN[backend]
    unlisted = [name for name in FORMULA_OPS if name in kernels and name not in listed
                and getattr(kernels[name], "formula", None) != name]
    assert unlisted == [], f"{backend}: hand-written kernels of formula ops, neither rendered nor listed"
    # a listed op's kernel is hand-written, or rendered with a hand-written part for some calls (``by_hand``)
    stale = [name for name in listed if name not in FORMULA_OPS or name not in kernels
             or (getattr(kernels[name], "formula", None) == name and getattr(kernels[name], "by_hand", None) is None)]
    assert stale == [], f"{backend}: listed as hand-written but not (any more)"
