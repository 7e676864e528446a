"""Markdown arriving as a stream, cut into blocks as soon as each is finished.

``Splitter.feed(text)`` returns the blocks finished in ``text`` (the whole answer so far)
since the last call, and ``start`` says where the open block starts; it reads each whole
line once as the text grows, and the caller renders each finished block once. Only whole
lines are read: a line still arriving belongs to the open block. ``finish(text)`` ends
the answer: the open block is then finished as it stands.

Where a block ends (what a streaming renderer must get right):

* a paragraph at a blank line, or where a heading, a fence, a list or a table starts;
* a fenced code block (```` ``` ```` or ``~~~``) at its closing fence, and nowhere else:
  blank lines and ``#`` lines inside it are code;
* a list at the first non-blank line after a blank line that neither starts an item
  nor is indented (a list goes on across blank lines, and an indented fence is part of
  its item);
* a table at the first line that is not a row (rows arrive one by one: the column
  widths are known only at the end);
* a heading, a rule or a setext underline at the end of its own line.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r" {0,3}#{1,6}(\s|$)")
_RULE = re.compile(r" {0,3}([-*_])( *\1){2,} *$")
_SETEXT = re.compile(r" {0,3}(=+|-+) *$")
_ITEM = re.compile(r" {0,3}([-*+]|\d{1,9}[.)])(\s|$)")


class Splitter:
    """``split`` that resumes: fed the same text again and again as it grows (the whole
    answer so far), it reads each new whole line once, so a paint costs the new lines, not
    the open block again (a paragraph that never ends would make that quadratic)."""

    def __init__(self) -> None:
        self.start = 0  # where the open block starts
        self._pos = 0  # where the next line to read starts
        self._kind: str | None = None  # of the open block: para, fence, list, table
        self._fence = ""
        self._after_blank = False  # a blank line ended the list's last item

    def feed(self, text: str) -> list[str]:
        """The blocks the lines of ``text`` read since the last call finished; ``start``
        is then where the open block starts."""
        blocks: list[str] = []
        pos = self._pos
        while True:
            end = text.find("\n", pos)
            if end < 0:
                break
            self._line(text, pos, end, blocks)
            pos = self._pos = end + 1
        return blocks

    def finish(self, text: str) -> list[str]:
        """At the end of the answer: the blocks not given yet, the open one last, as it
        stands (a list, a table, a last line without its line end, a fence never closed)."""
        blocks = self.feed(text)
        if self._pos < len(text):
            self._line(text, self._pos, len(text), blocks)
            self._pos = len(text)
        self._close(text, len(text), len(text), blocks)
        return blocks

    def _close(self, text: str, upto: int, resume: int, blocks: list[str]) -> None:
        block = text[self.start:upto].strip("\n")
        if block.strip():
            blocks.append(block)
        self._kind, self.start = None, resume

    def _line(self, text: str, pos: int, end: int, blocks: list[str]) -> None:
        line, nxt, kind = text[pos:end], end + 1, self._kind
        if kind == "fence":
            m = _FENCE.match(line)
            if m and m.group(1)[0] == self._fence[0] and len(m.group(1)) >= len(self._fence) \
                    and not line[m.end():].strip():
                self._close(text, nxt, nxt, blocks)
            return
        if not line.strip():
            if kind == "list":
                self._after_blank = True
            elif kind is not None:
                self._close(text, pos, nxt, blocks)
            else:
                self.start = nxt
            return
        if kind == "list" and (line[:1] in (" ", "\t") or _ITEM.match(line)):
            self._after_blank = False  # the list goes on (an item, or an indented continuation)
            return
        if kind == "list" and self._after_blank:
            self._close(text, pos, pos, blocks)
        elif kind == "list" and not line.startswith((" ", "\t")):
            if _HEADING.match(line) or _FENCE.match(line) or line.lstrip().startswith("|"):
                self._close(text, pos, pos, blocks)  # (else a lazy continuation of the item)
        elif kind == "table" and not line.lstrip().startswith("|"):
            self._close(text, pos, pos, blocks)
        elif kind == "para":
            if _SETEXT.match(line):
                self._close(text, nxt, nxt, blocks)
                return
            if _HEADING.match(line) or _FENCE.match(line) or _ITEM.match(line) or _RULE.match(line):
                self._close(text, pos, pos, blocks)
        self._after_blank = False
        if self._kind is None:
            self.start = pos
            m = _FENCE.match(line)
            if m:
                self._kind, self._fence = "fence", m.group(1)
            elif _HEADING.match(line) or _RULE.match(line):
                self._kind = "para"
                self._close(text, nxt, nxt, blocks)
            elif _ITEM.match(line):
                self._kind = "list"
            elif line.lstrip().startswith("|"):
                self._kind = "table"
            else:
                self._kind = "para"


def is_open_fence(block: str) -> bool:
    """Whether the open block is a code fence (drawn as code while it streams)."""
    return bool(_FENCE.match(block))
