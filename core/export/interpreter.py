"""Running an exported program: inputs matched against the exported ones, shape guards, then each node's op
called through the dispatcher, as the model's own call made it.

Each node is an ordinary op call, so a run records for autograd, honours autocast and the profiler, and goes to
whatever backend its inputs are on. Guards come first: an input of another structure, rank or size than the
program was exported for is refused naming the input and dimension (PyTorch's "Guard failed" messages).
"""
from __future__ import annotations

from ..compiler.graph import rebuild
from ..dispatch.execution import links
from ..dispatch.execution.dispatcher import call
from ..dispatch.schema import OPS
from ..dispatch.schema.defaults import get_default_device
from .dims import SymbolicSize
from .graph import PROGRAM_DEVICE, ProgramGraph, Ref


#: The node being run, for a capture of the running program (``run_decompositions``) to keep its source lines.
running_node: list = [None]


def run(program: ProgramGraph, state: dict, args: tuple, kwargs: dict):
    """``program`` called with ``args``/``kwargs``; ``state`` maps every parameter, buffer and constant name the
    program reads to its tensor."""
    user = bind_inputs(program, args, kwargs)
    sizes = check_guards(program, user)
    env = {}
    for placeholder in program.placeholders:
        env[placeholder.slot] = user[placeholder.slot] if placeholder.kind == "user_input" else \
            state[placeholder.target]
    device = _device(program, env)
    for node in program.nodes:
        op = OPS[node.target]
        values = [_value(v, env, sizes, device) for v in node.args]
        positional = [v for p, v in zip(op.params, values) if not p.kw_only]
        keywords = {p.name: v for p, v in zip(op.params, values) if p.kw_only}
        running_node[0] = node
        try:
            result = call(op, tuple(positional), keywords)
        finally:
            running_node[0] = None
        if op.mutates:
            continue  # its outputs are the tensors it wrote into, already in place
        if len(node.outputs) == 1:
            env[node.outputs[0]] = result[0] if isinstance(result, (tuple, list)) else result
        else:
            for slot, tensor in zip(node.outputs, result):
                env[slot] = tensor
    return rebuild(program.result, lambda x: env[x.slot] if isinstance(x, Ref) else x)


def bind_inputs(program: ProgramGraph, args: tuple, kwargs: dict) -> dict:
    """slot -> tensor for every user input, checking the call's structure against the exported one."""
    found: dict = {}
    _match(program.in_tree, (tuple(args), dict(kwargs)), (), found, program)
    return found


def _match(expected, actual, path: tuple, found: dict, program: ProgramGraph) -> None:
    Tensor = links.tensor.type
    if isinstance(expected, Ref):
        if not isinstance(actual, Tensor):
            raise TypeError(f"{_where(path, program)}: expected a tensor, as exported, got {type(actual).__name__}")
        found[expected.slot] = actual
    elif isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            raise TypeError(_structure_error(expected, actual, path, program))
        for i, (e, a) in enumerate(zip(expected, actual)):
            _match(e, a, (*path, i), found, program)
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise TypeError(_structure_error(expected, actual, path, program))
        for key in expected:
            _match(expected[key], actual[key], (*path, key), found, program)
    elif not _same_constant(expected, actual):
        raise ValueError(f"{_where(path, program)}: the program was exported with {expected!r} here and keeps it "
                         f"fixed; got {actual!r} (export again for another value)")


def _same_constant(expected, actual) -> bool:
    if type(expected) is not type(actual):
        return isinstance(expected, (int, float)) and isinstance(actual, (int, float)) and \
            not isinstance(actual, bool) and not isinstance(expected, bool) and expected == actual
    try:
        return bool(expected == actual)
    except Exception:  # noqa: BLE001  objects without a plain equality
        return expected is actual


def _structure_error(expected, actual, path: tuple, program: ProgramGraph) -> str:
    if path == (0,):
        return (f"the exported program takes {len(expected)} positional argument(s), as exported; it was called "
                f"with {len(actual)}")
    if path == (1,):
        return (f"the exported program takes the keyword arguments {sorted(expected)}, as exported; it was called "
                f"with {sorted(actual)}")
    return (f"{_where(path, program)}: expected {_shape_of_tree(expected)} as exported, got "
            f"{_shape_of_tree(actual)}")


def _shape_of_tree(tree) -> str:
    if isinstance(tree, (tuple, list)):
        return f"a {type(tree).__name__} of {len(tree)}"
    if isinstance(tree, dict):
        return f"a dict with keys {sorted(map(str, tree))}"
    return type(tree).__name__


def _where(path: tuple, program: ProgramGraph) -> str:
    from .dynamic_shapes import describe_path

    if len(path) >= 2:
        for placeholder in program.user_inputs():
            if placeholder.path == path:
                return placeholder.name
        return describe_path(path)
    return "the inputs"


def check_guards(program: ProgramGraph, user: dict) -> dict:
    """Each user input's shape against its exported one; returns the size of every symbol."""
    sizes: dict = {}
    derived = []
    for placeholder in program.user_inputs():
        tensor = user[placeholder.slot]
        expected = program.metas[placeholder.slot].shape
        actual = tuple(tensor.shape)
        name = placeholder.name
        if len(actual) != len(expected):
            raise AssertionError(f"Guard failed: {name}.dim() == {len(expected)}: {name} has shape {actual}, and the "
                                 f"program was exported for {len(expected)} dimensions")
        for axis, (want, got) in enumerate(zip(expected, actual)):
            where = f"{name}.size()[{axis}]"
            if isinstance(want, int):
                if want != got:
                    raise AssertionError(f"Guard failed: {where} == {want}: {name} has shape {actual}; that "
                                         f"dimension was exported static (give it a Dim in dynamic_shapes to vary it)")
            elif _is_root(want):
                symbol = want.terms[0][0][0]
                bound = sizes.setdefault(symbol, got)
                if bound != got:
                    raise AssertionError(f"Guard failed: {where} == {bound}: Dim '{symbol}' is {bound} in an earlier "
                                         f"input and {got} in {name} (shape {actual})")
                low, high = program.ranges.get(symbol, (0, None))
                if got < low:
                    raise AssertionError(f"Guard failed: {where} >= {low}: {name} has shape {actual}; Dim "
                                         f"'{symbol}' takes sizes in [{low}, {_bound(high)}]")
                if high is not None and got > high:
                    raise AssertionError(f"Guard failed: {where} <= {high}: {name} has shape {actual}; Dim "
                                         f"'{symbol}' takes sizes in [{low}, {_bound(high)}]")
            else:
                derived.append((where, want, got, name, actual))
    for where, want, got, name, actual in derived:
        if want.evaluate(sizes) != got:
            raise AssertionError(f"Guard failed: {where} == {want}: {name} has shape {actual}")
    return sizes


def _is_root(size) -> bool:
    return isinstance(size, SymbolicSize) and len(size.terms) == 1 and size.terms[0][1] == 1 and \
        len(size.terms[0][0]) == 1


def _bound(high) -> str:
    return "inf" if high is None else str(high)


def _device(program: ProgramGraph, env: dict):
    """The device ``PROGRAM_DEVICE`` stands for in this run: the first user input's, else the state's."""
    for kind in ("user_input", "parameter", "buffer", "constant"):
        for placeholder in program.placeholders:
            if placeholder.kind == kind:
                return env[placeholder.slot].device
    return get_default_device()


def _value(v, env: dict, sizes: dict, device):
    """A node's argument as this run has it: tensors, sizes and the program's device put in."""
    def leaf(x):
        if isinstance(x, Ref):
            return env[x.slot]
        if isinstance(x, SymbolicSize):
            return x.evaluate(sizes)
        return device if x is PROGRAM_DEVICE else x
    return rebuild(v, leaf)


__all__ = ["run", "bind_inputs", "check_guards"]
