"""``functional_call`` and ``stack_module_state``: a module run with tensors the caller supplies.

``functional_call(module, {"layer.weight": w, ...}, args)`` runs ``module(*args)`` with the named parameters and
buffers replaced by the given tensors, then puts the module's own back, even when the call raises. That turns a
stateful module into a function of its weights, which ``vmap``, ``grad`` and ensembling need.
``stack_module_state`` stacks the weights of several identical models along a new leading dimension, the form an
ensemble over ``vmap(functional_call)`` takes. Semantics and messages follow ``torch.func``.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence, Tuple, Union

from ..autograd.grad_mode import no_grad
from ..dispatch.ops import F
from ..tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]

_MISSING: Any = object()  # marks a name the module did not have before the swap (it is deleted afterwards)


# -- merging the caller's dictionaries -----------------------------------------------------------------------
def _merged(parameter_and_buffer_dicts) -> Dict[str, Tensor]:
    """One dict of name -> tensor. A single dict is used as is (updates after the call land in it); several are
    merged, and a name given twice is ambiguous, so an error."""
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if not isinstance(parameter_and_buffer_dicts, Sequence):
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    counts: Dict[str, int] = {}
    for d in parameter_and_buffer_dicts:
        for key in d:
            counts[key] = counts.get(key, 0) + 1
    repeated = [key for key, n in counts.items() if n > 1]
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
    return {key: value for d in parameter_and_buffer_dicts for key, value in d.items()}


# -- tied weights ------------------------------------------------------------------------------------------
def _named_tensors(module) -> Dict[str, Tensor]:
    """Every name under which the module reaches a parameter or buffer, tied names included."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _tied_groups(module) -> Dict[str, frozenset]:
    """name -> all names sharing its tensor, for the names whose tensor is shared (by identity)."""
    by_tensor: Dict[int, set] = {}
    for name, tensor in _named_tensors(module).items():
        by_tensor.setdefault(id(tensor), set()).add(name)
    return {name: frozenset(names) for names in by_tensor.values() if len(names) > 1 for name in names}


def _untied(module, given: Mapping[str, Tensor]) -> Dict[str, Tensor]:
    """Spread a tensor given for one name of a tied group to every name of the group, so the module stays tied.
    Different tensors for names of one group would silently untie it: an error."""
    groups = _tied_groups(module)
    given_tied = [name for name in given if name in groups]
    for name in given_tied:
        group = groups[name]
        values = {id(given[other]) for other in group if other in given}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(group)}, which are tied. "
                             f"Consider using tie_weights=False")
    result = dict(given)
    for name in given_tied:
        for other in groups[name]:
            result[other] = given[name]
    return result


def _check_keys(module, names) -> None:
    """strict=True: the given names must be exactly the module's parameters and buffers."""
    valid = set(_named_tensors(module))
    missing, unexpected = sorted(valid - set(names)), sorted(set(names) - valid)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(), "\n\t".join(errors)))


# -- swapping one tensor -----------------------------------------------------------------------------------
def _owner(module, name: str):
    """The submodule holding a dotted ``name``, and the last component of the name."""
    from ..nn.modules.module import Module
    prefix, _, attr = name.rpartition(".")
    owner = module
    for part in filter(None, prefix.split(".")):
        try:
            child = getattr(owner, part)
        except AttributeError as exc:
            raise AttributeError(f"{owner._get_name()} has no attribute `{part}`") from exc
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{prefix}`: {child} is not an instance of ember.nn.Module")
        owner = child
    if not attr:
        raise KeyError('tensor name can\'t be empty string ""')
    return owner, attr


def _swap(module, name: str, value):
    """Put ``value`` under ``name`` and return what was there (``_MISSING`` if nothing). Registered parameters and
    buffers are replaced in their dicts directly: assignment would insist on a Parameter and re-register it."""
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of ember.Tensor")
    owner, attr = _owner(module, name)
    for store in (owner._parameters, owner._buffers):
        if attr in store:
            previous = store[attr]
            if value is _MISSING:
                del store[attr]
            else:
                store[attr] = value
            return previous
    previous = getattr(owner, attr, _MISSING)
    if previous is not _MISSING and previous is not None and not isinstance(previous, Tensor):
        raise TypeError(f"attribute `{attr}`: {previous} is not an instance of ember.Tensor")
    if value is not _MISSING:
        setattr(owner, attr, value)
    elif previous is not _MISSING:
        delattr(owner, attr)
    return previous


def functional_call(module, parameter_and_buffer_dicts: Union[Dict[str, Tensor], Sequence[Dict[str, Tensor]]],
                    args: Any = None, kwargs: Dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced by the given tensors for the
    duration of the call. Names the dicts leave out keep the module's own tensors (unless ``strict``)."""
    given = _merged(parameter_and_buffer_dicts)
    replacements = _untied(module, given) if tie_weights else given
    if strict:
        _check_keys(module, replacements)
    args = () if args is None else (args if isinstance(args, tuple) else (args,))
    originals: Dict[str, Any] = {}
    try:
        for name, tensor in replacements.items():
            originals[name] = _swap(module, name, tensor)
        return module(*args, **(kwargs or {}))
    finally:
        current = {name: _swap(module, name, original) for name, original in originals.items()}
        # a module that reassigned one of its tensors during the call (rather than updating it in place) has
        # its new tensor handed back in the caller's dict, as PyTorch does
        given.update({name: current[name] for name in given if name in current})


# -- ensembles -----------------------------------------------------------------------------------------------
def _stacked_leaf(tensors: Sequence[Tensor], name: str) -> Tensor:
    """The models' tensors for ``name`` stacked along a new first dimension. The stack is a new leaf: it
    requires grad when the originals do (an ensemble trains its stacked weights), with no link back to them."""
    wants_grad = {t.requires_grad for t in tensors}
    if len(wants_grad) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        raise RuntimeError(f"stack_module_state: Expected {name} to have the same shape in every model, got "
                           f"{sorted(shapes)}")
    with no_grad():
        stacked = F.stack(list(tensors), 0)
    return stacked.requires_grad_(True) if wants_grad.pop() else stacked


def _stacked_dict(named: list, kind: str) -> Dict[str, Tensor]:
    """Stack ``{name: tensor}`` dicts, one per model, that must all have the same names."""
    names = list(named[0])
    for i, d in enumerate(named[1:], start=1):
        if list(d) != names:
            raise RuntimeError(f"stack_module_state: Expected all models to have the same {kind}; model {i} has "
                               f"{sorted(set(d) ^ set(names)) or list(d)} where model 0 has {names}")
    return {name: _stacked_leaf([d[name] for d in named], name) for name in names}


def stack_module_state(models) -> Tuple[Dict[str, Tensor], Dict[str, Tensor]]:
    """``(params, buffers)``: each model's parameters and buffers stacked along a new dimension 0, keyed by
    name, for ``vmap(functional_call)`` over an ensemble of identically built models."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = _stacked_dict([dict(m.named_parameters()) for m in models], "parameters")
    buffers = _stacked_dict([dict(m.named_buffers()) for m in models], "buffers")
    return params, buffers
