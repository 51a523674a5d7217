"""``ember.autograd.functional`` against ``torch.autograd.functional`` in float64: values, nesting of the results,
graph or no graph, higher derivatives through create_graph, strict-mode and argument errors."""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
TF = torch.autograd.functional

import ember as E  # noqa: E402
from ember.autograd import functional as AF  # noqa: E402

@pytest.fixture(autouse=True, params=[
    pytest.param(name, marks=pytest.mark.skipif(E.backends.available().get(name) != "available",
                                                reason=f"{name} is not available here"))
    for name in ("cpu", "opencl")])
def device(request):
    """Every test on cpu and on opencl: the ember tensors it makes go to that device."""
    previous = E.get_default_device()
    E.set_default_device(request.param)
    yield request.param
    E.set_default_device(previous)


RNG = np.random.default_rng(7)



def arr(*shape):
    return RNG.standard_normal(shape)


def pair(a):
    """The same float64 values as an Ember and a torch tensor."""
    return E.tensor(a), torch.tensor(a)


def assert_same(ours, theirs, grad=None):
    """Same nesting (tuple vs tensor, lengths), shapes and values; optionally the same requires_grad."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (type(ours), type(theirs))
        for o, t in zip(ours, theirs):
            assert_same(o, t, grad)
        return
    assert isinstance(ours, E.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype == E.float64
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=1e-10, atol=1e-12)
    if grad is not None:
        assert ours.requires_grad == theirs.requires_grad == grad


# -- the functions: written with tensor methods only, so the same code runs on both libraries -----------------
W_NP = arr(3, 3)
X_NP, T_NP = arr(5, 3), arr(5, 1)


def scalar_fn(x):
    return (x.sin() * x.exp() + x * x * x).sum()


def vector_fn(x):
    return x.tanh() * x.sum() + x * x


def tuple_fn(x, y):
    return x * y.sum(), (x.exp().sum() * y).sin()


def mlp_loss(w1, b1, w2):
    lib = E if isinstance(w1, E.Tensor) else torch
    xs, ts = lib.tensor(X_NP), lib.tensor(T_NP)
    hidden = (xs @ w1.T + b1).tanh()
    return ((hidden @ w2.T - ts) ** 2).mean()


CASES = {  # name: (function, input arrays, whether inputs are a tuple, output is one element)
    "scalar": (scalar_fn, [arr()], False, True),
    "vector": (vector_fn, [arr(3)], False, False),
    "tuple": (tuple_fn, [arr(3), arr(2, 2)], True, False),
    "mlp": (mlp_loss, [arr(4, 3), arr(4), arr(1, 4)], True, True),
}
SCALAR_CASES = [name for name, case in CASES.items() if case[3]]


def inputs_for(name):
    """(ember inputs, torch inputs), tuples or single tensors as the case says."""
    _, arrays, is_tuple, _ = CASES[name]
    ours, theirs = zip(*(pair(a) for a in arrays))
    return (ours, theirs) if is_tuple else (ours[0], theirs[0])


def like(inputs_pair, shape_of):
    """A random v shaped like ``shape_of(torch side)``, for both libraries, mirroring the tuple structure."""
    theirs = shape_of(inputs_pair[1])
    if isinstance(theirs, tuple):
        arrays = [RNG.standard_normal(tuple(t.shape)) for t in theirs]
        return tuple(E.tensor(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)
    a = RNG.standard_normal(tuple(theirs.shape))
    return E.tensor(a), torch.tensor(a)


def call(fn, inputs):
    return fn(*inputs) if isinstance(inputs, tuple) else fn(inputs)


# -- values and structure ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_jacobian_matches_torch(name):
    fn = CASES[name][0]
    ours, theirs = inputs_for(name)
    assert_same(AF.jacobian(fn, ours), TF.jacobian(fn, theirs), grad=False)


@pytest.mark.parametrize("name", SCALAR_CASES)
def test_hessian_matches_torch(name):
    fn = CASES[name][0]
    ours, theirs = inputs_for(name)
    assert_same(AF.hessian(fn, ours), TF.hessian(fn, theirs), grad=False)


@pytest.mark.parametrize("name", list(CASES))
def test_vjp_matches_torch(name):
    fn = CASES[name][0]
    ins = inputs_for(name)
    v = like(ins, lambda t: call(fn, t))
    assert_same(AF.vjp(fn, ins[0], v[0]), TF.vjp(fn, ins[1], v[1]), grad=False)


@pytest.mark.parametrize("name", list(CASES))
def test_jvp_matches_torch(name):
    fn = CASES[name][0]
    ins = inputs_for(name)
    v = like(ins, lambda t: t)
    assert_same(AF.jvp(fn, ins[0], v[0]), TF.jvp(fn, ins[1], v[1]), grad=False)


@pytest.mark.parametrize("op", ["hvp", "vhp"])
@pytest.mark.parametrize("name", SCALAR_CASES)
def test_hvp_vhp_match_torch(name, op):
    fn = CASES[name][0]
    ins = inputs_for(name)
    v = like(ins, lambda t: t)
    assert_same(getattr(AF, op)(fn, ins[0], v[0]), getattr(TF, op)(fn, ins[1], v[1]), grad=False)


def test_hvp_equals_hessian_times_v():
    """Independent of torch: H v from the double-backward trick equals the explicit Hessian applied to v."""
    x, v = E.tensor(arr(4)), E.tensor(arr(4))
    h = AF.hessian(scalar_fn, x).cpu().numpy()
    _, hv = AF.hvp(scalar_fn, x, v)
    np.testing.assert_allclose(hv.cpu().numpy(), h @ v.cpu().numpy(), rtol=1e-10)


def test_v_may_be_omitted_for_single_elements():
    x = pair(arr())
    assert_same(AF.vjp(scalar_fn, x[0]), TF.vjp(scalar_fn, x[1]))
    assert_same(AF.jvp(scalar_fn, x[0]), TF.jvp(scalar_fn, x[1]))
    assert_same(AF.hvp(scalar_fn, x[0]), TF.hvp(scalar_fn, x[1]))
    assert_same(AF.vhp(scalar_fn, x[0]), TF.vhp(scalar_fn, x[1]))


def test_one_input_tuple_keeps_its_tuple():
    """A 1-tuple of inputs gives 1-tuples back, a bare tensor gives bare tensors."""
    x = pair(arr(3))
    ours, theirs = AF.jacobian(vector_fn, (x[0],)), TF.jacobian(vector_fn, (x[1],))
    assert isinstance(ours, tuple) and len(ours) == 1
    assert_same(ours, theirs)
    ours = AF.jacobian(lambda a: (vector_fn(a),), x[0])
    assert isinstance(ours, tuple) and len(ours) == 1 and isinstance(ours[0], E.Tensor)
    assert_same(ours, TF.jacobian(lambda a: (vector_fn(a),), x[1]))


def test_captured_input_is_a_constant():
    """func closing over the caller's tensor sees it as a constant, not as the argument (torch issue 32576)."""
    x = pair(arr(3))
    ours = AF.jacobian(lambda a: a * x[0], x[0])
    assert_same(ours, TF.jacobian(lambda a: a * x[1], x[1]))
    np.testing.assert_allclose(ours.cpu().numpy(), np.diag(x[0].cpu().numpy()))


def test_works_under_no_grad():
    x = pair(arr(3))
    with E.no_grad():
        ours = AF.jacobian(vector_fn, x[0])
        _, hv = AF.hvp(scalar_fn, x[0], x[0])
    with torch.no_grad():
        theirs = TF.jacobian(vector_fn, x[1])
        _, thv = TF.hvp(scalar_fn, x[1], x[1])
    assert_same(ours, theirs)
    assert_same(hv, thv, grad=False)


def test_inputs_are_not_modified_and_not_made_to_require_grad():
    x = E.tensor(arr(3))
    AF.jacobian(vector_fn, x)
    AF.vjp(vector_fn, x, E.ones(3, dtype=E.float64))
    assert not x.requires_grad and x.grad is None


def test_unused_input_gives_zeros_without_strict():
    fn = lambda a, b: a * 2.0  # noqa: E731
    ours, theirs = (pair(arr(3)), pair(arr(2)))
    j = AF.jacobian(fn, (ours[0], theirs[0]))
    assert_same(j, TF.jacobian(fn, (ours[1], theirs[1])))
    assert not j[1].cpu().numpy().any()
    _, vj = AF.vjp(fn, (ours[0], theirs[0]), E.ones(3, dtype=E.float64))
    assert not vj[1].cpu().numpy().any() and tuple(vj[1].shape) == (2,)


def test_constant_output_gives_zeros_without_strict():
    const = lambda a: a.detach() * 0.0 + 1.0  # noqa: E731
    x = pair(arr(3))
    assert_same(AF.jacobian(const, x[0]), TF.jacobian(const, x[1]))
    assert_same(AF.jvp(const, x[0], x[0]), TF.jvp(const, x[1], x[1]))


def test_empty_output_jacobian_has_empty_shape():
    j = AF.jacobian(lambda a: a[:0], E.tensor(arr(3)))
    assert tuple(j.shape) == (0, 3)


# -- create_graph ------------------------------------------------------------------------------------------
def flatten(result):
    """The tensors of a possibly nested tuple, in order."""
    if isinstance(result, tuple):
        return [t for item in result for t in flatten(item)]
    return [result]


def grads_of(lib, result, wrt):
    """d(sum of every entry of result)/d(wrt), computed by the library itself."""
    total = sum((t * t).sum() for t in flatten(result))
    return lib.autograd.grad(total, wrt, allow_unused=True)


@pytest.mark.parametrize("op", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_create_graph_results_differentiate_again(op):
    """With create_graph=True results carry a graph back to the caller's inputs, and their derivatives agree."""
    name = "mlp"
    fn = CASES[name][0]
    arrays = CASES[name][1]
    ours = tuple(E.tensor(a).requires_grad_() for a in arrays)
    theirs = tuple(torch.tensor(a).requires_grad_() for a in arrays)
    args_e, args_t = (fn, ours), (fn, theirs)
    if op in ("jvp", "hvp", "vhp"):
        v = like((ours, theirs), lambda t: t)
        args_e, args_t = args_e + (v[0],), args_t + (v[1],)
    elif op == "vjp":
        v = pair(np.array(1.3))
        args_e, args_t = args_e + (v[0],), args_t + (v[1],)
    res_e = getattr(AF, op)(*args_e, create_graph=True)
    res_t = getattr(TF, op)(*args_t, create_graph=True)
    assert_same(res_e, res_t)
    product = res_e[1] if op in ("vjp", "jvp", "hvp", "vhp") else res_e
    assert all(t.requires_grad for t in flatten(product))
    product_t = res_t[1] if op in ("vjp", "jvp", "hvp", "vhp") else res_t
    assert_same(grads_of(E, product, ours), grads_of(torch, product_t, theirs))


def test_create_graph_on_fresh_inputs_still_differentiable():
    """Inputs that do not require grad become new leaves; the gradient is still a function of them."""
    x = pair(arr(3))
    _, g = AF.vjp(scalar_fn, x[0], create_graph=True)
    assert g.requires_grad
    _, tg = TF.vjp(scalar_fn, x[1], create_graph=True)
    assert g.requires_grad == tg.requires_grad


def test_third_derivative_through_hessian():
    """hessian(create_graph=True) of x**4 differentiated once more gives 24 x."""
    x = E.tensor(arr(2)).requires_grad_()
    h = AF.hessian(lambda a: (a ** 4).sum(), x, create_graph=True)
    (third,) = E.autograd.grad(h.sum(), [x])
    np.testing.assert_allclose(third.cpu().numpy(), 24 * x.detach().cpu().numpy(), rtol=1e-12)


# -- strict mode -------------------------------------------------------------------------------------------
def error_of(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.type, str(info.value)


def same_error(op, fn, ins, *rest, **kwargs):
    """Ember's error type and message equal torch's (the Size repr and library name aside)."""
    ours = error_of(getattr(AF, op), fn, ins[0], *(r[0] for r in rest), **kwargs)
    theirs = error_of(getattr(TF, op), fn, ins[1], *(r[1] for r in rest), **kwargs)
    norm = lambda m: re.sub(r"(torch|ember)\.", "", m)  # noqa: E731
    assert ours[0] is theirs[0], (ours, theirs)
    assert norm(ours[1]) == norm(theirs[1])
    return ours[1]


def two(a, b):
    return tuple(zip(a, b))


def test_strict_vjp_independent_input():
    ins = two(pair(arr(3)), pair(arr(2)))
    message = same_error("vjp", lambda a, b: a * 2.0, ins, pair(arr(3)), strict=True)
    assert message == ("The output of the user-provided function is independent of input 1. "
                       "This is not allowed in strict mode.")


def test_strict_jacobian_independent_input():
    ins = two(pair(arr(3)), pair(arr(2)))
    message = same_error("jacobian", lambda a, b: a.exp(), ins, strict=True)
    assert "Output 0 of the user-provided function is independent of input 1" in message


def test_strict_output_without_grad():
    message = same_error("jacobian", lambda a: a.detach() * 2.0, pair(arr(3)), strict=True)
    assert message.startswith("Output 0 of the user-provided function does not require gradients.")
    same_error("vjp", lambda a: a.detach() * 2.0, pair(arr(3)), pair(arr(3)), strict=True)


def test_strict_jvp_independent_input():
    ins = two(pair(arr(3)), pair(arr(2)))
    message = same_error("jvp", lambda a, b: a.exp(), ins, two(pair(arr(3)), pair(arr(2))), strict=True)
    assert message == ("The output of the user-provided function is independent of input 1. "
                       "This is not allowed in strict mode.")


def test_strict_hessian_of_linear_function():
    message = same_error("hessian", lambda a: (a * 3.0).sum(), pair(arr(3)), strict=True)
    assert message.startswith("While computing the hessian, found that the jacobian")


def test_strict_create_graph_jacobian_of_linear_function():
    message = same_error("vjp", lambda a: a * 3.0, pair(arr(3)), pair(arr(3)), strict=True, create_graph=True)
    assert message.endswith("This is not allowed in strict mode when create_graph=True.")


def test_strict_passes_on_a_good_function():
    x = pair(arr(3))
    assert_same(AF.jacobian(vector_fn, x[0], strict=True), TF.jacobian(vector_fn, x[1], strict=True))
    assert_same(AF.hvp(scalar_fn, x[0], x[0], strict=True), TF.hvp(scalar_fn, x[1], x[1], strict=True))


# -- argument errors ---------------------------------------------------------------------------------------
def test_non_tensor_output_error():
    message = same_error("jacobian", lambda a: [a], pair(arr(3)))
    assert message == ("The outputs of the user-provided function given to jacobian must be either a Tensor or a "
                       "tuple of Tensors but the given outputs of the user-provided function has type "
                       "<class 'list'>.")
    message = same_error("vjp", lambda a: (a, 3), pair(arr(3)), two(pair(arr(3)), pair(arr(3))))
    assert "but the value at index 1 has type <class 'int'>." in message


def test_non_tensor_input_error():
    ours = error_of(AF.jacobian, vector_fn, [E.tensor(arr(3))])
    theirs = error_of(TF.jacobian, vector_fn, [torch.tensor(arr(3))])
    assert ours == theirs and ours[0] is TypeError


def test_v_shape_errors():
    x = pair(arr(3))
    ours = error_of(AF.vjp, vector_fn, x[0], E.tensor(arr(2)))
    assert ours[0] is RuntimeError and ours[1].startswith("v has invalid size: should be")
    assert "[3]" in ours[1] and "[2]" in ours[1]
    ins = two(pair(arr(3)), pair(arr(2, 2)))
    ours = error_of(AF.jvp, tuple_fn, ins[0], (E.tensor(arr(3)), E.tensor(arr(2))))
    assert ours[1].startswith("Entry 1 in v has invalid size")
    same_error("jvp", tuple_fn, ins, tuple(zip(pair(arr(3)))))  # wrong tuple length: same message
    same_error("vjp", vector_fn, x, two(pair(arr(3)), pair(arr(3))))  # two vs one: "single Tensor"


def test_v_none_needs_single_element():
    x = pair(arr(3))
    for op in ("vjp", "jvp", "hvp", "vhp"):
        fn = vector_fn if op in ("vjp", "jvp") else scalar_fn
        message = same_error(op, fn, x)
        assert message.startswith("The vector v can only be None")


def test_hvp_needs_scalar_function():
    x = pair(arr(3))
    for op in ("hvp", "vhp", "hessian"):
        args = (x,) if op == "hessian" else (x, x)
        message = same_error(op, vector_fn, *args)
        assert "should contain a single element" in message
    message = same_error("hessian", lambda a: (a.sum(), a.sum()), x)
    assert message == "The function given to hessian should return a single Tensor"


def test_strategy_errors():
    x = E.tensor(arr(3))
    with pytest.raises(AssertionError, match="forward-mode"):
        AF.jacobian(vector_fn, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        AF.jacobian(vector_fn, x, strategy="forward-mode", vectorize=True, create_graph=True)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(vector_fn, x, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="strict=True"):
        AF.jacobian(vector_fn, x, strategy="forward-mode", vectorize=True, strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorize=True`"):
        AF.jacobian(vector_fn, x, vectorize=True, strict=True)
    with pytest.raises(AssertionError):
        AF.hessian(scalar_fn, x, outer_jacobian_strategy="sideways")


# -- vectorized paths (through ember.func) -----------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_jacobian_vectorized_reverse(name):
    fn = CASES[name][0]
    ours, theirs = inputs_for(name)
    assert_same(AF.jacobian(fn, ours, vectorize=True), TF.jacobian(fn, theirs, vectorize=True), grad=False)


@pytest.mark.parametrize("name", list(CASES))
def test_jacobian_vectorized_forward(name):
    fn = CASES[name][0]
    ours, theirs = inputs_for(name)
    assert_same(AF.jacobian(fn, ours, vectorize=True, strategy="forward-mode"),
                TF.jacobian(fn, theirs, vectorize=True, strategy="forward-mode"))


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("name", SCALAR_CASES)
def test_hessian_vectorized(name, strategy):
    fn = CASES[name][0]
    ours, theirs = inputs_for(name)
    assert_same(AF.hessian(fn, ours, vectorize=True, outer_jacobian_strategy=strategy),
                TF.hessian(fn, theirs, vectorize=True, outer_jacobian_strategy=strategy))


def test_jacobian_vectorized_unused_input_is_zero():
    ins = two(pair(arr(3)), pair(arr(2)))
    fn = lambda a, b: a.exp()  # noqa: E731
    assert_same(AF.jacobian(fn, ins[0], vectorize=True), TF.jacobian(fn, ins[1], vectorize=True))


def test_jacobian_vectorized_create_graph():
    a = arr(3)
    x, tx = E.tensor(a).requires_grad_(), torch.tensor(a).requires_grad_()
    j = AF.jacobian(vector_fn, x, create_graph=True, vectorize=True)
    tj = TF.jacobian(vector_fn, tx, create_graph=True, vectorize=True)
    assert_same(j, tj, grad=True)
    assert_same(grads_of(E, j, [x]), grads_of(torch, tj, [tx]))
