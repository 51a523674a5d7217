"""Ember's backend conformance suite: one command verifies any backend against the op schema.

    pytest --pyargs ember.conformance --backend cpu        # or cuda, opencl, a third-party plugin
    pytest --pyargs ember.conformance --backend opencl --hypothesis-profile thorough
    EMBER_HYPOTHESIS_PROFILE=thorough pytest --pyargs ember.conformance
    python -m ember.conformance --backend opencl --report opencl.md   # the same tests, as an op × dtype matrix

Every op in ``ember.dispatch.OPS`` runs on the backend for every dtype the backend supports
and the op accepts. Its inputs are the op's declared ``samples`` plus, for elementwise ops
and reductions, samples generated from the signature (0-d, empty, broadcasting, strided,
special floats, dims and keepdim; hypothesis generates more), constrained by the op's
``domain`` hints. Results are compared with the op's NumPy ``reference`` (NaN equal to NaN,
per-dtype tolerances that ``OpDef.tolerances`` may override, eigen- and singular vectors up to
the signs ``OpDef.gauge`` leaves free); dtypes with the promotion
rule, shapes with the meta function. Every differentiable op's gradients are checked against
finite differences in float64 (first and second order) and, for the other floating dtypes,
against the CPU backend's float64 gradients. The hand-written modules check what the schema cannot
say: type promotion, views and in-place writes, device round trips, error messages and
random-number generators. A backend that cannot run here skips every test with its reason.

Complex dtypes (complex64, complex128) are sampled like the others wherever the backend lists them and an
op accepts them, with a lean set of samples per op (see ``samples``), values compared as complex numbers (NaN
in either part is one complex NaN, as in ``torch.isclose``), and gradients checked by PyTorch's convention
(``wirtinger``: central differences of the real and imaginary parts). ``complex_parity``
(``scripts/complex_parity.py``) compares them with PyTorch.

Modules: ``plugin`` (pytest options, profiles and fixtures; loaded in every pytest run),
``profiles`` (hypothesis settings), ``target`` (the backend under test), ``cases`` (which
op and dtype pairs), ``make`` (seeded sample tensors), ``samples`` (fixed and generated
inputs), ``oracle`` (expected dtypes, shapes and reference values), ``compare``
(tolerances), ``gauge`` (eigen- and singular vectors compared and differentiated up to sign, as
``OpDef.gauge`` declares), ``checks`` (one sample, checked), ``gradients`` (one sample as a differentiable
function, and its CPU float64 reference), ``wirtinger`` (finite differences where complex tensors are
involved), ``complex_parity`` (values and gradients against PyTorch, op by op), ``fused`` (one sample as
the elementwise programs a backend's optional ``fuse_elementwise`` hook gets), and the ``test_*`` modules
(``test_gradients`` per op, ``test_autograd`` for the engine on the device, ``test_fusion`` for the hook).
The report command (``__main__``) runs them through pytest with ``record`` (each test's outcome, by op and
dtype), ``progress`` (the live display), ``matrix`` (the op × dtype statuses) and ``report`` (the terminal
table and the Markdown report).
"""
