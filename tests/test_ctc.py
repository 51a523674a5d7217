"""F.ctc_loss / nn.CTCLoss against torch: values and gradients over target layouts, reductions, blanks,
unbatched input, impossible targets with and without zero_infinity."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F

torch = pytest.importorskip("torch")


def _log_probs(steps, batch, classes, seed=0, dtype=np.float64):
    logits = np.random.default_rng(seed).standard_normal((steps, batch, classes) if batch else (steps, classes))
    logits = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return logits.astype(dtype)


def _compare(log_probs, targets, input_lengths, target_lengths, tol=1e-9, **options):
    """Values, and gradients with respect to the logits under a log_softmax: PyTorch's CTC backward assumes
    that layout (its gradient in log_probs has an extra softmax term that log_softmax's backward cancels),
    Ember's is the plain derivative; through log_softmax the two agree, which is what training sees."""
    logits_e = ember.tensor(log_probs, requires_grad=True)
    logits_t = torch.tensor(log_probs, requires_grad=True)
    lp_e, lp_t = F.log_softmax(logits_e, -1), torch.log_softmax(logits_t, -1)
    args_e = [ember.tensor(np.asarray(a)) if isinstance(a, np.ndarray) else a
              for a in (targets, input_lengths, target_lengths)]
    args_t = [torch.tensor(np.asarray(a)) if isinstance(a, np.ndarray) else a
              for a in (targets, input_lengths, target_lengths)]
    ours, theirs = F.ctc_loss(lp_e, *args_e, **options), torch.nn.functional.ctc_loss(lp_t, *args_t, **options)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)
    weights = np.arange(1, ours.numel() + 1, dtype=log_probs.dtype).reshape(tuple(ours.shape))
    finite = np.isfinite(theirs.detach().numpy())
    (ours * ember.tensor(np.where(finite, weights, 0))).sum().backward()
    (theirs * torch.tensor(np.where(finite, weights, 0))).sum().backward()
    theirs_grad = logits_t.grad.numpy()
    defined = ~np.isnan(theirs_grad)  # torch's gradient of an infinite loss is NaN, Ember's is zero
    assert np.all(logits_e.grad.numpy()[~defined] == 0)
    np.testing.assert_allclose(logits_e.grad.numpy()[defined], theirs_grad[defined], rtol=tol * 10, atol=tol * 10)
    return ours


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_padded_targets_match_torch(reduction):
    targets = np.array([[1, 2, 2], [3, 1, 0], [4, 4, 4]])
    _compare(_log_probs(7, 3, 5), targets, np.array([7, 6, 7]), np.array([3, 2, 3]), reduction=reduction)


def test_concatenated_targets_blank_and_list_lengths_match_torch():
    targets = np.array([0, 1, 1, 2, 0])  # lengths 3 and 2, blank is 3
    _compare(_log_probs(6, 2, 4, seed=1), targets, [6, 5], [3, 2], blank=3, reduction="none")


def test_unbatched_and_empty_target_match_torch():
    _compare(_log_probs(5, 0, 4, seed=2), np.array([1, 3]), np.array(5), np.array(2), reduction="sum")
    _compare(_log_probs(4, 2, 3, seed=3), np.array([[1, 2], [0, 0]]), np.array([4, 3]), np.array([2, 0]),
             reduction="none")


def test_impossible_targets_are_infinite_or_zeroed_like_torch():
    targets = np.array([[1, 1, 2], [1, 2, 0]])  # the first needs 4 steps (a repeat), only 3 given
    losses = _compare(_log_probs(3, 2, 3, seed=4), targets, np.array([3, 3]), np.array([3, 2]), reduction="none")
    assert np.isinf(losses.detach().numpy()[0])
    _compare(_log_probs(3, 2, 3, seed=4), targets, np.array([3, 3]), np.array([3, 2]), reduction="mean",
             zero_infinity=True)


def test_float32_module_matches_torch():
    log_probs = _log_probs(8, 2, 6, seed=5, dtype=np.float32)
    ours = nn.CTCLoss(blank=0, reduction="mean")(ember.tensor(log_probs), ember.tensor([[1, 2, 3], [5, 5, 0]]),
                                                 [8, 7], [3, 2])
    theirs = torch.nn.CTCLoss()(torch.tensor(log_probs), torch.tensor([[1, 2, 3], [5, 5, 0]]), [8, 7], [3, 2])
    assert ours.dtype == ember.float32
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-5)


def test_bad_input_raises_clear_errors():
    lp = ember.tensor(_log_probs(4, 2, 3))
    with pytest.raises(ember.EmberError, match="blank"):
        F.ctc_loss(lp, ember.tensor([[1], [1]]), [4, 4], [1, 1], blank=3)
    with pytest.raises(ember.ShapeError, match="input_lengths"):
        F.ctc_loss(lp, ember.tensor([[1], [1]]), [4, 4, 4], [1, 1])
    with pytest.raises(ValueError, match="reduction"):
        F.ctc_loss(lp, ember.tensor([[1], [1]]), [4, 4], [1, 1], reduction="avg")


def test_bad_lengths_and_labels_raise():
    lp = ember.tensor(_log_probs(4, 2, 3))
    with pytest.raises(ember.EmberError, match="input_lengths"):
        F.ctc_loss(lp, ember.tensor([[1, 2], [1, 1]]), [5, 4], [2, 2])
    with pytest.raises(ember.ShapeError, match="exceeds"):
        F.ctc_loss(lp, ember.tensor([[1, 2], [1, 1]]), [4, 4], [3, 2])
    with pytest.raises(ember.ShapeError, match="sum\\(target_lengths\\)"):
        F.ctc_loss(lp, ember.tensor([1, 2, 1]), [4, 4], [2, 2])
    with pytest.raises(ember.EmberError, match="target labels"):
        F.ctc_loss(lp, ember.tensor([[1, 7], [1, 1]]), [4, 4], [2, 2])
