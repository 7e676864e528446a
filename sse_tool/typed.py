"""Values read from input, type-checked where they are read.

Input is JSON that anyone may have written: a field may hold any JSON type. Code that
needs a string, a number or an object reads the field with ``field``, which returns it,
the default when the field is absent or null, or raises ``BadInput`` naming the field and
both types (the caller that knows the byte offset adds it: ``Normalizer``, ``RecordReader``).
"""

from __future__ import annotations

from .errors import BadInput

_NAMES = {str: "a string", int: "an integer", float: "a number", dict: "an object",
          list: "an array", bool: "true or false"}
REQUIRED = object()


def json_type(value) -> str:
    """The JSON type of a parsed value, in words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", dict: "an object", list: "an array"}.get(type(value), type(value).__name__)


def field(obj: dict, key: str, kind: type | tuple, default=None, where: str | None = None):
    """``obj[key]`` if it is of type ``kind``; ``default`` if absent or null (``REQUIRED``:
    a missing field is bad input too). ``int`` never accepts a boolean."""
    value = obj.get(key)
    if value is None:
        if default is REQUIRED:
            raise BadInput(f"'{where or key}' is missing")
        return default
    if isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float, (int, float))):
        return value
    kinds = kind if isinstance(kind, tuple) else (kind,)
    want = " or ".join(_NAMES.get(k, k.__name__) for k in kinds)
    raise BadInput(f"'{where or key}' must be {want}, not {json_type(value)}")
