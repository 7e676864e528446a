"""Gemini ``generateContent``: one ``GenerateContentResponse`` from the streamed ones.

Candidate 0's parts are joined in order: neighbouring text parts of the same kind
(thought or answer) become one, a ``thoughtSignature`` stays on the part it came with,
and every other part (a function call, code and its result) is kept whole. The
candidate's other fields (``finishReason``, grounding, citations, safety ratings) and the
top-level ``usageMetadata`` (cumulative), ``modelVersion``, ``responseId`` and
``promptFeedback`` take their last value. A function call whose arguments streamed in
pieces (Vertex's ``partialArgs``, ``willContinue``) is one call with its whole ``args``.
"""

from __future__ import annotations

from . import arguments_object
from ..summary import Summary


def assemble(summary: Summary) -> dict:
    out: dict = {}
    candidate: dict = {}
    parts: list[dict] = []
    for _, payload in summary.payloads:
        if not isinstance(payload, dict):
            continue
        for key in ("usageMetadata", "modelVersion", "responseId", "promptFeedback", "createTime"):
            if payload.get(key):
                out[key] = payload[key]
        for cand in payload.get("candidates") or ():
            if not isinstance(cand, dict) or cand.get("index", 0) != 0:
                continue
            for key, value in cand.items():
                if key != "content" and value not in (None, {}, []):
                    candidate[key] = value
            content = cand.get("content") if isinstance(cand.get("content"), dict) else {}
            for part in content.get("parts") or ():
                if isinstance(part, dict):
                    _add(parts, part)
    calls = iter(summary.tools)
    for part in parts:
        if isinstance(part.get("text"), list):  # pieces, joined once
            part["text"] = "".join(part["text"])
        if isinstance(part.get("functionCall"), dict):
            tool = next(calls, None)
            call = {k: v for k, v in part["functionCall"].items()
                    if k not in ("partialArgs", "willContinue")}
            if tool is not None:
                call["args"] = arguments_object(tool.arguments)
            part["functionCall"] = call
    candidate["content"] = {"parts": parts, "role": "model"}
    candidate.setdefault("index", 0)
    return {"candidates": [candidate], **out}


def _add(parts: list[dict], part: dict) -> None:
    last = parts[-1] if parts else None
    call = part.get("functionCall")
    if isinstance(call, dict) and last is not None and "name" not in call and \
            isinstance(last.get("functionCall"), dict) and last["functionCall"].get("willContinue"):
        # A piece of the call before it: the whole arguments are set once all have come.
        last["functionCall"]["willContinue"] = call.get("willContinue", False)
        return
    if (last is not None and set(part) <= {"text", "thought", "thoughtSignature"}
            and set(last) <= {"text", "thought", "thoughtSignature"} and isinstance(part.get("text"), str)
            and isinstance(last.get("text"), list) and bool(part.get("thought")) == bool(last.get("thought"))
            and "thoughtSignature" not in last):
        last["text"].append(part["text"])
        if "thoughtSignature" in part:
            last["thoughtSignature"] = part["thoughtSignature"]
        return
    parts.append(dict(part, text=[part["text"]]) if isinstance(part.get("text"), str) else dict(part))
