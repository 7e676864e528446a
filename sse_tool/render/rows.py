"""Text to screen rows: greedy word wrap by terminal cells, with where each row starts.

``wrap(line, width)`` returns ``(row, start)`` pairs for one line (no newline in it):
the row's text and its offset in ``line``. Greedy wrapping is stable under growth: the
rows of a line, all but its last, do not change when text is appended, and wrapping the
rest of a line from a row's start gives the same rows as wrapping the whole. So a view
may commit finished rows and wrap only what follows them: a paint costs the size of the
live part, not the length of the answer. ``Words`` counts the words of a growing text
on what is new, for the same reason.

``clean`` makes text safe to draw: controls (an escape sequence in a model's output
could move the cursor, recolour or clear the screen) become visible, a CR goes, and each
tab is four spaces wherever it stands (a tab stop would depend on where a row starts,
and the rows of the rest of a line must not). ``raw_offsets`` maps a cleaned line's
offsets back to the line's.
"""

from __future__ import annotations

import re

from rich.cells import cell_len

try:
    from rich.cells import split_graphemes as _split_graphemes
except ImportError:  # rich < 14
    _split_graphemes = None

from .controls import safe

_WORD = re.compile(r"\S+|\s+")
TAB = "    "


def clean(text: str) -> str:
    return safe(text.replace("\t", TAB) if "\t" in text else text)


def raw_offsets(line: str) -> list[int] | None:
    """For each character of ``clean(line)``, and for its end, the offset in ``line``
    where it comes from; None when they are the same (no tab or CR in ``line``)."""
    if "\t" not in line and "\r" not in line:
        return None
    out: list[int] = []
    for i, char in enumerate(line):
        if char == "\t":
            out += [i] * len(TAB)
        elif char != "\r":
            out.append(i)
    out.append(len(line))
    return out


def _fold(word: str, width: int) -> list[str]:
    """A word wider than the row, cut into pieces that fit, between grapheme clusters as
    rich measures them (an emoji with a skin tone, a ZWJ sequence, a letter and its
    accents stay whole, and each piece is as wide as ``cell_len`` says)."""
    pieces, start, used = [], 0, 0
    for begin, end, w in _clusters(word):
        if used + w > width and begin > start:
            pieces.append(word[start:begin])
            start, used = begin, 0
        used += w
    pieces.append(word[start:])
    return pieces


def _clusters(word: str) -> list[tuple[int, int, int]]:
    """(start, end, cells) of each grapheme cluster; each code point with a rich that
    does not cluster (before 14), whose ``cell_len`` then counts code points too."""
    if _split_graphemes is not None:
        return _split_graphemes(word)[0]
    return [(i, i + 1, cell_len(char)) for i, char in enumerate(word)]


def wrap(line: str, width: int) -> list[tuple[str, int]]:
    """The rows of ``line`` at ``width`` cells, each with its start offset in ``line``."""
    width = max(1, width)
    if cell_len(line) <= width:
        return [(line, 0)]
    rows: list[tuple[str, int]] = []
    row: list[str] = []
    start = used = 0
    for match in _WORD.finditer(line):
        token = match.group()
        w = cell_len(token)
        if token[0].isspace():
            if used + w <= width:
                row.append(token)
                used += w
            else:  # the break: spaces at a row's end are dropped
                if row:
                    rows.append(("".join(row).rstrip(), start))
                row, used, start = [], 0, match.end()
            continue
        if used + w > width and row:
            if "".join(row).strip():
                rows.append(("".join(row).rstrip(), start))
            row, used, start = [], 0, match.start()  # (an indent that leaves no room goes)
        if w > width:
            offset = match.start()
            pieces = _fold(token, width - used if used else width)
            if used and cell_len(pieces[0]) + used > width:
                pieces = _fold(token, width)
            for piece in pieces[:-1]:
                row.append(piece)
                rows.append(("".join(row), start))
                offset += len(piece)
                row, used, start = [], 0, offset
            token = pieces[-1]
            w = cell_len(token)
        row.append(token)
        used += w
    rows.append(("".join(row), start))
    return rows


class Words:
    """``len(text[:upto].split())`` of a text that only grows, counted on what was added
    since the last call (a word cut between two of them is one word)."""

    def __init__(self) -> None:
        self.count = 0
        self.upto = 0
        self._in_word = False  # the text counted so far ends inside a word

    def of(self, text: str, upto: int) -> int:
        if upto > self.upto:
            piece = text[self.upto:upto]
            self.count += len(piece.split()) - (self._in_word and not piece[0].isspace())
            self._in_word = not piece[-1].isspace()
            self.upto = upto
        return self.count
