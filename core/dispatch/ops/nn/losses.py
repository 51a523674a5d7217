"""Loss ops: cross-entropy and negative log-likelihood over class indices (each with its backward op),
cross-entropy against class probabilities, and binary cross-entropy (the pointwise losses are in
``pointwise_losses``).

They are ops rather than compositions in ``ember.nn`` for speed and for PyTorch's gradients:
- each call is one graph node whose derivative is one expression (for cross-entropy: softmax times
  the target mass minus the target distribution, scaled), instead of a chain of a dozen nodes;
- the class-index losses' derivatives are ops too (``*_backward``), so that a backend overrides forward
  and backward with one fused kernel each (the CPU backend does); their core definitions are plain
  Ember ops, which autograd decomposes for double backward;
- binary cross-entropy needs PyTorch's clamped derivative, finite where the inputs are exactly 0 or 1.
The reduction happens inside the op: the weighted mean divides by the sum of the target weights,
which the op has at hand.

Class weights are constants, as in PyTorch: a weight that requires grad is refused at the forward
rather than silently given no gradient.

The cross-entropies take PyTorch's steps in a half-precision input's own dtype (log_softmax rounded, then
each loss term and each sum), so that a loss overflows, or is NaN, where PyTorch's does; their gradients
compute in float32 and round once. Under autocast every loss runs in float32 (PyTorch's lists);
binary_cross_entropy is refused under CUDA-style autocast, where a sigmoid before it is unsafe in float16
(binary_cross_entropy_with_logits is the safe form). The backward ops carry no policy: autograd calls them
with the forward's dtypes.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...execution.dispatcher import note_value_read
from ...schema.dtypes import SCALAR_TYPE_NAMES, bool_, int64, uint8
from ...schema.errors import ArgumentError, DtypeError, EmberError, OutOfRangeError, describe
from ...schema.meta import broadcast_shapes, require, shape
from ...schema.overflow import INTEGER_RANGES
from ...schema import Sample, defop
from ..namespace import F
from ._shared import _log_softmax_reference, _refuse_weight_grad
from ..onnx_support import index_as_int64
from ..elementwise.opmath import in_opmath
from ..indexing.value_checks import MISSING, CheckedValues, bounded, check_extremes, vouched

REDUCTIONS = ("none", "mean", "sum")


def reduced(losses, reduction: str):
    """Per-element losses reduced as ``reduction`` ('none', 'sum' or 'mean') says, without weights."""
    if reduction == "none":
        return losses
    return F.sum(losses) if reduction == "sum" else F.mean(losses)


def reference_reduced(losses, reduction: str):
    """``reduced`` for the NumPy references."""
    if reduction == "none":
        return losses
    return np.sum(losses) if reduction == "sum" else np.mean(losses)


# -- checks shared by the losses ------------------------------------------------------------------------

def check_reduction(op_name: str, reduction, accepted: tuple = REDUCTIONS) -> None:
    """PyTorch's ValueError for an unknown reduction, naming the function and what it accepts."""
    if reduction not in accepted:
        raise ArgumentError(f"{op_name}: {reduction} is not a valid value for reduction "
                            f"(expected one of {', '.join(repr(r) for r in accepted)})")


def _check_smoothing(op_name: str, label_smoothing: float) -> None:
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"{op_name}: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def _class_dim(x) -> int:
    """Class scores lie along dim 1 of (N, C, d1, ...) and along dim 0 of an unbatched (C,) input."""
    return 1 if len(shape(x)) >= 2 else 0


def _check_class_shapes(op_name: str, x, target, weight) -> int:
    """PyTorch's shape rules for class-index targets; returns the number of classes."""
    xs, ts = shape(x), shape(target)
    require(len(xs) >= 1, op_name, "expected an input of 1 or more dimensions: (C,), (N, C) or (N, C, d1, ...)", x)
    if len(xs) == 1:
        require(ts == (), op_name, f"an unbatched input of shape {xs} takes a 0-d target, got shape {ts}", x, target)
    else:
        require(len(ts) >= 1 and ts[0] == xs[0], op_name, f"Expected input batch_size ({xs[0]}) to match target "
                f"batch_size ({ts[0] if ts else 'none: the target is 0-d'})", x, target)
        expected = xs[:1] + xs[2:]
        require(ts == expected, op_name, f"Expected target size {expected}, got {ts}", x, target)
    classes = xs[_class_dim(x)]
    if weight is not None:
        require(shape(weight) == (classes,), op_name, f"weight tensor should be defined either for all "
                f"{classes} classes or no classes, got a weight of shape {shape(weight)}", weight)
    return classes


def _can_equal(target, ignore_index: int) -> bool:
    """Whether a target can hold ``ignore_index``. A uint8 target never equals the default -100, though an
    Ember (or PyTorch) comparison would wrap -100 to 156; PyTorch's loss kernels compare the numbers."""
    low, high = INTEGER_RANGES[target.dtype]
    return low <= ignore_index <= high


_checked_targets = CheckedValues()  # targets found in range: the backward of the same loss skips the read


def _check_targets(op_name: str, target, classes: int, ignore_index: int) -> None:
    """Every target is a class index or ``ignore_index`` (which may lie anywhere, as in PyTorch).

    The check costs two reductions on the device and, on an accelerator, no host read: its error is raised
    at the device's next synchronisation (``value_checks``). The backward of a checked forward costs none.
    """
    note_value_read()  # also when remembered: the dispatcher must not cache this validation
    key = (classes, ignore_index)
    if target.numel() == 0 or _checked_targets.recall(target, key) is not MISSING:
        return
    description = describe(target)

    def verdict(low, high):
        if 0 <= low and high < classes:
            return None
        return OutOfRangeError(f"{op_name}: Target {low if low < 0 else high} is out of bounds: expected class "
                               f"indices in 0..{classes - 1} or ignore_index={ignore_index} ({description})")
    check_extremes(target, verdict, ignore=ignore_index if _can_equal(target, ignore_index) else None)
    _checked_targets.remember(target, key)


def _check_target_dtype(op_name: str, x, target, reduction: str) -> None:
    """PyTorch's class-index dtypes: int64, or uint8 where the input has at most 2 dims; its K-dimensional
    kernel reads int64 only, and reads nothing of an empty target it reduces."""
    dtype = target.dtype
    if dtype not in (int64, uint8):
        hint = ("; class indices need an integer dtype, class probabilities a float target of the input's shape"
                if dtype.kind == "float" else "")
        raise DtypeError(f"{op_name}: expected target dtype to be Long or Byte, but got {SCALAR_TYPE_NAMES[dtype]} "
                         f"({describe(target)}){hint}")
    if dtype is uint8 and len(shape(x)) > 2 and (reduction == "none" or target.numel()):
        raise DtypeError(f"{op_name}: expected scalar type Long but found Byte for the target of a K-dimensional "
                         f"input ({describe(x)}, {describe(target)})")


def _class_targets_normalize(op, args) -> None:
    """Reduction, smoothing, target dtype, shapes and target values, for every op over class indices."""
    x, target, weight = args["input"], args["target"], args["weight"]
    check_reduction(op.name, args["reduction"])
    if "label_smoothing" in args:
        _check_smoothing(op.name, args["label_smoothing"])
    _check_target_dtype(op.name, x, target, args["reduction"])
    if "grad_output" not in op.param_index:
        _refuse_weight_grad(op.name, weight)
    classes = _check_class_shapes(op.name, x, target, weight)
    _check_targets(op.name, target, classes, args["ignore_index"])


def _class_loss_meta(x, target, weight, *attrs):
    return shape(target) if attrs[-1] == "none" else ()


# -- pieces of the core definitions ---------------------------------------------------------------------

def _target_weights(target, weight, ignore_index: int, dtype, classes: int):
    """(counted, safe, weights): which targets count, the targets with ignored ones pointed at class 0
    (so that they can index; clamped too where the targets' check is deferred), and each target's class
    weight, 0 where ignored."""
    counted = F.ne(target, ignore_index) if _can_equal(target, ignore_index) else F.ones_like(target, dtype=bool_)
    safe = bounded(F.where(counted, target, 0), classes)
    if weight is None:
        return counted, safe, F.to_dtype(counted, dtype)
    with vouched():  # the targets were checked; ignored ones now point at class 0
        return counted, safe, F.where(counted, F.index(weight, [safe]), 0)


def _picked(scores, safe, cdim: int):
    """scores[n, target[n, ...], ...]: each position's score of its target class."""
    with vouched():  # checked targets, the ignored ones pointed at class 0
        return F.squeeze(F.gather(scores, cdim, F.unsqueeze(safe, cdim)), cdim)


def _along_classes(weight, ndim: int, cdim: int):
    """The (C,) weight shaped to broadcast along the class dim of an ndim-D input."""
    return F.reshape(weight, (-1,) + (1,) * (ndim - cdim - 1))


def _reduce(losses, weights, reduction: str):
    if reduction == "none":
        return losses
    total = F.sum(losses)
    return total if reduction == "sum" else F.div(total, F.sum(weights))


def _scale(grad, counted, weights, reduction: str):
    """d loss / d (each position's term): the incoming gradient, over the weight total for 'mean',
    spread to every position and zero where ignored."""
    if reduction == "mean":
        grad = F.div(grad, F.sum(weights))
    return F.where(counted, grad, 0)


# -- nll_loss -------------------------------------------------------------------------------------------

def _nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    cdim = _class_dim(input)
    counted, safe, weights = _target_weights(target, weight, ignore_index, input.dtype, input.shape[cdim])
    losses = F.where(counted, F.neg(F.mul(_picked(input, safe, cdim), weights)), 0)
    return _reduce(losses, weights, reduction)


def _nll_loss_backward(grad_output, input, target, weight=None, ignore_index=-100, reduction="mean"):
    """-scale * w[t] at each position's target class, zero elsewhere."""
    cdim = _class_dim(input)
    counted, safe, weights = _target_weights(target, weight, ignore_index, grad_output.dtype, input.shape[cdim])
    at_target = F.neg(F.mul(_scale(grad_output, counted, weights, reduction), weights))
    zeros = F.zeros(tuple(input.shape), dtype=at_target.dtype, device=grad_output.device)
    with vouched():  # checked targets, the ignored ones pointed at class 0
        return F.scatter(zeros, cdim, F.unsqueeze(safe, cdim), F.unsqueeze(at_target, cdim))


def _nll_loss_input_derivative(grad, input, target, weight, ignore_index, reduction):
    return F.nll_loss_backward(grad, input, target, weight, ignore_index, reduction)


# -- cross_entropy_indices and its backward ---------------------------------------------------------------

def _cross_entropy_indices(input, target, weight=None, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """(1 - eps) * nll of log_softmax, plus eps / C times the (weighted) sum of -log_softmax over classes, each
    reduced on its own: PyTorch's steps, in the input's dtype, so half precision rounds where PyTorch's does."""
    cdim = _class_dim(input)
    logp = F.log_softmax(input, cdim)
    loss = _nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return loss
    counted, _, weights = _target_weights(target, weight, ignore_index, logp.dtype, input.shape[cdim])
    spread = logp if weight is None else F.mul(logp, _along_classes(weight, input.ndim, cdim))
    smooth = _reduce(F.where(counted, F.neg(F.sum(spread, cdim)), 0), weights, reduction)
    return F.add(F.mul(loss, 1 - label_smoothing), F.mul(smooth, label_smoothing / input.shape[cdim]))


def _cross_entropy_indices_backward(grad_output, input, target, weight=None, ignore_index=-100,
                                    label_smoothing=0.0, reduction="mean"):
    """scale * (softmax * sum(q) - q), where q is each position's target distribution: (1 - eps) * w[t] on
    the target class plus eps / C * w[c] on every class c."""
    cdim = _class_dim(input)
    classes = input.shape[cdim]
    probs = F.softmax(input, cdim)
    counted, safe, weights = _target_weights(target, weight, ignore_index, probs.dtype, input.shape[cdim])
    scale = _scale(grad_output, counted, weights, reduction)
    smooth = label_smoothing / classes
    smooth_mass = label_smoothing if weight is None else F.mul(F.sum(weight), smooth)
    mass = F.add(F.mul(weights, 1 - label_smoothing), smooth_mass)
    out = F.mul(probs, F.unsqueeze(F.mul(scale, mass), cdim))
    at_target = F.mul(F.mul(scale, weights), label_smoothing - 1)
    with vouched():  # checked targets, the ignored ones pointed at class 0
        out = F.scatter_add(out, cdim, F.unsqueeze(safe, cdim), F.unsqueeze(at_target, cdim))
    if label_smoothing > 0:
        spread = F.unsqueeze(F.mul(scale, smooth), cdim)
        out = F.sub(out, spread if weight is None else F.mul(spread, _along_classes(weight, input.ndim, cdim)))
    return out


def _cross_entropy_input_derivative(grad, input, target, weight, ignore_index, label_smoothing, reduction):
    return F.cross_entropy_indices_backward(grad, input, target, weight, ignore_index, label_smoothing, reduction)


# -- NumPy references: one explicit target distribution per position -------------------------------------

def _reference_targets(x, target, weight, ignore_index):
    """(class dim, class weights, counted, safe, weights): the references' reading of the targets."""
    cdim = 1 if np.ndim(x) >= 2 else 0
    w = np.ones(np.shape(x)[cdim]) if weight is None else np.asarray(weight, np.float64)
    counted = np.asarray(target) != ignore_index
    safe = np.where(counted, target, 0)
    return cdim, w, counted, safe, np.where(counted, w[safe], 0.0)


def _reference_reduce(losses, weights, reduction):
    if reduction == "none":
        return losses
    return np.sum(losses) if reduction == "sum" else np.sum(losses) / np.sum(weights)


def _reference_scale(grad_output, counted, weights, reduction):
    scale = np.broadcast_to(np.asarray(grad_output, np.float64), counted.shape)
    if reduction == "mean":
        scale = scale / np.sum(weights)
    return np.where(counted, scale, 0.0)  # ignored positions get no gradient, even from a 0/0 mean


def _reference_log_softmax(x, cdim: int):
    """log_softmax of the logits ``x`` along ``cdim``, with the classes moved last."""
    return _log_softmax_reference(np.moveaxis(np.asarray(x, np.float64), cdim, -1), -1)


def _reference_distribution(x, target, weight, ignore_index, label_smoothing):
    """(class dim, log_softmax with classes last, q, weights): q is the target distribution of the
    docstrings above, (1 - eps) * w[t] on the target plus eps / C * w[c] on each class c, 0 where ignored."""
    cdim, w, counted, safe, weights = _reference_targets(x, target, weight, ignore_index)
    logp = _reference_log_softmax(x, cdim)
    classes = logp.shape[-1]
    one_hot = safe[..., None] == np.arange(classes)
    q = (label_smoothing / classes) * w + (1 - label_smoothing) * one_hot * w
    return cdim, logp, q * counted[..., None], weights


def _cross_entropy_reference(x, target, weight=None, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    _, logp, q, weights = _reference_distribution(x, target, weight, ignore_index, label_smoothing)
    return _reference_reduce(-np.sum(q * logp, axis=-1), weights, reduction)


def _cross_entropy_backward_reference(grad_output, x, target, weight=None, ignore_index=-100,
                                      label_smoothing=0.0, reduction="mean"):
    cdim, logp, q, weights = _reference_distribution(x, target, weight, ignore_index, label_smoothing)
    scale = _reference_scale(grad_output, np.asarray(target) != ignore_index, weights, reduction)
    grad = scale[..., None] * (np.exp(logp) * np.sum(q, axis=-1, keepdims=True) - q)
    return np.moveaxis(grad, -1, cdim)


def _nll_loss_reference(x, target, weight=None, ignore_index=-100, reduction="mean"):
    cdim, _, counted, safe, weights = _reference_targets(x, target, weight, ignore_index)
    picked = np.take_along_axis(np.asarray(x, np.float64), np.expand_dims(safe, cdim), cdim).squeeze(cdim)
    return _reference_reduce(np.where(counted, -picked * weights, 0.0), weights, reduction)


def _nll_loss_backward_reference(grad_output, x, target, weight=None, ignore_index=-100, reduction="mean"):
    cdim, w, counted, safe, weights = _reference_targets(x, target, weight, ignore_index)
    scale = _reference_scale(grad_output, counted, weights, reduction)
    grad = -(scale * weights)[..., None] * (safe[..., None] == np.arange(len(w)))
    return np.moveaxis(grad, -1, cdim)


# -- samples ----------------------------------------------------------------------------------------------

def _class_cases(make, smoothing: bool):
    """(input, target, keyword arguments, note) for the ops over class indices."""
    def targets(shape_, classes, low=0):
        return make(shape_, dtype=int64, low=low, high=classes)

    def weight(classes):
        return make((classes,), low=0.1, high=2.0)

    eps = {"label_smoothing": 0.2} if smoothing else {}
    yield make((6, 5)), targets((6,), 5), {}, "(N, C), mean"
    yield make((6, 5)), targets((6,), 5), {"weight": weight(5), "reduction": "none"}, "weighted, none"
    yield make((4, 3, 2, 3)), targets((4, 2, 3), 3), {"weight": weight(3), "ignore_index": 1, "reduction": "sum",
                                                      **eps}, "K-dimensional, ignore_index, sum"
    yield make((5,)), targets((), 5), {"reduction": "none"}, "unbatched (C,) with a 0-d target"
    yield make((4, 7), noncontiguous=True), targets((4,), 7), {"weight": weight(7), "ignore_index": 2}, \
        "non-contiguous, weighted mean with ignore_index"
    yield make((6, 4), low=-100, high=100), targets((6,), 4), {"ignore_index": 0, **eps}, "large logits"
    yield make((3, 4)), targets((3,), 3, low=2), {"ignore_index": 2, "weight": weight(4)}, "all ignored: nan mean"
    yield make((0, 4)), targets((0,), 4), {"reduction": "sum"}, "empty batch"
    if smoothing:
        yield make((5, 6)), targets((5,), 6), {"weight": weight(6), "label_smoothing": 0.35, "reduction": "none"}, \
            "weighted label smoothing"
        yield make((2, 3, 4)), targets((2, 4), 3), {"label_smoothing": 1.0}, "full smoothing"


def _nll_loss_samples(make, dtype):
    for x, target, kwargs, note in _class_cases(make, smoothing=False):
        yield Sample((x, target), kwargs, note)


def _cross_entropy_samples(make, dtype):
    for x, target, kwargs, note in _class_cases(make, smoothing=True):
        yield Sample((x, target), kwargs, note)


def _backward_samples(forward_samples):
    """The forward's samples with an incoming gradient of the loss's shape in front."""
    def samples(make, dtype):
        for sample in forward_samples(make, dtype):
            target = sample.args[1]
            grad = make(tuple(target.shape) if sample.kwargs.get("reduction") == "none" else ())
            yield Sample((grad,) + sample.args, sample.kwargs, sample.note)
    return samples


def _backward_meta(op_name: str):
    def meta(grad_output, x, target, weight, *attrs):
        expected = shape(target) if attrs[-1] == "none" else ()
        require(shape(grad_output) == expected, op_name, f"grad_output must have the loss's shape {expected}",
                grad_output, target)
        return shape(x)
    return meta


_CLASS_PARAMS = "Index target, Tensor? weight=None, int ignore_index=-100"


def _class_loss(signature: str, composite, derivative, reference, samples, doc: str, onnx=None) -> None:
    """The forward takes PyTorch's steps in the input's dtype (each in opmath, then rounded), not in_opmath."""
    defop(signature, "nn", kind="composite", promotion=rules.same, dtypes="float", meta=_class_loss_meta,
          normalize=_class_targets_normalize, composite=composite, derivative={"input": derivative},
          reference=reference, samples=samples, method=False, nondifferentiable_inputs=("weight",), doc=doc,
          autocast="float32", onnx=onnx)


def _class_loss_backward(signature: str, composite, reference, samples, doc: str) -> None:
    """The vector-Jacobian product as an op of its own, so that a backend can fuse it; its core definition
    is Ember ops, which autograd decomposes for double backward."""
    name = signature.partition("(")[0]
    defop(signature, "nn", kind="composite", promotion=rules.same, dtypes="float", meta=_backward_meta(name),
          normalize=_class_targets_normalize, composite=in_opmath(composite), reference=reference,
          samples=_backward_samples(samples), method=False, doc=doc)


def _class_loss_onnx(op_type: str):
    """NegativeLogLikelihoodLoss or SoftmaxCrossEntropyLoss: PyTorch's weights, ignore_index and reductions
    (a 1-D input, classes only, gets a batch of one: ONNX needs one)."""
    def lower(g, input, target, weight, ignore_index, reduction, label_smoothing=0.0):
        if label_smoothing > 0:
            g.fail("label_smoothing has no ONNX form (SoftmaxCrossEntropyLoss takes none)")
        if 0 in g.shape_of(input):
            g.fail("onnxruntime's loss kernels cannot take an empty input")
        target = index_as_int64(g, target)
        unbatched = len(g.shape_of(input)) == 1
        if unbatched:
            input, target = g.unsqueeze(input, [0]), g.unsqueeze(target, [0])
        out = g.op(op_type, input, target, *(() if weight is None else (weight,)), reduction=reduction,
                   ignore_index=int(ignore_index))
        return g.squeeze(out, [0]) if unbatched and reduction == "none" else out
    return lower


_class_loss(f"nll_loss(Tensor input, {_CLASS_PARAMS}, str reduction='mean')", _nll_loss,
            _nll_loss_input_derivative, _nll_loss_reference, _nll_loss_samples,
            doc="-weight[t] * input[n, t] per position (input holds log-probabilities along dim 1, or dim 0 when "
                "1-D); the mean divides by the sum of the counted targets' weights; targets equal to ignore_index "
                "count 0", onnx=_class_loss_onnx("NegativeLogLikelihoodLoss"))
_class_loss_backward(f"nll_loss_backward(Tensor grad_output, Tensor input, {_CLASS_PARAMS}, str reduction='mean')",
                     _nll_loss_backward, _nll_loss_backward_reference, _nll_loss_samples,
                     doc="the gradient of nll_loss with respect to its input")
_class_loss(f"cross_entropy_indices(Tensor input, {_CLASS_PARAMS}, float label_smoothing=0.0, "
            f"str reduction='mean')", _cross_entropy_indices, _cross_entropy_input_derivative,
            _cross_entropy_reference, _cross_entropy_samples,
            doc="cross-entropy of logits against class indices: nll_loss of log_softmax, with PyTorch's label "
                "smoothing (eps / C of the weighted mass spread over all classes)",
            onnx=_class_loss_onnx("SoftmaxCrossEntropyLoss"))
_class_loss_backward(f"cross_entropy_indices_backward(Tensor grad_output, Tensor input, {_CLASS_PARAMS}, "
                     f"float label_smoothing=0.0, str reduction='mean')", _cross_entropy_indices_backward,
                     _cross_entropy_backward_reference, _cross_entropy_samples,
                     doc="the gradient of cross_entropy_indices with respect to its input")


# -- cross_entropy_probabilities --------------------------------------------------------------------------

def _probabilities_normalize(op, args) -> None:
    target, label_smoothing, reduction = args["target"], args["label_smoothing"], args["reduction"]
    check_reduction(op.name, reduction)
    _check_smoothing(op.name, label_smoothing)
    if hasattr(target, "_data") and not target.dtype.is_floating_point:
        raise DtypeError(f"{op.name}: Expected floating point type for target with class probabilities, got "
                         f"{target.dtype.name} ({describe(target)}); class indices need a target without the "
                         f"class dim")


def _probabilities_meta(x, target, weight=None, label_smoothing=0.0, reduction="mean"):
    name, xs = "cross_entropy_probabilities", shape(x)
    require(len(xs) >= 1, name, "expected an input with a class dimension: (C,), (N, C) or (N, C, d1, ...), "
            "got a 0-d input", x)
    require(shape(target) == xs, name, f"a target of class probabilities must have the input's shape {xs}, got "
            f"{shape(target)}", x, target)
    cdim = _class_dim(x)
    if weight is not None:
        require(shape(weight) == (xs[cdim],), name, f"weight tensor should be defined for all {xs[cdim]} classes, "
                f"got a weight of shape {shape(weight)}", weight)
    return xs[:cdim] + xs[cdim + 1:] if reduction == "none" else ()


def _cross_entropy_probabilities(input, target, weight=None, label_smoothing=0.0, reduction="mean"):
    """-sum(q * log_softmax(input)) over the class dim, q the target smoothed by eps / C and weighted per
    class; the mean divides by the number of positions (N * d1 * ...), not by weights."""
    cdim = _class_dim(input)
    classes = input.shape[cdim]
    if label_smoothing > 0:
        target = F.add(F.mul(target, 1 - label_smoothing), label_smoothing / classes)
    terms = F.mul(F.log_softmax(input, cdim), target)
    if weight is not None:
        terms = F.mul(terms, _along_classes(weight, input.ndim, cdim))
    if reduction == "none":
        return F.neg(F.sum(terms, cdim))
    total = F.neg(F.sum(terms))
    if reduction == "sum":
        return total
    positions = input.numel() // classes if classes else 0
    return F.div(total, positions) if positions else F.mul(total, float("nan"))


def _probabilities_reference(x, target, weight=None, label_smoothing=0.0, reduction="mean"):
    cdim = 1 if np.ndim(x) >= 2 else 0
    logp = _reference_log_softmax(x, cdim)
    q = np.moveaxis(np.asarray(target, np.float64), cdim, -1)
    q = q * (1 - label_smoothing) + label_smoothing / logp.shape[-1]
    if weight is not None:
        q = q * np.asarray(weight, np.float64)
    losses = -np.sum(q * logp, axis=-1)
    if reduction == "none":
        return losses
    return np.sum(losses) if reduction == "sum" else np.sum(losses) / losses.size


def _probabilities_samples(make, dtype):
    def probs(shape_, **kwargs):
        return make(shape_, low=0, high=1, **kwargs)
    yield Sample((make((6, 5)), probs((6, 5))), note="(N, C), mean")
    yield Sample((make((4, 3)), probs((4, 3)), make((3,), low=0.1, high=2.0)), {"reduction": "none"}, note="weighted")
    yield Sample((make((2, 3, 4)), probs((2, 3, 4)), None, 0.3, "sum"), note="K-dimensional, label smoothing, sum")
    yield Sample((make((5,)), probs((5,))), {"reduction": "none"}, note="unbatched (C,)")
    yield Sample((make((4, 6), noncontiguous=True), probs((4, 6), noncontiguous=True)),
                 {"weight": make((6,), low=0.1, high=2.0), "label_smoothing": 1.0},
                 note="non-contiguous, full smoothing")
    yield Sample((make((5, 4), low=-100, high=100), probs((5, 4))), note="large logits")
    yield Sample((make((0, 4)), probs((0, 4))), note="empty batch: nan mean")


defop("cross_entropy_probabilities(Tensor input, Tensor target, Tensor? weight=None, float label_smoothing=0.0, "
      "str reduction='mean')", "nn", kind="composite", promotion=rules.same, dtypes="float",
      meta=_probabilities_meta, normalize=_probabilities_normalize, composite=_cross_entropy_probabilities,
      reference=_probabilities_reference, samples=_probabilities_samples, method=False, autocast="float32",
      doc="cross-entropy of logits against class probabilities (a target of the input's shape), with PyTorch's "
          "label smoothing and per-class weights; the mean divides by the number of positions")


# -- binary_cross_entropy ---------------------------------------------------------------------------------

def _check_unit_interval(op_name: str, t, what: str) -> None:
    """PyTorch's data check: every element in [0, 1] (NaN fails it too), on the device where the backend defers
    value checks (PyTorch's CUDA kernel asserts the same), else at once."""
    note_value_read()

    def verdict(low, high):
        if low >= 0 and high <= 1:
            return None
        return EmberError(f"{op_name}: all elements of {what} should be between 0 and 1, got values from {low} "
                          f"to {high} ({text})")
    if not hasattr(t, "_data"):  # a Python number
        text = f"the number {t}"
        error = verdict(t, t)
        if error is not None:
            raise error
    elif t.numel() != 0:
        text = describe(t)
        check_extremes(t, verdict)


def _bce_normalize(op, args) -> None:
    x, target, weight = args["input"], args["target"], args["weight"]
    check_reduction(op.name, args["reduction"])
    _refuse_weight_grad(op.name, weight)
    _bce_meta(x, target, weight)  # shapes before the values that they hold
    _check_unit_interval(op.name, x, "input")
    _check_unit_interval(op.name, target, "target")


#: PyTorch's words for a target whose size differs from the input's, by loss.
SIZE_MISMATCH = {
    "binary_cross_entropy": "Using a target size ({target}) that is different to the input size ({input}) is "
                            "deprecated. Please ensure they have the same size.",
    "binary_cross_entropy_with_logits": "Target size ({target}) must be the same as input size ({input})",
}


def check_weights(op_name: str, x, target, **weights) -> None:
    """The target has the input's shape; each given weight broadcasts to it (and does not enlarge it)."""
    if shape(target) != shape(x):
        sizes = {"target": f"ember.Size({list(shape(target))})", "input": f"ember.Size({list(shape(x))})"}
        require(False, op_name, SIZE_MISMATCH[op_name].format(**sizes), x, target)
    for name, weight in weights.items():
        if weight is not None:
            require(broadcast_shapes(op_name, shape(weight), shape(x)) == shape(x), op_name,
                    f"{name} of shape {shape(weight)} must broadcast to the input's shape {shape(x)}", weight, x)


def _bce_meta(x, target, weight=None, reduction="mean"):
    check_weights("binary_cross_entropy", x, target, weight=weight)
    return shape(x) if reduction == "none" else ()


def _bce(input, target, weight=None, reduction="mean"):
    """(t - 1) * log(1 - x) - t * log(x), each log clamped at -100 so that 0 and 1 give finite losses."""
    log_x = F.clamp(F.log(input), min=-100)
    log_rest = F.clamp(F.log1p(F.neg(input)), min=-100)
    losses = F.sub(F.mul(F.sub(target, 1), log_rest), F.mul(target, log_x))
    if weight is not None:
        losses = F.mul(losses, weight)
    return reduced(losses, reduction)


def _bce_scale(grad, input, weight, reduction):
    """The incoming gradient per element: over the element count for 'mean', times the weight."""
    if reduction == "mean" and input.numel():
        grad = F.div(grad, input.numel())
    return grad if weight is None else F.mul(grad, weight)


#: PyTorch's floor on x * (1 - x) in the derivative: 1e-12 as a float32 constant, even in float64.
_BCE_EPSILON = float(np.float32(1e-12))


def _bce_input_derivative(grad, input, target, weight, reduction):
    """(x - t) / max(x * (1 - x), eps): PyTorch's formula, finite at 0 and 1."""
    slope = F.div(F.sub(input, target), F.clamp(F.mul(input, F.sub(1, input)), min=_BCE_EPSILON))
    return F.mul(slope, _bce_scale(grad, input, weight, reduction))


def _bce_target_derivative(grad, input, target, weight, reduction):
    """log(1 - x) - log(x), unclamped as in PyTorch."""
    return F.mul(F.sub(F.log1p(F.neg(input)), F.log(input)), _bce_scale(grad, input, weight, reduction))


def _bce_reference(x, target, weight=None, reduction="mean"):
    x, target = np.asarray(x, np.float64), np.asarray(target, np.float64)
    losses = (target - 1) * np.maximum(np.log1p(-x), -100) - target * np.maximum(np.log(x), -100)
    if weight is not None:
        losses = losses * weight
    return reference_reduced(losses, reduction)


def _bce_samples(make, dtype):
    def probs(shape_):
        return make(shape_, low=0.02, high=0.98)
    yield Sample((probs((4, 5)), probs((4, 5))))
    yield Sample((probs((3, 4)), probs((3, 4)), make((3, 4), low=0.1, high=2.0)), {"reduction": "none"},
                 note="weighted")
    yield Sample((probs((2, 3, 4)), probs((2, 3, 4)), make((3, 1), low=0.1, high=2.0)), {"reduction": "sum"},
                 note="broadcast weight")
    yield Sample((probs((5,)), make((5,), low=0, high=1)), {"reduction": "mean"}, note="soft targets")
    yield Sample((probs((0, 3)), probs((0, 3))), {"reduction": "sum"}, note="empty")
    if dtype.is_floating_point:  # floor makes exact zeros and ones
        edges, labels = F.floor(make((3, 4), low=0, high=2)), F.floor(make((3, 4), low=0, high=2))
        yield Sample((edges, labels), {"reduction": "none"}, gradcheck=False,
                     note="probabilities of exactly 0 and 1: logs clamped at -100, PyTorch's finite slopes there")


defop("binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, str reduction='mean')", "nn",
      kind="composite", promotion=rules.same, dtypes="float", meta=_bce_meta, normalize=_bce_normalize,
      composite=in_opmath(_bce), reference=_bce_reference,
      derivative={"input": in_opmath(_bce_input_derivative), "target": in_opmath(_bce_target_derivative)},
      samples=_bce_samples, method=False, nondifferentiable_inputs=("weight",),
      autocast={"cpu": "float32", "cuda": "banned"},
      doc="-w * (t * log(x) + (1 - t) * log(1 - x)) with the logs clamped at -100; input and target in [0, 1]")
