"""Margin losses: margin_ranking, hinge_embedding, soft_margin, cosine_embedding, multilabel_soft_margin,
multi_margin, multilabel_margin and triplet_margin, with the signatures of PyTorch's aten ops.

Each is a composite of a handful of Ember ops in PyTorch's formula, which autograd differentiates as it
stands; the reduction ('none', 'mean', 'sum') happens inside the op. PyTorch's deprecated
size_average/reduce arguments are handled in ``ember.nn.functional``. Targets that only select a branch
(the +1/-1 labels of the embedding losses) get no gradient, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ...schema import rules
from ...execution.dispatcher import note_value_read
from ...schema.dtypes import int64
from ...schema.errors import ArgumentError, DtypeError, OutOfRangeError, describe
from ...schema.meta import broadcast_shapes, require, shape
from ...schema import Sample, defop
from ..namespace import F
from .distance import distance_reference
from .losses import check_reduction, reduced, reference_reduced
from ._shared import _refuse_weight_grad
from ..indexing.value_checks import check_extremes
from ..elementwise.opmath import in_opmath


def _margin_loss(signature: str, composite, reference, samples, meta, doc: str, **fields) -> None:
    """A loss op; under autocast it runs in float32, as PyTorch's lists put its aten ops."""
    fields.setdefault("promotion", rules.same)
    fields.setdefault("autocast", "float32")
    fields.setdefault("normalize", lambda op, args: check_reduction(op.name, args["reduction"]))
    defop(signature, "nn", kind="composite", dtypes="float", composite=in_opmath(composite), reference=reference,
          samples=samples, meta=meta, method=False, doc=doc, **fields)


def _broadcast_meta(op_name: str, count: int, same_dims: bool = False):
    """The first ``count`` inputs broadcast together; the loss has their shape, or is a scalar once reduced."""
    def meta(*args):
        tensors, reduction = args[:count], args[-1]
        if same_dims:
            require(len({len(shape(t)) for t in tensors}) == 1, op_name,
                    "all input tensors should have the same number of dimensions", *tensors)
        out = broadcast_shapes(op_name, *(shape(t) for t in tensors))
        return out if reduction == "none" else ()
    return meta


def _signs(make, shape_):
    """A target of -1s and 1s (for the dtype checks, which call with other dtypes, any values)."""
    values = make(shape_, low=0, high=2)
    return F.sub(F.mul(F.floor(values), 2), 1) if values.dtype.is_floating_point else values


def _check_class_range(op_name: str, target, low: int, high: int) -> None:
    """Every target index lies in [low, high): at once on host memory, else at the device's next synchronisation
    (``value_checks.check_extremes``)."""
    note_value_read()
    if target.numel() == 0:
        return
    text = describe(target)

    def verdict(smallest, largest):
        if smallest >= low and largest < high:
            return None
        bad = smallest if smallest < low else largest
        return OutOfRangeError(f"{op_name}: target {bad} is out of range: expected values in {low}..{high - 1} "
                               f"({text})")
    check_extremes(target, verdict)


def _require_index_target(op_name: str, target) -> None:
    if target.dtype.kind != "int":
        raise DtypeError(f"{op_name}: expected target to hold class indices in an integer dtype, got "
                         f"{describe(target)}")


# -- margin_ranking_loss -------------------------------------------------------------------------------------

def _margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    return reduced(F.clamp(F.add(F.mul(F.neg(target), F.sub(input1, input2)), margin), 0.0), reduction)


def _margin_ranking_reference(x1, x2, t, margin=0.0, reduction="mean"):
    return reference_reduced(np.maximum(-t * (x1 - x2) + margin, 0), reduction)


def _margin_ranking_samples(make, dtype):
    yield Sample((make((6,)), make((6,)), _signs(make, (6,))), note="mean")
    yield Sample((make((6,)), make((6,)), _signs(make, (6,)), 0.5, "none"), note="margin, none")
    yield Sample((make((3, 4), noncontiguous=True), make((3, 4)), _signs(make, (3, 4))), {"reduction": "sum"},
                 note="2-d, sum")


_margin_loss("margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, "
             "str reduction='mean')", _margin_ranking_loss, _margin_ranking_reference, _margin_ranking_samples,
             _broadcast_meta("margin_ranking_loss", 3, same_dims=True),
             doc="max(0, -target * (input1 - input2) + margin): input1 should rank above input2 where target "
                 "is 1, below where it is -1")


# -- hinge_embedding_loss ------------------------------------------------------------------------------------

def _hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1 (other labels: the sum of both)."""
    beyond_margin = F.where(F.ne(target, 1), F.clamp(F.sub(margin, input), 0.0), 0.0)
    itself = F.where(F.ne(target, -1), input, 0.0)
    return reduced(F.add(beyond_margin, itself), reduction)


def _hinge_embedding_reference(x, t, margin=1.0, reduction="mean"):
    losses = np.where(t != 1, np.maximum(margin - x, 0), 0) + np.where(t != -1, x, 0)
    return reference_reduced(losses, reduction)


def _hinge_embedding_samples(make, dtype):
    yield Sample((make((6,), low=0, high=3), _signs(make, (6,))), note="mean")
    yield Sample((make((3, 4), low=0, high=3), _signs(make, (3, 4)), 2.0, "none"), note="margin, none")
    yield Sample((make((2, 5), low=0, high=3, noncontiguous=True), _signs(make, (2, 5))), {"reduction": "sum"},
                 note="non-contiguous, sum")


_margin_loss("hinge_embedding_loss(Tensor input, Tensor target, float margin=1.0, str reduction='mean')",
             _hinge_embedding_loss, _hinge_embedding_reference, _hinge_embedding_samples,
             _broadcast_meta("hinge_embedding_loss", 2), nondifferentiable_inputs=("target",),
             doc="input (a distance) where target is 1, max(0, margin - input) where target is -1")


# -- soft_margin_loss ----------------------------------------------------------------------------------------

def _soft_margin_loss(input, target, reduction="mean"):
    """log(1 + exp(-target * input)), as max(z, 0) + log1p(exp(-|z|)) so that no exp overflows."""
    z = F.neg(F.mul(input, target))
    return reduced(F.add(F.clamp(z, 0.0), F.log1p(F.exp(F.neg(F.abs(z))))), reduction)


def _soft_margin_reference(x, t, reduction="mean"):
    return reference_reduced(np.logaddexp(0, -t * x), reduction)


def _soft_margin_samples(make, dtype):
    yield Sample((make((6,)), _signs(make, (6,))), note="mean")
    yield Sample((make((3, 4), noncontiguous=True), _signs(make, (3, 4)), "none"), note="none")
    yield Sample((make((2, 3), low=-60, high=60), _signs(make, (2, 3)), "sum"), note="large margins, sum")


_margin_loss("soft_margin_loss(Tensor input, Tensor target, str reduction='mean')", _soft_margin_loss,
             _soft_margin_reference, _soft_margin_samples, _broadcast_meta("soft_margin_loss", 2),
             doc="log(1 + exp(-target * input)): the logistic loss of a two-class classification with +1/-1 labels")


# -- cosine_embedding_loss -----------------------------------------------------------------------------------

_COSINE_EPS = 1e-12  # PyTorch's guard on the squared magnitudes


def _cosine_embedding_meta(input1, input2, target, margin=0.0, reduction="mean"):
    name, dims = "cosine_embedding_loss", len(shape(target))
    require(dims <= 1, name, "0D or 1D target tensor expected, multi-target not supported", target)
    require(len(shape(input1)) == dims + 1 and len(shape(input2)) == dims + 1, name,
            f"{dims}D target tensor expects {dims + 1}D input tensors", input1, input2, target)
    rows = broadcast_shapes(name, shape(input1)[:-1], shape(input2)[:-1], shape(target))
    broadcast_shapes(name, shape(input1), shape(input2))
    return rows if reduction == "none" else ()


def _cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1."""
    products = F.sum(F.mul(input1, input2), -1)
    squares1 = F.add(F.sum(F.mul(input1, input1), -1), _COSINE_EPS)
    squares2 = F.add(F.sum(F.mul(input2, input2), -1), _COSINE_EPS)
    cosine = F.div(products, F.sqrt(F.mul(squares1, squares2)))
    similar = F.where(F.eq(target, 1), F.sub(1.0, cosine), 0.0)
    dissimilar = F.where(F.eq(target, -1), F.clamp(F.sub(cosine, margin), 0.0), 0.0)
    return reduced(F.add(similar, dissimilar), reduction)


def _cosine_embedding_reference(x1, x2, t, margin=0.0, reduction="mean"):
    cosine = (x1 * x2).sum(-1) / np.sqrt(((x1 * x1).sum(-1) + _COSINE_EPS) * ((x2 * x2).sum(-1) + _COSINE_EPS))
    losses = np.where(t == 1, 1 - cosine, 0) + np.where(t == -1, np.maximum(cosine - margin, 0), 0)
    return reference_reduced(losses, reduction)


def _cosine_embedding_samples(make, dtype):
    yield Sample((make((5, 4)), make((5, 4)), _signs(make, (5,))), note="mean")
    yield Sample((make((3, 6), noncontiguous=True), make((3, 6)), _signs(make, (3,)), 0.2, "none"), note="margin")
    yield Sample((make((4,)), make((4,)), _signs(make, ()), -0.5, "sum"), note="0-d target, 1-d inputs")


_margin_loss("cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, "
             "str reduction='mean')", _cosine_embedding_loss, _cosine_embedding_reference, _cosine_embedding_samples,
             _cosine_embedding_meta, nondifferentiable_inputs=("target",),
             doc="1 - cos(input1, input2) where target is 1, max(0, cos(input1, input2) - margin) where it is -1")


# -- multilabel_soft_margin_loss -----------------------------------------------------------------------------

def _multilabel_soft_margin_meta(input, target, weight=None, reduction="mean"):
    name = "multilabel_soft_margin_loss"
    require(len(shape(input)) >= 1, name, "expected an input with a class dim", input)
    out = broadcast_shapes(name, shape(input), shape(target))
    if weight is not None:
        out = broadcast_shapes(name, out, shape(weight))
    return out[:-1] if reduction == "none" else ()


def _multilabel_soft_margin_normalize(op, args) -> None:
    check_reduction(op.name, args["reduction"])
    _refuse_weight_grad(op.name, args["weight"])


def _multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):
    """-(t log sigmoid(x) + (1 - t) log sigmoid(-x)), averaged over the classes (the last dim)."""
    losses = F.neg(F.add(F.mul(target, F.logsigmoid(input)), F.mul(F.sub(1.0, target), F.logsigmoid(F.neg(input)))))
    if weight is not None:
        losses = F.mul(losses, weight)
    return reduced(F.div(F.sum(losses, -1), input.shape[-1]), reduction)


def _multilabel_soft_margin_reference(x, t, weight=None, reduction="mean"):
    losses = t * np.logaddexp(0, -x) + (1 - t) * np.logaddexp(0, x)
    if weight is not None:
        losses = losses * weight
    return reference_reduced(losses.sum(-1) / x.shape[-1], reduction)


def _multilabel_soft_margin_samples(make, dtype):
    def labels(shape_):
        values = make(shape_, low=0, high=2)
        return F.floor(values) if values.dtype.is_floating_point else values
    yield Sample((make((4, 5)), labels((4, 5))), note="mean")
    yield Sample((make((3, 6), noncontiguous=True), labels((3, 6)), make((6,), low=0.1, high=2)),
                 {"reduction": "none"}, note="class weights, none")
    yield Sample((make((5,)), make((5,), low=0, high=1), None, "sum"), note="unbatched, soft labels")


_margin_loss("multilabel_soft_margin_loss(Tensor input, Tensor target, Tensor? weight=None, str reduction='mean')",
             _multilabel_soft_margin_loss, _multilabel_soft_margin_reference, _multilabel_soft_margin_samples,
             _multilabel_soft_margin_meta, normalize=_multilabel_soft_margin_normalize,
             nondifferentiable_inputs=("weight",), autocast=None,  # a Python function in PyTorch: no cast
             doc="one-versus-all logistic loss of each class, averaged over the classes (the last dim)")


# -- multi_margin_loss ---------------------------------------------------------------------------------------

def _multi_margin_meta(input, target, p=1, margin=1.0, weight=None, reduction="mean"):
    name, dims = "multi_margin_loss", len(shape(input))
    require(dims in (1, 2) and shape(input)[-1] > 0, name,
            "Expected non-empty vector or matrix with optional 0-dim batch size", input)
    rows = shape(input)[0] if dims == 2 else 1
    require(len(shape(target)) <= 1 and int(np.prod(shape(target))) == rows, name,
            f"inconsistent target size, expected {rows} but got {shape(target)}", target)
    if weight is not None:
        require(shape(weight) == (shape(input)[-1],), name,
                f"inconsistent weight size, expected {shape(input)[-1]} but got {shape(weight)}", weight)
    return shape(target) if reduction == "none" else ()


def _multi_margin_normalize(op, args) -> None:
    check_reduction(op.name, args["reduction"])
    if args["p"] not in (1, 2):
        raise ArgumentError(f"multi_margin_loss: only p == 1 and p == 2 supported, got p={args['p']}")
    _require_index_target(op.name, args["target"])
    _refuse_weight_grad(op.name, args["weight"])
    _multi_margin_meta(**dict(args.items()))  # shapes before the values that they hold
    _check_class_range(op.name, args["target"], 0, shape(args["input"])[-1])


def _multi_margin_loss(input, target, p=1, margin=1.0, weight=None, reduction="mean"):
    """sum over classes i != y of max(0, margin - x[y] + x[i]) ** p (times weight[y]), divided by C."""
    rows = F.reshape(input, (-1, input.shape[-1]))
    picked = F.reshape(target, (-1, 1))
    hinge = F.clamp(F.add(F.sub(margin, F.gather(rows, 1, picked)), rows), 0.0)
    if p == 2:
        hinge = F.mul(hinge, hinge)
    if weight is not None:
        hinge = F.mul(hinge, F.unsqueeze(F.index_select(weight, 0, F.reshape(target, (-1,))), 1))
    others = F.sub(1.0, F.to_dtype(F.one_hot(F.reshape(target, (-1,)), rows.shape[1]), rows.dtype))
    losses = F.div(F.sum(F.mul(hinge, others), 1), rows.shape[1])
    return reduced(F.reshape(losses, tuple(target.shape)), reduction)


def _multi_margin_reference(x, target, p=1, margin=1.0, weight=None, reduction="mean"):
    rows, picked = x.reshape(-1, x.shape[-1]), np.asarray(target).reshape(-1)
    hinge = np.maximum(margin - rows[np.arange(len(picked)), picked][:, None] + rows, 0) ** p
    if weight is not None:
        hinge = hinge * weight[picked][:, None]
    hinge[np.arange(len(picked)), picked] = 0
    return reference_reduced((hinge.sum(1) / rows.shape[1]).reshape(np.shape(target)), reduction)


def _multi_margin_samples(make, dtype):
    def targets(shape_, classes):
        return make(shape_, dtype=int64, low=0, high=classes)
    yield Sample((make((5, 4)), targets((5,), 4)), note="mean")
    yield Sample((make((4, 6), noncontiguous=True), targets((4,), 6), 2, 0.5, make((6,), low=0.1, high=2), "none"),
                 note="p=2, margin, weight, none")
    yield Sample((make((5,)), targets((), 5)), {"reduction": "sum"}, note="unbatched")


_margin_loss("multi_margin_loss(Tensor input, Index target, int p=1, float margin=1.0, Tensor? weight=None, "
             "str reduction='mean')", _multi_margin_loss, _multi_margin_reference, _multi_margin_samples,
             _multi_margin_meta, normalize=_multi_margin_normalize, nondifferentiable_inputs=("weight",),
             doc="multi-class hinge loss: sum over the wrong classes of max(0, margin - x[y] + x[i]) ** p, over C")


# -- multilabel_margin_loss ----------------------------------------------------------------------------------

def _multilabel_margin_meta(input, target, reduction="mean"):
    name = "multilabel_margin_loss"
    require(len(shape(input)) in (1, 2) and shape(input)[-1] > 0, name,
            "Expected non-empty vector or matrix with optional 0-dim batch size", input)
    require(shape(target) == shape(input), name, f"inconsistent target size: {shape(target)} for input of size: "
            f"{shape(input)}", input, target)
    return shape(input)[:-1] if reduction == "none" else ()


def _multilabel_margin_normalize(op, args) -> None:
    check_reduction(op.name, args["reduction"])
    _require_index_target(op.name, args["target"])
    _multilabel_margin_meta(args["input"], args["target"], args["reduction"])
    _check_class_range(op.name, args["target"], -1, shape(args["input"])[-1])


def _multilabel_margin_loss(input, target, reduction="mean"):
    """sum over the target classes j (up to the first -1) and the other classes i of max(0, 1 - (x[j] - x[i])),
    divided by C."""
    classes = input.shape[-1]
    valid = F.cumprod(F.to_dtype(F.ne(target, -1), input.dtype), -1)  # 1 until the first -1
    safe = F.where(F.ne(target, -1), target, 0)
    labelled = F.amax(F.mul(F.to_dtype(F.one_hot(safe, classes), input.dtype), F.unsqueeze(valid, -1)), -2)
    hinge = F.clamp(F.add(F.sub(1.0, F.unsqueeze(F.gather(input, -1, safe), -1)), F.unsqueeze(input, -2)), 0.0)
    counted = F.mul(F.unsqueeze(valid, -1), F.unsqueeze(F.sub(1.0, labelled), -2))
    return reduced(F.div(F.sum(F.mul(hinge, counted), (-2, -1)), classes), reduction)


def _multilabel_margin_reference(x, target, reduction="mean"):
    rows, labels = x.reshape(-1, x.shape[-1]), np.asarray(target).reshape(-1, x.shape[-1])
    losses = []
    for row, label in zip(rows, labels):
        ends = np.flatnonzero(label == -1)
        chosen = label[:ends[0] if len(ends) else len(label)]
        others = np.setdiff1d(np.arange(len(row)), chosen)
        losses.append(sum(np.maximum(1 - (row[j] - row[i]), 0) for j in chosen for i in others) / len(row))
    return reference_reduced(np.asarray(losses, np.float64).reshape(x.shape[:-1]), reduction)


def _multilabel_margin_samples(make, dtype):
    def labels(shape_):
        """Class indices with -1s at random places: each row's labels end at its first -1."""
        return make(shape_, dtype=int64, low=-1, high=shape_[-1])
    yield Sample((make((3, 4)), labels((3, 4))), note="mean")
    yield Sample((make((2, 5), noncontiguous=True), labels((2, 5)), "none"), note="none")
    yield Sample((make((4,)), labels((4,)), "sum"), note="unbatched")


_margin_loss("multilabel_margin_loss(Tensor input, Index target, str reduction='mean')", _multilabel_margin_loss,
             _multilabel_margin_reference, _multilabel_margin_samples, _multilabel_margin_meta,
             normalize=_multilabel_margin_normalize,
             doc="multi-label hinge loss: for each target class (the target's indices up to the first -1) and "
                 "each other class, max(0, 1 - (x[target] - x[other])), summed and divided by C")


# -- triplet_margin_loss -------------------------------------------------------------------------------------

def _triplet_margin_meta(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
    name = "triplet_margin_loss"
    require(len(shape(anchor)) == len(shape(positive)) == len(shape(negative)), name,
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions",
            anchor, positive, negative)
    require(len(shape(anchor)) >= 1, name, "expected inputs with a feature dim", anchor)
    out = broadcast_shapes(name, shape(anchor), shape(positive), shape(negative))
    return out[:-1] if reduction == "none" else ()


def _triplet_margin_normalize(op, args) -> None:
    check_reduction(op.name, args["reduction"])
    if args["margin"] <= 0:
        raise ArgumentError(f"triplet_margin_loss: margin must be greater than 0, got {args['margin']}")


def _triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with d = pairwise_distance; ``swap`` uses the
    smaller of d(anchor, negative) and d(positive, negative)."""
    positive_distance = F.pairwise_distance(anchor, positive, p, eps)
    negative_distance = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        negative_distance = F.minimum(negative_distance, F.pairwise_distance(positive, negative, p, eps))
    return reduced(F.clamp(F.sub(F.add(positive_distance, margin), negative_distance), 0.0), reduction)


def _triplet_margin_reference(a, pos, neg, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
    negative = distance_reference(a, neg, p, eps)
    if swap:
        negative = np.minimum(negative, distance_reference(pos, neg, p, eps))
    return reference_reduced(np.maximum(margin + distance_reference(a, pos, p, eps) - negative, 0), reduction)


def _triplet_margin_samples(make, dtype):
    yield Sample((make((5, 4)), make((5, 4)), make((5, 4))), note="mean")
    yield Sample((make((3, 6), noncontiguous=True), make((3, 6)), make((3, 6)), 2.0, 1.0), {"reduction": "none"},
                 note="p=1, none")
    yield Sample((make((4, 3)), make((4, 3)), make((4, 3))), {"swap": True, "reduction": "sum"}, note="swap")
    yield Sample((make((5,)), make((5,)), make((5,)), 0.5, 3.0), note="unbatched, p=3")


_margin_loss("triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1.0, float p=2, "
             "float eps=1e-6, bool swap=False, str reduction='mean')", _triplet_margin_loss,
             _triplet_margin_reference, _triplet_margin_samples, _triplet_margin_meta,
             normalize=_triplet_margin_normalize,
             doc="max(0, margin + d(anchor, positive) - d(anchor, negative)) for the p-norm distance d; swap takes "
                 "the smaller of d(anchor, negative) and d(positive, negative)")
