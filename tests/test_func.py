"""ember.func against torch.func (float64), one function per op family, every transform on each, on cpu and
opencl; then the transforms' arguments, composition, randomness and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import func
from ember.autograd import forward_ad

torch = pytest.importorskip("torch")
import torch.func as tfunc  # noqa: E402

RNG = np.random.default_rng(11)
INDEX = np.array([2, 0, 3])


def arr(*shape):
    return RNG.standard_normal(shape)


def both(values):
    """The same values as an ember and a torch float64 tensor (int64 for integer arrays)."""
    values = np.asarray(values)
    if values.dtype.kind == "i":
        return ember.tensor(values, dtype=ember.int64), torch.tensor(values, dtype=torch.int64)
    return ember.tensor(values, dtype=ember.float64), torch.tensor(values, dtype=torch.float64)


def host(t):
    return t.detach().cpu().numpy()


def assert_same(ours, theirs, tol=1e-9):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), (type(ours), len(theirs))
        for o, t in zip(ours, theirs):
            assert_same(o, t, tol)
        return
    assert isinstance(ours, ember.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape), (tuple(ours.shape), tuple(theirs.shape))
    np.testing.assert_allclose(host(ours), host(theirs), rtol=tol, atol=tol)


DEVICES = [pytest.param(name, marks=pytest.mark.skipif(ember.backends.available().get(name) != "available",
                                                       reason=f"{name} is not available here"))
           for name in ("cpu", "opencl")]


@pytest.fixture(params=DEVICES)
def device(request):
    """Every ember tensor of the test on this device (the default device for the test's duration); LAPACK's
    decompositions, which OpenCL leaves out, run through the documented CPU fallback as a user runs them."""
    previous, fallback = ember.get_default_device(), ember.backends.get_fallback()
    ember.set_default_device(request.param)
    ember.backends.set_fallback("cpu")
    yield request.param
    ember.set_default_device(previous)
    ember.backends.set_fallback(fallback)


def _consts(T):
    """Index tensors and weights shared by the family functions, in module ``T`` (ember or torch)."""
    int64 = T.int64
    return {"idx": T.tensor(INDEX, dtype=int64), "gather": T.tensor([[1, 0], [3, 3], [2, 1]], dtype=int64),
            "target": T.tensor([1, 0, 3], dtype=int64)}


# Each family: a function of (T, *tensors) written once for both frameworks, and its inputs' shapes.
FAMILIES = {
    "elementwise": (lambda T, x, y: (x.sin() * y.exp() + x / (1 + y * y)).tanh() - x.pow(2).sqrt(), [(3, 4), (4,)]),
    "reductions": (lambda T, x: (x.logsumexp(-1) + x.var(1) * x.amax(1) + x.sum((0, 1)) + x.mean(0)[:3]
                                 + x.prod(1) + x.cumsum(1)[:, -1]), [(3, 4)]),
    "matmul": (lambda T, x, y, v: (T.bmm(x, y).sum(-1) + (x @ v)).mm(x[1]) @ v, [(2, 3, 4), (2, 4, 5), (4,)]),
    "views": (lambda T, x: x.reshape(2, 6).t().unsqueeze(0).expand(3, 6, 2).permute(2, 0, 1).flatten(1)
              * x.transpose(0, 1).reshape(-1)[:1], [(3, 4)]),
    "indexing": (lambda T, x: x[:, 1:3].sum(1) * x[0, :3] + x.index_select(1, _consts(T)["idx"]).sum(1)
                 + x.gather(1, _consts(T)["gather"]).sum(1) + x[_consts(T)["idx"][:3] % 3, 1], [(3, 4)]),
    "conv": (lambda T, x, w: T.nn.functional.max_pool2d(T.nn.functional.conv2d(x, w, padding=1).relu(), 2),
             [(1, 2, 5, 5), (3, 2, 3, 3)]),
    "normalization": (lambda T, x, w, b: T.nn.functional.layer_norm(x, (4,), w, b)
                      + T.nn.functional.group_norm(x.reshape(3, 4, 1), 2).reshape(3, 4), [(3, 4), (4,), (4,)]),
    "softmax": (lambda T, x: T.nn.functional.softmax(x, -1) * T.nn.functional.log_softmax(x, 0), [(3, 4)]),
    "losses": (lambda T, x, y: T.stack([T.nn.functional.cross_entropy(x, _consts(T)["target"]),
                                        T.nn.functional.mse_loss(x, y),
                                        T.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid()),
                                        T.nn.functional.smooth_l1_loss(x, y)]), [(3, 4), (3, 4)]),
    "linalg": (lambda T, x: T.linalg.solve(x @ x.mT + T.eye(3, dtype=x.dtype), x).sum(0)
               + T.linalg.norm(x, dim=0), [(3, 3)]),
}


def _inputs(shapes):
    pairs = [both(arr(*shape)) for shape in shapes]
    return tuple(e for e, _ in pairs), tuple(t for _, t in pairs)


def _pair(name):
    fn, shapes = FAMILIES[name]
    ours, theirs = _inputs(shapes)
    return (lambda *a: fn(ember, *a)), (lambda *a: fn(torch, *a)), ours, theirs


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_values_and_vmap(family, device):
    f, g, ours, theirs = _pair(family)
    assert_same(f(*ours), g(*theirs))
    batch_ours, batch_theirs = _inputs([(3, *x.shape) for x in ours])
    assert_same(func.vmap(f)(*batch_ours), tfunc.vmap(g)(*batch_theirs))
    first_only = (0,) + (None,) * (len(ours) - 1)
    mixed_ours, mixed_theirs = (batch_ours[0], *ours[1:]), (batch_theirs[0], *theirs[1:])
    assert_same(func.vmap(f, in_dims=first_only)(*mixed_ours), tfunc.vmap(g, in_dims=first_only)(*mixed_theirs))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_grad_jvp_and_jacobians(family, device):
    f, g, ours, theirs = _pair(family)
    argnums = tuple(range(len(ours)))
    total_f, total_g = (lambda *a: f(*a).sum()), (lambda *a: g(*a).sum())
    assert_same(func.grad(total_f, argnums)(*ours), tfunc.grad(total_g, argnums)(*theirs))
    tangents_ours, tangents_theirs = _inputs([tuple(x.shape) for x in ours])
    assert_same(func.jvp(f, ours, tangents_ours), tfunc.jvp(g, theirs, tangents_theirs))
    assert_same(func.jacrev(f, argnums)(*ours), tfunc.jacrev(g, argnums)(*theirs))
    assert_same(func.jacfwd(f, argnums)(*ours), tfunc.jacfwd(g, argnums)(*theirs))


@pytest.mark.parametrize("family", ["elementwise", "softmax", "losses", "normalization", "matmul"])
def test_hessian_and_per_sample_gradients(family, device):
    f, g, ours, theirs = _pair(family)
    total_f, total_g = (lambda *a: f(*a).sum()), (lambda *a: g(*a).sum())
    assert_same(func.hessian(total_f)(*ours), tfunc.hessian(total_g)(*theirs), tol=1e-7)
    batch_ours, batch_theirs = _inputs([(2, *x.shape) for x in ours])
    in_dims = (0,) + (None,) * (len(ours) - 1)
    assert_same(func.vmap(func.grad(total_f), in_dims=in_dims)(batch_ours[0], *ours[1:]),
                tfunc.vmap(tfunc.grad(total_g), in_dims=in_dims)(batch_theirs[0], *theirs[1:]))


def test_higher_orders_compose(device):
    x, tx = both(arr(4))
    f = lambda T: (lambda v: (v.sin() * v.exp()).sum())  # noqa: E731
    expected = tfunc.hessian(f(torch))(tx)
    for transform in (lambda h: func.jacrev(func.jacrev(h)), lambda h: func.jacfwd(func.jacfwd(h)),
                      lambda h: func.jacfwd(func.jacrev(h)), lambda h: func.jacrev(func.jacfwd(h))):
        assert_same(transform(f(ember))(x), expected)
    third = func.grad(lambda v: func.grad(lambda w: func.grad(lambda u: u.sin().sum())(w).sum())(v).sum())(x)
    assert_same(third, -tx.cos())
    assert_same(func.vmap(func.vmap(lambda a, b: a * b + a.sum()), in_dims=(0, None))(x.reshape(2, 2), x[:2]),
                tfunc.vmap(tfunc.vmap(lambda a, b: a * b + a.sum()), in_dims=(0, None))(tx.reshape(2, 2), tx[:2]))


def test_grad_arguments_and_aux():
    x, tx = both(arr(3))
    y, ty = both(arr(3))
    f = lambda a, b: ((a * b).sum(), {"aux": a.detach() * 2})  # noqa: E731
    g = lambda a, b: ((a * b).sum(), {"aux": a.detach() * 2})  # noqa: E731
    (grads, (value, aux)) = func.grad_and_value(f, argnums=(0, 1), has_aux=True)(x, y)
    (tgrads, (tvalue, taux)) = tfunc.grad_and_value(g, argnums=(0, 1), has_aux=True)(tx, ty)
    assert_same(grads, tgrads)
    assert_same(value, tvalue)
    assert_same(aux["aux"], taux["aux"])
    assert not value.requires_grad and not grads[0].requires_grad
    assert_same(func.grad(lambda d: (d["a"] ** 2).sum() + d["b"].sum())({"a": x, "b": y})["a"], 2 * tx)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        func.grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match="Got argnums=2, but only 1 positional inputs"):
        func.grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
        func.grad(lambda a: a.sum(), has_aux=True)(x)


def test_vjp_and_linearize():
    x, tx = both(arr(3))
    out, vjp_fn = func.vjp(lambda a: (a.sin(), a * a), x)
    tout, tvjp_fn = tfunc.vjp(lambda a: (a.sin(), a * a), tx)
    assert_same(out, tout)
    u, tu = both(arr(3))
    assert_same(vjp_fn((u, u)), tvjp_fn((tu, tu)))
    assert_same(vjp_fn((u, 2 * u)), tvjp_fn((tu, 2 * tu)))  # callable again
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        vjp_fn(u)
    value, jvp_fn = func.linearize(lambda a: a.exp() * a, x)
    tvalue, tjvp_fn = tfunc.linearize(lambda a: a.exp() * a, tx)
    assert_same(value, tvalue)
    assert_same(jvp_fn(u), tjvp_fn(tu))


def test_vmap_dims_chunks_and_errors():
    x, tx = both(arr(4, 3))
    y, ty = both(arr(3, 4))
    f = lambda a, b: (a * b, a.sum())  # noqa: E731
    ours = func.vmap(f, in_dims=(1, 0), out_dims=(1, 0))(y, x)
    theirs = tfunc.vmap(f, in_dims=(1, 0), out_dims=(1, 0))(ty, tx)
    assert_same(ours, theirs)
    assert_same(func.vmap(f, in_dims=(1, 0), chunk_size=3)(y, x), tfunc.vmap(f, in_dims=(1, 0))(ty, tx))
    assert_same(func.vmap(lambda a: ember.ones(2, dtype=a.dtype))(x), tfunc.vmap(lambda a: torch.ones(2,
                dtype=a.dtype))(tx))  # an output the same for every element is expanded
    with pytest.raises(ValueError, match="Expected all tensors to have the same size in the mapped dimension"):
        func.vmap(f)(x, y)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        func.vmap(f, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        func.vmap(lambda a: 3)(x)
    with pytest.raises(RuntimeError, match="randomness"):
        func.vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(RuntimeError, match="cannot be read one element at a time"):
        func.vmap(lambda a: a if a.sum().item() > 0 else -a)(x)


def test_vmap_randomness():
    x = ember.zeros(4, 3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda a: a + ember.rand(3, dtype=a.dtype))(x)
    same = func.vmap(lambda a: a + ember.rand(3, dtype=a.dtype), randomness="same")(x)
    assert np.all(same.numpy() == same.numpy()[0])
    different = func.vmap(lambda a: a + ember.rand(3, dtype=a.dtype), randomness="different")(x)
    assert len({tuple(row) for row in different.numpy()}) == 4
    dropped = func.vmap(lambda a: ember.nn.functional.dropout(a + 1, 0.5), randomness="different")(x)
    assert len({tuple(row) for row in dropped.numpy()}) > 1


def test_fallback_loop_warns_with_the_op_name():
    x = ember.tensor(np.tril(arr(3, 3, 3) @ arr(3, 3, 3).transpose(0, 2, 1) + 3 * np.eye(3)), dtype=ember.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = func.vmap(lambda a: ember.argwhere(a > 100).sum())(x)
    assert out.shape == (3,)
    assert any("argwhere" in str(w.message) and "batching rule" in str(w.message) for w in caught)


def test_ensemble_with_stack_module_state():
    models = [ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 2)).double()
              for _ in range(3)]
    params, buffers = func.stack_module_state(models)
    x = ember.tensor(arr(5, 3), dtype=ember.float64)
    base = models[0]

    def run(p, b, data):
        return func.functional_call(base, (p, b), (data,))
    ours = func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    expected = ember.stack([m(x) for m in models])
    np.testing.assert_allclose(ours.detach().numpy(), expected.detach().numpy(), rtol=1e-12)


def test_per_sample_gradients_of_a_module_match_torch(device):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2)).double()
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    with torch.no_grad():
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            tp.copy_(torch.tensor(p.detach().cpu().numpy()))
    data, tdata = both(arr(6, 3))
    target, ttarget = both(np.array([0, 1, 1, 0, 1, 0]))
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}

    def loss(p, x, y):
        out = func.functional_call(model, p, (x.unsqueeze(0),))
        return ember.nn.functional.cross_entropy(out, y.unsqueeze(0))

    def tloss(p, x, y):
        out = tfunc.functional_call(tmodel, p, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, y.unsqueeze(0))
    ours = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, data, target)
    theirs = tfunc.vmap(tfunc.grad(tloss), in_dims=(None, 0, 0))(tparams, tdata, ttarget)
    for key in theirs:
        assert_same(ours[key], theirs[key])


def test_forward_ad_dual_tensors():
    x, tx = both(arr(3))
    t, tt = both(arr(3))
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, t)
        y = (dual.exp() * dual).softmax(0)
        primal, tangent = forward_ad.unpack_dual(y)
        assert forward_ad.unpack_dual(x).tangent is None
        with pytest.raises(RuntimeError, match="different size"):
            forward_ad.make_dual(x, t[:2])
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            forward_ad.enter_dual_level()
    with torch.autograd.forward_ad.dual_level():
        tdual = torch.autograd.forward_ad.make_dual(tx, tt)
        ty = (tdual.exp() * tdual).softmax(0)
        tprimal, ttangent = torch.autograd.forward_ad.unpack_dual(ty)
    assert_same(primal, tprimal)
    assert_same(tangent, ttangent)
    with pytest.raises(RuntimeError, match="enter a dual level"):
        forward_ad.make_dual(x, t)


def test_function_jvp():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return 3 * x * x * tangent

    class Doubled(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    x, tx = both(arr(3))
    assert_same(func.jvp(Cube.apply, (x,), (ember.ones_like(x),))[1], 3 * tx * tx)
    with pytest.raises(NotImplementedError, match="implement the jvp function"):
        func.jvp(Doubled.apply, (x,), (x,))


def test_functionalize_is_the_function():
    x, tx = both(arr(3))

    def f(a):
        b = a.clone()
        b.mul_(2)
        return b
    assert_same(func.functionalize(f)(x), 2 * tx)
    assert_same(func.vmap(f)(x.reshape(3, 1)), 2 * tx.reshape(3, 1))
    assert_same(func.jvp(f, (x,), (ember.ones_like(x),))[1], 2 * torch.ones(3, dtype=torch.float64))


@pytest.mark.parametrize("pattern,lengths", [
    ("b h w c -> (b h) w c", {}), ("b h w c -> b c h w", {}), ("b (h1 h2) w c -> b h1 h2 w c", {"h1": 2}),
    ("b ... c -> c b ...", {}), ("... c -> (...) c", {}), ("b h w c -> b h w () c 1", {}),
    ("b (h h2) (w w2) c -> (h w) (b h2 w2 c)", {"h2": 2, "w2": 2})])
def test_rearrange_matches_torch(pattern, lengths):
    x, tx = both(arr(2, 6, 4, 3))
    assert_same(func.rearrange(x, pattern, **lengths), tfunc.rearrange(tx, pattern, **lengths))
    stacked = "n b h w c -> (n b) c h w"
    assert_same(func.rearrange([x, x], stacked), tfunc.rearrange([tx, tx], stacked))
    with pytest.raises(ValueError, match="same axes"):
        func.rearrange(x, "b h w c -> b h w")
    with pytest.raises(ValueError, match="names 2 dims"):
        func.rearrange(x, "b h -> h b")


def test_debug_unwrap_and_batch_norm_replacement():
    x = ember.tensor(arr(3, 2), dtype=ember.float64)
    seen = []
    func.vmap(lambda a: seen.append(func.debug_unwrap(a)) or a)(x)
    np.testing.assert_array_equal(seen[0].numpy(), x.numpy())
    assert func.debug_unwrap(x) is x
    model = ember.nn.Sequential(ember.nn.Linear(2, 4), ember.nn.BatchNorm1d(4)).double()
    assert func.replace_all_batch_norm_modules_(model) is model
    norm = model[1]
    assert not norm.track_running_stats and norm.running_mean is None and norm.running_var is None
    out = func.vmap(model, in_dims=1)(x.reshape(3, 1, 2).expand(3, 2, 2))  # per element, batch statistics
    assert out.shape == (2, 3, 4)
