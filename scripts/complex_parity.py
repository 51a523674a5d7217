#!/usr/bin/env python
"""Parity of Ember's complex numbers and ember.fft with PyTorch, op by op, on one backend.

    scripts/complex_parity.py --backend cpu|opencl|template [--ops add,fft_fft] [--no-grad] [--failures]

Prints a row per op and dtype (largest absolute and relative errors of values and gradients, pass or why not)
and a summary line; exits 1 when a row that could be compared fails. The work is
``ember.conformance.complex_parity``'s.
"""
from __future__ import annotations

import sys

from ember.conformance.complex_parity import main

if __name__ == "__main__":
    sys.exit(main())
