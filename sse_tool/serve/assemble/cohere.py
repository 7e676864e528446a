"""Cohere v2 chat with ``"stream": false``: ``id``, ``finish_reason``, ``message`` and
``usage``.

``message.content`` holds a ``thinking`` block (reasoning models) and a ``text`` block;
``message.tool_plan`` the plan before tool calls, ``message.tool_calls`` the calls
(arguments as JSON text, as Cohere sends them), ``message.citations`` the citations.
"""

from __future__ import annotations

from ..summary import Summary


def assemble(summary: Summary) -> dict:
    plan: list[str] = []
    thinking: list[str] = []
    citations: list = []
    for _, payload in summary.payloads:
        if not isinstance(payload, dict):
            continue
        message = ((payload.get("delta") or {}).get("message") or {}) \
            if isinstance(payload.get("delta"), dict) else {}
        kind = payload.get("type")
        content = message.get("content") if isinstance(message.get("content"), dict) else {}
        if kind == "tool-plan-delta" and isinstance(message.get("tool_plan"), str):
            plan.append(message["tool_plan"])
        elif kind in ("content-start", "content-delta") and isinstance(content.get("thinking"), str):
            thinking.append(content["thinking"])
        elif kind == "citation-start" and message.get("citations"):
            cited = message["citations"]
            citations += cited if isinstance(cited, list) else [cited]
    content = []
    if thinking:
        content.append({"type": "thinking", "thinking": "".join(thinking)})
    if summary.answer:
        content.append({"type": "text", "text": summary.answer})
    message: dict = {"role": "assistant", "content": content}
    if plan:
        message["tool_plan"] = "".join(plan)
    if summary.tools:
        message["tool_calls"] = [
            {"id": tool.id, "type": "function",
             "function": {"name": tool.name or "", "arguments": tool.arguments}}
            for tool in summary.tools]
    if citations:
        message["citations"] = citations
    return {"id": summary.meta.get("id", ""), "finish_reason": summary.stop_reason or "COMPLETE",
            "message": message, "usage": summary.usage}
