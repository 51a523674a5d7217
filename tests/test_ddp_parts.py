"""The pieces DDP is built from, in one process: autograd's hook points, bucket layout, unused-parameter search."""
import pytest

import ember
import ember.nn as nn
from ember.autograd.engine import queue_callback
from ember.nn.parallel.buckets import Bucket, assign_buckets
from ember.nn.parallel.unused import find_tensors, unused_parameters


# -- post-accumulate-grad hooks and end-of-backward callbacks -------------------------------------------
def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    p = nn.Parameter(ember.ones(3))
    seen = []
    handle = p.register_post_accumulate_grad_hook(lambda t: seen.append((t is p, t.grad.tolist())))
    (p * 2).sum().backward()
    (p * 3).sum().backward()
    assert seen == [(True, [2.0] * 3), (True, [5.0] * 3)]
    handle.remove()
    (p * 3).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_matches_pytorch_order():
    torch = pytest.importorskip("torch")
    order, torch_order = [], []
    a, b = nn.Parameter(ember.ones(2)), nn.Parameter(ember.ones(2))
    ta, tb = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    for leaf, name, log in ((a, "a", order), (b, "b", order), (ta, "a", torch_order), (tb, "b", torch_order)):
        leaf.register_post_accumulate_grad_hook(lambda t, name=name, log=log: log.append(name))
    ((a * 2).exp() * b).sum().backward()
    ((ta * 2).exp() * tb).sum().backward()
    assert sorted(order) == sorted(torch_order) == ["a", "b"]


def test_post_accumulate_grad_hook_rejects_non_leaves_and_no_grad_tensors():
    p = nn.Parameter(ember.ones(2))
    with pytest.raises(RuntimeError, match="non-leaf"):
        (p * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ember.ones(2).register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook_not_run_by_autograd_grad():
    p = nn.Parameter(ember.ones(2))
    seen = []
    p.register_post_accumulate_grad_hook(seen.append)
    ember.autograd.grad((p * p).sum(), p)
    assert seen == [] and p.grad is None


def test_queued_callback_runs_once_after_every_gradient_is_in():
    a, b = nn.Parameter(ember.ones(2)), nn.Parameter(ember.ones(2))
    log = []

    def hook(t):
        log.append("grad")
        if len(log) == 1:
            queue_callback(lambda: log.append(("end", a.grad is not None and b.grad is not None)))

    a.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(hook)
    (a * b).sum().backward()
    assert log == ["grad", "grad", ("end", True)]


def test_queue_callback_outside_backward_is_an_error():
    with pytest.raises(RuntimeError, match="during backward"):
        queue_callback(lambda: None)


def test_callbacks_of_a_failed_backward_do_not_leak_into_the_next():
    p = nn.Parameter(ember.ones(2))
    ran = []

    def hook(t):
        queue_callback(lambda: ran.append(1))
        raise ValueError("boom")

    handle = p.register_post_accumulate_grad_hook(hook)
    with pytest.raises(ValueError):
        (p * 2).sum().backward()
    handle.remove()
    (p * 2).sum().backward()
    assert ran == []


# -- buckets --------------------------------------------------------------------------------------------
def _params(*shapes, dtype=ember.float32):
    return [nn.Parameter(ember.zeros(*shape, dtype=dtype)) for shape in shapes]


def test_buckets_take_parameters_in_reverse_and_close_at_the_limit():
    params = _params((100,), (100,), (100,), (100,), (100,))  # 400 bytes each
    assert assign_buckets(params, bucket_bytes=800, first_bucket_bytes=400) == [[4], [3, 2], [1, 0]]


def test_one_bucket_when_everything_fits():
    params = _params((3, 4), (4,), (2, 3))
    assert assign_buckets(params, bucket_bytes=25 * 2 ** 20) == [[2, 1, 0]]


def test_buckets_never_mix_dtypes():
    params = _params((4,), (4,)) + _params((4,), dtype=ember.float64) + _params((4,))
    buckets = assign_buckets(params, bucket_bytes=2 ** 20)
    assert sorted(map(sorted, buckets)) == [[0, 1, 3], [2]]
    assert buckets[0] == [3, 1, 0]  # holds the last parameter, whose gradient comes first


def test_pytorch_bucket_assignment_agrees():
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    shapes = [(64, 32), (64,), (128, 64), (128,), (10, 128), (10,)]
    params = _params(*shapes)
    theirs, _ = dist._compute_bucket_assignment_by_size(
        [torch.zeros(*s) for s in reversed(shapes)], [8192, 40000])
    ours = assign_buckets(params, bucket_bytes=40000, first_bucket_bytes=8192)
    assert ours == [[len(shapes) - 1 - i for i in bucket] for bucket in theirs]


def test_bucket_views_share_the_flat_buffer():
    params = _params((2, 3), (4,))
    bucket = Bucket(params, [1, 0])
    bucket.fill(0, ember.ones(2, 3))
    bucket.fill(1, None)
    assert bucket.buffer.tolist() == [0.0] * 4 + [1.0] * 6
    bucket.buffer.mul_(3)
    assert bucket.view_of(0).tolist() == [[3.0] * 3] * 2
    assert bucket.view_of(0)._base is bucket.buffer


# -- unused parameters ----------------------------------------------------------------------------------
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(3, 2)

    def forward(self, x, heads=("a",)):
        return {name: getattr(self, name)(x) for name in heads}


def test_unused_parameters_are_those_the_outputs_do_not_reach():
    model = TwoHeads()
    params = list(model.parameters())
    out = model(ember.randn(4, 3))
    assert unused_parameters(params, out) == [2, 3]
    out = model(ember.randn(4, 3), heads=("a", "b"))
    assert unused_parameters(params, (out, [1, "x"])) == []


def test_an_output_that_is_a_parameter_counts_as_used():
    model = TwoHeads()
    params = list(model.parameters())
    assert unused_parameters(params, [model.b.weight]) == [0, 1, 3]


def test_find_tensors_in_nested_outputs():
    t1, t2, t3 = ember.ones(1), ember.ones(2), ember.ones(3)
    found = find_tensors({"x": (t1, [t2]), "y": 3, "z": {"w": t3}})
    assert [t.numel() for t in found] == [1, 2, 3]


# -- construction without a process group ---------------------------------------------------------------
def test_module_paths_follow_pytorch():
    from ember.nn.parallel import DistributedDataParallel
    from ember.nn.parallel.distributed import DistributedDataParallel as FromModule
    assert DistributedDataParallel is FromModule
    assert ember.nn.parallel.DistributedDataParallel is DistributedDataParallel


def test_module_without_trainable_parameters_is_refused():
    from ember.nn.parallel import DistributedDataParallel
    frozen = nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DistributedDataParallel(frozen)


def test_without_a_process_group():
    pytest.importorskip("mpi4py")
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    with pytest.raises(ValueError, match="init_process_group"):
        DistributedDataParallel(nn.Linear(2, 2))
