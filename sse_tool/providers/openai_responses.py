"""OpenAI Responses API events, and the servers that copy them (OpenRouter, DeepSeek, ...).

Every event's JSON repeats its ``type``; this adapter keys on that, never on the SSE event
name, because OpenRouter sends data-only frames (and appends ``data: [DONE]``, which is
not this dialect's end and is ignored).

Answer: ``response.output_text.delta``; a refusal (``response.refusal.delta``) is its own
channel. Reasoning: ``response.reasoning_summary_text.delta`` (summaries) and
``response.reasoning_text.delta`` (raw chain of thought); each summary part after the first
(``response.reasoning_summary_part.added``) starts with a ``part`` record, the blank line
between paragraphs that the providers' own apps show. Tool calls: a ``function_call`` (or
custom / MCP tool) item from ``response.output_item.added`` starts a call whose index is the
item's ``output_index``, and its argument deltas follow; a call whose arguments arrive only
whole, on ``.done``, is emitted then. Citations (``response.output_text.annotation.added``)
are ``citation`` records. Built-in tools that OpenAI runs (web search, file search, code
interpreter, image generation, MCP) report progress as ``response.<tool>.<status>`` events
(``response.web_search_call.searching``): each is a ``tool_status`` record, and the item
done is one more, with the whole item.

Terminal events: ``response.completed`` (stop reason = the response's status),
``response.incomplete`` (= ``incomplete_details.reason``, e.g. ``max_output_tokens``) and
``response.failed`` (= the error code; a failure is an error). ``error`` events carry the
details nested (``{"error": {...}}``, as recorded) or flat (as the API reference shows).

Nearly every event is a piece of answer text: ``quick`` reads those with plain tests and
leaves anything else to ``feed``, which gives the same record (the tests compare both);
``quick_lines`` is such an event's exact line (``batch.py``).
"""

from __future__ import annotations

from ..model import Channel, Citation, Delta, Meta, Part, Record, ToolCall, ToolStatus, Usage
from ..typed import field
from ..wire import INT, JSON_STRING, PLAIN
from .errors import error_info

_TEXT = {
    "response.output_text.delta": Channel.ANSWER,
    "response.refusal.delta": Channel.REFUSAL,
    "response.reasoning_summary_text.delta": Channel.REASONING,
    "response.reasoning_text.delta": Channel.REASONING,
}

#: item types whose input streams as argument deltas: item type -> its arguments field
_CALL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input", "mcp_call": "arguments"}
#: (server, freeform) of each: OpenAI runs a remote MCP server's tool itself, and a custom
#: tool takes free text
_KINDS = {"function_call": (False, False), "custom_tool_call": (False, True), "mcp_call": (True, False)}
_ARGUMENT_DELTAS = (
    "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta",
    "response.mcp_call_arguments.delta",
)
_ANSWER = Channel.ANSWER
_new = tuple.__new__  # builds a Delta without the keyword handling of its constructor
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
#: items of the tools OpenAI runs itself, whose progress streams as response.<item>.<status>
_BUILT_IN = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
    "mcp_call", "mcp_list_tools", "computer_call", "local_shell_call",
})
#: fields of a progress event that say where it belongs, not what happened
_PLACE = frozenset({"type", "sequence_number", "output_index", "item_id"})


#: members of an answer text delta that ``quick`` does not look at, as the servers write them
_MEMBER = (rb'(?:"(?:item_id|output_index|content_index|sequence_number|obfuscation)":(?:' + PLAIN + b"|" + INT
           + rb')|"logprobs":\[\])')


class OpenAIResponses:
    name = "openai-responses"
    #: the data line of an answer text delta, its type first (``batch.py``)
    quick_lines = (
        rb'\{"type":"response\.(output_text)\.delta"(?:,' + _MEMBER + rb')*,"delta":(' + JSON_STRING + rb')(?:,'
        + _MEMBER + rb')*\}',
        {b"output_text": Channel.ANSWER},
    )

    @staticmethod
    def recognise(event: str, payload) -> bool:
        kind = payload.get("type") if isinstance(payload, dict) else None
        return isinstance(kind, str) and kind.startswith("response.")

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        self._model: str | None = None
        self._calls: dict[str, int] = {}  # item id -> tool-call index
        self._streamed: set[int] = set()  # tool-call indexes that had argument deltas
        self._next_call = 0
        self._reasoned = False  # reasoning text arrived: a new summary part is a new paragraph

    @staticmethod
    def quick(event: str, payload: dict) -> Delta | None:
        """The record of an answer text delta with non-empty text; None for anything else."""
        if payload.get("type") == "response.output_text.delta":
            text = payload.get("delta")
            if type(text) is str and text:
                return _new(Delta, (_ANSWER, text))
        return None

    def feed(self, event: str, payload) -> list[Record]:
        if not isinstance(payload, dict):
            return []  # [DONE] (OpenRouter appends it; not this dialect's end)
        kind = field(payload, "type", str)
        channel = _TEXT.get(kind)
        if channel is not None:
            text = field(payload, "delta", str)
            if not text:
                return []
            if channel is Channel.REASONING:
                self._reasoned = True
            return [Delta(channel, text)]
        if kind in _ARGUMENT_DELTAS:
            return self._arguments(payload)
        out: list[Record] = []
        if kind == "response.reasoning_summary_part.added":
            if self._reasoned:
                out.append(Part(Channel.REASONING))
        elif kind == "response.output_item.added":
            self._item_added(payload, out)
        elif kind == "response.output_item.done":
            self._item_done(payload, out)
        elif kind == "response.output_text.annotation.added":
            annotation = payload.get("annotation")
            if isinstance(annotation, dict):
                out.append(_citation(annotation))
        elif kind == "error" or event == "error":
            self._error(payload)
        elif kind is not None and kind.startswith("response."):
            response = field(payload, "response", dict)
            if response is not None:
                self._response(kind, response, out)
            else:
                self._progress(kind, payload, out)
        return out

    # -- internals ----------------------------------------------------------------------

    def _response(self, kind: str, response: dict, out: list[Record]) -> None:
        """response.created / in_progress / the three terminal events: model, usage, end."""
        model = field(response, "model", str, where="response.model")
        if model is not None and model != self._model:
            self._model = model
            out.append(Meta("model", model))
        if kind not in _TERMINAL:
            return
        self.terminal = True
        usage = field(response, "usage", dict, where="response.usage")
        if usage:
            self.usage = usage
            out.append(Usage(usage))
        status = field(response, "status", str, where="response.status")
        if kind == "response.completed":
            self.stop_reason = status or "completed"
        elif kind == "response.incomplete":
            details = field(response, "incomplete_details", dict, where="response.incomplete_details")
            reason = field(details, "reason", str, where="incomplete_details.reason") if details else None
            self.stop_reason = reason or status or "incomplete"
        else:
            error = field(response, "error", dict, where="response.error")
            if error:
                info = error_info(error)
                self.stop_reason = str(error.get("code") or info["type"])
            elif self.stop_reason is None:
                info = {"type": "failed", "message": "the response failed"}
                self.stop_reason = "failed"
            else:
                info = None
            if self.error is None and info is not None:
                self.error = info

    def _error(self, payload: dict) -> None:
        nested = field(payload, "error", (dict, str))
        if isinstance(nested, dict):
            error = nested
        elif nested is not None:
            error = {"message": nested}
        else:  # the flat form: {"type": "error", "code": ..., "message": ..., "param": ...}
            error = {k: payload[k] for k in ("code", "message", "param") if payload.get(k) is not None}
        info = error_info(error)
        if self.error is None:
            self.error = info
        self.stop_reason = str(error.get("code") or info["type"])

    def _index(self, payload: dict, item_id) -> int:
        index = field(payload, "output_index", int)
        if index is None:
            index = self._calls.get(item_id) if isinstance(item_id, str) else None
        if index is None:  # no output_index: number the calls as they come
            index = self._next_call
        self._next_call = max(self._next_call, index + 1)
        if isinstance(item_id, str):
            self._calls[item_id] = index
        return index

    def _item_added(self, payload: dict, out: list[Record]) -> None:
        item = field(payload, "item", dict)
        kind = field(item, "type", str, where="item.type") if item else None
        if kind not in _CALL_ITEMS:
            return
        item_id = field(item, "id", str, where="item.id")
        index = self._index(payload, item_id)
        arguments = field(item, _CALL_ITEMS[kind], str, "", where=f"item.{_CALL_ITEMS[kind]}")
        if arguments:
            self._streamed.add(index)
        out.append(ToolCall(index, field(item, "call_id", str, where="item.call_id") or item_id,
                            field(item, "name", str, where="item.name"), arguments, *_KINDS[kind]))

    def _arguments(self, payload: dict) -> list[Record]:
        text = field(payload, "delta", str)
        if not text:
            return []
        index = self._index(payload, field(payload, "item_id", str))
        self._streamed.add(index)
        return [ToolCall(index, arguments=text)]

    def _item_done(self, payload: dict, out: list[Record]) -> None:
        item = field(payload, "item", dict)
        if item is None:
            return
        kind = field(item, "type", str, where="item.type")
        if kind in _CALL_ITEMS:
            # Arguments that never streamed as deltas arrive whole here.
            item_id = field(item, "id", str, where="item.id")
            known = item_id is not None and item_id in self._calls
            index = self._index(payload, item_id)
            arguments = field(item, _CALL_ITEMS[kind], str, where=f"item.{_CALL_ITEMS[kind]}")
            call_id = field(item, "call_id", str, where="item.call_id") or item_id
            name = field(item, "name", str, where="item.name")
            if index not in self._streamed and arguments:
                self._streamed.add(index)
                if known:
                    out.append(ToolCall(index, arguments=arguments))
                else:
                    out.append(ToolCall(index, call_id, name, arguments, *_KINDS[kind]))
            elif not known:
                out.append(ToolCall(index, call_id, name, "", *_KINDS[kind]))
        elif kind in _BUILT_IN:
            status = item.get("status") if isinstance(item.get("status"), str) else "completed"
            out.append(ToolStatus(_int(payload.get("output_index")), item.get("id"), kind, status, item))
        elif isinstance(kind, str) and kind.endswith("_call"):
            out.append(Meta(kind, item))  # a tool item this adapter does not know yet

    def _progress(self, kind: str, payload: dict, out: list[Record]) -> None:
        """``response.web_search_call.searching`` and the like: a built-in tool's progress."""
        tool, _, status = kind[len("response."):].rpartition(".")
        if tool not in _BUILT_IN or not status:
            return
        # what the event says beyond where it belongs (an image's partial data, ...)
        extra = {k: v for k, v in payload.items() if k not in _PLACE} or None
        out.append(ToolStatus(_int(payload.get("output_index")), payload.get("item_id"), tool, status, extra))


def _int(value) -> int | None:
    return value if isinstance(value, int) else None


def _citation(annotation: dict) -> Citation:
    """``url_citation`` (web search: ``url``, ``title``), ``file_citation`` (``filename``), ..."""
    url, title = annotation.get("url"), annotation.get("title") or annotation.get("filename")
    return Citation(annotation, url if isinstance(url, str) else None, title if isinstance(title, str) else None)
