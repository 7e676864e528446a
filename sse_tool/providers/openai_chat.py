"""OpenAI Chat Completions, and the many servers that copy its chunk format.

Answer: ``choices[0].delta.content`` (a string, or Mistral's array of typed parts).
Reasoning: ``reasoning_content`` (DeepSeek, vLLM, Z.ai), ``reasoning`` (OpenRouter, Groq) or
``reasoning_details`` (OpenRouter; it repeats ``reasoning``, so it is read only when that
string is absent; its signatures and encrypted reasoning are ``signature`` and ``redacted``
records). A refusal (``delta.refusal``) is its own channel. Tool calls: ``delta.tool_calls`` pieces joined by ``index`` (pieces
without an index continue the latest call). Terminal event: ``data: [DONE]``. Errors: a
top-level ``error`` in a data frame (alone, or inside a normal chunk), or ``event: error``.
"""

from __future__ import annotations

from ..model import Channel, Delta, Meta, Record, Redacted, Signature, ToolCall, Usage


def error_info(error) -> dict:
    """A provider error object (or string) as ``{"type", "message", ...}``."""
    if not isinstance(error, dict):
        return {"type": "error", "message": str(error)}
    kind = error.get("type") or error.get("status") or error.get("code") or "error"
    out = {"type": str(kind), "message": str(error.get("message") or "")}
    if error.get("code") is not None:
        out["code"] = error["code"]
    return out


def _reasoning_text(delta: dict) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        text = delta.get(key)
        if isinstance(text, str):
            return text
    details = delta.get("reasoning_details")
    if isinstance(details, list):
        pieces = [d.get("text") or d.get("summary") for d in details if isinstance(d, dict)]
        return "".join(p for p in pieces if isinstance(p, str))
    return None


def _content(content, out: list[Record]) -> None:
    if isinstance(content, str):
        if content:
            out.append(Delta(Channel.ANSWER, content))
        return
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and part.get("text"):
            out.append(Delta(Channel.ANSWER, part["text"]))
        elif part.get("type") == "thinking":  # Mistral Magistral
            thinking = part.get("thinking")
            items = thinking if isinstance(thinking, list) else [{"text": thinking}]
            for item in items:
                text = item.get("text") if isinstance(item, dict) else None
                if isinstance(text, str) and text:
                    out.append(Delta(Channel.REASONING, text))


def _opaque(detail: dict, out: list[Record]) -> None:
    """OpenRouter's ``reasoning_details``: a signature, or encrypted reasoning, to send back."""
    index = detail.get("index") if isinstance(detail.get("index"), int) else None
    if isinstance(detail.get("signature"), str) and detail["signature"]:
        out.append(Signature(detail["signature"], index))
    if detail.get("type") == "reasoning.encrypted" and isinstance(detail.get("data"), str) and detail["data"]:
        out.append(Redacted(detail["data"], index))


class OpenAIChat:
    name = "openai"

    @staticmethod
    def recognise(event: str, payload) -> bool:
        return isinstance(payload, dict) and (
            payload.get("object") == "chat.completion.chunk" or isinstance(payload.get("choices"), list)
        )

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        self._model: str | None = None
        self._last_tool = -1
        self._last_id: str | None = None

    def feed(self, event: str, payload) -> list[Record]:
        if isinstance(payload, str):
            if payload.strip() == "[DONE]":
                self.terminal = True
            return []
        if not isinstance(payload, dict):
            return []
        out: list[Record] = []
        if payload.get("error") or event == "error":
            self.error = error_info(payload.get("error") or payload)
        model = payload.get("model")
        if isinstance(model, str) and model != self._model:
            self._model = model
            out.append(Meta("model", model))
        choices = payload.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # choice 0 only
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, out)
            if choice.get("finish_reason") is not None:
                self.stop_reason = choice["finish_reason"]
                if self.stop_reason == "error" and self.error is None:  # Mistral's mid-stream failure
                    self.error = {"type": "error", "message": "the model stopped with finish_reason 'error'"}
        groq = payload.get("x_groq")
        usage = payload.get("usage") or (groq.get("usage") if isinstance(groq, dict) else None)
        if isinstance(usage, dict) and usage:
            self.usage = usage
            out.append(Usage(usage))
        return out

    def _delta(self, delta: dict, out: list[Record]) -> None:
        reasoning = _reasoning_text(delta)
        if reasoning:
            out.append(Delta(Channel.REASONING, reasoning))
        _content(delta.get("content"), out)
        if isinstance(delta.get("refusal"), str) and delta["refusal"]:
            out.append(Delta(Channel.REFUSAL, delta["refusal"]))
        details = delta.get("reasoning_details")
        for detail in details if isinstance(details, list) else ():
            if isinstance(detail, dict):
                _opaque(detail, out)
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if not isinstance(call, dict):
                continue
            index, call_id = call.get("index"), call.get("id")
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            name = function.get("name") or None
            if not isinstance(index, int):  # some servers omit it: a new id starts a call
                if call_id is not None and call_id == self._last_id:
                    call_id = name = None  # the same id repeated on a piece: a continuation
                new = call_id is not None or self._last_tool < 0
                index = self._last_tool + 1 if new else self._last_tool
            self._last_tool = index
            if call_id is not None:
                self._last_id = call_id
            out.append(ToolCall(index, call_id, name, function.get("arguments") or ""))
