"""JSON Lines between the stages: one UTF-8 JSON object per line, written with orjson.

``frame`` writes event records::

    {"event": "content_block_delta", "data": "{\\"type\\":...}", "id": "42", "retry": 3000}

``id`` and ``retry`` appear once the stream has set them; ``offset``/``end`` (byte offsets
in the input: ``input[offset:end]`` is the event's text, its blank line excluded) and
parsed JSON ``data`` only when asked for (and only when parsing keeps it exact).
Comments, when asked for, are ``{"comment": "text"}``. A message of an AWS event stream
also has ``headers`` (its typed headers as JSON values); its ``data`` is the payload.
Later stages read these records back with ``load_event``.
"""

from __future__ import annotations

import re

import orjson

from .errors import BadInput
from .eventstream import EventMessage
from .sse import SseComment, SseEvent
from .typed import field


#: a JSON string literal, as a regex over bytes (it has no raw line end: JSON has none
#: inside a string); a line matched whole is read without parsing it first
JSON_STRING = rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
#: a JSON string of printable ASCII without escapes (the same bytes in a frame record's
#: string), and a JSON integer orjson reads (it takes at most 64 bits)
PLAIN = rb'"[ !#-\[\]-~]*"'
INT = rb'(?:0|[1-9][0-9]{0,17})'


# 19 digits in a row: perhaps an integer beyond the 64 bits orjson reads as one
_LONG_DIGITS = re.compile(r"[0-9]{19}")


def _exact(text: str) -> bool:
    """Whether parsing the JSON text ``text`` keeps every integer in it: orjson reads one
    beyond -2**63..2**64-1 as a float, which rounds it (an id, a seed); such data stays a
    string. Checked only where 19 digits stand in a row."""
    if _LONG_DIGITS.search(text) is None:
        return True
    import json

    def whole(literal: str) -> None:
        try:
            if -2**63 <= int(literal) <= 2**64 - 1:
                return
        except ValueError:  # (past int()'s digit limit)
            pass
        raise OverflowError

    try:
        json.loads(text, parse_int=whole)
    except OverflowError:
        return False
    except ValueError:  # not JSON: orjson says so too
        pass
    return True


def dumps(record: dict) -> bytes:
    """One record as a JSON line (UTF-8, ``\\n``-terminated)."""
    return orjson.dumps(record) + b"\n"


def event_record(item: SseEvent | EventMessage | SseComment, *, json_data: bool = False, offsets: bool = False) -> dict:
    if isinstance(item, SseComment):
        record = {"comment": item.text}
        if offsets:
            record["offset"] = item.offset
        return record
    data = item.data
    record = {"event": item.event, "data": data}
    # Only objects and arrays are parsed, so a string ``data`` is always the raw text
    # ("[DONE]" is not JSON and stays a string).
    if json_data and data[:1] in ("{", "[") and _exact(data):
        try:
            record["data"] = orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    if item.id is not None:
        record["id"] = item.id
    if item.retry is not None:
        record["retry"] = item.retry
    if type(item) is EventMessage:
        record["headers"] = item.headers
    if offsets:
        record["offset"] = item.offset
        record["end"] = item.end
    return record


def is_event_record(record: dict) -> bool:
    return "data" in record and "event" in record


def load_event(record: dict, offset: int = 0) -> SseEvent | EventMessage | SseComment:
    """An event record (as ``frame`` writes it) back into an event; every field is
    type-checked here (``BadInput`` names the one that is not what frame writes)."""
    if "comment" in record and "data" not in record:
        return SseComment(field(record, "comment", str, ""), field(record, "offset", int, offset))
    data = record.get("data")
    event = record.get("event", "message")
    if not isinstance(event, str) or data is None:
        raise BadInput("not an event record (needs string 'event' and 'data')", offset)
    if not isinstance(data, str):  # frame --json parsed it
        data = orjson.dumps(data).decode()
    headers = record.get("headers")
    if isinstance(headers, dict):  # an AWS event-stream message
        return EventMessage(event, data, None, None, record.get("offset", offset),
                            record.get("end", offset), headers)
    return SseEvent(
        event, data, field(record, "id", str), field(record, "retry", int),
        field(record, "offset", int, offset), field(record, "end", int, offset),
    )
