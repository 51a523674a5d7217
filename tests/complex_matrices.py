"""Complex test matrices shared by the complex linalg tests: random, well-conditioned, Hermitian positive
definite and triangular, seeded, as NumPy arrays of an Ember dtype's NumPy counterpart."""
import numpy as np


def random_matrix(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.dtype(dtype.name))


def invertible(shape, dtype, seed):
    """Diagonally dominant: far from singular, LU's pivots unambiguous."""
    return (random_matrix(shape, dtype, seed) + 3 * shape[-1] * np.eye(shape[-1])).astype(np.dtype(dtype.name))


def hermitian_positive(shape, dtype, seed):
    a = random_matrix(shape, dtype, seed)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(np.dtype(dtype.name))


def triangular(shape, dtype, seed, upper):
    a = invertible(shape, dtype, seed)
    return np.triu(a) if upper else np.tril(a)
