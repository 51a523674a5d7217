"""Resampling layers and functions against PyTorch: Upsample and interpolate modes, pixel and channel shuffles,
Fold / Unfold, affine_grid and grid_sample; forward values, input (and grid / theta) gradients, reprs, errors."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.dispatch.schema.errors import ShapeError

from torch_parity import assert_forward_backward, leaf_pair

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(16)


_check = functools.partial(assert_forward_backward, rng=RNG)


# -- upsampling -----------------------------------------------------------------------------------------------

UPSAMPLES = [
    ("Upsample", (2, 3, 5), dict(scale_factor=2.5, mode="linear")),
    ("Upsample", (2, 3, 4, 5), dict(size=(7, 3), mode="bicubic", align_corners=True)),
    ("Upsample", (1, 2, 3, 4, 3), dict(scale_factor=(2, 1.5, 2), mode="trilinear")),
    ("Upsample", (2, 2, 5, 4), dict(scale_factor=1.7, mode="nearest-exact", recompute_scale_factor=True)),
    ("Upsample", (1, 2, 7, 6), dict(size=(3, 4), mode="area")),
    ("UpsamplingNearest2d", (2, 3, 4, 5), dict(scale_factor=2)),
    ("UpsamplingBilinear2d", (2, 3, 4, 5), dict(size=(6, 9))),
]


@pytest.mark.parametrize("name,shape,kwargs", UPSAMPLES)
def test_upsampling_layers_match_torch(name, shape, kwargs):
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    x, tx = leaf_pair(RNG.standard_normal(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UpsamplingNearest2d / Bilinear2d are deprecated in both
        _check(ours(x), theirs(tx), [(x, tx)])


@pytest.mark.parametrize("function,kwargs", [
    ("upsample", dict(scale_factor=2, mode="bilinear", align_corners=False)),
    ("upsample_nearest", dict(size=(6, 7))),
    ("upsample_bilinear", dict(scale_factor=1.5)),
])
def test_deprecated_upsample_functions_warn_and_match_torch(function, kwargs):
    x, tx = leaf_pair(RNG.standard_normal((1, 2, 4, 5)))
    with pytest.warns(UserWarning, match="deprecated"):
        ours = getattr(F, function)(x, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(TF, function)(tx, **kwargs)
    _check(ours, theirs, [(x, tx)])


# -- pixel and channel shuffles -------------------------------------------------------------------------------

@pytest.mark.parametrize("name,shape,factor", [
    ("PixelShuffle", (2, 8, 3, 2), 2), ("PixelShuffle", (9, 2, 2), 3), ("PixelShuffle", (2, 1, 4, 2, 3), 2),
    ("PixelUnshuffle", (2, 2, 6, 4), 2), ("PixelUnshuffle", (1, 6, 3), 3), ("ChannelShuffle", (2, 6, 3, 2), 3),
    ("ChannelShuffle", (2, 4, 1, 2, 2), 2),
])
def test_shuffle_layers_match_torch(name, shape, factor):
    ours, theirs = getattr(nn, name)(factor), getattr(torch.nn, name)(factor)
    assert repr(ours) == repr(theirs)
    x, tx = leaf_pair(RNG.standard_normal(shape))
    _check(ours(x), theirs(tx), [(x, tx)])


def test_shuffle_functions_exist_at_every_level_and_keep_integer_dtypes():
    x = RNG.integers(0, 9, (2, 8, 2, 4))
    for ours, theirs, arg in ((ember.pixel_shuffle, torch.pixel_shuffle, 2),
                              (F.pixel_unshuffle, TF.pixel_unshuffle, 2),
                              (ember.channel_shuffle, torch.channel_shuffle, 4),
                              (ember.native_channel_shuffle, torch.native_channel_shuffle, 2),
                              (F.channel_shuffle, TF.channel_shuffle, 2)):
        out = ours(ember.tensor(x), arg)
        assert out.dtype == ember.int64
        np.testing.assert_array_equal(out.numpy(), theirs(torch.tensor(x), arg).numpy())


def test_shuffle_errors_name_the_op():
    with pytest.raises(ShapeError, match="pixel_shuffle"):
        F.pixel_shuffle(ember.randn(1, 3, 2, 2), 2)
    with pytest.raises(ShapeError, match="pixel_unshuffle"):
        F.pixel_unshuffle(ember.randn(1, 3, 5, 4), 2)
    with pytest.raises(ShapeError, match="channel_shuffle"):
        F.channel_shuffle(ember.randn(1, 5, 2), 2)


# -- fold and unfold ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 6, 5), dict(kernel_size=(2, 3))),
    ((1, 2, 7, 6), dict(kernel_size=2, dilation=(2, 1), padding=1, stride=(2, 3))),
    ((3, 5, 4), dict(kernel_size=3, padding=(1, 0))),
])
def test_unfold_and_fold_match_torch(shape, kwargs):
    ours, theirs = nn.Unfold(**kwargs), torch.nn.Unfold(**kwargs)
    assert repr(ours) == repr(theirs)
    x, tx = leaf_pair(RNG.standard_normal(shape))
    columns, tcolumns = ours(x), theirs(tx)
    _check(columns, tcolumns, [(x, tx)])
    size = shape[-2:]
    ours_fold, theirs_fold = nn.Fold(size, **kwargs), torch.nn.Fold(size, **kwargs)
    assert repr(ours_fold) == repr(theirs_fold)
    c, tc = leaf_pair(tcolumns.detach().numpy())
    _check(ours_fold(c), theirs_fold(tc), [(c, tc)])


def test_fold_checks_the_block_count():
    with pytest.raises(ShapeError, match="col2im"):
        F.fold(ember.randn(1, 12, 10), (4, 5), (2, 3))
    with pytest.raises(ShapeError, match="im2col"):
        F.unfold(ember.randn(1, 2, 2, 2), 3)


# -- affine_grid and grid_sample ------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Since version 1.3.0")  # torch's note on unit-size grids
@pytest.mark.parametrize("size,align_corners", [((2, 3, 4, 5), False), ((2, 1, 1, 3), True),
                                                ((2, 2, 3, 4, 2), False), ((2, 1, 2, 3, 4), True)])
def test_affine_grid_matches_torch(size, align_corners):
    n = len(size) - 2
    theta, ttheta = leaf_pair(RNG.standard_normal((size[0], n, n + 1)))
    _check(F.affine_grid(theta, size, align_corners), TF.affine_grid(ttheta, size, align_corners),
           [(theta, ttheta)])
    theta.grad = ttheta.grad = None
    _check(ember.affine_grid_generator(theta, size, align_corners),
           torch.affine_grid_generator(ttheta, size, align_corners), [(theta, ttheta)])


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_4d_matches_torch(mode, padding_mode, align_corners):
    x, tx = leaf_pair(RNG.standard_normal((2, 3, 4, 5)))
    grid, tgrid = leaf_pair(RNG.uniform(-1.4, 1.4, (2, 3, 6, 2)))
    inputs = [(x, tx), (grid, tgrid)] if mode != "nearest" else [(x, tx)]
    _check(F.grid_sample(x, grid, mode, padding_mode, align_corners),
           TF.grid_sample(tx, tgrid, mode, padding_mode, align_corners), inputs)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_5d_matches_torch(padding_mode):
    x, tx = leaf_pair(RNG.standard_normal((2, 2, 3, 4, 5)))
    grid, tgrid = leaf_pair(RNG.uniform(-1.3, 1.3, (2, 2, 3, 2, 3)))
    _check(F.grid_sample(x, grid, "bilinear", padding_mode, True),
           TF.grid_sample(tx, tgrid, "bilinear", padding_mode, True), [(x, tx), (grid, tgrid)])


def test_spatial_transformer_round_trip_matches_torch():
    """affine_grid feeding grid_sample, gradients reaching theta through both."""
    x, tx = leaf_pair(RNG.standard_normal((2, 3, 5, 6)))
    theta, ttheta = leaf_pair(np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]], [[1.2, 0.0, -0.2], [0.3, 0.8, 0.0]]]))
    ours = F.grid_sample(x, F.affine_grid(theta, (2, 3, 4, 4), False), align_corners=False)
    theirs = TF.grid_sample(tx, TF.affine_grid(ttheta, (2, 3, 4, 4), False), align_corners=False)
    _check(ours, theirs, [(x, tx), (theta, ttheta)])


def test_grid_sample_refuses_what_it_cannot_do():
    x, grid = ember.randn(1, 2, 3, 3), ember.rand(1, 2, 2, 2)
    with pytest.raises(ValueError, match="mode"):
        F.grid_sample(x, grid, mode="trilinear", align_corners=False)
    with pytest.raises(ShapeError, match="bicubic"):
        F.grid_sample(ember.randn(1, 2, 3, 3, 3), ember.rand(1, 2, 2, 2, 3), mode="bicubic", align_corners=False)
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(x, grid, padding_mode="wrap", align_corners=False)
    with pytest.raises(ShapeError, match="grid_sampler"):
        F.grid_sample(x, ember.rand(1, 2, 2, 3), align_corners=False)
    with pytest.warns(UserWarning, match="align_corners"):
        F.grid_sample(x, grid)
