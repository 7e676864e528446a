"""Rules of Vertex AI Search ``servingConfigs.streamAnswer``.

Each element's ``answer.state`` is ``STREAMING`` (or ``IN_PROGRESS``) while the answer is
generated, then one final state, ``SUCCEEDED`` or ``FAILED``, on the last element.
"""

from __future__ import annotations

from .rules import ERROR, Finding, rule

FINAL_STATE = rule(
    "vertex-search.final-state", ERROR, "an element after the answer's final state",
    """The answer streams in `STREAMING` (or `IN_PROGRESS`) elements and ends with one
    element in a final state, `SUCCEEDED` or `FAILED`; clients (and normalize) take the final
    state as the end, so an element after it, or a second final state, is read by some
    clients and not others.""",
)

_FINAL = ("SUCCEEDED", "FAILED")


class Rules:
    def __init__(self) -> None:
        self._final: str | None = None

    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        if not isinstance(payload, dict):
            return
        if self._final is not None:
            out.append(FINAL_STATE.at(event.offset, index, f"an element after the final state {self._final}"))
            return
        answer = payload.get("answer")
        state = answer.get("state") if isinstance(answer, dict) else None
        if state in _FINAL:
            self._final = state

    def close(self, index: int) -> list[Finding]:
        return []
