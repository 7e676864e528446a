"""What ``inspect`` found in one stream: a value, and its stable JSON form.

``StreamReport`` is what ``Inspector.close`` returns; ``to_json`` gives the object that
``sse-tool inspect --json`` writes for it. The JSON form is a contract (scripts and CI read
it): keys are only ever added, never renamed or removed, and ``version`` changes if a
meaning does. Every key is documented in ``man sse-tool-inspect`` (JSON OUTPUT), and a
test holds the two together.

Conventions of the JSON form: times are seconds (floats, microsecond resolution) after
the origin (``timeline.origin``: ``request``, when the request was sent, for a recording;
``reading``, when inspect began reading, for a live stream); ``null`` means unknown or
never happened (a plain stream file has no timing at all: ``timed`` is false and every
time, duration and rate is ``null``). Token figures say where they come from in
``basis``: ``usage`` (the stream's own usage report), ``usage-split`` (the usage total,
split between reasoning and answer in proportion to their text) or ``estimate`` (from the
text: a quarter of a token per character, one per CJK character).
"""

from __future__ import annotations

from typing import NamedTuple

#: the ``version`` of the JSON objects
VERSION = 1

# The values are named tuples, not dataclasses, as the records in ``model`` are: a stage's
# start-up time counts, and a dataclass costs far more to define.


class Timeline(NamedTuple):
    """Moments in seconds after ``origin``; None: not known, or never happened."""

    origin: str | None  # "request", "reading", or None (no timing)
    request: float | None = None
    response_head: float | None = None
    first_byte: float | None = None
    first_event: float | None = None
    first_reasoning: float | None = None
    first_answer: float | None = None
    first_tool_call: float | None = None
    last_token: float | None = None
    end: float | None = None

    @property
    def first_token(self) -> float | None:
        """Time to first token: the first reasoning, answer or tool-call token."""
        times = [t for t in (self.first_reasoning, self.first_answer, self.first_tool_call) if t is not None]
        return min(times) if times else None

    @property
    def first_output(self) -> float | None:
        """The first answer or tool-call token: where the reasoning phase ends."""
        times = [t for t in (self.first_answer, self.first_tool_call) if t is not None]
        return min(times) if times else None

    @property
    def reasoning_phase(self) -> tuple[float, float] | None:
        """From the first reasoning token to the first answer (or the last token)."""
        if self.first_reasoning is None:
            return None
        stop = self.first_output if self.first_output is not None else self.last_token
        return (self.first_reasoning, max(stop, self.first_reasoning))

    @property
    def answer_phase(self) -> tuple[float, float] | None:
        """From the first answer or tool-call token to the last token."""
        if self.first_output is None or self.last_token is None:
            return None
        return (self.first_output, max(self.last_token, self.first_output))


class Rate(NamedTuple):
    """Tokens a second over a phase, and where the token count comes from."""

    tokens: float
    seconds: float
    basis: str  # "usage", "usage-split" or "estimate"

    @property
    def per_second(self) -> float | None:
        return self.tokens / self.seconds if self.seconds > 0 else None


class Rates(NamedTuple):
    output: Rate | None = None  # every output token, first token to last
    reasoning: Rate | None = None
    answer: Rate | None = None  # answer text and tool-call arguments
    chars_per_second: float | None = None
    events_per_second: float | None = None


class Stall(NamedTuple):
    """The longest silence between content-bearing events (or after the last one)."""

    seconds: float
    start: float
    end: float
    #: the channel the text had reached ("answer", "reasoning", "tool_call"), None before any
    channel: str | None
    #: characters of that channel before the stall
    position: int
    #: the last characters before the stall (at most 40)
    context: str
    #: bytes of input before the stall
    offset: int
    #: keep-alive comments that arrived during it
    keepalives: int
    #: "between" two tokens, "after" the last token, or "before" any token
    where: str


class Gaps(NamedTuple):
    """Silences between consecutive events (events of one chunk have a gap of 0)."""

    count: int = 0
    p50: float | None = None
    p95: float | None = None
    max: float | None = None
    stall: Stall | None = None


class Burst(NamedTuple):
    """How the content was spread over its window (see ``figures.burst``)."""

    #: the share of the content window's slots that hold ``content_share`` of the content
    share: float
    #: the time those slots span, and the whole content window (first token to last)
    seconds: float
    window: float
    #: True when delivered in bursts: a small share, and a chunk bringing much at once
    bursty: bool
    content_share: float = 0.9
    #: the part of the content the fullest chunk brought
    largest: float = 0.0


class Delivery(NamedTuple):
    chunks: int = 0
    events: int = 0
    events_per_chunk_max: int = 0
    events_per_chunk_mean: float | None = None
    #: chunks that completed more than one event
    multi_event_chunks: int = 0
    #: events whose bytes arrived in more than one chunk, and the most chunks one took
    split_events: int = 0
    chunks_per_event_max: int = 0
    burst: Burst | None = None


class Tokens(NamedTuple):
    """Token counts read from the stream's usage (None: not reported)."""

    input: int | None = None
    output: int | None = None
    reasoning: int | None = None
    cached: int | None = None
    #: any credits the server reported (``credits_spent``, ``credits_remaining``, ...)
    credits: dict | None = None


class Sizes(NamedTuple):
    bytes: int = 0
    events: int = 0
    chunks: int = 0
    largest_event: int = 0
    line_ends: str | None = None  # "lf", "crlf", "cr", "mixed", or None (no line end)
    comments: int = 0
    keepalives: int = 0
    answer_chars: int = 0
    reasoning_chars: int = 0
    tool_call_chars: int = 0
    tool_calls: int = 0
    refusal_chars: int = 0  # a refusal's text (in its own channel: not the answer's)


class Http(NamedTuple):
    """The recorded exchange's request and response head (recordings only)."""

    method: str | None = None
    url: str | None = None
    status: int | None = None
    reason: str = ""
    content_type: str | None = None
    started: str = ""  # when the request was sent, ISO 8601, as recorded


class StreamReport(NamedTuple):
    name: str
    #: "recording", "live", or "file"; and what the bytes were (sse, json-array, ndjson,
    #: events, records; None when no stream was read)
    origin: str
    source: str | None
    timed: bool
    provider: str | None
    model: str | None
    verdict: str  # "complete", "truncated" or "error"
    cause: str
    detail: str
    stop_reason: str | None = None
    stopped_early: bool = False
    error: dict | None = None
    http: Http | None = None
    usage_reported: bool = False
    timeline: Timeline = Timeline(None)
    rates: Rates = Rates()
    gaps: Gaps = Gaps()
    delivery: Delivery = Delivery()
    sizes: Sizes = Sizes()
    tokens: Tokens = Tokens()
    #: retries seen (reset markers): the figures about content describe the last attempt
    resets: int = 0
    #: further observations, one line each
    notes: tuple[str, ...] = ()
    #: content arrivals (time, answer chars, reasoning chars, tool-call chars) and
    #: keep-alive times, for the picture; not part of the JSON form
    series: tuple = ()
    keepalive_times: tuple = ()

    @property
    def ttft(self) -> float | None:
        return self.timeline.first_token


def _t(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _rate(rate: Rate | None) -> dict | None:
    if rate is None:
        return None
    per_second = rate.per_second
    return {"tokens_per_second": None if per_second is None else round(per_second, 3),
            "tokens": round(rate.tokens, 1), "seconds": _t(rate.seconds), "basis": rate.basis}


def to_json(report: StreamReport, findings: list[str] | None = None) -> dict:
    """The documented JSON object for one stream (``findings``: the --fail-on conditions met)."""
    tl, rates, gaps, dl, sz, tk = (report.timeline, report.rates, report.gaps, report.delivery,
                                   report.sizes, report.tokens)
    stall = gaps.stall
    burst = dl.burst
    http = report.http
    return {
        "kind": "stream", "version": VERSION, "file": report.name, "origin": report.origin,
        "input": report.source, "timed": report.timed,
        "provider": report.provider, "model": report.model,
        "verdict": report.verdict, "cause": report.cause, "detail": report.detail,
        "stop_reason": report.stop_reason, "stopped_early": report.stopped_early,
        "error": report.error, "usage_reported": report.usage_reported,
        "http": None if http is None else {
            "method": http.method, "url": http.url, "status": http.status, "reason": http.reason,
            "content_type": http.content_type, "started": http.started or None},
        "timeline": {
            "origin": tl.origin, "request": _t(tl.request), "response_head": _t(tl.response_head),
            "first_byte": _t(tl.first_byte), "first_event": _t(tl.first_event),
            "first_reasoning": _t(tl.first_reasoning), "first_answer": _t(tl.first_answer),
            "first_tool_call": _t(tl.first_tool_call), "last_token": _t(tl.last_token),
            "end": _t(tl.end)},
        "durations": {
            "ttft": _t(tl.first_token),
            "reasoning": _t(_length(tl.reasoning_phase)), "answer": _t(_length(tl.answer_phase)),
            "total": _t(tl.end)},
        "rates": {
            "output": _rate(rates.output), "reasoning": _rate(rates.reasoning),
            "answer": _rate(rates.answer),
            "chars_per_second": _round(rates.chars_per_second, 1),
            "events_per_second": _round(rates.events_per_second, 1)},
        "gaps": {"count": gaps.count, "p50": _t(gaps.p50), "p95": _t(gaps.p95), "max": _t(gaps.max)},
        "stall": None if stall is None else {
            "seconds": _t(stall.seconds), "start": _t(stall.start), "end": _t(stall.end),
            "where": stall.where, "channel": stall.channel, "position": stall.position,
            "context": stall.context, "offset": stall.offset, "keepalives": stall.keepalives},
        "delivery": {
            "chunks": dl.chunks, "events": dl.events,
            "events_per_chunk_max": dl.events_per_chunk_max,
            "events_per_chunk_mean": _round(dl.events_per_chunk_mean, 3),
            "multi_event_chunks": dl.multi_event_chunks, "split_events": dl.split_events,
            "chunks_per_event_max": dl.chunks_per_event_max},
        "burst": None if burst is None else {
            "share": round(burst.share, 4), "content_share": burst.content_share,
            "seconds": _t(burst.seconds), "window": _t(burst.window),
            "largest_arrival": round(burst.largest, 4), "bursty": burst.bursty},
        "sizes": {
            "bytes": sz.bytes, "events": sz.events, "chunks": sz.chunks,
            "largest_event": sz.largest_event, "line_ends": sz.line_ends,
            "comments": sz.comments, "keepalives": sz.keepalives,
            "answer_chars": sz.answer_chars, "reasoning_chars": sz.reasoning_chars,
            "tool_call_chars": sz.tool_call_chars, "tool_calls": sz.tool_calls,
            "refusal_chars": sz.refusal_chars},
        "usage": {"input": tk.input, "output": tk.output, "reasoning": tk.reasoning,
                  "cached": tk.cached, "credits": tk.credits or None},
        "resets": report.resets,
        "notes": list(report.notes),
        "findings": list(findings or []),
    }


def _length(span: tuple[float, float] | None) -> float | None:
    return None if span is None else span[1] - span[0]


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
