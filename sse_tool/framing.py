"""Which framer reads an input, recognised from its first bytes.

Every stage accepts what an earlier stage writes, so the first non-blank byte decides:
``[`` is a streamed JSON array, ``{`` is JSON Lines (NDJSON from a provider, or sse-tool's
own records), anything else is SSE; a NUL byte first is AWS's binary event stream, told
apart from other binary data by its whole 12-byte prelude and the CRC in it.
``AutoFramer`` holds the first bytes until they decide, then hands everything to the
framer chosen, so detection costs nothing after.
"""

from __future__ import annotations

from codecs import getincrementaldecoder

from .errors import BadInput
from .eventstream import PRELUDE, EventStreamParser, could_be_prelude, looks_like_prelude
from .jsonarray import JsonArrayParser
from .ndjson import NdjsonParser
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseComment, SseEvent, SseParser

#: framing name -> framer class; ``--from`` choices come from here.
FRAMERS = {"sse": SseParser, "json-array": JsonArrayParser, "ndjson": NdjsonParser,
           "aws-eventstream": EventStreamParser}

_BLANK = b" \t\r\n\xef\xbb\xbf"  # whitespace, and the BOM's bytes


def sniff(head: bytes, final: bool = False) -> str | None:
    """Name the framing of an input starting with ``head``; None if more bytes are needed."""
    if head[:1] == b"\0":  # an event-stream message's length starts with a zero byte
        if len(head) >= PRELUDE:
            return "aws-eventstream" if looks_like_prelude(head) else "sse"  # sse: binary, refused
        if not final:
            return None
        return "aws-eventstream" if could_be_prelude(head) else "sse"  # a torn prelude is a cut
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
    """A framer that picks SSE, a JSON array, NDJSON or an AWS event stream from the first
    bytes it is fed."""

    def __init__(self, *, comments: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE):
        self._options = {"comments": comments, "max_event_size": max_event_size}
        self._head: list[bytes] = []
        self._blank = True  # every byte held so far is a blank
        self.kind: str | None = None
        self._framer = None

    def feed(self, chunk: bytes) -> list[SseEvent | SseComment]:
        if self._framer is None:
            self._head.append(chunk)
            if self._blank:
                if sniff(chunk) is None and chunk[:1] != b"\0":  # blanks: the decision is ahead
                    return []
                self._blank = False
            head = b"".join(self._head)
            kind = sniff(head)
            if kind is None:  # an event-stream prelude still short of its 12 bytes
                return []
            self._head.clear()
            self._choose(kind)
            if self.kind == "sse":
                check_text(head)
            chunk = head
        return self._framer.feed(chunk)

    def close(self) -> FrameEnd:
        if self._framer is None:  # blanks only (or nothing): SSE, which finds no event in them
            head = b"".join(self._head)
            self._choose(sniff(head, final=True))
            if self.kind != "aws-eventstream":  # (which is a torn prelude here)
                check_text(head, final=True)  # another short input starting with NUL is binary
            self._framer.feed(head)
        return self._framer.close()

    def _choose(self, kind: str) -> None:
        self.kind = kind
        self._framer = make_framer(kind, **self._options)
