"""The plain view: the answer as text for a pipe or a file (stdout is not a terminal).

Consumes the painter's calls; produces the answer on ``out`` (a callable taking bytes),
appending only the suffix not yet written, in whatever batches the painter paints: no
colour, no cursor movement, nothing but answer text. The release policy decides how much
may leave before the end. Reasoning goes to ``err`` (a callable taking str) only when asked:
``show`` streams it, ``collapse`` writes a one-line summary, ``hide`` (the default in a pipe)
writes nothing. Tool calls get one line each on ``err`` at the end, and so does a refusal
(the model's reply in place of an answer: not answer text).

What this view does not know: exit codes and status warnings (the command's edge says
those), files (``persist``), time.
"""

from __future__ import annotations

from ..model import End, Status
from .draft import Draft


def summary(draft: Draft, now: float) -> str:
    """"thought for 3.2 s (120 words)" for the reasoning so far."""
    words = len(draft.reasoning.split())
    return f"thought for {draft.thought_seconds(now):.1f} s ({words} words)"


def tool_line(call: dict, limit: int = 200) -> str:
    args = " ".join(call["arguments"].split())
    if len(args) > limit:
        args = args[: limit - 1] + "\u2026"
    return f"tool call: {call['name'] or '?'}({args})"


class PlainView:
    animates = False

    def __init__(self, out, err, policy, *, reasoning: str = "hide", on_truncate: str = "replace") -> None:
        self.out = out
        self.err = err
        self.policy = policy
        self.reasoning = reasoning
        self.keep_partial = on_truncate == "keep"
        self.written = 0  # characters of the answer already written
        self.reasoning_written = 0

    def paint(self, draft: Draft, now: float) -> None:
        if self.reasoning == "show":
            self._stream_reasoning(draft)
        text = draft.answer
        upto = self.policy.upto(text)
        if upto > self.written:
            self.out(text[self.written:upto].encode(errors="replace"))
            self.written = upto

    def reset(self, draft: Draft, now: float) -> None:
        if self.written or self.reasoning_written:
            self.err("\n[a new attempt starts: the text above belongs to a discarded one]\n")
        self.written = self.reasoning_written = 0
        self.policy.reset()

    def finish(self, draft: Draft, end: End, now: float) -> None:
        if self.reasoning == "show":
            self._stream_reasoning(draft)
            if self.reasoning_written and not draft.reasoning.endswith("\n"):
                self.err("\n")
        elif self.reasoning == "collapse" and draft.reasoning:
            self.err(f"[{summary(draft, now)}]\n")
        text = draft.answer
        complete = end.status is Status.COMPLETE
        if complete or self.policy.name == "delta" or (self.keep_partial and self.policy.name != "complete"):
            upto = len(text)
        else:
            upto = self.written
        if upto > self.written:
            self.out(text[self.written:upto].encode(errors="replace"))
            self.written = upto
        if complete and text and not text.endswith("\n"):
            self.out(b"\n")  # a text file ends with a newline
        if draft.refusal:
            self.err(f"the model refused: {draft.refusal}\n")
        for call in draft.tool_calls():
            self.err(tool_line(call) + "\n")

    def abort(self, draft: Draft, now: float, why: str | None = None) -> None:
        pass  # the one-line diagnostic on stderr says it all

    def _stream_reasoning(self, draft: Draft) -> None:
        text = draft.reasoning
        if len(text) > self.reasoning_written:
            self.err(text[self.reasoning_written:])
            self.reasoning_written = len(text)
