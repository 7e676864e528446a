"""Provider events to channel records, with one rule for how a stream ended.

``Normalizer.feed(event)`` takes the events a framer produced (``SseEvent``; comments are
ignored) and returns channel records (``model.Record``); ``close(frame_end)`` returns the
last records, always ending with exactly one ``End``.

The provider-specific part is an *adapter* (``providers/``), one small module each,
registered in ``providers.PROVIDERS``. An adapter sees each event's name and its payload
(the ``data`` parsed as JSON, or the raw string when it is not JSON, such as ``[DONE]``)
and returns records. It also keeps four facts that this module turns into the ``End``,
so the status rule lives here, once:

* ``error``: a dict with ``type`` and ``message`` once the provider sent an error;
* ``terminal``: True once the provider's terminal event arrived;
* ``stop_reason`` and ``usage``: the last values seen.

Status: ``error`` if the provider sent an error (even if a terminal event followed), else
``complete`` if its terminal event arrived and the framing ended cleanly, else
``truncated``: a clean end of input between events proves nothing; the terminal event is
what proves the turn finished. The framing's end is ``close``'s argument when this
normalizer reads the bytes, or an exit marker with code 3 (frame's cut) when it reads
frame's records.

In-band markers (``marker.py``) arrive as comments: ``reset`` voids the attempt so far,
``note`` becomes a ``Note``, and ``exit`` (an earlier stage failed with that code) decides
the ``End``: its status follows the code (3 and 130 truncated, 4 error, 5 invalid, else
failed) and
its ``exit`` field holds the code, so every later stage exits with it. Only a provider
error seen before an earlier stage's cut (code 3) keeps status ``error``, as with a cut
found here.

Bad input: events that no adapter claims, events of another dialect than the one named,
broken JSON, and a value of the wrong type (adapters raise ``BadInput``; the offset of
the event is added here). A failure said in text is no bad input: an SSE ``event: error``
whose data is empty or plain text, and an AWS event-stream exception or error message
(its text in a header or a plain payload), are the provider errors they stand for. An event with broken JSON just before a ``reset`` or ``exit``
marker, or before a cut the framing found (``close``), is counted as part of that
failure: its error is held until the next item shows which. One rule for every framing
and every path: an NDJSON line an earlier stage cut reaches here whole-looking (the
stage ended the line to write its marker), and in frame's records an SSE event and an
NDJSON line look alike, so what the raw bytes and frame's records say must not depend on
which it was. With ``lenient=True`` bad events are skipped and counted in ``warnings``
instead.

With ``provider="auto"`` events are held until one adapter recognises the stream (it is
nearly always the first event); the choice is in ``provider`` afterwards.

Fast path: an adapter may also have ``quick(event, payload)``, which reads its dialect's
common delta event with a few plain tests and returns its one record, or None for anything
else. ``fast_path()`` hands it out while nothing else is owed to an event (the provider
is known and confirmed, no broken line is held): a caller that has parsed an event's JSON
object may then ask ``quick`` first and ``feed`` the event only when it says None, which
gives what ``feed`` alone gives (``pipeline.RecordReader`` does; the tests compare both
ways on every fixture cut everywhere). An adapter may also name ``quick_lines``, the exact
data line of that event as its provider sends it, which lets a reader take a whole batch
of such lines with one regex call and one ``loads`` (``fast_lines``; ``batch.py`` says
what it is).
"""

from __future__ import annotations

import orjson

from .decode import decode_field
from .errors import BadInput, ExitCode
from .eventstream import failure_payload
from .marker import EXIT, NO_STREAM, NOTE, parse
from .model import End, Note, Record, Reset, Status
from .providers import PROVIDERS, recognise
from .providers.errors import error_event, plain_text
from .sse import FrameEnd, SseComment, SseEvent

#: events held while guessing the provider before giving up
MAX_UNRECOGNISED = 64


def parse_payload(event: SseEvent):
    """The event's data as JSON when it looks like JSON, else the raw string."""
    data = event.data
    if type(data) is bytes:  # from a raw framer: decoded as the framers decode text
        data = decode_field(data)
    if data.rstrip() == "[DONE]":  # the OpenAI sentinel looks like JSON but is not (the
        return "[DONE]"            # SDKs take it with whitespace after it too)
    if plain_text(data):
        return data
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"event {event.event!r} has broken JSON data: {exc}", event.offset) from None


#: the end record's detail when no event arrived (": WHY" follows when the input was cut)
NO_EVENTS = "no events arrived"

#: an exit code -> the end status that stands for it (an interruption cut what arrived)
_STATUS = {ExitCode.TRUNCATED: Status.TRUNCATED, ExitCode.PROVIDER_ERROR: Status.ERROR,
           ExitCode.BAD_INPUT: Status.INVALID, ExitCode.INTERRUPTED: Status.TRUNCATED}


def failed_end(code: int, detail: str, offset: int | None = None) -> End:
    """The ``End`` that stands for a stage failing with exit ``code``."""
    return End(_STATUS.get(code, Status.FAILED), detail=detail, exit=int(code), offset=offset)


class Normalizer:
    """Stage core: events in, channel records out; ``close`` adds the one ``End``."""

    def __init__(self, provider: str = "auto", *, lenient: bool = False) -> None:
        if provider != "auto" and provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}")
        self.provider: str | None = None if provider == "auto" else provider
        self.lenient = lenient
        #: with ``lenient``: what was skipped, one line each (the caller says them)
        self.warnings: list[str] = []
        self._adapter = PROVIDERS[provider]() if self.provider else None
        self._held: list[tuple[str, object, int]] = []
        self._exit: tuple[int, str] | None = None  # an earlier stage's failure: (code, why)
        self._broken: BadInput | None = None  # broken JSON, held until the next item
        self._confirmed = self.provider is None  # a named provider's events were seen
        #: once ``close`` has run: whether the provider's terminal event arrived, and why the
        #: framing was cut (None if it was not), the two facts the status was decided from
        self.terminal = False
        self.cut: str | None = None

    def feed(self, item: SseEvent | SseComment) -> list[Record]:
        if self._broken is not None:
            marker = parse(item.text) if isinstance(item, SseComment) else None
            if marker is not None and marker.kind == NOTE:
                return [Note(marker.text)]  # says nothing about the line before: keep waiting
            broken, self._broken = self._broken, None
            if marker is None:
                self._bad(broken)  # not cut by a failure: it is broken
        if isinstance(item, SseComment):
            return self._marker(item)
        try:
            payload = parse_payload(item)
        except BadInput as exc:
            self._broken = exc  # broken, or cut by a failure the next item tells of
            return []
        if type(payload) is not dict:
            payload = failure_payload(item, payload)  # an event-stream failure said in text
            if item.event == "error" and type(payload) is str and payload != "[DONE]":
                payload = error_event(payload)
            if type(payload) is not dict and payload not in _NOT_JSON_OK:
                self._bad(BadInput(f"event {item.event!r}: data is {_what(payload)}, not a JSON object",
                                   item.offset))
                return []
        if self._adapter is None:
            return self._recognise(item, payload)
        if not self._confirmed:
            self._check_dialect(item, payload)
        try:
            return self._adapter.feed(item.event, payload)
        except BadInput as exc:
            if exc.offset is None:
                exc = BadInput(f"event {item.event!r}: {exc}", item.offset)
            self._bad(exc)
            return []

    def fast_path(self):
        """The adapter's ``quick`` when an event may be read with it now, else None (ask
        again after each ``feed``: the state it depends on changes only there)."""
        a = self._adapter
        if self._broken is None and self._confirmed and a is not None and not a.terminal:
            return getattr(a, "quick", None)  # (after the terminal event, the adapter decides)
        return None

    def fast_lines(self):
        """With ``fast_path`` open, the adapter's ``quick_lines`` if it has one: (a regex,
        as bytes, matching a whole data line of the common delta event exactly as the provider sends
        it, capturing a key and the text's JSON string literal; the channel of each key),
        for a reader of many such lines at once (``batch.py``). It may follow the
        adapter's state: a batch is read before the events of it that go to ``feed``, so
        ask again after each, and read the rest item by item if it changed."""
        return getattr(self._adapter, "quick_lines", None) if self.fast_path() is not None else None

    def close(self, frame_end: FrameEnd | None = None) -> list[Record]:
        if self._broken is not None:
            broken, self._broken = self._broken, None
            if frame_end is None or not frame_end.truncated:  # (else the cut says it)
                self._bad(broken)
        out: list[Record] = []
        if self._exit is not None and self._exit[0] != ExitCode.TRUNCATED:
            return self._flush() + [failed_end(*self._exit)]
        cut = frame_end.truncated if frame_end is not None and frame_end.truncated else None
        if cut is None and self._exit is not None:
            cut = self._exit[1]
        if self._adapter is None:
            if not self._held:  # (an earlier stage may have seen no stream at all)
                empty = self._exit is not None and self._exit[1].endswith(NO_STREAM)
                detail = NO_STREAM if empty else f"{NO_EVENTS}: {cut}" if cut else NO_EVENTS
                return [End(Status.TRUNCATED, detail=detail)]
            error = next((e for _, p, _ in self._held if (e := _error_body(p))), None)
            if error is None:
                event, _, offset = self._held[0]
                raise BadInput(f"unknown provider format: the first event ({_shape(event, self._held[0][1])}) "
                               "is no known provider's (choose one with --provider)", offset)
            # An error body names no provider: it is the error, whichever dialect reads it.
            out += self._choose("openai")
            self._adapter.error = self._adapter.error or error
        out += self._flush()
        a = self._adapter
        self.terminal, self.cut = bool(a.terminal), cut
        if a.error is not None:
            status, detail = Status.ERROR, None
        elif a.terminal and cut is None:
            status, detail = Status.COMPLETE, None
        elif a.terminal:
            status, detail = Status.TRUNCATED, cut
        else:
            status, detail = Status.TRUNCATED, "the stream ended without the provider's terminal event"
            if cut is not None:
                detail = f"{cut}, before the provider's terminal event"
        out.append(End(status, a.stop_reason, a.usage, a.error, detail))
        return out

    # -- internals ----------------------------------------------------------------------

    def _marker(self, item: SseComment) -> list[Record]:
        marker = parse(item.text)
        if marker is None:
            return []
        if marker.kind == NOTE:
            return [Note(marker.text)]
        if marker.kind == EXIT:
            text = marker.text
            if marker.code == ExitCode.TRUNCATED and text.startswith("frame: "):
                text = text[len("frame: "):]  # frame's cut: what reading the bytes here finds
            self._exit = (marker.code, text)
            return []
        # RESET: a retry starts over: what the failed attempt said (its error, its end) is void.
        self._held.clear()
        self._exit = None
        if self._adapter is not None:
            self._adapter = PROVIDERS[self.provider]()
        return [Reset()]

    def _recognise(self, item: SseEvent, payload) -> list[Record]:
        self._held.append((item.event, payload, item.offset))
        name = recognise(item.event, payload)
        if name is None:
            if len(self._held) > MAX_UNRECOGNISED:
                raise BadInput(
                    f"no known provider format in the first {MAX_UNRECOGNISED} events "
                    "(choose one with --provider)", item.offset,
                )
            return []
        return self._choose(name)

    def _check_dialect(self, item: SseEvent, payload) -> None:
        """A provider named by the caller: until one of its events is seen, an event that
        only another dialect sends means the input is not what the caller said."""
        if PROVIDERS[self.provider].recognise(item.event, payload):
            self._confirmed = True
            return
        other = None if _error_body(payload) else recognise(item.event, payload)
        if other is not None:
            raise BadInput(f"expected {self.provider} events, got {other} events "
                           f"(the first is {_shape(item.event, payload)})", item.offset)

    def _bad(self, exc: BadInput) -> None:
        if not self.lenient:
            raise exc
        self.warnings.append(f"skipped: {exc}")

    def _flush(self) -> list[Record]:
        flush = getattr(self._adapter, "flush", None)
        return flush() if flush is not None else []

    def _choose(self, name: str) -> list[Record]:
        self.provider = name
        self._adapter = PROVIDERS[name]()
        out: list[Record] = []
        for event, payload, offset in self._held:
            try:
                out += self._adapter.feed(event, payload)
            except BadInput as exc:
                self._bad(BadInput(f"event {event!r}: {exc}", offset) if exc.offset is None else exc)
        self._held.clear()
        return out


#: data that is not a JSON object yet means something: the OpenAI sentinel; nothing at all
_NOT_JSON_OK = ("[DONE]", "")


def _what(payload) -> str:
    if isinstance(payload, str):
        return f"not JSON ({payload[:40]!r})"
    from .typed import json_type

    return json_type(payload)


def _error_body(payload) -> dict | None:
    """The error a payload holds, if it is an error object as providers send them (HTTP
    error bodies too)."""
    from .providers.errors import error_body

    return error_body(payload)


def _shape(event: str, payload) -> str:
    """A few words on what an event looks like, for messages."""
    if isinstance(payload, dict):
        kind = payload.get("type") if isinstance(payload.get("type"), str) else None
        keys = ", ".join(list(payload)[:4])
        return f"type {kind!r}" if kind else f"an object with {keys or 'no keys'}"
    text = payload if isinstance(payload, str) else str(payload)
    return f"{event!r} {text[:40]!r}"
