"""OpenAI Responses: the ``response`` object, which the terminal event carries whole.

``response.completed`` (or ``.incomplete``, ``.failed``) holds the response a request
without ``stream`` gets, output items and usage included. A server that sends a thinner
terminal event (no ``output``) gets its output rebuilt from the ``output_item.done``
items, in output order.
"""

from __future__ import annotations

from ..summary import Summary

_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def assemble(summary: Summary) -> dict:
    response: dict = {}
    items: dict[int, dict] = {}
    for _, payload in summary.payloads:
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "response.output_item.done" and isinstance(payload.get("item"), dict):
            index = payload.get("output_index")
            items[index if isinstance(index, int) else len(items)] = payload["item"]
        elif isinstance(kind, str) and kind.startswith("response.") and \
                isinstance(payload.get("response"), dict):
            if kind in _TERMINAL or not response:
                response = payload["response"]
    out = dict(response)
    out.setdefault("object", "response")
    out.setdefault("status", summary.stop_reason or "completed")
    if not out.get("output") and items:
        out["output"] = [items[i] for i in sorted(items)]
    if out.get("usage") is None and summary.usage is not None:
        out["usage"] = summary.usage
    return out
