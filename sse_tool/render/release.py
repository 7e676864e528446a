"""Release policies: how much of a growing answer may leave for a pipe or a file.

A policy sees the answer so far (always a prefix of the final text) and says how many
characters of it may be released now; at the end the view decides about the rest.

* ``delta``: everything that arrived;
* ``sentence``: up to the last whole sentence: a sentence end (``. ! ? …``, optionally
  followed by closing quotes or brackets) followed by a space or a newline, or a paragraph
  break; for a consumer that cannot judge half a sentence (a policy filter, a speech engine);
* ``complete``: nothing before the terminal event.

Policies are pure and incremental: each call scans only the text added since the last one.
"""

from __future__ import annotations

import re

#: the end of a sentence, and the whitespace that proves it ended; or (``tail``) the start
#: of one still arriving, at the end of the text, where the next scan resumes (". " split
#: in two, a run of closing quotes or of blanks of any length)
_SENTENCE_END = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]]*[ \t\r\n]|\n[ \t]*\n"
                           r"|(?P<tail>(?:[.!?\u2026][\"'\u201d\u2019)\]]*|\n[ \t]*)\Z)")


class DeltaRelease:
    name = "delta"

    def upto(self, text: str) -> int:
        return len(text)

    def reset(self) -> None:
        pass


class SentenceRelease:
    name = "sentence"

    def __init__(self) -> None:
        self._released = 0
        self._resume = 0  # where the next scan starts: a boundary may still be arriving there

    def upto(self, text: str) -> int:
        start = max(self._released, self._resume)
        self._resume = len(text)
        for match in _SENTENCE_END.finditer(text, start):
            if match.lastgroup == "tail":
                self._resume = match.start()
            else:
                self._released = match.end()
        return self._released

    def reset(self) -> None:
        self._released = self._resume = 0


class CompleteRelease:
    name = "complete"

    def upto(self, text: str) -> int:
        return 0

    def reset(self) -> None:
        pass


POLICIES = {cls.name: cls for cls in (DeltaRelease, SentenceRelease, CompleteRelease)}


def make_policy(name: str):
    return POLICIES[name]()
