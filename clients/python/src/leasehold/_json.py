"""The JSON the server speaks, as types, and readers of its fields.

``JSON`` is any JSON value and ``JSONObject`` a JSON object: what metadata,
capabilities and an event's data are. The readers take a field of an answer
and check its type, so a record never holds a value of the wrong kind.
"""

from __future__ import annotations

from typing import TypeAlias, Union

#: Any JSON value.
JSON: TypeAlias = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]
#: A JSON object.
JSONObject: TypeAlias = dict[str, JSON]


def as_object(value: JSON) -> JSONObject:
    """``value`` as a JSON object (an empty one if it is anything else)."""
    return value if isinstance(value, dict) else {}


def text(doc: JSONObject, name: str, default: str = "") -> str:
    """A text field, or ``default``."""
    value = doc.get(name)
    return value if isinstance(value, str) else default


def opt_text(doc: JSONObject, name: str) -> str | None:
    """A text field, or ``None``."""
    value = doc.get(name)
    return value if isinstance(value, str) else None


def integer(doc: JSONObject, name: str, default: int = 0) -> int:
    """An integer field (also one sent as decimal text), or ``default``."""
    value = opt_int(doc, name)
    return default if value is None else value


def opt_int(doc: JSONObject, name: str) -> int | None:
    """An integer field (also one sent as decimal text), or ``None``."""
    value = doc.get(name)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def flag(doc: JSONObject, name: str, default: bool = False) -> bool:
    """A boolean field, or ``default``."""
    value = doc.get(name)
    return value if isinstance(value, bool) else default


def opt_float(doc: JSONObject, name: str) -> float | None:
    """A number field, or ``None``."""
    value = doc.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def opt_object(doc: JSONObject, name: str) -> JSONObject | None:
    """An object field, or ``None``."""
    value = doc.get(name)
    return value if isinstance(value, dict) else None


def objects(doc: JSONObject, name: str) -> list[JSONObject]:
    """The objects of an array field (``[]`` if there is none)."""
    value = doc.get(name)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def texts(doc: JSONObject, name: str) -> list[str]:
    """The texts of an array field (``[]`` if there is none)."""
    value = doc.get(name)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]
