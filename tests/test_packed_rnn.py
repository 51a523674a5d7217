"""ember.nn.utils.rnn and the recurrent layers on PackedSequence, against torch: values and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import rnn

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn

LENGTHS = [3, 5, 1, 4]


def _padded(seed=0, steps=5, batch=4, features=3):
    return np.random.default_rng(seed).standard_normal((steps, batch, features))


def _both(array, grad=False):
    return ember.tensor(array, requires_grad=grad), torch.tensor(array, requires_grad=grad)


def _close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(np.asarray(ours.detach().numpy()), theirs.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_round_trip_like_torch(batch_first):
    x = _padded()
    if batch_first:
        x = x.transpose(1, 0, 2).copy()
    xe, xt = _both(x)
    pe = rnn.pack_padded_sequence(xe, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    pt = trnn.pack_padded_sequence(xt, torch.tensor(LENGTHS), batch_first=batch_first, enforce_sorted=False)
    assert type(pe).__name__ == "PackedSequence" and pe._fields == pt._fields
    _close(pe.data, pt.data)
    assert pe.batch_sizes.tolist() == pt.batch_sizes.tolist() and pe.batch_sizes.dtype == ember.int64
    assert pe.sorted_indices.tolist() == pt.sorted_indices.tolist()
    assert pe.unsorted_indices.tolist() == pt.unsorted_indices.tolist()
    for total in (None, 7):
        (ye, le), (yt, lt) = (rnn.pad_packed_sequence(pe, batch_first, -1.0, total),
                              trnn.pad_packed_sequence(pt, batch_first, -1.0, total))
        _close(ye, yt)
        assert le.tolist() == lt.tolist() == LENGTHS
    with pytest.raises(ValueError, match="total_length"):
        rnn.pad_packed_sequence(pe, total_length=2)


def test_enforce_sorted_and_bad_lengths_raise():
    x = ember.zeros(5, 4, 3)
    with pytest.raises(ValueError, match="decreasing"):
        rnn.pack_padded_sequence(x, LENGTHS)
    with pytest.raises(ValueError, match="greater than 0"):
        rnn.pack_padded_sequence(x, [5, 3, 0, 1], enforce_sorted=False)
    with pytest.raises(ember.ShapeError, match="len\\(lengths\\)"):
        rnn.pack_padded_sequence(x, [5, 3])
    sorted_pack = rnn.pack_padded_sequence(x, [5, 4, 2, 1])
    assert sorted_pack.sorted_indices is None and sorted_pack.unsorted_indices is None


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_unpad_pack_sequence_unpack_sequence(side, batch_first):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((n, 2)) for n in LENGTHS]
    ours = [ember.tensor(a) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    _close(rnn.pad_sequence(ours, batch_first, 9.0, side), trnn.pad_sequence(theirs, batch_first, 9.0, side))
    padded = rnn.pad_sequence(ours, batch_first)
    for piece, array in zip(rnn.unpad_sequence(padded, ember.tensor(LENGTHS), batch_first), arrays):
        np.testing.assert_array_equal(piece.numpy(), array)
    pe, pt = rnn.pack_sequence(ours, enforce_sorted=False), trnn.pack_sequence(theirs, enforce_sorted=False)
    _close(pe.data, pt.data)
    for piece, array in zip(rnn.unpack_sequence(pe), arrays):
        np.testing.assert_array_equal(piece.numpy(), array)
    with pytest.raises(ValueError, match="padding_side"):
        rnn.pad_sequence(ours, padding_side="middle")


def _pair_modules(kind, **options):
    ours = getattr(nn, kind)(3, 4, dtype=ember.float64, **options)
    theirs = getattr(torch.nn, kind)(3, 4, dtype=torch.float64, **options)
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            getattr(ours, name).data = ember.tensor(p.numpy().copy())
    return ours, theirs


@pytest.mark.parametrize("kind,options", [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}), ("GRU", {"bidirectional": True}),
    ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True}), ("LSTM", {"proj_size": 2}),
    ("GRU", {"batch_first": True, "num_layers": 2})])
@pytest.mark.parametrize("with_hx", [False, True])
def test_recurrent_layers_on_packed_sequences_match_torch(kind, options, with_hx):
    ours, theirs = _pair_modules(kind, **options)
    batch_first = options.get("batch_first", False)
    x = _padded(2)
    if batch_first:
        x = x.transpose(1, 0, 2).copy()
    xe, xt = _both(x, grad=True)
    pe = rnn.pack_padded_sequence(xe, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    pt = trnn.pack_padded_sequence(xt, torch.tensor(LENGTHS), batch_first=batch_first, enforce_sorted=False)
    hx_e = hx_t = None
    if with_hx:
        layers = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
        rng = np.random.default_rng(3)
        h = rng.standard_normal((layers, 4, options.get("proj_size") or 4))
        he, ht = _both(h, grad=True)
        hx_e, hx_t = he, ht
        if kind == "LSTM":
            ce, ct = _both(rng.standard_normal((layers, 4, 4)), grad=True)
            hx_e, hx_t = (he, ce), (ht, ct)
    out_e, state_e = ours(pe, hx_e)
    out_t, state_t = theirs(pt, hx_t)
    assert isinstance(out_e, rnn.PackedSequence)
    _close(out_e.data, out_t.data)
    states_e = state_e if kind == "LSTM" else (state_e,)
    states_t = state_t if kind == "LSTM" else (state_t,)
    for a, b in zip(states_e, states_t):
        _close(a, b)
    # gradients through the padded output and the final states
    padded_e, _ = rnn.pad_packed_sequence(out_e, batch_first=batch_first)
    padded_t, _ = trnn.pad_packed_sequence(out_t, batch_first=batch_first)
    loss_e = (padded_e ** 2).sum() + sum((s * 1.5).sum() for s in states_e)
    loss_t = (padded_t ** 2).sum() + sum((s * 1.5).sum() for s in states_t)
    loss_e.backward()
    loss_t.backward()
    _close(xe.grad, xt.grad, 1e-9)
    for name, p in theirs.named_parameters():
        _close(getattr(ours, name).grad, p.grad, 1e-9)
    if with_hx:
        _close(he.grad, ht.grad, 1e-9)


def test_packed_final_state_is_each_sequences_last_real_step():
    ours, _ = _pair_modules("GRU")
    x = ember.tensor(_padded(4))
    _, h_packed = ours(rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False))
    for b, n in enumerate(LENGTHS):
        _, h_alone = ours(x[:n, b:b + 1])
        np.testing.assert_allclose(h_packed[:, b].detach().numpy(), h_alone[:, 0].detach().numpy(), rtol=1e-12)
