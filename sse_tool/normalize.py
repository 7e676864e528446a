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
normalizer reads the bytes, or frame's cut marker (``sse.CUT_COMMENT``) when it reads
frame's records.

With ``provider="auto"`` events are held until one adapter recognises the stream (it is
nearly always the first event); the choice is in ``provider`` afterwards.
"""

from __future__ import annotations

import orjson

from .errors import BadInput
from .model import End, Record, Reset, Status
from .providers import PROVIDERS, recognise
from .sse import CUT_COMMENT, RESET_COMMENT, FrameEnd, SseComment, SseEvent

#: events held while guessing the provider before giving up
MAX_UNRECOGNISED = 64


def parse_payload(event: SseEvent):
    """The event's data as JSON when it looks like JSON, else the raw string."""
    data = event.data
    if data == "[DONE]":  # the OpenAI sentinel looks like JSON but is not
        return data
    if data[:1] in ("{", "[") or data[:1].isspace():
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise BadInput(f"event {event.event!r} has broken JSON data: {exc}", event.offset) from None
    return data


class Normalizer:
    """Stage core: events in, channel records out; ``close`` adds the one ``End``."""

    def __init__(self, provider: str = "auto") -> None:
        if provider != "auto" and provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}")
        self.provider: str | None = None if provider == "auto" else provider
        self._adapter = PROVIDERS[provider]() if self.provider else None
        self._held: list[tuple[str, object]] = []
        self._cut: str | None = None  # why the input was cut, from frame's cut marker
        #: once ``close`` has run: whether the provider's terminal event arrived, and why the
        #: framing was cut (None if it was not), the two facts the status was decided from
        self.terminal = False
        self.cut: str | None = None

    def feed(self, item: SseEvent | SseComment) -> list[Record]:
        if isinstance(item, SseComment):
            if item.text.startswith(CUT_COMMENT + ":"):
                self._cut = item.text[len(CUT_COMMENT) + 1:].strip() or "input cut"
            if item.text != RESET_COMMENT:
                return []
            # A retry starts over: what the failed attempt said (its error, its end) is void.
            self._held.clear()
            self._cut = None
            if self._adapter is not None:
                self._adapter = PROVIDERS[self.provider]()
            return [Reset()]
        payload = parse_payload(item)
        if self._adapter is None:
            self._held.append((item.event, payload))
            name = recognise(item.event, payload)
            if name is None:
                if len(self._held) > MAX_UNRECOGNISED:
                    raise BadInput(
                        f"no known provider format in the first {MAX_UNRECOGNISED} events "
                        "(choose one with --provider)", item.offset,
                    )
                return []
            return self._choose(name)
        return self._adapter.feed(item.event, payload)

    def close(self, frame_end: FrameEnd | None = None) -> list[Record]:
        out: list[Record] = []
        if self._adapter is None:
            if not self._held:
                return [End(Status.TRUNCATED, detail="no events arrived")]
            if not any(isinstance(p, dict) and "error" in p for _, p in self._held):
                raise BadInput("unknown provider format (choose one with --provider)")
            # A bare error object names no provider; every dialect reads it the same way.
            out += self._choose("openai")
        a = self._adapter
        cut = frame_end.truncated if frame_end is not None and frame_end.truncated else self._cut
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

    def _choose(self, name: str) -> list[Record]:
        self.provider = name
        self._adapter = PROVIDERS[name]()
        out: list[Record] = []
        for event, payload in self._held:
            out += self._adapter.feed(event, payload)
        self._held.clear()
        return out
