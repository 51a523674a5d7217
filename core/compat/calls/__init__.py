"""The differential API suite: Ember's Python surface called as PyTorch's, on both, compared call by call.

What is called comes from PyTorch itself: every public op of the ``native_functions.yaml`` inside the torch
wheel (``native``), grouped by the Python name it is reached through (``suite.ops``). For each overload a
base call PyTorch accepts is found among a few guesses per argument type and name (``candidates``), and
from it every form the argument parser takes (``forms``): positional and keyword use, NumPy's keyword names,
defaults given explicitly, optional arguments set, Python numbers, 0-d tensors, NumPy scalars, tuples and
``Size`` where a number or a list stands, ``out=``, methods and functions, and values of the wrong type.
Python's protocols and assignment are a matrix of their own (``protocols``). Each call runs on both
frameworks with the same inputs (``values``), and ``outcome.judge`` compares what they did. Differences
Ember keeps on purpose are listed with their reasons in ``exceptions``.

``python -m ember.compat.calls`` prints the counts; ``tests/test_api_conformance.py`` fails on any
difference not listed. Importing this package imports neither torch nor the yaml: ``suite`` reads them.
"""
