"""Multi-tensor optimizer steps (``_fused_sgd_``, ``_fused_adam_`` ...): the default path of SGD, Adam, AdamW,
RMSprop and Adagrad against their per-parameter path (``foreach=False``) and PyTorch's foreach path, over
several steps, on cpu and opencl; one op call per (device, dtype) group and step; the kernels' host logic."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import ember
from ember import optim
from ember.dispatch import DispatchMode, multi_tensor_step
from ember.dispatch.ops.training import updates

AVAILABLE = ember.backends.available()
DEVICES = ["cpu"] + [pytest.param(name, marks=pytest.mark.skipif(
    AVAILABLE.get(name) != "available", reason=f"{name} {AVAILABLE.get(name)}")) for name in ("opencl", "cuda")]
SHAPES = [(4, 3), (5,), (), (2, 2, 3)]

#: (optimizer, options): every option of each update at least once
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.8, dampening=0.3)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, amsgrad=True, capturable=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1, maximize=True, capturable=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, maximize=True)),
]
IDS = [f"{name}-{'-'.join(options)}" for name, options in CASES]


def _initial(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def _grads(step: int):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def _run_ember(name, options, device="cpu", steps=3, **extra):
    params = [ember.tensor(a, device=device, requires_grad=True) for a in _initial()]
    opt = getattr(optim, name)(params, **options, **extra)
    for step in range(steps):
        for i, (p, g) in enumerate(zip(params, _grads(step))):
            p.grad = None if (i == 1 and step == 0) else ember.tensor(g, device=device)  # one without a grad
        opt.step()
    return [p.numpy(force=True) for p in params], opt


def _run_torch(name, options, steps=3):
    torch = pytest.importorskip("torch")
    params = [torch.tensor(a, requires_grad=True) for a in _initial()]
    opt = getattr(torch.optim, name)(params, **options, foreach=True)
    for step in range(steps):
        for i, (p, g) in enumerate(zip(params, _grads(step))):
            p.grad = None if (i == 1 and step == 0) else torch.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in params]


@pytest.mark.parametrize("name,options", CASES, ids=IDS)
def test_multi_tensor_matches_per_parameter_and_pytorch(name, options):
    multi, opt = _run_ember(name, options)
    single, _ = _run_ember(name, options, foreach=False)
    for a, b in zip(multi, single):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    theirs = _run_torch(name, {k: v for k, v in options.items() if k != "capturable"})  # cuda only in torch
    for a, b in zip(multi, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    if options.get("capturable"):
        step = opt.state[opt.param_groups[0]["params"][0]]["step"]
        assert isinstance(step, ember.Tensor) and step.dtype is ember.float32 and step.item() == 3


@pytest.mark.parametrize("name,options", [CASES[1], CASES[5], CASES[9], CASES[10]], ids=[IDS[1], IDS[5], IDS[9],
                                                                                       IDS[10]])
@pytest.mark.parametrize("device", DEVICES[1:])
def test_opencl_kernels_match_the_cpu(device, name, options):
    theirs, _ = _run_ember(name, options)
    ours, _ = _run_ember(name, options, device=device)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_state_is_updated_in_place_and_state_dict_round_trips():
    params = [ember.tensor(a, requires_grad=True) for a in _initial()]
    opt = optim.AdamW(params, lr=0.01, amsgrad=True)
    for p, g in zip(params, _grads(0)):
        p.grad = ember.tensor(g)
    opt.step()
    state = opt.state[params[0]]
    exp_avg, version = state["exp_avg"], state["exp_avg"]._version[0]
    opt.step()
    assert opt.state[params[0]]["exp_avg"] is exp_avg and exp_avg._version[0] == version + 1
    saved = opt.state_dict()
    copy = [ember.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    other = optim.AdamW(copy, lr=0.01, amsgrad=True)
    other.load_state_dict(saved)
    for p, q in zip(params, copy):
        p.grad, q.grad = ember.ones_like(p), ember.ones_like(q)
    opt.step()
    other.step()
    for p, q in zip(params, copy):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


class _Counter(DispatchMode):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append(func.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name,options", [CASES[0], CASES[2], CASES[5], CASES[9], CASES[10]],
                         ids=[IDS[0], IDS[2], IDS[5], IDS[9], IDS[10]])
def test_one_op_call_per_device_and_dtype_group(name, options):
    params = [ember.randn(4, 3), ember.randn(5), ember.randn(3, dtype=ember.float64), ember.randn(2)]
    for p in params:
        p.requires_grad_()
    opt = getattr(optim, name)(params, **options)
    for _ in range(2):  # the second step: every state exists
        for p in params:
            p.grad = ember.ones_like(p)
        with _Counter() as counter:
            opt.step()
    fused = [c for c in counter.calls if c.startswith("_fused_")]
    assert len(fused) == 2, counter.calls  # float32 and float64
    others = [c for c in counter.calls if not c.startswith("_fused_")]
    if options.get("capturable", False):  # the step counters' increments on the device (add_)
        assert set(others) <= {"add", "add_", "copy_"} and len(others) >= len(params), counter.calls
    else:
        assert not others, counter.calls


def test_mixed_dtypes_in_one_group_match_per_parameter():
    def run(**extra):
        params = [ember.tensor(_initial()[0], requires_grad=True),
                  ember.tensor(_initial()[1].astype(np.float64), requires_grad=True),
                  ember.tensor(_initial()[3], dtype=ember.float16, requires_grad=True)]
        opt = optim.Adam(params, lr=0.01, weight_decay=0.1, **extra)
        for step in range(2):
            for p, g in zip(params, _grads(step)[:1] + _grads(step)[1:2] + _grads(step)[3:]):
                p.grad = ember.tensor(g, dtype=p.dtype)
            opt.step()
        return [p.detach().numpy().astype(np.float64) for p in params]
    for a, b, tol in zip(run(), run(foreach=False), (1e-6, 1e-12, 2e-3)):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_graph_safe():
    p = ember.randn(3, requires_grad=True)
    assert not optim.Adam([p]).__class__._graph_safe(optim.Adam([p]))  # no state yet, steps on the host
    opt = optim.Adam([p], capturable=True)
    assert not opt._graph_safe()
    p.grad = ember.ones(3)
    opt.step()
    assert opt._graph_safe()
    assert not optim.Adam([p], capturable=True, foreach=False)._graph_safe()
    sgd = optim.SGD([p], lr=0.1)
    assert sgd._graph_safe()  # no state at all
    momentum = optim.SGD([p], lr=0.1, momentum=0.9)
    assert not momentum._graph_safe()
    momentum.step()
    assert momentum._graph_safe()
    assert not optim.Adagrad([p])._graph_safe()  # its steps are host ints


def test_make_capturable_moves_step_counts_to_the_device_and_changes_no_value():
    """What ``ember.compile(mode="reduce-overhead")`` does to an optimizer whose step goes into a device graph."""
    def run(switch_after: int | None):
        ember.manual_seed(0)
        p = ember.randn(4, 3, requires_grad=True)
        opt = optim.AdamW([p], lr=0.1)
        for i in range(4):
            if i == switch_after:
                assert not opt._graph_safe() and opt._make_capturable() and opt._graph_safe()
                assert isinstance(opt.state[p]["step"], ember.Tensor) and opt.state[p]["step"].item() == i
            p.grad = ember.full((4, 3), 0.5 * (i + 1))
            opt.step()
        return p.detach().numpy()
    np.testing.assert_allclose(run(2), run(None), rtol=1e-6, atol=1e-7)
    q = ember.randn(3, requires_grad=True)
    assert not optim.Adam([q], foreach=False)._make_capturable()  # the per-parameter path cannot be recorded


def test_errors_name_the_op_and_the_tensors():
    a, b = ember.zeros(3), ember.zeros(3, dtype=ember.float64)
    with pytest.raises(TypeError, match="_fused_sgd_.*one dtype"):
        ember.dispatch.ops.F._fused_sgd_([a, b], [a, b], [], weight_decay=0.0, momentum=0.0, lr=0.1,
                                         dampening=0.0, nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(ValueError, match="_fused_adam_: grads must have each parameter's shape"):
        ember.dispatch.ops.F._fused_adam_([a], [ember.zeros(2)], [a], [a], [], [], lr=0.1, beta1=0.9, beta2=0.9,
                                          weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False, steps=[1])
    with pytest.raises(ValueError, match="needs each parameter's step"):
        ember.dispatch.ops.F._fused_adam_([a], [a], [a], [a], [], [], lr=0.1, beta1=0.9, beta2=0.9,
                                          weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    leaf = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        ember.dispatch.ops.F._fused_sgd_([leaf], [a], [], weight_decay=0.0, momentum=0.0, lr=0.1,
                                         dampening=0.0, nesterov=False, maximize=False, is_first_step=False)


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
def test_cpu_kernels_agree_with_the_composite(use_numba):
    from ember.backends.cpu.optim_kernels import multi_tensor_kernel
    if use_numba:
        pytest.importorskip("numba")
    kernel = multi_tensor_kernel("_fused_rmsprop_", use_numba=use_numba)
    arrays = [[a.copy() for a in _initial(seed)] for seed in range(4)]
    square = [np.asarray(np.abs(a)) for a in arrays[2]]
    kernel(arrays[0], _grads(0), square, [np.asarray(a * 0.01) for a in arrays[3]], [a.copy() for a in arrays[1]],
           0.01, 0.9,
           1e-8, 0.1, 0.9, True, False)
    tensors = [[ember.tensor(a) for a in _initial(seed)] for seed in range(4)]
    ember.dispatch.ops.F._fused_rmsprop_(
        tensors[0], [ember.tensor(g) for g in _grads(0)], [t.abs() for t in tensors[2]],
        [t * 0.01 for t in tensors[3]], tensors[1], lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.1, momentum=0.9,
        centered=True, maximize=False)
    for a, t in zip(arrays[0], tensors[0]):
        np.testing.assert_allclose(a, t.numpy(), rtol=1e-6, atol=1e-7)


def test_cuda_chunk_table_covers_every_element_once():
    """The CUDA kernel's host side: read the table as the kernel does (pointers into host arrays here) and
    apply the update row by row with NumPy; a parameter larger than a chunk spans several rows."""
    from ember.backends.codegen.multi_tensor import CHUNK, cuda_table
    from ember.backends.cpu.optim_kernels import numpy_update
    rng = np.random.default_rng(0)
    sizes = [CHUNK * 2 + 5, 7, 0]
    lists = {name: [rng.standard_normal(n).astype(np.float32) for n in sizes]
             for name in ("self", "grads", "exp_avgs", "exp_avg_sqs")}
    lists["exp_avg_sqs"] = [np.asarray(np.abs(a)) for a in lists["exp_avg_sqs"]]
    expected = {k: [a.copy() for a in v] for k, v in lists.items()}
    values = [expected["self"], expected["grads"], expected["exp_avgs"], expected["exp_avg_sqs"], [], [],
              0.01, 0.9, 0.99, 0.0, 1e-8, False, False, [3, 1, 2]]
    from ember.backends.cpu.optim_kernels import multi_tensor_kernel
    multi_tensor_kernel("_fused_adam_", use_numba=False)(*values)
    work = multi_tensor_step("_fused_adam_", ember.float32, [lists["self"], lists["grads"], lists["exp_avgs"],
                                                            lists["exp_avg_sqs"], [], [], *values[6:]])
    update = work.update
    rows = [([lists[name][i].ctypes.data for name in update.tensors], sizes[i], 4) for i in range(len(sizes))]
    per = [[work.per_param(s)[name] for name in update.per_param] for s in work.steps]
    table = cuda_table(update, np.dtype(np.float32), rows, None, per)
    assert len(table) == 3 + 1  # three chunks, one, none
    shared = {name: work.shared[name] for name in update.scalars if name not in update.per_param}
    for row in table:
        arrays = [np.ctypeslib.as_array(ctypes.cast(int(ptr), ctypes.POINTER(ctypes.c_float)), (int(row["n"]),))
                  for ptr in row["p"]]
        scalars = {**shared, **dict(zip(update.per_param, row["q"]))}
        numpy_update(update.program, arrays, [scalars[name] for name in update.scalars],
                     [arrays[update.tensors.index(w)] for w in update.writes])
    for name in ("self", "exp_avgs", "exp_avg_sqs"):
        for a, b in zip(lists[name], expected[name]):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_update_programs_are_cached_and_flat():
    a = updates.adam(ember.float32, amsgrad=True, maximize=False, mode="l2")
    assert a is updates.adam(ember.float32, amsgrad=True, maximize=False, mode="l2")
    assert a.writes == ("self", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs")
    assert tuple(a.program.shape) == updates.SHAPE
