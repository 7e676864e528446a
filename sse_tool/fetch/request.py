"""What ``fetch`` sends: the request, its time limits, the headers added and removed."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from .. import __version__
from ..redact import SECRET_HEADERS
from .lazy import load_httpx

if TYPE_CHECKING:
    import httpx

#: sent unless the request sets these headers itself
DEFAULT_HEADERS = (("Accept", "text/event-stream"), ("Cache-Control", "no-cache"))
#: sent in httpx's place (-H 'User-Agent: ...' replaces it)
USER_AGENT = f"sse-tool/{__version__}"
#: a URL that names its scheme ("http://", "ftp://"); "localhost:8000/x" does not
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: hosts reached over plain http when a URL names no scheme
_LOOPBACK = re.compile(r"(localhost|127(\.\d+){3}|\[::1\])(:\d*)?([/?#]|$)", re.I)


def with_scheme(url: str) -> str:
    """``url`` with a scheme: as given if it names one, else https://, or http:// for a
    loopback host ("localhost:8000/x"), where a local server seldom has a certificate."""
    if _SCHEME.match(url):
        return url
    return ("http://" if _LOOPBACK.match(url) else "https://") + url


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
