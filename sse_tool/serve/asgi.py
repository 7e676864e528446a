"""Small ASGI helpers the stream app, the relay and the gate share.

Whole responses (``respond``), header encoding, a JSON error body, the request body as
chunks under a size limit (``RequestBody``), and ``Departure``, which notices a client
that went away while a response is being written. Nothing here knows what is served.
"""

from __future__ import annotations

import asyncio
import json


def encode_headers(headers) -> list[tuple[bytes, bytes]]:
    return [(n.encode("latin-1"), v.encode("utf-8")) for n, v in headers]


async def respond(send, status: int, headers, body: bytes) -> None:
    """A whole response, at once."""
    await send({"type": "http.response.start", "status": status,
                "headers": encode_headers(headers)})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def last_event_id(scope) -> str:
    """The request's ``Last-Event-ID`` (UTF-8, as browsers send it), "" when there is none."""
    raw = next((v for n, v in scope["headers"] if n.lower() == b"last-event-id"), b"")
    return raw.decode("utf-8", "replace").strip()


def json_error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind}}).encode()


#: the default request body limit (``--max-request-size``): a prompt with a few images
MAX_REQUEST_SIZE = 8 * 1024 * 1024


class TooLarge(Exception):
    """A request body over the server's limit."""


class ClientGone(Exception):
    """The client went away before its request body was complete."""


class RequestBody:
    """A request's body as it arrives, never more than ``limit`` bytes in all.

    ``declared_too_large`` tells from Content-Length, before anything is read (so a client
    that sent ``Expect: 100-continue`` is not even asked for it); ``chunks`` raises
    ``TooLarge`` as soon as the count passes the limit, whatever the framing, and
    ``ClientGone`` on a disconnect. ``done`` is set once the last chunk has been read.
    """

    def __init__(self, scope, receive, limit: int) -> None:
        self._receive = receive
        self.limit = limit
        self.done = asyncio.Event()
        length = dict(scope["headers"]).get(b"content-length", b"")
        #: the declared length, when it is a plain number
        self.length = int(length) if length.isdigit() else None

    @property
    def declared_too_large(self) -> bool:
        return self.length is not None and self.length > self.limit

    async def chunks(self):
        seen = 0
        try:
            while True:
                message = await self._receive()
                if message["type"] != "http.request":
                    raise ClientGone()
                chunk = message.get("body", b"")
                seen += len(chunk)
                if seen > self.limit:
                    raise TooLarge()
                if chunk:
                    yield chunk
                if not message.get("more_body", False):
                    return
        finally:
            self.done.set()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])


async def read_body(body: RequestBody, send, notes: list[str]) -> bytes | None:
    """The whole request body; None when there is none to read (answered 413 past the
    limit, or the client went away), the reason in ``notes``."""
    try:
        if body.declared_too_large:
            raise TooLarge()
        return await body.read()
    except TooLarge:
        notes.append("request body over the limit")
        await respond(send, *too_large(body.limit))
    except ClientGone:
        notes.append("client left")
    return None


def too_large(limit: int) -> tuple[int, list[tuple[str, str]], bytes]:
    """The 413 answer, as arguments of ``respond``."""
    return 413, [("Content-Type", "application/json")], json_error(
        f"the request body is over this server's limit of {limit} bytes (--max-request-size)",
        "request_too_large")


class Departure:
    """Notices the client going away (``http.disconnect``) while the response is written,
    once ``after`` (the end of the request body, which the same channel carries) is set."""

    def __init__(self, receive, after: asyncio.Event | None = None) -> None:
        self._event = asyncio.Event()
        self._task = asyncio.ensure_future(self._watch(receive, after))

    async def _watch(self, receive, after: asyncio.Event | None) -> None:
        if after is not None:
            await after.wait()
        while (await receive())["type"] != "http.disconnect":
            pass
        self._event.set()

    @property
    def happened(self) -> bool:
        return self._event.is_set()

    async def within(self, seconds: float | None) -> bool:
        """Wait ``seconds`` (None: for ever); True if the client left meanwhile."""
        try:
            await asyncio.wait_for(self._event.wait(), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    def stop(self) -> None:
        self._task.cancel()
