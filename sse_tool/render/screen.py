"""The bytes of a live view that other writers, resizes and long answers cannot break.

``LiveScreen`` turns "commit these rows, show this tail" into terminal output (str),
sans I/O. The picture it keeps on the terminal::

    ...committed rows: written once, never moved over again (the scrollback)
    <blank row>            <- the cursor waits here, at column 0 (hidden)
    tail rows              <- redrawn by every paint: the open text, tool calls, status

Every paint starts where the cursor waits, overwrites from there down and clears the
rest of the screen, then moves the cursor back up to the new blank row: it moves up
only over rows it has just written itself. So:

* a line that another process writes to the terminal (a stage's notice, a log line)
  lands on the blank row, and its newline moves the cursor below it; the next paint
  starts there, so that line stays intact between the committed rows and the new tail;
* after a resize the terminal may reflow or clip the old tail, however it likes: the
  paint overwrites it from its first row and clears below, at the new width;
* the tail is kept shorter than the screen by its maker, so however long the answer,
  each committed row reaches the scrollback exactly once;
* the tail is drawn with autowrap off (DECAWM, ``ESC [ ? 7 l``), and autowrap is back on
  before the paint ends: a terminal that draws a row wider than rich counts it (an emoji
  with a skin tone or a ZWJ sequence, drawn as its parts) clips that row instead of
  wrapping it onto one more line, so moving up by the tail's rows still lands on the
  blank row (else each paint would leave a copy of the tail behind). Committed rows and
  the final ones are written with autowrap on, so they are never clipped; a paint is
  written whole, so no exit leaves autowrap off.

A row no wider than the screen is written whole; the next one starts with ``\\r\\n`` (no
cursor positioning that depends on the width). ``ESC [ K`` clears the rest of a row only
when the row is narrower than the screen (on the last column it would erase its last
character). Synchronized output (``ESC [ ? 2026 h``) asks the terminals that know it to
show each paint at once; others ignore it.
"""

from __future__ import annotations

from rich.cells import cell_len

CLEAR_LINE = "\x1b[K"
CLEAR_BELOW = "\x1b[J"
HIDE_CURSOR = "\x1b[?25l"
SHOW_CURSOR = "\x1b[?25h"
BEGIN, END = "\x1b[?2026h", "\x1b[?2026l"
NO_WRAP, WRAP = "\x1b[?7l", "\x1b[?7h"


def _row(row: str, width: int) -> str:
    return row if cell_len(_plain(row)) >= width else row + CLEAR_LINE


def _plain(row: str) -> str:
    if "\x1b" not in row:
        return row
    import re

    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", row)


class LiveScreen:
    """Committed rows and a live tail, as terminal output; the caller writes it out."""

    def __init__(self) -> None:
        self.tail_shown = False  # the cursor waits on the blank row above a tail
        self.started = False
        #: committed rows written so far (for tests and statistics)
        self.committed = 0

    def paint(self, commit: list[str], tail: list[str], width: int) -> str:
        """Write ``commit`` for good, then show ``tail`` (rows no wider than ``width``;
        an empty tail leaves the cursor at the start of the row after the committed ones)."""
        out = [BEGIN]
        if not self.started:
            out.append(HIDE_CURSOR)
            self.started = True
        out.append("\r")
        for row in commit:
            out.append(_row(row, width) + "\r\n")
        self.committed += len(commit)
        if tail:
            out.append(CLEAR_LINE + "\r\n" + NO_WRAP)  # the blank row where the cursor will wait
            out.append("\r\n".join(_row(row, width) for row in tail))
            out.append(CLEAR_BELOW + f"\x1b[{len(tail)}A\r" + WRAP)
        else:
            out.append(CLEAR_BELOW)
        self.tail_shown = bool(tail)
        out.append(END)
        return "".join(out)

    def suspend(self) -> str:
        """Before the process stops (Ctrl-Z): the tail erased, the cursor shown, so the
        shell's lines land on a clean terminal; the next paint starts a new tail where
        the cursor is then (after ``fg``) and hides the cursor again."""
        if not self.started:
            return ""
        self.started = self.tail_shown = False
        return "\r" + CLEAR_BELOW + SHOW_CURSOR

    def close(self, commit: list[str], width: int) -> str:
        """The last paint: ``commit``, no tail, the cursor shown again."""
        return self.paint(commit, [], width) + SHOW_CURSOR if self.started or commit else ""
