"""The fuzzer, on any backend: random calls of every op of the schema, every Tensor method and indexing, valid
and hostile alike, each of which must return or fail cleanly (``verdicts``). ``test_fuzz`` runs its quick
profile in the conformance suite; ``python -m ember.conformance.fuzzing`` runs a timed campaign with a summary
line, and compares with PyTorch where it is installed."""
