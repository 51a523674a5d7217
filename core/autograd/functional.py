"""``ember.autograd.functional``: Jacobians, Hessians and their products with vectors, for a function of tensors.

The same interface as ``torch.autograd.functional``: ``func`` takes tensors and returns a tensor or a tuple of
tensors; results mirror that structure (a single tensor in gives a single tensor out, a tuple gives a tuple, and
a Jacobian of tuples is a tuple over outputs of tuples over inputs). Everything is built on ``autograd.grad``;
forward products use the double-backward trick (the gradient of a vector-Jacobian product with respect to its
vector is the Jacobian-vector product), and the vectorized paths hand the batch of basis vectors to
``ember.func.vmap`` (and ``ember.func.jvp`` for forward mode).
"""
from __future__ import annotations

from typing import Callable, Tuple, Union

from ..dispatch.ops import F
from ..tensor import Tensor
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from .gradients import grad as _autograd_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

TensorOrTensors = Union[Tensor, Tuple[Tensor, ...]]

_OUTPUTS = "outputs of the user-provided function"


# -- structure: tensors or tuples in, the same structure out -------------------------------------------------
def _tupled(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was_a_tuple, as_a_tuple)``: every function works on tuples and restores the caller's structure last."""
    was_tuple = isinstance(value, tuple)
    items = value if was_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"the value at index {i}" if was_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(item)}.")
    return was_tuple, items


def _untupled(result: tuple, was_tuple: bool):
    """Undo ``_tupled``: a caller who passed one tensor gets one tensor back."""
    return result if was_tuple else result[0]


def _untupled_nested(result: tuple, outputs_tuple: bool, inputs_tuple: bool):
    """Undo two levels of ``_tupled`` (outputs outside, inputs inside), as a Jacobian is nested."""
    if not inputs_tuple:
        result = tuple(row[0] for row in result)
    return _untupled(result, outputs_tuple)


def _fresh_inputs(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for the inputs, so that ``func`` closing over the caller's own tensors does not confuse
    them with its arguments. With ``create_graph`` an input that requires grad stays linked to the caller's
    graph through a view, so the results can be differentiated further; otherwise it becomes a new leaf."""
    fresh = []
    for t in inputs:
        if create_graph and t.requires_grad:
            fresh.append(t.view_as(t))
        else:
            fresh.append(t.detach().requires_grad_(need_graph))
    return tuple(fresh)


def _finish(results, create_graph: bool):
    """Without ``create_graph`` the caller asked for values, not history: detach (nested tuples too)."""
    if create_graph:
        return results
    return tuple(r.detach() if isinstance(r, Tensor) else _finish(r, False) for r in results)


# -- checks --------------------------------------------------------------------------------------------------
def _check_v(v: tuple, refs: tuple, refs_tuple: bool) -> None:
    """``v`` must match, entry for entry and shape for shape, the tensors it multiplies."""
    if len(v) != len(refs):
        if refs_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(refs)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (entry, ref) in enumerate(zip(v, refs)):
        if tuple(entry.shape) != tuple(ref.shape):
            prefix = f"Entry {i} in " if refs_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {ref.size()} but got {entry.size()}.")


def _prepare_v(v, refs: tuple, refs_tuple: bool, create_graph: bool, fn_name: str, none_message: str):
    """Validate ``v`` against ``refs``; ``None`` is only allowed when ``refs`` is one single-element tensor."""
    if v is None:
        if len(refs) != 1 or refs[0].numel() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _tupled(v, "v", fn_name)
    v = _fresh_inputs(v, create_graph, need_graph=False)
    _check_v(v, refs, refs_tuple)
    return v


_NO_GRAD_MESSAGES = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with respect "
                 "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                 "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                 "would be violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the input. "
                "This is not allowed in strict mode. You should ensure that your function is thrice "
                "differentiable and that the hessian depends on the inputs."),
}


def _strict_requires_grad(tensors: tuple, kind: str, strict: bool) -> None:
    """In strict mode, a result that is missing or carries no graph means a silent zero: refuse it instead."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                               f"This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAD_MESSAGES[kind].format(i=i))


_MISSING_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _zeros_for_unused(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """An unused input's gradient is mathematically zero: materialize it, or refuse in strict mode."""
    filled = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_MISSING_MESSAGES[stage].format(i=i))
            g = F.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is "
                               f"not allowed in strict mode when create_graph=True.")
        filled.append(g)
    return tuple(filled)


# -- the one call into the engine ----------------------------------------------------------------------------
def _grads(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph: bool = False,
           retain_graph=None) -> tuple:
    """``autograd.grad`` that tolerates outputs without a graph (``None`` entries or constants): they contribute
    nothing, and if no output has a graph every gradient is ``None`` without running the engine."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _autograd_grad([out for out, _ in pairs], list(inputs), [g for _, g in pairs],
                          retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)


# -- products with vectors -----------------------------------------------------------------------------------
def vjp(func: Callable[..., TensorOrTensors], inputs: TensorOrTensors, v: TensorOrTensors | None = None,
        create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: one backward pass, the cheap direction when outputs are few."""
    with enable_grad():
        inputs_tuple, inputs = _tupled(inputs, "inputs", "vjp")
        inputs = _fresh_inputs(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _tupled(func(*inputs), _OUTPUTS, "vjp")
        _strict_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, outputs_tuple, create_graph, "vjp",
                       "The vector v can only be None if the user-provided function returns a single Tensor "
                       "with a single element.")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        result = _zeros_for_unused(_grads(outputs, inputs, v, create_graph=create_graph), inputs, strict,
                                   create_graph, "back")
    return (_untupled(_finish(outputs, create_graph), outputs_tuple),
            _untupled(_finish(result, create_graph), inputs_tuple))


def jvp(func: Callable[..., TensorOrTensors], inputs: TensorOrTensors, v: TensorOrTensors | None = None,
        create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)`` by the double-backward trick: ``u -> J^T u`` is linear in a dummy ``u``, so its
    gradient with respect to ``u`` along ``v`` is ``J v``. No forward-mode AD needed."""
    with enable_grad():
        inputs_tuple, inputs = _tupled(inputs, "inputs", "jvp")
        inputs = _fresh_inputs(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, create_graph, "jvp",
                       "The vector v can only be None if the input to the user-provided function is a single "
                       "Tensor with a single element.")
        outputs_tuple, outputs = _tupled(func(*inputs), _OUTPUTS, "jvp")
        _strict_requires_grad(outputs, "outputs", strict)
        dummies = tuple(F.zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _grads(outputs, inputs, dummies, create_graph=True)
        _strict_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        result = _zeros_for_unused(_grads(grad_inputs, dummies, v, create_graph=create_graph), outputs, strict,
                                   create_graph, "back_trick")
    return (_untupled(_finish(outputs, create_graph), outputs_tuple),
            _untupled(_finish(result, create_graph), outputs_tuple))


def _scalar_function_gradient(func, inputs, v, create_graph: bool, strict: bool, fn_name: str):
    """The shared first half of ``vhp`` and ``hvp``: ``func``'s scalar output and its gradient, with graph."""
    inputs_tuple, inputs = _tupled(inputs, "inputs", fn_name)
    inputs = _fresh_inputs(inputs, create_graph, need_graph=True)
    v = _prepare_v(v, inputs, inputs_tuple, create_graph, fn_name,
                   "The vector v can only be None if the input to the user-provided function is a single Tensor "
                   "with a single element.")
    outputs_tuple, outputs = _tupled(func(*inputs), _OUTPUTS, fn_name)
    _strict_requires_grad(outputs, "outputs", strict)
    if outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                           f"element")
    jac = _grads(outputs, inputs, create_graph=True)
    _strict_requires_grad(jac, "jacobian", strict)
    return inputs_tuple, inputs, v, outputs, jac


def vhp(func: Callable[..., Tensor], inputs: TensorOrTensors, v: TensorOrTensors | None = None,
        create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)`` for a scalar ``func``: the gradient of ``grad(func) . v``, two backward passes."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs, jac = _scalar_function_gradient(func, inputs, v, create_graph, strict,
                                                                           "vhp")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        result = _zeros_for_unused(_grads(jac, inputs, v, create_graph=create_graph), inputs, strict,
                                   create_graph, "double_back")
    return _untupled(_finish(outputs, create_graph), False), _untupled(_finish(result, create_graph), inputs_tuple)


def hvp(func: Callable[..., Tensor], inputs: TensorOrTensors, v: TensorOrTensors | None = None,
        create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)`` for a scalar ``func`` by the double-backward trick on top of ``vhp``'s work
    (equal to ``vhp`` when the Hessian is symmetric, which it is for twice continuously differentiable func)."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs, jac = _scalar_function_gradient(func, inputs, v, create_graph, strict,
                                                                           "hvp")
        dummies = tuple(F.zeros_like(t).requires_grad_(True) for t in inputs)
        double_back = _grads(jac, inputs, dummies, create_graph=True)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        result = _zeros_for_unused(_grads(double_back, dummies, v, create_graph=create_graph), inputs, strict,
                                   create_graph, "double_back_trick")
    return _untupled(_finish(outputs, create_graph), False), _untupled(_finish(result, create_graph), inputs_tuple)


# -- Jacobians -----------------------------------------------------------------------------------------------
def _standard_basis(tensors: tuple) -> tuple:
    """The identity of the concatenated, flattened ``tensors``, cut into one block per tensor and shaped
    ``(total, *tensor.shape)``: row ``r`` is the ``r``-th unit vector across all of them."""
    numels = [t.numel() for t in tensors]
    eye = F.eye(sum(numels), dtype=tensors[0].dtype, device=tensors[0].device)
    blocks = eye.split(numels, dim=1)
    return tuple(block.reshape((sum(numels),) + tuple(t.shape)) for block, t in zip(blocks, tensors))


def _jacobian_block(rows: list, out: Tensor, inp: Tensor) -> Tensor:
    """Rows of d out_flat[j] / d inp, stacked into the block of shape ``out.shape + inp.shape``."""
    shape = tuple(out.shape) + tuple(inp.shape)
    if not rows:
        return F.zeros(shape, dtype=inp.dtype, device=inp.device)
    return F.stack(rows, 0).reshape(shape)


def _jacobian_loop(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """One backward pass per output element: row ``j`` of output ``i``'s Jacobian is the gradient of its
    ``j``-th element."""
    jacobian_rows = []
    for i, out in enumerate(outputs):
        per_input = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(out.numel()):
            grads = _grads((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, inp) in enumerate(zip(grads, inputs)):
                per_input[k].append(_jacobian_entry(g, inp, i, k, strict, create_graph))
        jacobian_rows.append(tuple(_jacobian_block(rows, out, inp) for rows, inp in zip(per_input, inputs)))
    return tuple(jacobian_rows)


def _jacobian_entry(g, inp: Tensor, i: int, k: int, strict: bool, create_graph: bool) -> Tensor:
    """One row's gradient for input ``k``, zero when unused, or the strict-mode refusal."""
    if g is None:
        if strict:
            raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. This is "
                               f"not allowed in strict mode.")
        return F.zeros_like(inp)
    if strict and create_graph and not g.requires_grad:
        # PyTorch names the output index here; kept so that messages match.
        raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. This is "
                           f"not allowed in strict mode when create_graph=True.")
    return g


def _jacobian_reverse_vectorized(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """All rows at once: ``vmap`` the vector-Jacobian product over the standard basis of the outputs."""
    from ..func import vmap
    basis = _standard_basis(outputs)
    present: list = []

    def rows_for(*cotangents):
        grads = _grads(outputs, inputs, cotangents, create_graph=create_graph, retain_graph=True)
        present[:] = [g is not None for g in grads]
        found = tuple(g for g in grads if g is not None)
        return found or (cotangents[0],)  # vmap needs some output; it is ignored when no input was used

    batched = list(vmap(rows_for)(*basis))
    numels = [out.numel() for out in outputs]
    total = sum(numels)
    per_input = []
    for inp, used in zip(inputs, present):
        rows = batched.pop(0) if used else F.zeros((total,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)
        per_input.append([block.reshape(tuple(out.shape) + tuple(inp.shape))
                          for block, out in zip(rows.split(numels, dim=0), outputs)])
    return tuple(zip(*per_input))


def _jacobian_forward_vectorized(func, inputs: tuple) -> tuple[bool, tuple]:
    """All columns at once: ``vmap`` ``func.jvp`` over the standard basis of the inputs."""
    from ..func import jvp as func_jvp, vmap
    outputs_tuple = []

    def columns_for(*tangents):
        out, tangents_out = func_jvp(func, inputs, tangents)
        was_tuple, _ = _tupled(out, _OUTPUTS, "jacobian")
        outputs_tuple[:] = [was_tuple]
        return tangents_out if was_tuple else (tangents_out,)

    columns = vmap(columns_for)(*_standard_basis(inputs))
    numels = [inp.numel() for inp in inputs]
    jac = []
    for col in columns:  # (total, *out.shape): move the basis dimension last, then unflatten it per input
        out_shape = tuple(col.shape[1:])
        blocks = col.split(numels, dim=0)
        jac.append(tuple(block.permute(*range(1, block.ndim), 0).reshape(out_shape + tuple(inp.shape))
                         for block, inp in zip(blocks, inputs)))
    return outputs_tuple[0], tuple(jac)


def jacobian(func: Callable[..., TensorOrTensors], inputs: TensorOrTensors, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` of shape ``outputs[i].shape + inputs[j].shape``,
    untupled on each side where the caller used single tensors."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        return _jacobian_forward(func, inputs, create_graph, strict, vectorize)
    with enable_grad():
        inputs_tuple, inputs = _tupled(inputs, "inputs", "jacobian")
        inputs = _fresh_inputs(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _tupled(func(*inputs), _OUTPUTS, "jacobian")
        _strict_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError("ember.autograd.functional.jacobian: `strict=True` and `vectorize=True` are "
                                   "not supported together. Please either set `strict=False` or "
                                   "`vectorize=False`.")
            jac = _jacobian_reverse_vectorized(outputs, inputs, create_graph)
        else:
            jac = _jacobian_loop(outputs, inputs, create_graph, strict)
        return _untupled_nested(_finish(jac, create_graph), outputs_tuple, inputs_tuple)


def _jacobian_forward(func, inputs, create_graph: bool, strict: bool, vectorize: bool):
    """``strategy="forward-mode"``: only the vectorized form exists, as in PyTorch."""
    if create_graph:
        raise NotImplementedError("ember.autograd.functional.jacobian: `create_graph=True` and "
                                  '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                  '`create_graph=False` or `strategy="reverse-mode"`.')
    if strict:
        raise RuntimeError('ember.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    inputs_tuple, inputs = _tupled(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                  "implemented for `vectorize=True`.")
    outputs_tuple, jac = _jacobian_forward_vectorized(func, inputs)
    result = _untupled_nested(jac, outputs_tuple, inputs_tuple)
    if inputs_tuple:  # PyTorch's forward mode nests lists where its inputs were a tuple
        result = [list(row) for row in result] if outputs_tuple else list(result)
    return result


def hessian(func: Callable[..., Tensor], inputs: TensorOrTensors, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar ``func``: the Jacobian of its gradient. ``H[i][j]`` has shape
    ``inputs[i].shape + inputs[j].shape``, untupled where ``inputs`` was a single tensor."""
    inputs_tuple, inputs = _tupled(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_output(*args):
        out = func(*args)
        out_tuple, outs = _tupled(out, _OUTPUTS, "hessian")
        _strict_requires_grad(outs, "outputs", strict)
        if out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single "
                               "element")
        return out.squeeze()

    def gradient(*args):
        if outer_jacobian_strategy == "forward-mode":  # the inner reverse pass must see the dual inputs
            args = tuple(a if a.requires_grad else a.requires_grad_(True) for a in args)
        jac = jacobian(scalar_output, args, create_graph=True)
        _strict_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _untupled_nested(result, inputs_tuple, inputs_tuple)
