"""Markdown arriving as a stream, cut into blocks as soon as each is finished.

``split(text)`` returns the finished blocks at the start of ``text`` and the offset where
the open block starts; the caller renders each finished block once, keeps the offset,
and calls again with the rest when more text arrives (so each line is looked at a few
times at most, not once per delta). Only whole lines are read: a line still arriving
belongs to the open block.

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


def split(text: str) -> tuple[list[str], int]:
    """(finished blocks, where the open block starts) for ``text`` that starts a block."""
    blocks: list[str] = []
    kind = None  # of the open block: para, fence, list, table
    fence = ""
    start = 0  # where the open block starts
    after_blank = False  # a blank line ended the list's last item
    pos = 0
    while True:
        end = text.find("\n", pos)
        if end < 0:
            break
        line = text[pos:end]
        nxt = end + 1

        def close(upto: int, resume: int) -> None:
            nonlocal kind, start
            block = text[start:upto].strip("\n")
            if block.strip():
                blocks.append(block)
            kind, start = None, resume

        if kind == "fence":
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
                close(nxt, nxt)
        elif not line.strip():
            if kind == "list":
                after_blank = True
            elif kind is not None:
                close(pos, nxt)
            else:
                start = nxt
        elif kind == "list" and (line[:1] in (" ", "\t") or _ITEM.match(line)):
            after_blank = False  # the list goes on (an item, or an indented continuation)
        else:
            if kind == "list" and after_blank:
                close(pos, pos)
            elif kind == "list" and not line.startswith((" ", "\t")):
                if _HEADING.match(line) or _FENCE.match(line) or line.lstrip().startswith("|"):
                    close(pos, pos)  # (else a lazy continuation of the item)
            elif kind == "table" and not line.lstrip().startswith("|"):
                close(pos, pos)
            elif kind == "para":
                if _SETEXT.match(line):
                    close(nxt, nxt)
                    pos = nxt
                    continue
                if _HEADING.match(line) or _FENCE.match(line) or _ITEM.match(line) or _RULE.match(line):
                    close(pos, pos)
            after_blank = False
            if kind is None:
                start = pos
                m = _FENCE.match(line)
                if m:
                    kind, fence = "fence", m.group(1)
                elif _HEADING.match(line) or _RULE.match(line):
                    kind = "para"
                    close(nxt, nxt)
                elif _ITEM.match(line):
                    kind = "list"
                elif line.lstrip().startswith("|"):
                    kind = "table"
                else:
                    kind = "para"
        pos = nxt
    return blocks, start


def is_open_fence(block: str) -> bool:
    """Whether the open block is a code fence (drawn as code while it streams)."""
    return bool(_FENCE.match(block))
