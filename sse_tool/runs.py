"""Runs of events a framer read at once, made into events only when one is asked for.

A framer made for a reader of whole batches (``RecordReader``: ``raw=True``, ``runs=True``)
hands out a chunk's events as one ``EventRun`` where it read them as one run of a usual
shape: the NDJSON framer a chunk of plain lines (``LineRun``), the SSE parser a run of
``data: D`` or ``event: E`` + ``data: D`` blocks (``SseRun``). Such a run is a sequence of
exactly the ``SseEvent`` the framer would have returned, and it holds ``data``: every
event's data joined by LF, the bytes a batch reader reads with one regex call
(``batch.py``). Most of a run is never made into events: only the events the batch
reader leaves to read alone (a ping, a tool call, the end) are, so a stream costs the
framing and the regex, not a tuple per event made and read again.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, islice, repeat
from operator import add, getitem, sub

from .sse_rules import SseEvent, _new

_AFTER_DATA = slice(6, None)  # a data line's value: what follows "data: "


class EventRun(Sequence):
    """The events of one run; a subclass says how its columns are made (``_columns``)."""

    __slots__ = ("_cols", "_all")

    def __getitem__(self, i):
        if type(i) is slice:
            return self._events()[i]
        names, values, starts, gap, last_id, retry = self._columns()
        value = values[i]  # (an IndexError as a list's)
        if i < 0:
            i += len(values)
        return _new(SseEvent, (names if type(names) is str else names[i], value, last_id, retry,
                               starts[i], starts[i + 1] - gap))

    def __len__(self) -> int:
        return len(self._columns()[1])

    def __iter__(self):
        return iter(self._events())

    def events(self) -> list[SseEvent]:
        """Every event, as a list."""
        return self._events()[:]

    def _events(self) -> list[SseEvent]:
        """Every event, built once by C calls (each end ``gap`` short of the next start)."""
        if self._all is None:
            names, values, starts, gap, last_id, retry = self._columns()
            ends = map(sub, islice(starts, 1, None), repeat(gap))
            self._all = list(map(_new, repeat(SseEvent), zip(repeat(names) if type(names) is str else names,
                                                             values, repeat(last_id), repeat(retry), starts, ends)))
        return self._all

    def _columns(self) -> tuple:
        """(the events' names: one for all, or one each; their data; where each starts,
        then where the next would; the bytes between an event's end and the next start;
        the id and the retry in force), made once."""
        raise NotImplementedError


class LineRun(EventRun):
    """Complete lines of JSON, each an event (its data the line's bytes), as
    ``NdjsonParser(raw=True)`` would give them one by one; ``data`` holds them as they
    arrived, joined by LF, and is split only when an event is asked for."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        #: where the first line starts in the input
        self.offset = offset
        self._cols = self._all = None

    def __len__(self) -> int:
        return self.data.count(b"\n") + 1 if self._cols is None else len(self._cols[1])

    def _columns(self) -> tuple:
        if self._cols is None:
            lines = self.data.split(b"\n")
            # each start a running sum of the lines' sizes (line end included)
            starts = list(accumulate(map(add, map(len, lines), repeat(1)), initial=self.offset))
            self._cols = ("message", lines, starts, 1, None, None)
        return self._cols


class SseRun(EventRun):
    """Blocks of one shape, ``data: D`` (``kinds`` None) or ``event: E`` + ``data: D``
    (``kinds``: each event line), each event's data the bytes of D; ``lines`` are the
    data lines (``data: D``) of the second shape, or the values D of the first."""

    __slots__ = ("_names", "_kinds", "_lines", "_values", "_nl", "_id", "_retry", "offset", "_data")

    def __init__(self, names, kinds: list[bytes] | None, lines: list[bytes], nl: bytes,
                 last_id: str | None, retry: int | None, offset: int) -> None:
        self._names = names  # the parser's event names by their line (``_EventNames``)
        self._kinds, self._lines, self._nl = kinds, lines, nl
        self._values = lines if kinds is None else None
        self._id, self._retry = last_id, retry
        #: where the first block starts in the input
        self.offset = offset
        self._data = None
        self._cols = self._all = None

    @property
    def data(self) -> bytes:
        """The events' data joined by LF, as the bytes that arrived."""
        if self._data is None:
            self._data = b"\n".join(self._data_values())
        return self._data

    def __len__(self) -> int:
        return len(self._lines)

    def _data_values(self) -> list[bytes]:
        if self._values is None:  # each line's "data: " taken off (a slice each: C calls)
            self._values = list(map(getitem, self._lines, repeat(_AFTER_DATA)))
        return self._values

    def _columns(self) -> tuple:
        if self._cols is None:
            kinds, lines, n = self._kinds, self._lines, len(self._nl)
            if kinds is None:
                names = "message"
                sizes = map(len, lines)
                step = 6 + 2 * n  # a block: "data: ", the data, two line ends
            else:
                names = list(map(self._names.__getitem__, kinds))
                sizes = map(add, map(len, kinds), map(len, lines))
                step = 3 * n  # a block: its two lines' ends and the blank line
            starts = list(accumulate(map(add, sizes, repeat(step)), initial=self.offset))
            self._cols = (names, self._data_values(), starts, n, self._id, self._retry)
        return self._cols
