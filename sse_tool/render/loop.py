"""The read loop: bytes from a file descriptor into the reader, records into the painter.

``pump(fd, reader, painter, clock)`` waits on the descriptor with ``select`` until input
arrives or the painter's next deadline passes, whichever is first, so a pending paint (or
the connecting spinner) fires on time even while no byte arrives. It returns the stream's
``End`` record after the painter has finished with it (the reader always ends with one). The clock is injected: only the command's edge passes ``time.monotonic``.
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
         after: Callable[[], None] | None = None) -> End:
    """Read until the stream's ``End``; ``after`` runs after each batch of records."""
    end: End | None = None
    while end is None:
        deadline = painter.deadline()
        timeout = None if deadline is None else max(0.0, deadline - clock())
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
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
