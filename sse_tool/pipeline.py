"""Whatever an earlier stage wrote, as channel records: the input side of normalize and render.

Every stage accepts the output of any earlier stage, recognised from the first bytes:

* ``sse`` / ``json-array`` / ``ndjson`` / ``aws-eventstream``: provider bytes (``fetch``
  output, a recording), framed here and normalized;
* ``events``: ``frame``'s JSON Lines (``{"event": ..., "data": ...}``), normalized;
* ``records``: ``normalize``'s JSON Lines (``{"type": "delta", ...}``), passed through.

JSON Lines of any kind start with ``{``; the first line's keys tell them apart. The reader
is sans-I/O like the layers it chains: ``feed(bytes) -> list[Record]``, ``close()`` returns
the last records, always ending with exactly one ``End`` (an input of no bytes at all is
truncated: no stream arrived). In-band markers (``marker.py``) are read in every kind.

Where it normalizes, two things follow the provider's adapter: ``<think>`` blocks in the
answer move to the reasoning channel (``think.py``, ``think_tags``), and the ``End`` gets
each tool call's summary (``toolcalls.py``). Channel records passed through were already
normalized, so neither touches them.
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, is_

import orjson
from orjson import JSONDecodeError, loads

from .batch import delta_lines, frame_deltas, quick_records
from .decode import decode_field
from .errors import BadInput, EventTooLarge
from .framing import body_start, check_text, make_framer, sniff
from .marker import EXIT, NO_STREAM, NOTE, parse
from .model import (
    RECORD_TYPES, Channel, Delta, End, Note, Record, Reset, Status, ToolCall,
    from_record,
)
from .ndjson import NdjsonParser
from .normalize import Normalizer, failed_end
from .providers import PROVIDERS
from .runs import EventRun
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseComment, SseEvent
from .think import ThinkTags
from .toolcalls import ToolCallCheck
from .wire import load_event

#: the end record's ``detail`` for a complete stream whose <think> block never closed
UNCLOSED_THINK = "the reasoning block (<think>) was never closed: the reasoning was cut short"

#: ``--from`` choices of the stages that read channel records
SOURCES = ("auto", "sse", "json-array", "ndjson", "aws-eventstream", "events", "records", "recording")
_MAGIC = b"sse-tool recording 1"  # recording.MAGIC, known without importing that at start-up


def sniff_lines(first_line: dict) -> str:
    """Which kind of JSON Lines a stream is, from its first object."""
    kind = first_line.get("type")
    if isinstance(kind, str) and ("channel" in first_line or kind in RECORD_TYPES):
        return "records"
    if "event" in first_line and "data" in first_line or set(first_line) <= {"comment", "offset"}:
        return "events"
    return "ndjson"


class RecordReader:
    """Bytes of any earlier stage's output in, channel records out."""

    def __init__(
        self, provider: str = "auto", source: str = "auto", *,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE, think_tags: str = "auto", lenient: bool = False,
        fast: bool = True,
    ) -> None:
        if source not in SOURCES:
            raise ValueError(f"unknown source {source!r}")
        if provider != "auto" and provider not in PROVIDERS:  # (at once, not when data comes)
            raise ValueError(f"unknown provider {provider!r}")
        self.think_tags = think_tags
        self._think = None if think_tags == "off" else ThinkTags(think_tags)
        self._calls = ToolCallCheck()
        self.provider = provider
        self.source: str | None = None if source == "auto" else source
        self.max_event_size = max_event_size
        #: what the framer returned for the last ``feed`` or ``close`` (events, reset
        #: markers, or JSON lines before they are read; a sequence, a list or a
        #: ``runs.EventRun``), for a caller that looks at the stream's shape beside its
        #: records (``inspect``)
        self.items: list = []
        #: the framing's end, once ``close`` has run (None before, or if nothing arrived)
        self.frame_end: FrameEnd | None = None
        self.lenient = lenient
        #: the recording's head and end (``recording.Recording``, without its chunks) when
        #: the input is a ``fetch --record`` recording, whose body is the stream read
        self.recording = None
        self._unwrap = None
        # the first bytes, while they may still open a recording (None: decided)
        self._magic: bytes | None = b"" if source == "auto" else None
        #: False: every item through ``Normalizer.feed`` and ``from_record`` (the reference
        #: the fast paths are held to)
        self.fast = fast
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
        if source == "recording":
            self.source = None  # the body's kind is found from its first bytes
            self._start_recording()
        if self.source:
            self._start(self.source)

    @property
    def framer(self):
        """The framer reading the input, once the first bytes chose one (else None).

        A caller may feed it directly from then on and hand each of its items to
        ``normalizer.feed`` (``inspect`` does, to place every event's records in time);
        ``close`` still ends both."""
        return self._framer

    def feed(self, chunk: bytes) -> list[Record]:
        if self.error is not None:
            raise self.error
        if self._magic is not None:
            chunk = self._recording_or_not(chunk)
        if self.recording is not None:
            chunk = self._unwrap.body(self._unwrap.feed(chunk))
            if not chunk:
                self.items = []
                return self._after_body([])
            return self._after_body(self._feed(chunk))
        return self._feed(chunk)

    def _feed(self, chunk: bytes) -> list[Record]:
        self.received += len(chunk)
        if self._framer is None:
            self._head += chunk
            self.items = []
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
        out: list[Record] = []
        if self._magic:  # a few bytes that never became a recording's first line: the input
            out += self._feed(self._magic)
        self._magic = None
        if self.recording is not None:
            body = self._unwrap.body(self._unwrap.close())
            out += self._after_body(self._feed(body) if body else [])
            if self.error is not None:
                raise self.error
        self.items = []
        if not self.received:
            return out + [End(Status.TRUNCATED, detail=NO_STREAM)]
        if self._framer is None:
            self._start(self._sniff(final=True))
            out += self._consume(self._framer.feed(bytes(self._head)))
        frame_end = self.frame_end = self._framer.close()
        if frame_end.items:
            out += self._consume(list(frame_end.items))
            if self.error is not None:
                raise self.error
        if self.normalizer is not None:
            return out + self._finish(self.normalizer.close(frame_end))
        if not self._ended:
            out.append(End(Status.TRUNCATED, detail="input ended without an end record"))
        return out

    def failed(self, code: int, detail: str, offset: int | None = None) -> list[Record]:
        """The last records of an input this stage could not read on (``feed`` or ``close``
        raised ``BadInput``): as ``close`` ends one an earlier stage failed on (what the
        think tags held, the End with the tool calls' summary), the End standing for
        this failure, so every path through the pipe ends alike."""
        end = failed_end(code, detail, offset)
        return self._finish([end]) if self.normalizer is not None else [end]

    # -- internals ----------------------------------------------------------------------

    def _recording_or_not(self, chunk: bytes) -> bytes:
        """The input so far once its first bytes tell whether it is a recording (a
        recording's body is then read through ``recording.ChunkReader``); b"" until they do."""
        head = self._magic + chunk
        if len(head) < len(_MAGIC) and _MAGIC.startswith(head):
            self._magic = head
            return b""
        self._magic = None
        if head.startswith(_MAGIC):
            self._start_recording()
        return head

    def _start_recording(self) -> None:
        from .recording import ChunkReader

        # a chunk line holds one read of the body, each byte escaped in at most 4
        self._unwrap = ChunkReader(max_line=4 * self.max_event_size + 64)
        self.recording = self._unwrap.recording

    def _after_body(self, records: list[Record]) -> list[Record]:
        """A bad line of the recording counts after the records of the lines before it."""
        if self._unwrap.error is not None and self.error is None:
            if not records:
                raise self._unwrap.error
            self.error = self._unwrap.error
        return records

    def _sniff(self, final: bool) -> str | None:
        kind = sniff(self._head, final)
        if kind == "sse" and not check_text(self._head, final):
            return None  # a few bytes of the first line: wait for more
        if kind != "ndjson":
            return kind
        line, newline, _ = self._head[body_start(self._head, final):].partition(b"\n")
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
        # Events' data as bytes (SSE, NDJSON, JSON lines): it is parsed as JSON here, and
        # orjson reads UTF-8 bytes, so decoding first would only be undone.
        if kind in ("events", "records"):
            self._framer = NdjsonParser(max_event_size=self.max_event_size, raw=True, runs=self.fast)
        else:
            # Other comments mean nothing here (the SSE parser reports the reset marker anyway).
            self._framer = make_framer(kind, max_event_size=self.max_event_size, raw=True, runs=self.fast)
        if kind != "records":
            self.normalizer = Normalizer(self.provider, lenient=self.lenient)

    def convert(self, items: list, at: list[int]) -> list[Record]:
        """The records of items a caller took from ``framer`` itself, as ``feed`` gives
        them, and in ``at``, for each record, where the item that made it ends in the
        input (an event's ``end``, a comment's offset): a caller that knows when each byte
        arrived places the records in time so (``inspect``). Bad input as in ``feed``."""
        if self.error is not None:
            raise self.error
        return self._consume(items, at)

    def _consume(self, items: list, at: list[int] | None = None) -> list[Record]:
        self.items = items
        out: list[Record] = []
        try:
            if self.source == "records":
                self._pass(items, out)
            else:
                self._convert(items, out, at)
        except BadInput as exc:
            if not out:
                raise
            self.error = exc  # hand out the good records first (as the framers do)
        return out

    def _track(self, records: list[Record]) -> list[Record]:
        """Tool calls noted for the end's summary (the text itself is not kept: normalize's
        memory must not grow with the answer)."""
        for record in records:
            kind = type(record)
            if kind is ToolCall:
                self._calls.add(record)
            elif kind is Reset:
                self._calls = ToolCallCheck()
        return records

    def _pass(self, items: list, out: list[Record]) -> None:
        """Channel records, passed through (a delta line is read with a few plain tests;
        any other line by ``from_record``, which type-checks every field)."""
        if self.fast and (isinstance(items, EventRun) or len(items) > 1) and self._deltas(items, out):
            return
        for item in items:
            if type(item) is SseComment:
                record = _marker_record(item.text)
                if record is None:
                    continue
            else:
                record = _delta_line(item.data) if self.fast else None
                if record is None:
                    record = self._load_line(item, from_record)
            if not self._ended:  # anything after the end record is not this stream's
                out.append(record)
                self._ended = type(record) is End

    def _deltas(self, items: list, out: list[Record]) -> bool:
        """If every item is a delta record exactly as ``normalize`` writes it, append their
        records and return True (else do nothing; see ``batch.delta_lines``)."""
        return not self._ended and delta_lines(items, out)

    def _convert(self, items: list, out: list[Record], at: list[int] | None = None) -> None:
        """Events (or frame's records of them) normalized.

        The common delta event takes a fast path: its JSON parsed once, the adapter's
        ``quick`` asked, its record appended; anything ``quick`` does not take, and every
        item while the normalizer owes something else (``fast_path`` is None), goes through
        ``Normalizer.feed``, which gives the same records (see ``tests/test_fast_paths.py``).
        Where the adapter knows that event's exact lines, a whole batch of them is read
        ahead with a few C calls (``batch.py``), in the raw data or in frame's records;
        once an event that goes to ``feed`` changes those lines (OpenAI's name the model),
        the rest of the batch is read item by item. With ``at``, each record's item's end
        goes there too (see ``convert``).
        """
        normalizer = self.normalizer
        lines = self.source == "events"
        quick = normalizer.fast_path() if self.fast else None
        # the records of the adapter's common delta event, read for a whole batch of events
        # at once where the adapter knows its exact lines (a Delta for each such event)
        ready = None
        if quick is not None and (isinstance(items, EventRun) or len(items) > 1):
            shape = normalizer.fast_lines()
            if shape is not None:
                ready = (frame_deltas if lines else quick_records)(items, *shape)
        think = self._think
        count, i = len(ready) if ready is not None else len(items), 0  # (a run's events counted once)
        # where the batch read no record, or (while <think> tags may open the answer) an
        # answer's: each is handled alone, the records between added in one go (tested by
        # identity: a record's == is Python code)
        stops = _stops(ready, think is not None) if ready is not None else None
        while i < count:
            if ready is not None and quick is not None:
                try:
                    stop = stops.index(True, i)
                except ValueError:
                    stop = count
                if stop > i:
                    out += ready[i:stop]
                    if at is not None:
                        at += map(_END, items[i:stop])
                    i = stop
                    if i == count:
                        break
            item, record = items[i], ready[i] if ready is not None else None
            i += 1
            event = data = None  # (a comment has neither; frame's record only once read)
            if record is None and type(item) is not SseComment:
                if not lines:
                    event, data = item.event, item.data
                elif self.fast:
                    event, data = _plain_event(item.data)  # (None, None) for another line
            if quick is not None and (record is not None or data is not None):
                if record is None:
                    record = quick_record(quick, event, data)
                if record is not None:
                    if think is not None and record[0] is _ANSWER:
                        records = self._after([record])
                        out += records
                        think = self._think
                        if think is None and ready is not None:
                            stops = _stops(ready, False)
                        if at is not None:
                            at += repeat(item.end, len(records))
                    else:
                        out.append(record)
                        if at is not None:
                            at.append(item.end)
                    continue
            if lines and type(item) is not SseComment:
                if data is not None:  # what load_event makes of a plain record
                    item = _new(SseEvent, (event, data, None, None, item.offset, item.offset))
                else:
                    item = self._load_line(item, lambda rec, at=item.offset: load_event(rec, at))
            records = normalizer.feed(item)
            if records:
                # Past the answer's start there is nothing to split, until a retry's Reset
                # (which the normalizer hands out alone) starts a new attempt.
                if self._think is not None or type(records[0]) is Reset:
                    records = self._after(records)
                    if (think is None) != (self._think is None) and ready is not None:
                        stops = _stops(ready, self._think is not None)
                    think = self._think
                out += self._track(records)
                if at is not None:
                    at += repeat(item.offset if type(item) is SseComment else item.end, len(records))
            if self.fast:
                quick = normalizer.fast_path()
                if ready is not None and normalizer.fast_lines() != shape:
                    ready = None  # the rest of the batch read item by item

    def _after(self, records: list[Record]) -> list[Record]:
        """The adapter's records with ``<think>`` blocks split out of the answer (once the
        answer is past them, or with ``off``, the records as they are)."""
        think = self._think
        if self.think_tags == "off":
            return records
        out: list[Record] = []
        for record in records:
            kind = type(record)
            if kind is Delta and think is not None and record.channel is Channel.ANSWER:
                out += think.feed(record.text)
                if think.done:  # the rest of the answer passes as it is
                    think = self._think = None
                continue
            if kind is Reset and self.think_tags != "off":  # its answer may open with <think> again
                think = self._think = ThinkTags(self.think_tags)
            out.append(record)
        return out

    def _finish(self, records: list[Record]) -> list[Record]:
        """The last records: what the think tags held back, then the ``End`` with the tool
        calls' summary (and, for a ``<think>`` never closed, that the reasoning was cut)."""
        *rest, end = records
        rest = self._after(rest)
        if self._think is not None:
            rest += self._think.close()
            if self._think.cut and end.detail is None:
                end = end._replace(detail=UNCLOSED_THINK)
        self._track(rest)
        return [*rest, end._replace(tool_calls=self._calls.summary(end.status is Status.COMPLETE))]

    @staticmethod
    def _load_line(item, convert):
        data = item.data
        try:
            try:
                rec = loads(data)
            except JSONDecodeError:
                if type(data) is not bytes:
                    raise
                rec = loads(decode_field(data))  # invalid UTF-8 reads as U+FFFD, as in text
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
            return convert(rec)
        except (ValueError, BadInput) as exc:
            raise BadInput(f"invalid record: {exc}", item.offset) from None


_ANSWER = Channel.ANSWER
#: how an event's data starts when it is a JSON object: frame's records hold the data as a
#: JSON string, the raw framers give bytes (the JSON array and AWS framers give text, which
#: the fast path leaves to feed)
_BRACES = ("{", b"{")
_CHANNELS = {channel.value: channel for channel in Channel}
_NOT_PLAIN = (None, None)  # (event, data) of a line that is not a plain event record
_new = tuple.__new__  # builds a Delta without the keyword handling of its constructor
_END = attrgetter("end")  # where an event ends in the input


def _stops(ready: list, answers: bool) -> list[bool]:
    """For each record a batch read (None where it read none), whether the item must be
    read alone: where there is none, and with ``answers`` where it is an answer's."""
    if answers:
        return [record is None or record[0] is _ANSWER for record in ready]
    return list(map(is_, ready, repeat(None)))


def quick_record(quick, event: str, data: str | bytes) -> Record | None:
    """The record the adapter's ``quick`` reads in an event whose data is a JSON object, or
    None (``Normalizer.feed`` then reads the event, and says why when it is bad)."""
    if data[:1] in _BRACES:
        try:
            return quick(event, loads(data))
        except JSONDecodeError:
            return None
    return None


def _plain_event(line: bytes) -> tuple[str, str] | tuple[None, None]:
    """(event, data) of a frame record with just those two fields, both strings, as
    ``frame`` writes nearly every event; ``(None, None)`` for any other line
    (``load_event`` reads it, type-checking every field)."""
    try:
        rec = loads(line)
    except JSONDecodeError:
        return _NOT_PLAIN
    if type(rec) is dict and len(rec) == 2:
        event, data = rec.get("event"), rec.get("data")
        if type(event) is str and type(data) is str:
            return event, data
    return _NOT_PLAIN


def _delta_line(line: bytes) -> Delta | None:
    """The ``Delta`` of a delta record whose channel and text are strings, the channel a
    known one; None for any other line (``from_record`` reads it)."""
    try:
        rec = loads(line)
    except JSONDecodeError:
        return None
    if type(rec) is dict and rec.get("type") == "delta":
        channel, text = rec.get("channel"), rec.get("text")
        if type(channel) is str and type(text) is str:
            channel = _CHANNELS.get(channel)
            if channel is not None:
                return _new(Delta, (channel, text))
    return None


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
