"""Newline-delimited JSON to events: one event per non-empty line.

Ollama streams this way, and so do the JSON Lines records that sse-tool's own stages write.
Each complete line becomes an ``SseEvent`` of type ``message`` whose ``data`` is the line's
text (its JSON is parsed by whoever reads it). A last line without its newline is
truncation, unless it is whole by itself (a JSON value: error bodies often lack the final
newline). A line ``: sse-tool ...`` is an in-band marker (``marker.py``), reported as an
``SseComment``. Cost and memory follow ``SseParser``: pieces of a partial line are joined
once, and a line over the size limit raises ``EventTooLarge``.

When the first line starts like JSON but is not a JSON value by itself, and ends where a
pretty-printer breaks a line, the input is JSON written over many lines (a pretty-printed
error body, say): it is read from there on as a sequence of JSON values
(``JsonArrayParser(sequence=True)``), one event per value. A first line that is merely
broken is read as a line, so its damage is bad input at its offset, as on any other line.

With ``raw=True`` (for a reader that parses every line as JSON) an event's ``data`` is the
line's bytes, not decoded: orjson reads bytes directly, so decoding first would only be
undone. A chunk of lines that each start with ``{`` (no blank line, no marker, no CR),
nearly every chunk of such lines, is then checked with a few C calls and its lines handed
out without looking at each one. With ``runs=True`` as well, such a chunk's lines come
as one ``runs.LineRun``: a sequence of those same events, made only when asked for,
which a reader of whole batches (``batch.py``) reads in the bytes as they arrived.
"""

from __future__ import annotations

import re

import orjson

from .decode import BOM, decode_field
from .errors import EventTooLarge
from .jsonarray import JsonArrayParser
from .marker import from_line
from .runs import LineRun
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseComment, SseEvent


_new = tuple.__new__  # builds an SseEvent without the keyword handling of its constructor
# a line that does not start with "{": one regex search over a chunk, twice as fast as
# asking each line
_LF_NOT_BRACE = re.compile(rb"\n(?!\{)")


class NdjsonParser:
    """Incremental line framer: ``feed(bytes) -> list[SseEvent]`` (with ``runs``, or one
    ``runs.LineRun``, a sequence of them), then ``close()``."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, raw: bool = False,
                 runs: bool = False) -> None:
        self.max_event_size = max_event_size
        #: events' data as the line's bytes, not decoded
        self.raw = raw
        #: with ``raw``: a chunk of plain lines as one ``LineRun`` (not a list of events)
        self.runs = raw and runs
        self._pos = 0  # input offset where the unterminated line starts
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._head: bytes | None = b""  # a possible BOM at the very start
        self._error: EventTooLarge | None = None
        self._first = True  # no non-blank line seen yet: it decides lines or many-line JSON
        self._values: JsonArrayParser | None = None  # many-line JSON, once decided

    def feed(self, chunk: bytes) -> list[SseEvent | SseComment]:
        if self._values is not None:
            return self._values.feed(chunk)
        if self._error is not None:
            raise self._error
        if self._head is not None:
            chunk = self._head + chunk
            if len(chunk) < len(BOM) and BOM.startswith(chunk):
                self._head = chunk
                return []
            self._head = None
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
                self._pos = len(BOM)
        if self.raw and not self._first:
            run = self._run(chunk)
            if run is not None:
                return run if self.runs else run.events()
        lines = chunk.split(b"\n")
        rest = lines.pop()
        out: list = []
        if lines:
            if self._partial:
                self._partial.append(lines[0])
                lines[0] = b"".join(self._partial)
                self._partial.clear()
                self._partial_len = 0
            pos = self._pos
            for i, line in enumerate(lines):
                # measured like a partial line (CR included), so the limit trips the same
                # whatever the chunking
                if len(line) > self.max_event_size:
                    return self._fail(EventTooLarge(self.max_event_size, pos), out)
                text = line[:-1] if line[-1:] == b"\r" else line
                if not text.strip():
                    pos += len(line) + 1
                    continue
                if self._first:
                    self._first = False
                    if _many_lines(text):
                        return out + self._to_values(b"\n".join([*lines[i:], rest]), pos)
                marker = from_line(text) if text[:1] == b":" else None
                if marker is not None:
                    out.append(SseComment(marker.comment(), pos))
                else:
                    data = text if self.raw else decode_field(text)
                    out.append(_new(SseEvent, ("message", data, None, None, pos, pos + len(text))))
                pos += len(line) + 1
            self._pos = pos
        if rest:
            self._partial.append(rest)
            self._partial_len += len(rest)
            if self._partial_len > self.max_event_size:
                return self._fail(EventTooLarge(self.max_event_size, self._pos), out)
        return out

    def _run(self, chunk: bytes):
        """The lines the chunk completes as one ``LineRun``, if each starts with ``{`` and
        none holds a CR or is over the size limit (then each is a line as ``feed``'s loop
        would read it: not blank, not a marker, nothing to strip), else None (nothing
        done: the loop reads the chunk)."""
        cut = chunk.rfind(b"\n")
        if cut < 0 or 13 in chunk:
            return None
        block = b"".join([*self._partial, chunk[:cut]]) if self._partial else chunk[:cut]
        if (block[:1] != b"{" or 13 in block or _LF_NOT_BRACE.search(block) is not None
                or len(block) > self.max_event_size):  # (a longer block: the loop checks each line)
            return None
        rest = chunk[cut + 1:]
        if len(rest) > self.max_event_size:
            return None  # feed fails it, after the lines before it
        self._partial.clear()
        if rest:
            self._partial.append(rest)
        self._partial_len = len(rest)
        run = LineRun(block, self._pos)
        self._pos += len(block) + 1
        return run

    def _fail(self, exc: EventTooLarge, out: list) -> list:
        # Lines before the oversized one are good data: hand them out first, fail next call.
        self._error = exc
        self._partial.clear()
        if out:
            return out
        raise exc

    def _to_values(self, data: bytes, pos: int) -> list:
        """Read the rest, from the first line on, as JSON values over many lines."""
        self._values = JsonArrayParser(max_event_size=self.max_event_size, sequence=True, start=pos)
        self._partial.clear()
        return self._values.feed(data)

    def close(self) -> FrameEnd:
        if self._values is not None:
            return self._values.close()
        if self._error is not None:
            raise self._error
        end = self._pos + self._partial_len + len(self._head or b"")
        last = b"".join(self._partial)
        text = last[:-1] if last[-1:] == b"\r" else last
        if text.strip() and not self._head:
            # A last line without its newline is cut, unless it is whole by itself: a JSON
            # value (an error body has no final newline) or a marker.
            marker = from_line(text) if text[:1] == b":" else None
            if marker is not None:
                return FrameEnd(None, end, (SseComment(marker.comment(), self._pos),))
            if _is_json(text):
                data = text if self.raw else decode_field(text)
                event = SseEvent("message", data, None, None, self._pos, self._pos + len(text))
                return FrameEnd(None, end, (event,))
        if text.strip() or self._head:
            return FrameEnd("input ended in the middle of a line (no final newline)", end)
        return FrameEnd(None, end)


def _is_json(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def _many_lines(first: bytes) -> bool:
    """Whether a first line starts a JSON value written over many lines: an opening bracket
    followed by nothing or a key (``{``, ``[{``, ``{"error": {``), not whole itself, and
    ending where a pretty-printer breaks a line (after ``{``, ``[``, ``,`` or ``:``). A line
    ending in a value (``{"done":false``) is one broken line, as any other line's damage."""
    head = first.strip()
    rest = head.lstrip(b"{[ \t\r")
    return (head[:1] in (b"{", b"[") and rest[:1] in (b"", b'"') and head[-1:] in _OPENS
            and not _is_json(first))


#: what a pretty-printed JSON value's first line ends with: the value goes on below
_OPENS = (b"{", b"[", b",", b":")
