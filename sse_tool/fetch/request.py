"""What ``fetch`` sends: the request, its time limits, the headers added and removed."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..redact import SECRET_HEADERS
from .lazy import load_httpx

if TYPE_CHECKING:
    import httpx

#: sent unless the request sets these headers itself
DEFAULT_HEADERS = (("Accept", "text/event-stream"), ("Cache-Control", "no-cache"))


class Request(NamedTuple):
    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None


class Timeouts(NamedTuple):
    """Seconds, None for no limit. ``total`` covers every attempt and every wait."""

    connect: float | None = None
    first_byte: float | None = None
    idle: float | None = None
    total: float | None = None


def with_defaults(headers) -> tuple[tuple[str, str], ...]:
    """The request's headers plus the SSE defaults it does not set itself.

    As with curl, ``Name:`` with an empty value removes a header (a default included).
    """
    given = list(headers)
    names = {name.lower() for name, _ in given}
    out = [(n, v) for n, v in DEFAULT_HEADERS if n.lower() not in names]
    out += [(n, v) for n, v in given if v.strip()]
    return tuple(out)


def strip_secrets_across_origins(url: str):
    origin = load_httpx().URL(url)

    def hook(request: httpx.Request) -> None:
        # httpx drops Authorization on a cross-origin redirect; the API-key headers go too.
        same = (request.url.scheme, request.url.host, request.url.port) == (
            origin.scheme, origin.host, origin.port)
        if not same:
            for name in SECRET_HEADERS:
                request.headers.pop(name, None)

    return hook
