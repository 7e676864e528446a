"""``fetch --reconnect``: the WHATWG EventSource reconnection rules around ``fetch.stream``.

Consumes a ``fetch.Request`` and the reconnection options; produces the items
``fetch.stream`` produces (``Sending``, ``Head``, body ``bytes``, ``Retrying``), attempts
numbered across connections, plus a ``Notice`` (one line for stderr and the recording)
before each reconnection and when reconnecting stops. Each connection is one ``stream``
call, under what is left of ``--max-time``, with its own ``--retry`` budget for failures
before its body; ``reconnect.Resumer`` decides what of each body is written.

When the body of a connection ends, cleanly or cut, or the connection fails (refused,
reset, a timeout other than ``--max-time``), the stream is reconnected after the wait
``reconnect.Waits`` gives, with ``Last-Event-ID`` set to the last event id (not sent when
there is none). It stops, as the spec says: on 204 No Content, on an HTTP error (after
``--retry``), on a response that is not a 200 event stream; and after the limit of
reconnections, or once the provider's terminal event was written. A first response that
is not an event stream is written as a plain ``fetch`` writes it, and not reconnected.
The exit status is that of the last connection, as for one request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import NamedTuple

from ..reconnect import Resumer, Waits
from ..retry import Failure, RetryPolicy
from .failures import BodyCut, ConnectionFailed, FetchError, HttpError, TimedOut
from .request import Request, Timeouts
from .transfer import Head, Retrying, Sending, stream

#: what ``--reconnect-delay`` is unless given: the few seconds browsers wait
DEFAULT_DELAY = 3.0
HEADER = "Last-Event-ID"


class Notice(NamedTuple):
    """One line about reconnecting, for stderr and the recording."""

    text: str


class NotAStream(HttpError):
    """A reconnection answered with something other than the event stream."""


def reconnecting(
    request: Request,
    *,
    limit: int | None = None,
    delay: float = DEFAULT_DELAY,
    timeouts: Timeouts = Timeouts(),
    retry: int = 0,
    retry_delay: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    random: Callable[[], float] | None = None,
    **options,
) -> Iterator[Sending | Head | bytes | Retrying | Notice]:
    """``fetch.stream``'s items for one event stream over as many connections as it takes.

    ``limit``: reconnections allowed (None: no limit); ``delay``: the wait until the
    stream sets ``retry``; ``retry``/``retry_delay``: ``--retry`` for each connection.
    ``options`` go to ``fetch.stream`` (``transport``, ``http2``, ``trace``, ...).
    """
    resumer = Resumer(_given_id(request.headers))
    waits = Waits(limit, delay, random=random)
    deadline = None if timeouts.total is None else clock() + timeouts.total
    attempts = 0
    while True:
        written = resumer.written  # (events this connection brings: none if it never opens)
        headers = _with_last_event_id(request.headers, resumer.last_id)
        left = None if deadline is None else max(deadline - clock(), 0.001)
        items = stream(request._replace(headers=headers), timeouts=timeouts._replace(total=left),
                       policy=RetryPolicy(retry, base=retry_delay), sleep=sleep, clock=clock,
                       **options)
        plain = stop = False  # the body is not the stream / no connection follows this one
        ended: FetchError | None = None
        try:
            with closing(items):
                for item in items:
                    if isinstance(item, bytes):
                        out = item if plain else resumer.feed(item)
                        if out:
                            yield out
                    elif isinstance(item, Sending):
                        attempts += 1
                        yield item._replace(attempt=attempts)
                    elif isinstance(item, Head) and item.final and item.status < 300:
                        yield item
                        why = _not_the_stream(item)
                        if why is None:
                            resumer.begin()
                        elif resumer.connections == 0 or item.status == 204:
                            plain = stop = True  # a plain response: written as fetch writes it
                            if item.status != 204 or resumer.connections:
                                yield Notice(f"the server answered {why}: not reconnecting")
                        else:
                            raise NotAStream(f"the reconnection was answered {why}",
                                             Failure("status", status=item.status))
                    else:
                        yield item
        except FetchError as exc:
            ended = exc
        resumer.ended()
        if plain or resumer.terminal or not _reconnectable(ended):
            stop = True
        wait = None
        if not stop:
            wait = waits.after(resumer.written > written, resumer.retry)
            why = _declined(wait, waits, resumer, deadline, clock)
            if why:
                if ended is None:
                    yield Notice(f"{_ending(ended)}; not reconnecting: {why}")
                else:  # said once, with the failure (and in its exit marker)
                    ended.args = (f"{ended}; not reconnecting: {why}",)
                stop = True
        if stop:
            if tail := resumer.finish():
                yield tail
            if ended is not None:
                raise ended
            return
        resumer.drop()
        resume = (f"resuming after id {resumer.last_id}" if resumer.resumes()
                  else "no event id to resume from: the stream starts again")
        of = f"/{waits.limit}" if waits.limit is not None else ""
        yield Notice(f"{_ending(ended)}; reconnect {wait.attempt}{of} in {wait.seconds:.3g}s "
                     f"({wait.basis}), {resume}")
        sleep(wait.seconds)


def _declined(wait, waits: Waits, resumer: Resumer, deadline: float | None, clock) -> str:
    """Why no reconnection follows though the connection could be reconnected ("" if one does)."""
    if wait is None:
        return f"--reconnect-limit {waits.limit} reached"
    if deadline is not None and wait.seconds >= deadline - clock():
        return f"waiting {wait.seconds:.3g}s would pass --max-time"
    if resumer.resumes() and not _sendable(resumer.last_id):
        return "the last event id holds a control character, which no header can carry"
    return ""


def _reconnectable(ended: FetchError | None) -> bool:
    """A clean end, a cut, or a connection failure: the spec reconnects. An HTTP error
    (once ``--retry`` is spent), a refused certificate and ``--max-time`` end the stream."""
    if ended is None or isinstance(ended, BodyCut):
        return True
    if isinstance(ended, ConnectionFailed):
        return ended.failure.kind == "network"
    if isinstance(ended, TimedOut):
        return ended.which != "total"
    return False


def _ending(ended: FetchError | None) -> str:
    return "the server ended the stream" if ended is None else str(ended)


def _not_the_stream(head: Head) -> str | None:
    """Why a 2xx response is not the event stream to read (None when it is)."""
    if head.status == 204:
        return "204 No Content"
    kind = next((v for n, v in head.headers if n.lower() == "content-type"), "")
    if head.status != 200:
        return f"HTTP {head.status}"
    if kind.split(";")[0].strip().lower() != "text/event-stream":
        return f"Content-Type {kind or '(none)'}, not text/event-stream"
    return None


def _given_id(headers) -> str | None:
    """The ``Last-Event-ID`` the request was given (-H), which the first connection sends."""
    return next((v.strip() for n, v in headers if n.lower() == HEADER.lower() and v.strip()), None)


def _with_last_event_id(headers, last_id: str | None):
    """The request's headers with ``Last-Event-ID`` set to ``last_id`` (removed when it is
    empty). The value goes as UTF-8 bytes, as browsers send it."""
    kept = tuple((n, v) for n, v in headers if n.lower() != HEADER.lower())
    if not last_id or not _sendable(last_id):
        return kept
    return kept + ((HEADER, last_id.encode("utf-8")),)


def _sendable(value: str) -> bool:
    # The spec's id holds no CR, LF or NUL; a header value holds no other control either.
    return not any(ord(c) < 0x20 and c != "\t" or c == "\x7f" for c in value)

