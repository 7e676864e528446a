"""Many JSON lines read with a few C calls: the batch readers behind ``RecordReader``'s
fast paths.

A framer hands the reader every complete event of a chunk at once. Most of them are
the provider's common delta event, or a line of an earlier sse-tool stage, each in one
exact shape. Reading them one at a time costs a ``loads`` and a few tests in Python
each; here a whole batch is read with one regex over the lines joined by ``\\n`` and
one ``loads`` of the JSON strings the regex captured, joined into an array. A run of
events the framer read at once comes so already (``runs.EventRun``): no event is made of
one the batch reads.

That one ``loads`` decodes each literal as its own would because the patterns match a
whole line holding one complete JSON string literal (group 2) and no array or object it
could be cut inside: joined by commas, the literals are an array of exactly those
strings. A line a pattern does not match captures nothing; a line ending or a comment
among the items, a bad escape or invalid UTF-8, make the batch unreadable so, and the
caller reads each item alone: that per-item path stays the reference, and what a batch
reader gives is what it would give (``tests/normalize/test_fast_paths.py``).

* ``delta_lines``: ``normalize``'s delta records (what ``render`` reads);
* ``quick_records``: the provider's data lines, with the adapter's ``quick_lines``
  (``Normalizer.fast_lines``): a ``Delta`` for each line of that shape;
* ``frame_deltas``: the same in ``frame``'s records of those events,
  ``{"event":"...","data":"..."}``, where the data line is a JSON string.

An adapter's ``quick_lines`` is ``(pattern, channels)`` or ``(pattern, channels,
refused)``: a regex (bytes) matching a whole data line that ``quick`` reads as a
``Delta`` of its text (group 2, non-empty) in the channel of its key (group 1), whatever
the event's name but those in ``refused`` (``quick`` leaves them to ``feed``). Each
string of the pattern outside that text is ``wire.PLAIN`` or written out (no escape in it),
so a match is a valid JSON object once the text is. It may follow the adapter's state
(OpenAI's chat chunks name the model seen before: a chunk naming another is for
``feed``): the batch is read with the shape of the state before it, so after each event
that goes to ``feed`` the reader asks ``fast_lines`` again, and if the shape changed,
the rest of the batch is read item by item (``pipeline.RecordReader._convert``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import repeat
from operator import attrgetter, itemgetter

from orjson import JSONDecodeError, loads

from .model import Channel, Delta, Record
from .runs import EventRun
from .sse import SseComment
from .wire import JSON_STRING

_DATA = attrgetter("data")
_KEY, _LITERAL = itemgetter(0), itemgetter(1)
_CHANNEL_OF = {channel.value.encode(): channel for channel in Channel}
#: a delta record as ``normalize`` writes it, the whole line (a text: its literal)
_DELTA_LINES = (rb'\{"type":"delta","channel":"(' + b"|".join(_CHANNEL_OF) + rb')","text":('
                + JSON_STRING + rb')\}')
_COMPILED: dict = {}  # regexes compiled when first used: start-up does not pay for them
_MAX_COMPILED = 64  # a shape that follows state (a model) may make many: bounded
_EVENT = attrgetter("event")
_new = tuple.__new__  # builds a Delta without the keyword handling of its constructor


def delta_lines(items: list, out: list[Record]) -> bool:
    """If each item's data is a delta record exactly as ``normalize`` writes it, append
    their records and return True; else do nothing and return False."""
    if not _lines_of(items):
        return False
    found = _found(items, _lines_regex(_DELTA_LINES, others=True))
    if found is None or not all(map(_KEY, found)):  # (another line captures no key)
        return False
    texts = _texts(found)
    if texts is None:
        return False
    out += map(_new, repeat(Delta), zip(map(_CHANNEL_OF.__getitem__, map(_KEY, found)), texts))
    return True


def quick_records(items: list, pattern: bytes, channels: dict, refused: frozenset = frozenset()) -> list | None:
    """For each item, the ``Delta`` the adapter's ``quick`` gives it if its data is a line
    ``pattern`` matches whole and its event's name is not in ``refused`` (the adapter's
    ``quick_lines``), else None; None if the batch cannot be read so (a comment among the
    items, a data line holding a line end, a bad escape or invalid UTF-8 in a text: then
    each item is read alone)."""
    if not _lines_of(items):
        return None
    found = _found(items, _lines_regex(pattern, others=True))
    if found is None:
        return None
    ready = _deltas(found, _texts(found), channels)
    if ready is not None and refused and not refused.isdisjoint(map(_EVENT, items)):
        ready = [None if item.event in refused else record for item, record in zip(items, ready)]
    return ready


def frame_deltas(items: list, pattern: bytes, channels: dict, refused: frozenset = frozenset()) -> list | None:
    """``quick_records`` for frame's records of the events: the same ``Delta`` for each
    record ``{"event":"...","data":"..."}`` whose data is a line ``pattern`` matches whole.

    The data is a JSON string there, so its quotes are escaped, and the text's literal
    with them: the regex is ``pattern`` so escaped (``_in_record``), and the literals it
    captures are unescaped once with two replaces, then read as the literals they then
    are. The event's name is only checked to be a plain string, not one of ``refused``.
    """
    if not _lines_of(items):
        return None
    found = _found(items, _lines_regex(_in_record(pattern, refused), others=True))
    if found is None:
        return None
    # Each literal is a piece of the record's string: joined by commas between "[ and ]",
    # they are a JSON string whose value is a JSON array of the literals as the provider
    # sent them; two loads read it (faster than taking the record's escapes off by two
    # replaces, then one loads)
    joined = b'"[' + b",".join([lit or rb'\"\"' for lit in map(_LITERAL, found)]) + b']"'
    try:
        texts = loads(loads(joined))
    except JSONDecodeError:
        return None
    return _deltas(found, texts, channels)


def _deltas(found: list, texts: list | None, channels: dict) -> list | None:
    """A ``Delta`` for each line ``found`` with a key of ``channels`` and a non-empty text
    (else None); None if there are not as many texts as lines."""
    if texts is None or len(texts) != len(found):
        return None
    kinds = list(map({**channels, b"": None}.__getitem__, map(_KEY, found)))
    # built by C calls; the few lines that read no record then put back to None one by
    # one, each found by a C search
    ready = list(map(_new, repeat(Delta), zip(kinds, texts)))
    for column, blank in ((kinds, None), (texts, "")):
        i = _index(column, blank)
        while i >= 0:
            ready[i] = None
            i = _index(column, blank, i + 1)
    return ready


def _index(items: list, value, start: int = 0) -> int:
    """Where ``value`` is next in ``items`` from ``start`` (by ``==``; -1 if nowhere)."""
    try:
        return items.index(value, start)
    except ValueError:
        return -1


#: a JSON string literal inside a JSON string, its quotes and backslashes escaped (only
#: as orjson writes them: a line written otherwise is left to the per-item path)
_ESCAPED_STRING = rb'\\"[^"\\\n]*(?:\\\\(?:\\["\\]|[^"\\\n])[^"\\\n]*)*\\"'


@lru_cache(maxsize=_MAX_COMPILED)  # asked for each batch
def _in_record(pattern: bytes, refused: frozenset = frozenset()) -> bytes:
    """A frame record ``{"event":"...","data":"..."}`` whose event is not one of
    ``refused`` and whose data is a line ``pattern`` matches, as a regex with the same
    groups. ``pattern`` is made of plain text, ``wire.PLAIN`` and ``JSON_STRING`` (no quote
    in a character set, no escape in a string); in the record's string each quote of it
    is escaped."""
    assert JSON_STRING in pattern and not re.search(rb'\[[^\]]*"', re.sub(rb"\\.", b"", pattern.replace(JSON_STRING, b"")))
    data = pattern.replace(JSON_STRING, b"\0").replace(b'"', rb'\\"').replace(b"\0", _ESCAPED_STRING)
    # the event's name: printable ASCII, no quote or backslash (any other is read alone)
    not_refused = b"".join(b"(?!" + re.escape(name.encode()) + b'")' for name in sorted(refused))
    return rb'\{"event":"' + not_refused + rb'[ !#-\[\]-~]*","data":"' + data + rb'"\}'


def _lines_of(items: list) -> bool:
    """Whether every item is an event whose data is the bytes that arrived (no comment
    among them: a marker is read alone, in its place)."""
    if isinstance(items, EventRun):
        return True
    return SseComment not in set(map(type, items)) and type(items[0].data) is bytes


def _lines_regex(pattern: bytes, others: bool = False):
    """``pattern`` over whole lines (with ``others``: or any other line, which captures
    nothing), compiled once."""
    key = (pattern, others)
    regex = _COMPILED.get(key)
    if regex is None:
        if len(_COMPILED) >= _MAX_COMPILED:
            _COMPILED.clear()
        regex = _COMPILED[key] = re.compile(b"^(?:" + pattern + (b"|.*)$" if others else b")$"), re.M)
    return regex


def _found(items, regex) -> list | None:
    """``regex.findall`` over the items' data joined by LF; None unless there is one match
    per item. (A regex made with ``others`` matches each line once, ``^`` to ``$``, and
    no pattern spans lines: a run's events, which are not counted, are not checked.)"""
    if isinstance(items, EventRun):
        return regex.findall(items.data)
    found = regex.findall(b"\n".join(map(_DATA, items)))
    return found if len(found) == len(items) else None


def _texts(found: list) -> list | None:
    """The strings of the literals ``found`` (an empty one where a line did not match);
    None if one is not a valid JSON string (a bad escape, invalid UTF-8)."""
    try:
        return loads(b"[" + b",".join([lit or b'""' for lit in map(_LITERAL, found)]) + b"]")
    except JSONDecodeError:
        return None
