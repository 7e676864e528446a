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
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseEvent

_NOT_WS = re.compile(rb"[^ \t\r\n]")
_IN_STRING = re.compile(rb'["\\]')
# A whole string in one match, or else a bracket, or a quote opening a string that this
# chunk does not close.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}"]', re.DOTALL)
_SCALAR_END = re.compile(rb"[],\s]")

# States of the array outside any element.
_START, _BEFORE, _FIRST, _AFTER, _DONE = range(5)


class JsonArrayParser:
    """Incremental framer for a streamed JSON array: ``feed(bytes) -> list``, ``close()``."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self._state = _START
        self._pos = 0  # input offset of the start of the current chunk
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

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if self._error is not None:
            raise self._error
        out: list[SseEvent] = []
        try:
            self._feed(chunk, out)
        except BadInput as exc:  # elements before the fault are good data: hand them out
            self._error = exc
            if not out:
                raise
        return out

    def _feed(self, chunk: bytes, out: list) -> None:
        if self._state == _START and self._pos == 0:
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
        end = self._pos + len(self._head)
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
                return self._end_element(chunk, m.start(), out)
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
