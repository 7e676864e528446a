"""Anthropic Messages: a ``message`` object from ``message_start`` and the content blocks.

The message skeleton is ``message_start``'s; each content block starts as its
``content_block_start`` gives it and takes its deltas by index (text, thinking and its
signature, tool input JSON, citations), so block order, signatures, redacted thinking
and server tool results are kept as the API gives them. ``message_delta`` sets the stop
reason, the stop sequence and the usage.
"""

from __future__ import annotations

from . import arguments_object
from ..summary import Summary

_TOOL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


def assemble(summary: Summary) -> dict:
    message: dict = {"type": "message", "role": "assistant", "content": []}
    blocks: dict[int, dict] = {}
    # The pieces of each block's text fields, joined once at the end (a long answer
    # streams in many thousands of deltas).
    pieces: dict[tuple[int, str], list[str]] = {}
    for event, payload in summary.payloads:
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type") or event
        index = payload.get("index")
        if kind == "message_start" and isinstance(payload.get("message"), dict):
            message.update(payload["message"])
            message["content"] = list(message.get("content") or [])
        elif kind == "content_block_start" and isinstance(payload.get("content_block"), dict):
            blocks[index] = dict(payload["content_block"])
        elif kind == "content_block_delta" and index in blocks:
            _delta(blocks[index], payload.get("delta") or {}, pieces, index)
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    message[key] = delta[key]
            if isinstance(payload.get("usage"), dict):
                message["usage"] = {**(message.get("usage") or {}), **payload["usage"]}
    for (index, key), parts in pieces.items():
        joined = "".join(parts)
        blocks[index][key] = arguments_object(joined) if key == "input" else \
            blocks[index].get(key, "") + joined
    message["content"] = message["content"] + [blocks[i] for i in sorted(blocks)]
    message.setdefault("stop_reason", summary.stop_reason)
    message.setdefault("stop_sequence", None)
    return message


#: delta type -> (the block field it extends, the delta field that holds the piece)
_PIECES = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking"),
           "input_json_delta": ("input", "partial_json")}


def _delta(block: dict, delta: dict, pieces: dict, index: int) -> None:
    kind = delta.get("type")
    if kind in _PIECES:
        key, field = _PIECES[kind]
        if key == "input" and block.get("type") not in _TOOL_BLOCKS:
            return
        pieces.setdefault((index, key), []).append(str(delta.get(field, "")))
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature")
    elif kind == "citations_delta":
        block.setdefault("citations", []).append(delta.get("citation"))
