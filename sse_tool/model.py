"""Channel records: what ``normalize`` produces and ``render`` consumes.

Every provider's stream becomes the same small vocabulary (one JSON line each on the wire,
``to_record``/``from_record`` convert)::

    {"type": "delta", "channel": "answer", "text": "ganar "}
    {"type": "delta", "channel": "reasoning", "text": "Let me think"}
    {"type": "delta", "channel": "refusal", "text": "I can't help with that."}
    {"type": "part", "channel": "reasoning"}
    {"type": "tool_call", "index": 0, "id": "call_1", "name": "get_weather", "arguments": "{\\"ci"}
    {"type": "tool_call", "index": 1, "id": "srvtoolu_1", "name": "web_search", "arguments": "", "server": true}
    {"type": "tool_status", "index": 1, "id": "ws_1", "tool": "web_search_call", "status": "searching"}
    {"type": "tool_result", "index": 2, "id": "srvtoolu_1", "result": {...}}
    {"type": "signature", "signature": "EuYD...", "index": 0}
    {"type": "redacted", "data": "EmwK...", "index": 1}
    {"type": "citation", "url": "https://...", "title": "...", "text": "...", "index": 3, "source": {...}}
    {"type": "usage", "usage": {...}}
    {"type": "meta", "key": "model", "value": "claude-..."}
    {"type": "reset"}
    {"type": "end", "status": "complete", "stop_reason": "end_turn", "usage": {...},
     "tool_calls": [{"index": 0, "id": "call_1", "name": "get_weather", "complete_json": true}]}

``part`` starts a new part of a channel's text (the next paragraph of a reasoning summary):
a reader joining the texts puts a blank line there, as the providers' own apps do; the
deltas themselves stay exactly what the provider sent. ``signature`` and ``redacted`` are
opaque data a client must send back unchanged to continue a turn (thinking signatures,
redacted thinking); ``index`` is the content block, or the tool call, they belong to.
A ``server`` tool call is run by the provider (web search, code execution): a client must
not run it; ``tool_status`` is the progress of such a tool, ``tool_result`` its result.

``reset`` means "discard the draft: a new attempt starts" (a retry after part of a body
was seen). On the wire before ``normalize`` it travels as the SSE comment line
``: sse-tool reset`` (``sse.RESET_COMMENT``; other SSE parsers ignore it as a comment).
An ``end`` record is always last, exactly once.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple

#: stop reasons meaning the model stopped before it was done (a length limit, a content
#: filter, a refusal), compared in lower case across the dialects' spellings; ``--strict``
#: turns them into exit 9
EARLY_STOP_REASONS = frozenset({
    # OpenAI chat and compatible servers (Mistral: model_length); Ollama: length
    "length", "content_filter", "model_length",
    # OpenAI Responses: incomplete_details.reason, or the bare status
    "max_output_tokens", "incomplete",
    # Anthropic; pause_turn: a server tool loop paused, the turn must be resent to finish
    "max_tokens", "refusal", "model_context_window_exceeded", "pause_turn",
    # Gemini finishReason and promptFeedback.blockReason; Cohere: MAX_TOKENS
    "safety", "recitation", "language", "blocklist", "prohibited_content", "spii",
    "image_safety", "image_prohibited_content", "malformed_function_call",
})


def stopped_early(stop_reason: str | None) -> bool:
    """Whether a completed stream's stop reason means the answer was cut short."""
    return isinstance(stop_reason, str) and stop_reason.lower() in EARLY_STOP_REASONS


class Channel(str, Enum):
    #: text shown to the user as the answer
    ANSWER = "answer"
    #: model thinking, or a summary of it
    REASONING = "reasoning"
    #: the model's refusal, sent instead of an answer
    REFUSAL = "refusal"


class Status(str, Enum):
    #: the provider's terminal event arrived
    COMPLETE = "complete"
    #: input ended without the provider's terminal event
    TRUNCATED = "truncated"
    #: the provider sent an error (even if a terminal event followed)
    ERROR = "error"


# Records are named tuples, not dataclasses: they are built once per delta on the hot path
# and a pipe stage's start-up time counts (a frozen dataclass costs several times more to
# build and to define). Equality is made type-strict below, unlike a plain tuple's.


class Delta(NamedTuple):
    channel: Channel
    text: str


class ToolCall(NamedTuple):
    """A tool call starting (``id``/``name`` set) or a piece of its JSON arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    #: run by the provider itself (server tools: web search, code execution), not the client
    server: bool = False


class Part(NamedTuple):
    """A new part of the channel's text starts: shown after a blank line."""

    channel: Channel


class Signature(NamedTuple):
    """An opaque signature to send back unchanged (thinking, thought signatures)."""

    signature: str
    #: the content block (or, for Gemini, the tool call) it belongs to, when known
    index: int | None = None


class Redacted(NamedTuple):
    """Reasoning the provider sent encrypted: opaque data to send back unchanged."""

    data: str
    index: int | None = None


class Citation(NamedTuple):
    """A source the answer cites: ``url``/``title``/``text`` when the provider gives them,
    ``source`` its own object. ``index``: the answer block it belongs to, when known."""

    source: Any
    url: str | None = None
    title: str | None = None
    text: str | None = None
    index: int | None = None


class ToolStatus(NamedTuple):
    """Progress of a tool the provider runs (``web_search_call`` ``searching``, ...)."""

    index: int | None
    id: str | None
    tool: str
    status: str
    #: the tool's item, whole, when the provider sends it (at the end)
    item: Any = None


class ToolResult(NamedTuple):
    """The result of a tool the provider ran (a web search's results), whole."""

    index: int | None
    id: str | None
    result: Any


class Usage(NamedTuple):
    usage: dict


class Meta(NamedTuple):
    """Other metadata kept apart from the text: model, ids, citations, grounding, ..."""

    key: str
    value: Any


class Reset(NamedTuple):
    """Discard the draft: a new attempt starts."""


class End(NamedTuple):
    status: Status
    stop_reason: str | None = None
    usage: dict | None = None
    #: for ``error``: at least ``type`` and ``message``
    error: dict | None = None
    #: why the stream counts as truncated or failed, in words (for diagnostics)
    detail: str | None = None
    #: per tool call: index, id, name, and whether its joined arguments are whole JSON
    #: (``complete_json``), so a script never runs a call with truncated arguments
    tool_calls: list | None = None


def _same_type_eq(self, other) -> bool:
    return type(self) is type(other) and tuple.__eq__(self, other)


def _same_type_ne(self, other) -> bool:
    return not _same_type_eq(self, other)


# A Meta("answer", "x") must not equal a Delta(Channel.ANSWER, "x"), as plain tuples would.
for _cls in (Delta, ToolCall, Part, Signature, Redacted, Citation, ToolStatus, ToolResult,
             Usage, Meta, Reset, End):
    _cls.__eq__, _cls.__ne__, _cls.__hash__ = _same_type_eq, _same_type_ne, tuple.__hash__

Record = (Delta | ToolCall | Part | Signature | Redacted | Citation | ToolStatus | ToolResult
          | Usage | Meta | Reset | End)

#: record types -> the class each is read into (``from_record``): a line of JSON whose
#: ``type`` is one of these is a channel record
RECORD_TYPES = {
    "delta": Delta, "tool_call": ToolCall, "part": Part, "signature": Signature,
    "redacted": Redacted, "citation": Citation, "tool_status": ToolStatus,
    "tool_result": ToolResult, "usage": Usage, "meta": Meta, "reset": Reset, "end": End,
}


def to_record(item: Record) -> dict:
    if isinstance(item, Delta):
        return {"type": "delta", "channel": item.channel.value, "text": item.text}
    if isinstance(item, ToolCall):
        out: dict = {"type": "tool_call", "index": item.index}
        if item.id is not None:
            out["id"] = item.id
        if item.name is not None:
            out["name"] = item.name
        out["arguments"] = item.arguments
        if item.server:
            out["server"] = True
        return out
    if isinstance(item, Usage):
        return {"type": "usage", "usage": item.usage}
    if isinstance(item, Meta):
        return {"type": "meta", "key": item.key, "value": item.value}
    if isinstance(item, Reset):
        return {"type": "reset"}
    if not isinstance(item, End):
        return _extra_record(item)
    out = {"type": "end", "status": item.status.value, "stop_reason": item.stop_reason}
    for name in ("usage", "error", "detail", "tool_calls"):
        value = getattr(item, name)
        if value is not None:
            out[name] = value
    return out


def from_record(rec: dict) -> Record:
    """A channel record back into its dataclass (raises KeyError/ValueError if malformed)."""
    kind = rec["type"]
    if kind == "delta":
        return Delta(Channel(rec["channel"]), rec["text"])
    if kind == "tool_call":
        return ToolCall(rec["index"], rec.get("id"), rec.get("name"), rec.get("arguments", ""),
                        rec.get("server") is True)
    if kind == "usage":
        return Usage(rec["usage"])
    if kind == "meta":
        return Meta(rec["key"], rec.get("value"))
    if kind == "reset":
        return Reset()
    if kind == "end":
        return End(
            Status(rec["status"]), rec.get("stop_reason"), rec.get("usage"), rec.get("error"),
            rec.get("detail"), rec.get("tool_calls"),
        )
    if kind in _EXTRA_FIELDS:
        return _from_extra(kind, rec)
    raise ValueError(f"unknown record type {kind!r}")


# The record types beyond the text and its end: each field as a key, left out when None
# (``Part.channel`` is written as the channel's name).
_EXTRA_FIELDS = {
    "part": ("channel",),
    "signature": ("signature", "index"),
    "redacted": ("data", "index"),
    "citation": ("url", "title", "text", "index", "source"),
    "tool_status": ("index", "id", "tool", "status", "item"),
    "tool_result": ("index", "id", "result"),
}
_EXTRA_NAMES = {Part: "part", Signature: "signature", Redacted: "redacted", Citation: "citation",
                ToolStatus: "tool_status", ToolResult: "tool_result"}


def _extra_record(item) -> dict:
    out: dict = {"type": _EXTRA_NAMES[type(item)]}
    for name in _EXTRA_FIELDS[out["type"]]:
        value = getattr(item, name)
        if value is not None:
            out[name] = value.value if isinstance(value, Channel) else value
    return out


def _from_extra(kind: str, rec: dict) -> Record:
    cls = RECORD_TYPES[kind]
    if cls is Part:
        return Part(Channel(rec["channel"]))
    if cls is Signature:
        return Signature(rec["signature"], rec.get("index"))
    if cls is Redacted:
        return Redacted(rec["data"], rec.get("index"))
    if cls is Citation:
        return Citation(rec.get("source"), rec.get("url"), rec.get("title"), rec.get("text"), rec.get("index"))
    if cls is ToolStatus:
        return ToolStatus(rec.get("index"), rec.get("id"), rec["tool"], rec["status"], rec.get("item"))
    return ToolResult(rec.get("index"), rec.get("id"), rec.get("result"))


class Transcript:
    """Channel texts accumulated cheaply: pieces are kept and joined only when read.

    ``add`` is O(1); ``text(channel)`` joins what arrived since the last read onto the
    text so far and keeps the result as the single piece. A reader that looks a few times a
    second (a throttled painter) pays a few joins a second, not one per delta.
    """

    __slots__ = ("pieces",)

    def __init__(self) -> None:
        self.pieces: dict[Channel, list[str]] = {c: [] for c in Channel}

    def add(self, delta: Delta) -> None:
        self.pieces[delta.channel].append(delta.text)

    def part(self, part: Part) -> None:
        """A new part starts: a blank line after the text so far (none before any text)."""
        parts = self.pieces[part.channel]
        if parts and self.text(part.channel):
            parts.append("\n\n")

    def text(self, channel: Channel) -> str:
        parts = self.pieces[channel]
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0] if parts else ""

    def clear(self) -> None:
        for parts in self.pieces.values():
            parts.clear()
