"""Rules of Gemini's ``streamGenerateContent`` (``alt=sse``, or the JSON array without it).

Each chunk is a whole ``GenerateContentResponse`` holding only the new output. A
candidate's ``finishReason`` comes once, on its last chunk; ``usageMetadata`` repeats the
counts so far, so the output counts never go down; errors are
``{"error": {"code", "message", "status"}}``. Over SSE, Google's own client reads only
``data: `` lines (see ``NON_DATA_LINE``, applied by ``sse.Blocks``).
"""

from __future__ import annotations

from .rules import ERROR, WARNING, Finding, key, rule

NON_DATA_LINE = rule(
    "gemini.non-data-line", WARNING, "an SSE line other than one 'data: ' line per event",
    """google-genai (Python) does not parse SSE: it strips `data: ` from each line and reads
    every other non-empty line as the start of a JSON document, so a comment (keep-alive),
    an `event:`/`id:`/`retry:` line, `data:` without the space, or an event of several data
    lines ends the stream with "Failed to parse response as JSON"
    (googleapis/python-genai#487, #1364); go-genai also fails on comments
    (googleapis/go-genai#903). Gemini itself sends one `data: ` line per event.""",
    ("google-genai (Python)", "go-genai"),
)
AFTER_FINISH = rule(
    "gemini.after-finish", ERROR, "a chunk after the candidate's finishReason",
    """A candidate's `finishReason` is on its last chunk, once; the turn is complete when
    candidate 0 has one. Content or a second finishReason after it reaches clients that
    already closed the turn (the SDKs and normalize take the first finishReason as the
    end).""",
)
USAGE_DECREASING = rule(
    "gemini.usage-decreasing", ERROR, "a usage count lower than in an earlier chunk",
    """`usageMetadata` repeats the counts so far on every chunk; clients keep the last one
    (taking the first makes a call look nearly free: ankit373/hydra#858). The output counts
    (`candidatesTokenCount`, `thoughtsTokenCount`, `totalTokenCount`) therefore never go down.
    `promptTokenCount` is not compared: gemini-2.0-flash-exp reports 15 in the early chunks
    and 13 in the last of the recorded tests/fixtures/gemini/text-basic.sse.""",
)
ERROR_SHAPE = rule(
    "gemini.error-shape", ERROR, "an error chunk not shaped {error: {code, message, status}}",
    """Google APIs report errors as `{"error": {"code": 429, "message": "...", "status":
    "RESOURCE_EXHAUSTED"}}`; the SDKs build their APIError from these three fields and retry
    on the code.""",
)

_COUNTS = ("candidatesTokenCount", "thoughtsTokenCount", "totalTokenCount")


class Rules:
    def __init__(self) -> None:
        self._finished: dict[int, str] = {}  # candidate -> its finishReason
        self._started: set[int] = set()
        self._usage: dict[str, int] = {}

    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        if not isinstance(payload, dict):
            return
        at = event.offset
        error = payload.get("error")
        if error is not None:
            if not (isinstance(error, dict) and isinstance(error.get("code"), int)
                    and isinstance(error.get("message"), str) and isinstance(error.get("status"), str)):
                out.append(ERROR_SHAPE.at(at, index, "an error without integer code and string message and status"))
            return
        candidates = payload.get("candidates")
        numbers = []
        for candidate in candidates if isinstance(candidates, list) else ():
            if not isinstance(candidate, dict):
                continue
            number = key(candidate.get("index", 0))
            numbers.append(number)
            if number in self._finished:
                out.append(AFTER_FINISH.at(at, index, f"candidate {number} again after finishReason "
                                                      f"{self._finished[number]!r}"))
                continue
            self._started.add(number)
            if candidate.get("finishReason"):
                self._finished[number] = candidate["finishReason"]
        if not numbers and self._started and self._started <= set(self._finished):
            out.append(AFTER_FINISH.at(at, index, "a chunk after every candidate finished"))
        self._usage_counts(payload.get("usageMetadata"), at, index, out)

    def close(self, index: int) -> list[Finding]:
        return []

    def _usage_counts(self, usage, at: int, index: int, out: list[Finding]) -> None:
        if not isinstance(usage, dict):
            return
        for key in _COUNTS:
            value = usage.get(key)
            if not isinstance(value, int):
                continue
            before = self._usage.get(key)
            if before is not None and value < before:
                out.append(USAGE_DECREASING.at(at, index, f"usageMetadata.{key} {value} after {before}"))
            self._usage[key] = value
