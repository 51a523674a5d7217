"""The CPU's add_at: its numba row loop agrees with np.add.at, repeated and negative rows included."""
from __future__ import annotations

import numpy as np
import pytest

from ember.backends.cpu.scatter import add_at


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows_shape, width", [((50,), (4,)), ((6, 7), (3, 2)), ((9,), ())])
def test_row_loop_matches_numpy_add_at(dtype, rows_shape, width):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((5, *width)).astype(dtype)
    rows = rng.integers(-5, 5, rows_shape)  # repeats, and negative rows counting from the end
    values = rng.standard_normal(rows_shape + width).astype(dtype)
    expected = table.copy()
    np.add.at(expected, (rows,), values)
    add_at(table, (rows,), values)
    np.testing.assert_allclose(table, expected, rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_out_of_range_rows_raise_numpys_index_error():
    with pytest.raises(IndexError):
        add_at(np.zeros((3, 2), np.float32), (np.array([0, 3]),), np.ones((2, 2), np.float32))


def test_other_keys_take_numpy_add_at():
    table = np.zeros((3, 4), np.float32)
    add_at(table, (np.array([0, 0]), np.array([1, 1])), np.ones(2, np.float32))
    assert table[0, 1] == 2 and table.sum() == 2
