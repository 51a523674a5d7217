"""ember.linalg and torch's linear-algebra names against PyTorch itself: values, and gradients of losses that are
gauge-invariant where the decomposition has a gauge (svd, eigh), on symmetrized inputs where the op reads one
triangle (cholesky, eigh), as PyTorch's own tests do."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.linalg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(15)


def _random(*shape):
    return RNG.standard_normal(shape)


def _well_conditioned(*shape):
    return _random(*shape) + np.eye(shape[-2], shape[-1]) * (min(shape[-2:]) + 2)


def _spd(*shape):
    x = _random(*shape)
    return x @ np.swapaxes(x, -1, -2) + np.eye(shape[-1]) * shape[-1]


def _sym(lib):
    return lambda a: (a + a.transpose(-1, -2)) / 2


def _outputs(result):
    return list(result) if isinstance(result, tuple) else [result]


def _loss(outputs, weights, lib):
    """sum of w * out over the floating outputs: a fixed random linear functional of every output."""
    total = 0
    for out, w in zip(outputs, weights):
        if out.dtype in (lib.float32, lib.float64) and out.numel():
            total = total + (out * lib.tensor(w)).sum()
    return total


def _check(ember_fn, torch_fn, arrays, grad=True, atol=1e-7, rtol=1e-6):
    """Forward values equal, and (grad) the gradients of a random linear loss of every floating output."""
    e_in = [ember.tensor(a, requires_grad=grad) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=grad) for a in arrays]
    e_out, t_out = _outputs(ember_fn(*e_in)), _outputs(torch_fn(*t_in))
    assert len(e_out) == len(t_out)
    for e, t in zip(e_out, t_out):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=atol, rtol=rtol)
    if not grad:
        return
    weights = [RNG.standard_normal(tuple(t.shape)) for t in t_out]
    _loss(e_out, weights, ember).backward()
    _loss(t_out, weights, torch).backward()
    for e, t in zip(e_in, t_in):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-6, rtol=1e-5)


def _both(name):
    """The function ``name`` of ember.linalg and of torch.linalg."""
    return getattr(ember.linalg, name), getattr(torch.linalg, name)


# -- decompositions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    e, t = _both("cholesky")
    _check(lambda a: e(_sym(ember)(a), upper=upper), lambda a: t(_sym(torch)(a), upper=upper), [_spd(2, 3, 3)])
    lopsided = _spd(3, 3) + np.triu(_random(3, 3), 1)  # which triangle is read shows
    _check(lambda a: e(a, upper=upper), lambda a: t(a, upper=upper), [lopsided], grad=False)
    eigh_e, eigh_t = _both("eigh")
    _check(lambda a: eigh_e(a, "U" if upper else "L")[0], lambda a: eigh_t(a, "U" if upper else "L")[0], [lopsided],
           grad=False)


@pytest.mark.parametrize("shape,mode", [((4, 3), "reduced"), ((3, 3), "complete"), ((2, 2, 4), "reduced"),
                                        ((2, 3, 5), "complete")])
def test_qr(shape, mode):
    e, t = _both("qr")
    _check(lambda a: e(a, mode=mode), lambda a: t(a, mode=mode), [_well_conditioned(*shape)])


def test_qr_mode_r_has_no_derivative():
    a = ember.tensor(_random(3, 2), requires_grad=True)
    q, r = ember.linalg.qr(a, mode="r")
    assert tuple(q.shape) == (0,)
    np.testing.assert_allclose(np.abs(r.detach().numpy()), np.abs(torch.linalg.qr(torch.tensor(a.detach().numpy()),
                                                                                    mode="r")[1].numpy()))
    with pytest.raises(ember.EmberError, match="mode='r'"):
        r.sum().backward()


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3, 5)])
def test_svd_gauge_invariant_losses(shape):
    """|U|, |Vh| and S: invariant under the sign flips that make singular vectors unique only up to sign."""
    e, t = _both("svd")

    def invariant(lib, fn):
        def run(a):
            u, s, vh = fn(a, full_matrices=False)
            return (u @ vh) if shape[-1] == shape[-2] else u.abs(), s, vh.abs() * 1.0
        return run
    _check(invariant(ember, e), invariant(torch, t), [_random(*shape)])


def test_svd_full_matrices_values():
    a = _random(2, 4, 3)
    u, s, vh = ember.linalg.svd(ember.tensor(a))
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a))
    assert type(ember.linalg.svd(ember.tensor(a))).__name__ == "linalg_svd"
    assert tuple(u.shape) == tuple(tu.shape) and tuple(vh.shape) == tuple(tvh.shape)
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-10)
    np.testing.assert_allclose(np.abs(u.numpy()[..., :3]), np.abs(tu.numpy()[..., :3]), atol=1e-10)


def test_eigh_gauge_invariant_loss():
    e, t = _both("eigh")

    def invariant(lib, fn):
        def run(a):
            values, vectors = fn(_sym(lib)(a))
            return values, vectors * vectors  # a squared entry does not see the eigenvector's sign
        return run
    _check(invariant(ember, e), invariant(torch, t), [_spd(2, 4, 4)])


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (5, 3), (3, 5)])
def test_lu_factor_and_lu(shape):
    _check(ember.linalg.lu_factor_ex, torch.linalg.lu_factor_ex, [_random(*shape)])
    _check(ember.linalg.lu, torch.linalg.lu, [_random(*shape)])


@pytest.mark.parametrize("upper,left,unitriangular", [(True, True, False), (False, False, True),
                                                       (False, True, False)])
def test_solve_triangular(upper, left, unitriangular):
    e, t = _both("solve_triangular")
    b = _random(2, 3, 2) if left else _random(2, 2, 3)
    _check(lambda a, b: e(a, b, upper=upper, left=left, unitriangular=unitriangular),
           lambda a, b: t(a, b, upper=upper, left=left, unitriangular=unitriangular), [_well_conditioned(3, 3), b])


# -- solving, inverting, determinants ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "inv_ex", "matrix_exp", "pinv", "svdvals",
                                  "eigvalsh", "tensorinv"])
def test_one_matrix_functions(name):
    e, t = _both(name)
    a = _spd(2, 4, 4) if name in ("eigvalsh", "slogdet") else _random(2, 4, 4) + 2 * np.eye(4)
    if name == "eigvalsh":
        e_fn, t_fn = (lambda a: e(_sym(ember)(a))), (lambda a: t(_sym(torch)(a)))
    elif name == "tensorinv":
        a = _well_conditioned(6, 6).reshape(2, 3, 6)
        e_fn, t_fn = e, t
    else:
        e_fn, t_fn = e, t
    _check(e_fn, t_fn, [a])


@pytest.mark.parametrize("left", [True, False])
def test_solve_and_lu_solve(left):
    a, b = _well_conditioned(2, 3, 3), _random(2, 3, 2) if left else _random(2, 2, 3)
    _check(lambda a, b: ember.linalg.solve(a, b, left=left), lambda a, b: torch.linalg.solve(a, b, left=left), [a, b])
    _check(lambda a, b: ember.linalg.solve_ex(a, b, left=left), lambda a, b: torch.linalg.solve_ex(a, b, left=left),
           [a, b])
    for adjoint in (False, True):
        def run(linalg):
            def fn(a, b):
                lu, pivots = linalg.lu_factor(a)
                return linalg.lu_solve(lu, pivots, b, left=left, adjoint=adjoint)
            return fn
        _check(run(ember.linalg), run(torch.linalg), [a, b])


def test_solve_vector_right_side():
    _check(ember.linalg.solve, torch.linalg.solve, [_well_conditioned(2, 3, 3), _random(2, 3)])


@pytest.mark.parametrize("driver", [None, "gelsd", "gels"])
def test_lstsq(driver):
    def run(linalg):
        return lambda a, b: tuple(linalg.lstsq(a, b, driver=driver))
    _check(run(ember.linalg), run(torch.linalg), [_random(5, 3), _random(5, 2)])


def test_lstsq_underdetermined_is_minimum_norm():
    _check(lambda a, b: ember.linalg.lstsq(a, b, driver="gelsd").solution,
           lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd").solution, [_random(2, 4), _random(2, 1)])


# -- norms and the rest -----------------------------------------------------------------------------

@pytest.mark.parametrize("ord", ["fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2])
def test_matrix_norm(ord):
    e, t = _both("matrix_norm")
    _check(lambda a: e(a, ord), lambda a: t(a, ord), [_random(2, 3, 4)])
    _check(lambda a: e(a, ord, dim=(0, 2), keepdim=True), lambda a: t(a, ord, dim=(0, 2), keepdim=True),
           [_random(3, 2, 4)])


@pytest.mark.parametrize("ord", [2, 1, np.inf, -np.inf, 0, 3.5])
def test_vector_norm(ord):
    e, t = _both("vector_norm")
    _check(lambda a: e(a, ord, dim=-1), lambda a: t(a, ord, dim=-1), [_random(3, 4)], grad=ord != 0)


@pytest.mark.parametrize("args", [(), ("nuc",), (1, 1), (None, (0, 1))])
def test_norm_dispatch(args):
    e, t = _both("norm")
    _check(lambda a: e(a, *args), lambda a: t(a, *args), [_random(3, 4)])


@pytest.mark.parametrize("p", [None, 2, -2, "fro", 1, np.inf])
def test_cond(p):
    """Gradients for the singular-value orders only: PyTorch's own backward of the others fails (it writes into
    linalg.inv_ex's output in place)."""
    e, t = _both("cond")
    _check(lambda a: e(a, p), lambda a: t(a, p), [_well_conditioned(2, 3, 3)], grad=p in (None, 2, -2))


def test_matrix_rank_and_power():
    low = _random(4, 2) @ _random(2, 4)
    assert ember.linalg.matrix_rank(ember.tensor(low)).item() == torch.linalg.matrix_rank(torch.tensor(low)).item()
    assert ember.linalg.matrix_rank(ember.tensor(_spd(4, 4)), hermitian=True).item() == 4
    for n in (0, 1, 3, -2):
        _check(lambda a: ember.linalg.matrix_power(a, n), lambda a: torch.linalg.matrix_power(a, n),
               [_well_conditioned(2, 3, 3)])


def test_products():
    _check(ember.linalg.cross, torch.linalg.cross, [_random(4, 3), _random(1, 3)])
    _check(ember.linalg.vecdot, torch.linalg.vecdot, [_random(3, 4), _random(4)])
    _check(lambda *m: ember.linalg.multi_dot(list(m)), lambda *m: torch.linalg.multi_dot(list(m)),
           [_random(3), _random(3, 4), _random(4, 2), _random(2)])
    _check(ember.linalg.householder_product, torch.linalg.householder_product, [_random(4, 3), _random(3)])
    _check(ember.linalg.vander, torch.linalg.vander, [_random(2, 4)])
    _check(lambda a, b: ember.linalg.tensorsolve(a, b), lambda a, b: torch.linalg.tensorsolve(a, b),
           [_well_conditioned(6, 6).reshape(2, 3, 6), _random(2, 3)])
    x = _random(3, 4)
    np.testing.assert_allclose(ember.linalg.diagonal(ember.tensor(x), offset=1).numpy(),
                               torch.linalg.diagonal(torch.tensor(x), offset=1).numpy())


# -- torch-level names ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,make", [
    ("det", lambda: [_random(2, 3, 3)]), ("logdet", lambda: [_spd(3, 3)]), ("slogdet", lambda: [_random(3, 3)]),
    ("inverse", lambda: [_well_conditioned(3, 3)]), ("pinverse", lambda: [_random(4, 3)]),
    ("matrix_exp", lambda: [_random(3, 3)]), ("qr", lambda: [_random(4, 3)]),
    ("lu_solve", lambda: [_random(3, 2), *[t.numpy() for t in torch.linalg.lu_factor(torch.tensor(_random(3, 3)))]]),
    ("triangular_solve", lambda: [_random(3, 2), _well_conditioned(3, 3)]),
    ("cross", lambda: [_random(3, 4), _random(3, 4)]), ("dist", lambda: [_random(3, 4), _random(4)]),
    ("orgqr", lambda: [_random(4, 3), _random(3)]),
    ("ormqr", lambda: [_random(4, 3), _random(3), _random(4, 2)]),
    ("renorm", lambda: [_random(3, 4), 2, 0, 1.0]), ("norm_except_dim", lambda: [_random(3, 4), 2, 1]),
    ("frobenius_norm", lambda: [_random(3, 4), (0, 1)]), ("nuclear_norm", lambda: [_random(3, 4)]),
])
def test_torch_level(name, make):
    values = make()
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    rest = values[len(arrays):]
    grad = name not in ("lu_solve",)
    ints = [i for i, a in enumerate(arrays) if a.dtype.kind == "i"]
    if ints:  # pivots are not differentiable inputs
        pivots = arrays.pop(ints[0])
        _check(lambda b, lu: getattr(ember, name)(b, lu, ember.tensor(pivots)),
               lambda b, lu: getattr(torch, name)(b, lu, torch.tensor(pivots)), arrays)
        return
    _check(lambda *a: getattr(ember, name)(*a, *rest), lambda *a: getattr(torch, name)(*a, *rest), arrays, grad=grad)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    """Values, and the gradients on the factor's triangle: entries outside it do not touch the result, so Ember
    gives them no gradient (finite differences agree), where PyTorch's formula spreads some onto them."""
    factor = np.linalg.cholesky(_spd(3, 3))
    factor = factor.T if upper else factor
    keep = np.triu(np.ones((3, 3))) if upper else np.tril(np.ones((3, 3)))
    for name, args in (("cholesky_solve", [_random(3, 2), factor]), ("cholesky_inverse", [factor])):
        e_in = [ember.tensor(a, requires_grad=True) for a in args]
        t_in = [torch.tensor(a, requires_grad=True) for a in args]
        e_out, t_out = getattr(ember, name)(*e_in, upper), getattr(torch, name)(*t_in, upper)
        np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), atol=1e-10)
        w = RNG.standard_normal(tuple(t_out.shape))
        (e_out * ember.tensor(w)).sum().backward()
        (t_out * torch.tensor(w)).sum().backward()
        for e, t in zip(e_in[:-1], t_in[:-1]):
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-8)
        np.testing.assert_allclose(e_in[-1].grad.numpy() * keep, t_in[-1].grad.numpy() * keep, atol=1e-8)
        assert np.all(e_in[-1].grad.numpy() * (1 - keep) == 0)


@pytest.mark.parametrize("some,compute_uv", [(True, True), (False, True), (True, False)])
def test_legacy_svd(some, compute_uv):
    a = _random(4, 3)
    u, s, v = ember.svd(ember.tensor(a), some=some, compute_uv=compute_uv)
    tu, ts, tv = torch.svd(torch.tensor(a), some=some, compute_uv=compute_uv)
    assert [tuple(x.shape) for x in (u, s, v)] == [tuple(x.shape) for x in (tu, ts, tv)]
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-10)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(tv.numpy()), atol=1e-10)


def test_geqrf_matches_lapack():
    a = _random(2, 4, 3)
    out, tau = ember.geqrf(ember.tensor(a))
    t_out, t_tau = torch.geqrf(torch.tensor(a))
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), atol=1e-10)
    np.testing.assert_allclose(tau.numpy(), t_tau.numpy(), atol=1e-10)


def test_legacy_lu_and_chain_matmul():
    a = _random(3, 3)
    lu, pivots, infos = ember.lu(ember.tensor(a), get_infos=True)
    t_lu, t_pivots, t_infos = torch.linalg.lu_factor_ex(torch.tensor(a))
    np.testing.assert_allclose(lu.numpy(), t_lu.numpy(), atol=1e-12)
    assert pivots.tolist() == t_pivots.tolist() and infos.item() == 0
    p, l, u = ember.lu_unpack(lu, pivots)
    np.testing.assert_allclose((p @ l @ u).numpy(), a, atol=1e-12)
    mats = [_random(2, 3), _random(3, 4), _random(4, 2)]
    np.testing.assert_allclose(ember.chain_matmul(*map(ember.tensor, mats)).numpy(),
                               torch.chain_matmul(*map(torch.tensor, mats)).numpy(), atol=1e-12)


def test_tensor_methods():
    a = _well_conditioned(3, 3)
    e, t = ember.tensor(a), torch.tensor(a)
    for name in ("det", "logdet", "inverse", "pinverse", "matrix_exp"):
        np.testing.assert_allclose(getattr(e, name)().numpy(), getattr(t, name)().numpy(), atol=1e-10)
    np.testing.assert_allclose(e.matrix_power(3).numpy(), t.matrix_power(3).numpy(), atol=1e-8)
    np.testing.assert_allclose(e.renorm(2, 0, 1.0).numpy(), t.renorm(2, 0, 1.0).numpy(), atol=1e-10)
    e.renorm_(2, 0, 1.0)
    np.testing.assert_allclose(e.numpy(), t.renorm(2, 0, 1.0).numpy(), atol=1e-10)


@pytest.mark.parametrize("name,call", [
    ("eigh", lambda lib, a: lib.linalg.eigh(a)), ("slogdet", lambda lib, a: lib.linalg.slogdet(a)),
    ("cholesky_ex", lambda lib, a: lib.linalg.cholesky_ex(a)),
    ("lu_factor_ex", lambda lib, a: lib.linalg.lu_factor_ex(a)),
    ("lstsq", lambda lib, a: lib.linalg.lstsq(a, a)), ("svd", lambda lib, a: lib.linalg.svd(a)),
    ("qr", lambda lib, a: lib.linalg.qr(a)), ("lu", lambda lib, a: lib.linalg.lu(a)),
    ("triangular_solve", lambda lib, a: lib.triangular_solve(a, a)), ("legacy svd", lambda lib, a: lib.svd(a))])
def test_named_results(name, call):
    """Results are named tuples with PyTorch's type name and field names."""
    a = _spd(3, 3)
    ours, theirs = call(ember, ember.tensor(a)), call(torch, torch.tensor(a))
    assert type(ours).__name__ == type(theirs).__name__
    fields = [f for f in dir(theirs) if not f.startswith("_") and f not in ("count", "index", "n_fields",
                                                                            "n_sequence_fields", "n_unnamed_fields")]
    assert sorted(ours._fields) == sorted(fields)


@pytest.mark.parametrize("left", [True, False])
def test_large_matrices_take_lapack_paths(left):
    """Matrices of 40: the CPU's SciPy getrf/trtrs kernels (smaller ones take the shared batched loops)."""
    a, b = _random(2, 40, 40) + 5 * np.eye(40), _random(2, 40, 3) if left else _random(2, 3, 40)
    _check(ember.linalg.lu_factor_ex, torch.linalg.lu_factor_ex, [a])
    _check(lambda a, b: ember.linalg.solve(a, b, left=left), lambda a, b: torch.linalg.solve(a, b, left=left), [a, b])
    for upper in (True, False):
        _check(lambda a, b: ember.linalg.solve_triangular(a, b, upper=upper, left=left),
               lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left), [a, b])
    singular = np.eye(40)
    singular[7, 7] = 0.0
    assert ember.linalg.lu_factor_ex(ember.tensor(singular)).info.item() == 8
    out = ember.linalg.solve_triangular(ember.tensor(singular), ember.ones(40, 1, dtype=ember.float64), upper=True)
    expected = torch.linalg.solve_triangular(torch.tensor(singular), torch.ones(40, 1, dtype=torch.float64), upper=True)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_ldl_factor_and_solve():
    """Bunch-Kaufman LDL^T: LAPACK's own sytrf/sytrs, so the very LD and pivots PyTorch returns (2 x 2 blocks too)."""
    a = _random(3, 5, 5)
    a = a + np.swapaxes(a, -1, -2)
    b = _random(3, 5, 2)
    _check(ember.linalg.ldl_factor_ex, torch.linalg.ldl_factor_ex, [a], grad=False)
    _check(ember.linalg.ldl_factor, torch.linalg.ldl_factor, [a], grad=False)
    ld, pivots = ember.linalg.ldl_factor(ember.tensor(a))
    t_ld, t_pivots = torch.linalg.ldl_factor(torch.tensor(a))
    np.testing.assert_allclose(ember.linalg.ldl_solve(ld, pivots, ember.tensor(b)).numpy(),
                               torch.linalg.ldl_solve(t_ld, t_pivots, torch.tensor(b)).numpy(), atol=1e-10)
    singular = np.zeros((3, 3))
    singular[0, 0] = 1.0
    assert ember.linalg.ldl_factor_ex(ember.tensor(singular)).info.item() == 2
    with pytest.raises(ember.linalg.LinAlgError, match="linalg.ldl_factor: .*zero at position 2"):
        ember.linalg.ldl_factor(ember.tensor(singular))
