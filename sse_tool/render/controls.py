"""Model text made harmless for a terminal, for every line a view draws from it.

A control character in a model's output (or in a tool call's arguments, a model name, a
usage key) would reach the terminal as a command: an escape sequence can move the cursor,
clear the screen, set the window title or write the clipboard (OSC 52). ``safe`` shows
each control, C1 included, as U+FFFD and drops a CR; tabs and line ends are the caller's
to lay out. ``one_line`` is for a line that must stay one (a tool call, the footer): its
line ends become spaces, else the row would take several rows of the screen, and a live
view that counts its rows would move up too few. No rich here: the plain view uses it too.
"""

from __future__ import annotations

import re

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: str) -> str:
    return CONTROL.sub(_shown, text)


def _shown(m: re.Match) -> str:
    return "" if m.group() == "\r" else "\ufffd"


def one_line(text: str) -> str:
    return safe(text).replace("\n", " ")
