"""The relay: each request forwarded to the provider with the server's key, bytes back as they come.

Consumes ASGI requests and an upstream base URL; forwards the method, the path (appended
to the base), the query (less any credential parameter), the body and the headers that
are safe to pass on (no credentials, cookies, hop-by-hop or browser-context headers),
adds the provider's key header, and sends the response status, headers and body bytes
back, each chunk as it arrives, without parsing or re-serialising. When the client goes
away, the upstream request is closed at once. Nothing the client sent as a credential
reaches the upstream, and the key never reaches the client or the log.

Some APIs quote the key they rejected, so a relay that holds a key passes every response
header value and body chunk through ``scrub.KeyScrubber``: the key (raw or URL-encoded)
becomes a mask of the same length, and only a chunk end that could be its start waits for
the next chunk. A compressed body would hide the key from that scan, so such a relay asks
the upstream for ``Accept-Encoding: identity``; a body compressed anyway is decoded (gzip,
deflate) and sent on plain, and any other encoding is refused with a 502. A relay without
a key sends the raw bytes, compressed or not, exactly as they came.

This is the only ``serve`` module that imports httpx; it reads no environment (the CLI
passes the key) and writes no log (``gate.Gate`` does).
"""

from __future__ import annotations

import asyncio
from urllib.parse import unquote

import httpx

from ..presets import ANTHROPIC_VERSION
from ..redact import SECRET_PARAMS, is_secret_header
from .asgi import Departure, encode_headers, json_error, read_body, respond
from .gate import NOTE
from .scrub import KeyScrubber, scrub

# Request headers never forwarded: hop-by-hop ones, those the client computes for its own
# connection, and browser context that would make a provider apply its CORS rules.
_NOT_FORWARDED = frozenset({
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
    "upgrade", "host", "content-length", "expect", "origin", "referer", "forwarded",
    "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip",
})
# Any header whose name contains one of these is taken for a credential and dropped, so an
# unusual one (x-custom-auth, x-session-token) cannot slip through either.
_CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "cookie", "session", "password")
# Response headers not passed back: framing (the server re-frames), and cookies.
_NOT_RETURNED = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                           "set-cookie", "date", "server", "alt-svc"})
# The encodings httpx undoes by itself, so a body in them can be scanned for the key.
_SCANNABLE = frozenset({"identity", "gzip", "deflate"})

#: provider -> the headers that carry its key
KEY_HEADERS = {
    "openai": lambda key: [("Authorization", f"Bearer {key}")],
    "openai-responses": lambda key: [("Authorization", f"Bearer {key}")],
    "anthropic": lambda key: [("x-api-key", key)],
    "gemini": lambda key: [("x-goog-api-key", key)],
}


def forwarded_headers(headers, provider: str | None, key: str | None) -> list[tuple[str, str]]:
    """The client's headers that may go upstream, plus the key (from the server)."""
    out = []
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        if (name in _NOT_FORWARDED or name.startswith("sec-") or is_secret_header(name)
                or any(word in name for word in _CREDENTIAL_WORDS)):
            continue
        out.append((name, raw_value.decode("latin-1")))
    if key:
        # The body must be scanned for the key: ask for it uncompressed, whatever the client takes.
        out = [(n, v) for n, v in out if n != "accept-encoding"]
    names = {n for n, _ in out}
    if "accept-encoding" not in names:
        out.append(("accept-encoding", "identity"))  # else httpx would ask for gzip itself
    if provider == "anthropic" and "anthropic-version" not in names:
        out.append(("anthropic-version", ANTHROPIC_VERSION))
    if provider in KEY_HEADERS and key:
        out += KEY_HEADERS[provider](key)
    return out


def forwarded_query(query: str) -> str:
    """The query string without credential parameters (``key=``), the rest kept exact."""
    kept = [piece for piece in query.split("&") if piece and
            unquote(piece.partition("=")[0]).lower() not in SECRET_PARAMS]
    return "&".join(kept)


def returned_headers(headers, key: str | None = None) -> list[tuple[str, str]]:
    """The upstream's response headers for the client; with a key, values scrubbed and no
    Content-Encoding (the body is sent decoded)."""
    out = [(n, v) for n, v in headers if n.lower() not in _NOT_RETURNED]
    if key:
        out = [(n, scrub(v.encode("utf-8"), key).decode("utf-8")) for n, v in out
               if n.lower() != "content-encoding"]
    if not any(n.lower() == "x-accel-buffering" for n, _ in out):
        out.append(("X-Accel-Buffering", "no"))
    return out


class Relay:
    def __init__(self, upstream: str, *, provider: str | None = None, key: str | None = None) -> None:
        self._base = upstream.rstrip("/")
        self._provider = provider
        self._key = key
        self._client: httpx.AsyncClient | None = None

    def target(self, raw_path: bytes, query: bytes) -> str:
        url = self._base + raw_path.decode("latin-1")
        query_text = forwarded_query(query.decode("latin-1"))
        return f"{url}?{query_text}" if query_text else url

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        notes: list[str] = scope.get(NOTE, [])
        body = await read_body(receive)
        if self._client is None:
            # Created here, on the server's event loop. No read timeout: a model may think
            # for minutes, and a client that gives up closes the upstream request anyway.
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30.0))
        request = self._client.build_request(
            scope["method"], self.target(scope.get("raw_path") or scope["path"].encode(),
                                         scope.get("query_string", b"")),
            headers=forwarded_headers(scope["headers"], self._provider, self._key),
            content=body or None,
        )
        gone = Departure(receive)
        pump = asyncio.ensure_future(self._pump(request, send, notes))
        left = asyncio.ensure_future(gone.within(None))
        try:
            await asyncio.wait({pump, left}, return_when=asyncio.FIRST_COMPLETED)
            if not pump.done():
                notes.append("client left: upstream request closed")
                pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
        finally:
            left.cancel()
            gone.stop()

    async def _pump(self, request: httpx.Request, send, notes: list[str]) -> None:
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            notes.append(f"upstream timed out: {type(exc).__name__}")
            await respond(send, 504, [("Content-Type", "application/json")],
                          json_error("the upstream did not answer in time", "relay_error"))
            return
        except httpx.HTTPError as exc:
            notes.append(f"upstream failed: {type(exc).__name__}: {exc}")
            await respond(send, 502, [("Content-Type", "application/json")],
                          json_error(f"cannot reach the upstream: {type(exc).__name__}", "relay_error"))
            return
        try:
            if self._key:
                await self._scrubbed(response, send, notes)
            else:
                await self._raw(response, send, notes)
        finally:
            await response.aclose()

    async def _raw(self, response: httpx.Response, send, notes: list[str]) -> None:
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": encode_headers(returned_headers(response.headers.multi_items()))})
        try:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError as exc:
            # The upstream cut its body: cut ours the same way (return without ending it).
            notes.append(f"upstream cut: {type(exc).__name__}")
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _scrubbed(self, response: httpx.Response, send, notes: list[str]) -> None:
        encodings = [e.strip().lower() for e in
                     response.headers.get_list("content-encoding", split_commas=True)]
        unscannable = [e for e in encodings if e not in _SCANNABLE]
        if unscannable:
            notes.append(f"upstream sent Content-Encoding {', '.join(unscannable)}: refused")
            await respond(send, 502, [("Content-Type", "application/json")], json_error(
                f"the upstream sent a body in Content-Encoding {', '.join(unscannable)}, which "
                "the relay cannot check for its key", "relay_error"))
            return
        scrubber = KeyScrubber(self._key)
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": encode_headers(returned_headers(response.headers.multi_items(),
                                                               self._key))})
        try:
            async for chunk in response.aiter_bytes():  # gzip and deflate undone here
                if out := scrubber.feed(chunk):
                    await send({"type": "http.response.body", "body": out, "more_body": True})
        except httpx.HTTPError as exc:
            # Cut ours too. What the scrubber holds may be the start of the key, and a cut
            # body is incomplete anyway: it is dropped.
            notes.append(f"upstream cut: {type(exc).__name__}")
            return
        await send({"type": "http.response.body", "body": scrubber.close(), "more_body": False})
