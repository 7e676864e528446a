"""Rules of the OpenAI Responses stream (and the servers that copy it).

The stream opens with ``response.created``; each output item is announced by
``response.output_item.added`` before anything refers to its id, each content part (and
reasoning summary part) by its ``.added`` event before its text streams, and each
``.done`` repeats exactly the text its deltas built. ``sequence_number`` counts the events
from 0 (older recordings have none at all, which is fine); an ``event:`` line, when sent,
names the JSON ``type``. One terminal event ends the stream (``stream.after-terminal``).
"""

from __future__ import annotations

from .rules import ERROR, WARNING, Finding, key, rule

SEQUENCE = rule(
    "responses.sequence-number", ERROR, "sequence_number not counting up from 0",
    """Each event's `sequence_number` orders the stream: it starts at 0 and increases with
    every event, so a client can detect lost or reordered events and resume. A number that
    repeats, goes back, or is present on some events only, breaks that. (Streams recorded
    before OpenAI added the field have it on no event, which is fine.)""",
)
SEQUENCE_GAP = rule(
    "responses.sequence-gap", WARNING, "a sequence_number that skips ahead: events lost",
    """`sequence_number` grows by one per event (in OpenAI's streams and in every server's
    recorded here), so a number that skips ahead says events were lost on the way: left out
    by a proxy that passes only the events it knows, or skipped by a resumed stream
    (`starting_after`) that begins past the last event the client had. A lost delta is text
    missing from the answer that nothing else in the stream reveals.""",
)
CREATED_FIRST = rule(
    "responses.created-first", ERROR, "the first event is not response.created",
    """`response.created` opens every Responses stream and carries the response id that
    later events and follow-up requests refer to; clients create their response object
    from it.""",
)
ITEM_NOT_ADDED = rule(
    "responses.item-not-added", ERROR, "an event for an output item never announced",
    """Every output item is announced by `response.output_item.added` before any event
    refers to it. Codex-style clients keep an active item per id and drop deltas without
    one ("OutputTextDelta without active item", openai/codex#12798), so a proxy that leaves
    the event out shows an empty reply (BerriAI/litellm#22102).""",
    ("Codex (empty reply)", "clients that track items by id"),
)
PART_NOT_ADDED = rule(
    "responses.part-not-added", ERROR, "text for a content part never announced",
    """`response.content_part.added` (`response.reasoning_summary_part.added` for summaries)
    opens each part before its deltas; clients that build the message part by part have
    nowhere to put text for a part that was never opened.""",
    ("Codex and other clients that build content parts",),
)
DONE_TEXT = rule(
    "responses.done-text", ERROR, "a .done event whose text differs from its deltas",
    """A `.done` event (`output_text.done`, `reasoning_summary_text.done`,
    `function_call_arguments.done`, ...) repeats the whole text its deltas streamed. Clients
    that keep the deltas and clients that keep the `.done` text then disagree on the answer
    (or the tool arguments).""",
)
EVENT_NAME = rule(
    "responses.event-name", ERROR, "an event: line that differs from the JSON type",
    """The SSE event name repeats the payload's `type`. openai-python keys on the data, but
    browser EventSource listeners and other clients key on the name, so the two readings of
    the stream disagree. (A stream without event lines, as OpenRouter sends, is fine.)""",
)
ERROR_SHAPE = rule(
    "responses.error-shape", ERROR, "an error event without a message",
    """An `error` event carries `{"error": {"type", "code", "message"}}` (as recorded) or the
    flat form of the API reference (`{"type": "error", "code", "message"}`); either way the
    message is a string, which clients show.""",
)

#: delta type -> (the .done type, its text field, whose part must be open: "content",
#: "summary" or None for the item alone)
_TEXTS = {
    "response.output_text.delta": ("response.output_text.done", "text", "content"),
    "response.refusal.delta": ("response.refusal.done", "refusal", "content"),
    "response.reasoning_text.delta": ("response.reasoning_text.done", "text", "content"),
    "response.reasoning_summary_text.delta": ("response.reasoning_summary_text.done", "text", "summary"),
    "response.function_call_arguments.delta": ("response.function_call_arguments.done", "arguments", None),
    "response.custom_tool_call_input.delta": ("response.custom_tool_call_input.done", "input", None),
    "response.mcp_call_arguments.delta": ("response.mcp_call_arguments.done", "arguments", None),
}
_DONE = {done: (delta, field, part) for delta, (done, field, part) in _TEXTS.items()}
_PART_ADDED = {"response.content_part.added": "content", "response.reasoning_summary_part.added": "summary"}
_PART_INDEX = {"content": "content_index", "summary": "summary_index"}


class Rules:
    def __init__(self) -> None:
        self._first = True
        self._sequence: int | None = None  # the last sequence_number
        self._numbered: bool | None = None  # whether events carry one (decided by the first)
        self._mixed = False
        self._items: set = set()  # announced item ids
        self._indexes: set = set()  # their output_index values
        self._parts: set = set()  # (kind, item id, index) opened
        self._texts: dict = {}  # (delta type, item id, index) -> pieces

    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        if isinstance(payload, str):  # OpenRouter's [DONE]: not this dialect's
            return
        at = event.offset
        kind = payload.get("type")
        if event.event != "message" and event.event != kind:
            out.append(EVENT_NAME.at(at, index, f"event: {event.event} for a {kind!r} payload"))
        self._sequence_number(payload.get("sequence_number"), at, index, out)
        if self._first:
            self._first = False
            if kind not in ("response.created", "error"):
                out.append(CREATED_FIRST.at(at, index, f"the stream starts with {kind!r}"))
        if kind == "error":
            self._error(payload, at, index, out)
            return
        if not isinstance(kind, str):
            return
        if kind == "response.output_item.added":
            item = payload.get("item")
            if isinstance(item, dict) and item.get("id") is not None:
                self._items.add(key(item["id"]))
            if payload.get("output_index") is not None:
                self._indexes.add(key(payload["output_index"]))
            return
        item_id = key(payload.get("item_id"))
        if not self._known(payload, item_id):
            what = f"item {item_id!r}" if item_id is not None else f"output_index {payload.get('output_index')!r}"
            if item_id is not None or payload.get("output_index") is not None:
                out.append(ITEM_NOT_ADDED.at(at, index, f"{kind} for {what}, never announced by output_item.added"))
        if kind in _PART_ADDED:
            part = _PART_ADDED[kind]
            self._parts.add((part, item_id, key(payload.get(_PART_INDEX[part]))))
        elif kind in _TEXTS:
            self._delta(kind, payload, item_id, at, index, out)
        elif kind in _DONE:
            self._done(kind, payload, item_id, at, index, out)

    def close(self, index: int) -> list[Finding]:
        return []

    # -- internals ----------------------------------------------------------------------

    def _known(self, payload: dict, item_id) -> bool:
        if item_id is not None:
            return item_id in self._items
        position = key(payload.get("output_index"))
        return position is None or position in self._indexes

    def _key(self, delta_kind: str, payload: dict, item_id) -> tuple:
        part = _TEXTS[delta_kind][2]
        return delta_kind, item_id, key(payload.get(_PART_INDEX[part])) if part else None

    def _delta(self, kind: str, payload: dict, item_id, at: int, index: int, out: list[Finding]) -> None:
        part = _TEXTS[kind][2]
        slot = self._key(kind, payload, item_id)
        if part and (part, item_id, slot[2]) not in self._parts and item_id in self._items:
            what = "content part" if part == "content" else "summary part"
            out.append(PART_NOT_ADDED.at(at, index, f"{kind} for {what} {slot[2]!r} of item {item_id!r}, never added"))
            self._parts.add((part, item_id, slot[2]))  # said once per part
        text = payload.get("delta")
        if isinstance(text, str):
            self._texts.setdefault(slot, []).append(text)

    def _done(self, kind: str, payload: dict, item_id, at: int, index: int, out: list[Finding]) -> None:
        delta_kind, field, _ = _DONE[kind]
        pieces = self._texts.pop(self._key(delta_kind, payload, item_id), None)
        text = payload.get(field)
        if pieces is None or not isinstance(text, str):
            return  # nothing streamed: the .done text is the whole of it
        streamed = "".join(pieces)
        if streamed != text:
            out.append(DONE_TEXT.at(at, index, f"{kind} has {len(text)} characters, its deltas {len(streamed)} "
                                               f"({_difference(streamed, text)})"))

    def _sequence_number(self, number, at: int, index: int, out: list[Finding]) -> None:
        numbered = isinstance(number, int) and not isinstance(number, bool)
        if self._numbered is None:
            self._numbered = numbered
            if numbered and number != 0:
                out.append(SEQUENCE.at(at, index, f"the first sequence_number is {number}, not 0"))
        elif numbered != self._numbered:
            if not self._mixed:  # said once: every later event would repeat it
                self._mixed = True
                out.append(SEQUENCE.at(at, index, "an event without sequence_number" if not numbered
                                       else "a sequence_number in a stream whose first event had none"))
        elif numbered and self._sequence is not None and number <= self._sequence:
            out.append(SEQUENCE.at(at, index, f"sequence_number {number} after {self._sequence}"))
        elif numbered and self._sequence is not None and number > self._sequence + 1:
            lost = number - self._sequence - 1
            out.append(SEQUENCE_GAP.at(at, index, f"sequence_number {number} after {self._sequence}: "
                                                  f"{lost} event{'s' if lost > 1 else ''} missing"))
        if numbered:
            self._sequence = number

    def _error(self, payload: dict, at: int, index: int, out: list[Finding]) -> None:
        nested = payload.get("error")
        source = nested if isinstance(nested, dict) else payload
        message = source.get("message")
        if not (isinstance(message, str) and message):
            out.append(ERROR_SHAPE.at(at, index, "an error event without a string message"))


def _difference(a: str, b: str) -> str:
    """Where two texts first differ, in a few words."""
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at character {n}"
