"""Rules of the Anthropic Messages stream.

One ``message_start`` opens it; content blocks are numbered 0, 1, 2, ... and each is
started, given deltas of its own kind, and stopped, one after another; a tool block's
``input_json_delta`` pieces join into JSON by its stop; ``message_delta`` (the stop reason
and usage) comes before ``message_stop``, which is last. Every event is named (``event:``)
after its JSON ``type``: the SDKs dispatch on the name. Errors are
``{"type": "error", "error": {"type", "message"}}``.
"""

from __future__ import annotations

import orjson

from .quick import FIRST, SECOND, STRING
from .rules import ERROR, Finding, key, rule

MESSAGE_START = rule(
    "anthropic.message-start", ERROR, "message_start missing, late or repeated",
    """`message_start` comes first (pings and an error aside) and once: it carries the
    message id, model and usage. anthropic-sdk-python's MessageStream raises RuntimeError
    'Unexpected event order, got ... before "message_start"' on anything else first.""",
    ("anthropic-sdk-python MessageStream (RuntimeError)",),
)
EVENT_NAME = rule(
    "anthropic.event-name", ERROR, "an event: name that differs from the data's type",
    """Each event's SSE name equals its JSON `type`, and anthropic-sdk-python dispatches on
    the name (`if sse.event == "content_block_delta"`...): an event sent without its name, or
    under another, is silently skipped; people patch the SDK to read the type instead when a
    proxy drops the names.""",
    ("anthropic-sdk-python (events dropped)",),
)
BLOCK_INDEX = rule(
    "anthropic.block-index", ERROR, "a content block started out of order",
    """Blocks are numbered from 0 in the order they start. anthropic-sdk-python's
    accumulator appends each `content_block_start` to a list ("TODO: check index") and reads
    deltas from `content[event.index]`: a block started with another number sends its text
    to the wrong block or raises IndexError.""",
    ("anthropic-sdk-python MessageStream (IndexError, text in the wrong block)",),
)
BLOCK_UNPAIRED = rule(
    "anthropic.block-unpaired", ERROR, "a delta or stop without its block, or a block never stopped",
    """Each block is started, then gets deltas, then is stopped, before the message ends.
    A delta or stop for a block that is not open is lost (or an IndexError in
    anthropic-sdk-python); a block still open at `message_stop` never had its content
    finalised.""",
    ("anthropic-sdk-python MessageStream",),
)
DELTA_TYPE = rule(
    "anthropic.delta-type", ERROR, "a delta of the wrong kind for its block",
    """`text_delta` and `citations_delta` go to text blocks, `thinking_delta` and
    `signature_delta` to thinking blocks, `input_json_delta` to tool_use, server_tool_use and
    mcp_tool_use blocks. anthropic-sdk-python applies a delta only to a block of its kind and
    drops the rest without a word.""",
    ("anthropic-sdk-python (text dropped)",),
)
TOOL_INPUT = rule(
    "anthropic.tool-input-json", ERROR, "a tool block whose input_json_delta pieces are not a JSON object",
    """By `content_block_stop` the `partial_json` pieces of a tool block join into one JSON
    object (no pieces, or one empty piece, means the start block's `input`).
    anthropic-sdk-python parses the growing text after each piece and raises ValueError
    "Unable to parse tool parameter JSON from model" on text that can never become JSON.""",
    ("anthropic-sdk-python (ValueError)",),
)
MESSAGE_DELTA = rule(
    "anthropic.message-delta", ERROR, "message_stop without a message_delta before it",
    """`message_delta` carries the stop reason (`end_turn`, `tool_use`, `max_tokens`, ...) and
    the final usage, and comes before `message_stop`; without it clients cannot tell why the
    turn ended, nor whether to run tools.""",
)
ERROR_SHAPE = rule(
    "anthropic.error-shape", ERROR, "an error event not shaped {type: error, error: {type, message}}",
    """Mid-stream errors (`overloaded_error` after an HTTP 200, for one) are
    `{"type": "error", "error": {"type": ..., "message": ...}}`; clients decide whether to
    retry from `error.type`, and show `error.message`.""",
)

#: delta type -> the block types it belongs to
_DELTAS = {
    "text_delta": ("text",),
    "citations_delta": ("text",),
    "thinking_delta": ("thinking",),
    "signature_delta": ("thinking",),
    "input_json_delta": ("tool_use", "server_tool_use", "mcp_tool_use"),
}
_TOOL_BLOCKS = _DELTAS["input_json_delta"]

#: a text or thinking delta as Anthropic sends it (see quick.py): its block index and
#: the delta's kind (text or thinking) captured; it comes named content_block_delta
QUICK = (r'\{"type":"content_block_delta","index":(0|[1-9][0-9]{0,8}),"delta":\{"type":"'
         r'(text|thinking)_delta","\2":' + STRING + r'\}\}', "content_block_delta")


class Rules:
    def __init__(self) -> None:
        self._started = False
        self._early = False  # said that message_start is missing
        self._next = 0  # the next block index
        self._open: dict[int, tuple] = {}  # index -> (block type, json pieces)
        self._delta = False  # message_delta seen

    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        if not isinstance(payload, dict):
            return
        at = event.offset
        kind = payload.get("type")
        if kind == "content_block_delta" and event.event == kind and self._started:  # most events
            self._block_delta(payload, at, index, out)
            return
        if event.event != kind:
            named = "no event: line" if event.event == "message" else f"event: {event.event}"
            what = f"a {kind!r} payload" if kind is not None else "a payload without a type"
            out.append(EVENT_NAME.at(at, index, f"{named} for {what}"))
        kind = kind if isinstance(kind, str) else event.event
        if kind == "error":
            self._error(payload, at, index, out)
            return
        if kind == "ping":
            return
        if kind == "message_start":
            if self._started:
                out.append(MESSAGE_START.at(at, index, "a second message_start"))
            self._started = True
            return
        if not self._started and not self._early:
            self._early = True
            out.append(MESSAGE_START.at(at, index, f"{kind} before message_start"))
        if kind == "content_block_start":
            self._start(payload, at, index, out)
        elif kind == "content_block_delta":
            self._block_delta(payload, at, index, out)
        elif kind == "content_block_stop":
            self._stop(payload, at, index, out)
        elif kind == "message_delta":
            self._delta = True
        elif kind == "message_stop":
            if not self._delta:
                out.append(MESSAGE_DELTA.at(at, index, "message_stop without a message_delta (no stop reason)"))
            for number in sorted(self._open):
                out.append(BLOCK_UNPAIRED.at(at, index, f"block {number} still open at message_stop"))
            self._open.clear()

    def close(self, index: int) -> list[Finding]:
        return []

    def quick(self, adapter, found: list) -> bool:
        """Whether ``feed`` would say nothing of a run of ``QUICK`` events (``found``: the
        index and kind of each) and change nothing: the message started, each block
        open and of the delta's kind (the adapter keeps nothing of a text delta)."""
        if not self._started:
            return False
        for number, kind in set(zip(map(FIRST, found), map(SECOND, found))):
            block = self._open.get(int(number))
            if block is None or block[0] != kind and block[0] in _KNOWN_BLOCKS:
                return False
        return True

    # -- internals ----------------------------------------------------------------------

    def _start(self, payload: dict, at: int, index: int, out: list[Finding]) -> None:
        number = payload.get("index")
        block = payload.get("content_block")
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(number, int):
            out.append(BLOCK_INDEX.at(at, index, f"content_block_start with index {number!r}"))
            return
        if number in self._open or number < self._next:
            out.append(BLOCK_UNPAIRED.at(at, index, f"block {number} started again"))
        elif number != self._next:
            out.append(BLOCK_INDEX.at(at, index, f"block {number} started where block {self._next} was next"))
        self._next = max(self._next, number + 1)
        self._open[number] = (kind, [])

    def _block_delta(self, payload: dict, at: int, index: int, out: list[Finding]) -> None:
        number = key(payload.get("index"))
        block = self._open.get(number)
        if block is None:
            out.append(BLOCK_UNPAIRED.at(at, index, _not_open("content_block_delta", number)))
            return
        delta = payload.get("delta")
        kind = delta.get("type") if isinstance(delta, dict) else None
        owners = _DELTAS.get(kind)
        if owners is not None and block[0] not in owners and block[0] in _KNOWN_BLOCKS:
            out.append(DELTA_TYPE.at(at, index, f"a {kind} for block {number}, a {block[0]} block"))
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block[1].append(delta["partial_json"])

    def _stop(self, payload: dict, at: int, index: int, out: list[Finding]) -> None:
        number = key(payload.get("index"))
        block = self._open.pop(number, None)
        if block is None:
            out.append(BLOCK_UNPAIRED.at(at, index, _not_open("content_block_stop", number)))
            return
        text = "".join(block[1])
        if block[0] in _TOOL_BLOCKS and text:
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                out.append(TOOL_INPUT.at(at, index, f"the input of tool block {number} is not JSON ({exc})"))
                return
            if not isinstance(value, dict):  # (a tool's input is an object)
                out.append(TOOL_INPUT.at(at, index, f"the input of tool block {number} is JSON but not "
                                         f"an object ({text[:40]!r})"))

    def _error(self, payload: dict, at: int, index: int, out: list[Finding]) -> None:
        error = payload.get("error")
        if not (payload.get("type") == "error" and isinstance(error, dict)
                and isinstance(error.get("type"), str) and isinstance(error.get("message"), str)):
            out.append(ERROR_SHAPE.at(at, index, "an error event without error.type and error.message strings"))


_KNOWN_BLOCKS = frozenset(t for owners in _DELTAS.values() for t in owners) | {"redacted_thinking"}


def _not_open(event: str, number) -> str:
    if number is None:
        return f"{event} without an index: it names no block"
    return f"{event} for block {number!r}, which is not open"
