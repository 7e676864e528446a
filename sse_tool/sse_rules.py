"""The WHATWG "event stream" rules, one line at a time: the reference ``sse.py`` builds on.

``SseRules`` holds the parser's state, the spec's buffers (data, event type, last event
id, reconnection time) and the bookkeeping of bytes not read yet, and applies complete
lines exactly as the spec reads them (``_lines``). ``sse.SseParser`` adds the shortcuts
that read the usual block shapes many at a time; every one of them must give what
``_lines`` gives (see the strategy in ``sse.py``). Also here: the items a framer returns
(``SseEvent``, ``SseComment``, ``FrameEnd``, ``IdSet``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .decode import BOM, decode_field
from .errors import EventTooLarge
from .marker import NOTE, exit_marker, from_line, is_marker_line

DEFAULT_MAX_EVENT_SIZE = 64 * 1024 * 1024

#: The retry marker (``marker.py``): ``fetch --retry-partial`` writes this comment line
#: before a new attempt's bytes. Comments mean nothing to the spec, so other parsers skip
#: it; this one reports every ``sse-tool`` marker even when comments are not asked for,
#: and a ``reset`` or ``exit`` marker drops the event being built, which was cut.
RESET_COMMENT = "sse-tool reset"

#: a ``retry`` value must fit in 64 bits (as in Chromium; JSON readers could not hold more)
MAX_RETRY = 2**64 - 1

# With a capture group, split() returns [line, terminator, line, terminator, ..., rest].
_LINE_END = re.compile(rb"(\r\n|\r|\n)")


class SseEvent(NamedTuple):
    """One dispatched event. ``id``/``retry`` are the stream state in force (None: never set).

    A named tuple, not a dataclass: it is built once per event on the hot path, and a
    frozen dataclass costs ten times as much to construct.
    """

    event: str
    #: the data lines joined; decoded, or, from a framer made with ``raw=True``, the bytes
    #: as they arrived, for a reader that parses them as JSON (orjson reads UTF-8 bytes;
    #: decoding first would only be undone, at the cost of a parse)
    data: str | bytes
    id: str | None = None
    retry: int | None = None
    #: byte offset of the event's first field line in the input, and of the blank line that
    #: ended it (``input[offset:end]`` is the event's text; the blank line's own length is
    #: left out, since a CR ending a chunk cannot tell yet whether an LF follows)
    offset: int = 0
    end: int = 0


class SseComment(NamedTuple):
    """A comment line (``: text``), reported only when asked for: keep-alives live here."""

    text: str
    offset: int = 0


class IdSet(NamedTuple):
    """A block that set the last event id: where its blank line starts (an event's ``end``)
    and ends (where the next block may start), and the id."""

    end: int
    after: int
    id: str


class FrameEnd(NamedTuple):
    """What end of input meant. ``truncated`` names why the input stopped mid-event."""

    truncated: str | None
    offset: int
    #: items that the end of input itself completed (an NDJSON last line that is whole
    #: without its newline); they come before the end
    items: tuple = ()

    @property
    def is_complete(self) -> bool:
        return self.truncated is None

    def comment(self, stage: str = "frame") -> SseComment:
        """The exit marker (code 3) that stands for this end in frame's records (when truncated)."""
        return SseComment(exit_marker(3, stage, self.truncated).comment(), self.offset)


_new = tuple.__new__  # builds an SseEvent without the keyword-handling __new__


def _split_lf(buf: bytes, start: int, end: int):
    """``buf[start:end].split(b"\\n")``, one line at a time and without copying the span."""
    find = buf.find
    while True:
        stop = find(b"\n", start, end)
        if stop < 0:
            yield buf[start:end]
            return
        yield buf[start:stop]
        start = stop + 1


def _split_any(buf: bytes):
    """(line, length of its line end) for each line of ``buf``, which ends with a line end;
    LF, CRLF and a lone CR end lines."""
    start = 0
    for match in _LINE_END.finditer(buf):
        yield buf[start:match.start()], match.end() - match.start()
        start = match.end()
#: pieces of an unfinished line appended between two counts of their size (see _count)
_COUNT_EVERY = 64


class _EventNames(dict):
    """Event types by their ``event: `` line: a stream repeats a few, decoded once here."""

    def __missing__(self, line: bytes) -> str:
        name = decode_field(line[7:]) or "message"  # spec: an empty type means "message"
        if len(self) < 256:  # bounded: a hostile stream may send a new name every event
            self[line] = name
        return name


class SseRules:
    """The parser's state, and the spec's rules applied to complete lines."""

    __slots__ = (
        "comments", "max_event_size", "raw", "_pending", "_counted", "_counted_size", "_count_at",
        "_pos", "_watch", "_head", "_after_cr", "_data", "_type", "_block_start",
        "_block_pos", "_size", "_last_id", "_retry", "_error", "_names",
        "ids", "_block_id", "_sealed_id", "_sealed_retry", "runs",
    )

    def __init__(
        self, *, comments: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        track_ids: bool = False, raw: bool = False, runs: bool = False,
    ) -> None:
        self.comments = comments
        self.max_event_size = max_event_size
        #: with ``track_ids``: an ``IdSet`` for each block that set the id, appended as its
        #: blank line arrives (the caller empties the list as it reads it)
        self.ids: list[IdSet] | None = [] if track_ids else None
        #: events' data as the bytes that arrived, not decoded (see ``SseEvent.data``)
        self.raw = raw
        #: with ``raw``: a chunk's run of blocks of one usual shape as one ``runs.SseRun``
        self.runs = raw and runs
        # Bytes not interpreted yet, from a line start: complete LF lines waiting for their
        # blank line, then the start of a line not terminated yet. Their size is added up
        # every _COUNT_EVERY pieces, not per piece (see _count).
        self._pending: list[bytes] = []
        self._counted = 0  # pieces of _pending whose bytes are in _counted_size
        self._counted_size = 0
        self._count_at = _COUNT_EVERY  # count again once _pending holds more pieces
        self._pos = 0  # input offset where the pending bytes start (a BOM counts)
        # feed() looks at a chunk's first bytes only while _watch is set: at the start of
        # the stream (a BOM), after a chunk ending in CR (a CRLF split), after a failure.
        self._watch = True
        self._head: bytes | None = b""  # bytes that may still be a leading BOM; None once decided
        self._after_cr = False  # last chunk ended in CR: a leading LF completes that CRLF
        # The event being built (the spec's buffers); _block_start is None until a field.
        # The data buffer as the spec keeps it: each data line's value and an LF, one
        # growing bytearray (a list of lines would cost a pointer per line, and an event
        # of millions of empty data lines is a few bytes each).
        self._data = bytearray()
        self._type = b""
        self._block_start: int | None = None
        self._block_pos = 0  # where the lines since the last blank line start
        self._size = 0  # their bytes, line ends included (pending bytes not counted)
        # Stream state that outlives events.
        self._last_id: str | None = None
        self._retry: int | None = None
        # The same, as of the last blank line (the spec's "last event ID string"); a block
        # cut by a reset or exit marker is void, its id and retry lines included (a retry
        # line takes effect when read, so it is put back then).
        self._sealed_id: str | None = None
        self._sealed_retry: int | None = None
        self._block_id = False  # the block being read has set the id
        self._error: EventTooLarge | None = None
        self._names = _EventNames({None: "message"})  # None: no event line

    # -- public API ---------------------------------------------------------------------

    @property
    def last_event_id(self) -> str | None:
        """The id in force as of the last blank line (what a client reconnects with)."""
        return self._sealed_id

    @property
    def reconnection_time(self) -> int | None:
        """The ``retry`` value in force, in milliseconds. A retry line takes effect when it
        is read, as the spec says, so one in a block the input cut counts once ``close()``
        has read that block's lines (one in a block a marker voided does not)."""
        return self._retry

    @property
    def sealed(self) -> int:
        """The input offset just past the last blank line read: the bytes before it are
        whole blocks (a BOM counts); what follows may still be cut."""
        return self._block_pos

    # -- internals ----------------------------------------------------------------------

    def _take(self, chunk: bytes, end: int) -> bytes:
        """The pending bytes plus ``chunk[:end]``, joined once; nothing stays pending."""
        self._counted = self._counted_size = 0
        self._count_at = _COUNT_EVERY
        if self._pending:
            self._pending.append(chunk[:end])
            lines = b"".join(self._pending)
            self._pending.clear()
            return lines
        return chunk[:end] if end < len(chunk) else chunk

    def _keep(self, chunk: bytes, end: int, out: list) -> list:
        """Keep ``chunk[end:]`` pending; return ``out``."""
        if end < len(chunk):
            rest = chunk[end:]
            self._pending.append(rest)
            self._counted, self._counted_size = 1, len(rest)
            if self._size + len(rest) > self.max_event_size:
                return self._fail(out)
        return out

    def _count(self, out: list) -> list:
        """Add up the pieces appended since the last count; fail past the size limit.

        Counting every _COUNT_EVERY pieces instead of every piece keeps the common call
        short; an event still fails at the same place (its size is checked in full once its
        lines are read), and memory stays within the limit plus _COUNT_EVERY chunks.
        """
        pending = self._pending
        self._counted_size += sum(map(len, pending[self._counted :]))
        self._counted = len(pending)
        self._count_at = self._counted + _COUNT_EVERY
        if self._size + self._counted_size > self.max_event_size:
            return self._fail(out)
        return out

    def _at_line_start(self) -> bool:
        """Whether the last byte seen ended a line (or nothing is pending)."""
        return not self._pending or self._pending[-1][-1] == 10

    def _chunk_start(self, chunk: bytes) -> bytes:
        """The rare cases at a chunk start: a pending failure, a BOM, the LF of a CRLF."""
        if self._error is not None:
            raise self._error
        if self._head is not None:  # the spec's decoder strips one BOM, at the start only
            chunk = self._head + chunk
            if len(chunk) < len(BOM) and BOM.startswith(chunk):
                self._head = chunk  # could still become a BOM: wait for more
                return b""
            self._head = None
            if chunk.startswith(BOM):
                self._pos = self._block_pos = len(BOM)
                chunk = chunk[len(BOM):]
        if chunk and self._after_cr:
            self._after_cr = False
            if chunk[0] == 10:  # the LF of a CRLF whose CR ended the last chunk
                self._pos += 1
                chunk = chunk[1:]
                if self._size:  # it ended a line of the event being built
                    self._size += 1
                    if self._size > self.max_event_size:
                        self._fail([])
                else:  # it ended a blank line
                    self._block_pos += 1
        self._watch = self._head is not None or self._after_cr
        return chunk

    def _fail(self, out: list) -> list:
        # Events before the oversized one are good data: hand them out first, fail next call.
        self._error = EventTooLarge(self.max_event_size, self._block_pos)
        self._watch = True
        self._pending.clear()
        self._data.clear()
        if out:
            return out
        raise self._error

    def _any_lines(self, lines: bytes, out: list) -> None:
        """Complete lines with any line ends (LF, CRLF, CR), read by the rules."""
        self._lines(_split_any(lines), out)

    def _lines(self, lines, out: list) -> None:
        """Apply complete lines, one by one, as the spec reads them: ``lines`` yields
        (line, length of its line end), lazily (a block may hold millions of lines)."""
        pos = self._pos
        data = self._data
        limit = self.max_event_size
        for line, length in lines:
            pos += len(line) + length
            if not line:  # blank line: dispatch
                if self._block_start is not None:
                    # Spec, "dispatch the event": nothing to dispatch when no data line was
                    # seen (a sticky id alone must not make a phantom event).
                    if data:
                        out.append(_new(SseEvent, (
                            decode_field(self._type) or "message",
                            bytes(data[:-1]) if self.raw else decode_field(data[:-1]),
                            self._last_id,
                            self._retry,
                            self._block_start,
                            pos - length,
                        )))
                        data.clear()
                    self._type = b""
                    self._block_start = None
                if self._block_id:
                    self._block_id = False
                    if self.ids is not None:
                        self.ids.append(IdSet(pos - length, pos, self._last_id))
                self._sealed_id, self._sealed_retry = self._last_id, self._retry
                self._block_pos = pos
                self._size = 0
                continue
            self._size += len(line) + length
            if self._size > limit:
                self._pos = pos
                raise EventTooLarge(limit, self._block_pos)
            if line[0] == 0x3A:  # ":" comment
                marker = from_line(line) if is_marker_line(line) else None
                if marker is not None:
                    if marker.kind != NOTE:  # reset, exit: the cut attempt's event is void
                        data.clear()
                        self._type = b""
                        self._block_start = None
                        self._block_id = False
                        self._last_id, self._retry = self._sealed_id, self._sealed_retry
                    out.append(_new(SseComment, (marker.comment(), pos - len(line) - length)))
                elif self.comments:
                    text = line[2:] if line[1:2] == b" " else line[1:]
                    out.append(_new(SseComment, (decode_field(text), pos - len(line) - length)))
                continue
            if self._block_start is None:
                self._block_start = pos - len(line) - length
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                data += value
                data.append(10)
            elif name == b"event":
                self._type = value
            elif name == b"id":
                if 0 not in value:  # spec: an id with NUL is ignored
                    self._last_id = decode_field(value)
                    self._block_id = True
            elif name == b"retry":
                # bytes.isdigit: ASCII digits only, never empty. Leading zeros do not
                # count (the spec reads base ten); the length test keeps int() away from
                # huge digit strings.
                digits = value.lstrip(b"0") or b"0"
                if value.isdigit() and len(digits) <= 20 and int(digits) <= MAX_RETRY:
                    self._retry = int(digits)
            # any other field name is ignored, as the spec says
        self._pos = pos
