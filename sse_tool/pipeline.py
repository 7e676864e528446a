"""Whatever an earlier stage wrote, as channel records: the input side of normalize and render.

Every stage accepts the output of any earlier stage, recognised from the first bytes:

* ``sse`` / ``json-array`` / ``ndjson``: provider bytes (``fetch`` output, a recording),
  framed here and normalized;
* ``events``: ``frame``'s JSON Lines (``{"event": ..., "data": ...}``), normalized;
* ``records``: ``normalize``'s JSON Lines (``{"type": "delta", ...}``), passed through.

JSON Lines of any kind start with ``{``; the first line's keys tell them apart. The reader
is sans-I/O like the layers it chains: ``feed(bytes) -> list[Record]``, ``close()`` returns
the last records, always ending with exactly one ``End`` (an input of no bytes at all is
truncated: no stream arrived). In-band markers (``marker.py``) are read in every kind.
"""

from __future__ import annotations

import orjson

from .errors import BadInput, EventTooLarge
from .framing import check_text, make_framer, sniff
from .marker import EXIT, NO_STREAM, NOTE, parse
from .model import End, Note, Record, Reset, Status, from_record
from .ndjson import NdjsonParser
from .normalize import Normalizer, failed_end
from .sse import DEFAULT_MAX_EVENT_SIZE, SseComment
from .wire import load_event

#: ``--from`` choices of the stages that read channel records
SOURCES = ("auto", "sse", "json-array", "ndjson", "events", "records")


def sniff_lines(first_line: dict) -> str:
    """Which kind of JSON Lines a stream is, from its first object."""
    if isinstance(first_line.get("type"), str) and (
        "channel" in first_line or first_line["type"] in ("end", "tool_call", "usage", "meta", "reset", "note")
    ):
        return "records"
    if "event" in first_line and "data" in first_line or set(first_line) <= {"comment", "offset"}:
        return "events"
    return "ndjson"


class RecordReader:
    """Bytes of any earlier stage's output in, channel records out."""

    def __init__(
        self, provider: str = "auto", source: str = "auto", *,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE, lenient: bool = False,
    ) -> None:
        if source not in SOURCES:
            raise ValueError(f"unknown source {source!r}")
        self.provider = provider
        self.source: str | None = None if source == "auto" else source
        self.max_event_size = max_event_size
        self.lenient = lenient
        self.normalizer: Normalizer | None = None
        self._framer = None
        self._head = bytearray()  # grows in place: a long first line costs linear time
        self._line_pending = False  # JSON Lines seen; only a newline (or EOF) decides their kind
        self._ended = False  # an End record was passed through (records input)
        #: bytes fed so far; none at all means no stream arrived
        self.received = 0
        #: bad input found after good records in the same chunk: those records were
        #: returned, and the next ``feed``/``close`` raises this (a caller may check it first)
        self.error: BadInput | None = None
        if self.source:
            self._start(self.source)

    def feed(self, chunk: bytes) -> list[Record]:
        if self.error is not None:
            raise self.error
        self.received += len(chunk)
        if self._framer is None:
            self._head += chunk
            if self._line_pending and b"\n" not in chunk:
                if len(self._head) > self.max_event_size:
                    raise EventTooLarge(self.max_event_size, 0)
                return []
            kind = self._sniff(final=False)
            if kind is None:
                return []
            self._start(kind)
            chunk, self._head = bytes(self._head), bytearray()
        return self._consume(self._framer.feed(chunk))

    def close(self) -> list[Record]:
        """The last records, ending with the one ``End``."""
        if self.error is not None:
            raise self.error
        if not self.received:
            return [End(Status.TRUNCATED, detail=NO_STREAM)]
        out: list[Record] = []
        if self._framer is None:
            self._start(self._sniff(final=True))
            out += self._consume(self._framer.feed(bytes(self._head)))
        frame_end = self._framer.close()
        if frame_end.items:
            out += self._consume(list(frame_end.items))
            if self.error is not None:
                raise self.error
        if self.normalizer is not None:
            return out + self.normalizer.close(frame_end)
        if not self._ended:
            out.append(End(Status.TRUNCATED, detail="input ended without an end record"))
        return out

    # -- internals ----------------------------------------------------------------------

    def _sniff(self, final: bool) -> str | None:
        kind = sniff(self._head, final)
        if kind == "sse" and not check_text(self._head, final):
            return None  # a few bytes of the first line: wait for more
        if kind != "ndjson":
            return kind
        line, newline, _ = self._head.lstrip(b" \t\r\n\xef\xbb\xbf").partition(b"\n")
        if not newline and not final:
            self._line_pending = True
            return None
        try:
            first = orjson.loads(line)
        except orjson.JSONDecodeError:
            return "ndjson"  # JSON over many lines: the framer reads it so
        return sniff_lines(first) if isinstance(first, dict) else "ndjson"

    def _start(self, kind: str) -> None:
        self.source = kind
        if kind in ("events", "records"):
            self._framer = NdjsonParser(max_event_size=self.max_event_size)
        else:
            # Other comments mean nothing here (the SSE parser reports the reset marker anyway).
            self._framer = make_framer(kind, max_event_size=self.max_event_size)
        if kind != "records":
            self.normalizer = Normalizer(self.provider, lenient=self.lenient,
                                         hold_broken=kind in ("ndjson", "events"))

    def _consume(self, items: list) -> list[Record]:
        out: list[Record] = []
        try:
            self._convert(items, out)
        except BadInput as exc:
            if not out:
                raise
            self.error = exc  # hand out the good records first (as the framers do)
        return out

    def _convert(self, items: list, out: list[Record]) -> None:
        if self.source == "records":
            for item in items:
                if type(item) is SseComment:
                    record = _marker_record(item.text)
                    if record is None:
                        continue
                else:
                    record = self._load_line(item, from_record)
                if not self._ended:  # anything after the end record is not this stream's
                    out.append(record)
                    self._ended = isinstance(record, End)
            return
        normalizer = self.normalizer
        for item in items:
            if self.source == "events" and type(item) is not SseComment:
                item = self._load_line(item, lambda rec: load_event(rec, item.offset))
            out += normalizer.feed(item)

    @staticmethod
    def _load_line(item, convert):
        try:
            rec = orjson.loads(item.data)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
            return convert(rec)
        except (ValueError, BadInput) as exc:
            raise BadInput(f"invalid record: {exc}", item.offset) from None


def _marker_record(text: str) -> Record | None:
    """The channel record an in-band marker stands for, among channel records."""
    marker = parse(text)
    if marker is None:
        return None
    if marker.kind == EXIT:
        return failed_end(marker.code, marker.text)
    if marker.kind == NOTE:
        return Note(marker.text)
    return Reset()
