"""Vertex AI Search (Discovery Engine) ``servingConfigs.streamAnswer``.

The method streams ``AnswerQueryResponse`` objects: a JSON array by default (the JSON
array framer makes each element an event), SSE data frames with ``alt=sse``. Each holds
``answer`` (an ``Answer``), and may hold ``session`` and ``answerQueryToken``.

Answer text: ``answer.answerText``. Google documents the streamed answer as "broken into
multiple parts that are sent in sequence", typically a sentence each, so the pieces are
concatenated as they come (a piece may end mid-word). Should a server send the text so
far instead (each piece starting with all earlier text), only the new suffix is emitted,
so the answer is never doubled either way.

``steps`` (agent actions, search results), ``references``, ``citations``,
``groundingSupports``, ``relatedQuestions``, ``queryUnderstandingInfo`` and
``answerSkippedReasons`` may arrive in any element or not at all: each becomes a ``Meta``
record under its own name, never answer text.

``answer.state`` decides the end: ``IN_PROGRESS`` / ``STREAMING`` while generating,
``SUCCEEDED`` is the terminal event (stop reason: the first ``answerSkippedReasons`` entry
if any, else ``SUCCEEDED``), ``FAILED`` is an error whose type is the first skipped reason
(or ``FAILED``). An element ``{"error": {code, message, status}}`` is an error too.
"""

from __future__ import annotations

from ..model import Channel, Delta, Meta, Record
from .openai_chat import error_info

#: Answer fields that are metadata, with the Meta key each becomes
_META = {
    "steps": "steps",
    "references": "references",
    "citations": "citations",
    "groundingSupports": "grounding_supports",
    "relatedQuestions": "related_questions",
    "queryUnderstandingInfo": "query_understanding",
    "answerSkippedReasons": "answer_skipped_reasons",
    "safetyRatings": "safety_ratings",
}

#: below this much text a piece that repeats it proves nothing about cumulative pieces
_MIN_REPEAT = 8


class VertexSearch:
    name = "vertex-search"

    @staticmethod
    def recognise(event: str, payload) -> bool:
        if not isinstance(payload, dict):
            return False
        answer = payload.get("answer")
        return "answerQueryToken" in payload or (
            isinstance(answer, dict) and ("state" in answer or "answerText" in answer)
        )

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        self._pieces: list[str] = []  # the answer so far, joined only when compared
        self._length = 0
        self._ids: dict[str, str] = {}

    def feed(self, event: str, payload) -> list[Record]:
        if not isinstance(payload, dict):
            return []
        out: list[Record] = []
        if payload.get("error"):
            self.error = error_info(payload["error"])
        self._id("session", _session_name(payload.get("session")), out)
        self._id("answer_query_token", payload.get("answerQueryToken"), out)
        answer = payload.get("answer")
        if isinstance(answer, dict):
            self._answer(answer, out)
        return out

    def _answer(self, answer: dict, out: list[Record]) -> None:
        self._id("id", answer.get("name"), out)
        text = answer.get("answerText")
        if isinstance(text, str) and text:
            text = self._new_text(text)
            if text:
                out.append(Delta(Channel.ANSWER, text))
        for field, key in _META.items():
            value = answer.get(field)
            if value:
                out.append(Meta(key, value))
        skipped = answer.get("answerSkippedReasons")
        reason = skipped[0] if isinstance(skipped, list) and skipped else None
        state = answer.get("state")
        if state == "SUCCEEDED":
            self.terminal = True
            self.stop_reason = str(reason or state)
        elif state == "FAILED":
            self.stop_reason = "FAILED"
            kind = str(reason or "FAILED")
            message = "answer generation failed"
            if skipped:
                message += ": " + ", ".join(map(str, skipped))
            self.error = {"type": kind, "message": message}

    def _new_text(self, text: str) -> str:
        """The part of ``text`` not yet seen (all of it, for incremental pieces)."""
        if self._length >= _MIN_REPEAT and len(text) >= self._length:
            # Only a piece at least as long as the answer so far can repeat it, and then
            # the join costs no more than reading that piece did: linear in the input.
            so_far = "".join(self._pieces)
            self._pieces[:] = [so_far]
            if text.startswith(so_far):
                text = text[len(so_far):]
        self._pieces.append(text)
        self._length += len(text)
        return text

    def _id(self, key: str, value, out: list[Record]) -> None:
        if isinstance(value, str) and value and self._ids.get(key) != value:
            self._ids[key] = value
            out.append(Meta(key, value))


def _session_name(session):
    return session.get("name") if isinstance(session, dict) else None
