"""Faults on demand: the plan parsed from options and query parameters, and its effect.

Consumes ``name=value`` pairs (``--fault`` options for the whole server, a request's query
parameters for one request) and a replay schedule (``replay.Step`` list); produces a
``FaultPlan`` and, from it, the actions a server performs: ``Write(data)``, ``Wait(seconds)``
(None: until the client leaves), and ``End(cut)`` (finish the body, or drop the connection
without finishing it). The actions are a generator because a stall with keep-alives never
ends. It does no I/O and reads no clock; it does not know HTTP servers or sockets.

Faults (names take ``_`` or ``-``):
  cut_after_bytes=N     send N body bytes, then cut the connection (an incomplete body)
  cut_after_events=N    send N complete events (up to their blank line), then cut
  close_after_events=N  send N complete events, then end the body cleanly (a server
                        closing the stream, as one that wants a reconnection does)
  stall=1               stop instead of cutting, and hold the connection open forever;
                        alone, right after the headers (no body byte ever)
  chunk=N               re-chunk the body into N-byte writes (1: byte by byte; a large N
                        holds bytes back as a buffering proxy does)
  first_byte_delay=D    wait D before the first body byte (headers go out at once)
  chunk_delay=D         wait D more before every later write
  keepalive=D           fill silences of D or longer with ``: keep-alive`` comment lines
                        (SSE only, at line starts, never during first_byte_delay)
  status=N              answer status N with an error body instead of the stream;
                        retry_after=S adds Retry-After, message=M sets the message,
                        body=TEXT sends TEXT as the body instead
  provider=P            the error body's shape: openai (default), anthropic, gemini,
                        ollama, cohere
  times=N               apply the faults to the first N requests for this URL only (per
                        test, with the ``X-Sse-Tool-Test`` header; see ``app``)
  quirk=A,B             wire quirks that broke real clients (``quirks.QUIRKS``)
  speed=X, rate=R       as ``--speed`` and ``--rate`` (not faults, but per request too)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from http import HTTPStatus

from ..errors import ExitCode, SseToolError
from ..replay import EventEnds, RateError, Step, parse_rate
from ..units import parse_duration

#: what ``keepalive`` writes: a comment line, which every SSE parser ignores
KEEPALIVE = b": keep-alive\n"


class FaultError(SseToolError):
    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class FaultPlan:
    cut_after_bytes: int | None = None
    cut_after_events: int | None = None
    close_after_events: int | None = None
    stall: bool = False
    chunk: int | None = None
    first_byte_delay: float = 0.0
    chunk_delay: float = 0.0
    keepalive: float | None = None
    status: int | None = None
    retry_after: str | None = None
    message: str | None = None
    body: str | None = None
    provider: str | None = None
    times: int | None = None
    quirk: tuple[str, ...] = ()
    speed: float | None = None
    rate: str | None = None

    @property
    def stops(self) -> bool:
        return (self.cut_after_bytes is not None or self.cut_after_events is not None
                or self.close_after_events is not None)

    def clean(self) -> FaultPlan:
        """The plan without its faults (what a request past ``times`` gets)."""
        return FaultPlan(speed=self.speed, rate=self.rate)

    def describe(self) -> str:
        """The faults in force, as query parameters (for the access log)."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value not in (None, False, 0.0, ()) and f.name not in ("speed", "rate", "body"):
                parts.append(f"{f.name}={_plain(value)}")
        if self.body is not None:
            parts.append("body=...")
        return "&".join(parts)


def _plain(value) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    if value is True:
        return "1"
    if isinstance(value, float):
        return f"{value:g}s"
    return str(value)


_KINDS = {f.name: f.type for f in fields(FaultPlan)}
#: statuses whose answer has no body (HTTP forbids one)
NO_BODY = frozenset({204, 205, 304})
# What h11 accepts as a header value: visible ASCII, spaces inside only (no CR, LF or NUL).
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
_PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini", "ollama", "cohere")


def parse_faults(pairs: Iterable[tuple[str, str]], base: FaultPlan = FaultPlan(), *,
                 strict: bool = True) -> FaultPlan:
    """``base`` with the named faults set. Unknown names are an error when ``strict``
    (server options) and ignored otherwise (a request's own query parameters)."""
    changes = {}
    for raw_name, value in pairs:
        name = raw_name.strip().lower().replace("-", "_")
        if name not in _KINDS:
            if strict:
                raise FaultError(f"unknown fault {raw_name!r} (known: {', '.join(_KINDS)})")
            continue
        try:
            changes[name] = _value(name, value.strip())
        except ValueError as exc:
            raise FaultError(f"{raw_name}={value}: {exc}") from None
    plan = replace(base, **changes)
    if plan.status in NO_BODY and (plan.body is not None or plan.message is not None):
        raise FaultError(f"status={plan.status} answers without a body: drop body= and message=")
    return plan


def parse_fault_option(text: str) -> tuple[str, str]:
    """``--fault name=value`` (a bare ``stall`` means ``stall=1``)."""
    name, sep, value = text.partition("=")
    return (name, value) if sep else (name, "1")


def _value(name: str, value: str):
    if name in ("cut_after_bytes", "cut_after_events", "close_after_events", "chunk", "times", "status"):
        number = _int(value)
        if name == "chunk" and number < 1 or name == "times" and number < 1:
            raise ValueError("must be 1 or more")
        if name == "status" and not 200 <= number <= 599:
            raise ValueError("an HTTP status from 200 to 599")
        return number
    if name in ("first_byte_delay", "chunk_delay", "keepalive"):
        seconds = parse_duration(value)
        if name == "keepalive" and seconds <= 0:
            raise ValueError("must be more than 0")
        return seconds
    if name == "stall":
        if value.lower() in ("1", "true", "yes", "on", ""):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected 1 or 0")
    if name == "speed":
        speed = float(value)
        if not speed >= 0:
            raise ValueError("must be 0 or more")
        return speed
    if name == "rate":
        try:
            parse_rate(value)
        except RateError as exc:
            raise ValueError(str(exc)) from None
        return value
    if name == "quirk":
        from .quirks import parse_quirks

        return parse_quirks(value)
    if name == "provider":
        if value not in _PROVIDERS:
            raise ValueError(f"one of {', '.join(_PROVIDERS)}")
        return value
    if name == "retry_after" and not _HEADER_VALUE.fullmatch(value):
        raise ValueError("expected seconds or an HTTP date (printable characters only)")
    return value  # retry_after, message, body: text as given


def _int(value: str) -> int:
    if not (value.isascii() and value.isdigit()):  # (int() refuses "²", which isdigit takes)
        raise ValueError("expected a whole number")
    return int(value)


# -- the actions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    data: bytes


@dataclass(frozen=True)
class Wait:
    #: None: until the client goes away
    seconds: float | None


@dataclass(frozen=True)
class End:
    #: True: close the connection without ending the body (the client sees it cut)
    cut: bool


def shape(steps: Iterable[Step], plan: FaultPlan, ending: str = "finish", *,
          comments: bool = True) -> Iterator[Write | Wait | End]:
    """The writes and waits that serve ``steps`` under ``plan``.

    ``ending`` is what happens after the last step without a fault: ``finish``, ``cut``
    (a recording that was cut) or ``stall`` (a recording that timed out). ``comments``
    says whether keep-alive comment lines may go into this body (SSE only).
    """
    stop = _StopPoint(plan)
    keepalive = plan.keepalive if comments else None
    pieces = _Pieces(plan.chunk)
    last = b"\n"  # nothing sent is a line start
    first = True
    stopped = stop.at_start() or (plan.stall and not plan.stops)
    writes: list[tuple[float, bytes]] = []
    if not stopped:
        for step in steps:
            allowed, stopped = stop.take(step.data)
            writes = pieces.feed(step.delay, step.data[:allowed])
            if stopped:
                writes += pieces.close()
            for delay, piece in writes:
                if first and plan.first_byte_delay:
                    yield Wait(plan.first_byte_delay)
                if not first:
                    delay += plan.chunk_delay
                yield from _silence(delay, keepalive, last)
                yield Write(piece)
                first, last = False, piece
            if stopped:
                break
        else:
            for delay, piece in pieces.close():
                if not first:
                    delay += plan.chunk_delay
                yield from _silence(delay, keepalive, last)
                yield Write(piece)
                first, last = False, piece
    how = ("stall" if plan.stall else "finish" if stop.clean else "cut") if stopped else ending
    if how == "stall":
        if keepalive and last.endswith(b"\n"):
            while True:
                yield Wait(keepalive)
                yield Write(KEEPALIVE)
        yield Wait(None)
    yield End(cut=how == "cut")


class _Pieces:
    """Steps to writes: one per step, or (``chunk=N``) N bytes each, across step boundaries.

    A piece goes out when its last byte is due, after the steps' delays summed since the
    last write; the bytes of a short remainder wait for more, as in a buffering proxy.
    """

    def __init__(self, size: int | None) -> None:
        self._size = size
        self._held = b""
        self._delay = 0.0

    def feed(self, delay: float, data: bytes) -> list[tuple[float, bytes]]:
        self._delay += delay
        if not data:
            return []
        if self._size is None:
            out, self._delay = [(self._delay, data)], 0.0
            return out
        self._held += data
        out = []
        while len(self._held) >= self._size:
            out.append((self._delay, self._held[:self._size]))
            self._held, self._delay = self._held[self._size:], 0.0
        return out

    def close(self) -> list[tuple[float, bytes]]:
        held, self._held = self._held, b""
        return [(self._delay, held)] if held else []


def _silence(seconds: float, keepalive: float | None, last: bytes) -> Iterator[Wait | Write]:
    # A comment line may only start where a line starts: after an LF (after a CR, an LF
    # may still follow, and a comment in between would make a blank line of it).
    if keepalive and last.endswith(b"\n"):
        while seconds >= keepalive:
            yield Wait(keepalive)
            yield Write(KEEPALIVE)
            seconds -= keepalive
    if seconds > 0:
        yield Wait(seconds)


class _StopPoint:
    """Where ``cut_after_bytes`` / ``cut_after_events`` / ``close_after_events`` stop the
    body, whichever comes first; ``clean`` says that a close did (at a tie, the cut)."""

    def __init__(self, plan: FaultPlan) -> None:
        events = [n for n in (plan.cut_after_events, plan.close_after_events) if n is not None]
        self._bytes_left = plan.cut_after_bytes
        self._events_left = min(events) if events else None
        self._ends = EventEnds() if self._events_left else None
        self._pos = 0
        self._close = plan.close_after_events is not None and (
            plan.cut_after_events is None or plan.close_after_events < plan.cut_after_events)
        #: the body stopped at a clean close
        self.clean = self._close and self._events_left == 0 and not self._bytes_left == 0

    def at_start(self) -> bool:
        return self._bytes_left == 0 or self._events_left == 0

    def take(self, data: bytes) -> tuple[int, bool]:
        """How many bytes of ``data`` go out, and whether the stop point is reached."""
        limit, reached = len(data), False
        if self._bytes_left is not None and self._bytes_left <= limit:
            limit, reached = self._bytes_left, True
        if self._ends is not None:
            for end in self._ends.feed(data):
                self._events_left -= 1
                if self._events_left == 0:
                    self._ends = None
                    if end - self._pos <= limit:
                        limit, reached = max(0, end - self._pos), True
                        self.clean = self._close
                    break
        if self._bytes_left is not None:
            self._bytes_left -= limit
        self._pos += len(data)
        return limit, reached


# -- error answers -----------------------------------------------------------------------

# Per provider, the error type (or gRPC status) each HTTP status comes with.
_OPENAI_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error",
                 404: "invalid_request_error", 429: "rate_limit_error"}
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                    529: "overloaded_error"}
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
                  504: "DEADLINE_EXCEEDED"}


def error_answer(plan: FaultPlan, provider: str | None = None) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) for the ``status`` fault, the body in the provider's shape."""
    status = plan.status or 500
    headers = []
    if plan.retry_after is not None:
        headers.append(("Retry-After", plan.retry_after))
    if status in NO_BODY:
        return status, headers, b""
    if plan.body is not None:
        body = plan.body.encode("utf-8")
        try:
            json.loads(body)
            kind = "application/json"
        except ValueError:
            kind = "text/plain; charset=utf-8"
        return status, [("Content-Type", kind), *headers], body
    message = plan.message or f"{reason(status)} (a fault injected by sse-tool serve)"
    shape_of = plan.provider or provider or "openai"
    return status, [("Content-Type", "application/json"), *headers], error_body(shape_of, status, message)


def error_body(provider: str, status: int, message: str, *, kind: str | None = None,
               code=None) -> bytes:
    """A JSON error body as the provider's API sends it; ``kind`` keeps an error type
    known already (else it follows from the status)."""
    if provider == "anthropic":
        data = {"type": "error", "error": {"type": kind or _ANTHROPIC_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"), "message": message}}
    elif provider == "gemini":
        data = {"error": {"code": status, "message": message, "status": kind or _GEMINI_STATUS.get(
            status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")}}
    elif provider == "ollama":
        data = {"error": message}
    elif provider == "cohere":
        data = {"message": message}
    else:
        data = {"error": {"message": message, "type": kind or _OPENAI_TYPES.get(
            status, "server_error" if status >= 500 else "invalid_request_error"),
            "param": None, "code": code}}
    return json.dumps(data).encode()


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return {529: "Overloaded"}.get(status, "Error")


def provider_for_host(host: str) -> str | None:
    """The provider whose API lives at ``host`` (for error shapes and the relay's key)."""
    host = host.lower().rstrip(".")
    if host == "api.openai.com":
        return "openai"
    if host == "api.anthropic.com":
        return "anthropic"
    if host == "generativelanguage.googleapis.com" or host.endswith("aiplatform.googleapis.com"):
        return "gemini"
    return None
