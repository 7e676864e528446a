"""The checker core: a stream's bytes in, findings out (sans I/O).

``Checker.feed(chunk)`` returns the findings the chunk completes and ``close()`` the last
ones, the way every layer here works; ``check_recording`` checks a ``fetch --record``
exchange (its status and headers, then its body chunk by chunk).

Theory of operation. The bytes go to the same framer the other stages use
(``framing.AutoFramer``, or the one named), and to ``ByteScan`` (BOM, NUL, UTF-8) and, for
SSE, ``LineEnds``; those two report offsets, which wait in a queue until the event they
fall in (or before) is known. Each event the framer dispatches is judged in order:

* its framing, from the raw bytes around it (``sse.Blocks`` for SSE; a line length for
  NDJSON), so the checker keeps the bytes since the last event, and no more (blocks that
  dispatch no event, such as pings, are judged once 64 KiB of them wait: a stream of
  nothing else keeps about that much);
* its data as the dialect's JSON (``stream.payload``);
* the provider's adapter (``providers/``, the one ``normalize`` uses) reads it, which gives
  the facts the rules share with normalize: whether the terminal event or an error has
  arrived, and the tool-call records;
* the dialect's own rules (one module each), which see the event, its payload and those
  records.

With ``provider="auto"`` events wait, as in ``normalize``, until an adapter recognises one.
Cost is linear: each byte is joined once into the kept bytes, counted a few times by C
calls, and events of the usual shape are not split into lines. Findings come out in the
order of their offsets, each with its line number (LF counted once per byte).
"""

from __future__ import annotations

from collections import Counter
from itertools import compress
from operator import attrgetter

from orjson import JSONDecodeError
from orjson import loads as _loads

from ..errors import BadInput, EventTooLarge
from ..eventstream import failure_payload
from ..framing import AutoFramer, make_framer
from ..marker import EXIT, RESET, parse
from ..providers import PROVIDERS, recognise
from ..sse import DEFAULT_MAX_EVENT_SIZE, SseComment, SseEvent
from . import anthropic, bedrock, cohere, gemini, ollama, openai_chat, openai_responses, vertex_search
from .rules import Finding
from .quick import FIRST, matches
from .sse import MISSING_BLANK_LINE, Blocks, LineEnds, unfinished
from .stream import (
    AFTER_TERMINAL, EVENTSTREAM_CUT, JSON_ARRAY_SYNTAX, JSON_ARRAY_UNCLOSED, NDJSON_NO_NEWLINE, NO_EVENTS,
    NO_TERMINAL, WRONG_TYPE,
    NOT_JSON, TERMINAL, UNKNOWN_PROVIDER, ByteScan, long_line, payload,
)

#: events held while guessing the provider (as normalize.MAX_UNRECOGNISED)
MAX_UNRECOGNISED = 64
#: bytes after the last event past which its gap's complete blocks are judged at once
SETTLE_GAP = 64 * 1024

#: provider -> the module of its rules (a class ``Rules`` with ``feed`` and ``close``)
FAMILIES = {
    "openai": openai_chat, "openai-responses": openai_responses, "anthropic": anthropic,
    "gemini": gemini, "vertex-search": vertex_search, "ollama": ollama, "cohere": cohere,
    "bedrock": bedrock,
}

#: framings that are not text
BINARY_FRAMINGS = ("aws-eventstream",)
#: dialects whose own rules say what may follow the end (per candidate, per state)
_OWN_END_RULES = ("gemini", "vertex-search", "bedrock")


class Checker:
    """Stage core: bytes in, findings out; ``close`` adds how the stream ended."""

    def __init__(self, provider: str = "auto", framing: str = "auto", *,
                 max_event_size: int = DEFAULT_MAX_EVENT_SIZE, fast: bool = True,
                 per_rule: int | None = None) -> None:
        if provider != "auto" and provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}")
        self.provider: str | None = None if provider == "auto" else provider
        self.framing: str | None = None if framing == "auto" else framing
        self._framer = (AutoFramer(max_event_size=max_event_size) if framing == "auto"
                        else make_framer(framing, max_event_size=max_event_size))
        #: events dispatched so far
        self.events = 0
        self._bytes = ByteScan()
        self._line_ends = LineEnds()
        self._undecided: list[bytes] = []  # chunks before the framing was known
        self._blocks = Blocks()
        self._queue: list[Finding] = []  # byte findings waiting for their event index
        #: findings kept per rule at most (None: all). One per invalid byte, or per line of
        #: a long event, would hold memory in proportion to the input; past the cap they
        #: are counted in ``dropped``, for a report that shows that many. The byte findings
        #: wait in the queue and are counted apart: they pass the cap twice.
        self.per_rule = per_rule
        self._found, self._queued = _Tally(), _Tally()
        self._buf = b""  # the input from offset _base on
        self._base = 0
        self._pending: list[bytes] = []  # chunks not yet joined into _buf
        self._pending_size = 0
        self._settle_at = SETTLE_GAP  # see _settle
        self._gap = 0  # where the bytes before the next event start (the last event's end)
        self._held: list[tuple[int, object, int]] = []  # (index, event, gap) until recognised
        self._gave_up = False
        self._adapter = None
        self._rules = None
        #: False: every event judged alone, as the batch paths must agree with (the tests)
        self.fast = fast
        self._quick = None  # the family's QUICK, once the provider is known
        self._lines = (0, 1)  # (offset, its line number): the line cursor
        self._broken: Finding | None = None  # a JSON array that stopped parsing
        self._cut: tuple[str, int] | None = None  # an earlier stage's exit marker: (why, offset)
        if self.provider is not None:
            self._start(self.provider)

    # -- public API ---------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Finding]:
        if not chunk or self._broken is not None:
            return []
        out = self._bytes.feed(chunk)
        try:
            items = self._framer.feed(chunk)
        except BadInput as exc:  # a malformed JSON array stops its framer: a finding
            items = self._break(exc)
        if getattr(self._framer, "kind", None) in BINARY_FRAMINGS:
            # The byte rules (UTF-8, NUL, BOM) are about text; the framer checks its own.
            out = []
            self._forget_bytes()
        self._pending.append(chunk)
        self._pending_size += len(chunk)
        out += self._scan_line_ends(chunk)
        if out:  # the queue stays in offset order (a NUL is found before a bad byte before it)
            self._queue += self._capped(out, queued=True)
            self._queue.sort(key=_offset)
        out = self._capped([])
        if items:
            self._take()
            self._process(items, out)
        settled = self._bytes_seen() - self._gap > self._settle_at and self._settle(out)
        out = self._emit(out)
        if items or settled:
            self._trim()
        return out

    @property
    def dropped(self) -> dict[str, int]:
        """The findings counted past ``per_rule`` instead of kept (rule id -> count)."""
        found, queued = self._found.dropped, self._queued.dropped
        return {rule: found.get(rule, 0) + queued.get(rule, 0) for rule in {**found, **queued}}

    def close(self) -> list[Finding]:
        out = self._capped([])
        end = None
        if self._broken is None:
            try:
                end = self._framer.close()
            except BadInput as exc:
                self._break(exc)
        if self.framing is None:  # blanks only: SSE, as the framer decided
            self.framing = getattr(self._framer, "kind", None) or "sse"
            self._queue += self._capped(self._scan_line_ends(b""), queued=True)
        if self.framing in BINARY_FRAMINGS:  # decided only now (a torn first message)
            self._forget_bytes()
        self._take()
        if end is not None and end.items:  # what only the end made whole (a last JSON line)
            self._process(list(end.items), out)
        if self._held:  # never recognised: check what does not need the dialect
            self._gave_up = True
            held, self._held = self._held, []
            for index, event, gap in held:
                self._check(index, event, gap, out)
        index = self.events
        if self.framing == "sse" and self._broken is None:
            self._blocks.tail(self._buf, self._base, self._gap, index, out)
        if self._broken is not None:  # what follows the break was not read: nothing is said of it
            self._unsay_from(self._broken.offset)
        out += self._release(None, index)
        out += self._ending(end, index)
        return self._emit(out, eof=self._base + len(self._buf))

    # -- internals ----------------------------------------------------------------------

    def _start(self, provider: str) -> None:
        self.provider = provider
        self._adapter = PROVIDERS[provider]()
        self._rules = FAMILIES[provider].Rules()
        self._quick = getattr(FAMILIES[provider], "QUICK", None) if self.fast else None
        self._blocks.data_lines_only = gemini.NON_DATA_LINE if provider == "gemini" else None

    def _scan_line_ends(self, chunk: bytes) -> list[Finding]:
        if self.framing is None:
            self.framing = getattr(self._framer, "kind", None)
            if self.framing is None:
                self._undecided.append(chunk)
                return []
            chunk = b"".join(self._undecided) + chunk
            self._undecided.clear()
            if self.framing == "sse":
                # LineEnds counts offsets from the stream start: feed it everything so far
                return self._line_ends.feed(chunk)
            return []
        return self._line_ends.feed(chunk) if self.framing == "sse" else []

    def _break(self, exc: BadInput) -> list:
        """A JSON array's syntax error is a finding; any other bad input stops the check."""
        if isinstance(exc, EventTooLarge) or (self.framing or getattr(self._framer, "kind", None)) != "json-array":
            raise exc
        offset = exc.offset if exc.offset is not None else self._bytes_seen()
        message = str(exc).split(" (at byte")[0]
        self._broken = JSON_ARRAY_SYNTAX.at(offset, self.events, f"{message}: the rest of the input was not read")
        return []

    def _bytes_seen(self) -> int:
        return self._base + len(self._buf) + self._pending_size

    def _take(self) -> None:
        if self._pending:
            self._buf = b"".join([self._buf, *self._pending])
            self._pending.clear()
            self._pending_size = 0

    def _settle(self, out: list[Finding]) -> bool:
        """Judge the complete blocks after the last event now, not when the next event
        comes, and say whether any were: a stream of blocks that dispatch nothing (pings,
        comments) then keeps about ``SETTLE_GAP`` bytes, not all of them. A block still
        growing is looked at again when the gap has doubled (linear cost)."""
        if self.framing != "sse" or self._held or self._broken is not None:
            return False
        self._take()
        gap = self._blocks.settle(self._buf, self._base, self._gap, self.events, out)
        if gap == self._gap:
            self._settle_at = 2 * (self._bytes_seen() - gap)
            return False
        out += self._release(gap, self.events)
        self._gap = gap
        self._settle_at = SETTLE_GAP
        return True

    def _trim(self) -> None:
        """Drop the bytes no finding can point into any more. The last byte stays (settled
        blocks can end there): a finding at the end of the input is numbered by its line."""
        keep = min(self._held[0][2] if self._held else self._gap, self._bytes_seen() - 1)
        cut = keep - self._base
        if cut <= 0:
            return
        offset, line = self._lines
        if offset < keep:  # count the lines of what is dropped, once
            line += self._buf.count(b"\n", max(0, offset - self._base), cut)
            self._lines = (keep, line)
        self._buf = self._buf[cut:]
        self._base = keep

    def _process(self, items: list, out: list[Finding]) -> None:
        # Most batches are SSE events of the usual shape: their framing is judged at once
        # (sse.Blocks.run), and the runs of the dialect's common delta event are skipped
        # where its rules say that they say nothing (quick.py). Byte findings to place in
        # one of these events, and any comment item, leave the batch to the per-event path.
        bulk = (self.fast and self.framing == "sse" and self.provider is not None and len(items) > 1
                and set(map(type, items)) == _EVENTS
                and not (self._queue and self._queue[0].offset < items[-1].end))
        framed = bulk and self._blocks.run(self._buf, self._base, self._gap, items, self.events, out)
        if bulk and self._quick is not None:
            found = matches(items, self._quick[0])
            if found is not None:
                keys = list(map(FIRST, found))
                if set(compress(map(_EVENT, items), keys)) <= {self._quick[1]}:
                    self._runs(items, found, keys, framed, out)
                    return
        for item in items:
            if type(item) is SseComment:
                self._marker(item.text, item.offset)
                continue
            index = self.events
            self.events += 1
            gap, self._gap = self._gap, item.end
            if self.framing == "ndjson" and index == 0:
                _refuse_records(item)
            if self.provider is None and not self._gave_up:
                self._held.append((index, item, gap))
                name = _recognise(item.event, item.data)
                if name is not None:
                    self._start(name)
                elif len(self._held) <= MAX_UNRECOGNISED:
                    continue
                else:
                    self._gave_up = True
                held, self._held = self._held, []
                for h in held:
                    self._check(*h, out)
                continue
            self._check(index, item, gap, out, framed)

    def _marker(self, text: str, offset: int) -> None:
        """An earlier stage's in-band marker. A reset starts a new attempt: the rules start
        over, and a failure before it is void. An exit marker says that stage failed there:
        what arrived was cut, which the end says as the framing's own cut would be said
        (normalize reads it so too). A note changes nothing."""
        marker = parse(text)
        if marker is None:
            return
        if marker.kind == RESET:
            self._cut = None
            if self.provider is not None and self._adapter is not None:
                self._start(self.provider)
        elif marker.kind == EXIT:
            self._cut = (marker.text, offset)

    def _runs(self, items: list, found: list, keys: list, framed: bool, out: list[Finding]) -> None:
        """A batch of SSE events, each run of the dialect's common delta event (``keys``
        not empty: its data matched ``QUICK``, with the groups ``found``) skipped when the
        rules' ``quick`` says nothing would be said of it (its framing judged, if not yet),
        every other event checked alone."""
        adapter, rules, blocks = self._adapter, self._rules, self._blocks
        i, n = 0, len(items)
        while i < n:
            try:
                j = keys.index("", i)  # the next event of another kind
            except ValueError:
                j = n
            if j > i:
                if not adapter.terminal and rules.quick(adapter, found[i:j]):
                    if framed:
                        self.events += j - i
                        self._gap = items[j - 1].end
                    else:
                        for item in items[i:j]:
                            gap, self._gap = self._gap, item.end
                            blocks.event(self._buf, self._base, gap, item, self.events, out)
                            self.events += 1
                else:
                    self._alone(items[i:j], out, framed)
            if j < n:
                self._alone(items[j:j + 1], out, framed)
            i = j + 1

    def _alone(self, items: list, out: list[Finding], framed: bool) -> None:
        """Events of a known dialect, each checked by itself."""
        for item in items:
            index = self.events
            self.events += 1
            gap, self._gap = self._gap, item.end
            self._check(index, item, gap, out, framed)

    def _check(self, index: int, event, gap: int, out: list[Finding], framed: bool = False) -> None:
        if self._queue:
            out += self._release(event.end, index)
        buf, base = self._buf, self._base
        if framed:
            pass
        elif self.framing == "sse":
            self._blocks.event(buf, base, gap, event, index, out)
        elif self.framing == "ndjson":
            end = event.end - base
            length = event.end - event.offset + (2 if buf[end : end + 1] == b"\r" else 1)
            if length > 65536:
                out.append(long_line(length, event.offset, index))
        if self.provider is None:
            return
        text = event.data
        try:  # the usual case, a JSON object, without the call; payload() says what else
            data = _loads(text) if text[:1] == "{" else None
        except JSONDecodeError:
            data = None
        if type(data) is not dict:
            data = failure_payload(event, text)  # an event-stream failure said in text
        if type(data) is not dict:
            data = payload(text, self.provider, event.offset, index, out, event.event)
            if data is NOT_JSON:
                return
        adapter = self._adapter
        if adapter.terminal and self.provider not in _OWN_END_RULES and not (
                data == "[DONE]" and self.provider == "openai-responses"):
            out.append(AFTER_TERMINAL.at(event.offset, index, f"an event after the terminal event ({TERMINAL[self.provider]})"))
        try:
            records = adapter.feed(event.event, data)
        except BadInput as exc:  # a value the adapter refuses to read: the event says no more
            rule = getattr(FAMILIES[self.provider], "REFUSED", {}).get(type(exc), WRONG_TYPE)
            out.append(rule.at(event.offset, index, str(exc).split(" (at byte")[0]))
            return
        self._rules.feed(index, event, data, records, out)

    def _capped(self, found: list[Finding], queued: bool = False) -> list[Finding]:
        """``found`` as a list that keeps what ``per_rule`` lets through, to add findings to."""
        if not self.per_rule:
            return found
        kept = _Capped(self.per_rule, self._queued if queued else self._found)
        kept += found
        return kept

    def _unsay_from(self, offset: int) -> None:
        """Forget the byte findings from ``offset`` on, those counted past the cap too: the
        bytes from the last event on (an element's end, ASCII) are scanned again for them."""
        after = Counter(f.rule.id for f in self._queue if f.offset >= offset)
        self._queue = [f for f in self._queue if f.offset < offset]
        dropped = self._queued.dropped
        if dropped:
            rescan = ByteScan(self._gap)
            for f in rescan.feed(self._buf[self._gap - self._base:]):
                if f.offset >= offset:
                    after[f.rule.id] -= 1
            for rule, n in after.items():  # -n of them were counted past the cap
                if n < 0 and rule in dropped:
                    dropped[rule] += n
                    if dropped[rule] <= 0:
                        del dropped[rule]

    def _forget_bytes(self) -> None:
        """A binary framing: the byte findings (and their count) say nothing."""
        self._queue.clear()
        self._queued = _Tally()

    def _release(self, before: int | None, index: int) -> list[Finding]:
        """The queued byte findings before offset ``before`` (all, if None), now in event ``index``."""
        queue = self._queue
        n = 0
        while n < len(queue) and (before is None or queue[n].offset < before):
            n += 1
        if not n:
            return []
        done = [f._replace(event=index) for f in queue[:n]]
        del queue[:n]
        return done

    def _ending(self, end, index: int) -> list[Finding]:
        out: list[Finding] = []
        if self._broken is not None:
            return [self._broken]
        if self._cut is not None and self.events and end is not None and not end.truncated:
            # the earlier stage's cut, said where its marker is, by the framing's rule
            # (before any event, stream.no-events says it)
            out.append(_CUT_RULES.get(self.framing, JSON_ARRAY_UNCLOSED).at(
                self._cut[1], index, f"an earlier stage cut the stream ({self._cut[0]})"))
        elif end is not None and end.truncated:
            tail = self._gap - self._base
            if self.framing == "sse":
                at = self._base + unfinished(self._buf, tail)
                out.append(MISSING_BLANK_LINE.at(at, index, f"{end.truncated}: the last event is never dispatched"))
            elif self.framing == "ndjson":
                at = self._base + self._buf.rfind(b"\n") + 1
                out.append(NDJSON_NO_NEWLINE.at(at, index, "the last line has no newline: a cut stream"))
            elif self.framing == "aws-eventstream":
                out.append(EVENTSTREAM_CUT.at(end.offset, index, end.truncated))
            else:
                out.append(JSON_ARRAY_UNCLOSED.at(end.offset, index, end.truncated))
        if not self.events:
            out.append(NO_EVENTS.at(end.offset if end is not None else 0, 0, "the input holds no complete event"))
        elif self.provider is None:
            out.append(UNKNOWN_PROVIDER.at(0, 0, "no provider dialect recognised: only the framing was checked "
                                                 "(name one with --provider)"))
        else:
            a = self._adapter
            if not a.terminal and a.error is None:
                at = end.offset if end is not None else self._bytes_seen()
                out.append(NO_TERMINAL.at(at, index, f"the stream ended without {TERMINAL[self.provider]}"))
            out += self._rules.close(index)
        return out

    def _emit(self, out: list[Finding], eof: int | None = None) -> list[Finding]:
        """Sort by offset and number the lines (the cursor only moves forward; a finding
        behind it, such as one said of the whole stream at offset 0, is numbered back from
        it in the bytes still held). The end of the input (``eof``, once known) is on its
        last line, not on one after a final line end: a report must not name a line the
        file does not have."""
        if not out:
            return out
        out.sort(key=_offset)
        offset, line = self._lines
        buf, base = self._buf, self._base
        done = []
        for rule, at, event, message, _ in out:
            upto = at - 1 if at == eof and at else at
            if upto > offset:
                line += buf.count(b"\n", max(offset - base, 0), upto - base)
                offset = upto
            if upto < offset:
                number = 1 if upto <= 0 else line - buf.count(b"\n", max(upto - base, 0), offset - base)
            else:
                number = line
            done.append(_new(Finding, (rule, at, event, message, number)))
        self._lines = (offset, line)
        return done


class _Tally:
    """Per rule, the findings a checker kept and those it counted past the cap."""

    __slots__ = ("kept", "dropped")

    def __init__(self) -> None:
        self.kept: dict[str, int] = {}
        self.dropped: dict[str, int] = {}


class _Capped(list):
    """Findings, at most ``limit`` of each rule; the rest are counted in the tally (shared
    by every list of one checker)."""

    def __init__(self, limit: int, tally: _Tally) -> None:
        super().__init__()
        self._limit, self._tally = limit, tally

    def append(self, finding: Finding) -> None:
        rule = finding[0].id
        kept = self._tally.kept
        n = kept.get(rule, 0)
        if n < self._limit:
            kept[rule] = n + 1
            list.append(self, finding)
        else:
            dropped = self._tally.dropped
            dropped[rule] = dropped.get(rule, 0) + 1

    def extend(self, findings) -> None:
        for finding in findings:
            self.append(finding)

    def __iadd__(self, findings):
        self.extend(findings)
        return self


#: framing -> the rule of a stream cut short
_CUT_RULES = {"sse": MISSING_BLANK_LINE, "ndjson": NDJSON_NO_NEWLINE, "aws-eventstream": EVENTSTREAM_CUT}

_EVENTS = {SseEvent}
_EVENT = attrgetter("event")
_new = tuple.__new__  # builds a Finding without the keyword-handling __new__


def _offset(f: Finding) -> int:
    return f.offset


def _recognise(event: str, data: str) -> str | None:
    import orjson

    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return recognise(event, value)


def _refuse_records(event) -> None:
    """sse-tool's own JSON Lines are not a provider's stream."""
    import orjson

    from ..pipeline import sniff_lines

    try:
        first = orjson.loads(event.data)
    except orjson.JSONDecodeError:
        return
    if isinstance(first, dict) and sniff_lines(first) != "ndjson":
        raise BadInput("this is sse-tool's own JSON Lines (frame or normalize output), not a provider's "
                       "stream: check the bytes those stages read", event.offset)


def check(data: bytes, provider: str = "auto", framing: str = "auto") -> list[Finding]:
    """Every finding for a whole stream (a convenience over ``Checker``)."""
    checker = Checker(provider, framing)
    return checker.feed(data) + checker.close()


class NoStreamRecorded(Exception):
    """A recording of a fetch that failed before any byte of its body."""


def check_recording(data: bytes, provider: str = "auto", *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
                    per_rule: int | None = None) -> tuple[list[Finding], Checker | None]:
    """Every finding for a ``fetch --record`` recording: its response head, then its body fed
    chunk by chunk as it arrived; lines are the recording's (of the header, of the chunk).
    Returns the findings and the checker that read the body (None for an error status)."""
    from bisect import bisect_right

    from ..framing import sniff
    from ..recording import parse_recording
    from .http import head_findings, recording_lines

    lines = data.split(b"\n")
    rec = parse_recording(lines)
    if rec.response is None or (rec.response.status < 400 and not rec.body):
        # the recorded fetch failed before any byte of a body: no stream arrived, which is
        # not a stream without events (as normalize and inspect say of it)
        how = (rec.end.outcome + (f": {rec.end.detail}" if rec.end.detail else "")) if rec.end else "no end line"
        raise NoStreamRecorded(f"the recorded fetch got no body ({how})")
    chunk_lines, head_line, header_lines = recording_lines(lines)
    framing = sniff(rec.body, final=True)
    out = head_findings(rec, framing, head_line, header_lines)
    if rec.response.status >= 400:
        return out, None
    checker = Checker(provider, max_event_size=max_event_size, per_rule=per_rule)
    found: list[Finding] = []
    starts = []
    offset = 0
    for chunk in rec.chunks:
        starts.append(offset)
        offset += len(chunk.data)
        found += checker.feed(chunk.data)
    found += checker.close()
    last = len(lines) - (1 if lines and not lines[-1] else 0)
    for f in found:
        i = bisect_right(starts, f.offset) - 1
        line = chunk_lines[i] if 0 <= i < len(chunk_lines) and f.offset < offset else last
        out.append(f._replace(line=line))
    return out, checker
