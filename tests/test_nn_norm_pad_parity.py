"""Normalization, padding, distance and lazy layers, SyncBatchNorm, DataParallel and Container against PyTorch:
values, input and weight gradients, running statistics, reprs and state_dict keys."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

from torch_parity import assert_forward_backward, copy_parameters, leaf_pair

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


def _check(ours, theirs, x, tx, modules=None):
    assert_forward_backward(ours, theirs, [(x, tx)], modules, rng=RNG, rtol=1e-6, atol=1e-8)


# -- instance norm ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,shape", [("InstanceNorm1d", (3, 4, 6)), ("InstanceNorm2d", (2, 3, 4, 5)),
                                        ("InstanceNorm3d", (2, 2, 3, 3, 4)), ("InstanceNorm1d", (4, 6)),
                                        ("InstanceNorm2d", (3, 4, 5))])
@pytest.mark.parametrize("affine,track", [(False, False), (True, True)])
def test_instance_norm_matches_torch(name, shape, affine, track):
    channels = shape[1] if len(shape) == int(name[-2]) + 2 else shape[0]
    ours = getattr(nn, name)(channels, affine=affine, track_running_stats=track, momentum=0.3).double()
    theirs = getattr(torch.nn, name)(channels, affine=affine, track_running_stats=track, momentum=0.3).double()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if affine:
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
            theirs.bias.uniform_(-1, 1)
        copy_parameters(ours, theirs)
    x, tx = leaf_pair(RNG.standard_normal(shape) * 2 + 1)
    _check(ours(x), theirs(tx), x, tx, (ours, theirs))
    if track:
        np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-6)
        np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6)
        ours.eval()
        theirs.eval()
        x, tx = leaf_pair(RNG.standard_normal(shape))
        _check(ours(x), theirs(tx), x, tx)


def test_instance_norm_checks():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.InstanceNorm1d(3)(ember.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="to match num_features"):
        nn.InstanceNorm1d(3, affine=True)(ember.randn(2, 4, 5))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(ember.randn(2, 3, 1))
    x, tx = leaf_pair(RNG.standard_normal((2, 3, 5)))
    _check(F.instance_norm(x), torch.nn.functional.instance_norm(tx), x, tx)
    w, b, mean, var = RNG.uniform(0.5, 2, 3), RNG.uniform(-1, 1, 3), np.zeros(3), np.ones(3)
    ours_stats, theirs_stats = (ember.tensor(mean), ember.tensor(var)), (torch.tensor(mean), torch.tensor(var))
    x, tx = leaf_pair(RNG.standard_normal((2, 3, 5)))  # torch.instance_norm's own argument order
    _check(ember.instance_norm(x, ember.tensor(w), ember.tensor(b), *ours_stats, True, 0.2, 1e-5, False),
           torch.instance_norm(tx, torch.tensor(w), torch.tensor(b), *theirs_stats, True, 0.2, 1e-5, False), x, tx)
    np.testing.assert_allclose(ours_stats[1].numpy(), theirs_stats[1].numpy(), rtol=1e-7)


# -- rms norm, local response norm, CrossMapLRN2d ------------------------------------------------------------

@pytest.mark.parametrize("normalized_shape,eps,affine", [((6,), None, True), ((3, 6), 1e-3, True), (6, None, False)])
def test_rms_norm_matches_torch(normalized_shape, eps, affine):
    ours = nn.RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine).double()
    theirs = torch.nn.RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine).double()
    assert repr(ours) == repr(theirs)
    if affine:
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
        copy_parameters(ours, theirs)
    x, tx = leaf_pair(RNG.standard_normal((4, 3, 6)))
    _check(ours(x), theirs(tx), x, tx, (ours, theirs))


def test_rms_norm_default_eps_in_float32():
    x = RNG.standard_normal((3, 5)).astype(np.float32) * 1e-4
    np.testing.assert_allclose(F.rms_norm(ember.tensor(x), [5]).numpy(),
                               torch.nn.functional.rms_norm(torch.tensor(x), [5]).numpy(), rtol=1e-5)


@pytest.mark.parametrize("size,shape", [(3, (2, 5, 4)), (4, (2, 6, 3, 3)), (2, (1, 4, 2, 2, 3)), (5, (2, 3, 4))])
def test_local_response_norm_matches_torch(size, shape):
    ours = nn.LocalResponseNorm(size, alpha=0.1, beta=0.6, k=1.5)
    theirs = torch.nn.LocalResponseNorm(size, 0.1, 0.6, 1.5)
    assert repr(ours) == repr(theirs)
    x, tx = leaf_pair(RNG.standard_normal(shape))
    _check(ours(x), theirs(tx), x, tx)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_cross_map_lrn2d_matches_torch(size):
    """Values as PyTorch's; gradients are the forward's true derivative (checked by finite differences), since
    PyTorch's hand-written backward assumes a symmetric window its forward does not use (and fails for size 1)."""
    ours, theirs = nn.CrossMapLRN2d(size, alpha=0.3, beta=0.8, k=2), torch.nn.CrossMapLRN2d(size, 0.3, 0.8, 2)
    assert repr(ours) == repr(theirs)
    values = RNG.standard_normal((2, 7, 3, 2))
    np.testing.assert_allclose(ours(ember.tensor(values)).numpy(), theirs(torch.tensor(values)).numpy(), rtol=1e-6)
    x = ember.tensor(values[:1, :, :1], requires_grad=True)
    assert ember.autograd.gradcheck(ours, (x,))
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        ours(ember.randn(2, 3, 4))


# -- padding --------------------------------------------------------------------------------------------------

PADS = [(kind, dims, padding) for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular")
        for dims, padding in ((1, 2), (1, (1, 2)), (2, (1, 0, 2, 1)), (3, 1), (3, (1, 2, 0, 1, 2, 0)))]


@pytest.mark.parametrize("kind,dims,padding", PADS, ids=[f"{k}Pad{d}d-{p}" for k, d, p in PADS])
def test_padding_modules_match_torch(kind, dims, padding):
    name = f"{kind}Pad{dims}d"
    args = (padding, 2.5) if kind == "Constant" else (padding,)
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs) and ours.padding == theirs.padding
    for batched in (True, False):
        shape = ((2,) if batched else ()) + (3,) + (4, 5, 3)[:dims]
        x, tx = leaf_pair(RNG.standard_normal(shape))
        _check(ours(x), theirs(tx), x, tx)


def test_circular_pad_checks_dims():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.CircularPad1d(1)(ember.randn(2, 3, 4, 5))


# -- distances ------------------------------------------------------------------------------------------------

def test_distance_modules_and_functions_match_torch():
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    for ours, theirs in ((nn.PairwiseDistance(p=1.5, keepdim=True), torch.nn.PairwiseDistance(p=1.5, keepdim=True)),
                         (nn.CosineSimilarity(dim=0), torch.nn.CosineSimilarity(dim=0)),
                         (nn.PairwiseDistance(), torch.nn.PairwiseDistance())):
        assert repr(ours) == repr(theirs)
        x, tx = leaf_pair(a)
        _check(ours(x, ember.tensor(b)), theirs(tx, torch.tensor(b)), x, tx)
    for p in (2.0, 1.0, 0.5, float("inf")):
        x, tx = leaf_pair(RNG.standard_normal((5, 3)))
        _check(F.pdist(x, p), torch.nn.functional.pdist(tx, p), x, tx)
    x, tx = leaf_pair(RNG.standard_normal((3, 1, 5)))
    _check(ember.cosine_similarity(x, ember.tensor(b), dim=-1), torch.cosine_similarity(tx, torch.tensor(b), dim=-1),
           x, tx)
    zeros = ember.zeros(2, 3)
    np.testing.assert_array_equal(F.cosine_similarity(zeros, zeros).numpy(), np.zeros(2))
    with pytest.raises(ember.ShapeError, match="pdist only supports 2D tensors"):
        F.pdist(ember.randn(2, 3, 4))


# -- lazy modules -----------------------------------------------------------------------------------------------

def test_lazy_linear_materializes_and_becomes_linear():
    module = nn.LazyLinear(4)
    assert isinstance(module.weight, nn.UninitializedParameter) and module.has_uninitialized_params()
    assert repr(module) == repr(torch.nn.LazyLinear(4))
    out = module(ember.randn(2, 3))
    assert type(module) is nn.Linear and not isinstance(module.weight, nn.UninitializedParameter)
    assert tuple(module.weight.shape) == (4, 3) and tuple(out.shape) == (2, 4)
    assert isinstance(module.weight, nn.Parameter)
    bound = 1 / np.sqrt(3)
    assert np.abs(module.weight.detach().numpy()).max() <= bound
    assert np.abs(module.bias.detach().numpy()).max() <= bound
    out.sum().backward()
    assert tuple(module.weight.grad.shape) == (4, 3)


def test_lazy_module_loads_a_checkpoint_before_its_first_call():
    trained = nn.Linear(3, 2)
    fresh = nn.LazyLinear(2)
    fresh.load_state_dict(trained.state_dict())
    x = ember.randn(4, 3)
    np.testing.assert_allclose(fresh(x).detach().numpy(), trained(x).detach().numpy())


@pytest.mark.parametrize("name,args,shape", [("LazyConv1d", (5, 3), (2, 4, 9)),
                                             ("LazyConv2d", (6, 3, 1, 1, 1, 2), (1, 4, 6, 6)),
                                             ("LazyConvTranspose2d", (3, 2, 2), (1, 4, 3, 3)),
                                             ("LazyConv2d", (5, 3), (4, 6, 6)),
                                             ("LazyConv3d", (4, 2), (1, 3, 4, 4, 4)),
                                             ("LazyConvTranspose1d", (4, 3, 2), (2, 3, 5)),
                                             ("LazyConvTranspose3d", (2, 2), (1, 3, 2, 2, 2))])
def test_lazy_convolutions_match_the_eager_layers(name, args, shape):
    if not hasattr(nn, name):
        pytest.skip(f"{name.replace('Lazy', '')} is not in ember.nn yet")
    module = getattr(nn, name)(*args)
    x = ember.randn(*shape)
    out = module(x)
    eager = getattr(nn, name.replace("Lazy", ""))
    assert type(module) is eager
    in_channels = shape[1] if len(shape) == module._spatial + 2 else shape[0]
    assert module.in_channels == in_channels
    theirs = getattr(torch.nn, name.replace("Lazy", ""))(in_channels, *args).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(module.weight.detach().numpy()))
        theirs.bias.copy_(torch.tensor(module.bias.detach().numpy()))
    expected = theirs(torch.tensor(x.numpy(), dtype=torch.float64)).detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,shape", [("LazyBatchNorm1d", (4, 3)), ("LazyBatchNorm2d", (2, 3, 4, 4)),
                                        ("LazyInstanceNorm1d", (2, 3, 5)), ("LazyInstanceNorm2d", (2, 3, 4, 4))])
def test_lazy_normalizations(name, shape):
    module = getattr(nn, name)()
    assert repr(module) == repr(getattr(torch.nn, name)())
    assert isinstance(module.running_mean, nn.UninitializedBuffer)
    x = RNG.standard_normal(shape)
    out = module(ember.tensor(x))
    theirs = getattr(torch.nn, name)()
    tout = theirs(torch.tensor(x, dtype=torch.float32))
    assert type(module).__name__ == name.replace("Lazy", "") == type(theirs).__name__
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(module.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5)


def test_lazy_conv_classes_follow_the_eager_convolutions():
    for lazy, eager in (("LazyConv1d", "Conv1d"), ("LazyConv2d", "Conv2d"), ("LazyConv3d", "Conv3d"),
                        ("LazyConvTranspose1d", "ConvTranspose1d"), ("LazyConvTranspose2d", "ConvTranspose2d"),
                        ("LazyConvTranspose3d", "ConvTranspose3d")):
        assert hasattr(nn, lazy) == hasattr(nn, eager), lazy


# -- SyncBatchNorm, DataParallel, Container --------------------------------------------------------------------

def test_sync_batch_norm_single_process_is_batch_norm():
    ours, reference = nn.SyncBatchNorm(3, momentum=0.2), nn.BatchNorm2d(3, momentum=0.2)
    theirs = torch.nn.BatchNorm2d(3, momentum=0.2)
    assert repr(ours) == repr(torch.nn.SyncBatchNorm(3, momentum=0.2))
    x = RNG.standard_normal((4, 3, 2, 2))
    np.testing.assert_allclose(ours(ember.tensor(x)).detach().numpy(), reference(ember.tensor(x)).detach().numpy())
    theirs(torch.tensor(x, dtype=torch.float32))
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        ours(ember.randn(3))


def test_convert_sync_batchnorm_shares_parameters():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(4)), nn.InstanceNorm2d(3))
    weight = model[1].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert type(converted[3]) is nn.InstanceNorm2d and type(converted[0]) is nn.Conv2d
    assert converted[1].weight is weight
    assert list(converted.state_dict()) == list(model.state_dict())


def test_data_parallel_calls_the_module():
    module = nn.Linear(3, 2)
    wrapped = nn.DataParallel(module)
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert wrapped.device_ids == theirs.device_ids == []  # torch on a CPU-only host keeps no other attribute
    assert (wrapped.dim, wrapped.output_device) == (0, None)
    x = ember.randn(4, 3)
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), module(x).detach().numpy())
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    assert nn.DataParallel(module, device_ids=["cpu"]).device_ids == [0]


def test_container_registers_modules_with_a_warning():
    with pytest.warns(UserWarning, match="nn.Container is deprecated"):
        container = nn.Container(first=nn.ReLU(), second=nn.Linear(2, 2))
    assert [name for name, _ in container.named_children()] == ["first", "second"]


def test_uninitialized_parameter_copies():
    parameter = nn.UninitializedParameter()
    assert repr(parameter) == "<UninitializedParameter>" and isinstance(parameter, nn.Parameter)
    assert isinstance(copy.deepcopy(parameter), nn.UninitializedParameter)
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        parameter.shape
    parameter.materialize((2, 3))
    assert tuple(parameter.shape) == (2, 3) and not isinstance(parameter, nn.UninitializedParameter)


def test_lazy_modules_can_be_cast_before_their_first_call():
    model = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d()).double().to("cpu")
    assert isinstance(model[1].running_mean, nn.UninitializedBuffer) and model[0].weight.dtype is ember.float64
    out = model(ember.randn(4, 5, dtype=ember.float64))
    assert out.dtype is ember.float64 and model[1].running_mean.dtype is ember.float64
    assert [type(m) for m in model] == [nn.Linear, nn.BatchNorm1d]


def test_lazy_instance_norm_reads_channels_of_an_unbatched_input():
    # PyTorch reads dim 1 even of an unbatched input and then refuses it; the channel dim of (C, H, W) is 0
    module = nn.LazyInstanceNorm2d()
    out = module(ember.randn(3, 4, 4))
    assert module.num_features == 3 and tuple(out.shape) == (3, 4, 4)


def test_sync_batch_norm_on_two_ranks_matches_batch_norm_on_the_whole_batch():
    pytest.importorskip("mpi4py", reason="the distributed extra (mpi4py, mpich) is not installed")
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).parent / "distributed_scripts" / "sync_batchnorm.py"
    done = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2",
                           "--master-port", "29637", str(script)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        assert f"rank {rank}: sync batchnorm checks 5/5 " in done.stdout, done.stdout + done.stderr
