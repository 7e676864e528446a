"""What every request to ``sse-tool serve`` passes through: token, CORS, the access log.

An ASGI middleware around the stream app or the relay. It answers CORS preflights and
requests without the ``--token`` itself, and writes one access-log line per request when
the response is over (status, body bytes, seconds, and a note the inner app leaves in
``scope["sse_tool.note"]``), with every secret redacted. It knows nothing of streams or
upstreams.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable

from ..redact import Redactor
from .asgi import json_error, respond

#: the key of the list an inner app appends notes to (``cut``, ``client left``, faults)
NOTE = "sse_tool.note"


class Gate:
    def __init__(self, app, *, redactor: Redactor, token: str | None = None,
                 cors_origins: tuple[str, ...] = (), log: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._app = app
        self._redactor = redactor
        self._token = f"Bearer {token}".encode() if token else None
        self._origins = cors_origins
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
        origin = self._allowed_origin(headers.get(b"origin", b"").decode("latin-1"))

        async def watched(message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                if origin:
                    message = dict(message, headers=_with_cors(message.get("headers", []), origin))
            elif message["type"] == "http.response.body":
                seen["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
                await self._preflight(watched, origin, headers)
            elif self._token is not None and not _same(headers.get(b"authorization", b""), self._token):
                notes.append("no valid token")
                await respond(watched, 401, [("Content-Type", "application/json"),
                                             ("WWW-Authenticate", "Bearer")],
                              json_error("missing or wrong token: send Authorization: Bearer TOKEN",
                                         "authentication_error"))
            else:
                await self._app(dict(scope, **{NOTE: notes}), receive, watched)
        except asyncio.CancelledError:
            # The server is stopping (Ctrl-C) and this response outlived the grace period:
            # end it as a cut, without a traceback in the log.
            notes.append("server stopped")
        finally:
            if self._log is not None:
                self._log(self._line(scope, seen, self._clock() - began, notes))

    def _allowed_origin(self, origin: str) -> str:
        if origin and ("*" in self._origins or origin in self._origins):
            return origin
        return ""

    async def _preflight(self, send, origin: str, headers) -> None:
        allow = []
        if origin:
            allow = [("Access-Control-Allow-Methods", "GET, POST, OPTIONS"),
                     ("Access-Control-Allow-Headers",
                      headers.get(b"access-control-request-headers", b"").decode("latin-1")),
                     ("Access-Control-Max-Age", "600")]
        await respond(send, 204 if origin else 403, allow, b"")

    def _line(self, scope, seen, seconds: float, notes: list[str]) -> str:
        client = scope.get("client") or ("-", 0)
        target = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        status = seen["status"] or "-"
        line = (f'{client[0]}:{client[1]} "{scope["method"]} {self._redactor.url(target)}" '
                f'{status} {seen["bytes"]}B {seconds:.2f}s')
        if notes:
            line += " " + "; ".join(notes)
        return self._redactor.text(line)


def _same(given: bytes, expected: bytes) -> bool:
    return hmac.compare_digest(given.strip(), expected)


def _with_cors(headers, origin: str):
    # The upstream's own CORS answer would contradict ours: ours decides.
    kept = [(n, v) for n, v in headers if n.lower() not in (
        b"access-control-allow-origin", b"access-control-allow-credentials", b"vary")]
    return kept + [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
