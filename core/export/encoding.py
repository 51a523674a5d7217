"""An exported program as JSON, and back: only known kinds of values, each checked as it is read.

JSON's null, booleans, integers, finite floats and strings stand for themselves and a JSON array for a tuple;
everything else is an object tagged ``"$"``: ``list``, ``dict`` (key/value pairs, so keys keep their types),
``float`` (nan, inf), ``ref`` (a tensor's slot), ``sym`` (a size following dynamic dimensions), ``unfitted``,
``dtype``, ``device`` and ``program_device``. Reading builds nothing else, so a hostile file can name no code.
"""
from __future__ import annotations

import math

from ..dispatch.schema.device import device as Device
from ..dispatch.schema.dtypes import dtype as DType, from_name
from .dims import SymbolicSize, Unfitted
from .errors import ExportError, ExportLoadError
from .graph import PROGRAM_DEVICE, Ref

MAX_DEPTH = 32


def encode(value, where: str):
    """``value`` as JSON data; ``where`` names it in the error for a value that cannot be saved."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if isinstance(value, Ref):
        return {"$": "ref", "v": value.slot}
    if isinstance(value, SymbolicSize):
        return {"$": "sym", "v": [[list(symbols), coef] for symbols, coef in value.terms]}
    if isinstance(value, Unfitted):
        return {"$": "unfitted", "v": value.name}
    if value is PROGRAM_DEVICE:
        return {"$": "program_device"}
    if isinstance(value, DType):
        return {"$": "dtype", "v": value.name}
    if isinstance(value, Device):
        return {"$": "device", "v": str(value)}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return [encode(v, where) for v in value]
    if isinstance(value, list):
        return {"$": "list", "v": [encode(v, where) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "v": [[encode(k, where), encode(v, where)] for k, v in value.items()]}
    raise ExportError(f"ember.export.save: {where} holds a {type(value).__name__} ({value!r}), which an exported "
                      f"program cannot save (numbers, strings, None, dtypes, devices and tuples, lists and dicts "
                      f"of them can)")


def decode(data, where: str, depth: int = 0):
    """The value ``encode`` wrote; anything else raises ``ExportLoadError`` naming ``where``."""
    if depth > MAX_DEPTH:
        raise ExportLoadError(f"{where}: values are nested more than {MAX_DEPTH} deep")
    if data is None or isinstance(data, (bool, int, str)):
        return data
    if isinstance(data, float):
        if not math.isfinite(data):
            raise ExportLoadError(f"{where}: a non-finite float written as a plain number")
        return data
    if isinstance(data, list):
        return tuple(decode(v, where, depth + 1) for v in data)
    if not isinstance(data, dict) or set(data) - {"$", "v"} or not isinstance(data.get("$"), str):
        raise ExportLoadError(f"{where}: {_short(data)} is not a value an exported program holds")
    tag, v = data["$"], data.get("v")
    if tag == "program_device":
        return PROGRAM_DEVICE
    if tag == "ref":
        return Ref(slot(v, where))
    if tag == "float":
        if v not in ("nan", "inf", "-inf"):
            raise ExportLoadError(f"{where}: bad float {_short(v)}")
        return float(v)
    if tag == "list":
        return [decode(x, where, depth + 1) for x in _array(v, where)]
    if tag == "dict":
        pairs = [_array(pair, where) for pair in _array(v, where)]
        if any(len(pair) != 2 for pair in pairs):
            raise ExportLoadError(f"{where}: a dict's entries must be [key, value] pairs")
        result = {}
        for key, value in pairs:
            key = decode(key, where, depth + 1)
            if not isinstance(key, (str, int, bool, type(None))):
                raise ExportLoadError(f"{where}: a dict key must be a string or a number, not {_short(key)}")
            result[key] = decode(value, where, depth + 1)
        return result
    if tag == "sym":
        return symbolic(v, where)
    if tag == "unfitted":
        return Unfitted(text(v, where))
    if tag == "dtype":
        try:
            return from_name(text(v, where))
        except TypeError:
            raise ExportLoadError(f"{where}: unknown dtype {_short(v)}") from None
    if tag == "device":
        try:
            return Device(text(v, where))
        except Exception as error:  # noqa: BLE001  any refusal of the device string
            raise ExportLoadError(f"{where}: {error}") from None
    raise ExportLoadError(f"{where}: unknown value kind {_short(tag)}")


def symbolic(v, where: str) -> SymbolicSize:
    terms = []
    for term in _array(v, where):
        term = _array(term, where)
        if len(term) != 2 or not isinstance(term[1], int) or isinstance(term[1], bool):
            raise ExportLoadError(f"{where}: a symbolic size's terms are [symbols, coefficient] pairs")
        symbols = tuple(text(s, where) for s in _array(term[0], where))
        if any(not s.isidentifier() for s in symbols):
            raise ExportLoadError(f"{where}: symbol names are identifiers, not {_short(symbols)}")
        terms.append((symbols, term[1]))
    if not terms or len(terms) > 16 or any(len(symbols) > 8 for symbols, _ in terms):
        raise ExportLoadError(f"{where}: a symbolic size has 1 to 16 terms of at most 8 symbols")
    return SymbolicSize(tuple(terms))


def slot(v, where: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2 ** 31:
        raise ExportLoadError(f"{where}: {_short(v)} is not a value slot")
    return v


def text(v, where: str) -> str:
    if not isinstance(v, str) or len(v) > 4096:
        raise ExportLoadError(f"{where}: expected a string, got {_short(v)}")
    return v


def _array(v, where: str) -> list:
    if not isinstance(v, list):
        raise ExportLoadError(f"{where}: expected a JSON array, got {_short(v)}")
    return v


def _short(value) -> str:
    text_ = repr(value)
    return text_ if len(text_) <= 80 else text_[:77] + "..."


__all__ = ["encode", "decode", "symbolic", "slot", "text", "MAX_DEPTH"]
