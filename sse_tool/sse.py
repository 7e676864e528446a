"""SSE bytes to events, following the WHATWG "event stream" interpretation exactly.

Theory of operation. ``SseParser.feed(chunk)`` takes bytes as they arrive and returns the
events whose blank line has arrived; nothing is dispatched before that blank line, so a
record never depends on bytes still in flight. ``close()`` at end of input returns a
``FrameEnd`` that says whether the input stopped inside an event (truncation: the spec
discards that event, and we report it).

Lines are split on bytes, on LF, CRLF and lone CR. A CR that ends a chunk terminates its
line at once; an LF starting the next chunk is then the rest of that CRLF, not a new blank
line. Splitting bytes before decoding cannot cut a character, since CR and LF never occur
inside a UTF-8 sequence; each complete field is decoded once, which is the same as
decoding the whole stream first (see ``decode.py``) and keeps byte offsets exact.

Cost is linear whatever the chunking. Bytes of an unterminated line are kept as a list of
pieces, joined once when a line end arrives; ``data`` lines are joined once at dispatch;
no byte is searched twice. Memory is bounded by the largest event: past
``max_event_size`` bytes the parser raises ``EventTooLarge``, after handing out the events
completed before it. The size of an event is the bytes of its lines since the last blank
line, line ends included, so the limit trips at the same event whatever the chunking.
(A comment line of that event is handed out as soon as its line ends: where a chunk ends
between the CR and LF of its CRLF, it comes out before the LF trips the limit.)

Strategy for speed. ``_lines`` (in ``sse_rules.py``, with the state it keeps) is the
reference: the spec's rules, one line at a time. Everything else is a shortcut that must
give exactly what it gives, for the two block shapes nearly every stream is made of,
``data: D`` and ``event: E`` + ``data: D``:

* A chunk with no line end (most small chunks) is only appended to the pending pieces;
  their size is added up every ``_COUNT_EVERY`` pieces, not per call.
* With LF line ends and no comments wanted, lines are not read before their blank line:
  when a chunk completes one, the pending pieces are joined once. One regex call
  (``_BLOCK``) reads a single block, as small chunks bring them.
* A longer run of blocks (``_run``) is split with one C call and checked as a whole; its
  events are built by ``map`` and ``zip`` over the lines, offsets summed by ``accumulate``:
  no Python loop per event. Runs with CRLF line ends (Gemini) take it too.
* A block of many ``data: D`` lines (``_data_lines``) is checked by counting and joined by
  one replace, not read line by line. Any other block goes to ``_lines``.
* For a reader of whole batches (``raw=True``, ``runs=True``), a run that is all a chunk
  completed is handed out as one ``runs.SseRun``: its events are made only when asked for.

What costs is the number of Python-level operations per call and per event, not bytes:
bytes methods that take ``start``/``end`` arguments (``find``, ``startswith``) cost as much
as the rest of a loop iteration, and ``b"x" in data`` first tries ``b"x"`` as an integer
(raising and clearing a TypeError): tests are written ``10 in data``. The tests hold the
shortcuts to the rules: every recorded stream cut at every position, and each stream
against its twin with CR line ends, which has the same offsets and is read by ``_lines``.
"""

from __future__ import annotations

import re
from itertools import accumulate, islice, repeat
from operator import add, getitem, sub

from .errors import EventTooLarge
from .runs import SseRun
from .sse_rules import (_COUNT_EVERY, DEFAULT_MAX_EVENT_SIZE, MAX_RETRY, RESET_COMMENT, FrameEnd,
                        IdSet, SseComment, SseEvent, SseRules, _new, _split_lf)

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "MAX_RETRY", "RESET_COMMENT", "FrameEnd", "IdSet",
           "SseComment", "SseEvent", "SseParser"]

# One block of a usual shape, ``data: D`` or ``event: E`` + ``data: D``, with its blank
# line: (the event line or None, D). Reading it so gives what the spec's rules give: the
# one space after each colon is stripped, the data is the one data line.
_BLOCK = re.compile(rb"(?:(event: [^\n]*)\n)?data: ([^\n]*)\n\n")
_AFTER_DATA = slice(6, None)  # a data line's value: what follows "data: "
#: from this many bytes of blocks, try _run before reading block by block
_RUN_FROM = 1024


class SseParser(SseRules):
    """Incremental WHATWG event-stream parser: ``feed(bytes) -> list`` (with ``runs``, or
    one ``runs.SseRun``, a sequence of events), then ``close()``."""

    __slots__ = ()

    def feed(self, chunk: bytes) -> list[SseEvent | SseComment]:
        # Most small chunks hold no line end: keep the piece, nothing else. (``10 in chunk``,
        # not ``b"\n" in chunk``: with a bytes needle, CPython first tries it as an int.)
        if 10 not in chunk and 13 not in chunk and not self._watch:
            if chunk:
                pending = self._pending
                pending.append(chunk)
                if len(pending) > self._count_at:
                    return self._count([])
            return []
        if self._watch:
            chunk = self._chunk_start(chunk)
            if not chunk:
                return []
        if self.comments or 13 in chunk:
            return self._feed_lines(chunk)
        # LF line ends only. An event is never interpreted before its blank line, so bytes
        # wait, uninterpreted, until a chunk completes a blank line.
        end = chunk.rfind(b"\n\n") + 2
        if end == 1 and (chunk[0] != 10 or not self._at_line_start()):
            # no blank line completed (one may start this chunk, after a line end)
            pending = self._pending
            pending.append(chunk)
            if len(pending) > self._count_at:
                return self._count([])
            return []
        pending = self._pending
        if pending:  # the pending pieces and the chunk up to its last blank line, joined once
            pending.append(chunk[:end])
            lines = b"".join(pending)
            pending.clear()
            if self._counted:
                self._counted = self._counted_size = 0
                self._count_at = _COUNT_EVERY
        else:
            lines = chunk[:end]
        out: list[SseEvent | SseComment] = []
        # Small chunks complete one block at a time: one regex call reads the usual shapes.
        # (Not on many blocks: a failed fullmatch backtracks through the first one.)
        match = _BLOCK.fullmatch(lines) if len(lines) < _RUN_FROM else None
        if match and self._block_start is None and not self._size and len(lines) <= self.max_event_size + 1:
            kind, data = match.groups()
            pos = self._pos
            out.append(_new(SseEvent, (
                self._names[kind], data if self.raw else data.decode("utf-8", "replace"),
                self._last_id, self._retry, pos, pos + len(lines) - 1,
            )))
            self._pos = self._block_pos = pos + len(lines)
        else:
            try:
                self._blocks(lines, out, self.runs)
            except EventTooLarge:
                return self._fail(out)
            if len(out) == 1 and type(out[0]) is SseRun:
                out = out[0]  # the whole chunk's events, made when asked for
        if end < len(chunk):
            rest = chunk[end:]
            pending.append(rest)
            if self._size + len(rest) > self.max_event_size:
                return self._fail(out)
        return out

    def close(self) -> FrameEnd:
        """End of input: report whether it stopped inside an event (which is discarded)."""
        if self._error is not None:
            raise self._error
        if self._head:  # a lone partial BOM is an incomplete line
            self._pending.append(self._head)
            self._head = None
        rest = self._take(b"", 0)
        cut = rest.rfind(b"\n") + 1
        last: list = []  # no blank line among them: no event, but a marker (or a comment)
        try:
            if cut:  # complete lines still waiting: does one of them start an event?
                self._lf_lines(rest[:cut], last)
            if self._size + len(rest) - cut > self.max_event_size:  # sizes are counted late
                raise EventTooLarge(self.max_event_size, self._block_pos)
        except EventTooLarge:
            self._fail([])
        if cut < len(rest):
            self._pending.append(rest[cut:])
        end = self._pos + len(rest) - cut
        if cut < len(rest):
            why = "input ended in the middle of a line"
        elif self._block_start is not None:
            why = "input ended inside an event (no blank line after its last field)"
        else:
            why = None
        return FrameEnd(why, end, tuple(last))

    # -- shortcuts (each gives what ``_lines`` gives) --------------------------------------

    def _feed_lines(self, chunk: bytes) -> list[SseEvent | SseComment]:
        """Interpret every line the chunk completes (CR line ends, or comments wanted)."""
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
        if not end:
            pending = self._pending
            pending.append(chunk)
            if len(pending) > self._count_at:
                return self._count([])
            return []
        lines = self._take(chunk, end)
        out: list[SseEvent | SseComment] = []
        try:
            if 13 in lines:
                done = self._crlf_run(lines, out)
                self._any_lines(lines[done:] if done else lines, out)
                if lines[-1] == 13 and end == len(chunk):
                    self._after_cr = self._watch = True
            else:
                self._lf_lines(lines, out)
        except EventTooLarge:
            return self._fail(out)
        return self._keep(chunk, end, out)

    def _lf_lines(self, lines: bytes, out: list) -> None:
        """Complete lines ending in LF, with no CR: blocks up to the last blank line, then
        the lines after it, which start an event."""
        cut = lines.rfind(b"\n\n") + 2
        if cut > 1:
            self._blocks(lines[:cut] if cut < len(lines) else lines, out)
        else:
            cut = 0
        if cut < len(lines):
            self._lines(zip(_split_lf(lines, cut, len(lines) - 1), repeat(1)), out)

    def _crlf_run(self, lines: bytes, out: list) -> int:
        """Complete lines holding a CR: if their blocks, up to the last CRLF blank line, are
        of one usual shape with CRLF line ends (as Gemini sends them), read them with
        ``_run``. Returns how many bytes of ``lines`` were read."""
        last = lines.rfind(b"\r\n\r\n") + 4
        if last < _RUN_FROM:
            return 0
        start = 0
        if self._block_start is not None or self._size:  # an event read line by line goes on
            start = lines.find(b"\r\n\r\n") + 4
            self._any_lines(lines[:start], out)
        if start < last and self._run(lines[start:last], 0, out, b"\r\n"):
            return last
        return start

    def _blocks(self, lines: bytes, out: list, lazy: bool = False) -> None:
        """Complete LF lines (no CR) up to a blank line: the lines of an event read line by
        line, if one goes on, then blocks (the lines between two blank lines). With
        ``lazy``, a run that is all of them is appended as one ``SseRun``."""
        start = 0
        if self._block_start is not None or self._size:
            start = 1 if lines[0] == 10 else lines.find(b"\n\n") + 2
            self._lines(zip(_split_lf(lines, 0, start - 1), repeat(1)), out)  # ends with b"", the blank line
        if len(lines) - start < _RUN_FROM or not self._run(lines, start, out, lazy=lazy and not out):
            self._each_block(lines, start, out)

    def _run(self, lines: bytes, start: int, out: list, nl: bytes = b"\n", lazy: bool = False) -> bool:
        """If every block of ``lines[start:]`` has the shape of the first, ``data: D`` or
        ``event: E`` + ``data: D``, with ``nl`` line ends, append their events and return
        True; else do nothing.

        The blocks are split with one C call and checked as a whole, and their events are
        built with no Python loop at all: a few C calls per run, not per event. With
        ``lazy``, not even that: the run is appended as one ``SseRun``, which makes them
        when asked for.
        """
        if len(lines) - start > self.max_event_size:
            return False  # an event may be over the limit: _each_block fails at it
        n = len(nl)
        if lines.startswith(b"data: ", start):
            data = lines[start + 6 : -2 * n].split(nl + nl + b"data: ")
            joined = b"".join(data)
            if 10 in joined or 13 in joined:  # some block has another line
                return False
            kinds = None
        elif lines.startswith(b"event: ", start):
            # The lines of k blocks: k times an event line, a data line and a blank line.
            parts = lines[start : -2 * n].split(nl)
            if n == 2:  # split at CRLFs: a lone CR or LF left in a part would end a line
                joined = b"".join(parts)
                if 10 in joined or 13 in joined:
                    return False
            kinds, data = parts[0::3], parts[1::3]
            if (len(parts) % 3 != 2 or any(parts[2::3])
                    or b"\n".join(kinds).count(b"\nevent: ") != len(kinds) - 1
                    or b"\n".join(data).count(b"\ndata: ") != len(data) - 1
                    or data[0][:6] != b"data: "):
                return False
        else:
            return False
        if lazy:
            out.append(SseRun(self._names, kinds, data, nl, self._last_id, self._retry, self._pos))
            self._pos = self._block_pos = self._pos + len(lines) - start
            return True
        # (as SseRun makes them, but straight into ``out``: frame reads every event)
        if kinds is None:
            names, values = repeat("message"), data
            sizes = map(len, data)
            step = 6 + 2 * n  # a block: "data: ", the data, two line ends
        else:
            names = map(self._names.__getitem__, kinds)
            values = map(getitem, data, repeat(_AFTER_DATA))
            sizes = map(add, map(len, kinds), map(len, data))
            step = 3 * n  # a block: its two lines' ends and the blank line
        # Every event at once, by C calls: each data decoded, each offset a running sum of
        # the blocks' sizes, each end one line end short of the next offset.
        texts = values if self.raw else map(bytes.decode, values, repeat("utf-8"), repeat("replace"))
        starts = list(accumulate(map(add, sizes, repeat(step)), initial=self._pos))
        ends = map(sub, islice(starts, 1, None), repeat(n))
        out += map(_new, repeat(SseEvent), zip(names, texts, repeat(self._last_id), repeat(self._retry), starts, ends))
        self._pos = self._block_pos = starts[-1]
        return True

    def _each_block(self, lines: bytes, start: int, out: list) -> None:
        """Blocks one at a time: the two usual shapes read by ``_BLOCK``, any other block
        through ``_lines``."""
        pos, end = self._pos, len(lines)
        last_id, retry = self._last_id, self._retry
        match_block, names, limit = _BLOCK.match, self._names, self.max_event_size + 1
        raw = self.raw
        while start < end:
            match = match_block(lines, start)
            if match:
                stop = match.end()
                if stop - start <= limit:  # else _lines fails at it
                    kind, data = match.groups()
                    out.append(_new(SseEvent, (
                        names[kind], data if raw else data.decode("utf-8", "replace"),
                        last_id, retry, pos, pos + stop - start - 1,
                    )))
                    pos += stop - start
                    start = stop
                    continue
            elif lines[start] == 10:  # a blank line with no event before it: nothing to do
                pos += 1
                start += 1
                continue
            stop = lines.find(b"\n\n", start) + 2
            block = lines[start : stop - 1]  # its lines, each with its LF
            if self._data_lines(block, pos, out):
                pos += len(block) + 1
                start = stop
                continue
            self._pos = self._block_pos = pos
            self._lines(zip(_split_lf(lines, start, stop - 1), repeat(1)), out)  # ends with b"": the blank line
            pos = self._pos
            last_id, retry = self._last_id, self._retry
            start = stop
        self._pos = self._block_pos = pos

    def _data_lines(self, block: bytes, pos: int, out: list) -> bool:
        """A block of ``data: D`` lines only (one event of many lines: pretty-printed JSON,
        say), after an optional ``event: E`` line: append its event, read with a few C calls
        instead of a loop per line, and return True; else (any other line) do nothing."""
        kind, body = None, block
        if block.startswith(b"event: "):
            cut = block.find(b"\n") + 1
            kind, body = block[: cut - 1], block[cut:]
        if (not body.startswith(b"data: ") or len(block) > self.max_event_size
                or body.count(b"\n") != body.count(b"\ndata: ") + 1):
            return False  # _lines reads it (and fails it, if it is over the limit)
        data = body[6:-1].replace(b"\ndata: ", b"\n")
        out.append(_new(SseEvent, (
            self._names[kind], data if self.raw else data.decode("utf-8", "replace"),
            self._last_id, self._retry, pos, pos + len(block),
        )))
        return True
