"""Ember's backend conformance suite: one command verifies any backend against the op schema.

    pytest --pyargs ember.conformance --backend cpu        # or cuda, opencl, a third-party plugin
    pytest --pyargs ember.conformance --backend opencl --hypothesis-profile thorough

Every op in ``ember.dispatch.OPS`` is run on the backend for every dtype it supports,
with the op's declared ``samples`` (or samples generated from its signature and
category) and compared with its NumPy ``reference``. The hand-written modules check
what the schema cannot express: type promotion, views and in-place writes, device
round trips, error messages and random-number generators.

Layout: ``plugin`` (pytest options, profiles, fixtures; loaded in every pytest run),
``target`` (the backend under test), ``make`` (seeded sample tensors), ``samples``
(fixed and hypothesis-generated inputs), ``oracle`` (expected dtypes, shapes and
reference values), ``compare`` (tolerances), ``test_*`` (the tests).
"""
