"""Small ASGI helpers the stream app, the relay and the gate share.

Whole responses (``respond``), header encoding, a JSON error body, reading a request
body, and ``Departure``, which notices a client that went away while a response is being
written. Nothing here knows what is served.
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


def json_error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind}}).encode()


async def read_body(receive) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


class Departure:
    """Notices the client going away (``http.disconnect``) while the response is written."""

    def __init__(self, receive) -> None:
        self._event = asyncio.Event()
        self._task = asyncio.ensure_future(self._watch(receive))

    async def _watch(self, receive) -> None:
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
