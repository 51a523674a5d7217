"""SparseAdam: PyTorch's lazy Adam for sparse gradients (embedding tables), which refuses dense gradients."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..autograd import enable_grad
from .optimizer import Optimizer, check_betas


class SparseAdam(Optimizer):
    """``SparseAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False)``.

    PyTorch's SparseAdam updates only the rows present in a sparse gradient and raises
    ``RuntimeError`` for a dense one. Ember's parameters get dense gradients (``Embedding(sparse=True)``
    included: ``ember.sparse`` tensors are not parameters' gradients), so the optimizer is built, checked
    and checkpointed as in PyTorch, and ``step`` raises the same error as PyTorch does for a dense gradient
    (after running the closure, as there). Use ``Adam`` for dense gradients.
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        betas = check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        for i, group in enumerate(self.param_groups):
            complex_params = [[i, j] for j, p in enumerate(group["params"]) if p.dtype.is_complex]
            if complex_params:
                raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support "
                                 f"complex parameters")

    def step(self, closure: Callable[[], Any] | None = None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for grad in (p.grad for p in group["params"] if p.grad is not None):
                raise RuntimeError(f"SparseAdam does not support dense gradients, please consider Adam instead "
                                   f"(got a dense gradient of shape {tuple(grad.shape)} and dtype {grad.dtype}; "
                                   f"Ember's parameters, Embedding(sparse=True)'s included, get dense gradients)")
        return loss
