"""The dialect's common delta event, read for a whole batch of events with one regex.

Nearly every event of a stream is its dialect's delta event, and nearly all of those say
nothing to any rule: checking one costs a ``loads``, the adapter's ``feed`` and the
rules' ``feed`` in Python, for nothing. A family module may name ``QUICK``: (a regex
matching the data line of that event whole, exactly as its provider sends it; the event
name it comes with). Its ``Rules.quick(adapter, found)`` then says, from the groups
captured for a run of such events and the state before it, whether the per-event path
would report nothing for any of them and change no state; the checker then skips them
(``Checker._runs``). Any event the regex does not match, and any run ``quick`` refuses,
takes the per-event path, which stays the reference (``tests/check/test_check_fast.py``).

A match must prove the data is a JSON object ``loads`` accepts: the regex fixes every
key and the type of every value, and each string of it is ``STRING``, which only
accepts what a JSON parser accepts (no control character, no unknown escape, no lone
surrogate).
"""

from __future__ import annotations

import re
from operator import attrgetter, itemgetter

_DATA = attrgetter("data")
FIRST, SECOND = itemgetter(0), itemgetter(1)

_CHAR = r'[^"\\\x00-\x1f\ud800-\udfff]'
_ESCAPE = (r'\\(?:["\\/bfnrt]|u(?![dD][89a-fA-F])[0-9a-fA-F]{4}'
           r'|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})')
#: a JSON string literal that any JSON parser reads (unrolled: a run of plain characters
#: between escapes, which the regex engine takes in one step)
STRING = f'"{_CHAR}*(?:{_ESCAPE}{_CHAR}*)*"'

_COMPILED: dict = {}


def matches(items: list, pattern: str) -> list | None:
    """For each event of ``items``, the groups ``pattern`` captured in its data (empty
    strings where the data is not such a line); None if a data holds a line end (the
    lines of the joined data are then not one per event). ``pattern`` has two groups or
    more, the first of them never empty in a match."""
    regex = _COMPILED.get(pattern)
    if regex is None:
        regex = _COMPILED[pattern] = re.compile(f"^(?:{pattern}|.*)$", re.M)
    found = regex.findall("\n".join(map(_DATA, items)))
    return found if len(found) == len(items) else None
