"""A seedable generator on NumPy's Philox counter-based bit generator.

It offers the draws the shared random kernels ask for (``uniform``, ``normal``, ``integers``).
"""
from __future__ import annotations

import numpy as np

_STATE_WORDS = 13  # counter (4), key (2), buffer (4), buffer_pos, has_uint32, uinteger


class CpuGenerator:
    def __init__(self, seed: int) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self.initial_seed = int(seed)
        self.numpy = np.random.Generator(np.random.Philox(self.initial_seed))

    def uniform(self, size, dtype) -> np.ndarray:
        return self.numpy.random(size, dtype=dtype)

    def normal(self, size, dtype) -> np.ndarray:
        return self.numpy.standard_normal(size, dtype=dtype)

    def integers(self, low: int, high: int, size) -> np.ndarray:
        return self.numpy.integers(low, high, size, dtype=np.int64)

    def get_state(self) -> bytes:
        """The full Philox state as bytes, so that it can be checkpointed like any tensor."""
        state = self.numpy.bit_generator.state
        inner = state["state"]
        words = np.concatenate([inner["counter"], inner["key"], state["buffer"],
                                np.array([state["buffer_pos"], state["has_uint32"], state["uinteger"]],
                                         dtype=np.uint64)]).astype("<u8")
        return words.tobytes()

    def set_state(self, state: bytes) -> None:
        words = np.frombuffer(bytes(state), dtype="<u8")
        if words.size != _STATE_WORDS:
            raise ValueError(f"set_state: expected {_STATE_WORDS * 8} bytes of Philox state, got {len(state)}")
        self.numpy.bit_generator.state = {
            "bit_generator": "Philox", "state": {"counter": words[0:4].copy(), "key": words[4:6].copy()},
            "buffer": words[6:10].copy(), "buffer_pos": int(words[10]), "has_uint32": int(words[11]),
            "uinteger": int(words[12])}
