"""Ollama's native API: ``/api/chat`` and ``/api/generate`` (NDJSON, one object a line).

Chat lines carry ``message.content`` (answer) and ``message.thinking`` (reasoning, for
thinking models asked with ``think``); tool calls arrive whole in ``message.tool_calls``
(``function.name`` and ``function.arguments`` as an object, which becomes the call's JSON
arguments). Generate lines carry ``response`` and ``thinking`` at the top level.

The last line has ``done: true``: it is the terminal event, with ``done_reason`` (``stop``,
``length``, ``load``, ...) as the stop reason and the counts and durations
(``prompt_eval_count``, ``eval_count``, ``total_duration``, ... in nanoseconds) as usage.
A line ``{"error": "..."}`` is a provider error (Ollama sends it mid-stream too).
Ollama's OpenAI-compatible ``/v1/chat/completions`` is read by the ``openai`` adapter.
"""

from __future__ import annotations

import orjson

from ..model import Channel, Delta, Meta, Record, ToolCall, Usage
from ..typed import field
from .errors import error_info

_USAGE_KEYS = (
    "prompt_eval_count", "eval_count", "total_duration", "load_duration",
    "prompt_eval_duration", "eval_duration",
)


class Ollama:
    name = "ollama"

    @staticmethod
    def recognise(event: str, payload) -> bool:
        return (
            isinstance(payload, dict)
            and isinstance(payload.get("done"), bool)
            and (isinstance(payload.get("message"), dict) or isinstance(payload.get("response"), str))
        )

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        self._model: str | None = None
        self._calls = 0  # tool calls seen: the next call's index

    def feed(self, event: str, payload) -> list[Record]:
        if not isinstance(payload, dict):
            return []
        out: list[Record] = []
        if payload.get("error"):
            self.error = error_info(payload["error"])
        model = payload.get("model")
        if isinstance(model, str) and model != self._model:
            self._model = model
            out.append(Meta("model", model))
        message = field(payload, "message", dict)
        if message is not None:
            _text(field(message, "thinking", str, where="message.thinking"), Channel.REASONING, out)
            _text(field(message, "content", str, where="message.content"), Channel.ANSWER, out)
            for call in field(message, "tool_calls", list, where="message.tool_calls") or ():
                if isinstance(call, dict):
                    self._tool_call(call, out)
        else:
            _text(field(payload, "thinking", str), Channel.REASONING, out)
            _text(field(payload, "response", str), Channel.ANSWER, out)
        if payload.get("done") is True:
            self.terminal = True
            reason = field(payload, "done_reason", str)
            if reason is not None:
                self.stop_reason = reason
            usage = {key: payload[key] for key in _USAGE_KEYS if key in payload}
            if usage:
                self.usage = usage
                out.append(Usage(usage))
        return out

    def _tool_call(self, call: dict, out: list[Record]) -> None:
        function = field(call, "function", dict, {}, where="tool_calls.function")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = orjson.dumps(arguments if arguments is not None else {}).decode()
        out.append(ToolCall(self._calls, field(call, "id", str, where="tool_calls.id"),
                            field(function, "name", str, where="function.name") or None, arguments))
        self._calls += 1


def _text(text: str | None, channel: Channel, out: list[Record]) -> None:
    if text:
        out.append(Delta(channel, text))
