"""EventSource reconnection for ``fetch --reconnect``: one SSE stream read over many connections.

Consumes the body bytes of each connection (``Resumer.feed``), told where each connection's
body begins (``begin``) and how it ends (``finish``: no other follows; ``drop``: another
does); produces the bytes to write, so that what is written is one valid event stream: no
event twice, none lost, no half event. ``Waits`` says how long to wait before each
reconnection. Sans-I/O: no sockets, no clock, no random source of its own.

How. Each connection's bytes go through ``sse.SseParser``, which says where whole blocks end
(``sealed``), which blocks set the id, and the ``retry`` in force; bytes pass on unchanged,
never re-serialised, but only up to the end of the last whole block: the rest of a block
waits for its blank line. So a cut leaves nothing half written, and the held bytes are
dropped. The state the WHATWG rules keep across connections is kept here: the last event
ID string (sent as ``Last-Event-ID`` when not empty) and the reconnection time.

A server resumes *after the block that set the id* it is sent. Events that followed that
block without an id of their own were written already, and come again: they are counted
(``since``) and the same number of events, arriving before the new connection sets any id,
are dropped. A server that resumes elsewhere sets an id before them, and nothing is dropped.
With no id in force there is nothing to resume from: the server starts the stream again,
and the reset marker (``marker.py``) goes first when events were written, as ``fetch
--retry-partial`` writes it, so that the later stages void what the earlier connections said. A byte order mark
starting a later connection is dropped (it may start a stream, not sit inside one).

The provider's terminal event (``[DONE]``, ``message_stop``, ...) or error event, read by
the provider adapters that ``normalize`` uses, ends the stream: nothing follows it.
"""

from __future__ import annotations

from collections.abc import Callable

from .decode import BOM
from .errors import BadInput, EventTooLarge
from .marker import reset_after
from .normalize import parse_payload
from .providers import PROVIDERS, recognise
from .retry import Wait, backoff
from .sse import DEFAULT_MAX_EVENT_SIZE, SseEvent, SseParser

#: the longest wait a backoff grows to (unless the server's ``retry`` is longer)
MAX_BACKOFF = 30.0
#: the shortest backoff step after repeated failures, whatever ``retry`` says (a server
#: sending ``retry: 0`` and closing at once must not make a busy loop)
MIN_BACKOFF = 0.25
#: the longest wait before a reconnection, whatever ``retry:`` asks (it may hold up to
#: 2**64-1 ms, which no sleep can take): a day
MAX_WAIT = 86400.0
#: events read while recognising the provider, before giving up (as ``normalize`` does)
MAX_UNRECOGNISED = 64


class Resumer:
    """The stream across connections: what to write of each, and the state to reconnect with."""

    def __init__(self, last_id: str | None = None, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        #: the last event ID string: ``Last-Event-ID`` for the next connection, when not empty
        self.last_id = last_id
        #: the reconnection time the stream set (``retry``), in milliseconds
        self.retry: int | None = None
        #: the provider's terminal (or error) event was written: the stream is over
        self.terminal = False
        #: connections whose body began
        self.connections = 0
        #: events written, all connections together
        self.written = 0
        self._max_event_size = max_event_size
        self._since = 0  # events written after the block that set last_id
        self._watch = _Terminal()
        self._parser: SseParser | None = None
        self._held = bytearray()  # the connection's bytes from _base on, not written yet
        self._base = 0
        self._start = 0  # connection offset before which nothing is written
        self._skip = 0  # events still to drop as already written
        self._anchored = False  # the connection has set an id
        self._reset_due = False
        self._bom_due = False
        self._last_byte = b"\n"

    def resumes(self) -> bool:
        """Whether the next connection can ask to resume (an id is in force)."""
        return bool(self.last_id)

    def begin(self) -> None:
        """The body of a new connection starts (made with ``Last-Event-ID`` when ``resumes()``)."""
        later = self.connections > 0
        self.connections += 1
        resumed = self.resumes()
        self._parser = SseParser(track_ids=True, max_event_size=self._max_event_size)
        self._held.clear()
        self._base = self._start = 0
        self._skip = self._since if resumed else 0
        self._anchored = False
        self._bom_due = later
        if later and not resumed:  # the stream starts again
            self._since = 0
            self._watch = _Terminal()
            self._reset_due = self.written > 0

    def feed(self, chunk: bytes) -> bytes:
        """Bytes of the connection's body; returns what to write now."""
        self._held += chunk
        parser = self._parser
        events = parser.feed(chunk)
        if events or parser.ids:
            self._account(events, parser.ids)
        self._state()
        return self._take(parser.sealed)

    def finish(self) -> bytes:
        """The connection ended and none follows: what it still holds, written as it came
        (a cut event stays cut, for the later stages to see)."""
        if self._parser is None:
            return b""
        self._state()
        return self._take(self._base + len(self._held))

    def drop(self) -> None:
        """The connection ended and another follows: what it holds of a block is void."""
        if self._parser is not None:
            self.ended()
            self._held.clear()
            self._parser = None

    def ended(self) -> None:
        """The connection's body ended: a retry line in the block it cut counts (the spec
        sets the reconnection time when the line is read), an id line does not."""
        if self._parser is not None:
            try:
                self._parser.close()
            except EventTooLarge:
                pass
            self._state()

    # -- internals ----------------------------------------------------------------------

    def _account(self, events: list, ids: list) -> None:
        """Walk the events and the blocks that set the id, in stream order."""
        changes = ids[:]
        ids.clear()
        i = 0
        for event in events:
            if type(event) is not SseEvent:
                continue  # a marker the server sent: it passes as bytes
            while i < len(changes) and changes[i].end < event.end:
                self._anchor(changes[i].id)
                i += 1
            if i < len(changes) and changes[i].end == event.end:  # its own block set the id
                self._pass(event)
                self._anchor(changes[i].id)
                i += 1
            elif self._skip and not self._anchored:  # written before the connection was lost
                self._skip -= 1
                self._start = self._after_blank_line(event.end)
            else:
                self._skip = 0
                self._pass(event)
                self._since += 1
        for change in changes[i:]:
            self._anchor(change.id)

    def _after_blank_line(self, at: int) -> int:
        """Where the blank line at connection offset ``at`` (an event's end) ends: the bytes
        written stay the server's, without an extra line end. (A CR that ends the bytes
        so far counts alone: the LF of a CRLF split there would pass as an empty line.)"""
        held = self._held[at - self._base:at - self._base + 2]
        return at + (2 if held == b"\r\n" else 1)

    def _anchor(self, last_id: str) -> None:
        self.last_id = last_id
        self._since = 0
        self._skip = 0
        self._anchored = True

    def _pass(self, event: SseEvent) -> None:
        self.written += 1
        if not self.terminal and self._watch.feed(event):
            self.terminal = True

    def _state(self) -> None:
        retry = self._parser.reconnection_time
        if retry is not None:
            self.retry = retry

    def _take(self, upto: int) -> bytes:
        """The held bytes before connection offset ``upto``, less what is not written."""
        held, base = self._held, self._base
        if upto <= base:
            return b""
        if self._bom_due:
            self._bom_due = False
            if base == 0 and held[:len(BOM)] == BOM:
                self._start = max(self._start, len(BOM))
        out = bytes(held[max(self._start - base, 0):upto - base])
        del held[:upto - base]
        self._base = upto
        if not out:
            return b""
        if self._reset_due:
            self._reset_due = False
            out = reset_after(self._last_byte) + out
        self._last_byte = out[-1:]
        return out


class _Terminal:
    """Whether an event is the provider's terminal event, or its error: after it, nothing."""

    def __init__(self) -> None:
        self._adapter = None
        self._unrecognised = 0

    def feed(self, event: SseEvent) -> bool:
        try:
            payload = parse_payload(event)
        except BadInput:
            return False
        if self._adapter is None:
            if self._unrecognised >= MAX_UNRECOGNISED:
                return False
            name = recognise(event.event, payload)
            if name is None:
                self._unrecognised += 1
                return False
            self._adapter = PROVIDERS[name]()
        try:
            self._adapter.feed(event.event, payload)
        except BadInput:
            return False
        return bool(self._adapter.terminal or self._adapter.error is not None)


class Waits:
    """How long to wait before each reconnection, and how many are left.

    After a connection that brought events: the stream's ``retry`` (or the default delay),
    exactly, as the spec says. After repeated connections that brought none (refused,
    closed at once, cut before an event), an exponential backoff from there, with jitter.
    """

    def __init__(self, limit: int | None, delay: float, *, cap: float = MAX_BACKOFF,
                 random: Callable[[], float] | None = None) -> None:
        #: reconnections allowed (None: no limit)
        self.limit = limit
        self.delay = delay
        self.cap = cap
        self.used = 0
        self._random = random
        self._failures = 0  # connections in a row that brought no event

    def after(self, progress: bool, retry: int | None) -> Wait | None:
        """The wait before the next connection, or None when no reconnection is left.
        ``progress``: the connection just ended brought events; ``retry``: in milliseconds."""
        if self.limit is not None and self.used >= self.limit:
            return None
        self._failures = 0 if progress else self._failures + 1
        base, basis = (retry / 1000, f"retry: {retry}") if retry is not None else (
            self.delay, "--reconnect-delay")
        if self._failures > 1:
            base = max(base, MIN_BACKOFF)
            seconds = backoff(base, max(self.cap, base), self._failures, self._uniform())
            basis = f"backoff, {self._failures} failures in a row"
        else:
            seconds = base
        if seconds > MAX_WAIT:
            seconds, basis = MAX_WAIT, f"{basis}, capped at a day"
        self.used += 1
        return Wait(seconds, self.used, self.limit or 0, basis)

    def _uniform(self) -> float:
        if self._random is None:
            import random  # on first use: most streams never fail twice

            return random.random()
        return self._random()
