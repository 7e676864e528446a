"""The resumable relay (``serve --upstream URL --resumable``): a stream outlives its client.

The relay (``relay.Relay``) hands over each upstream answer that is a 200 event stream:
a task of its own reads it to the end, masks the key (``mask.Masker``), gives every event
the relay's id (``resume.Tagger``) and keeps the pieces in the ``resume.Store``; the
client that asked, and any that comes back with ``Last-Event-ID``, is sent the pieces from
where it stands, then the rest as it arrives. A client that goes away does not close the
upstream request: it is read on, once, and what it costs is not spent again. The stream
is forgotten ``--resume-ttl`` after it ended, or after its last client left (its upstream
request is then closed: nobody came back for it).

A request with ``Last-Event-ID`` never reaches the upstream. It is answered from the
buffer, or with a clear error in the provider's shape: 400 for an id this relay did not
give, 410 for a stream or event no longer buffered, 409 for a different request than the
one the stream answered, 502 when the upstream cut the stream where the client stands;
204 when the stream finished and nothing follows the client's event (an EventSource then
stops). Knowing a stream's name is what lets a client read it: names are random, never
logged (the log says ``#serial``), and the token and Host rules of ``gate.Gate`` apply.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable

import httpx

from ..errors import BadInput
from ..mask import Masker
from .asgi import encode_headers, respond
from .faults import error_body
from .resume import Buffered, Store, Tagger, parse_id


def request_key(method: str, url: str, body_digest: bytes) -> tuple:
    """What a resume must ask again: the method, the upstream URL and the body's digest."""
    return method, url, body_digest


class Hasher:
    """The digest of a request body, fed as it streams past."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()

    def update(self, chunk: bytes) -> None:
        self._sha.update(chunk)

    def digest(self) -> bytes:
        return self._sha.digest()


class Resumable:
    def __init__(self, store: Store, *, key: str | None, provider: str | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._key = key
        self._shape = "gemini" if provider == "gemini" else "anthropic" if provider == "anthropic" \
            else "openai"
        self._clock = clock
        self._changed: dict[str, asyncio.Event] = {}
        self._fills: dict[str, asyncio.Task] = {}

    @staticmethod
    def fits(response: httpx.Response) -> bool:
        """A 200 event stream in an encoding the key can be looked for in."""
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        encodings = {e.strip().lower() for e in
                     response.headers.get_list("content-encoding", split_commas=True)}
        return response.status_code == 200 and kind == "text/event-stream" and \
            encodings <= {"identity", "gzip", "deflate"}

    async def start(self, response: httpx.Response, key: tuple, headers, send,
                    notes: list[str]) -> None:
        """The upstream answer becomes a buffered stream; the client that asked reads it."""
        self._expire()
        stream = self.store.open(key, response.status_code, headers, self._clock())
        if stream is None:
            await response.aclose()
            notes.append("too many resumable streams")
            await respond(send, 503, [("Content-Type", "application/json")], error_body(
                self._shape, 503, f"sse-tool serve: {self.store.max_streams} streams are being "
                "relayed already; try again later"))
            return
        notes.append(f"resumable stream #{stream.serial}")
        self._changed[stream.name] = asyncio.Event()
        self._fills[stream.name] = asyncio.ensure_future(self._fill(stream, response))
        await self._send(stream, 0, send, notes)

    async def resume(self, last_id: str, key: tuple, send, notes: list[str]) -> None:
        """A client back with ``Last-Event-ID``: the rest of its stream, or why not."""
        parsed = parse_id(last_id)
        if parsed is None:
            return await self._refuse(send, notes, 400, f"Last-Event-ID {last_id[:80]!r} is not an "
                                      "id this relay gave: nothing to resume")
        name, n = parsed
        self._expire()
        stream = self.store.get(name)
        if stream is None:
            return await self._refuse(send, notes, 410, "that stream is not buffered here (it "
                                      "ended more than --resume-ttl ago, or was never relayed)")
        if stream.request != key:
            return await self._refuse(send, notes, 409, "Last-Event-ID names a stream that "
                                      "answered another request (method, path or body)")
        seq = stream.start_after(n)
        if seq == "unknown":
            return await self._refuse(send, notes, 400, f"the stream has no event {n} yet")
        if seq == "gone":
            return await self._refuse(send, notes, 410, f"event {n} of the stream is no longer "
                                      "buffered (--resume-buffer)")
        notes.append(f"resumed stream #{stream.serial} after event {n}")
        if seq == stream.end and stream.done == "finish":
            notes.append("nothing follows: 204")
            await respond(send, 204, [], b"")
        elif seq == stream.end and stream.done == "cut":
            await self._refuse(send, notes, 502, f"the upstream cut the stream after event "
                               f"{stream.count}: nothing more will come")
        else:
            await self._send(stream, seq, send, notes)

    # -- reading the upstream ---------------------------------------------------------------

    async def _fill(self, stream: Buffered, response: httpx.Response) -> None:
        scrubber = Masker([self._key] if self._key else [])
        tagger = Tagger(stream.name)
        how = "cut"
        try:
            async for chunk in response.aiter_bytes():  # gzip and deflate undone here
                self._add(stream, tagger.feed(scrubber.feed(chunk)))
                while self.store.held_back(stream):  # its clients lag: read no faster than they
                    await self._changed[stream.name].wait()
            pieces = tagger.feed(scrubber.close())
            if rest := tagger.close():
                pieces.append((None, rest))
            self._add(stream, pieces)
            how = "finish"
        except (httpx.HTTPError, BadInput):
            pass  # a cut, or an event past the size limit: what was whole stays buffered
        finally:
            await response.aclose()
            self._fills.pop(stream.name, None)
            self.store.finish(stream, how, self._clock())
            self._notify(stream)
            asyncio.get_running_loop().call_later(self.store.ttl, self._expire)

    def _add(self, stream: Buffered, pieces) -> None:
        if pieces:
            self.store.append(stream, pieces)
            self._notify(stream)

    def _notify(self, stream: Buffered) -> None:
        changed = self._changed.get(stream.name)
        if changed is not None:
            self._changed[stream.name] = asyncio.Event()
            changed.set()

    # -- writing to a client ------------------------------------------------------------------

    async def _send(self, stream: Buffered, seq: int, send, notes: list[str]) -> None:
        """The stream from piece ``seq`` on, live, until it ends (the relay cancels this
        when the client leaves)."""
        cursor = self.store.attach(stream, seq)
        try:
            await send({"type": "http.response.start", "status": stream.status,
                        "headers": encode_headers(stream.headers)})
            while True:
                changed = self._changed.get(stream.name)
                pieces = stream.read(seq)
                if pieces is None:
                    notes.append("the client fell behind what is buffered: cut")
                    return
                if pieces:
                    seq += len(pieces)
                    await send({"type": "http.response.body", "body": b"".join(pieces),
                                "more_body": True})
                    cursor.seq = seq
                    if self.store.size > self.store.limit:  # a held-back upstream may go on
                        self.store.trim()
                        self._notify(stream)
                    continue
                if stream.done is not None or changed is None:
                    if stream.done == "finish":
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    else:
                        notes.append("upstream cut")
                    return
                await changed.wait()
        except asyncio.CancelledError:
            if stream.done is None:
                notes.append("the upstream is read on")
            raise
        finally:
            self.store.detach(stream, cursor, self._clock())
            self._notify(stream)
            if stream.readers == 0 and stream.done is None:
                asyncio.get_running_loop().call_later(self.store.ttl, self._expire)

    async def _refuse(self, send, notes: list[str], status: int, message: str) -> None:
        notes.append(f"not resumed: {status}")
        await respond(send, status, [("Content-Type", "application/json")],
                      error_body(self._shape, status, f"sse-tool serve: {message}"))

    def _expire(self) -> None:
        """Forget the streams past their time; close the upstream requests of those that
        were still live (their clients left for good)."""
        for stream in self.store.expire(self._clock()):
            task = self._fills.pop(stream.name, None)
            if task is not None:
                task.cancel()
        for name in [n for n in self._changed if n not in self.store]:
            self._changed.pop(name).set()  # a reader still waiting sees it gone
