"""Convolution, pooling and embedding-bag layers against PyTorch: forward values, input and weight gradients,
returned indices, reprs and the errors for bad arguments."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.dispatch.schema.errors import ShapeError

from torch_parity import assert_forward_backward, copy_parameters, leaf_pair

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(15)


_check = functools.partial(assert_forward_backward, rng=RNG)


# -- convolution ----------------------------------------------------------------------------------------------

CONVS = [
    ("Conv3d", (2, 4, 5, 6, 5), dict(in_channels=4, out_channels=6, kernel_size=(2, 3, 2), stride=(1, 2, 1),
                                     padding=1, dilation=(2, 1, 1), groups=2)),
    ("Conv3d", (3, 4, 4, 5), dict(in_channels=3, out_channels=2, kernel_size=3, padding="same", bias=False)),
    ("Conv3d", (1, 2, 4, 5, 4), dict(in_channels=2, out_channels=3, kernel_size=2, padding=1,
                                     padding_mode="reflect")),
    ("ConvTranspose1d", (2, 4, 6), dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1,
                                        output_padding=1, groups=2, dilation=1)),
    ("ConvTranspose1d", (3, 5), dict(in_channels=3, out_channels=2, kernel_size=4, dilation=2, bias=False)),
    ("ConvTranspose3d", (2, 4, 3, 2, 3), dict(in_channels=4, out_channels=2, kernel_size=(2, 3, 2),
                                              stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0),
                                              groups=2)),
    ("ConvTranspose3d", (2, 2, 3, 2), dict(in_channels=2, out_channels=3, kernel_size=2, dilation=(1, 2, 1))),
]


@pytest.mark.parametrize("name,shape,kwargs", CONVS)
def test_conv_layers_match_torch(name, shape, kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(**kwargs).double()
    ours = getattr(nn, name)(**kwargs).double()
    assert repr(ours) == repr(theirs)
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    copy_parameters(ours, theirs)
    x, tx = leaf_pair(RNG.standard_normal(shape))
    _check(ours(x), theirs(tx), [(x, tx)], (ours, theirs))


def test_conv_transpose_output_size_matches_torch():
    theirs = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    ours = nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    copy_parameters(ours, theirs)
    x, tx = leaf_pair(RNG.standard_normal((1, 2, 3, 2, 3)))
    _check(ours(x, output_size=(6, 4, 5)), theirs(tx, output_size=(6, 4, 5)), [(x, tx)], (ours, theirs))
    with pytest.raises(ValueError, match="output size"):
        ours(x, output_size=(9, 4, 5))


@pytest.mark.parametrize("function,x_shape,w_shape,kwargs", [
    ("conv3d", (2, 2, 4, 4, 4), (3, 2, 2, 2, 2), dict(stride=2, padding=(1, 0, 1))),
    ("conv_transpose1d", (2, 3, 5), (3, 2, 3), dict(stride=3, padding=1, output_padding=2)),
    ("conv_transpose3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), dict(stride=(1, 2, 1), dilation=2)),
])
def test_conv_functions_match_torch(function, x_shape, w_shape, kwargs):
    x, tx = leaf_pair(RNG.standard_normal(x_shape))
    w, tw = leaf_pair(RNG.standard_normal(w_shape))
    for namespace in (F, ember):
        x.grad = w.grad = tx.grad = tw.grad = None
        _check(getattr(namespace, function)(x, w, **kwargs), getattr(TF, function)(tx, tw, **kwargs),
               [(x, tx), (w, tw)])


@pytest.mark.parametrize("x_shape,w_shape,args", [
    ((2, 4, 7), (2, 2, 3), ((2,), (1,), (1,), False, (0,), 2)),
    ((1, 3, 3, 4), (3, 2, 2, 3), ((2, 1), (1, 0), (1, 2), True, (1, 0), 1)),
    ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), ((1, 1, 1), (0, 1, 0), (1, 1, 1), False, (0, 0, 0), 1)),
])
def test_torch_convolution_matches_torch(x_shape, w_shape, args):
    x, tx = leaf_pair(RNG.standard_normal(x_shape))
    w, tw = leaf_pair(RNG.standard_normal(w_shape))
    _check(ember.convolution(x, w, None, *args), torch.convolution(tx, tw, None, *args), [(x, tx), (w, tw)])


def test_conv3d_channel_mismatch_names_the_op():
    with pytest.raises(ShapeError, match="conv3d"):
        F.conv3d(ember.randn(1, 3, 4, 4, 4), ember.randn(2, 2, 2, 2, 2))


# -- pooling --------------------------------------------------------------------------------------------------

POOLS = [
    ("MaxPool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    ("MaxPool1d", (3, 8), dict(kernel_size=2, ceil_mode=True)),
    ("MaxPool3d", (2, 2, 5, 6, 5), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=1)),
    ("MaxPool3d", (2, 4, 5, 4), dict(kernel_size=2, ceil_mode=True, dilation=(1, 2, 1))),
    ("AvgPool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("AvgPool1d", (3, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("AvgPool3d", (2, 2, 5, 4, 5), dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1)),
    ("AvgPool3d", (2, 5, 4, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("AvgPool3d", (1, 1, 4, 4, 4), dict(kernel_size=2, divisor_override=3)),
    ("AdaptiveAvgPool1d", (2, 3, 7), dict(output_size=4)),
    ("AdaptiveAvgPool3d", (2, 3, 5, 7, 4), dict(output_size=(2, None, 3))),
    ("AdaptiveMaxPool1d", (2, 3, 7), dict(output_size=3)),
    ("AdaptiveMaxPool2d", (3, 7, 5), dict(output_size=(3, 4))),
    ("AdaptiveMaxPool3d", (2, 2, 5, 7, 4), dict(output_size=(2, 3, None))),
    ("LPPool1d", (2, 3, 8), dict(norm_type=2, kernel_size=3, stride=2)),
    ("LPPool2d", (2, 3, 7, 6), dict(norm_type=3, kernel_size=(2, 3), ceil_mode=True)),
    ("LPPool3d", (1, 2, 4, 4, 6), dict(norm_type=1.5, kernel_size=2)),
]


@pytest.mark.parametrize("name,shape,kwargs", POOLS)
def test_pooling_layers_match_torch(name, shape, kwargs):
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    values = RNG.standard_normal(shape)
    if name.startswith("LPPool"):  # fractional powers of negative numbers are NaN in both
        values = np.abs(values) + 0.1
    x, tx = leaf_pair(values)
    _check(ours(x), theirs(tx), [(x, tx)])


@pytest.mark.parametrize("n,shape,kwargs", [
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (3, 6, 7), dict(kernel_size=(2, 3), stride=(2, 2), padding=(1, 0))),
    (3, (1, 2, 5, 6, 5), dict(kernel_size=2, stride=(1, 2, 2))),
])
def test_max_pool_return_indices_and_unpool_match_torch(n, shape, kwargs):
    ours, theirs = getattr(nn, f"MaxPool{n}d")(**kwargs, return_indices=True), \
        getattr(torch.nn, f"MaxPool{n}d")(**kwargs, return_indices=True)
    x, tx = leaf_pair(RNG.standard_normal(shape))
    (values, indices), (tvalues, tindices) = ours(x), theirs(tx)
    np.testing.assert_array_equal(indices.numpy(), tindices.numpy())
    _check(values, tvalues, [(x, tx)])
    unpool_args = {k: v for k, v in kwargs.items() if k in ("kernel_size", "stride", "padding")}
    ours_unpool, theirs_unpool = getattr(nn, f"MaxUnpool{n}d")(**unpool_args), \
        getattr(torch.nn, f"MaxUnpool{n}d")(**unpool_args)
    assert repr(ours_unpool) == repr(theirs_unpool)
    y, ty = leaf_pair(values.detach().numpy())
    size = shape[-n:]
    _check(ours_unpool(y, indices, output_size=size), theirs_unpool(ty, tindices, output_size=size), [(y, ty)])


def test_with_indices_functions_match_torch():
    x = RNG.standard_normal((2, 3, 7, 6))
    for ours, theirs, args in ((F.max_pool2d_with_indices, TF.max_pool2d_with_indices, (3, 2, 1)),
                               (F.adaptive_max_pool2d_with_indices, TF.adaptive_max_pool2d_with_indices, ((3, 4),)),
                               (ember.max_pool1d_with_indices, torch.max_pool1d_with_indices, (2,))):
        data = x[0] if ours is ember.max_pool1d_with_indices else x
        values, indices = ours(ember.tensor(data), *args)
        tvalues, tindices = theirs(torch.tensor(data), *args)
        np.testing.assert_array_equal(values.numpy(), tvalues.numpy())
        np.testing.assert_array_equal(indices.numpy(), tindices.numpy())


def test_max_pool_picks_first_of_ties_and_propagates_nan_like_torch():
    values = np.round(RNG.standard_normal((1, 2, 6, 6)))
    values[0, 1, 2, 3] = np.nan
    (ours, indices), (theirs, tindices) = F.max_pool2d(ember.tensor(values), 2, 1, return_indices=True), \
        TF.max_pool2d(torch.tensor(values), 2, 1, return_indices=True)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(indices.numpy(), tindices.numpy())


@pytest.mark.parametrize("n,shape,kwargs", [
    (2, (2, 3, 9, 8), dict(kernel_size=(2, 3), output_size=(4, 5))),
    (2, (3, 8, 8), dict(kernel_size=2, output_ratio=0.5)),
    (3, (2, 2, 7, 8, 6), dict(kernel_size=(2, 3, 2), output_size=(4, 5, 3))),
])
def test_fractional_max_pool_matches_torch_given_the_samples(n, shape, kwargs):
    batch = 1 if len(shape) == n + 1 else shape[0]
    samples = RNG.uniform(size=(batch, shape[-n - 1], n))
    ours = getattr(nn, f"FractionalMaxPool{n}d")(**kwargs, return_indices=True,
                                                 _random_samples=ember.tensor(samples))
    theirs = getattr(torch.nn, f"FractionalMaxPool{n}d")(**kwargs, return_indices=True,
                                                         _random_samples=torch.tensor(samples))
    x, tx = leaf_pair(RNG.standard_normal(shape))
    (values, indices), (tvalues, tindices) = ours(x), theirs(tx)
    np.testing.assert_array_equal(indices.numpy(), tindices.numpy())
    _check(values, tvalues, [(x, tx)])


def test_fractional_max_pool_draws_from_the_seeded_generator():
    pool = nn.FractionalMaxPool2d(2, output_size=(5, 4))
    x = ember.randn(2, 3, 11, 9)
    ember.manual_seed(3)
    first = pool(x)
    ember.manual_seed(3)
    np.testing.assert_array_equal(first.numpy(), pool(x).numpy())
    assert tuple(first.shape) == (2, 3, 5, 4)
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)


def test_pooling_errors_name_the_op():
    with pytest.raises(ShapeError, match="max_pool3d"):
        F.max_pool3d(ember.randn(2, 3, 4), 2)
    with pytest.raises(ValueError, match="padding should be at most half"):
        F.avg_pool3d(ember.randn(1, 1, 4, 4, 4), 2, padding=2)
    with pytest.raises(IndexError, match="max_unpool2d"):
        F.max_unpool2d(ember.randn(1, 1, 2, 2), ember.full((1, 1, 2, 2), 99, dtype=ember.int64), 2)
    with pytest.raises(ValueError, match="output_size"):
        F.max_unpool2d(ember.randn(1, 1, 2, 2), ember.zeros((1, 1, 2, 2), dtype=ember.int64), 2,
                       output_size=(9, 9))


# -- embedding bags --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_matches_torch(mode, padding_idx):
    table = RNG.standard_normal((10, 4))
    indices = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2])
    offsets = np.array([0, 4, 4, 7])
    ours = nn.EmbeddingBag(10, 4, mode=mode, padding_idx=padding_idx, _weight=ember.tensor(table))
    theirs = torch.nn.EmbeddingBag(10, 4, mode=mode, padding_idx=padding_idx, _weight=torch.tensor(table))
    assert repr(ours) == repr(theirs)
    _check(ours(ember.tensor(indices), ember.tensor(offsets)), theirs(torch.tensor(indices), torch.tensor(offsets)),
           [], (ours, theirs))


def test_embedding_bag_2d_input_per_sample_weights_and_last_offset_match_torch():
    table, ttable = leaf_pair(RNG.standard_normal((8, 3)))
    indices = RNG.integers(0, 8, (3, 4))
    psw, tpsw = leaf_pair(RNG.standard_normal((3, 4)))
    _check(F.embedding_bag(ember.tensor(indices), table, mode="sum", per_sample_weights=psw),
           TF.embedding_bag(torch.tensor(indices), ttable, mode="sum", per_sample_weights=tpsw),
           [(table, ttable), (psw, tpsw)])
    flat, offsets = indices.ravel(), np.array([0, 5, 5, 12])
    table.grad = ttable.grad = None
    _check(F.embedding_bag(ember.tensor(flat), table, ember.tensor(offsets), mode="max", include_last_offset=True),
           TF.embedding_bag(torch.tensor(flat), ttable, torch.tensor(offsets), mode="max", include_last_offset=True),
           [(table, ttable)])


def test_embedding_bag_errors():
    bag = nn.EmbeddingBag(5, 2)
    with pytest.raises(ValueError, match="offsets has to be None"):
        bag(ember.tensor([[1, 2]]), ember.tensor([0]))
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        bag(ember.tensor([1, 2, 3]), ember.tensor([1, 2]))
    with pytest.raises(IndexError, match="out of range"):
        bag(ember.tensor([1, 7]), ember.tensor([0]))
    with pytest.raises(ValueError, match="only supported for mode='sum'"):
        bag(ember.tensor([1, 2]), ember.tensor([0]), per_sample_weights=ember.ones(2))


def test_sparse_embedding_trains_with_torchs_gradient_values():
    table = RNG.standard_normal((6, 3))
    ours = nn.Embedding(6, 3, sparse=True, _weight=ember.tensor(table))
    theirs = torch.nn.Embedding(6, 3, sparse=True, _weight=torch.tensor(table))
    indices = np.array([[1, 4, 1], [0, 5, 1]])
    ours(ember.tensor(indices)).pow(2).sum().backward()
    theirs(torch.tensor(indices)).pow(2).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.to_dense().numpy())
    optimizer, reference = ember.optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)
    optimizer.step()
    reference.step()
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
