"""SSE bytes to events, following the WHATWG "event stream" interpretation exactly.

Theory of operation. ``SseParser.feed(chunk)`` takes bytes as they arrive and returns the
events whose blank line has arrived; nothing is dispatched before that blank line, so a
record never depends on bytes still in flight. ``close()`` at end of input returns a
``FrameEnd`` that says whether the input stopped inside an event (truncation: the spec
discards that event, and we report it).

Lines are split on bytes, on LF, CRLF and lone CR. A CR that ends a chunk terminates its
line at once; an LF starting the next chunk is then the rest of that CRLF, not a new blank
line. Splitting bytes before decoding cannot cut a character, since CR and LF never occur
inside a UTF-8 sequence; each complete field is decoded once, which is the same as
decoding the whole stream first (see ``decode.py``) and keeps byte offsets exact.

Cost is linear whatever the chunking. Bytes of an unterminated line are kept as a list of
pieces, joined once when a line end arrives; ``data`` lines are joined once at dispatch;
no byte is searched twice. Memory is bounded by the largest event: past
``max_event_size`` bytes the parser raises ``EventTooLarge``, after handing out the events
completed before it. The size of an event is the bytes of its lines since the last blank
line, line ends included, so the limit trips at the same event whatever the chunking.

Strategy for speed. ``_lines`` is the reference: the spec's rules, one line at a time.
Everything else is a shortcut that must give exactly what it gives, for the two block
shapes nearly every stream is made of, ``data: D`` and ``event: E`` + ``data: D``:

* A chunk with no line end (most small chunks) is only appended to the pending pieces;
  their size is added up every ``_COUNT_EVERY`` pieces, not per call.
* With LF line ends and no comments wanted, lines are not read before their blank line:
  when a chunk completes one, the pending pieces are joined once. One regex call
  (``_BLOCK``) reads a single block, as small chunks bring them.
* A longer run of blocks (``_run``) is split with one C call and checked as a whole; its
  events are built by ``map`` and ``zip`` over the lines, offsets summed by ``accumulate``:
  no Python loop per event. Runs with CRLF line ends (Gemini)
  take it too.
* A block of many ``data: D`` lines (``_data_lines``) is checked by counting and joined by
  one replace, not read line by line. Any other block goes to ``_lines``.

What costs is the number of Python-level operations per call and per event, not bytes:
bytes methods that take ``start``/``end`` arguments (``find``, ``startswith``) cost as much
as the rest of a loop iteration, and ``b"x" in data`` first tries ``b"x"`` as an integer
(raising and clearing a TypeError): tests are written ``10 in data``. The tests hold the
shortcuts to the rules: every recorded stream cut at every position, and each stream
against its twin with CR line ends, which has the same offsets and is read by ``_lines``.
"""

from __future__ import annotations

import re
from itertools import accumulate, islice, repeat
from operator import add, getitem, sub
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

# One block of a usual shape, ``data: D`` or ``event: E`` + ``data: D``, with its blank
# line: (the event line or None, D). Reading it so gives what the spec's rules give: the
# one space after each colon is stripped, the data is the one data line.
_BLOCK = re.compile(rb"(?:(event: [^\n]*)\n)?data: ([^\n]*)\n\n")
_AFTER_DATA = slice(6, None)  # a data line's value: what follows "data: "
#: from this many bytes of blocks, try _run before reading block by block
_RUN_FROM = 1024

#: pieces of an unfinished line appended between two counts of their size (see _count)
_COUNT_EVERY = 64


class _EventNames(dict):
    """Event types by their ``event: `` line: a stream repeats a few, decoded once here."""

    def __missing__(self, line: bytes) -> str:
        name = decode_field(line[7:]) or "message"  # spec: an empty type means "message"
        if len(self) < 256:  # bounded: a hostile stream may send a new name every event
            self[line] = name
        return name


class SseParser:
    """Incremental WHATWG event-stream parser: ``feed(bytes) -> list``, then ``close()``."""

    __slots__ = (
        "comments", "max_event_size", "raw", "_pending", "_counted", "_counted_size", "_count_at",
        "_pos", "_watch", "_head", "_after_cr", "_data", "_type", "_block_start",
        "_block_pos", "_size", "_last_id", "_retry", "_error", "_names",
        "ids", "_block_id", "_sealed_id", "_sealed_retry",
    )

    def __init__(
        self, *, comments: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        track_ids: bool = False, raw: bool = False,
    ) -> None:
        self.comments = comments
        self.max_event_size = max_event_size
        #: with ``track_ids``: an ``IdSet`` for each block that set the id, appended as its
        #: blank line arrives (the caller empties the list as it reads it)
        self.ids: list[IdSet] | None = [] if track_ids else None
        #: events' data as the bytes that arrived, not decoded (see ``SseEvent.data``)
        self.raw = raw
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
        # cut by a reset or exit marker is void, its id and retry lines included.
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
        """The ``retry`` value in force as of the last blank line, in milliseconds."""
        return self._sealed_retry

    @property
    def sealed(self) -> int:
        """The input offset just past the last blank line read: the bytes before it are
        whole blocks (a BOM counts); what follows may still be cut."""
        return self._block_pos

    def feed(self, chunk: bytes) -> list[SseEvent | SseComment]:
        # Most small chunks hold no line end: keep the piece, nothing else. (``10 in chunk``,
        # not ``b"\n" in chunk``: with a bytes needle, CPython first tries it as an int.)
        if 10 not in chunk and 13 not in chunk and not self._watch:
            if chunk:
                pending = self._pending
                pending.append(chunk)
                if len(pending) > self._count_at:
                    return self._count([])
            return []
        if self._watch:
            chunk = self._chunk_start(chunk)
            if not chunk:
                return []
        if self.comments or 13 in chunk:
            return self._feed_lines(chunk)
        # LF line ends only. An event is never interpreted before its blank line, so bytes
        # wait, uninterpreted, until a chunk completes a blank line.
        end = chunk.rfind(b"\n\n") + 2
        if end == 1 and (chunk[0] != 10 or not self._at_line_start()):
            # no blank line completed (one may start this chunk, after a line end)
            pending = self._pending
            pending.append(chunk)
            if len(pending) > self._count_at:
                return self._count([])
            return []
        pending = self._pending
        if pending:  # the pending pieces and the chunk up to its last blank line, joined once
            pending.append(chunk[:end])
            lines = b"".join(pending)
            pending.clear()
            if self._counted:
                self._counted = self._counted_size = 0
                self._count_at = _COUNT_EVERY
        else:
            lines = chunk[:end]
        out: list[SseEvent | SseComment] = []
        # Small chunks complete one block at a time: one regex call reads the usual shapes.
        # (Not on many blocks: a failed fullmatch backtracks through the first one.)
        match = _BLOCK.fullmatch(lines) if len(lines) < _RUN_FROM else None
        if match and self._block_start is None and not self._size and len(lines) <= self.max_event_size + 1:
            kind, data = match.groups()
            pos = self._pos
            out.append(_new(SseEvent, (
                self._names[kind], data if self.raw else data.decode("utf-8", "replace"),
                self._last_id, self._retry, pos, pos + len(lines) - 1,
            )))
            self._pos = self._block_pos = pos + len(lines)
        else:
            try:
                self._blocks(lines, out)
            except EventTooLarge:
                return self._fail(out)
        if end < len(chunk):
            rest = chunk[end:]
            pending.append(rest)
            if self._size + len(rest) > self.max_event_size:
                return self._fail(out)
        return out

    def close(self) -> FrameEnd:
        """End of input: report whether it stopped inside an event (which is discarded)."""
        if self._error is not None:
            raise self._error
        if self._head:  # a lone partial BOM is an incomplete line
            self._pending.append(self._head)
            self._head = None
        rest = self._take(b"", 0)
        cut = rest.rfind(b"\n") + 1
        try:
            if cut:  # complete lines still waiting: does one of them start an event?
                self._lf_lines(rest[:cut], [])  # there is no blank line among them: no output
            if self._size + len(rest) - cut > self.max_event_size:  # sizes are counted late
                raise EventTooLarge(self.max_event_size, self._block_pos)
        except EventTooLarge:
            self._fail([])
        if cut < len(rest):
            self._pending.append(rest[cut:])
        end = self._pos + len(rest) - cut
        if cut < len(rest):
            why = "input ended in the middle of a line"
        elif self._block_start is not None:
            why = "input ended inside an event (no blank line after its last field)"
        else:
            why = None
        return FrameEnd(why, end)

    # -- internals ----------------------------------------------------------------------

    def _feed_lines(self, chunk: bytes) -> list[SseEvent | SseComment]:
        """Interpret every line the chunk completes (CR line ends, or comments wanted)."""
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
        if not end:
            pending = self._pending
            pending.append(chunk)
            if len(pending) > self._count_at:
                return self._count([])
            return []
        lines = self._take(chunk, end)
        out: list[SseEvent | SseComment] = []
        try:
            if 13 in lines:
                done = self._crlf_run(lines, out)
                self._any_lines(lines[done:] if done else lines, out)
                if lines[-1] == 13 and end == len(chunk):
                    self._after_cr = self._watch = True
            else:
                self._lf_lines(lines, out)
        except EventTooLarge:
            return self._fail(out)
        return self._keep(chunk, end, out)

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

    def _lf_lines(self, lines: bytes, out: list) -> None:
        """Complete lines ending in LF, with no CR: blocks up to the last blank line, then
        the lines after it, which start an event."""
        cut = lines.rfind(b"\n\n") + 2
        if cut > 1:
            self._blocks(lines[:cut] if cut < len(lines) else lines, out)
        else:
            cut = 0
        if cut < len(lines):
            self._lines(zip(_split_lf(lines, cut, len(lines) - 1), repeat(1)), out)

    def _any_lines(self, lines: bytes, out: list) -> None:
        """Complete lines with any line ends (LF, CRLF, CR), read by the rules."""
        self._lines(_split_any(lines), out)

    def _crlf_run(self, lines: bytes, out: list) -> int:
        """Complete lines holding a CR: if their blocks, up to the last CRLF blank line, are
        of one usual shape with CRLF line ends (as Gemini sends them), read them with
        ``_run``. Returns how many bytes of ``lines`` were read."""
        last = lines.rfind(b"\r\n\r\n") + 4
        if last < _RUN_FROM:
            return 0
        start = 0
        if self._block_start is not None or self._size:  # an event read line by line goes on
            start = lines.find(b"\r\n\r\n") + 4
            self._any_lines(lines[:start], out)
        if start < last and self._run(lines[start:last], 0, out, b"\r\n"):
            return last
        return start

    def _blocks(self, lines: bytes, out: list) -> None:
        """Complete LF lines (no CR) up to a blank line: the lines of an event read line by
        line, if one goes on, then blocks (the lines between two blank lines)."""
        start = 0
        if self._block_start is not None or self._size:
            start = 1 if lines[0] == 10 else lines.find(b"\n\n") + 2
            self._lines(zip(_split_lf(lines, 0, start - 1), repeat(1)), out)  # ends with b"", the blank line
        if len(lines) - start < _RUN_FROM or not self._run(lines, start, out):
            self._each_block(lines, start, out)

    def _run(self, lines: bytes, start: int, out: list, nl: bytes = b"\n") -> bool:
        """If every block of ``lines[start:]`` has the shape of the first, ``data: D`` or
        ``event: E`` + ``data: D``, with ``nl`` line ends, append their events and return
        True; else do nothing.

        The blocks are split with one C call and checked as a whole, and their events are
        built with no Python loop at all: a few C calls per run, not per event.
        """
        if len(lines) - start > self.max_event_size:
            return False  # an event may be over the limit: _each_block fails at it
        n = len(nl)
        if lines.startswith(b"data: ", start):
            data = lines[start + 6 : -2 * n].split(nl + nl + b"data: ")
            joined = b"".join(data)
            if 10 in joined or 13 in joined:  # some block has another line
                return False
            names, values = repeat("message"), data
            sizes = map(len, data)
            step = 6 + 2 * n  # a block: "data: ", the data, two line ends
        elif lines.startswith(b"event: ", start):
            # The lines of k blocks: k times an event line, a data line and a blank line.
            parts = lines[start : -2 * n].split(nl)
            if n == 2:  # split at CRLFs: a lone CR or LF left in a part would end a line
                joined = b"".join(parts)
                if 10 in joined or 13 in joined:
                    return False
            kinds, data = parts[0::3], parts[1::3]
            if (len(parts) % 3 != 2 or any(parts[2::3])
                    or b"\n".join(kinds).count(b"\nevent: ") != len(kinds) - 1
                    or b"\n".join(data).count(b"\ndata: ") != len(data) - 1
                    or data[0][:6] != b"data: "):
                return False
            names = map(self._names.__getitem__, kinds)
            values = map(getitem, data, repeat(_AFTER_DATA))
            sizes = map(add, map(len, kinds), map(len, data))
            step = 3 * n  # a block: its two lines' ends and the blank line
        else:
            return False
        # Every event at once, by C calls: each data decoded, each offset a running sum of
        # the blocks' sizes, each end one line end short of the next offset.
        texts = values if self.raw else map(bytes.decode, values, repeat("utf-8"), repeat("replace"))
        starts = list(accumulate(map(add, sizes, repeat(step)), initial=self._pos))
        ends = map(sub, islice(starts, 1, None), repeat(n))
        out += map(_new, repeat(SseEvent), zip(names, texts, repeat(self._last_id), repeat(self._retry), starts, ends))
        self._pos = self._block_pos = starts[-1]
        return True

    def _each_block(self, lines: bytes, start: int, out: list) -> None:
        """Blocks one at a time: the two usual shapes read by ``_BLOCK``, any other block
        through ``_lines``."""
        pos, end = self._pos, len(lines)
        last_id, retry = self._last_id, self._retry
        match_block, names, limit = _BLOCK.match, self._names, self.max_event_size + 1
        raw = self.raw
        while start < end:
            match = match_block(lines, start)
            if match:
                stop = match.end()
                if stop - start <= limit:  # else _lines fails at it
                    kind, data = match.groups()
                    out.append(_new(SseEvent, (
                        names[kind], data if raw else data.decode("utf-8", "replace"),
                        last_id, retry, pos, pos + stop - start - 1,
                    )))
                    pos += stop - start
                    start = stop
                    continue
            elif lines[start] == 10:  # a blank line with no event before it: nothing to do
                pos += 1
                start += 1
                continue
            stop = lines.find(b"\n\n", start) + 2
            block = lines[start : stop - 1]  # its lines, each with its LF
            if self._data_lines(block, pos, out):
                pos += len(block) + 1
                start = stop
                continue
            self._pos = self._block_pos = pos
            self._lines(zip(_split_lf(lines, start, stop - 1), repeat(1)), out)  # ends with b"": the blank line
            pos = self._pos
            last_id, retry = self._last_id, self._retry
            start = stop
        self._pos = self._block_pos = pos

    def _data_lines(self, block: bytes, pos: int, out: list) -> bool:
        """A block of ``data: D`` lines only (one event of many lines: pretty-printed JSON,
        say), after an optional ``event: E`` line: append its event, read with a few C calls
        instead of a loop per line, and return True; else (any other line) do nothing."""
        kind, body = None, block
        if block.startswith(b"event: "):
            cut = block.find(b"\n") + 1
            kind, body = block[: cut - 1], block[cut:]
        if (not body.startswith(b"data: ") or len(block) > self.max_event_size
                or body.count(b"\n") != body.count(b"\ndata: ") + 1):
            return False  # _lines reads it (and fails it, if it is over the limit)
        data = body[6:-1].replace(b"\ndata: ", b"\n")
        out.append(_new(SseEvent, (
            self._names[kind], data if self.raw else data.decode("utf-8", "replace"),
            self._last_id, self._retry, pos, pos + len(block),
        )))
        return True

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
                # bytes.isdigit: ASCII digits only, never empty. The length test keeps
                # int() away from huge digit strings.
                if value.isdigit() and len(value) <= 20 and int(value) <= MAX_RETRY:
                    self._retry = int(value)
            # any other field name is ignored, as the spec says
        self._pos = pos
