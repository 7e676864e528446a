"""Replay schedules: a recording, or a plain stream file, as timed writes.

Consumes a ``recording.Recording`` (from ``fetch --record``) or the bytes of a plain file
(SSE, a JSON array, NDJSON) and a speed or rate; produces a list of ``Step(delay, data)``:
wait ``delay`` seconds, then write ``data``. A recording's steps are its chunks, exactly as
they arrived, with the gaps between their arrival times divided by the speed; a plain
file's steps are its events (``20ev``) or slices of bytes (``4kB``) at the rate given.

It never sleeps, reads a clock or touches a file: ``sse-tool replay`` and ``sse-tool
serve`` do the waiting and the writing. ``EventEnds`` (where each event ends in a byte
stream) is here because both the ``--rate`` schedule and the ``cut_after_events`` fault
need it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import BadInput, ExitCode, SseToolError
from .framing import AutoFramer
from .recording import MAGIC, Recording
from .sse import SseComment

#: the rate a plain file is replayed at when none is given: about a live model's pace
DEFAULT_RATE = "20ev"
# Byte rates are written this many times a second (each write at least one byte), so a
# byte rate looks like a steady trickle without a system call per byte.
_WRITES_PER_SECOND = 20

#: how a recorded exchange ended -> the exit code ``fetch`` gave it. ``interrupted`` and
#: ``broken-pipe`` mean the recorder stopped early, which to a replay is a truncated stream:
#: 130 and 141 are kept for the replay's own Ctrl-C and closed pipe.
OUTCOME_EXIT = {
    "complete": ExitCode.OK,
    "truncated": ExitCode.TRUNCATED,
    "interrupted": ExitCode.TRUNCATED,
    "broken-pipe": ExitCode.TRUNCATED,
    "http-error": ExitCode.HTTP_ERROR,
    "network": ExitCode.NETWORK,
    "timeout": ExitCode.TIMEOUT,
}


class RateError(SseToolError):
    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class Step:
    #: seconds to wait before the write (after the previous one)
    delay: float
    data: bytes


@dataclass(frozen=True)
class Rate:
    per_second: float
    #: "ev" (events) or "B" (bytes)
    unit: str


@dataclass(frozen=True)
class Replay:
    """What replaying a recording does: the writes, the wait after them, how it ends."""

    steps: list[Step]
    #: seconds between the last write and the recorded end
    tail: float
    exit_code: ExitCode
    #: one line for stderr when the exchange did not complete ("" when it did)
    message: str


_RATE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ev|events?|b|kb|kib|mb|mib)?(?:/s)?", re.I)
_BYTES = {"b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2}


def parse_rate(text: str) -> Rate:
    """``20ev`` (events a second), ``512B``, ``4kB``, ``1MiB`` (bytes a second); ``/s`` optional."""
    m = _RATE.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise RateError(f"not a rate: {text!r} (try 20ev or 4kB: events or bytes a second)")
    unit = (m.group(2) or "ev").lower()
    if unit.startswith("ev"):
        return Rate(float(m.group(1)), "ev")
    return Rate(float(m.group(1)) * _BYTES[unit], "B")


def is_recording(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a ``fetch --record`` recording."""
    return head.startswith(MAGIC.encode())


def scaled(seconds: float, speed: float) -> float:
    """A recorded interval at ``speed`` (0: no waiting at all)."""
    return 0.0 if speed == 0 else max(0.0, seconds) / speed


def recording_steps(rec: Recording, speed: float = 1.0) -> list[Step]:
    """The recorded body chunks, each after its recorded gap (the first after the time to
    first byte, counted from the request), divided by ``speed``."""
    steps, last = [], 0.0
    for chunk in rec.chunks:
        steps.append(Step(scaled(chunk.time - last, speed), chunk.data))
        last = chunk.time
    return steps


def replay_recording(rec: Recording, speed: float = 1.0) -> Replay:
    """Steps and ending for replaying ``rec`` to stdout, the way ``fetch`` wrote it.

    An error status's body went to stderr, not stdout, so only the message is replayed;
    but when the error answered a retry after a body had gone out, that body is replayed.
    """
    end = rec.end
    last = rec.times[-1] if rec.times else 0.0
    status = rec.response.status if rec.response else None
    if end is None:
        return Replay(recording_steps(rec, speed), 0.0, ExitCode.TRUNCATED,
                      "the recording has no end line (the recorder was stopped): truncated")
    code = OUTCOME_EXIT[end.outcome]
    answered = status is not None and status < 300
    if code is ExitCode.HTTP_ERROR and not answered or not answered and status and code is ExitCode.OK:
        reason = f"HTTP {status} {rec.response.reason}".rstrip() if status else "HTTP error"
        detail = end.detail if end.detail.startswith("HTTP") else f"{reason}: {end.detail}".rstrip(": ")
        return Replay([], scaled(end.time, speed), ExitCode.HTTP_ERROR, detail)
    if code is ExitCode.HTTP_ERROR:  # fetch said the error after the body, as here
        message = end.detail or "HTTP error"
    else:
        message = "" if code is ExitCode.OK else f"recorded {end.outcome}: {end.detail}".rstrip(": ")
    return Replay(recording_steps(rec, speed), scaled(end.time - last, speed), code, message)


def play(plan: Replay, send: Callable[[bytes], None], *,
         clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep) -> None:
    """Send each step's bytes at its time, then wait the tail. The delays add up to one
    deadline from the start, so the time a write takes (a slow reader) delays the next
    write but is not added to every one after it."""
    due = clock()
    for step in plan.steps:
        due += step.delay
        _sleep_until(due, clock, sleep)
        send(step.data)
    _sleep_until(due + plan.tail, clock, sleep)


def _sleep_until(deadline: float, clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
    left = deadline - clock()
    if left > 0:
        sleep(left)


def steps_from(steps: list[Step], offset: int) -> list[Step]:
    """The steps of the bytes from ``offset`` on: what was sent before it is skipped, with
    its waits, and the rest of the step it falls in goes at once."""
    out: list[Step] = []
    pos = 0
    for step in steps:
        end = pos + len(step.data)
        if end > offset:
            out.append(step if pos >= offset else Step(0.0, step.data[offset - pos:]))
        pos = end
    return out


def rate_steps(data: bytes, rate: Rate, speed: float = 1.0) -> list[Step]:
    """A plain stream file at ``rate`` (times ``speed``): one write per event, or slices
    of bytes. The first write goes at once."""
    per_second = rate.per_second * speed
    if rate.unit == "ev":
        pieces, start = [], 0
        for end in event_ends(data):
            pieces.append(data[start:end])
            start = end
        if start < len(data):
            pieces.append(data[start:])
        gap = 0.0 if speed == 0 else 1 / per_second
    else:
        size = max(1, int(per_second / _WRITES_PER_SECOND)) if speed else max(len(data), 1)
        pieces = [data[i:i + size] for i in range(0, len(data), size)]
        gap = 0.0 if speed == 0 else size / per_second
    return [Step(gap if i else 0.0, piece) for i, piece in enumerate(pieces)]


def event_ends(data: bytes) -> list[int]:
    ends = EventEnds()
    return ends.feed(data) + ends.close()


class EventEnds:
    """Byte offsets just past each event (its blank line included) in a stream fed in chunks.

    Events are what ``sse-tool frame`` would emit: SSE events (comments do not count),
    JSON-array / NDJSON elements, or AWS event-stream messages. Input that stops being
    readable ends the search quietly: a server replaying a file has no business rejecting
    it. The offsets do not depend on how the stream is chunked.
    """

    def __init__(self) -> None:
        self._framer: AutoFramer | None = AutoFramer()
        self._pos = 0
        self._prev = b""  # the previous chunk, for a terminator that ended it
        self._cr: int | None = None  # an event ended by a CR that ended the last chunk

    def feed(self, chunk: bytes) -> list[int]:
        start, self._pos = self._pos, self._pos + len(chunk)
        if not chunk:
            return []
        out = []
        if self._cr is not None:  # a CRLF split between chunks is still one terminator
            out.append(self._cr + (chunk[:1] == b"\n"))
            self._cr = None
        if self._framer is None:
            return out
        try:
            items = self._framer.feed(chunk)
        except BadInput:
            self._framer = None
            return out
        window, base = self._prev + chunk, start - len(self._prev)
        self._prev = chunk
        binary = self._framer.kind == "aws-eventstream"  # a message ends exactly at its CRC
        for item in items:
            if isinstance(item, SseComment):
                continue
            if binary:
                out.append(item.end)
                continue
            i = item.end - base
            if i < 0:  # ended two chunks back (a CR split from its LF): no peeking that far
                out.append(item.end + 1)
                continue
            # Include one line terminator (CRLF, LF or CR): the blank line ending an SSE
            # event, the newline after an NDJSON line.
            if window[i:i + 2] == b"\r\n":
                i += 2
            elif window[i:i + 1] == b"\r" and i + 1 == len(window):
                self._cr = base + i + 1
                continue
            elif window[i:i + 1] in (b"\n", b"\r"):
                i += 1
            out.append(base + i)
        return out

    def close(self) -> list[int]:
        """The end held back for a final CR (whether an LF followed was still open)."""
        held, self._cr = self._cr, None
        return [] if held is None else [held]
