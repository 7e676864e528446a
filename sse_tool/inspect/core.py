"""The inspector: timestamped chunks of one stream in, a ``StreamReport`` out.

Theory of operation. ``Inspector.feed(chunk, time)`` takes the bytes as they arrived and
the time they arrived (seconds after the origin; None for a plain file, which has no
timing); ``close(...)`` returns the report. It reads nothing itself, keeps no clock and
draws nothing: the CLI edge feeds it from a recording (``fetch --record``), from a file,
or from stdin, timestamping each read as it returns.

It does not parse the stream again: the bytes go through the ``RecordReader`` that
``normalize`` and ``render`` use (framing recognised from the first bytes, the provider
from the first events), so the verdict is ``normalize``'s and the records are its
records. What the inspector adds is where each event and record arrived: an event
arrived with the chunk that completed it, and the records it produced with it.

Strategy for speed. A recording holds one chunk per network read, often one event each,
and the framer's cost is per call as much as per byte. So chunks are kept in runs of
about ``RUN`` bytes and each run goes to the framer in one call; its events are then
placed in their chunks by offset: an SSE event is dispatched by the line end that starts
its blank line, which is ``SseEvent.end``, so it belongs to the chunk holding that byte
(``tests/inspect/test_inspect_core.py`` checks this against chunk-by-chunk feeding, for every
fixture cut anywhere). Each event goes to the normalizer alone, so its records are
placed with it. Until the framing is known, and for other framings (JSON arrays, NDJSON,
sse-tool's own records), runs go through the reader chunk by chunk instead. Nothing is
interpreted before ``close`` that a later chunk could change, so the report does not
depend on how the runs fell.

Line ends and comment lines are counted from the bytes of each run with a few C calls
(the parser is not asked for comments: it would then read every line as it comes, not
whole events). What is kept grows with the chunks that carry events or content (a time
and a few counts each), not with the bytes; the channels' texts are kept as pieces and
joined once, at the end.

A reset marker (``fetch --retry-partial``) starts the content over: the content figures
(first tokens, text, rates, stalls, usage) describe the last attempt, as the answer does;
the byte, event and delivery figures describe the whole input.
"""

from __future__ import annotations

from bisect import bisect_right

from ..decode import BOM
from ..model import Channel, Delta, End, Meta, Reset, ToolCall, Usage
from ..pipeline import RecordReader, quick_record
from ..sse import DEFAULT_MAX_EVENT_SIZE, SseComment, SseEvent
from .report import Http, StreamReport

#: bytes of chunks gathered before the framer reads them in one call
RUN = 65536
_NEVER = 1 << 62  # an offset past any input
#: how much of an HTTP error body is kept for its message
ERROR_BODY_LIMIT = 64 * 1024
_ANSWER, _REASONING = Channel.ANSWER, Channel.REASONING
# A refusal is the model's answer to the person, in its own channel: timed as the answer.
_AS = {Channel.REFUSAL: _ANSWER}


class Inspector:
    """Stage core of ``inspect``: ``feed(chunk, time)``, then ``close() -> StreamReport``."""

    def __init__(self, name: str = "", *, provider: str = "auto", source: str = "auto",
                 max_event_size: int = DEFAULT_MAX_EVENT_SIZE, origin: str = "file",
                 http: Http | None = None) -> None:
        self.name = name
        #: "recording" and "live" inputs have arrival times; a "file" has none
        self.origin = origin
        self.timed = origin != "file"
        self.http = http
        self.reader = RecordReader(provider, source, max_event_size=max_event_size)
        # An error status's body is the server's message, not a stream: kept, not read.
        self.error_body = bytearray() if http is not None and (http.status or 0) >= 300 else None
        self._run: list[tuple[int, float | None, bytes]] = []  # (offset, time, chunk) not read yet
        self._run_bytes = 0
        self._sse = None  # (framer, normalizer) once the input is known to be SSE
        # -- the whole input
        self.bytes = 0
        self.starts: list[int] = []  # where each chunk starts
        self.first_byte: float | None = None
        self.last_time: float | None = None
        self.cr = self.crlf = 0
        self.lone_lf = False
        self._after_cr = self._line_start = False
        #: comment lines found in the bytes, (offset, time), and the offsets of the reset
        #: markers among them, which the parser reports
        self.comment_lines: list[tuple[int, float | None]] = []
        self.markers: set[int] = set()
        #: comment records when the input is frame's records: (text, time)
        self.comment_records: list[tuple[str, float | None]] = []
        self.events = 0
        self.largest = 0
        self.multi = 0
        self.most_per_chunk = 1
        self.split = 0
        self.most_chunks = 0
        self.arrivals: list[tuple[float, int]] = []  # (time, events completed) per chunk
        self.resets = 0
        self.model: str | None = None
        self.end: End | None = None
        self._content_start()

    def _content_start(self) -> None:
        """What a retry starts over: the content of the attempt."""
        #: (time, answer, reasoning, tool-call chars, bytes so far) per chunk with content
        self.series: list[tuple] = []
        self.first: dict[str, float | None] = {"answer": None, "reasoning": None, "tool_call": None}
        self.texts: dict[Channel, list[str]] = {_ANSWER: [], _REASONING: []}
        self.tool_indexes: set = set()
        self.tool_chars = 0
        self.pieces = 0  # deltas with text and tool-call pieces
        self.usage: dict | None = None

    # -- feeding ------------------------------------------------------------------------

    def feed(self, chunk: bytes, time: float | None = None) -> None:
        """One chunk as it arrived, ``time`` seconds after the origin. Raises ``BadInput``
        when the input is not a stream (after counting what came before the fault)."""
        if chunk:
            self._run.append((self.bytes, time, chunk))
            self.bytes += len(chunk)
            self._run_bytes += len(chunk)
            if self._run_bytes >= RUN:
                self._read_run()

    def feed_all(self, chunks) -> None:
        """``feed`` for each (time, chunk) pair (a recording's ``Chunk`` list, say)."""
        run, size, offset = self._run, self._run_bytes, self.bytes
        for time, chunk in chunks:
            if chunk:
                run.append((offset, time, chunk))
                offset += len(chunk)
                size += len(chunk)
                if size >= RUN:
                    self.bytes, self._run_bytes = offset, size
                    self._read_run()
                    run, size = self._run, 0
        self.bytes, self._run_bytes = offset, size

    def _read_run(self) -> None:
        run, self._run, self._run_bytes = self._run, [], 0
        if not run:
            return
        if not self.starts:
            self.first_byte = run[0][1]
        self.last_time = run[-1][1]
        base = run[0][0]
        piece = run[0][2] if len(run) == 1 else b"".join([c for _, _, c in run])
        self.starts += [offset for offset, _, _ in run]
        self._shape(piece, run)
        if self.error_body is not None:
            self.error_body += piece[: max(0, ERROR_BODY_LIMIT - len(self.error_body))]
            return
        i = 0
        while self._sse is None and i < len(run):
            self._through_reader(*run[i])
            i += 1
            reader = self.reader
            if reader.source == "sse" and reader.framer is not None:
                self._sse = (reader.framer, reader.normalizer)
        if i < len(run):
            self._sse_run(piece[run[i][0] - base:] if i else piece, run[i:])

    def _through_reader(self, start: int, time: float | None, chunk: bytes) -> None:
        """One chunk read by the reader; what it completed arrived with it."""
        reader = self.reader
        records = reader.feed(chunk)
        events = self._items(reader.items, start, time)
        self._arrived(time, start + len(chunk), events, records)
        if reader.error is not None:  # the good records are counted: now fail
            raise reader.error

    def _items(self, items: list, start: int, time: float | None) -> int:
        """Note the events among ``items`` (completed in the chunk at ``start``)."""
        events = 0
        lines = self.reader.source in ("events", "records")
        for item in items:
            if type(item) is SseComment:  # a reset marker (other comments: see _shape)
                self.markers.add(item.offset)
            elif lines and item.data.startswith(b'{"comment"'):  # frame's comment records
                self.comment_records.append((_comment_text(item.data), time))
            else:
                events += 1
                self._event(item, start)
        return events

    def _event(self, item, start: int) -> None:
        size = item.end - item.offset
        if size > self.largest:
            self.largest = size
        if item.offset < start:
            self._spanned(item.offset, start)

    def _spanned(self, offset: int, start: int) -> None:
        """An event at ``offset`` completed by the chunk at ``start``: over how many chunks."""
        spanned = bisect_right(self.starts, start) - bisect_right(self.starts, offset) + 1
        if spanned > 1:
            self.split += 1
            self.most_chunks = max(self.most_chunks, spanned)

    def _sse_run(self, piece: bytes, run: list) -> None:
        """A run of SSE chunks read in one call, each event placed in its chunk.

        The common delta event takes the adapter's ``quick`` as ``normalize`` does (see
        ``pipeline.RecordReader._convert``): its JSON parsed once, its one record kept;
        anything else, and every event while the normalizer owes something, goes to
        ``feed``, which gives the same records."""
        framer, normalizer = self._sse
        adapt = self.reader.adapt
        items = framer.feed(piece)
        if not items:
            return
        fast = self.reader.fast
        quick = normalizer.fast_path() if fast else None
        k, last = 0, len(run) - 1
        start, time, chunk = run[0]
        bound = run[1][0] if last else _NEVER  # where the next chunk starts
        events, records = 0, []
        largest = self.largest
        try:
            for item in items:
                if type(item) is SseEvent:
                    if item.end >= bound:
                        self._arrived(time, bound, events, records)
                        events, records = 0, []
                        while item.end >= bound:
                            k += 1
                            start, time, chunk = run[k]
                            bound = run[k + 1][0] if k < last else _NEVER
                    events += 1
                    if item.end - item.offset > largest:
                        largest = item.end - item.offset
                    if item.offset < start:
                        self._spanned(item.offset, start)
                    if quick is not None:
                        record = quick_record(quick, item.event, item.data)
                        if record is not None:
                            records += adapt([record])
                            continue
                else:  # a reset marker: its place among the events is what counts
                    self.markers.add(item.offset)
                records += adapt(normalizer.feed(item))
                if fast:
                    quick = normalizer.fast_path()
        finally:  # what was read counts, even when an event turned out bad
            self.largest = largest
            self._arrived(time, start + len(chunk), events, records)

    def _arrived(self, time: float | None, end: int, events: int, records: list) -> None:
        """What one chunk (ending at byte ``end``) completed: events and their records."""
        if events:
            self.events += events
            if events > 1:
                self.multi += 1
                self.most_per_chunk = max(self.most_per_chunk, events)
            if time is not None:
                self.arrivals.append((time, events))
        if len(records) == 1 and type(records[0]) is Delta:  # nearly every chunk: one delta
            text = records[0].text
            if text:
                self.pieces += 1
                channel = records[0].channel
                channel = _AS.get(channel, channel)
                self.texts[channel].append(text)
                if channel is _ANSWER:
                    if self.first["answer"] is None:
                        self.first["answer"] = time
                    self.series.append((time, len(text), 0, 0, end))
                else:
                    if self.first["reasoning"] is None:
                        self.first["reasoning"] = time
                    self.series.append((time, 0, len(text), 0, end))
        elif records:
            self._records(time, end, records)

    def _records(self, time: float | None, end: int, records: list) -> None:
        answer = reasoning = tool = 0
        tool_seen = False
        texts = self.texts
        for record in records:
            kind = type(record)
            if kind is Delta:
                if record.text:
                    self.pieces += 1
                    channel = _AS.get(record.channel, record.channel)
                    texts[channel].append(record.text)
                    if channel is _ANSWER:
                        answer += len(record.text)
                    else:
                        reasoning += len(record.text)
            elif kind is ToolCall:
                self.pieces += 1
                tool_seen = True
                tool += len(record.arguments)
                self.tool_indexes.add(record.index)
            elif kind is Usage:
                self.usage = record.usage
            elif kind is Meta:
                if record.key == "model" and isinstance(record.value, str):
                    self.model = record.value
            elif kind is End:
                self.end = record
            elif kind is Reset:  # what came before it belongs to the void attempt
                self.resets += 1
                self._content_start()
                texts = self.texts
                answer = reasoning = tool = 0
                tool_seen = False
        if answer or reasoning or tool or tool_seen:
            first = self.first
            if answer and first["answer"] is None:
                first["answer"] = time
            if reasoning and first["reasoning"] is None:
                first["reasoning"] = time
            if tool_seen and first["tool_call"] is None:
                first["tool_call"] = time
            self.tool_chars += tool
            self.series.append((time, answer, reasoning, tool, end))

    def _shape(self, piece: bytes, run: list) -> None:
        """Line ends and comment lines in a run's bytes (a few C calls, not per line)."""
        cr = 13 in piece
        if cr or self._after_cr:
            crlf = piece.count(b"\r\n") + (self._after_cr and piece[0] == 10)
            self.cr += piece.count(b"\r")
            self.crlf += crlf
            if piece.count(b"\n") > crlf:
                self.lone_lf = True
            self._after_cr = piece[-1] == 13
        elif not self.lone_lf and 10 in piece:
            self.lone_lf = True
        base = run[0][0]
        if b"\n:" in piece or cr and b"\r:" in piece or not base or self._line_start and piece[0] == 58:
            self._comments_in(piece, run)
        self._line_start = piece[-1] in b"\r\n"

    def _comments_in(self, piece: bytes, run: list) -> None:
        """Note the comment lines starting in ``piece``: a ``:`` opening a line.

        A line starts after LF, CR or CRLF, so a comment is ``\\n:`` or ``\\r:`` (``\\r\\n:``
        holds ``\\n:``), a ``:`` opening a run after a line end, or the stream's first line
        (after a BOM, which belongs to no line). A run is at least ``RUN`` bytes unless it
        is the last, so the first one always shows whether the stream starts with a BOM.
        """
        base = run[0][0]
        found = []
        if not base:
            first = 3 if piece.startswith(BOM) else 0
            if piece[first:first + 1] == b":":
                found.append(first)
        elif self._line_start and piece[0] == 58:
            found.append(0)
        for needle in (b"\n:", b"\r:"):
            i = piece.find(needle)
            while i >= 0:
                found.append(i + 1)
                i = piece.find(needle, i + 2)
        starts = [offset - base for offset, _, _ in run]
        for at in sorted(found):
            self.comment_lines.append((base + at, run[bisect_right(starts, at) - 1][1]))

    # -- the end ------------------------------------------------------------------------

    def close(self, end_time: float | None = None, outcome: str | None = None,
              detail: str = "") -> StreamReport:
        """The report. ``end_time``: when the input ended (a recording's ``end`` line, the
        moment a live input closed); ``outcome``: how the exchange ended, as a recording
        names it (``complete``, ``truncated``, ``timeout``, ``network``, ``http-error``,
        ``interrupted``, ``broken-pipe``), or ``unended`` for a recording without an end
        line, None when unknown. Raises ``BadInput`` as ``feed`` does."""
        from .assemble import assemble

        self._read_run()
        reader = self.reader
        if self.error_body is None:
            records = reader.close()
            start = self.starts[-1] if self.starts else 0
            events = self._items(reader.items, start, self.last_time)
            self._arrived(self.last_time, self.bytes, events, records)
        return assemble(self, end_time, outcome, detail)

    def text(self, channel: Channel) -> str:
        """A channel's text (of the last attempt), joined once."""
        pieces = self.texts[channel]
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0] if pieces else ""


def _comment_text(line: bytes) -> str:
    import orjson

    try:
        return str(orjson.loads(line.decode("utf-8", "replace")).get("comment", ""))
    except (orjson.JSONDecodeError, AttributeError):
        return ""
