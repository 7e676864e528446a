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
    {"type": "note", "text": "fetch: HTTP 503; retry 1/2 in 0.5s (backoff)"}
    {"type": "end", "status": "complete", "stop_reason": "end_turn", "usage": {...},
     "tool_calls": [{"index": 0, "id": "call_1", "name": "get_weather", "complete_json": true}]}

``part`` starts a new part of a channel's text (the next paragraph of a reasoning summary):
a reader joining the texts puts a blank line there, as the providers' own apps do; the
deltas themselves stay exactly what the provider sent. ``signature`` and ``redacted`` are
opaque data a client must send back unchanged to continue a turn (thinking signatures,
redacted thinking); ``index`` is the content block, or the tool call, they belong to.
A ``server`` tool call is run by the provider (web search, code execution, a remote MCP
server): a client must not run it; ``tool_status`` is the progress of such a tool,
``tool_result`` its result. A ``freeform`` call (an OpenAI custom tool) takes free text,
not JSON arguments.

``reset`` means "discard the draft: a new attempt starts" (a retry after part of a body
was seen); ``note`` is something an earlier stage wanted a person to see. On the wire
before ``normalize`` both travel as in-band markers, SSE comment lines such as
``: sse-tool reset`` (``marker.py``; other SSE parsers ignore them as comments), and so
does an earlier stage's failure, which becomes the ``end`` record (its ``exit`` field).
An ``end`` record is always last, exactly once.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple

from .errors import BadInput
from .typed import REQUIRED, field

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
    # Gemini finishReason and promptFeedback.blockReason (every one but STOP: OTHER is a
    # blocked prompt, or a stop for a reason not otherwise said); Cohere: MAX_TOKENS
    "safety", "recitation", "language", "blocklist", "prohibited_content", "spii", "other",
    "image_safety", "image_prohibited_content", "image_recitation", "image_other", "no_image",
    "malformed_function_call", "unexpected_tool_call", "too_many_tool_calls",
    "missing_thought_signature", "jailbreak", "model_armor",
    # Bedrock stopReason (the rest are Anthropic's words): a guardrail or filter ended the
    # answer; malformed_*: the model's output or tool call could not be read, so the turn
    # ended without the answer it meant to give (as Gemini's malformed_function_call)
    "content_filtered", "guardrail_intervened", "malformed_model_output", "malformed_tool_use",
})


def error_words(error: dict | None) -> str:
    """A provider error's type and message in one line ("overloaded_error: Overloaded"); a
    type that says no more than "error" is left out ("error: error: ..." says nothing)."""
    error = error or {}
    kind, message = error.get("type"), error.get("message") or ""
    if kind and kind != "error":
        return f"{kind}: {message}".rstrip(": ")
    return str(message) or "error"


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
    #: the input was not what the stage reads (``offset``: where, in bytes)
    INVALID = "invalid"
    #: an earlier stage (or this one) failed otherwise: HTTP, network, timeout, usage, ...;
    #: ``exit`` holds its exit code
    FAILED = "failed"


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
    #: its input is free text (an OpenAI custom tool), not JSON arguments
    freeform: bool = False


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


class Note(NamedTuple):
    """Something an earlier stage wants a person to see: "STAGE: TEXT"."""

    text: str


class End(NamedTuple):
    status: Status
    stop_reason: str | None = None
    usage: dict | None = None
    #: for ``error``: at least ``type`` and ``message``
    error: dict | None = None
    #: why the stream counts as truncated or failed, in words (for diagnostics)
    detail: str | None = None
    #: the exit code this end stands for, when the status alone does not say it (an
    #: earlier stage's failure, an interruption, ``--strict``)
    exit: int | None = None
    #: for ``invalid``: the byte offset of the bad input, when known
    offset: int | None = None
    #: per tool call: index, id, name, and whether its joined arguments are whole JSON
    #: (``complete_json``), so a script never runs a call with truncated arguments (for a
    #: ``freeform`` call, whose input is text: whether the turn completed)
    tool_calls: list | None = None


def _same_type_eq(self, other) -> bool:
    return type(self) is type(other) and tuple.__eq__(self, other)


def _same_type_ne(self, other) -> bool:
    return not _same_type_eq(self, other)


# A Meta("answer", "x") must not equal a Delta(Channel.ANSWER, "x"), as plain tuples would.
for _cls in (Delta, ToolCall, Part, Signature, Redacted, Citation, ToolStatus, ToolResult,
             Usage, Meta, Reset, Note, End):
    _cls.__eq__, _cls.__ne__, _cls.__hash__ = _same_type_eq, _same_type_ne, tuple.__hash__

Record = (Delta | ToolCall | Part | Signature | Redacted | Citation | ToolStatus | ToolResult
          | Usage | Meta | Reset | Note | End)

#: record types -> the class each is read into (``from_record``): a line of JSON whose
#: ``type`` is one of these is a channel record
RECORD_TYPES = {
    "delta": Delta, "tool_call": ToolCall, "part": Part, "signature": Signature,
    "redacted": Redacted, "citation": Citation, "tool_status": ToolStatus,
    "tool_result": ToolResult, "usage": Usage, "meta": Meta, "reset": Reset, "note": Note,
    "end": End,
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
        if item.freeform:
            out["freeform"] = True
        return out
    if isinstance(item, Usage):
        return {"type": "usage", "usage": item.usage}
    if isinstance(item, Meta):
        return {"type": "meta", "key": item.key, "value": item.value}
    if isinstance(item, Reset):
        return {"type": "reset"}
    if isinstance(item, Note):
        return {"type": "note", "text": item.text}
    if not isinstance(item, End):
        return _extra_record(item)
    out = {"type": "end", "status": item.status.value, "stop_reason": item.stop_reason}
    for name in ("usage", "error", "detail", "exit", "offset", "tool_calls"):
        value = getattr(item, name)
        if value is not None:
            out[name] = value
    return out


def from_record(rec: dict) -> Record:
    """A channel record back into its tuple; raises ``BadInput`` or ValueError naming what
    is malformed.

    Every field is type-checked here, where it is read: a record that passes is safe for
    every later use (``render`` joins texts, compares stop reasons, reads error fields).
    """
    kind = field(rec, "type", str, REQUIRED)
    if kind == "delta":
        return Delta(Channel(field(rec, "channel", str, REQUIRED)), field(rec, "text", str, REQUIRED))
    if kind == "tool_call":
        index = field(rec, "index", int, REQUIRED)
        return ToolCall(index, field(rec, "id", str, None), field(rec, "name", str, None),
                        field(rec, "arguments", str, ""), field(rec, "server", bool, False),
                        field(rec, "freeform", bool, False))
    if kind == "usage":
        return Usage(field(rec, "usage", dict, REQUIRED))
    if kind == "meta":
        return Meta(field(rec, "key", str, REQUIRED), rec.get("value"))
    if kind == "reset":
        return Reset()
    if kind == "note":
        return Note(field(rec, "text", str, REQUIRED))
    if kind == "end":
        error = field(rec, "error", dict, None)
        if error is not None:
            field(error, "type", str, None, "error.type")
            field(error, "message", str, None, "error.message")
        code = field(rec, "exit", int, None)
        if code is not None and not 0 < code < 256:  # a failure's code, as in an exit marker
            raise ValueError(f"'exit' is not a failure's exit code: {code}")
        return End(
            Status(field(rec, "status", str, REQUIRED)), field(rec, "stop_reason", str, None),
            field(rec, "usage", dict, None), error, field(rec, "detail", str, None), code,
            field(rec, "offset", int, None), _tool_calls(rec),
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
    index = field(rec, "index", int, None)
    if cls is Part:
        return Part(Channel(field(rec, "channel", str, REQUIRED)))
    if cls is Signature:
        return Signature(field(rec, "signature", str, REQUIRED), index)
    if cls is Redacted:
        return Redacted(field(rec, "data", str, REQUIRED), index)
    if cls is Citation:
        return Citation(rec.get("source"), field(rec, "url", str, None), field(rec, "title", str, None),
                        field(rec, "text", str, None), index)
    if cls is ToolStatus:
        return ToolStatus(index, field(rec, "id", str, None), field(rec, "tool", str, REQUIRED),
                          field(rec, "status", str, REQUIRED), rec.get("item"))
    return ToolResult(index, field(rec, "id", str, None), rec.get("result"))


def _tool_calls(rec: dict) -> list | None:
    """The end record's per-call summary: a list of objects, each with an integer index."""
    calls = field(rec, "tool_calls", list, None)
    for call in calls or ():
        if not isinstance(call, dict):
            raise BadInput("'tool_calls[]' must be objects")
        field(call, "index", int, REQUIRED, "tool_calls[].index")
        field(call, "complete_json", bool, None, "tool_calls[].complete_json")
    return calls


class Transcript:
    """Channel texts accumulated cheaply: pieces are kept and joined only when read.

    ``add`` is O(1); ``text(channel)`` joins what arrived since the last read onto the
    text so far and keeps the result as the single piece. A reader that looks a few times a
    second (a throttled painter) pays a few joins a second, not one per delta. Memory stays
    the text itself: every ``_BLOCK`` pieces are joined into one (a piece is an object of
    about 50 bytes, more than the one character a delta often holds), and those blocks only
    when read, so the cost stays linear.
    """

    __slots__ = ("pieces", "_blocked")

    #: pieces joined into one block at a time
    _BLOCK = 256

    def __init__(self) -> None:
        #: per channel: the finished blocks, then the recent pieces (the last list)
        self.pieces: dict[Channel, list] = {c: [[]] for c in Channel}
        #: per channel: the characters of the finished blocks (measured when made)
        self._blocked = dict.fromkeys(Channel, 0)

    def add(self, delta: Delta) -> None:
        parts = self.pieces[delta.channel]
        recent = parts[-1]
        recent.append(delta.text)
        if len(recent) >= self._BLOCK:
            block = parts[-1] = "".join(recent)
            self._blocked[delta.channel] += len(block)
            parts.append([])

    def extend(self, channel: Channel, texts) -> None:
        """``add`` each of ``texts`` (one read's deltas of ``channel``)."""
        parts = self.pieces[channel]
        recent = parts[-1]
        recent += texts
        if len(recent) >= self._BLOCK:
            block = parts[-1] = "".join(recent)
            self._blocked[channel] += len(block)
            parts.append([])

    def size(self, channel: Channel) -> int:
        """``len(text(channel))`` without joining it: the blocks' sizes, and the few
        recent pieces measured."""
        return self._blocked[channel] + sum(map(len, self.pieces[channel][-1]))

    def part(self, part: Part) -> None:
        """A new part starts: a blank line after the text so far (none before any text)."""
        if self.text(part.channel):  # (which leaves the text as one piece, in a list)
            self.pieces[part.channel][-1].append("\n\n")

    def text(self, channel: Channel) -> str:
        parts = self.pieces[channel]
        if len(parts) == 1 and len(parts[0]) <= 1:
            return parts[0][0] if parts[0] else ""
        text = "".join(p if isinstance(p, str) else "".join(p) for p in parts)
        parts[:] = [[text]]  # (all of it recent again: no finished block)
        self._blocked[channel] = 0
        return text

    def text_from(self, channel: Channel, start: int) -> str:
        """``text(channel)[start:]``, joining only the blocks that hold it: a reader that
        takes each new piece of the text as it comes (``render`` into a pipe) pays for the
        new text, not for all of it at every look."""
        parts = self.pieces[channel]
        recent = parts[-1]
        if recent:  # the recent pieces become a block, so that every block is a string
            block = parts[-1] = recent[0] if len(recent) == 1 else "".join(recent)
            self._blocked[channel] += len(block)
            parts.append([])
            if len(parts) > self._BLOCK:  # blocks of blocks: memory stays the text itself
                parts[-self._BLOCK - 1:-1] = ["".join(parts[-self._BLOCK - 1:-1])]
        blocks, size, i = [], 0, len(parts) - 1
        # back from the end, until the blocks cover start (their sizes are not kept: the
        # text before start is not walked when nearly all of it is one block)
        total = self._blocked[channel]
        while i > 0 and total - size > start:
            i -= 1
            blocks.append(parts[i])
            size += len(parts[i])
        blocks.reverse()
        tail = "".join(blocks)
        return tail[start - (total - size):]

    def clear(self) -> None:
        for channel in self.pieces:
            self.pieces[channel] = [[]]
            self._blocked[channel] = 0
