"""The plain view: the answer as text for a pipe or a file (stdout is not a terminal).

Consumes the painter's calls; produces the answer on ``out`` (a callable taking bytes),
appending only the suffix not yet written, in whatever batches the painter paints: no
colour, no cursor movement, nothing but answer text. The release policy decides how much
may leave before the end. Reasoning goes to ``err`` (a callable taking str) only when asked:
``show`` streams it, ``collapse`` writes a one-line summary, ``hide`` (the default in a pipe)
writes nothing. Tool calls get one line each on ``err`` at the end, and so does a refusal
(the model's reply in place of an answer: not answer text).

What reaches stderr (reasoning, tool calls, a refusal) is the model's text shown to a
person: its controls are made visible (``controls.safe``), as on stdout when that is a
terminal (``TERM=dumb``).

What this view does not know: exit codes and status warnings (the command's edge says
those), files (``persist``), time.
"""

from __future__ import annotations

from ..model import End, Status
from ..plural import count
from .controls import one_line, safe
from .draft import Draft


def summary(draft: Draft, now: float, text: str | None = None, first: bool = True) -> str:
    """"thought for 3.2 s (120 words)" for the reasoning so far (or ``text``, a run of
    it); "thought: 120 words" when its duration was not measured (a file read at once,
    or not the ``first`` run: the duration measured is the first run's)."""
    words = len((draft.reasoning if text is None else text).split())
    if not (first and draft.thought_timed()):
        return f"thought: {count(words, 'word')}"
    return f"thought for {draft.thought_seconds(now):.1f} s ({count(words, 'word')})"


def tool_line(call: dict, limit: int = 200) -> str:
    """One line for a tool call, safe to show on a terminal (its name and arguments are the
    model's text: their controls made visible and line ends flattened before the arguments
    are cut, so a cut never leaves half an escape sequence). A call the end record says is not whole JSON says so
    first, where cutting the line to a width cannot hide it: it must not be run."""
    args = " ".join(safe(call["arguments"]).split())
    if len(args) > limit:
        args = args[: limit - 1] + "\u2026"
    what = "incomplete tool call" if call.get("complete_json") is False else "tool call"
    return f"{what}: {one_line(call['name'] or '?')}({args})"


class PlainView:
    animates = False

    def __init__(self, out, err, policy, *, reasoning: str = "hide", on_truncate: str = "replace",
                 note=None, shared_terminal: bool = False, out_terminal: bool = False) -> None:
        self.out = out
        #: stdout is a terminal after all (TERM=dumb): the answer's controls made visible
        #: there, as the live view does (into a pipe or a file, the text is the provider's)
        self.out_terminal = out_terminal
        self._err_out = err
        #: stderr is a terminal that the answer reaches too (TERM=dumb, ``render | cat``):
        #: a line on stderr must not be glued to the end of a partial line of the answer
        self.shared_terminal = shared_terminal
        #: an earlier stage's note ("fetch: ..."), said on stderr (render is the last stage)
        self.say_note = note or (lambda text: self.err(text + "\n"))
        #: the answer written so far ends a line (or nothing was written)
        self.at_line_start = True
        self.policy = policy
        self.reasoning = reasoning
        self.keep_partial = on_truncate == "keep"
        self.written = 0  # characters of the answer already written
        self.reasoning_written = 0

    def paint(self, draft: Draft, now: float) -> None:
        if self.reasoning == "show":
            self._stream_reasoning(draft)
        if self.policy.name == "delta":  # all that arrived: only the new text is read
            new = draft.answer_from(self.written)
            if new:
                self._send(new)
                self.written += len(new)
            return
        text = draft.answer
        upto = self.policy.upto(text)
        if upto > self.written:
            self._send(text[self.written:upto])
            self.written = upto

    def note(self, text: str, now: float) -> None:
        self.line_break()
        self.say_note(text)

    def err(self, text: str) -> None:
        self.line_break()
        self._err_out(safe(text))  # (the model's text among it: the one place it is made safe)

    def line_break(self) -> None:
        """Before a line on stderr: end the answer's partial line on a shared terminal."""
        if self.shared_terminal and not self.at_line_start:
            self._err_out("\n")
            self.at_line_start = True

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
        if complete or self.policy.name == "delta" or self.keep_partial:
            upto = len(text)
        else:  # what a paint now would release: not what the last one, timed, did
            upto = max(self.written, self.policy.upto(text))
        if upto > self.written:
            self._send(text[self.written:upto])
            self.written = upto
        if complete and text and not text.endswith("\n"):
            self._send("\n")  # a text file ends with a newline
        if draft.refusal:
            self.err(f"the model refused: {draft.refusal}\n")
        for call in draft.tool_calls(end):
            self.err(tool_line(call) + "\n")

    def suspend(self, draft: Draft, now: float) -> None:
        pass  # nothing on a terminal to tidy up

    def abort(self, draft: Draft, now: float, why: str | None = None) -> None:
        pass  # the one-line diagnostic on stderr says it all

    def _send(self, text: str) -> None:
        self.out((safe(text) if self.out_terminal else text).encode(errors="replace"))
        self.at_line_start = text.endswith("\n")

    def _stream_reasoning(self, draft: Draft) -> None:
        text = draft.reasoning
        if len(text) > self.reasoning_written:
            self.err(text[self.reasoning_written:])
            self.reasoning_written = len(text)
