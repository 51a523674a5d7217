"""A seedable generator on NumPy's Philox counter-based bit generator."""
from __future__ import annotations

import numpy as np


class CpuGenerator:
    def __init__(self, seed: int) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self.initial_seed = int(seed)
        self.numpy = np.random.Generator(np.random.Philox(self.initial_seed))

    def get_state(self):
        return self.numpy.bit_generator.state

    def set_state(self, state) -> None:
        self.numpy.bit_generator.state = state
