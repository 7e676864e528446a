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
about ``RUN`` bytes and each run goes to the framer in one call, its events to the reader
in one call (``RecordReader.convert``, normalize's own batch reading, which also says
where each record's event ends). Events and records are then placed in their chunks by
offset, with C-level calls over whole lists (``bisect`` mapped over the offsets, sums by
``accumulate``), no Python code per event: an SSE event is dispatched by the line end
that starts its blank line, which is ``SseEvent.end``, so it belongs to the chunk holding
that byte. Until the framing is known, and for other framings (JSON arrays, NDJSON,
sse-tool's own records), runs go through the reader chunk by chunk instead, and so does
every chunk of the reference (``fast=False``) that ``tests/inspect/`` holds the runs to,
for every fixture cut anywhere. Nothing is interpreted before ``close`` that a later chunk
could change, so the report does not depend on how the runs fell.

Line ends and comment lines are counted from the bytes of each run with a few C calls
(the parser is not asked for comments: it would then read every line as it comes, not
whole events). What is kept grows with the chunks (a start and a time each), not with
the bytes; the channels' texts are kept as pieces and joined once, at the end.

A reset marker (``fetch --retry-partial``) starts the content over: the content figures
(first tokens, text, rates, stalls, usage) describe the last attempt, as the answer does;
the byte, event and delivery figures describe the whole input.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate, chain, compress, groupby, repeat
from operator import attrgetter, ge, is_not, itemgetter, lt, mul, not_, sub

from ..decode import BOM
from ..model import Channel, Delta, End, Meta, Note, Reset, ToolCall, Usage
from ..pipeline import RecordReader
from ..sse import DEFAULT_MAX_EVENT_SIZE, SseComment
from .report import Http, StreamReport

#: bytes of chunks gathered before the framer reads them in one call
RUN = 65536
#: how much of an HTTP error body is kept for its message
ERROR_BODY_LIMIT = 64 * 1024
#: notes of earlier stages kept for the report (the rest are counted)
NOTES_KEPT = 20
_ANSWER, _REASONING = Channel.ANSWER, Channel.REASONING
_REFUSAL = Channel.REFUSAL
# A refusal is the model's answer to the person, in its own channel: timed as the answer,
# its text kept apart (the answer's size does not count it).
_AS = {_REFUSAL: _ANSWER}
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_CHANNEL, _TEXT = itemgetter(0), itemgetter(1)
_OFFSET, _END = attrgetter("offset"), attrgetter("end")
# a comment line after LF: a regex finds it in half the time ``in`` takes, as LFs abound
_LF_COLON = re.compile(rb"\n:")


class Inspector:
    """Stage core of ``inspect``: ``feed(chunk, time)``, then ``close() -> StreamReport``.

    ``fast=False`` reads every chunk alone through the reader, every event through
    ``Normalizer.feed``: the reference the runs are held to."""

    def __init__(self, name: str = "", *, provider: str = "auto", source: str = "auto",
                 max_event_size: int = DEFAULT_MAX_EVENT_SIZE, origin: str = "file",
                 http: Http | None = None, fast: bool = True) -> None:
        self.name = name
        #: "recording" and "live" inputs have arrival times; a "file" has none
        self.origin = origin
        self.timed = origin != "file"
        self.http = http
        self.fast = fast
        self.reader = RecordReader(provider, source, max_event_size=max_event_size, fast=fast)
        # An error status's body is the server's message, not a stream: kept, not read.
        self.error_body = bytearray() if http is not None and (http.status or 0) >= 300 else None
        self._pending: list[bytes] = []  # the last chunks, not read yet
        self._sse = None  # the framer once the input is known to be SSE (fast only)
        # -- the whole input
        self.bytes = 0
        self.starts: list[int] = []  # where each chunk starts
        self.times: list[float | None] = []  # when each chunk arrived
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
        #: earlier stages' notes (note markers: fetch's retries, ...), and how many in all
        self.passed_notes: list[str] = []
        self.notes_seen = 0
        self.model: str | None = None
        self.end: End | None = None
        self._content_start()

    def _content_start(self) -> None:
        """What a retry starts over: the content of the attempt."""
        #: (time, answer, reasoning, tool-call chars, bytes so far) per chunk with content
        self.series: list[tuple] = []
        self.first: dict[str, float | None] = {"answer": None, "reasoning": None, "tool_call": None}
        self.texts: dict[Channel, list[str]] = {_ANSWER: [], _REASONING: [], _REFUSAL: []}
        self.tool_indexes: set = set()
        self.server_tools: set = set()  # the indexes of calls the provider runs itself
        self.tool_chars = 0
        self.pieces = 0  # deltas with text and tool-call pieces
        self.usage: dict | None = None

    # -- feeding ------------------------------------------------------------------------

    def feed(self, chunk: bytes, time: float | None = None) -> None:
        """One chunk as it arrived, ``time`` seconds after the origin. Raises ``BadInput``
        when the input is not a stream (after counting what came before the fault)."""
        if chunk:
            self.starts.append(self.bytes)
            self.times.append(time)
            self._pending.append(chunk)
            self.bytes += len(chunk)
            if self.bytes - self.starts[-len(self._pending)] >= RUN:
                self._read()

    def feed_all(self, times: list[float | None], datas: list[bytes]) -> None:
        """``feed`` for each chunk of ``datas``, which arrived at the time ``times`` gives
        it (a recording's columns, say)."""
        if not all(datas):  # an empty chunk is no chunk
            times, datas = list(compress(times, datas)), list(compress(datas, datas))
        if datas:
            self.times += times
            self.starts += accumulate(map(len, datas[:-1]), initial=self.bytes)
            self.bytes = self.starts[-1] + len(datas[-1])
            self._pending += datas
            self._read()

    def _read(self, final: bool = False) -> None:
        """Read the pending chunks in runs of at least ``RUN`` bytes (``final``: all)."""
        pending, starts = self._pending, self.starts
        first = len(starts) - len(pending)  # the chunk pending[0] is
        done = 0
        try:
            while done < len(pending):
                k0 = first + done
                limit = starts[k0] + RUN
                if self.bytes < limit and not final:
                    break
                k1 = bisect_left(starts, limit, k0 + 1)  # the run: chunks k0 .. k1-1
                piece = pending[done] if k1 == k0 + 1 else b"".join(pending[done:done + k1 - k0])
                done += k1 - k0
                self._read_run(piece, k0, k1)
        finally:
            del pending[:done]

    def _read_run(self, piece: bytes, k0: int, k1: int) -> None:
        starts, times = self.starts, self.times
        if not k0:
            self.first_byte = times[0]
        self.last_time = times[k1 - 1]
        self._shape(piece, k0, k1)
        if self.error_body is not None:
            self.error_body += piece[: max(0, ERROR_BODY_LIMIT - len(self.error_body))]
            return
        base, k = starts[k0], k0
        while self._sse is None and k < k1:
            end = starts[k + 1] - base if k + 1 < k1 else len(piece)
            self._through_reader(k, piece[starts[k] - base:end] if k1 > k0 + 1 else piece)
            k += 1
            reader = self.reader
            if self.fast and reader.source == "sse" and reader.framer is not None:
                self._sse = reader.framer
        if k < k1:
            self._sse_run(piece[starts[k] - base:] if k > k0 else piece, k, k1)

    def _through_reader(self, k: int, chunk: bytes) -> None:
        """Chunk ``k`` read by the reader; what it completed arrived with it."""
        reader = self.reader
        records = reader.feed(chunk)
        start, time = self.starts[k], self.times[k]
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

    def _sse_run(self, piece: bytes, k0: int, k1: int) -> None:
        """Chunks ``k0`` to ``k1 - 1`` of an SSE stream, read in one call each by the
        framer and the reader; events and records placed in their chunks by offset."""
        items = self._sse.feed(piece)
        if not items:
            return
        reader = self.reader
        events = items
        if SseComment in set(map(type, items)):  # reset markers: their place is what counts
            self.markers.update(item.offset for item in items if type(item) is SseComment)
            events = [item for item in items if type(item) is not SseComment]
        starts = self.starts
        after = starts[k0 + 1:k1]  # where each chunk of the run but the first starts
        ends = list(map(_END, events))
        at: list[int] = []
        try:
            records = reader.convert(items, at)
        finally:  # what was read counts, even when an event turned out bad
            counts = self._place_events(events, ends, k0, k1, after)
        if records:
            if at != ends:  # not one record per event: place them on their own
                if events is items and counts.count(1) == len(counts) and len(set(at)) == len(at):
                    counts = list(map(set(at).__contains__, ends))  # at most one per event, one event per chunk
                else:
                    counts = _per_chunk(at, after)
            self._place_records(records, counts, self.times[k0:k1], [*after, starts[k0] + len(piece)])
        if reader.error is not None:
            raise reader.error

    def _place_events(self, events: list, ends: list[int], k0: int, k1: int,
                      after: list[int]) -> list[int]:
        """Count a run's events, each in the chunk holding its ``end``; how many each
        chunk of the run completed."""
        counts = _per_chunk(ends, after)
        if not events:
            return counts
        offsets = list(map(_OFFSET, events))
        self.largest = max(self.largest, max(map(sub, ends, offsets)))
        self.events += len(events)
        multi = len(counts) - counts.count(0) - counts.count(1)
        if multi:
            self.multi += multi
            self.most_per_chunk = max(self.most_per_chunk, max(counts))
        times = self.times[k0:k1]
        if self.timed:
            self.arrivals += compress(zip(times, counts), counts)
        # Only the first event a chunk completes can have begun in an earlier chunk.
        firsts = list(compress(offsets, _firsts(counts))) if multi or len(events) != len(counts) else offsets
        chunk_starts = list(compress(self.starts[k0:k1], counts))
        if any(map(lt, firsts, chunk_starts)):
            for offset, start in zip(firsts, chunk_starts):
                if offset < start:
                    self._spanned(offset, start)
        return counts

    def _spanned(self, offset: int, start: int) -> None:
        """An event at ``offset`` completed by the chunk at ``start``: over how many chunks."""
        spanned = bisect_right(self.starts, start) - bisect_right(self.starts, offset) + 1
        if spanned > 1:
            self.split += 1
            self.most_chunks = max(self.most_chunks, spanned)

    def _place_records(self, records: list, counts: list[int], times: list, ends: list[int]) -> None:
        """A run's records, ``counts[p]`` of them made by events of its chunk ``p``, which
        ends at ``ends[p]``. Deltas alone (nearly every run) are summed per chunk in bulk;
        any other run is read chunk by chunk."""
        channels = set(map(_CHANNEL, records)) if set(map(type, records)) == {Delta} else None
        if channels is None or _REFUSAL in channels:  # (a refusal: short, and rare)
            places = chain.from_iterable(map(repeat, range(len(counts)), counts))
            for place, group in groupby(zip(places, records), _FIRST):
                self._records(times[place], ends[place], list(map(_SECOND, group)))
            return
        texts = list(map(_TEXT, records))
        sizes = list(map(len, texts))
        self.pieces += len(sizes) - sizes.count(0)
        one = counts.count(0) + counts.count(1) == len(counts)  # no chunk with two: no sums
        if one and len(counts) != len(sizes):
            times, ends = list(compress(times, counts)), list(compress(ends, counts))
        if _REASONING not in channels or len(channels) == 1:  # nearly every run: one phase
            phase = _REASONING if _REASONING in channels else _ANSWER
            self.texts[phase] += texts
            total = sizes if one else _sums(sizes, counts)
            zeros = [0] * len(total)
            answer, reasoning = (zeros, total) if phase is _REASONING else (total, zeros)
        else:
            answers = list(map(is_not, map(_CHANNEL, records), repeat(_REASONING)))
            self.texts[_ANSWER] += compress(texts, answers)
            self.texts[_REASONING] += compress(texts, map(not_, answers))
            answer = list(map(mul, sizes, answers))
            if one:
                total = sizes
            else:
                answer, total = _sums(answer, counts), _sums(sizes, counts)
            reasoning = list(map(sub, total, answer))
        rows = zip(times, answer, reasoning, repeat(0), ends)
        self.series += compress(rows, total) if total.count(0) else rows
        first = self.first
        for key, amounts in (("answer", answer), ("reasoning", reasoning)):
            if first[key] is None:
                place = next(compress(range(len(amounts)), amounts), None)
                if place is not None:
                    first[key] = times[place]

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
                self.texts[channel].append(text)
                if _AS.get(channel, channel) is _ANSWER:
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
                    texts[record.channel].append(record.text)
                    if _AS.get(record.channel, record.channel) is _ANSWER:
                        answer += len(record.text)
                    else:
                        reasoning += len(record.text)
            elif kind is ToolCall:
                self.pieces += 1
                tool_seen = True
                tool += len(record.arguments)
                self.tool_indexes.add(record.index)
                if record.server:
                    self.server_tools.add(record.index)
            elif kind is Usage:
                self.usage = record.usage
            elif kind is Meta:
                if record.key == "model" and isinstance(record.value, str):
                    self.model = record.value
            elif kind is End:
                self.end = record
            elif kind is Note:
                self.notes_seen += 1
                if self.notes_seen <= NOTES_KEPT:
                    self.passed_notes.append(record.text)
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

    def _shape(self, piece: bytes, k0: int, k1: int) -> None:
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
        base = self.starts[k0]
        if _LF_COLON.search(piece) or cr and b"\r:" in piece or not base or self._line_start and piece[0] == 58:
            self._comments_in(piece, k0, k1)
        self._line_start = piece[-1] in b"\r\n"

    def _comments_in(self, piece: bytes, k0: int, k1: int) -> None:
        """Note the comment lines starting in ``piece``: a ``:`` opening a line.

        A line starts after LF, CR or CRLF, so a comment is ``\\n:`` or ``\\r:`` (``\\r\\n:``
        holds ``\\n:``), a ``:`` opening a run after a line end, or the stream's first line
        (after a BOM, which belongs to no line). A run is at least ``RUN`` bytes unless it
        is the last, so the first one always shows whether the stream starts with a BOM.
        """
        base = self.starts[k0]
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
        starts, times = self.starts, self.times
        for at in sorted(found):
            self.comment_lines.append((base + at, times[bisect_right(starts, base + at, k0, k1) - 1]))

    # -- the end ------------------------------------------------------------------------

    def close(self, end_time: float | None = None, outcome: str | None = None,
              detail: str = "") -> StreamReport:
        """The report. ``end_time``: when the input ended (a recording's ``end`` line, the
        moment a live input closed); ``outcome``: how the exchange ended, as a recording
        names it (``complete``, ``truncated``, ``timeout``, ``network``, ``http-error``,
        ``interrupted``, ``broken-pipe``), or ``unended`` for a recording without an end
        line, None when unknown. Raises ``BadInput`` as ``feed`` does."""
        from .assemble import assemble

        self._read(final=True)
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


def _per_chunk(positions: list[int], after: list[int]) -> list[int]:
    """How many of the sorted ``positions`` fall in each chunk of a run (``after``: where
    each chunk but the first starts): one each, nearly always, when chunks are events."""
    if len(positions) == len(after) + 1 and all(map(lt, positions, after)) and all(map(ge, positions[1:], after)):
        return [1] * len(positions)
    cuts = list(map(bisect_left, repeat(positions), after))
    return list(map(sub, [*cuts, len(positions)], [0, *cuts]))


def _firsts(counts: list[int]) -> list[bool]:
    """For each of the items that ``counts`` groups, whether it is the first of its group."""
    flags = [False] * sum(counts)
    for i in compress(accumulate([0, *counts[:-1]]), counts):
        flags[i] = True
    return flags


def _sums(values: list[int], counts: list[int]) -> list[int]:
    """The sums of consecutive groups of ``values``, ``counts[p]`` of them in group ``p``."""
    running = [0, *accumulate(values)]
    bounds = list(accumulate(counts))
    return list(map(sub, map(running.__getitem__, bounds), map(running.__getitem__, [0, *bounds[:-1]])))


def _comment_text(line: bytes) -> str:
    import orjson

    try:
        return str(orjson.loads(line.decode("utf-8", "replace")).get("comment", ""))
    except (orjson.JSONDecodeError, AttributeError):
        return ""
