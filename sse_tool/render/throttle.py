"""The throttled painter: receiving is not painting.

Consumes channel records (``feed``) and the passing of time (``tick``, with an injected
clock); produces calls on an injected *view*, the only thing that draws::

    view.paint(draft, now)        # show the draft as it is now (a prefix of the final text)
    view.reset(draft, now)        # a retry began: the previous attempt is void
    view.finish(draft, end, now)  # the terminal record: show the result, stable
    view.abort(draft, now)        # Ctrl-C or bad input: leave the screen clean
    view.suspend(draft, now)      # the process stops (Ctrl-Z): leave the terminal to the shell
    view.note(text, now)          # an earlier stage's notice ("fetch: retry 1/2 in 1s")
    view.animates                 # True if the view wants idle frames (a spinner)

A delta only stores the aggregate and schedules one paint if none is pending; the paint,
when ``tick`` finds it due, reads the latest aggregate. So however many deltas arrive, a
view paints at most once per ``interval`` (0 paints on every delta). A ``reset`` cancels
the pending paint and paints at once; ``finish`` cancels it before the final answer is
written, and nothing paints afterwards, so a late paint can never overwrite the result.

The painter knows no terminal, no file and no real clock: ``tick``/``deadline`` let the
caller's I/O loop sleep exactly until the next paint is due.
"""

from __future__ import annotations

from collections.abc import Callable

from ..model import Delta, End, Note, Record, Reset
from .draft import Draft

#: before the first delta, a view that animates gets a frame this long after start ...
SPINNER_DELAY = 0.3
#: ... and then one per this interval
SPINNER_INTERVAL = 0.1


class Painter:
    def __init__(self, view, clock: Callable[[], float], interval: float = 0.04) -> None:
        self.view = view
        self.clock = clock
        self.interval = interval
        self.started = clock()
        self.draft = Draft(self.started)
        self.finished = False
        #: paints of content (reset paints included), and idle spinner frames
        self.paints = 0
        self.spins = 0
        self.records = 0
        self._due: float | None = None  # the one pending paint, if any
        self._last = float("-inf")  # when the last paint happened
        self._next_spin = self.started + SPINNER_DELAY if view.animates else None

    def arrived(self) -> None:
        """Bytes of input arrived (the view may say "waiting" instead of "connecting");
        the records of one read share a batch (times inside one read mean nothing)."""
        self.draft.got_bytes = True
        self.draft.batch += 1

    def resized(self) -> None:
        """The terminal changed size, or the process continues after a stop: paint
        again soon, at the new width, where the cursor is."""
        if not self.finished and self._due is None:
            self._due = self.clock()

    def suspend(self) -> None:
        """The process is about to stop (Ctrl-Z): the view hands the terminal back."""
        if not self.finished:
            self.view.suspend(self.draft, self.clock())

    def feed(self, record: Record) -> None:
        if self.finished:
            return
        self.records += 1
        if isinstance(record, End):
            self.finish(record)
            return
        now = self.clock()
        if isinstance(record, Reset):
            self.draft.clear()
            self._due = None
            self.view.reset(self.draft, now)
            self._paint(now)
            return
        if isinstance(record, Note):  # an earlier stage's notice, shown in the view's place
            self.view.note(record.text, now)
            if self._due is None:
                self._due = now
            return
        if not self.draft.add(record, now):
            return
        self._next_spin = None  # content is on its way: no more idle frames
        if self._due is None:
            self._due = max(now, self._last + self.interval)
        if self.interval <= 0:
            self._paint(now)

    def feed_all(self, records: list[Record]) -> End | None:
        """``feed`` each record, up to and including the ``End`` (returned; None if there
        is none). The records of one read arrive together: a run of deltas is stored at one
        clock reading, and schedules at most one paint, as one ``feed`` after another would
        (a paint is only ever due later). With ``interval`` 0 every delta paints."""
        i, n = 0, len(records)
        while i < n:
            record = records[i]
            if type(record) is Delta and self.interval > 0 and not self.finished:
                j = i + 1
                while j < n and type(records[j]) is Delta:
                    j += 1
                self._deltas(records[i:j] if i or j < n else records)
                i = j
                continue
            self.feed(record)
            if isinstance(record, End):
                return record
            i += 1
        return None

    def _deltas(self, deltas: list[Delta]) -> None:
        """A run of deltas: ``feed`` for each, at one clock reading."""
        self.records += len(deltas)
        now = self.clock()
        if self.draft.add_deltas(deltas, now):
            self._next_spin = None  # content is on its way: no more idle frames
            if self._due is None:
                self._due = max(now, self._last + self.interval)

    def tick(self) -> None:
        """Paint if a paint is due (or an idle frame, for a view that animates)."""
        if self.finished:
            return
        now = self.clock()
        if self._due is not None and now >= self._due:
            self._paint(now)
        elif self._next_spin is not None and now >= self._next_spin:
            self.spins += 1
            self._next_spin = now + SPINNER_INTERVAL
            self.view.paint(self.draft, now)

    def deadline(self) -> float | None:
        """When ``tick`` next has something to do (clock time), or None: wait for input."""
        if self.finished:
            return None
        times = [t for t in (self._due, self._next_spin) if t is not None]
        return min(times) if times else None

    def finish(self, end: End) -> None:
        self._due = None  # cancelled first: nothing may paint over the final answer
        self.finished = True
        self.view.finish(self.draft, end, self.clock())

    def abort(self, why: str | None = "interrupted") -> None:
        """Stop without a result (interrupted, bad input, no stream): the view cleans up
        and says ``why`` the answer is incomplete (None: nothing to say)."""
        if not self.finished:
            self._due = None
            self.finished = True
            self.view.abort(self.draft, self.clock(), why)

    def _paint(self, now: float) -> None:
        self._due = None
        self._last = now
        self.paints += 1
        self.view.paint(self.draft, now)
