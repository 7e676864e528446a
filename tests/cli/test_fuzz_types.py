"""Every value read from input is type-checked where it is read.

For every provider's recorded streams (and the channel records and frame records made
from them), each JSON value in turn is replaced by a value of every other JSON type. The
stages must then give their records ending in one ``End``, or bad input (exit 5) with the
byte offset; never another exception (an internal error, exit 1).
"""

from __future__ import annotations

import subprocess

import orjson
import pytest

from sse_tool.errors import BadInput, SseToolError
from sse_tool.model import End
from sse_tool.pipeline import RecordReader

from ..marks import spread
from ..support import SSE_TOOL, clean_env, stream_files

#: a value of each JSON type
SWAPS = [None, True, 0, 1.5, -7, "", "text", [], [1, "a"], {}, {"k": "v"}]
JSON_EVENT_STARTS = (b"data: {", b"data: [", b"{", b"[")


def _paths(value, path=()):
    """Every path to a value inside ``value`` (the root excluded)."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        yield (*path, key)
        yield from _paths(child, (*path, key))


def _replace(value, path, new):
    if not path:
        return new
    copy = value.copy()
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


def _same_type(a, b) -> bool:
    return type(a) is type(b) or (a is None and b is None)


def swapped(doc):
    """``doc`` with one value replaced by one of another JSON type, every way."""
    for path in _paths(doc):
        old = doc
        for key in path:
            old = old[key]
        for new in SWAPS:
            if not _same_type(old, new):
                yield _replace(doc, path, new)


def json_events(data: bytes) -> list[tuple[int, int, object]]:
    """(start, end, parsed JSON) of each SSE data line or JSON line holding an object."""
    out = []
    pos = 0
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        text = body[6:] if body.startswith(b"data: ") else body
        if text[:1] in (b"{", b"["):
            try:
                out.append((pos + len(body) - len(text), pos + len(body), orjson.loads(text)))
            except orjson.JSONDecodeError:
                pass
        pos += len(line)
    return out


def read(data: bytes, provider: str = "auto") -> list:
    reader = RecordReader(provider)
    records = reader.feed(data)
    return records + reader.close()


def check(data: bytes, provider: str = "auto") -> None:
    try:
        records = read(data, provider)
    except BadInput as exc:
        assert exc.offset is not None, str(exc)
        return
    except SseToolError:
        return
    ends = [r for r in records if isinstance(r, End)]
    assert len(ends) == 1 and records[-1] is ends[0]


def check_every(streams) -> None:
    for variant in streams:
        try:
            check(variant)
        except AssertionError:
            raise
        except Exception as exc:  # what an internal error (exit 1) would be
            pytest.fail(f"{type(exc).__name__}: {exc}\n{variant[:600]!r}")


def variants(data: bytes, limit_events: int = 12):
    """The stream with one value of one of its first JSON events swapped, every way."""
    if data.lstrip()[:1] == b"[":  # a JSON array: its elements are the events
        array = orjson.loads(data)
        for i, doc in enumerate(array[:limit_events]):
            for new in swapped(doc):
                yield orjson.dumps([*array[:i], new, *array[i + 1:]])
        return
    for start, end, doc in json_events(data)[:limit_events]:
        for new in swapped(doc):
            yield data[:start] + orjson.dumps(new) + data[end:]


def _complete_array(path) -> bool:
    try:
        return path.suffix != ".json" or isinstance(orjson.loads(path.read_bytes()), list)
    except orjson.JSONDecodeError:
        return False


STREAMS = [p for p in stream_files() if p.stat().st_size < 40000 and _complete_array(p)]


@pytest.mark.parametrize("path", spread(STREAMS, 2, ids=lambda p: f"{p.parent.name}/{p.name}"))
def test_every_value_of_every_type_in_provider_events_is_checked(path):
    data = path.read_bytes()
    check_every(variants(data))


def _records_of(path) -> bytes:
    reader = RecordReader()
    data = path.read_bytes()
    from sse_tool.model import to_record

    return b"".join(orjson.dumps(to_record(r)) + b"\n" for r in reader.feed(data) + reader.close())


@pytest.mark.parametrize("path", STREAMS[::3], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_value_of_every_type_in_channel_records_is_checked(path):
    data = _records_of(path)
    check_every(variants(data, limit_events=40))


@pytest.mark.parametrize("args, data", [
    (["normalize"], b'data: {"type":[]}\n\n'),
    (["render"], b'{"type":"delta","channel":"answer","text":5}\n'),
    (["normalize"], b'{"type":"end","status":"error","error":"boom"}\n'),
    (["render"], b'{"type":"tool_call","index":0,"id":"c","name":"f","arguments":["a"]}\n'),
    (["render", "--provider", "openai"],
     b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c",'
     b'"function":{"name":"f","arguments":["x"]}}]}}]}\n\ndata: [DONE]\n\n'),
], ids=["type-list", "text-number", "error-string", "arguments-list", "openai-arguments-list"])
def test_the_reported_wrong_types_are_bad_input_with_the_offset(args, data):
    p = subprocess.run([*SSE_TOOL, *args], input=data, capture_output=True, env=clean_env(), timeout=60)
    assert p.returncode == 5, p.stderr
    assert b"at byte " in p.stderr and b"Traceback" not in p.stderr


def _frame_records_of(path) -> bytes:
    from sse_tool.framing import AutoFramer
    from sse_tool.wire import dumps, event_record

    framer = AutoFramer()
    items = framer.feed(path.read_bytes())
    framer.close()
    return b"".join(dumps(event_record(i, offsets=True)) for i in items)


@pytest.mark.parametrize("path", STREAMS[1::3], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_value_of_every_type_in_frame_records_is_checked(path):
    data = _frame_records_of(path)
    check_every(variants(data, limit_events=30))
