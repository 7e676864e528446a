"""Anthropic Messages streams: ``message_start`` ... ``message_stop``.

Content arrives in indexed blocks, in any order (a text block may precede a thinking
block; web search answers use many text blocks), and each ``content_block_delta`` belongs
to the block with the same ``index``. ``text_delta`` is the answer, ``thinking_delta`` the
reasoning. What a client replaying the turn must send back is kept whole, never as text:
``signature_delta`` (a ``signature`` record) and ``redacted_thinking`` blocks (``redacted``),
with their block index; ``citations_delta`` is a ``citation``. ``tool_use`` blocks become
tool calls (the block index is the call's index) whose JSON arguments stream as
``input_json_delta`` pieces; ``server_tool_use`` and ``mcp_tool_use`` calls are the same,
marked ``server`` (Anthropic runs them), and their results (``web_search_tool_result``,
...) come whole as ``tool_result`` records. ``message_delta`` carries the stop reason and cumulative
usage; only ``message_stop`` is terminal, so a stream that ends after a ``message_delta``
is still truncated. Events are keyed on the payload's ``type`` (the event name when the
payload has none), so frames without ``event:`` lines read the same.

Nearly every event is a ``text_delta`` or ``thinking_delta``: ``quick`` reads those with a
few plain tests and leaves anything else (another shape, a value of another type, empty
text) to ``feed``, which gives the same record (the tests compare both on every fixture).
"""

from __future__ import annotations

import orjson

from ..model import Channel, Citation, Delta, Meta, Record, Redacted, Signature, ToolCall, ToolResult, Usage
from ..typed import field
from ..wire import JSON_STRING
from .errors import error_info

#: payload types that only an Anthropic stream sends (``error`` and ``ping`` are not
#: distinctive: other dialects use the same words)
_ANTHROPIC_TYPES = frozenset({
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop",
})

#: block types whose arguments stream as ``input_json_delta``
_TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
#: tool calls that Anthropic runs itself, not the client
_SERVER_TOOLS = frozenset({"server_tool_use", "mcp_tool_use"})
_ANSWER, _REASONING = Channel.ANSWER, Channel.REASONING
_new = tuple.__new__  # builds a Delta without the keyword handling of its constructor


def _kind(event: str, payload) -> str:
    kind = field(payload, "type", str) if isinstance(payload, dict) else None
    return kind if kind is not None else event


class Anthropic:
    name = "anthropic"
    #: the data line of a text or thinking delta as Anthropic sends it, whole: what
    #: ``quick`` reads as a Delta of that text (non-empty), in the same channel
    #: (a regex, as bytes, compiled when first used)
    quick_lines = (
        rb'\{"type":"content_block_delta","index":(?:0|[1-9][0-9]{0,8}),"delta":\{"type":"'
        rb'(text|thinking)_delta","\1":(' + JSON_STRING + rb')\}\}',
        {b"text": Channel.ANSWER, b"thinking": Channel.REASONING},
    )

    @staticmethod
    def recognise(event: str, payload) -> bool:
        if not isinstance(payload, dict):
            return False
        kind = payload.get("type")
        return (kind if isinstance(kind, str) else event) in _ANTHROPIC_TYPES

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        #: open tool blocks: index -> (start input, whether argument text arrived)
        self._tools: dict[int, tuple[object, bool]] = {}

    @staticmethod
    def quick(event: str, payload: dict) -> Delta | None:
        """The record of a text or thinking delta with non-empty text, read with plain
        tests; None for anything else (``feed`` reads it)."""
        if payload.get("type") == "content_block_delta":
            delta = payload.get("delta")
            if type(delta) is dict:
                kind = delta.get("type")
                if kind == "text_delta":
                    text = delta.get("text")
                    if type(text) is str and text:
                        return _new(Delta, (_ANSWER, text))
                elif kind == "thinking_delta":
                    text = delta.get("thinking")
                    if type(text) is str and text:
                        return _new(Delta, (_REASONING, text))
        return None

    def feed(self, event: str, payload) -> list[Record]:
        if not isinstance(payload, dict):
            return []  # the normalizer lets only [DONE] and empty data through
        kind = _kind(event, payload)
        if kind == "content_block_delta":  # by far the most frequent: checked first
            return self._delta(payload)
        if kind == "content_block_start":
            return self._block_start(payload)
        if kind == "content_block_stop":
            return self._block_stop(payload)
        if kind == "message_start":
            return self._message_start(field(payload, "message", dict))
        if kind == "message_delta":
            return self._message_delta(payload)
        if kind == "message_stop":
            self.terminal = True
        elif kind == "error":
            self.error = error_info(field(payload, "error", (dict, str)) or payload)
        return []  # ping and unknown types

    # -- events -------------------------------------------------------------------------

    def _message_start(self, message) -> list[Record]:
        if message is None:
            return []
        out: list[Record] = []
        model, message_id = field(message, "model", str), field(message, "id", str)
        if model is not None:
            out.append(Meta("model", model))
        if message_id is not None:
            out.append(Meta("id", message_id))
        usage = field(message, "usage", dict)
        if usage is not None:
            self.usage = usage
            out.append(Usage(usage))
        return out

    def _block_start(self, payload: dict) -> list[Record]:
        index, block = field(payload, "index", int), field(payload, "content_block", dict)
        if index is None or block is None:
            return []
        kind = field(block, "type", str, where="content_block.type")
        # A start block normally holds empty text; whatever it holds is the block's first piece.
        if kind == "text":
            return _text(Channel.ANSWER, field(block, "text", str, where="content_block.text"))
        if kind == "thinking":
            return _text(Channel.REASONING, field(block, "thinking", str, where="content_block.thinking"))
        if kind == "redacted_thinking":
            data = block.get("data")
            return [Redacted(data, index)] if isinstance(data, str) else []
        if kind in _TOOL_BLOCKS:
            self._tools[index] = (block.get("input"), False)
            name = field(block, "name", str, where="content_block.name")
            return [ToolCall(index, field(block, "id", str, where="content_block.id"), name, "",
                             kind in _SERVER_TOOLS)]
        if kind is not None and kind.endswith("_result"):  # web_search_tool_result and friends: whole
            return [ToolResult(index, field(block, "tool_use_id", str, where="content_block.tool_use_id"), block)]
        return []

    def _delta(self, payload: dict) -> list[Record]:
        delta = field(payload, "delta", dict)
        if delta is None:
            return []
        kind = field(delta, "type", str, where="delta.type")
        if kind == "text_delta":
            return _text(Channel.ANSWER, field(delta, "text", str, where="delta.text"))
        if kind == "thinking_delta":
            return _text(Channel.REASONING, field(delta, "thinking", str, where="delta.thinking"))
        if kind == "input_json_delta":
            piece = field(delta, "partial_json", str, where="delta.partial_json")
            index = field(payload, "index", int)
            if not piece or index is None:
                return []  # a no-argument call sends one empty piece
            if index in self._tools:
                self._tools[index] = (self._tools[index][0], True)
            return [ToolCall(index, arguments=piece)]
        if kind == "signature_delta":
            signature = delta.get("signature")
            return [Signature(signature, field(payload, "index", int))] if isinstance(signature, str) else []
        if kind == "citations_delta":
            citation = delta.get("citation")
            return [_citation(citation, field(payload, "index", int))] if isinstance(citation, dict) else []
        return []

    def _block_stop(self, payload: dict) -> list[Record]:
        index = field(payload, "index", int)
        tool = self._tools.pop(index, None)
        if tool is None or tool[1]:
            return []
        # No argument text streamed: the arguments are the start block's input (``{}``),
        # so the joined pieces of every call are always one JSON object.
        start_input = tool[0] if isinstance(tool[0], dict) else {}
        return [ToolCall(index, arguments=orjson.dumps(start_input).decode())]

    def _message_delta(self, payload: dict) -> list[Record]:
        out: list[Record] = []
        delta = field(payload, "delta", dict)
        if delta is not None:
            stop_reason = field(delta, "stop_reason", str, where="delta.stop_reason")
            if stop_reason is not None:
                self.stop_reason = stop_reason
            stop_sequence = field(delta, "stop_sequence", str, where="delta.stop_sequence")
            if stop_sequence is not None:
                out.append(Meta("stop_sequence", stop_sequence))
        usage = field(payload, "usage", dict)
        if usage:
            # Cumulative counts; older responses send only output_tokens, so keep the rest.
            self.usage = {**(self.usage or {}), **usage}
            out.append(Usage(self.usage))
        return out


def _citation(citation: dict, index) -> Citation:
    """A citation of a text block: web search results give ``url``, ``title`` and the
    ``cited_text``; document citations give the text and the document's title."""
    def text(key):
        value = citation.get(key)
        return value if isinstance(value, str) else None

    return Citation(citation, text("url"), text("title") or text("document_title"), text("cited_text"),
                    index if isinstance(index, int) else None)


def _text(channel: Channel, text: str | None) -> list[Record]:
    return [Delta(channel, text)] if text else []
