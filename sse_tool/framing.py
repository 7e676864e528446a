"""Which framer reads an input, recognised from its first bytes.

Every stage accepts what an earlier stage writes, so the first non-blank byte decides:
``[`` is a streamed JSON array, ``{`` is JSON Lines (NDJSON from a provider, or sse-tool's
own records), anything else is SSE. ``AutoFramer`` holds the first bytes until they
decide, then hands everything to the framer chosen, so detection costs nothing after.
"""

from __future__ import annotations

from codecs import getincrementaldecoder

from .errors import BadInput
from .jsonarray import JsonArrayParser
from .ndjson import NdjsonParser
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseComment, SseEvent, SseParser

#: framing name -> framer class; ``--from`` choices come from here.
FRAMERS = {"sse": SseParser, "json-array": JsonArrayParser, "ndjson": NdjsonParser}

_BLANK = b" \t\r\n\xef\xbb\xbf"  # whitespace, and the BOM's bytes


def sniff(head: bytes, final: bool = False) -> str | None:
    """Name the framing of an input starting with ``head``; None if more bytes are needed."""
    first = head.lstrip(_BLANK)[:1]
    if first == b"[":
        return "json-array"
    if first == b"{":
        return "ndjson"
    if first or final:
        return "sse"
    return None


def check_text(head: bytes, final: bool = False) -> None:
    """Raise ``BadInput`` if the first line of ``head`` is binary (a NUL, or not UTF-8).

    SSE is UTF-8 text; the spec would read a PNG or random bytes as an event stream with
    no events, which only hides the mistake. Only the first line is judged (what arrived of
    it), so invalid bytes later in a real stream are still replaced, as the spec says.
    """
    start = len(head) - len(head.lstrip(_BLANK))  # blank lines and a BOM come first
    end = min((i for i in (head.find(b"\r", start), head.find(b"\n", start)) if i >= 0), default=len(head))
    line = head[start:end]
    bad = line.find(b"\0")
    if bad < 0:
        try:
            getincrementaldecoder("utf-8")().decode(line, final=final or end < len(head))
            return
        except UnicodeDecodeError as exc:
            bad = exc.start
    raise BadInput("binary data, not SSE, a JSON array or JSON lines", start + bad)


def make_framer(kind: str, *, comments: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE):
    if kind == "sse":
        return SseParser(comments=comments, max_event_size=max_event_size)
    return FRAMERS[kind](max_event_size=max_event_size)


class AutoFramer:
    """A framer that picks SSE, JSON array or NDJSON from the first bytes it is fed."""

    def __init__(self, *, comments: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE):
        self._options = {"comments": comments, "max_event_size": max_event_size}
        self._head: list[bytes] = []
        self.kind: str | None = None
        self._framer = None

    def feed(self, chunk: bytes) -> list[SseEvent | SseComment]:
        if self._framer is None:
            self._head.append(chunk)
            if sniff(chunk) is None:  # only blanks so far: the decision is still ahead
                return []
            head = b"".join(self._head)
            self._head.clear()
            self._choose(sniff(head))
            if self.kind == "sse":
                check_text(head)
            chunk = head
        return self._framer.feed(chunk)

    def close(self) -> FrameEnd:
        if self._framer is None:  # blanks only (or nothing): SSE, which finds no event in them
            self._choose("sse")
            self._framer.feed(b"".join(self._head))
        return self._framer.close()

    def _choose(self, kind: str) -> None:
        self.kind = kind
        self._framer = make_framer(kind, **self._options)
