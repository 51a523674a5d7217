"""L-BFGS: a quasi-Newton method that builds its curvature estimate from the last ``history_size`` steps."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..autograd import enable_grad, no_grad
from ..dispatch.ops import F
from ..tensor import Tensor
from ._line_search import dot, max_abs, strong_wolfe
from .optimizer import Optimizer, check_non_negative


class LBFGS(Optimizer):
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
    history_size=100, line_search_fn=None)``.

    ``step(closure)`` needs a closure that clears the gradients, computes the loss, calls
    ``backward()`` and returns the loss: one step runs up to ``max_iter`` iterations and
    ``max_eval`` (default ``max_iter * 5 // 4``) evaluations. ``line_search_fn="strong_wolfe"``
    picks each step length by a strong-Wolfe line search; without it the step is ``lr`` (the
    first one scaled down by the gradient's size). All parameters form one flat vector, so there is
    one param group. The whole state sits on the first parameter, as in PyTorch: the last direction
    ``d`` and step ``t``, the curvature pairs ``old_dirs``/``old_stps`` and ``ro``, ``H_diag``,
    ``prev_flat_grad``, ``prev_loss``, and the counters ``func_evals`` and ``n_iter``.
    """

    #: the last direction and its pieces (``_pieces``); a class default, so that unpickled optimizers have it
    _direction_pieces: tuple[Tensor, list[Tensor]] | None = None

    def __init__(self, params: Iterable, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_non_negative(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    # -- the parameters as one flat vector -------------------------------------------------------
    def _flat_grad(self) -> Tensor:
        """The gradients concatenated (zeros for a parameter without one): a new tensor, never written into."""
        views = []
        for p in self._params:
            grad = p.grad
            if grad is None:
                views.append(F.zeros((p.numel(),), dtype=p.dtype, device=p.device))
            else:
                views.append(F.view(grad, (-1,)) if grad.is_contiguous() else F.reshape(grad, (-1,)))
        return F.cat(views, 0)

    def _add_grad(self, t: float, direction: Tensor) -> None:
        """``params += t * direction``, ``direction`` being flat."""
        for p, piece in zip(self._params, self._pieces(direction)):
            p.add_(piece * t)

    def _pieces(self, direction: Tensor) -> list[Tensor]:
        """Each parameter's piece of the flat ``direction``, as a view of its shape. Made once per direction:
        a step along it is taken once per line-search trial and once more to move."""
        cached = self._direction_pieces
        if cached is not None and cached[0] is direction:
            return cached[1]
        pieces, offset = [], 0
        for p in self._params:
            n = p.numel()
            pieces.append(F.view(F.slice(direction, 0, offset, offset + n), tuple(p.shape)))
            offset += n
        self._direction_pieces = (direction, pieces)
        return pieces

    def _restore(self, values: list[Tensor]) -> None:
        for p, value in zip(self._params, values):
            p.copy_(value)

    @staticmethod
    def _evaluate(closure: Callable[[], Any]):
        with enable_grad():
            return closure()

    # -- one step: up to max_iter iterations --------------------------------------------------------
    def step(self, closure: Callable[[], Any]):  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations; return the loss the closure gave first.

        PyTorch's algorithm, in its order of operations. Each iteration reads six numbers to the host (the
        loss, y.s, y.y, g.d, max |d| and max |g|); the search direction is one ``_lbfgs_direction`` call."""
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with no_grad():
            orig_loss = self._evaluate(closure)
            loss = float(orig_loss)
            evaluations = 1
            state["func_evals"] += 1
            flat_grad = self._flat_grad()
            if max_abs(flat_grad) <= tolerance_grad:
                return orig_loss

            d, t = state.get("d"), state.get("t")
            old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
            H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d, old_dirs, old_stps, ro, H_diag = -flat_grad, [], [], [], 1.0
                else:
                    y, s = flat_grad - prev_flat_grad, d * t
                    ys = dot(y, s)
                    if ys > 1e-10:  # keep only pairs with positive curvature
                        if len(old_dirs) == history_size:
                            del old_dirs[0], old_stps[0], ro[0]
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        H_diag = ys / dot(y, y)
                    if old_dirs:
                        d = F._lbfgs_direction(flat_grad, old_dirs, old_stps, [float(r) for r in ro], float(H_diag))
                    else:
                        d = -flat_grad * float(H_diag)
                prev_flat_grad = flat_grad  # a new tensor at every evaluation: nothing writes into it
                prev_loss = loss

                t = min(1.0, 1.0 / F.sum(F.abs(flat_grad)).item()) * lr if state["n_iter"] == 1 else lr
                gtd = dot(flat_grad, d)
                if gtd > -tolerance_change:  # not a descent direction
                    break
                d_norm = max_abs(d)  # max |d * t| below is d_norm * |t|: rounding keeps the order

                step_evaluations = 0
                if line_search_fn is not None:
                    if line_search_fn != "strong_wolfe":
                        raise RuntimeError("only 'strong_wolfe' is supported")
                    start = [F.clone(p) for p in self._params]

                    def along_d(step: float) -> tuple[float, Tensor]:
                        self._add_grad(step, d)
                        value = float(self._evaluate(closure))
                        grad = self._flat_grad()
                        self._restore(start)
                        return value, grad

                    loss, flat_grad, t, step_evaluations = strong_wolfe(
                        along_d, d, t, loss, flat_grad, gtd, tolerance_change=tolerance_change,
                        max_ls=max_eval - evaluations, d_norm=d_norm)
                    self._add_grad(t, d)
                    converged = max_abs(flat_grad) <= tolerance_grad
                else:
                    self._add_grad(t, d)
                    converged = False
                    if n_iter != max_iter:
                        loss = float(self._evaluate(closure))
                        flat_grad = self._flat_grad()
                        converged = max_abs(flat_grad) <= tolerance_grad
                        step_evaluations = 1
                evaluations += step_evaluations
                state["func_evals"] += step_evaluations

                if (n_iter == max_iter or evaluations >= max_eval or converged
                        or d_norm * abs(t) <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                    break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
