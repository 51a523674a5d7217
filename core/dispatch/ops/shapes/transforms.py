"""The function transforms' rules of shape primitives that their families do not cover: vmap's batching rules
(``OpDef.batch``), each running the op once on the physical tensors (the batch dim first) of a ``VmapCall``
(``ember.func.vmap_mode``) or declining (NotImplemented), and forward AD's (``OpDef.jvp``)."""
from __future__ import annotations

from ..namespace import F


def view(call):
    """An element's new shape, behind the batch dim. A reshape: the batch of a moved input is rarely viewable."""
    x, size = call.values
    return call.wrap(F.reshape(call.physical(x), (call.size, *size)))


def permute(call):
    x, dims = call.values
    rank = x.dim()
    if any(not -rank <= d < max(rank, 1) for d in dims):
        return NotImplemented  # the op's own check names the bad dims
    return call.wrap(F.permute(call.physical(x), (0, *(d % rank + 1 for d in dims))))


def expand(call):
    """Size-1 dims in front of the element's for the new leading sizes, then the expansion behind the batch."""
    x, size = call.values
    lead = len(size) - x.dim()
    if lead < 0:
        return NotImplemented
    physical = call.physical(x)
    if lead:
        physical = F.reshape(physical, (call.size, *(1,) * lead, *x.shape))
    return call.wrap(F.expand(physical, (call.size, *size)))


def cat(call):
    """Unbatched pieces are repeated for every element (expanded), then joined past the batch dim."""
    tensors, dim = call.values
    if any(t.dim() == 1 and t.shape[0] == 0 for t in tensors):
        return NotImplemented  # PyTorch's legacy empty pieces: the per-element loop keeps their rule
    return call.wrap(F.cat([call.expanded(t) for t in tensors], dim + 1))


def copy_(call):
    """A batched target takes each element's source (broadcast); an unbatched one cannot take a batch."""
    target, source = call.values
    if not call.is_batched(target):
        from_batch = "vmap: copy_(self, src) is not possible because src is batched and self is not"
        raise call.unsupported(f"{from_batch}. This happened due to `src` being vmapped over but `self` not being "
                           f"vmapped over in a vmap. Please try to use out-of-place operators instead of inplace "
                           f"arithmetic.")
    physical = source
    if call.is_batched(source):
        physical = call.physical(source)
        if source.dim() < target.dim():
            physical = F.reshape(physical, (call.size, *(1,) * (target.dim() - source.dim()), *source.shape))
    F.copy_(call.physical(target), physical)
    return target


def copy_tangent(tangents, self, src):
    """The tangent copy_ leaves in its target: the source's, broadcast and cast as the values are (0 for none)."""
    if tangents[1] is None:
        return F.zeros_like(self)
    return F.to_dtype(F.expand(tangents[1], tuple(self.shape)), self.dtype)


def view_tangent(tangents, input, size):
    """A view's tangent in the view's shape: reshaped, since a tangent need not have the input's strides."""
    return F.reshape(tangents[0], size)
