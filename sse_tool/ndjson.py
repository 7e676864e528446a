"""Newline-delimited JSON to events: one event per non-empty line.

Ollama streams this way, and so do the JSON Lines records that sse-tool's own stages write.
Each complete line becomes an ``SseEvent`` of type ``message`` whose ``data`` is the line's
text (its JSON is parsed by whoever reads it). A last line without its newline is
truncation. Cost and memory follow ``SseParser``: pieces of a partial line are joined once,
and a line over the size limit raises ``EventTooLarge``.
"""

from __future__ import annotations

from .decode import BOM, decode_field
from .errors import EventTooLarge
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseEvent


class NdjsonParser:
    """Incremental line framer: ``feed(bytes) -> list[SseEvent]``, then ``close()``."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self._pos = 0  # input offset where the unterminated line starts
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._head: bytes | None = b""  # a possible BOM at the very start
        self._error: EventTooLarge | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
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
        lines = chunk.split(b"\n")
        rest = lines.pop()
        out: list[SseEvent] = []
        if lines:
            if self._partial:
                self._partial.append(lines[0])
                lines[0] = b"".join(self._partial)
                self._partial.clear()
                self._partial_len = 0
            pos = self._pos
            for line in lines:
                # measured like a partial line (CR included), so the limit trips the same
                # whatever the chunking
                if len(line) > self.max_event_size:
                    return self._fail(EventTooLarge(self.max_event_size, pos), out)
                text = line[:-1] if line[-1:] == b"\r" else line
                if text.strip():
                    out.append(SseEvent("message", decode_field(text), None, None, pos, pos + len(text)))
                pos += len(line) + 1
            self._pos = pos
        if rest:
            self._partial.append(rest)
            self._partial_len += len(rest)
            if self._partial_len > self.max_event_size:
                return self._fail(EventTooLarge(self.max_event_size, self._pos), out)
        return out

    def _fail(self, exc: EventTooLarge, out: list) -> list:
        # Lines before the oversized one are good data: hand them out first, fail next call.
        self._error = exc
        self._partial.clear()
        if out:
            return out
        raise exc

    def close(self) -> FrameEnd:
        if self._error is not None:
            raise self._error
        end = self._pos + self._partial_len + len(self._head or b"")
        if any(piece.strip() for piece in self._partial) or self._head:
            return FrameEnd("input ended in the middle of a line (no final newline)", end)
        return FrameEnd(None, end)
