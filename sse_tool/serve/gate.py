"""What every request to ``sse-tool serve`` passes through before the app sees it.

An ASGI middleware around the stream app or the relay. In this order, it refuses:

1. a request target that is not a plain path (``target.check_target``), or one with both
   ``Content-Length`` and ``Transfer-Encoding`` (a smuggling attempt, RFC 9112 6.3): 400;
2. without a token, a ``Host`` that does not name the listening address (a page that
   rebinds its own DNS name to 127.0.0.1 would otherwise reach the server): 403;
3. a request with an ``Origin`` that ``--allow-origin`` does not name (a page in a
   browser, whose user did not ask for it): 403. An allowed one gets CORS headers, and
   its preflight is answered here;
4. with a token, a request without it: 401.

Every refusal is a small JSON error with one line saying why, and the app never sees the
request. It writes one access-log line per request when the response is over (status,
body bytes, seconds, and the notes an inner app leaves in ``scope["sse_tool.note"]``),
with every secret redacted (the CLI's ``warn`` escapes control characters). It knows
nothing of streams or upstreams.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable

from ..redact import Redactor
from .asgi import json_error, respond
from .target import RefusedTarget, check_target

#: the key of the list an inner app appends notes to (``cut``, ``client left``, faults)
NOTE = "sse_tool.note"
#: the names that mean this machine's loopback interface
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class Gate:
    def __init__(self, app, *, redactor: Redactor, token: str | None = None,
                 hosts: tuple[str, ...] | None = None, origins: tuple[str, ...] = (),
                 log: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``hosts``: the Host names accepted without a token (None: any)."""
        self._app = app
        self._redactor = redactor
        self._token = f"Bearer {token}".encode() if token else None
        self._hosts = None if hosts is None or token else frozenset(h.lower() for h in hosts)
        self._origins = origins
        self._log = log
        self._clock = clock

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        began = self._clock()
        notes: list[str] = []
        seen = {"status": 0, "bytes": 0}
        headers = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), value)
        origin = headers.get(b"origin", b"").decode("latin-1")
        allowed = self._allowed_origin(origin)

        async def watched(message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                if allowed:
                    message = dict(message, headers=_with_cors(message.get("headers", []), allowed))
            elif message["type"] == "http.response.body":
                seen["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            refusal = self._refusal(scope, headers, origin, allowed)
            if refusal is not None:
                status, kind, why = refusal
                notes.append(why)
                extra = [("WWW-Authenticate", "Bearer")] if status == 401 else []
                await respond(watched, status, [("Content-Type", "application/json"), *extra],
                              json_error(why, kind))
            elif _preflight(scope, headers):
                await self._preflight(watched, headers)
            else:
                await self._app(dict(scope, **{NOTE: notes}), receive, watched)
        except asyncio.CancelledError:
            # The server is stopping (Ctrl-C) and this response outlived the grace period:
            # end it as a cut, without a traceback in the log.
            notes.append("server stopped")
        finally:
            if self._log is not None:
                self._log(self._line(scope, seen, self._clock() - began, notes))

    def _refusal(self, scope, headers, origin: str, allowed: str) -> tuple[int, str, str] | None:
        """(status, error type, reason) for a request refused here, else None."""
        try:
            check_target(_target(scope))
        except RefusedTarget as exc:
            return 400, "invalid_request_error", str(exc)
        if b"content-length" in headers and b"transfer-encoding" in headers:
            # The two framings disagree on where the body ends: a relay that forwarded one
            # while the server read the other would mix requests up
            return 400, "invalid_request_error", "a request must not have both Content-Length and Transfer-Encoding"
        if self._hosts is not None:
            host = _host_name(headers.get(b"host", b"").decode("latin-1"))
            if host not in self._hosts:
                return 403, "permission_error", (
                    f"Host {host or '(none)'} is not this server's name here "
                    "(--allow-host adds one)")
        if origin and not allowed:
            return 403, "permission_error", (
                f"requests from the browser origin {origin} are not allowed (--allow-origin)")
        if _preflight(scope, headers):
            # A browser sends no credentials with a preflight; it needs an allowed Origin.
            return None if allowed else (403, "permission_error", "a CORS preflight without an Origin")
        if self._token is not None and not _same(headers.get(b"authorization", b""), self._token):
            return 401, "authentication_error", "missing or wrong token: send Authorization: Bearer TOKEN"
        return None

    def _allowed_origin(self, origin: str) -> str:
        if origin and ("*" in self._origins or origin in self._origins):
            return origin
        return ""

    async def _preflight(self, send, headers) -> None:
        await respond(send, 204, [
            ("Access-Control-Allow-Methods", "GET, POST, OPTIONS"),
            ("Access-Control-Allow-Headers",
             headers.get(b"access-control-request-headers", b"").decode("latin-1")),
            ("Access-Control-Max-Age", "600")], b"")

    def _line(self, scope, seen, seconds: float, notes: list[str]) -> str:
        client = scope.get("client") or ("-", 0)
        target = _target(scope).decode("latin-1")
        status = seen["status"] or "-"
        line = (f'{client[0]}:{client[1]} "{scope["method"]} {self._redactor.url(target)}" '
                f'{status} {seen["bytes"]}B {seconds:.2f}s')
        if notes:
            line += " " + "; ".join(notes)
        return self._redactor.text(line)


def _preflight(scope, headers) -> bool:
    return scope["method"] == "OPTIONS" and b"access-control-request-method" in headers


def _target(scope) -> bytes:
    """The request target as the client sent it."""
    target = scope.get("raw_path") or scope["path"].encode("utf-8")
    query = scope.get("query_string", b"")
    return target + b"?" + query if query else target


def _host_name(host: str) -> str:
    """The name in a Host header, without its port: ``[::1]:8000`` -> ``[::1]``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[:host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same(given: bytes, expected: bytes) -> bool:
    return hmac.compare_digest(given.strip(), expected)


def _with_cors(headers, origin: str):
    # The upstream's own CORS answer would contradict ours: ours decides.
    kept = [(n, v) for n, v in headers if n.lower() not in (
        b"access-control-allow-origin", b"access-control-allow-credentials", b"vary")]
    return kept + [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
