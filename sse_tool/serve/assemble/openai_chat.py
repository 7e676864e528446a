"""OpenAI Chat Completions: a ``chat.completion`` object from its chunks.

``choices[0].message`` holds the content, the tool calls (arguments as the JSON text the
chunks streamed) and the reasoning under the key the stream used (``reasoning_content``
for DeepSeek and vLLM, ``reasoning`` for OpenRouter and Groq); ``finish_reason``,
``usage``, ``id``, ``created``, ``model`` and ``system_fingerprint`` come from the chunks.
"""

from __future__ import annotations

from ..summary import Summary

_REASONING_KEYS = ("reasoning_content", "reasoning")


def assemble(summary: Summary) -> dict:
    first: dict = {}
    reasoning_key = "reasoning_content"
    for _, payload in summary.payloads:
        if not isinstance(payload, dict):
            continue
        for key in ("id", "created", "model", "system_fingerprint", "service_tier"):
            if payload.get(key) is not None:
                first.setdefault(key, payload[key])
        for choice in payload.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict):
                reasoning_key = next((k for k in _REASONING_KEYS if isinstance(delta.get(k), str)
                                      and delta[k]), reasoning_key)
    message: dict = {"role": "assistant", "content": summary.answer or None, "refusal": summary.refusal or None}
    if summary.reasoning:
        message[reasoning_key] = summary.reasoning
    if summary.tools:
        message["tool_calls"] = [
            {"id": tool.id or f"call_{tool.index}", "type": "function",
             "function": {"name": tool.name or "", "arguments": tool.arguments}}
            for tool in summary.tools]
    out = {"id": first.get("id", "chatcmpl-sse-tool"), "object": "chat.completion",
           "created": first.get("created", 0), "model": first.get("model", summary.model or ""),
           "choices": [{"index": 0, "message": message, "logprobs": None,
                        "finish_reason": summary.stop_reason or "stop"}],
           "usage": summary.usage}
    for key in ("system_fingerprint", "service_tier"):
        if key in first:
            out[key] = first[key]
    return out
