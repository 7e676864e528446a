"""Cohere v2 chat streaming (``POST /v2/chat`` with ``stream: true``).

Named SSE events whose JSON repeats the name in ``type`` (this adapter keys on ``type``,
the event name only when it is missing). Everything sits under ``delta.message``:

* ``content-delta``: ``content.text`` is answer, ``content.thinking`` reasoning (reasoning
  models open a ``thinking`` content block before the ``text`` one);
* ``tool-plan-delta``: ``tool_plan``, the model's plan before it calls tools ("I will look
  up the weather..."). It is reasoning, not answer: it explains the next step rather than
  answering, and the turn it belongs to usually has no answer text at all;
* ``tool-call-start`` (``tool_calls.id`` and ``function.name``) then ``tool-call-delta``
  pieces of ``function.arguments``, by the event's ``index``;
* ``citation-start``: one citation (a ``citation`` record);
* ``message-end``: the terminal event, with ``delta.finish_reason`` (``COMPLETE``,
  ``MAX_TOKENS``, ``STOP_SEQUENCE``, ``TOOL_CALL``, ``ERROR``, ``TIMEOUT``) and
  ``delta.usage``. ``ERROR`` and ``TIMEOUT`` are errors: the generation failed on the
  server's side, no limit the caller chose stopped it.
"""

from __future__ import annotations

from ..model import Channel, Citation, Delta, Meta, Record, ToolCall, Usage
from ..typed import field
from .errors import error_info

_EVENTS = frozenset((
    "message-start", "content-start", "content-delta", "content-end", "tool-plan-delta",
    "tool-call-start", "tool-call-delta", "tool-call-end", "citation-start", "citation-end",
    "message-end",
))
_FAILED = ("ERROR", "TIMEOUT")


class Cohere:
    name = "cohere"

    @staticmethod
    def recognise(event: str, payload) -> bool:
        if not isinstance(payload, dict):
            return False
        kind = payload.get("type", event)
        return isinstance(kind, str) and kind in _EVENTS

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        self._calls = 0  # tool calls started: the index of one that names none

    def feed(self, event: str, payload) -> list[Record]:
        if not isinstance(payload, dict):
            return []
        kind = field(payload, "type", str) or event
        delta = field(payload, "delta", dict) or {}
        message = field(delta, "message", dict, where="delta.message") or {}
        out: list[Record] = []
        if payload.get("error") or kind == "error":
            self.error = error_info(payload.get("error") or payload)
        if kind == "message-start":
            if isinstance(payload.get("id"), str):
                out.append(Meta("id", payload["id"]))
        elif kind in ("content-start", "content-delta"):
            content = field(message, "content", dict, where="delta.message.content")
            if content is not None:
                _text(field(content, "thinking", str, where="content.thinking"), Channel.REASONING, out)
                _text(field(content, "text", str, where="content.text"), Channel.ANSWER, out)
        elif kind == "tool-plan-delta":
            _text(field(message, "tool_plan", str, where="delta.message.tool_plan"), Channel.REASONING, out)
        elif kind in ("tool-call-start", "tool-call-delta"):
            self._tool_call(kind, field(payload, "index", int),
                            field(message, "tool_calls", dict, where="delta.message.tool_calls"), out)
        elif kind == "citation-start":
            cited = message.get("citations")
            for citation in cited if isinstance(cited, list) else [cited]:
                if isinstance(citation, dict) and citation:
                    text = citation.get("text")
                    out.append(Citation(citation, text=text if isinstance(text, str) else None))
        elif kind == "message-end":
            self._end(delta, out)
        return out

    def _tool_call(self, kind: str, index, call, out: list[Record]) -> None:
        if call is None:
            return
        function = field(call, "function", dict, where="tool_calls.function") or {}
        arguments = field(function, "arguments", str, "", where="function.arguments")
        if kind == "tool-call-start":
            if index is None:
                index = self._calls
            self._calls = max(self._calls, index + 1)
            out.append(ToolCall(index, field(call, "id", str, where="tool_calls.id"),
                                field(function, "name", str, where="function.name") or None, arguments))
        elif arguments:
            out.append(ToolCall(index if index is not None else max(self._calls - 1, 0),
                                None, None, arguments))

    def _end(self, delta: dict, out: list[Record]) -> None:
        self.terminal = True
        reason = field(delta, "finish_reason", str, where="delta.finish_reason")
        if reason is not None:
            self.stop_reason = reason
            if reason in _FAILED:
                detail = delta.get("error")
                self.error = {"type": reason.lower(),
                              "message": str(detail or f"the generation ended with {reason}")}
        usage = field(delta, "usage", dict, where="delta.usage")
        if usage:
            self.usage = usage
            out.append(Usage(usage))


def _text(text: str | None, channel: Channel, out: list[Record]) -> None:
    if text:
        out.append(Delta(channel, text))
