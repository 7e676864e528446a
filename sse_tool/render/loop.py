"""The read loop: bytes from a file descriptor into the reader, records into the painter.

``pump(fd, reader, painter, clock)`` waits on the descriptor with ``select`` until input
arrives or the painter's next deadline passes, whichever is first, so a pending paint (or
the connecting spinner) fires on time even while no byte arrives. It returns the stream's
``End`` record after the painter has finished with it (the reader always ends with one). The clock is injected: only the command's edge passes ``time.monotonic``.

``wake`` (an object with ``fd`` and ``handle()``; not a typing Protocol, which would cost
start-up) lets the edge be woken while the loop waits: its ``fd`` is in the ``select`` set
(a signal handler cannot shorten the wait itself: PEP 475 retries ``select`` with the
timeout it had, none at all once nothing is scheduled), and ``handle()`` runs here,
between two reads, before the painter's ``tick``. Waiting costs nothing more.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable

from ..model import End
from ..pipeline import RecordReader
from .throttle import Painter

READ_SIZE = 65536


def pump(fd: int, reader: RecordReader, painter: Painter, clock: Callable[[], float],
         after: Callable[[], None] | None = None, wake=None) -> End:
    """Read until the stream's ``End``; ``after`` runs after each batch of records."""
    end: End | None = None
    fds = [fd] if wake is None else [fd, wake.fd]
    while end is None:
        deadline = painter.deadline()
        timeout = None if deadline is None else max(0.0, deadline - clock())
        ready, _, _ = select.select(fds, [], [], timeout)
        if wake is not None and wake.fd in ready:
            wake.handle()
        if fd in ready:
            chunk = os.read(fd, READ_SIZE)
            if not chunk:
                break
            painter.arrived()
            end = _feed(reader.feed(chunk), painter)
            if after is not None:
                after()
        painter.tick()
    if end is None:
        end = _feed(reader.close(), painter)
        if after is not None:
            after()
    return end


def _feed(records: list, painter: Painter) -> End | None:
    return painter.feed_all(records)
