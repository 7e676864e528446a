"""Rules of Ollama's native streams (``/api/chat``, ``/api/generate``: NDJSON).

Every line is an object with a boolean ``done``; the last has ``done: true``
(``stream.after-terminal`` and ``stream.no-terminal-event`` cover the end); an error is a
line ``{"error": "message"}``.
"""

from __future__ import annotations

from .rules import ERROR, Finding, rule

LINE_SHAPE = rule(
    "ollama.line-shape", ERROR, "a line without a boolean done, or an error that is not a string",
    """Each line of an Ollama stream is an object with `done`, false until the last line, the
    only sign that the stream finished; an error is `{"error": "message"}`, which
    ollama-python raises as ResponseError with that message. A line without `done` leaves
    clients unable to tell whether the stream ended.""",
)


class Rules:
    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        if not isinstance(payload, dict):
            return
        if "error" in payload:
            if not isinstance(payload["error"], str):
                out.append(LINE_SHAPE.at(event.offset, index, "an error line whose error is not a string"))
        elif not isinstance(payload.get("done"), bool):
            out.append(LINE_SHAPE.at(event.offset, index, f"a line with done {payload.get('done')!r}"))

    def close(self, index: int) -> list[Finding]:
        return []
