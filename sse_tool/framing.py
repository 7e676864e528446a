"""Which framer reads an input, recognised from its first bytes.

Every stage accepts what an earlier stage writes, so the first non-blank byte decides
(leading in-band marker lines, such as a retry's note before the body, are skipped):
``[`` is a streamed JSON array, ``{`` is JSON Lines (NDJSON from a provider, or sse-tool's
own records), anything else is SSE if its first line begins like SSE (``check_text``); a
control byte first (a NUL below 16 MiB) is AWS's binary event stream, told apart from
other binary data by its whole 12-byte prelude and the CRC in it. ``AutoFramer`` holds
the first bytes until they decide, then hands everything to the framer chosen, so
detection costs nothing after.
"""

from __future__ import annotations

from codecs import getincrementaldecoder

from .errors import BadInput
from .eventstream import (PRELUDE, EventStreamParser, could_be_prelude, looks_like_prelude, marker_after,
                          marker_may_start)
from .jsonarray import JsonArrayParser
from .marker import LINE_STARTS
from .ndjson import NdjsonParser
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseComment, SseEvent, SseParser

#: framing name -> framer class; ``--from`` choices come from here.
FRAMERS = {"sse": SseParser, "json-array": JsonArrayParser, "ndjson": NdjsonParser,
           "aws-eventstream": EventStreamParser}

_BLANK = b" \t\r\n\xef\xbb\xbf"  # whitespace, and the BOM's bytes


def body_start(head: bytes, final: bool = False) -> int | None:
    """Where the body of ``head`` starts, past blanks and whole in-band marker lines (an
    earlier stage's notes may come before the body's first byte); None while a marker
    line, or what may still become one, is arriving."""
    start = 0
    while True:
        start = len(head) - len(head[start:].lstrip(_BLANK))
        rest = head[start:start + len(LINE_STARTS[0])]
        if not head.startswith(LINE_STARTS, start):
            if rest and not final and any(m.startswith(rest) for m in LINE_STARTS):
                return None  # ": sse-t" may still become a marker
            return start
        end = head.find(b"\n", start)
        if end < 0:
            return None if not final else len(head)
        start = end + 1


def binary(head: bytes) -> bool:
    """Whether ``head`` starts as binary data does: a control byte that no text starts
    with (an event-stream message's length starts with a zero byte below 16 MiB)."""
    return head[:1] < b" " and head[:1] not in (b"", b"\t", b"\n", b"\r")


def sniff(head: bytes, final: bool = False) -> str | None:
    """Name the framing of an input starting with ``head``; None if more bytes are needed."""
    if not binary(head):
        start = body_start(head, final)
        if start is None:
            return None
        if binary(head[start:]) and not head[:start].strip(_BLANK):
            return "sse"  # blank lines before binary data: refused as such
        head = head[start:]  # (after an earlier stage's markers, an event stream)
    if binary(head):
        # An earlier stage's marker may follow the first bytes at once (it cut the body).
        cut = marker_after(head, 1, min(len(head), 2 * PRELUDE))
        prelude = head if cut is None or cut >= PRELUDE else head[:cut]
        if len(prelude) >= PRELUDE:
            if looks_like_prelude(prelude):
                return "aws-eventstream"
            if not final and len(head) < 2 * PRELUDE and marker_may_start(head, 1):
                return None  # (the marker that would make it a cut prelude is arriving)
            return "sse"  # binary, refused as such
        if cut is None and not final:
            return None
        return "aws-eventstream" if could_be_prelude(prelude) else "sse"  # a torn prelude is a cut
    first = head.lstrip(_BLANK)[:1]
    if first == b"[":
        return "json-array"
    if first == b"{":
        return "ndjson"
    if first or final:
        return "sse"
    return None


#: how an SSE line starts: a comment, or a field the spec knows (its name, then a colon
#: or the end of the line)
_SSE_STARTS = (b":", b"data", b"event", b"id", b"retry")


def check_text(head: bytes, final: bool = False) -> bool:
    """Whether ``head`` (the first bytes of an input sniffed as SSE) may be read as SSE:
    True if its first line begins like SSE, False if too little of it arrived to tell;
    ``BadInput`` if it begins like nothing known (binary data, an HTML page, plain text).

    Input that begins like SSE is SSE, read as the spec says (invalid UTF-8 replaced by
    U+FFFD, NUL kept), whatever follows. Only input that begins like nothing known is
    refused: the spec would read a PNG or a web page as a stream with no events, which
    only hides the mistake.
    """
    start = len(head) - len(head.lstrip(_BLANK))  # blank lines and a BOM come first
    ends = [i for i in (head.find(b"\r", start), head.find(b"\n", start)) if i >= 0]
    end = min(ends, default=len(head))
    line = head[start:end]
    whole = final or end < len(head)
    for known in _SSE_STARTS:
        if line.startswith(known) and (known == b":" or line[len(known):len(known) + 1] in (b":", b"")
                                       and (whole or len(line) > len(known))):
            return True
        if end == len(head) and known.startswith(line):  # "da" may still become "data:"
            return final  # at the end: a stream cut in its first line
    if whole and any(known.startswith(line) for known in _SSE_STARTS):
        # the start of a field name, then an earlier stage's marker: a stream cut short
        after = head[end + (2 if head[end:end + 2] == b"\r\n" else 1):]
        if after.startswith(LINE_STARTS):
            return True
        if not final and any(m.startswith(after) for m in LINE_STARTS):
            return False  # the next line may be a marker: wait for it
    bad = line.find(b"\0")
    if bad < 0:
        try:
            getincrementaldecoder("utf-8")().decode(line, final=whole)
        except UnicodeDecodeError as exc:
            bad = exc.start
    if bad >= 0:
        raise BadInput("binary data, not SSE, a JSON array or JSON lines", start + bad)
    shown = line[:40].decode("utf-8", "replace")
    raise BadInput(f"not an event stream, a JSON array or JSON lines: it starts with {shown!r}", start)


def make_framer(kind: str, *, comments: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
                raw: bool = False, runs: bool = False):
    """The framer for ``kind``; ``raw``: events' data as bytes where the framer can give
    them (SSE and NDJSON: ``SseEvent.data``), for a reader that parses it as JSON; with
    ``runs`` too, a run read at once as one ``runs.EventRun``."""
    if kind == "sse":
        return SseParser(comments=comments, max_event_size=max_event_size, raw=raw, runs=runs)
    if kind == "ndjson":
        return NdjsonParser(max_event_size=max_event_size, raw=raw, runs=runs)
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
                if sniff(chunk) is None and not binary(chunk):  # blanks: the decision is ahead
                    return []
                self._blank = False
            head = b"".join(self._head)
            kind = sniff(head)
            if kind is None:  # an event-stream prelude still short of its 12 bytes
                return []
            if kind == "sse" and not check_text(head):
                self._head[:] = [head]  # a few bytes of the first line: wait for more
                return []
            self._head.clear()
            self._choose(kind)
            chunk = head
        return self._framer.feed(chunk)

    def close(self) -> FrameEnd:
        if self._framer is None:  # blanks only (or nothing): SSE, which finds no event in them
            head = b"".join(self._head)
            kind = sniff(head, final=True)
            if kind != "aws-eventstream":  # (which is a torn prelude here)
                check_text(head, final=True)  # anything else must begin like SSE
                kind = "sse"
            self._choose(kind)
            items = self._framer.feed(head)  # what the short input held (a marker, say)
            end = self._framer.close()
            return end._replace(items=(*items, *end.items)) if items else end
        return self._framer.close()

    def _choose(self, kind: str) -> None:
        self.kind = kind
        self._framer = make_framer(kind, **self._options)
