"""Running one sample of one op on the backend and checking it against the oracle."""
from __future__ import annotations

from dataclasses import replace

from ember.dispatch.ops import F

from .compare import mismatch, tolerance
from .gauge import align
from .make import Unsupported
from .oracle import (bound_values, expected_dtypes, expected_shapes, host, multi_output, numpy_dtype,
                     outputs_of, run_reference)


def on_device(op, sample, device):
    """The sample with ``device=`` set for ops that create tensors (their samples cannot know the device)."""
    index = op.param_index.get("device")
    if index is None or len(sample.args) > index or "device" in sample.kwargs:
        return sample
    return replace(sample, kwargs={**sample.kwargs, "device": device})


def describe(op, sample) -> str:
    def show(v):
        if hasattr(v, "_data"):
            return f"tensor{tuple(v.shape)}:{v.dtype.name}{'' if v.is_contiguous() else ' (strided)'}"
        if isinstance(v, (list, tuple)) and any(hasattr(x, "_data") for x in v):
            return "[" + ", ".join(show(x) for x in v) + "]"
        return repr(v)
    parts = [show(a) for a in sample.args] + [f"{k}={show(v)}" for k, v in sample.kwargs.items()]
    note = f"  [{sample.note}]" if sample.note else ""
    return f"{op.name}({', '.join(parts)}){note}"


def call(op, sample, composite: bool = False):
    """Run the op as users do, or (``composite=True``) its core definition even where the backend overrides it.
    An op writing into the tensors of its lists (``mutates`` names them) answers with those tensors, in order."""
    if not composite:
        result = getattr(F, op.name)(*sample.args, **sample.kwargs)
    else:
        result = op.composite(*bound_values(op, sample.args, dict(sample.kwargs)))
    if op.mutates.__class__ is tuple:
        assert result is None, f"{describe(op, sample)}: an op writing into lists of tensors must return None"
        values = bound_values(op, sample.args, dict(sample.kwargs))
        return tuple(t for name in op.mutates for t in values[op.param_index[name]])
    return tuple(result) if composite and multi_output(op) else result


def expected_types(op, sample, target):
    """(values, compute, out) for the sample; Unsupported when the backend lacks one of the dtypes."""
    values = bound_values(op, sample.args, dict(sample.kwargs))
    compute, out = expected_dtypes(op, values)
    outs = out if isinstance(out, tuple) else (out,)
    if not target.supports(compute, *outs) or not all(target.supports(t.dtype) for t in _tensors(sample)):
        raise Unsupported(describe(op, sample))
    return values, compute, out


def _tensors(sample):
    for v in (*sample.args, *sample.kwargs.values()):
        items = v if isinstance(v, (list, tuple)) else (v,)
        yield from (x for x in items if hasattr(x, "_data"))


def _fits(actual: tuple, predicted: tuple) -> bool:
    """Whether a shape matches the meta's prediction; None stands for a data-dependent size (nonzero)."""
    return len(actual) == len(predicted) and all(p is None or a == p for a, p in zip(actual, predicted))


def _per_output(op, out, count: int) -> list:
    if isinstance(out, tuple):
        return list(out)
    return [out] * count


def check_meta(op, sample, target) -> bool:
    """Output dtypes by the promotion rule, shapes by the meta function, storage in the declared dtype.

    True when checked, False when the schema refuses the sample (and the op was seen to refuse it too).
    """
    where = describe(op, sample)
    try:
        values, _, out = expected_types(op, sample, target)
        shapes = expected_shapes(op, values)
    except Unsupported:
        raise
    except Exception as refused:
        _assert_refuses(op, sample, where, refused)
        return False
    result = call(op, sample)
    outputs = outputs_of(op, result)
    if multi_output(op):
        assert len(outputs) == len(shapes), f"{where}: {len(outputs)} outputs, meta says {len(shapes)}"
    else:
        shapes = [shapes]
    for t, shape, dt in zip(outputs, shapes, _per_output(op, out, len(outputs))):
        assert t.dtype is dt, f"{where}: dtype {t.dtype.name}, the promotion rule says {dt.name}"
        assert _fits(tuple(t.shape), tuple(shape)), f"{where}: shape {tuple(t.shape)}, meta says {tuple(shape)}"
        stored = host(t).dtype
        assert stored == numpy_dtype(dt), f"{where}: a {dt.name} result is stored as {stored}"
        assert t.device == target.device, f"{where}: result on {t.device}, expected {target.device}"
    if op.mutates is True:
        assert result is sample.args[0], f"{where}: an op that writes into its input must return that input"
    if op.view:
        base = sample.args[0]
        assert result.data_ptr_id() == base.data_ptr_id(), f"{where}: a view must share its input's storage"
    return True


def check_values(op, sample, target, composite: bool = False) -> bool:
    """Compare with the reference; True when values were compared, False when both sides refused the input."""
    where = describe(op, sample)
    try:
        _, compute, out = expected_types(op, sample, target)
        expected = run_reference(op, sample.args, sample.kwargs, compute)
    except Unsupported:
        raise
    except Exception as refused:
        _assert_refuses(op, sample, where, refused)
        return False
    result = call(op, sample, composite)
    outputs = outputs_of(op, result)
    assert len(outputs) == len(expected), f"{where}: {len(outputs)} outputs, the reference has {len(expected)}"
    problem = output_mismatch(op, [host(t) for t in outputs], expected, _per_output(op, out, len(outputs)))
    assert problem is None, f"{where}{problem}"
    return True


def output_mismatch(op, actual: list, expected: list, dtypes: list) -> str | None:
    """None when every output (host arrays) matches the reference's within its dtype's tolerance, up to the
    op's gauge (``gauge.align``: eigen- and singular vectors are compared up to sign); else the first
    difference, naming the output."""
    if op.gauge is not None:
        values_dtype = dtypes[op.outputs.index(op.gauge.values)]
        actual = align(op, actual, expected, *tolerance(op, values_dtype))
    for k, (got, ref, dt) in enumerate(zip(actual, expected, dtypes)):
        problem = mismatch(got, ref, dt, *tolerance(op, dt))
        if problem is not None:
            label = f" output {k}" if len(actual) > 1 else ""
            aligned = " (vectors aligned by the gauge)" if op.gauge is not None else ""
            return f"{label} ({dt.name}){aligned}: {problem}"
    return None


def _assert_refuses(op, sample, where, refused) -> None:
    """The reference (or the schema) refused the input: the op must refuse it too, with its name in the message."""
    try:
        call(op, sample)
    except Exception as exc:
        assert op.name in str(exc), (f"{where}: the error does not name the op: {type(exc).__name__}: {exc}")
        return
    raise AssertionError(f"{where}: the reference refused this input ({type(refused).__name__}: {refused}) "
                         f"but the op returned a result")
