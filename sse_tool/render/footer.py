"""The one line under a complete answer: what the end record and the timing tell.

``footer(draft, end, now)`` -> ``"claude-haiku-4-5 · 46 in · 133 out · 13 reasoning ·
credits_spent 0.0164 · first token 0.41 s · 52 tok/s"``, from what the stream carried:
the model (a ``meta`` record), the usage's token counts under each provider's names,
its cost and credit fields (gateways that meter by credits send them), and, when the
arrival times mean something (a live input, not a file read at once), the time to the
first token and the output tokens per second. Pure: no clock, no terminal.
"""

from __future__ import annotations

from ..model import End
from .draft import Draft

#: the usage keys of input, output and reasoning tokens, by provider
_INPUT = ("input_tokens", "prompt_tokens", "promptTokenCount", "prompt_eval_count", "inputTokens")
_OUTPUT = ("output_tokens", "completion_tokens", "candidatesTokenCount", "eval_count", "outputTokens")
_REASONING = ("reasoning_tokens", "thoughtsTokenCount")
_DETAILS = ("completion_tokens_details", "output_tokens_details")


def _first(usage: dict, keys) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return None


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def footer(draft: Draft, end: End, now: float) -> str | None:
    usage = end.usage if isinstance(end.usage, dict) else draft.usage if isinstance(draft.usage, dict) else {}
    parts: list[str] = []
    model = draft.meta.get("model")
    if isinstance(model, str) and model:
        parts.append(model)
    tokens_in, tokens_out = _first(usage, _INPUT), _first(usage, _OUTPUT)
    reasoning = _first(usage, _REASONING)
    for key in _DETAILS:
        if reasoning is None and isinstance(usage.get(key), dict):
            reasoning = _first(usage[key], _REASONING)
    if tokens_in is not None:
        parts.append(f"{tokens_in} in")
    if tokens_out is not None:
        parts.append(f"{tokens_out} out")
    if reasoning:
        parts.append(f"{reasoning} reasoning")
    for key, value in usage.items():
        if ("cost" in key or "credit" in key) and isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{key} {_number(value)}")
    first = draft.first_token_seconds()
    if first is not None:
        parts.append(f"first token {first:.2f} s")
        rate = draft.tokens_per_second(tokens_out, now)
        if rate is not None:
            parts.append(f"{rate:.0f} tok/s")
    return " \u00b7 ".join(parts) or None
