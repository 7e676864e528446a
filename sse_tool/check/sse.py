"""Rules about SSE framing: line ends, fields and blocks, read from the bytes around events.

The framer (``sse.SseParser``) reports each event with its byte span; this module looks at
the bytes the spec's rules let a parser discard. For each event it reads two regions of
the input: the *gap* before it (from the blank line that ended the previous event up to
the event's first field: extra blank lines, comment lines, blocks that dispatched nothing)
and the event's own lines. Nearly every event of a real stream is one ``data: D`` line (or
``event: E`` then ``data: D``) after one blank line; that shape is recognised with a few
C-level counts and nothing more is read. Any other region is split into lines and each
line is judged.

``LineEnds`` counts LF, CRLF and lone CR per chunk (again in C) and reports the first lone
CR and the first line end of a second kind. A CR that ends the input is not judged: it
may be half of a CRLF cut in two.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from bisect import bisect_right
from functools import lru_cache
from operator import attrgetter, sub

from ..decode import BOM
from ..marker import is_marker_line
from ..sse import RESET_COMMENT
from .rules import ERROR, WARNING, Finding, Rule, rule
from .stream import _64K, long_line

MISSING_BLANK_LINE = rule(
    "sse.missing-final-blank-line", ERROR, "the stream ends inside an event",
    """An event is dispatched only by the blank line after its fields. A stream whose last
    event lacks it (or that stops in the middle of a line) loses that event in every
    spec-exact client (the WHATWG rules discard it), while line-by-line clients may still
    use it: the same bytes mean different things to different clients. Cut streams end so.""",
    truncation=True,
)
LONE_CR = rule(
    "sse.lone-cr", WARNING, "a line ended by a lone CR",
    """The spec accepts CR alone as a line end, but clients that split on LF (Go's
    bufio.ScanLines, the `split("\\n")` loops of many hand-written clients, the README's
    browser example) see one long line and lose the events in it.""",
    ("Go bufio.ScanLines readers", "clients that split lines on LF"),
)
MIXED_LINE_ENDS = rule(
    "sse.mixed-line-ends", WARNING, "more than one kind of line end",
    """Legal, but clients that find events by searching for "\\n\\n" or "\\r\\n\\r\\n" miss
    the boundaries written the other way and merge or drop events; a CRLF split across two
    reads also broke spec-exact parsers (rexxars/eventsource-parser#17). Keep one line end.""",
    ("clients that split events on a fixed \\n\\n or \\r\\n\\r\\n",),
)
BLOCK_WITHOUT_DATA = rule(
    "sse.block-without-data", WARNING, "a block of fields with no data line",
    """A block of only `id:`, `retry:` or `event:` lines dispatches no event under the spec,
    but openai-python dispatches it with empty data and fails in json.loads
    (openai/openai-python#2722, #3833), and openai-go did the same ("unexpected end of JSON
    input") until openai/openai-go#621.""",
    ("openai-python (JSONDecodeError)", "openai-go before #621"),
)
COMMENT_ONLY_BLOCK = rule(
    "sse.comment-only-block", WARNING, "a block of comment lines only (a keep-alive)",
    """The spec allows comment keep-alives and spec-exact clients ignore them, but openai-go
    dispatched the blank line after one as an empty event ("unexpected end of JSON input",
    seen with OpenRouter's `: OPENROUTER PROCESSING`; fixed in openai/openai-go#621,
    docker/docker-agent#2662), and once the stream has set an `id:` openai-python and
    httpx-sse dispatch one too (theopenco/llmgateway#2334, florimondmanca/httpx-sse#35).
    A keep-alive line without the blank line after it, or a comment inside an event's
    block, avoids all of these.""",
    ("openai-go before #621", "openai-python and httpx-sse after an id: line"),
)
BLANK_AFTER_ID = rule(
    "sse.blank-line-after-id", WARNING, "an extra blank line after the stream set an id",
    """A blank line that ends no block means nothing to the spec. But openai-python keeps
    the last event id and dispatches an event at every blank line once it is set, so the
    extra blank line becomes an event with empty data and json.loads fails
    (theopenco/llmgateway#2334, openai/openai-python#2722).""",
    ("openai-python (JSONDecodeError)",),
)
UNKNOWN_FIELD = rule(
    "sse.unknown-field", WARNING, "a field name other than data, event, id and retry",
    """Clients ignore the line, as the spec says, so what it carries is lost; it is nearly
    always a typo (`date:` for `data:`, `Data:`, `event :`) or a header written into the
    body.""",
)
DATA_COMMENT = rule(
    "sse.data-comment", ERROR, "a comment sent as data (data: : keepalive)",
    """`data: : keepalive` is not a comment but an event whose data is ": keepalive", and
    every client parses it as JSON: @ai-sdk/openai-compatible fails on Vertex AI partner
    models that send it (anomalyco/opencode#50871), openai-node on a gateway that re-wraps
    OpenRouter's comments this way (mnfst/llm-gateway#2053), openai-python with
    JSONDecodeError. Send `: keepalive` (a real comment) instead.""",
    ("openai-node", "@ai-sdk/openai-compatible", "openai-python"),
)

_LINE = re.compile(rb"([^\r\n]*)(\r\n|\r|\n)")
#: a line (after its LF) that is neither blank nor a data or event line: the only lines
#: of an event that the per-line rules may have something to say about
_ODD_LINE = re.compile(rb"\n(?!data: |event: )([^\n]+)")
_OFFSET, _END = attrgetter("offset"), attrgetter("end")
_FIELDS = (b"data", b"event", b"id", b"retry")
#: the field names a block without data is reported with, at most (then "...")
_NAMES_SHOWN = 8
#: how many bytes of lines _split holds as objects at once
_WINDOW = 64 * 1024
#: fetch --retry-partial's marker: sse-tool's own line, and what came before it in its
#: block belongs to the attempt that was cut
_RESET = (b": " + RESET_COMMENT.encode(), b":" + RESET_COMMENT.encode())


def _lines_end(buf: bytes, start: int, end: int) -> int:
    """Where the complete lines of ``buf[start:end]`` end. Line regexes are only run up to
    there: on an unterminated line ``_LINE`` would retry from every position (quadratic)."""
    return max(buf.rfind(b"\n", start, end), buf.rfind(b"\r", start, end), start - 1) + 1


def _split(buf: bytes, start: int, end: int) -> Iterator[tuple[bytes, int, int]]:
    """(line, start, end) for each complete line of ``buf[start:end]`` (end includes its
    line end), split ``_WINDOW`` bytes at a time: a region of a million short lines (one
    event, or pings) is not a million objects at once."""
    end = _lines_end(buf, start, end)
    while start < end:
        stop = end
        if end - start > _WINDOW:
            stop = _lines_end(buf, start, start + _WINDOW)
            if stop == start:  # one line longer than the window: up to its end
                stop = _line_end_after(buf, start + _WINDOW, end)
            elif buf[stop - 1] == 13 and buf[stop] == 10:  # a CRLF across the window's end
                stop += 1
        yield from _split_window(buf, start, stop)
        start = stop


def _split_window(buf: bytes, start: int, end: int) -> list[tuple[bytes, int, int]]:
    """``_split`` of a region that ends with a line end: one C split when there is no CR,
    the line regex otherwise."""
    if buf.find(b"\r", start, end) < 0:
        out = []
        pos = start
        for line in buf[start:end].split(b"\n")[:-1]:
            stop = pos + len(line) + 1
            out.append((line, pos, stop))
            pos = stop
        return out
    return [(m.group(1), m.start(), m.end()) for m in _LINE.finditer(buf, start, end)]


def _line_end_after(buf: bytes, pos: int, end: int) -> int:
    """Where the line that holds ``buf[pos]`` ends (with its line end), before ``end``."""
    lf, cr = buf.find(b"\n", pos, end), buf.find(b"\r", pos, end)
    if cr < 0 or 0 <= lf < cr:
        return lf + 1
    return cr + 2 if cr + 1 < end and buf[cr + 1] == 10 else cr + 1


def unfinished(buf: bytes, start: int) -> int:
    """Where the unfinished event (or line) after ``start`` begins: the first line after the
    last blank line, or the unterminated last line."""
    begin = None
    last = start
    for m in _LINE.finditer(buf, start, _lines_end(buf, start, len(buf))):
        last = m.end()
        if not m.group(1):
            begin = None
        elif begin is None:
            begin = m.start()
    return last if begin is None else begin


@lru_cache(maxsize=256)  # a stream repeats its few wrong names
def _suggest(name: bytes) -> str:
    """' (data?)' for a field name one edit away from a real one, or a different case."""
    for field in _FIELDS:
        if name.lower() == field or name.strip() == field:
            return f" (did you mean {field.decode()}?)"
        if len(name) == len(field) and sum(a != b for a, b in zip(name, field)) == 1:
            return f" (did you mean {field.decode()}?)"
        if abs(len(name) - len(field)) == 1:
            short, long = sorted((name, field), key=len)
            if any(long[:i] + long[i + 1:] == short for i in range(len(long))):
                return f" (did you mean {field.decode()}?)"
    return ""


class LineEnds:
    """The first lone CR and the first line end of a second kind, read chunk by chunk.

    Counts decide whether a chunk holds anything new; only a chunk that does is searched
    for the position, so a stream of one kind of line end costs a few counts a chunk."""

    __slots__ = ("_pos", "_cr_end", "_first", "_lone_cr", "_mixed", "_mixed_kind")

    def __init__(self) -> None:
        self._pos = 0
        self._cr_end = False  # the last chunk ended in CR: a leading LF completes a CRLF
        self._first: str | None = None  # the kind of the first line end seen
        self._lone_cr: int | None = None
        self._mixed: int | None = None
        self._mixed_kind = ""

    def feed(self, chunk: bytes) -> list[Finding]:
        pos = self._pos
        self._pos += len(chunk)
        if not chunk or (self._lone_cr is not None and self._mixed is not None):
            return []
        before = (self._lone_cr, self._mixed)
        start, end = 0, len(chunk)
        if self._cr_end:  # the CR that ended the last chunk: half a CRLF, or a lone CR
            self._cr_end = False
            if chunk[0] == 10:
                self._saw("crlf", pos - 1)
                start = 1
            else:
                self._saw("cr", pos - 1)
        if end > start and chunk[-1] == 13:  # judged with the next chunk, or never (at the end)
            self._cr_end = True
            end -= 1
        if chunk.find(b"\r", start, end) < 0:
            if self._first != "lf":
                at = chunk.find(b"\n", start, end)
                if at >= 0:
                    self._saw("lf", pos + at)
        else:
            crlf = chunk.count(b"\r\n", start, end)
            lone_cr = chunk.count(b"\r", start, end) - crlf
            lone_lf = chunk.count(b"\n", start, end) - crlf
            kinds = {k for k, n in (("crlf", crlf), ("cr", lone_cr), ("lf", lone_lf)) if n}
            if (lone_cr and self._lone_cr is None) or (self._mixed is None and (
                    len(kinds) > 1 or self._first is not None and kinds != {self._first})):
                self._locate(chunk, start, end, pos)
            elif self._first is None and kinds:  # one kind: the first line end's
                self._first = kinds.pop()
        return self._findings(before)

    def close(self) -> list[Finding]:
        return []  # a CR ending the input may be half a CRLF: it is not judged

    def _locate(self, chunk: bytes, start: int, end: int, pos: int) -> None:
        for m in _LINE.finditer(chunk, start, _lines_end(chunk, start, end)):
            self._saw(_KIND[m.group(2)], pos + m.start(2))
            if self._lone_cr is not None and self._mixed is not None:
                return

    def _saw(self, kind: str, offset: int) -> None:
        if kind == "cr" and self._lone_cr is None:
            self._lone_cr = offset
        if self._first is None:
            self._first = kind
        elif kind != self._first and self._mixed is None:
            self._mixed = offset
            self._mixed_kind = kind

    def _findings(self, before) -> list[Finding]:
        out = []
        if self._lone_cr is not None and before[0] is None:
            out.append(LONE_CR.at(self._lone_cr, -1, "a line ended by CR alone"))
        if self._mixed is not None and before[1] is None:
            out.append(MIXED_LINE_ENDS.at(self._mixed, -1, f"a line ended by {_NAME[self._mixed_kind]} "
                                          f"in a stream whose first line ended by {_NAME[self._first]}"))
        return out


#: what the gap before the next event begins with: the stream (a BOM may come first), the
#: blank line that dispatched the last event, or a line (the blocks before were settled)
_AT_STREAM_START, _AFTER_EVENT, _AT_LINE = range(3)

_KIND = {b"\n": "lf", b"\r\n": "crlf", b"\r": "cr"}
_NAME = {"lf": "LF", "crlf": "CRLF", "cr": "CR"}


class Blocks:
    """The fields and blocks around each event; ``data_lines_only`` is the rule to report
    every line that is not ``data: ...`` with (set for dialects whose clients read nothing
    else, see gemini.py)."""

    def __init__(self) -> None:
        self.data_lines_only: Rule | None = None
        self._sticky_id = False  # an id: line set a non-empty last event id (openai-python)
        self._gap_starts = _AT_STREAM_START  # what the next gap begins with

    def event(self, buf: bytes, base: int, gap: int, ev, index: int, out: list[Finding]) -> None:
        """Judge the gap ``buf[gap - base : ev.offset - base]`` and the event's lines."""
        s, e = ev.offset - base, ev.end - base
        g = gap - base
        starts, self._gap_starts = self._gap_starts, _AFTER_EVENT
        if starts != _AFTER_EVENT:  # lines before the first event, or after settled blocks
            if starts == _AT_STREAM_START and buf.startswith(BOM, g):
                g += len(BOM)
            if s > g:
                self._gap(buf, base, g, s, index, out, after_event=False)
        elif not (s - g == 1 and buf[g] == 10 or s - g == 2 and buf[g] == 13 and buf[g + 1] == 10):
            self._gap(buf, base, g, s, index, out, after_event=True)
        if e - s > _64K or not self._plain(buf, s, e):
            self._lines(buf, base, s, e, index, out)
        elif self.data_lines_only is not None and buf[s] != 100:  # "event: E" + "data: D"
            self._lines(buf, base, s, e, index, out)

    def plain_run(self, buf: bytes, base: int, gap: int, events: list) -> bool:
        """Whether every event of ``events`` (consecutive, the first one's bytes starting at
        ``gap``) is one ``data: D`` line after an optional ``event: E`` line, each after one
        blank line, all with LF line ends and shorter than 64 KiB: then nothing in them can
        be a finding, and counting the region's lines in C proves it. (The lines are data,
        event or blank lines; one data line an event and one blank line before each, so the
        counts add up only if no line is of any other kind.)"""
        if self._gap_starts != _AFTER_EVENT:
            return False  # the first event (a BOM, lines before it), or after settled blocks
        g, end = gap - base, events[-1].end - base
        if buf.find(b"\r", g, end) >= 0:
            return False
        n = len(events)
        data = buf.count(b"\ndata: ", g, end)
        named = buf.count(b"\nevent: ", g, end)
        if data != n or named and self.data_lines_only is not None:
            return False
        if buf.count(b"\n", g, end) != 2 * n + named:
            return False
        for ev in events:
            if ev.end - ev.offset > _64K:
                return False
        return True

    def run(self, buf: bytes, base: int, gap: int, events: list, first: int, out: list[Finding]) -> bool:
        """Judge consecutive events at once (the first one's bytes starting at ``gap``, its
        index ``first``), as ``event`` judges each, if every event is one blank line after
        the last, all with LF line ends and shorter than 64 KiB; else judge nothing and
        return False. Then the events' lines are all that is judged, and of those only the
        lines that are not data or event lines can give a finding: a regex finds them
        (none, if the counts of lines add up), each judged as ``event`` judges it."""
        if self._gap_starts != _AFTER_EVENT:
            return False  # the first event (a BOM, lines before it), or after settled blocks
        if self.data_lines_only is not None:  # every line is judged: only the plainest runs
            return self.plain_run(buf, base, gap, events)
        g, end = gap - base, events[-1].end - base
        if buf.find(b"\r", g, end) >= 0:
            return False
        n = len(events)
        lengths = list(map(sub, map(_END, events), map(_OFFSET, events)))
        # each gap holds at least the blank line that ended the event before: n bytes of
        # gaps is one blank line each
        if end - g - sum(lengths) != n or max(lengths) > _64K:
            return False
        lines = buf.count(b"\n", g, end) - n
        if lines == buf.count(b"\ndata: ", g, end) + buf.count(b"\nevent: ", g, end):
            return True
        starts = list(map(_OFFSET, events))
        for m in _ODD_LINE.finditer(buf, g, end - 1):
            start = m.start(1)
            index = first + bisect_right(starts, base + start) - 1
            self._line((m.group(1), start, m.end(1) + 1), base, index, out)
        return True

    def tail(self, buf: bytes, base: int, gap: int, index: int, out: list[Finding]) -> None:
        """At the end of input: the complete blocks after the last event (a block left
        without its blank line is the truncation, reported as such)."""
        self._blocks_before(buf, base, gap - base, len(buf), index, out)

    def settle(self, buf: bytes, base: int, gap: int, index: int, out: list[Finding]) -> int:
        """Judge the complete blocks of the gap that starts at ``gap`` (no event has ended
        it yet), as the next event or the end would, and return where the rest begins:
        after the last blank line, or ``gap`` if there is none. Blocks that dispatch no
        event (pings, a stream of comments) need not wait in memory for the next event."""
        g = gap - base
        end = len(buf) - (buf[-1:] == b"\r")  # a last CR may be half of a CRLF
        # a blank line is a line end right after another (CR LF being one): found in C, so
        # that a long event still arriving costs no line objects each time it is looked at
        at = max(buf.rfind(b"\n\n", g, end), buf.rfind(b"\n\r", g, end), buf.rfind(b"\r\r", g, end))
        if at < 0:
            return gap
        stop = at + (3 if buf.startswith(b"\r\n", at + 1) else 2)
        self._blocks_before(buf, base, g, stop, index, out)
        self._gap_starts = _AT_LINE
        return base + stop

    def _blocks_before(self, buf: bytes, base: int, g: int, stop: int, index: int, out: list[Finding]) -> None:
        """Judge the complete blocks of the gap from ``g`` to ``stop``, where no event follows."""
        if self._gap_starts == _AT_STREAM_START and buf.startswith(BOM, g):
            g += len(BOM)
        self._gap(buf, base, g, stop, index, out, after_event=self._gap_starts == _AFTER_EVENT, tail=True)

    # -- internals ----------------------------------------------------------------------

    @staticmethod
    def _plain(buf: bytes, s: int, e: int) -> bool:
        """``data: D`` or ``event: E`` + ``data: D``, each line ended by LF or CRLF."""
        n = buf.count(b"\n", s, e)
        if n == 1:
            if not buf.startswith(b"data: ", s):
                return False
        elif n == 2:
            if not buf.startswith(b"event: ", s):
                return False
            second = buf.find(b"\n", s) + 1
            if not buf.startswith(b"data: ", second):
                return False
        else:
            return False
        cr = buf.count(b"\r", s, e)
        return cr == 0 or cr == n and buf.count(b"\r\n", s, e) == n

    def _gap(self, buf: bytes, base: int, g: int, s: int, index: int, out: list[Finding],
             after_event: bool, tail: bool = False) -> None:
        # A block is judged when its blank line comes, from the line after its last reset
        # marker (what came before belongs to the attempt that was cut) to its end: read
        # twice, never held as a list of its lines.
        begin = None  # where the current block's lines to judge begin (None: no block)
        for line, start, after in _split(buf, g, s):
            if line:
                if line in _RESET:
                    begin = after
                elif begin is None:
                    begin = start
            elif after_event:
                pass  # the blank line that dispatched the previous event
            elif begin is not None:
                self._block(buf, base, begin, start, index, out)
                begin = None
            elif self._sticky_id:
                out.append(BLANK_AFTER_ID.at(base + start, index,
                                             "a blank line that ends no event, after an id: was set"))
            after_event = False
        if begin is not None and not tail:  # lines of the event's own block, before its first field
            for t in _split(buf, begin, s):
                self._line(t, base, index, out)

    def _block(self, buf: bytes, base: int, start: int, end: int, index: int, out: list[Finding]) -> None:
        if start == end:  # only the marker (and the cut attempt's lines): sse-tool's, not the server's
            return
        names: dict[bytes, None] = {}  # the fields' names, in order, the first few
        fields, more, server = 0, False, False
        for t in _split(buf, start, end):
            if is_marker_line(t[0]):  # an earlier stage's marker: sse-tool's, not the server's
                continue
            server = True
            name = self._line(t, base, index, out)
            if name is not None:
                fields += 1
                if name == b"data" or name in names or len(names) < _NAMES_SHOWN:
                    names[name] = None
                else:
                    more = True
        if not server:
            return
        if not fields:
            note = ", after an id: was set (openai-python dispatches it)" if self._sticky_id else ""
            out.append(COMMENT_ONLY_BLOCK.at(base + start, index, f"a block of only comment lines{note}"))
        elif b"data" not in names:
            shown = ", ".join(f"{f.decode('utf-8', 'replace')}:" for f in names)
            out.append(BLOCK_WITHOUT_DATA.at(base + start, index, f"a block with only {shown}"
                                             f"{', ...' if more else ''} lines dispatches no event"))

    def _lines(self, buf: bytes, base: int, s: int, e: int, index: int, out: list[Finding]) -> None:
        data_lines = 0
        for t in _split(buf, s, e):
            name = self._line(t, base, index, out)
            if name == b"data":
                data_lines += 1
                if data_lines == 2 and self.data_lines_only is not None:
                    out.append(self.data_lines_only.at(
                        base + t[1], index, "an event of several data lines (each line is read as one JSON document)"))

    def _line(self, t: tuple, base: int, index: int, out: list[Finding]) -> bytes | None:
        """Judge one line (content, start, end); return its field name (None for a comment)."""
        line, start, end = t
        if end - start > _64K:
            out.append(long_line(end - start, base + start, index))
        strict = self.data_lines_only
        if strict is None:  # the usual lines, with nothing to say about them
            if line.startswith(b"data: "):
                return b"data"
            if line.startswith(b"event: "):
                return b"event"
        offset = base + start
        if line[0] == 0x3A:  # ":" comment
            if self.data_lines_only is not None:
                out.append(self.data_lines_only.at(offset, index, "a comment line"))
            return None
        name, colon, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            if strict is not None and not line.startswith(b"data: "):
                out.append(strict.at(offset, index, "a data line without the space after the colon"))
        elif name in _FIELDS:
            if strict is not None:
                out.append(strict.at(offset, index, f"an {name.decode()}: line" if name == b"event"
                                     else f"a {name.decode()}: line"))
            if name == b"id" and 0 not in value:
                self._sticky_id = bool(value)
        else:
            shown = name.decode("utf-8", "replace")
            out.append(UNKNOWN_FIELD.at(offset, index, f"unknown field {shown!r}{_suggest(name)}: the line is ignored"))
            if strict is not None:
                out.append(strict.at(offset, index, f"a {shown!r} line"))
        return name
