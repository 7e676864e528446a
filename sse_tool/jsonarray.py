"""A streamed JSON array to events, one per element, as soon as each element is complete.

Gemini's ``streamGenerateContent`` without ``alt=sse`` (and Vertex AI Search
``streamAnswer``) sends one pretty-printed JSON array whose elements are written as they
are produced. This framer gives each element to the next stage as an ``SseEvent`` of type
``message`` whose ``data`` is the element's exact text, so everything downstream treats it
like an SSE data frame. An array not closed by ``]`` at end of input is truncation.

It scans bytes with a small state machine that only tracks string and nesting state (the
element's JSON is parsed later, by whoever reads it), jumping between brackets and over
whole strings with a regex, so cost is linear and independent of chunking. Like
``SseParser`` it keeps an unfinished element as a list of pieces, enforces the same size
limit, and raises a typed error (``BadInput``) only after handing out the elements
completed before the fault.
"""

from __future__ import annotations

import re

from .decode import BOM, decode_field
from .errors import BadInput, EventTooLarge
from .marker import LINE_STARTS, NOTE, from_line, is_marker_line
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseComment, SseEvent

_NOT_WS = re.compile(rb"[^ \t\r\n]")
_IN_STRING = re.compile(rb'["\\]')
# A whole string in one match, or else a bracket, or a quote opening a string that this
# chunk does not close.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}"]', re.DOTALL)
_SCALAR_END = re.compile(rb"[],\s]")

# States of the array outside any element.
_START, _BEFORE, _FIRST, _AFTER, _DONE = range(5)


class JsonArrayParser:
    """Incremental framer for a streamed JSON array: ``feed(bytes) -> list``, ``close()``.

    With ``sequence=True`` it reads JSON values one after another instead (no brackets, no
    commas: JSON written over many lines, such as a pretty-printed error body), starting
    at input offset ``start``. A line ``: sse-tool ...`` is an in-band marker (``marker.py``)
    wherever it comes: a ``reset`` or ``exit`` marker drops the element being read (it was
    cut) and a new array may follow.
    """

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, sequence: bool = False,
                 start: int = 0) -> None:
        self.max_event_size = max_event_size
        self._sequence = sequence
        self._state = _START
        self._pos = start  # input offset of the start of the current chunk
        self._pieces: list[bytes] = []  # the element being read, if any
        self._size = 0
        self._start = 0  # input offset of the element being read
        self._in_element = False
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._scalar = False  # a bare number/literal element: ends at , ] or whitespace
        self._piece_from = 0  # where the element's bytes start in the current chunk
        self._head = b""  # a possible BOM at the very start
        self._error: BadInput | None = None
        self._line_start = True  # the last byte fed ended a line: a marker may start here
        self._held = b""  # the start of a line that may be a marker, until its line end

    def feed(self, chunk: bytes) -> list[SseEvent | SseComment]:
        if self._error is not None:
            raise self._error
        out: list = []
        try:
            self._split(chunk, out)
        except BadInput as exc:  # elements before the fault are good data: hand them out
            self._error = exc
            if not out:
                raise
        return out

    def _split(self, chunk: bytes, out: list) -> None:
        """Feed the JSON scanner the bytes between marker lines; report the markers."""
        if self._held:
            chunk, self._held = self._held + chunk, b""
        i = 0
        while True:
            if self._line_start and chunk[i:i + 1] == b":":
                at = i
            else:  # a line starts after LF, or after a lone CR (fetch cut inside a CRLF)
                at = _line_start(chunk, i)
                if not at:
                    break
            stop = chunk.find(b"\n", at)
            line = chunk[at:] if stop < 0 else chunk[at:stop].rstrip(b"\r")
            if stop < 0:  # the line goes on in the next chunk: hold it if it may be a marker
                if any(m.startswith(line[:len(m)]) for m in LINE_STARTS) and len(line) <= self.max_event_size:
                    self._scan(chunk[i:at], out)
                    self._held = chunk[at:]
                    return
                break
            marker = from_line(line) if is_marker_line(line) else None
            if marker is None:
                self._scan(chunk[i:at + 1], out)
                i = at + 1
                continue
            self._scan(chunk[i:at], out)
            self._marker(marker, out)
            self._pos += stop + 1 - at
            self._line_start = True
            i = stop + 1
        self._scan(chunk[i:] if i else chunk, out)

    def _scan(self, chunk: bytes, out: list) -> None:
        if chunk:
            self._feed(chunk, out)
            self._line_start = chunk[-1:] in (b"\n", b"\r")

    def _marker(self, marker, out: list) -> None:
        if marker.kind != NOTE:  # the bytes of an attempt end here: what was being read is cut
            self._in_element = False
            self._pieces.clear()
            self._state = _START
        out.append(SseComment(marker.comment(), self._pos))

    def _feed(self, chunk: bytes, out: list) -> None:
        if self._state == _START and self._pos == 0 and not self._sequence:
            chunk = self._head + chunk
            if len(chunk) < len(BOM) and BOM.startswith(chunk):
                self._head = chunk
                return
            self._head = b""
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
                self._pos = len(BOM)
        i, n = 0, len(chunk)
        while i < n:
            if self._in_element:
                i = self._scan_element(chunk, i, out)
                continue
            m = _NOT_WS.search(chunk, i)
            if m is None:
                break
            i = m.start()
            c = chunk[i : i + 1]
            state = self._state
            if self._sequence and state != _DONE:  # one value after another
                self._begin_element(chunk, i)
                continue
            if state == _START:
                if c != b"[":
                    raise BadInput("not a JSON array: it does not start with '['", self._pos + i)
                self._state = _FIRST
            elif state in (_BEFORE, _FIRST):
                if c == b"]" and state == _FIRST:
                    self._state = _DONE
                elif c in b",]":
                    raise BadInput(f"invalid JSON array: unexpected {c.decode()!r}", self._pos + i)
                else:
                    self._begin_element(chunk, i)
                    continue
            elif state == _AFTER:
                if c == b",":
                    self._state = _BEFORE
                elif c == b"]":
                    self._state = _DONE
                else:
                    raise BadInput("invalid JSON array: expected ',' or ']'", self._pos + i)
            else:
                raise BadInput("data after the end of the JSON array", self._pos + i)
            i += 1
        if self._in_element:
            self._size += n - self._piece_from
            if self._size > self.max_event_size:
                raise EventTooLarge(self.max_event_size, self._start)
            if self._piece_from < n:
                self._pieces.append(chunk[self._piece_from :])
            self._piece_from = 0
        self._pos += n

    def close(self) -> FrameEnd:
        if self._error is not None:
            raise self._error
        held, self._held = self._held, b""
        if held:  # a last line without its line end: a marker, or bytes like any others
            marker = from_line(held.rstrip(b"\r")) if is_marker_line(held.rstrip(b"\r")) else None
            if marker is None:
                self._scan(held, [])
            else:
                out: list = []
                self._marker(marker, out)
                self._pos += len(held)
                return FrameEnd(None, self._pos, tuple(out))
        end = self._pos + len(self._head)
        if self._sequence:
            return FrameEnd("input ended inside a JSON value" if self._in_element else None, end)
        if self._state == _DONE:
            return FrameEnd(None, end)
        if self._in_element or self._state != _START or self._head:
            return FrameEnd("input ended before the JSON array was closed", end)
        return FrameEnd(None, end)  # empty input: nothing started, nothing cut

    # -- internals ----------------------------------------------------------------------

    def _begin_element(self, chunk: bytes, i: int) -> None:
        self._in_element = True
        self._start = self._pos + i
        self._piece_from = i
        self._size = 0
        self._depth = 0
        self._in_string = self._escape = False
        self._scalar = chunk[i] not in b'[{"'

    def _scan_element(self, chunk: bytes, i: int, out: list) -> int:
        """Advance through the element from ``i``; return where scanning stopped."""
        n = len(chunk)
        while i < n:
            if self._escape:
                self._escape = False
                i += 1
            elif self._in_string:
                m = _IN_STRING.search(chunk, i)
                if m is None:
                    return n
                i = m.end()
                if m.group() == b"\\":
                    self._escape = True
                else:
                    self._in_string = False
                    if self._depth == 0:  # a bare string element is complete
                        return self._end_element(chunk, i, out)
            elif self._scalar:
                m = _SCALAR_END.search(chunk, i)
                if m is None:
                    return n
                end = m.start()
                if end == self._piece_from and not self._pieces:
                    # A value that begins with ',' or ']' (a stray one between JSON lines):
                    # that byte is the element, or the scan would stand still.
                    end += 1
                return self._end_element(chunk, end, out)
            else:
                m = _TOKEN.search(chunk, i)
                if m is None:
                    return n
                i = m.end()
                c = chunk[m.start()]
                if c == 0x22:  # '"'
                    if i - m.start() == 1:  # the string goes on past this chunk
                        self._in_string = True
                    elif self._depth == 0:  # a bare string element is complete
                        return self._end_element(chunk, i, out)
                elif c == 0x5B or c == 0x7B:  # [ {
                    self._depth += 1
                else:
                    self._depth -= 1
                    if self._depth == 0:
                        return self._end_element(chunk, i, out)
        return n

    def _end_element(self, chunk: bytes, i: int, out: list) -> int:
        self._pieces.append(chunk[self._piece_from : i])
        raw = b"".join(self._pieces)
        self._pieces.clear()
        if len(raw) > self.max_event_size:
            raise EventTooLarge(self.max_event_size, self._start)
        self._in_element = False
        self._state = _AFTER
        out.append(SseEvent("message", decode_field(raw), None, None, self._start, self._pos + i))
        return i


def _line_start(chunk: bytes, i: int) -> int:
    """Where the first line that starts with ``:`` from ``i`` on begins, or 0."""
    lf, cr = chunk.find(b"\n:", i), chunk.find(b"\r:", i)
    return min(at for at in (lf, cr) if at >= 0) + 1 if lf >= 0 or cr >= 0 else 0
