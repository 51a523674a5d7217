"""``weights_only`` loading: the globals a checkpoint's pickle may name, and an unpickler that looks up
nothing else.

Unpickling calls whatever callables the pickle names, so ``weights_only=True`` hands the pickle only
the objects listed here (containers, numbers, Ember dtypes and devices) plus what the user allowed with
``add_safe_globals``; every other name is refused before anything is imported or called.
"""
from __future__ import annotations

import _compat_pickle
import contextlib
import copyreg
import io
import pickle
import pickletools
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator

from ..dispatch.schema.device import device as Device
from ..dispatch.schema.dtypes import from_name as dtype_from_name
from ..dispatch.schema.errors import EmberError
from ..tensor import Size
from .errors import CheckpointError, UnpicklingError

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]


def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """What protocol-2 pickles (PyTorch's default) write ``bytes`` as: ``_codecs.encode(text, 'latin1')``."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnpicklingError(f"_codecs.encode is allowed only as bytes' latin1 encoding, got "
                              f"({type(text).__name__}, {encoding!r})")
    return text.encode("latin1")


def _bytearray(*args) -> bytearray:
    """What pickles write ``bytearray`` as, ``bytearray(data)``, but never ``bytearray(n)``: a few bytes of
    pickle must not allocate n zero bytes."""
    if args and not isinstance(args[0], (bytes, str)):
        raise UnpicklingError(f"builtins.bytearray is allowed only over bytes or a string, got "
                              f"{type(args[0]).__name__}")
    return bytearray(*args)


def _sparse_rebuild(*args):
    """``ember.sparse.serialization.rebuild``, imported when a pickle first uses it."""
    from ..sparse.serialization import rebuild
    try:
        return rebuild(*args)
    except (TypeError, ValueError) as exc:
        raise UnpicklingError(f"ember.load: a sparse tensor in the pickled objects is invalid: {exc}") from None


BUILTIN_SAFE: dict[str, Any] = {
    "collections.OrderedDict": OrderedDict,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.bytearray": _bytearray,
    "builtins.complex": complex,
    "builtins.slice": slice,
    "_codecs.encode": _latin1_encode,
    # a dtype and a device, under the stable paths their pickles name (ember.dispatch.dtypes, .device)
    **{f"{obj.__module__}.{obj.__qualname__}": obj for obj in (dtype_from_name, Device)},
    "ember.tensor.Size": Size,
    "ember.sparse.serialization.rebuild": _sparse_rebuild,  # a sparse tensor inside a pickled object
}

_user: dict[str, Any] = {}  # "module.qualname" -> the object to hand the pickle
_entries: list = []  # as the user passed them, for get_safe_globals


def global_name(obj) -> str:
    """``module.qualname``, the name a pickle records for a class or function."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)):
        raise TypeError(f"add_safe_globals: {obj!r} has no __module__ and __qualname__; pass (obj, 'module.name')")
    return f"{module}.{qualname}"


def add_safe_globals(safe_globals: list) -> None:
    """Allow ``weights_only`` loads to use these classes and functions, each given as the object or as
    ``(object, "module.qualname")`` when the file names it differently."""
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if not (len(entry) == 2 and isinstance(entry[1], str)):
                raise TypeError(f"add_safe_globals: expected an object or (object, 'module.name'), got {entry!r}")
            obj, name = entry
        else:
            obj, name = entry, global_name(entry)
        _user[name] = obj
        _entries.append(entry)


def get_safe_globals() -> list:
    """What ``add_safe_globals`` allowed, as it was passed."""
    return list(_entries)


def clear_safe_globals() -> None:
    _user.clear()
    _entries.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list) -> Iterator[None]:
    """``with safe_globals([...]):`` allows these globals only inside the block."""
    saved_user, saved_entries = dict(_user), list(_entries)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user.clear()
        _user.update(saved_user)
        _entries[:] = saved_entries


def allowed(name: str, defaults: dict[str, Any]):
    """The object ``weights_only`` hands out for ``name``, or None."""
    found = defaults.get(name)
    return found if found is not None else _user.get(name)


def refusal(name: str) -> UnpicklingError:
    return UnpicklingError(
        f"ember.load(weights_only=True) refused to load the global {name}: the checkpoint's pickle names it, and "
        f"weights_only loading builds only tensors, containers, numbers, strings and NumPy arrays. If you trust "
        f"this file and {name}, allow it with ember.serialization.add_safe_globals([{name}]) (or inside "
        f"`with ember.serialization.safe_globals([{name}]):`), or load with weights_only=False, which can run "
        f"arbitrary code")


# -- the unpickler -----------------------------------------------------------------------------------------

def python3_name(module: str, name: str) -> tuple[str, str]:
    """Protocol 0-2 pickles spell some names the Python 2 way (``__builtin__.set``); map them as pickle does."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class _Unpickler(pickle._Unpickler):
    """Python's own unpickler rather than the C one: the C unpickler sizes its memo table by the largest index
    a PUT opcode names, so 13 bytes of pickle can allocate gigabytes; this one keeps the memo in a dict."""

    def __init__(self, stream, find: Callable[[str, str], Any], persistent_load: Callable[[Any], Any]) -> None:
        super().__init__(stream)
        self._find = find
        self._persistent = persistent_load

    def find_class(self, module: str, name: str):
        module, name = python3_name(module, name)
        return self._find(module, name, super().find_class)

    def persistent_load(self, pid):
        return self._persistent(pid)


def unpickle(data, find: Callable, persistent_load: Callable[[Any], Any], what: str):
    """Unpickle ``data`` (bytes or a binary stream) with ``find(module, name, import_it)`` deciding every global.

    Whatever goes wrong inside becomes an ``UnpicklingError`` naming ``what``; Ember's own errors (a refused
    global, a bad tensor record) pass through as they are.
    """
    stream = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else data
    try:
        return _Unpickler(stream, find, persistent_load).load()
    except EmberError:
        raise
    except RecursionError:
        raise CheckpointError(f"{what} is nested too deeply to load") from None
    except Exception as exc:
        raise UnpicklingError(f"{what} is not a valid pickle or cannot be rebuilt: {type(exc).__name__}: "
                              f"{exc}") from exc


# -- reading a pickle's globals without running it -------------------------------------------------------------

_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING",
               "STRING"}
_NEUTRAL_OPS = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "PROTO", "FRAME"}


def pickle_globals(data: bytes, what: str) -> list[str]:
    """The ``module.qualname`` of every global a pickle names, in order of first appearance, read from its
    opcodes (nothing is unpickled)."""
    found: dict[str, None] = {}
    memo: dict[int, Any] = {}
    recent: list = []  # the values pushed most recently; strings where known, for STACK_GLOBAL
    try:
        for op, arg, _ in pickletools.genops(data):
            name = op.name
            if name in ("GLOBAL", "INST"):
                module, _, qualname = arg.partition(" ")
                found[".".join(python3_name(module, qualname))] = None
            elif name == "STACK_GLOBAL":
                module, qualname = (recent[-2], recent[-1]) if len(recent) >= 2 else (None, None)
                if isinstance(module, str) and isinstance(qualname, str):
                    found[f"{module}.{qualname}"] = None
            elif name in ("EXT1", "EXT2", "EXT4"):
                key = copyreg._inverted_registry.get(arg)
                found[".".join(key) if key else f"<extension code {arg}>"] = None
            if name in _STRING_OPS:
                recent.append(arg.decode("latin1") if isinstance(arg, bytes) else arg)
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                recent.append(memo.get(arg))
            elif name == "MEMOIZE":
                memo[len(memo)] = recent[-1] if recent else None
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = recent[-1] if recent else None
            elif name not in _NEUTRAL_OPS:
                recent.append(None)
            del recent[:-2]
    except ValueError as exc:
        raise UnpicklingError(f"{what} is not a valid pickle: {exc}") from None
    return list(found)


def unsafe_among(names: Iterable[str], defaults: dict[str, Any]) -> list[str]:
    return [name for name in names if allowed(name, defaults) is None]
