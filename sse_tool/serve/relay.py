"""The relay: each request forwarded to the provider with the server's key, bytes back as they come.

Consumes ASGI requests (already past ``gate.Gate``, so the target is a plain path) and an
upstream base URL. The upstream's scheme, host and port are fixed when the relay is made
and never come from a request: the URL is the base URL with its path replaced by the base
path plus the request's path (which must be under an ``--allow-path`` prefix), and the
query less any credential parameter. It forwards the method, that URL, the body (streamed
as it arrives, never more than the size limit: 413 past it) and the headers that are safe
to pass on (no credentials, cookies, hop-by-hop or browser-context headers), adds the
provider's key header, and sends the response status, headers and body bytes back, each
chunk as it arrives, without parsing or re-serialising. When the client goes away, the
upstream request is closed at once. Nothing the client sent as a credential reaches the
upstream, and the key never reaches the client or the log.

Some APIs quote the key they rejected, so a relay that holds a key passes every response
header (name and value) and body chunk through ``mask.Masker``: the key, in each form it
travels in (raw, URL-encoded, JSON-escaped), becomes a mask of the same length. A
compressed body would hide the key from that scan, so such a relay asks the upstream for
``Accept-Encoding: identity``; a body compressed anyway is decoded (gzip, deflate) and
sent on plain, and any other encoding is refused with a 502. A relay without a key sends
the raw bytes, compressed or not, exactly as they came.

With a ``record.Recorder`` (record and hybrid modes), each exchange is also written as a
recording: the request as sent upstream, the response head, and each body chunk as it
arrives (decoded, before masking: the recorder masks with the same key). Such a relay
asks for an uncompressed body too, with or without a key. Headers named
``X-Sse-Tool-...`` (test names, faults) are the local server's and never go upstream.

This is the only ``serve`` module that imports httpx; it reads no environment (the CLI
passes the key) and writes no log (``gate.Gate`` does).
"""

from __future__ import annotations

import asyncio
from http.cookiejar import CookieJar
from urllib.parse import unquote

import httpx

from ..mask import Masker, mask
from ..presets import ANTHROPIC_VERSION
from ..redact import SECRET_PARAMS, is_secret_header
from .asgi import (MAX_REQUEST_SIZE, ClientGone, Departure, RequestBody, TooLarge, encode_headers,
                   json_error, last_event_id, read_body, respond, too_large)
from .gate import NOTE
from .resumable import Hasher, request_key
from .target import AllowedPaths, PathNotAllowed, RefusedTarget, check_target

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
                           "set-cookie", "set-cookie2", "date", "server", "alt-svc"})
# The encodings httpx undoes by itself, so a body in them can be scanned for the key.
_SCANNABLE = frozenset({"identity", "gzip", "deflate"})

#: provider -> the path prefixes relayed when the upstream URL has no path of its own
DEFAULT_PATHS = {
    "openai": ("/v1/",), "openai-responses": ("/v1/",), "anthropic": ("/v1/",),
    "gemini": ("/v1beta/", "/v1/", "/v1alpha/"),
}
#: provider -> the headers that carry its key
KEY_HEADERS = {
    "openai": lambda key: [("Authorization", f"Bearer {key}")],
    "openai-responses": lambda key: [("Authorization", f"Bearer {key}")],
    "anthropic": lambda key: [("x-api-key", key)],
    "gemini": lambda key: [("x-goog-api-key", key)],
}


def default_paths(provider: str | None, base_path: str) -> tuple[str, ...]:
    """What ``--allow-path`` is unless given: the provider's API root for a bare host; all
    of it under a base path (which confines the relay already) or without a provider."""
    if base_path.strip("/") or provider not in DEFAULT_PATHS:
        return ("/",)
    return DEFAULT_PATHS[provider]


def forwarded_headers(headers, provider: str | None, key: str | None,
                      length: int | None = None, *, plain: bool = False) -> list[tuple[str, str | bytes]]:
    """The client's headers that may go upstream, plus the key (from the server), and the
    body's length when the client declared it (the body itself is streamed). ``plain``
    asks for an uncompressed body even without a key (to record it). A client's value
    stays the bytes it sent (``Café`` in UTF-8, obs-text): httpx sends bytes as they are,
    where a str would have to be ASCII."""
    out: list[tuple[str, str | bytes]] = []
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        if (name in _NOT_FORWARDED or name.startswith(("sec-", "x-sse-tool-")) or is_secret_header(name)
                or any(word in name for word in _CREDENTIAL_WORDS)):
            continue
        out.append((name, bytes(raw_value)))
    if length is not None:
        out.append(("content-length", str(length)))
    if key or plain:
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
        # A name is case-insensitive, and httpx hands it over lower-cased: the key in it
        # is found whatever its case
        out = [(_masked(n, key, ignore_case=True), _masked(v, key)) for n, v in out
               if n.lower() != "content-encoding"]
    if not any(n.lower() == "x-accel-buffering" for n, _ in out):
        out.append(("X-Accel-Buffering", "no"))
    return out


async def _teed(chunks, take, hasher=None):
    """The request body's chunks as they go upstream, a copy of each to the recording (and
    to the digest a resumable stream is known by)."""
    async for chunk in chunks:
        if take is not None:
            take.request_chunk(chunk)
        if hasher is not None:
            hasher.update(chunk)
        yield chunk


def _as_text(headers) -> list[tuple[str, str]]:
    """Headers for a recording, which is text: a client's bytes read as UTF-8 (U+FFFD for
    what is not)."""
    return [(n, v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for n, v in headers]


def _masked(text: str, key: str, ignore_case: bool = False) -> str:
    return mask(text.encode("utf-8", "surrogateescape"), [key],
                ignore_case=ignore_case).decode("utf-8", "surrogateescape")


class _NoCookies(CookieJar):
    """A cookie jar that keeps nothing. The relay's one HTTP client serves every client: a
    cookie the upstream set in answer to one must not go upstream with the next one's
    requests (the client's own cookies are not forwarded either)."""

    def set_cookie(self, cookie) -> None:
        pass

    def extract_cookies(self, response, request) -> None:
        pass


class Relay:
    def __init__(self, upstream: str, *, provider: str | None = None, key: str | None = None,
                 paths: tuple[str, ...] | None = None,
                 max_request_size: int = MAX_REQUEST_SIZE, recorder=None, resumable=None) -> None:
        self.upstream = httpx.URL(upstream)
        #: a ``record.Recorder``: each exchange is written as a recording
        self.recorder = recorder
        #: a ``resumable.Resumable``: event streams are buffered, and resumed from there
        self.resumable = resumable
        self._base_path = self.upstream.raw_path.split(b"?")[0].rstrip(b"/")
        self._provider = provider
        self._key = key
        self.paths = AllowedPaths(paths or default_paths(provider, self._base_path.decode()))
        self._limit = max_request_size
        self._client: httpx.AsyncClient | None = None

    def target(self, target: bytes) -> httpx.URL:
        """The upstream URL for a request target: only its path and query come from the
        client, and the path goes under the base path. ``RefusedTarget`` for a target that
        is not a plain path, ``PathNotAllowed`` outside the allowed prefixes."""
        raw_path, _, query = target.partition(b"?")
        if not self.paths.allows(check_target(target)):
            raise PathNotAllowed(f"{raw_path.decode('ascii', 'replace')} is not under a path this "
                                 f"relay forwards ({self.paths.describe()}; --allow-path adds one)")
        query = forwarded_query(query.decode("latin-1")).encode("latin-1")
        url = self.upstream.copy_with(raw_path=self._base_path + raw_path + (b"?" + query if query else b""))
        # The scheme, host and port are the upstream's whatever the path held: checked
        # again here, so that no later change to the rules above can send the key elsewhere.
        if (url.scheme, url.host, url.port) != (self.upstream.scheme, self.upstream.host,
                                                self.upstream.port) or \
                not url.raw_path.startswith(self._base_path + b"/"):
            raise RefusedTarget("the request would leave the upstream")
        return url

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        notes: list[str] = scope.get(NOTE, [])
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
        query = scope.get("query_string", b"")
        try:
            url = self.target(raw_path + (b"?" + query if query else b""))
        except (RefusedTarget, PathNotAllowed) as exc:
            notes.append("refused: " + str(exc))
            status, kind = (403, "permission_error") if isinstance(exc, PathNotAllowed) else (
                400, "invalid_request_error")
            await respond(send, status, [("Content-Type", "application/json")], json_error(str(exc), kind))
            return
        body = RequestBody(scope, receive, self._limit)
        if body.declared_too_large:
            notes.append("request body over the limit")
            await respond(send, *too_large(self._limit))
            return
        if self._client is None:
            # Created here, on the server's event loop. No read timeout: a model may think
            # for minutes, and a client that gives up closes the upstream request anyway.
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30.0), cookies=_NoCookies())
        has_body = body.length is not None or any(
            n.lower() == b"transfer-encoding" for n, _ in scope["headers"])
        last_id = last_event_id(scope) if self.resumable is not None else ""
        take = hasher = None
        if last_id:  # answered from the buffer: nothing goes upstream
            work = self._resume(scope["method"], url, body, last_id, send, notes)
        else:
            headers = forwarded_headers(scope["headers"], self._provider, self._key, body.length,
                                        plain=self.recorder is not None or self.resumable is not None)
            take = self.recorder.take(scope["method"], str(url), _as_text(headers)) if self.recorder else None
            hasher = Hasher() if self.resumable is not None else None
            request = self._client.build_request(
                scope["method"], url, headers=headers,
                content=_teed(body.chunks(), take, hasher) if has_body else None,
            )
            work = self._pump(request, send, notes, take, hasher)
        if not has_body and not last_id:
            body.done.set()
        gone = Departure(receive, after=body.done)
        pump = asyncio.ensure_future(work)
        left = asyncio.ensure_future(gone.within(None))
        try:
            await asyncio.wait({pump, left}, return_when=asyncio.FIRST_COMPLETED)
            if not pump.done():
                notes.append("client left")  # (the pump says what became of the upstream)
                pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
        finally:
            left.cancel()
            gone.stop()
            if take is not None:
                take.discard()  # what did not end (the client left) is not kept

    async def _resume(self, method: str, url: httpx.URL, body: RequestBody, last_id: str, send,
                      notes: list[str]) -> None:
        data = await read_body(body, send, notes)
        if data is None:
            return
        digest = Hasher()
        digest.update(data)
        key = request_key(method, str(url), digest.digest())
        await self.resumable.resume(last_id, key, send, notes)

    async def _pump(self, request: httpx.Request, send, notes: list[str], take=None,
                    hasher=None) -> None:
        try:
            response = await self._client.send(request, stream=True)
        except asyncio.CancelledError:
            notes.append("upstream request closed")
            raise
        except TooLarge:
            notes.append("request body over the limit: upstream request abandoned")
            await respond(send, *too_large(self._limit))
            return
        except ClientGone:
            notes.append("client left before its request body was complete")
            return
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
        if hasher is not None and self.resumable.fits(response):  # the stream outlives this client
            headers = [(n, v) for n, v in returned_headers(response.headers.multi_items(), self._key)
                       if n.lower() != "content-encoding"]
            key = request_key(request.method, str(request.url), hasher.digest())
            await self.resumable.start(response, key, headers, send, notes)
            return
        try:
            if take is not None:
                take.response(response.http_version, response.status_code,
                              response.reason_phrase, response.headers.multi_items())
                if take.failed:
                    notes.append(take.failed)
            if self._key or take is not None:
                await self._scrubbed(response, send, notes, take)
            else:
                await self._raw(response, send, notes)
        except asyncio.CancelledError:
            notes.append("upstream request closed")
            raise
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

    async def _scrubbed(self, response: httpx.Response, send, notes: list[str], take=None) -> None:
        encodings = [e.strip().lower() for e in
                     response.headers.get_list("content-encoding", split_commas=True)]
        unscannable = [e for e in encodings if e not in _SCANNABLE]
        if unscannable:
            notes.append(f"upstream sent Content-Encoding {', '.join(unscannable)}: refused")
            await respond(send, 502, [("Content-Type", "application/json")], json_error(
                f"the upstream sent a body in Content-Encoding {', '.join(unscannable)}, which "
                "the relay cannot check for its key", "relay_error"))
            return
        scrubber = Masker([self._key] if self._key else [])
        headers = [(n, v) for n, v in returned_headers(response.headers.multi_items(), self._key)
                   if n.lower() != "content-encoding"]  # the body goes out decoded
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": encode_headers(headers)})
        try:
            async for chunk in response.aiter_bytes():  # gzip and deflate undone here
                if take is not None:
                    take.chunk(chunk)
                if out := scrubber.feed(chunk):
                    await send({"type": "http.response.body", "body": out, "more_body": True})
        except httpx.HTTPError as exc:
            # Cut ours too. What the scrubber holds may be the start of the key, and a cut
            # body is incomplete anyway: it is dropped.
            notes.append(f"upstream cut: {type(exc).__name__}")
            self._kept(take, notes, "truncated", f"upstream cut: {type(exc).__name__}")
            return
        await send({"type": "http.response.body", "body": scrubber.close(), "more_body": False})
        self._kept(take, notes)

    @staticmethod
    def _kept(take, notes: list[str], outcome: str | None = None, detail: str = "") -> None:
        if take is not None and (path := take.end(outcome, detail)) is not None:
            notes.append(f"recorded {path.name}")
