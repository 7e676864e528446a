"""Reasoning written inside the answer as ``<think>…</think>``, moved to the reasoning channel.

Open models served through OpenAI-compatible servers and Ollama (DeepSeek-R1 distills, Qwen,
MiniMax) often stream their reasoning as answer text, between ``<think>`` and ``</think>``.
``ThinkTags(mode).feed(text)`` takes the answer deltas' texts in order and returns
``Delta`` records: the tagged text on the reasoning channel, the rest on the answer
channel; ``close()`` returns what was held back at the end, and ``cut`` then says whether
the block was never closed (reasoning cut short).

Modes: ``auto`` splits only an answer whose first non-blank text is ``<think>``; ``on``
also splits an answer that starts inside the block without the opening tag (chat templates
that put ``<think>`` in the prompt, as DeepSeek-R1's does), so everything up to the first
``</think>`` is reasoning; ``off`` (no ``ThinkTags`` at all) leaves the answer alone. Only
that leading block moves: a ``<think>`` the answer mentions later stays answer text, and a
mention inside the block stays reasoning. Blanks around the block (after ``<think>``,
before and after ``</think>``) separate it from the text and are dropped.

Theory of operation: a small state machine over text, indifferent to how the text is split
into deltas. A state reads what it can decide and holds back only what it cannot yet: the
start of a tag (``<thi``, ``</th``) or blanks whose fate depends on what follows. What is
held is at most a tag's length plus one run of blanks, so memory stays small and each
character is looked at a bounded number of times. The tests feed every split of each
sample, including one character at a time, and compare with the unsplit text.
"""

from __future__ import annotations

from .model import Channel, Delta

OPEN, CLOSE = "<think>", "</think>"

# States.
_START = "start"  # no answer text yet, or only blanks and the start of a possible <think>
_INSIDE = "inside"  # inside the block: reasoning
_AFTER = "after"  # just past </think>: blanks before the answer are dropped
_PASS = "pass"  # the answer, verbatim, to the end

MODES = ("auto", "on", "off")


def _partial(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that begins ``tag`` (a tag that may go on)."""
    for k in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:k]):
            return k
    return 0


class ThinkTags:
    """Answer text in, answer and reasoning deltas out (``feed``/``close``)."""

    def __init__(self, mode: str = "auto") -> None:
        if mode not in ("auto", "on"):
            raise ValueError(f"think-tags mode {mode!r}: auto or on")
        self.mode = mode
        self.state = _START
        self._held = ""
        self._fresh = True  # nothing of the block emitted yet: its leading blanks go
        #: set by ``close``: the input ended inside the block (no ``</think>``)
        self.cut = False

    @property
    def done(self) -> bool:
        """True once the rest of the answer passes unchanged: no need to feed it here."""
        return self.state == _PASS

    def feed(self, text: str) -> list[Delta]:
        out: list[Delta] = []
        state = self.state
        if state == _PASS:
            return [Delta(Channel.ANSWER, text)] if text else []
        text, self._held = self._held + text, ""
        if state == _START:
            text = self._start(text, out)
        if self.state == _INSIDE and text:
            text = self._inside(text, out)
        if self.state == _AFTER and text:
            text = text.lstrip()
            if text:
                self.state = _PASS
        if self.state == _PASS and text:
            out.append(Delta(Channel.ANSWER, text))
        return out

    def close(self) -> list[Delta]:
        """What was held back, now that no more text comes."""
        held, self._held = self._held, ""
        if self.state == _START:
            if self.mode == "auto":  # never became <think>: it was answer all along
                return [Delta(Channel.ANSWER, held)] if held else []
            self.state = _INSIDE
            held = held.lstrip()
        if self.state != _INSIDE:
            return []
        self.cut = True
        held = held.rstrip()
        if self._fresh:
            held = held.lstrip()
        return [Delta(Channel.REASONING, held)] if held else []

    # -- states -------------------------------------------------------------------------

    def _start(self, text: str, out: list) -> str:
        """Decide whether the answer opens with the block; return the text left to read."""
        rest = text.lstrip()
        if rest.startswith(OPEN):
            self.state = _INSIDE
            return rest[len(OPEN):]
        if not rest or OPEN.startswith(rest):  # blanks, or <thi...: wait for more
            self._held = text
            return ""
        if self.mode == "on":  # the block began in the prompt: this is reasoning already
            self.state = _INSIDE
            return rest
        self.state = _PASS
        return text

    def _inside(self, text: str, out: list) -> str:
        """Reasoning up to ``</think>``; return the text after it (state ``_AFTER``)."""
        end = text.find(CLOSE)
        if end >= 0:
            body, rest = text[:end].rstrip(), text[end + len(CLOSE):]
            self.state = _AFTER
        else:
            keep = _partial(text, CLOSE)
            body = text[: len(text) - keep]
            stripped = body.rstrip()
            self._held = body[len(stripped):] + text[len(text) - keep:]
            body, rest = stripped, ""
        if self._fresh:
            body = body.lstrip()
        if body:
            self._fresh = False
            out.append(Delta(Channel.REASONING, body))
        return rest
