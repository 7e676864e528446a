"""The inspector: timestamped chunks of one stream in, a ``StreamReport`` out.

Theory of operation. ``Inspector.feed(chunk, time)`` takes the bytes as they arrived and
the time they arrived (seconds after the origin; None for a plain file, which has no
timing); ``close(...)`` returns the report. It reads nothing itself, keeps no clock and
draws nothing: the CLI edge feeds it from a recording (``fetch --record``), from a file,
or from stdin, timestamping each read as it returns.

It does not parse the stream again: the chunks go through the same ``RecordReader`` that
``normalize`` and ``render`` use (framing recognised from the first bytes, the provider
from the first events), asked also for the comment lines, so the verdict is exactly
``normalize``'s and the records are exactly its records. Per chunk the inspector looks at
what came out: the framer's items (events, comments, with their byte offsets) and the
channel records. An event arrived with the chunk that completed it, and so did the
records it produced: everything is attributed to chunks, never to bytes, so the cost per
chunk is a few counters and at most one append to each series, and the figures do not
depend on how a stream happened to be chunked, except those about chunks and arrival
times themselves (the tests cut every fixture at every position to hold it to that).

What is kept grows with the chunks that carry events or content (a time and a few
counts each), not with the bytes; the channel texts are the reader's ``Transcript``,
joined once at the end for the token estimate and a stall's context.

A reset marker (``fetch --retry-partial``) starts the content over: the content figures
(first tokens, text, rates, stalls, usage) describe the last attempt, as the answer does;
the byte, event and delivery figures describe the whole input.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace

from ..model import Channel, Delta, End, Meta, Reset, Status, ToolCall, Usage
from ..pipeline import RecordReader
from ..sse import CUT_COMMENT, DEFAULT_MAX_EVENT_SIZE, RESET_COMMENT, SseComment
from . import figures
from .report import Delivery, Gaps, Http, Rates, Sizes, StreamReport, Timeline

#: how much of an HTTP error body is kept for its message
ERROR_BODY_LIMIT = 64 * 1024
_MARKERS = (RESET_COMMENT, CUT_COMMENT)
_ANSWER, _REASONING = Channel.ANSWER, Channel.REASONING


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
        self._reader = RecordReader(provider, source, max_event_size=max_event_size, comments=True)
        # An error status's body is the server's message, not a stream: kept, not read.
        self._error_body = bytearray() if http is not None and (http.status or 0) >= 300 else None
        # -- the whole input
        self._bytes = 0
        self._starts: list[int] = []  # byte offset where each chunk starts
        self._first_byte: float | None = None
        self._last_time: float | None = None
        self._lf = self._cr = self._crlf = 0
        self._after_cr = False
        self._events = 0
        self._largest = 0
        self._comments = 0
        self._keepalives: list[float | None] = []
        self._multi = 0
        self._most_per_chunk = 0
        self._split = 0
        self._most_chunks = 0
        self._arrivals: list[tuple[float, int]] = []  # (time, events completed) per chunk
        self._first_event: float | None = None
        self._resets = 0
        self._model: str | None = None
        self._end: End | None = None
        self._content_start()

    def _content_start(self) -> None:
        """What a retry starts over: the content of the attempt."""
        self._series: list[tuple] = []  # (time, answer, reasoning, tool chars, bytes so far)
        self._first: dict[str, float | None] = {"answer": None, "reasoning": None, "tool_call": None}
        self._tool_indexes: set = set()
        self._tool_chars = 0
        self._usage: dict | None = None

    # -- feeding ------------------------------------------------------------------------

    def feed(self, chunk: bytes, time: float | None = None) -> None:
        """One chunk as it arrived, ``time`` seconds after the origin. Raises ``BadInput``
        when the input is not a stream (after counting what came before the fault)."""
        if not chunk:
            return
        start = self._bytes
        self._bytes += len(chunk)
        self._starts.append(start)
        if self._first_byte is None:
            self._first_byte = time
        self._last_time = time
        self._lf += chunk.count(b"\n")
        if 13 in chunk or self._after_cr:
            self._line_ends(chunk)
        if self._error_body is not None:
            if len(self._error_body) < ERROR_BODY_LIMIT:
                self._error_body += chunk[: ERROR_BODY_LIMIT - len(self._error_body)]
            return
        reader = self._reader
        records = reader.feed(chunk)
        self._take(time, start, reader.items, records)
        if reader.error is not None:  # the good records are counted: now fail
            raise reader.error

    def _line_ends(self, chunk: bytes) -> None:
        self._cr += chunk.count(b"\r")
        self._crlf += chunk.count(b"\r\n") + (self._after_cr and chunk[0] == 10)
        self._after_cr = chunk[-1] == 13

    def _take(self, time: float | None, start: int, items: list, records: list) -> None:
        if items:
            self._items(time, start, items)
        if records:
            self._records(time, records)

    def _items(self, time: float | None, start: int, items: list) -> None:
        events = 0
        largest = self._largest
        lines = self._reader.source in ("events", "records")
        for item in items:
            if type(item) is SseComment:
                self._comment(time, item.text)
                continue
            if lines and item.data.startswith('{"comment"'):  # frame's comment records
                self._comment(time, _comment_text(item.data))
                continue
            events += 1
            size = item.end - item.offset
            if size > largest:
                largest = size
            if item.offset < start:  # it began in an earlier chunk
                spanned = len(self._starts) - bisect_right(self._starts, item.offset) + 1
                if spanned > 1:
                    self._split += 1
                    if spanned > self._most_chunks:
                        self._most_chunks = spanned
        self._largest = largest
        if not events:
            return
        self._events += events
        if events > 1:
            self._multi += 1
        if events > self._most_per_chunk:
            self._most_per_chunk = events
        if self._first_event is None:
            self._first_event = time
        if time is not None:
            self._arrivals.append((time, events))

    def _comment(self, time: float | None, text: str) -> None:
        self._comments += 1
        if not text.startswith(_MARKERS):
            self._keepalives.append(time)

    def _records(self, time: float | None, records: list) -> None:
        answer = reasoning = tool = 0
        tool_seen = False
        for record in records:
            kind = type(record)
            if kind is Delta:
                if record.channel is _ANSWER:
                    answer += len(record.text)
                elif record.channel is _REASONING:
                    reasoning += len(record.text)
            elif kind is ToolCall:
                tool_seen = True
                tool += len(record.arguments)
                self._tool_indexes.add(record.index)
            elif kind is Usage:
                self._usage = record.usage
            elif kind is Meta:
                if record.key == "model" and isinstance(record.value, str):
                    self._model = record.value
            elif kind is End:
                self._end = record
            elif kind is Reset:  # what came before it in this chunk belongs to the void attempt
                self._resets += 1
                self._content_start()
                answer = reasoning = tool = 0
                tool_seen = False
        if answer or reasoning or tool or tool_seen:
            first = self._first
            if answer and first["answer"] is None:
                first["answer"] = time
            if reasoning and first["reasoning"] is None:
                first["reasoning"] = time
            if tool_seen and first["tool_call"] is None:
                first["tool_call"] = time
            self._tool_chars += tool
            self._series.append((time, answer, reasoning, tool, self._bytes))

    # -- the end ------------------------------------------------------------------------

    def close(self, end_time: float | None = None, outcome: str | None = None,
              detail: str = "") -> StreamReport:
        """The report. ``end_time``: when the input ended (a recording's ``end`` line, the
        moment a live input closed); ``outcome``: how the exchange ended, as a recording
        names it (``complete``, ``truncated``, ``timeout``, ``network``, ``http-error``,
        ``interrupted``, ``broken-pipe``), or ``unended`` for a recording without an end
        line, None when unknown."""
        reader = self._reader
        if self._error_body is None:
            records = reader.close()
            self._take(self._last_time, self._bytes, reader.items, records)
        return self._report(end_time, outcome, detail)

    def _report(self, end_time: float | None, outcome: str | None, detail: str) -> StreamReport:
        reader = self._reader
        texts = {"answer": reader.transcript.text(_ANSWER), "reasoning": reader.transcript.text(_REASONING)}
        if self._error_body is not None:
            verdict, cause, why = _http_verdict(self.http, bytes(self._error_body), detail)
        else:
            terminal, cut = _how_it_ended(reader, self._end)
            verdict, cause, why = figures.verdict(
                self._end, events=self._events, cut=cut, terminal=terminal, outcome=outcome,
                outcome_detail=detail)
        end = self._end
        tokens = figures.read_tokens(self._usage)
        timeline = self._timeline(end_time)
        series = self._series if self.timed else []
        keepalives = [t for t in self._keepalives if t is not None]
        gaps = figures.event_gaps(self._arrivals) if self.timed else None
        stall = figures.longest_stall(series, timeline.first_byte, timeline.end, keepalives,
                                      texts) if self.timed else None
        estimates = {"reasoning": figures.estimate_tokens(texts["reasoning"]),
                     "answer": figures.estimate_tokens(texts["answer"]) + self._tool_chars / 4}
        output_span = None
        if timeline.first_token is not None and timeline.last_token is not None:
            output_span = (timeline.first_token, timeline.last_token)
        output, reasoning_rate, answer_rate = figures.rates(
            tokens, estimates, {"reasoning": timeline.reasoning_phase, "answer": timeline.answer_phase},
            output_span)
        chars = len(texts["answer"]) + len(texts["reasoning"]) + self._tool_chars
        body = None
        if self._first_byte is not None and self._last_time is not None:
            body = self._last_time - self._first_byte
        notes = self._notes(tokens, texts, outcome, verdict)
        sizes = Sizes(
            bytes=self._bytes, events=self._events, chunks=len(self._starts),
            largest_event=self._largest, line_ends=self._line_style(), comments=self._comments,
            keepalives=len(self._keepalives), answer_chars=len(texts["answer"]),
            reasoning_chars=len(texts["reasoning"]), tool_call_chars=self._tool_chars,
            tool_calls=len(self._tool_indexes))
        return StreamReport(
            name=self.name, origin=self.origin, source=reader.source if reader.received else None,
            timed=self.timed,
            provider=reader.normalizer.provider if reader.normalizer is not None else None,
            model=self._model, verdict=verdict, cause=cause, detail=why,
            stop_reason=end.stop_reason if end is not None else None,
            stopped_early=verdict == "complete" and figures.is_early(end.stop_reason),
            error=end.error if end is not None and end.status is Status.ERROR else None,
            http=self.http, usage_reported=self._usage is not None,
            timeline=timeline,
            rates=Rates(
                output=output, reasoning=reasoning_rate, answer=answer_rate,
                chars_per_second=_per(chars, output_span),
                events_per_second=(self._events / body if body else None)),
            gaps=replace(gaps, stall=stall) if gaps is not None else Gaps(),
            delivery=Delivery(
                chunks=len(self._starts), events=self._events,
                events_per_chunk_max=self._most_per_chunk,
                events_per_chunk_mean=(self._events / len(self._starts) if self._starts else None),
                multi_event_chunks=self._multi, split_events=self._split,
                chunks_per_event_max=max(self._most_chunks, 1 if self._events else 0),
                burst=figures.burst(series) if series else None),
            sizes=sizes, tokens=tokens, resets=self._resets, notes=tuple(notes),
            series=tuple(series), keepalive_times=tuple(keepalives),
        )

    def _timeline(self, end_time: float | None) -> Timeline:
        if not self.timed:
            return Timeline(None)
        first = self._first
        last_token = self._series[-1][0] if self._series else None
        end = end_time if end_time is not None else self._last_time
        return Timeline(
            origin="request" if self.origin == "recording" else "reading",
            request=0.0 if self.origin == "recording" else None,
            response_head=None,  # a recording does not keep when the head arrived
            first_byte=self._first_byte, first_event=self._first_event,
            first_reasoning=first["reasoning"], first_answer=first["answer"],
            first_tool_call=first["tool_call"], last_token=last_token, end=end)

    def _line_style(self) -> str | None:
        lone_cr = self._cr - self._crlf
        lone_lf = self._lf - self._crlf
        kinds = [name for name, n in (("crlf", self._crlf), ("cr", lone_cr), ("lf", lone_lf)) if n]
        if not kinds:
            return None
        return kinds[0] if len(kinds) == 1 else "mixed"

    def _notes(self, tokens, texts, outcome, verdict) -> list[str]:
        notes = []
        if tokens.reasoning and not texts["reasoning"]:
            notes.append(f"{tokens.reasoning:,} reasoning tokens were not streamed (hidden reasoning, "
                         "spent before the first token)")
        if self._resets:
            notes.append(f"{self._resets} retr{'y' if self._resets == 1 else 'ies'} (reset markers): "
                         "the content figures are the last attempt's")
        if outcome == "timeout" and verdict == "complete":
            notes.append("the terminal event arrived, then the connection hit a timeout")
        if self.timed and self._keepalives and not self._series and self._events:
            notes.append("keep-alives only: no content arrived")
        return notes


def _per(count: float, span: tuple[float, float] | None) -> float | None:
    if span is None or span[1] <= span[0]:
        return None
    return count / (span[1] - span[0])


def _comment_text(line: str) -> str:
    import orjson

    try:
        return str(orjson.loads(line).get("comment", ""))
    except (orjson.JSONDecodeError, AttributeError):
        return ""


def _how_it_ended(reader: RecordReader, end: End | None) -> tuple[bool, str | None]:
    """(terminal event seen, why the framing was cut), from the normalizer; for channel
    records, which carry only their end record, from the words ``Normalizer`` put in it."""
    if reader.normalizer is not None:
        return reader.normalizer.terminal, reader.normalizer.cut
    detail = end.detail or "" if end is not None else ""
    if "before the provider's terminal event" in detail or "without an end record" in detail:
        return False, detail
    if not detail or "terminal event" in detail or detail in ("no events arrived", "interrupted"):
        return False, None
    return True, detail  # a cut after the terminal event: normalize names only the cut


def _http_verdict(http: Http, body: bytes, detail: str) -> tuple[str, str, str]:
    from ..fetch import error_message  # pure: it reads JSON, not the network

    status = f"HTTP {http.status} {http.reason}".rstrip()
    message = error_message(body) if body else ""
    return "error", "http_error", f"{status}: {message}" if message else (detail or status)

