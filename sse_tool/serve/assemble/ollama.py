"""Ollama ``/api/chat`` and ``/api/generate`` with ``"stream": false``: the last line (with
``done``, ``done_reason``, counts and durations) holding the whole text.

Chat: ``message.content``, ``message.thinking`` and ``message.tool_calls`` (arguments as
an object). Generate: ``response`` and ``thinking`` at the top level.
"""

from __future__ import annotations

from . import arguments_object
from ..summary import Summary


def assemble(summary: Summary) -> dict:
    last: dict = {}
    chat = False
    for _, payload in summary.payloads:
        if isinstance(payload, dict):
            chat = chat or isinstance(payload.get("message"), dict)
            last = payload
    out = dict(last)
    if chat:
        message = {"role": "assistant", "content": summary.answer}
        if summary.reasoning:
            message["thinking"] = summary.reasoning
        if summary.tools:
            message["tool_calls"] = [
                {"function": {"name": tool.name or "", "arguments": arguments_object(tool.arguments)}}
                for tool in summary.tools]
        out["message"] = message
    else:
        out["response"] = summary.answer
        if summary.reasoning:
            out["thinking"] = summary.reasoning
    out["done"] = True
    return out
