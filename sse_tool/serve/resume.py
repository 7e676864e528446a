"""The resumable relay's memory: each relayed stream's events under an id, in a bounded buffer.

Consumes the masked bytes of an upstream event stream (``Tagger.feed``) and the clock (each
call is given ``now``); produces the same bytes with the relay's id added to every event,
cut into pieces that end with an event (or with other whole blocks), kept in ``Buffered``
streams that a ``Store`` holds, bounded in bytes, streams and time. Sans-I/O: the asyncio
side (``resumable``) waits, reads the upstream and writes to clients.

Ids. A stream is named by 128 random bits (``secrets``), never by a counter: knowing
one's own stream id says nothing about another's. Every event gets an ``id:`` line,
``STREAM:N`` (N counting events from 1), added just before the blank line that ends it
and ended as that blank line is (CRLF, CR or LF),
after any id line of the upstream's own (the last id line of a block is the one in force,
so the relay's is what a client reconnects with). Nothing else in the bytes changes. Only
whole blocks leave the tagger: the line may only be added once a block is known to be an
event, which its blank line tells.

Bounds. ``limit`` is the bytes all streams may buffer together: past it, the oldest piece
of the largest stream goes, but never a piece a connected client has not been sent yet.
When only such pieces are left, the stream whose clients lag is ``held_back``: its
upstream is not read until they catch up (as a plain relay reads no faster than its
client), so the store exceeds its limit by no more than the last chunk each stream read.
A stream ends ``ttl`` seconds after its upstream finished, or after its last client left
(the upstream request is then abandoned: nobody came back for it). At most
``max_streams`` are held; a new one past that replaces the oldest finished one, or is
refused. The buffer holds what clients were sent: the key is masked before anything
reaches it.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

from ..sse import DEFAULT_MAX_EVENT_SIZE, SseEvent, SseParser

#: what a relay id looks like: a stream name (22 URL-safe characters, 128 bits) and a number
ID = re.compile(r"([A-Za-z0-9_-]{22}):([0-9]{1,15})")
MAX_STREAMS = 1000


def parse_id(text: str) -> tuple[str, int] | None:
    """(stream name, event number) of an id this relay gives, else None."""
    m = ID.fullmatch(text.strip())
    return (m.group(1), int(m.group(2))) if m else None


class Tagger:
    """An event stream's bytes in; pieces out, ``(n, bytes)``: whole blocks with the relay's
    id added to each event, one piece per event (n: its number) and one for the whole
    blocks after the last event (n: None)."""

    def __init__(self, name: str, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self._prefix = b"id: " + name.encode("ascii") + b":"
        self._parser = SseParser(max_event_size=max_event_size)
        self._held = bytearray()
        self._base = 0  # stream offset of _held[0]
        #: events tagged so far
        self.count = 0

    def feed(self, chunk: bytes) -> list[tuple[int | None, bytes]]:
        held = self._held
        held += chunk
        events = self._parser.feed(chunk)
        base, pos, out = self._base, self._base, []
        for event in events:
            if type(event) is not SseEvent:
                continue
            end = event.end - base
            blank = 2 if held[end:end + 2] == b"\r\n" else 1  # the line end of the blank line
            # The id line ends as the block's lines do: an LF among CRLF lines is a line
            # end to a spec parser, but splitters that look for the block's own blank
            # line (the anthropic SDK's, CRLF CRLF) never see the event end.
            line_end = held[end:end + blank]
            self.count += 1
            out.append((self.count, b"".join((
                held[pos - base:end], self._prefix, b"%d" % self.count, line_end, line_end))))
            pos = base + end + blank
        sealed = max(self._parser.sealed, pos)
        if sealed > pos:
            out.append((None, bytes(held[pos - base:sealed - base])))
        del held[:sealed - base]
        self._base = sealed
        return out

    def close(self) -> bytes:
        """What is left at a clean end of the upstream body (no whole block: sent as it came)."""
        rest = bytes(self._held)
        self._held.clear()
        return rest


@dataclass(eq=False)
class Buffered:
    """One relayed stream: its response head, its pieces since the oldest kept, its state.

    Pieces have sequence numbers from 0; the oldest go first (``first`` is the oldest
    kept). A list with a moving start keeps reading the newest pieces as cheap as they are
    small, whatever the length of the stream."""

    name: str
    #: a small number for the log (the name is a secret)
    serial: int
    #: what the client asked (method, upstream URL, body digest): a resume must ask the same
    request: tuple
    status: int
    headers: list
    created: float
    #: the pieces' data from ``_lo`` on, oldest first; ``first`` is the sequence number of
    #: the oldest kept
    _data: list = field(default_factory=list)
    _lo: int = 0
    first: int = 0
    size: int = 0
    #: the sequence number of each kept event's piece, from ``_ev_lo`` on; the first kept
    _events: list = field(default_factory=list)
    _ev_lo: int = 0
    first_event: int = 1
    #: events so far
    count: int = 0
    #: None while the upstream goes on; then "finish" or "cut"
    done: str | None = None
    finished: float | None = None
    #: where each client being sent this stream stands (the next sequence number it
    #: needs), and since when none has been connected
    cursors: list = field(default_factory=list)
    alone_since: float | None = None
    removed: bool = False

    @property
    def readers(self) -> int:
        return len(self.cursors)

    @property
    def needed(self) -> int:
        """The oldest sequence number a connected client still needs."""
        return min((c.seq for c in self.cursors), default=self.end)

    @property
    def end(self) -> int:
        """The sequence number the next piece will have."""
        return self.first + len(self._data) - self._lo

    def start_after(self, n: int) -> int | str:
        """The sequence number of the first piece after event ``n``, or why the stream
        cannot go on from there: ``gone`` (no longer buffered) or ``unknown``."""
        if n < 1 or n > self.count:
            return "unknown"
        if n < self.first_event:
            return "gone"
        return self._events[self._ev_lo + n - self.first_event] + 1

    def read(self, seq: int) -> list[bytes] | None:
        """The pieces from sequence number ``seq`` on (None: some of them are gone)."""
        if seq < self.first:
            return None
        return self._data[self._lo + seq - self.first:]

    def _append(self, n: int | None, data: bytes) -> None:
        if n is not None:
            self._events.append(self.end)
            self.count += 1
        self._data.append(data)
        self.size += len(data)

    def _drop_oldest(self) -> int:
        data = self._data[self._lo]
        self._data[self._lo] = b""
        self._lo += 1
        self.first += 1
        self.size -= len(data)
        events = self._events
        while self._ev_lo < len(events) and events[self._ev_lo] < self.first:
            self._ev_lo += 1
            self.first_event += 1
        if self._lo > 64 and self._lo * 2 > len(self._data):  # compact now and then
            del self._data[:self._lo]
            self._lo = 0
        if self._ev_lo > 64 and self._ev_lo * 2 > len(events):
            del events[:self._ev_lo]
            self._ev_lo = 0
        return len(data)


class Cursor:
    """Where one client stands in a stream: the next piece it needs."""

    __slots__ = ("seq",)

    def __init__(self, seq: int) -> None:
        self.seq = seq


class Store:
    """The streams a resumable relay holds, within ``limit`` bytes and ``ttl`` seconds."""

    def __init__(self, limit: int, ttl: float, max_streams: int = MAX_STREAMS) -> None:
        self.limit = limit
        self.ttl = ttl
        self.max_streams = max_streams
        self.size = 0
        self._streams: dict[str, Buffered] = {}
        self._serial = 0

    def __len__(self) -> int:
        return len(self._streams)

    def __contains__(self, name: str) -> bool:
        return name in self._streams

    def open(self, request: tuple, status: int, headers: list, now: float) -> Buffered | None:
        """A new stream with a fresh name; None when ``max_streams`` are live (``expire``
        first: this does not)."""
        if len(self._streams) >= self.max_streams:
            finished = [s for s in self._streams.values() if s.done is not None]
            if not finished:
                return None
            self._remove(min(finished, key=lambda s: s.finished))
        self._serial += 1
        stream = Buffered(secrets.token_urlsafe(16), self._serial, request, status, headers, now)
        self._streams[stream.name] = stream
        return stream

    def get(self, name: str) -> Buffered | None:
        return self._streams.get(name)

    def append(self, stream: Buffered, pieces: list[tuple[int | None, bytes]]) -> None:
        """Keep ``pieces``; past the limit, the oldest piece of the largest stream goes."""
        if stream.removed:
            return
        for n, data in pieces:
            stream._append(n, data)
            self.size += len(data)
        self.trim()

    def trim(self) -> None:
        """Past the limit, drop the oldest pieces no connected client needs, largest stream first."""
        while self.size > self.limit:
            free = [s for s in self._streams.values() if s.first < s.needed]
            if not free:
                return
            self.size -= max(free, key=lambda s: s.size)._drop_oldest()

    def held_back(self, stream: Buffered) -> bool:
        """Whether the stream's upstream should wait for its clients: the store is past its
        limit and what is left is what they have not been sent."""
        return self.size > self.limit and stream.needed < stream.end

    def finish(self, stream: Buffered, how: str, now: float) -> None:
        stream.done, stream.finished = how, now

    def attach(self, stream: Buffered, seq: int) -> Cursor:
        """A client to be sent the stream from piece ``seq`` on (it moves ``cursor.seq``)."""
        cursor = Cursor(seq)
        stream.cursors.append(cursor)
        stream.alone_since = None
        return cursor

    def detach(self, stream: Buffered, cursor: Cursor, now: float) -> None:
        stream.cursors.remove(cursor)
        if not stream.cursors:
            stream.alone_since = now
        self.trim()

    def expire(self, now: float) -> list[Buffered]:
        """Forget the streams past their time, and return them: those still live (left
        alone for ``ttl``) have an upstream request to close."""
        gone = [s for s in self._streams.values() if (
            now - s.finished >= self.ttl if s.done is not None else
            s.alone_since is not None and now - s.alone_since >= self.ttl)]
        for stream in gone:
            self._remove(stream)
        return gone

    def _remove(self, stream: Buffered) -> None:
        del self._streams[stream.name]
        self.size -= stream.size
        end = stream.end
        stream._data.clear()
        stream._events.clear()
        stream._lo = stream._ev_lo = stream.size = 0
        stream.first, stream.first_event, stream.removed = end, stream.count + 1, True
