"""What the tooz driver's parts share: id mapping, error translation, options."""

from __future__ import annotations

import functools
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, ParamSpec, TypeVar

from tooz import coordination, utils

from ..errors import ConnectionFailed, LeaseholdError

P = ParamSpec("P")
R = TypeVar("R")

#: Seconds a coordinator's session lives without a heartbeat, by default.
DEFAULT_TIMEOUT = 30.0


def encode_id(value: bytes | str) -> str:
    """A tooz id as a leasehold name (reversible: see :func:`decode_id`)."""
    raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return "".join(
        chr(b) if 0x21 <= b <= 0x7E and b != 0x25 else f"%{b:02X}" for b in raw
    )


def decode_id(name: str) -> bytes:
    """The tooz id a leasehold name stands for."""
    return urllib.parse.unquote_to_bytes(name)


def translated(func: Callable[P, R]) -> Callable[P, R]:
    """Raise leasehold's failures as tooz's."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ConnectionFailed as exc:
            utils.raise_with_cause(coordination.ToozConnectionError, str(exc), cause=exc)
        except LeaseholdError as exc:
            utils.raise_with_cause(coordination.ToozError, str(exc), cause=exc)

    return wrapper


@dataclass
class Options:
    url: str
    token: str | None
    timeout: float
    request_timeout: float
    namespace: str
    extra: dict[str, Any] = field(default_factory=dict)


def parse_options(parsed_url: Any, options: dict[str, Any]) -> "Options":
    """The driver's settings from its URL and options."""
    opts = utils.collapse(options)
    https = str(opts.get("https", "")).lower() in ("1", "true", "yes")
    host = parsed_url.hostname or "127.0.0.1"
    port = parsed_url.port or 8474
    if ":" in host:
        host = f"[{host}]"
    return Options(
        url=f"{'https' if https else 'http'}://{host}:{port}",
        token=opts.get("token"),
        timeout=float(opts.get("timeout", DEFAULT_TIMEOUT)),
        request_timeout=float(opts.get("request_timeout", 10)),
        namespace=str(opts.get("namespace", "tooz")).strip("/") or "tooz",
        extra=opts,
    )
