"""Rules of the Cohere v2 chat stream.

``message-start`` opens it; content blocks (``content-start``/``-delta``/``-end``) and
tool calls (``tool-call-start``/``-delta``/``-end``) are opened, filled and closed by
``index``; a tool call's argument pieces join into JSON by its end; ``message-end`` closes
the stream (``stream.after-terminal``). The SSE event name repeats the JSON ``type``.
"""

from __future__ import annotations

import orjson

from .rules import ERROR, Finding, key, rule

MESSAGE_START = rule(
    "cohere.message-start", ERROR, "message-start missing, late or repeated",
    """`message-start` opens the stream once, with the message id; everything else comes
    after it.""",
)
EVENT_NAME = rule(
    "cohere.event-name", ERROR, "an event: name that differs from the data's type",
    """Cohere names each event after its JSON `type`; clients that dispatch on the name (as
    EventSource listeners do) and clients that read the type must see the same event.""",
)
BLOCK_UNPAIRED = rule(
    "cohere.block-unpaired", ERROR, "a content or tool-call delta or end without its start",
    """Content blocks and tool calls are opened (`content-start`, `tool-call-start`), filled
    and closed by `index`; a delta or end for an index that is not open has nowhere to go,
    and a block still open at `message-end` was never finished.""",
)
TOOL_ARGUMENTS = rule(
    "cohere.tool-arguments", ERROR, "a tool call whose joined arguments are not a JSON object",
    """A tool call's `function.arguments` pieces (in `tool-call-start` and the deltas) join
    into one JSON object by `tool-call-end`; clients parse it before calling the tool.""",
)

_BLOCKS = {
    "content-start": ("content", "start"), "content-delta": ("content", "delta"), "content-end": ("content", "end"),
    "tool-call-start": ("tool call", "start"), "tool-call-delta": ("tool call", "delta"),
    "tool-call-end": ("tool call", "end"),
}


def _arguments(payload: dict):
    delta = payload.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    call = message.get("tool_calls") if isinstance(message, dict) else None
    function = call.get("function") if isinstance(call, dict) else None
    text = function.get("arguments") if isinstance(function, dict) else None
    return text if isinstance(text, str) else ""


class Rules:
    def __init__(self) -> None:
        self._started = False
        self._early = False
        self._open: dict[tuple, list[str]] = {}  # (kind, index) -> argument pieces

    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        if not isinstance(payload, dict):
            return
        at = event.offset
        kind = payload.get("type")
        if event.event != "message" and event.event != kind:
            out.append(EVENT_NAME.at(at, index, f"event: {event.event} for a {kind!r} payload"))
        kind = kind if isinstance(kind, str) else event.event
        if kind == "message-start":
            if self._started:
                out.append(MESSAGE_START.at(at, index, "a second message-start"))
            self._started = True
            return
        if not self._started and not self._early:
            self._early = True
            out.append(MESSAGE_START.at(at, index, f"{kind} before message-start"))
        if kind in _BLOCKS:
            self._block(kind, payload, at, index, out)
        elif kind == "message-end":
            for block, number in sorted(self._open, key=str):
                out.append(BLOCK_UNPAIRED.at(at, index, f"{block} {number} still open at message-end"))
            self._open.clear()

    def close(self, index: int) -> list[Finding]:
        return []

    def _block(self, kind: str, payload: dict, at: int, index: int, out: list[Finding]) -> None:
        block, step = _BLOCKS[kind]
        slot = (block, key(payload.get("index")))
        if step == "start":
            if slot in self._open:
                out.append(BLOCK_UNPAIRED.at(at, index, f"{block} {slot[1]!r} started again before its end"))
            self._open[slot] = [_arguments(payload)]
            return
        pieces = self._open.get(slot)
        if pieces is None:
            out.append(BLOCK_UNPAIRED.at(at, index, f"{kind} for {block} {slot[1]!r}, which is not open"))
            return
        if step == "delta":
            pieces.append(_arguments(payload))
            return
        del self._open[slot]
        text = "".join(pieces)
        if block == "tool call":
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                what = "are empty" if not text else f"are not JSON ({exc})"
                out.append(TOOL_ARGUMENTS.at(at, index, f"the arguments of tool call {slot[1]!r} {what}"))
            else:
                if not isinstance(value, dict):  # (a tool takes named arguments)
                    out.append(TOOL_ARGUMENTS.at(at, index, f"the arguments of tool call {slot[1]!r} are "
                                                 f"JSON but not an object ({text[:40]!r})"))
