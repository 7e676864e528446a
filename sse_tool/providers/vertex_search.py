"""Vertex AI Search (Discovery Engine) ``servingConfigs.streamAnswer``.

The method streams ``AnswerQueryResponse`` objects: a JSON array by default (the JSON
array framer makes each element an event), SSE data frames with ``alt=sse``. Each holds
``answer`` (an ``Answer``), and may hold ``session`` and ``answerQueryToken``.

Answer text: ``answer.answerText``. Google documents the streamed answer as "broken into
multiple parts that are sent in sequence", typically a sentence each, so the pieces are
concatenated (a piece may end mid-word). Should a server send the text so far instead
(snapshots), only the new part of each may be emitted. Which of the two a stream is, is
decided from the stream as a whole, never from one piece: an answer may well repeat
itself ("Repite: " then "Repite: eco."). A stream is snapshots only if every piece is
longer than the one before and starts with it, and at least ``SNAPSHOT_EVIDENCE`` pieces
have shown it; one piece that does not extend the one before proves concatenation. Until
the stream has decided, only the text both readings agree on is emitted (the first
piece); the rest is held, and emitted at once when a piece decides, or when the stream
ends (``flush``: too little evidence is concatenation, as documented). The element that
ends a concatenated stream may repeat the whole answer: only what it adds is emitted.

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
from ..typed import field
from .errors import error_info

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

#: pieces after the first that must each extend the one before for a stream to count as
#: snapshots (one alone may be an answer that repeats itself: it is concatenated)
SNAPSHOT_EVIDENCE = 2


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
        self._mode: str | None = None  # "delta" or "snapshot", once the stream decided
        self._pieces: list[str] = []  # the text pieces while undecided (the first emitted)
        self._last = ""  # the latest piece: what a snapshot must extend
        self._answer_text: list[str] = []  # the concatenated answer so far, once decided so
        self._ids: dict[str, str] = {}

    def feed(self, event: str, payload) -> list[Record]:
        if not isinstance(payload, dict):
            return []
        out: list[Record] = []
        if payload.get("error"):
            self.error = error_info(payload["error"])
        self._id("session", _session_name(payload.get("session")), out)
        self._id("answer_query_token", payload.get("answerQueryToken"), out)
        answer = field(payload, "answer", dict)
        if answer is not None:
            self._answer(answer, out)
        return out

    def flush(self) -> list[Record]:
        """The stream ended: text still held is decided as concatenated pieces."""
        out: list[Record] = []
        if self._mode is None:
            self._decide("delta", out)
        return out

    def _answer(self, answer: dict, out: list[Record]) -> None:
        self._id("id", answer.get("name"), out)
        text = field(answer, "answerText", str, where="answer.answerText")
        state = field(answer, "state", str, where="answer.state")
        if text and state == "SUCCEEDED" and self._mode == "delta":
            so_far = "".join(self._answer_text)
            self._answer_text[:] = [so_far]
            if so_far and text.startswith(so_far):  # the whole answer again, at the end
                text = text[len(so_far):]
        if text:
            self._text(text, out)
        for name, key in _META.items():
            value = answer.get(name)
            if value:
                out.append(Meta(key, value))
        skipped = field(answer, "answerSkippedReasons", list, where="answer.answerSkippedReasons")
        reason = skipped[0] if skipped else None
        if state in ("SUCCEEDED", "FAILED"):
            out += self.flush()  # the last piece has come
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

    def _text(self, text: str, out: list[Record]) -> None:
        mode, last = self._mode, self._last
        self._last = text
        if mode == "delta":
            self._answer_text.append(text)
            out.append(Delta(Channel.ANSWER, text))
            return
        extends = len(text) > len(last) and text.startswith(last)
        if mode == "snapshot":
            # A piece that does not extend the text so far cannot be placed: start over
            # from it would double text, so only what extends is emitted.
            if extends:
                out.append(Delta(Channel.ANSWER, text[len(last):]))
            return
        if not self._pieces:  # the first piece: both readings begin with it
            self._pieces.append(text)
            out.append(Delta(Channel.ANSWER, text))
            return
        self._pieces.append(text)
        if not extends:
            self._decide("delta", out)
        elif len(self._pieces) > SNAPSHOT_EVIDENCE:
            self._decide("snapshot", out)

    def _decide(self, mode: str, out: list[Record]) -> None:
        """Emit the text held back, as ``mode`` reads it, and read so from now on."""
        self._mode = mode
        pieces, self._pieces = self._pieces, []
        if len(pieces) < 2:
            return
        if mode == "delta":
            self._answer_text = pieces
            text = "".join(pieces[1:])
        else:  # the last snapshot, less the first piece, already emitted
            text = pieces[-1][len(pieces[0]):]
        if text:
            out.append(Delta(Channel.ANSWER, text))

    def _id(self, key: str, value, out: list[Record]) -> None:
        if isinstance(value, str) and value and self._ids.get(key) != value:
            self._ids[key] = value
            out.append(Meta(key, value))


def _session_name(session):
    return session.get("name") if isinstance(session, dict) else None
