"""SSE bytes to events, following the WHATWG "event stream" interpretation exactly.

Theory of operation. ``SseParser.feed(chunk)`` takes bytes as they arrive and returns the
events whose blank line has arrived; nothing is interpreted before that blank line, so a
record never depends on bytes still in flight. ``close()`` at end of input returns a
``FrameEnd`` that says whether the input stopped inside an event (truncation: the spec
discards that event, and we report it).

Lines are split on bytes, on LF, CRLF and lone CR (a CR that ends a chunk terminates its
line at once; an LF starting the next chunk is then the rest of that CRLF, not a new blank
line). Splitting bytes before decoding cannot cut a character, since CR and LF never occur
inside a UTF-8 sequence; each complete field is decoded once (``decode.decode_field``).

Cost is linear whatever the chunking: a partial line is kept as a list of pieces joined
once when its terminator arrives, ``data`` lines are joined once at dispatch, and nothing
is ever searched twice. Memory is bounded by the largest event: past ``max_event_size``
bytes (pending line plus data so far) the parser raises ``EventTooLarge``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import repeat

from .decode import BOM, decode_field
from .errors import EventTooLarge

DEFAULT_MAX_EVENT_SIZE = 64 * 1024 * 1024

# With a capture group, split() returns [line, terminator, line, terminator, ..., rest].
_LINE_END = re.compile(rb"(\r\n|\r|\n)")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event. ``id``/``retry`` are the stream state in force (None: never set)."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None
    #: byte offset of the event's first line in the input, and just past its blank line
    offset: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class SseComment:
    """A comment line (``: text``), reported only when asked for: keep-alives live here."""

    text: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class FrameEnd:
    """What end of input meant. ``truncated`` names why the input stopped mid-event."""

    truncated: str | None
    offset: int

    @property
    def is_complete(self) -> bool:
        return self.truncated is None


class SseParser:
    """Incremental WHATWG event-stream parser: ``feed(bytes) -> list``, then ``close()``."""

    def __init__(
        self, *, comments: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE
    ) -> None:
        self.comments = comments
        self.max_event_size = max_event_size
        self._pos = 0  # input offset where the unterminated line starts (BOM included)
        self._head: bytes | None = b""  # bytes that may still be a leading BOM; None once decided
        self._after_cr = False  # last chunk ended in CR: a leading LF completes that CRLF
        self._partial: list[bytes] = []  # pieces of the line not yet terminated
        self._partial_len = 0
        # The event being built (WHATWG buffers); _block_start is None between events.
        self._data: list[bytes] = []
        self._data_len = 0
        self._type = b""
        self._block_start: int | None = None
        # Stream state that outlives events.
        self._last_id: str | None = None
        self._retry: int | None = None
        self._error: EventTooLarge | None = None

    # -- public API ---------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[SseEvent | SseComment]:
        if self._error is not None:
            raise self._error
        if self._head is not None:
            chunk = self._strip_bom(chunk)
            if not chunk:
                return []
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
            self._pos += 1
        if not chunk:
            return []
        self._after_cr = chunk[-1:] == b"\r"
        out: list[SseEvent | SseComment] = []
        if b"\r" in chunk:
            parts = _LINE_END.split(chunk)
            lines = parts[0::2]
            lengths = [len(t) for t in parts[1::2]]
        else:
            lines = chunk.split(b"\n")
            lengths = repeat(1)
        rest = lines.pop()
        if lines:
            if self._partial:
                self._partial.append(lines[0])
                lines[0] = b"".join(self._partial)
                self._partial.clear()
                self._partial_len = 0
            try:
                self._lines(lines, lengths, out)
            except EventTooLarge as exc:
                return self._fail(exc, out)
        if rest:
            self._partial.append(rest)
            self._partial_len += len(rest)
            if self._partial_len + self._data_len > self.max_event_size:
                start = self._pos if self._block_start is None else self._block_start
                return self._fail(EventTooLarge(self.max_event_size, start), out)
        return out

    def close(self) -> FrameEnd:
        """End of input: report whether it stopped inside an event (which is discarded)."""
        if self._error is not None:
            raise self._error
        if self._head:  # a lone partial BOM is an incomplete line
            self._partial.append(self._head)
            self._partial_len += len(self._head)
            self._head = None
        end = self._pos + self._partial_len
        if self._partial:
            why = "input ended in the middle of a line"
        elif self._block_start is not None:
            why = "input ended inside an event (no blank line after its last field)"
        else:
            why = None
        return FrameEnd(why, end)

    # -- internals ----------------------------------------------------------------------

    def _strip_bom(self, chunk: bytes) -> bytes:
        chunk = self._head + chunk  # type: ignore[operator]
        if len(chunk) < len(BOM) and BOM.startswith(chunk):
            self._head = chunk  # could still become a BOM
            return b""
        self._head = None
        if chunk.startswith(BOM):
            self._pos += len(BOM)
            return chunk[len(BOM):]
        return chunk

    def _fail(self, exc: EventTooLarge, out: list) -> list:
        # Events before the oversized one are good data: hand them out first, fail next call.
        self._partial.clear()
        self._data.clear()
        if out:
            self._error = exc
            return out
        raise exc

    def _lines(self, lines: list[bytes], lengths, out: list) -> None:
        pos = self._pos
        data = self._data
        for line, length in zip(lines, lengths):
            if not line:  # blank line: dispatch
                if self._block_start is not None:
                    if data:
                        out.append(
                            SseEvent(
                                decode_field(self._type) or "message",
                                decode_field(b"\n".join(data)),
                                self._last_id,
                                self._retry,
                                self._block_start,
                                pos + length,
                            )
                        )
                        data.clear()
                        self._data_len = 0
                    self._type = b""
                    self._block_start = None
            elif line[0] == 0x3A:  # ":" comment
                if self.comments:
                    text = line[2:] if line[1:2] == b" " else line[1:]
                    out.append(SseComment(decode_field(text), pos))
            else:
                if self._block_start is None:
                    self._block_start = pos
                name, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if name == b"data":
                    data.append(value)
                    self._data_len += len(value) + 1
                    if self._data_len > self.max_event_size:
                        self._pos = pos
                        raise EventTooLarge(self.max_event_size, self._block_start)
                elif name == b"event":
                    self._type = value
                elif name == b"id":
                    if b"\x00" not in value:  # spec: an id with NUL is ignored
                        self._last_id = decode_field(value)
                elif name == b"retry":
                    if value.isdigit():  # bytes.isdigit: ASCII digits only, never empty
                        self._retry = int(value)
                # any other field name is ignored, as the spec says
            pos += len(line) + length
        self._pos = pos
