"""The batch readers (``sse_tool/batch.py``) give what reading each item alone gives.

normalize reads ``frame``'s records of a whole chunk at once where it can: the adapter's
common delta event matched inside the records' strings (``frame_deltas``); each other
record is read alone, its plain event and data parsed once. The reference is
``RecordReader(fast=False)``, which reads every record with ``load_event`` and every event
with ``Normalizer.feed``: the same records, or the same bad input at the same offset, with
the good records before it. A first chunk of one line lets the rest arrive as one batch
with the provider already known (the first batch of a stream is read item by item).
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_tool import batch

from ..support import stream_files
from .test_every_cut_normalize import cuts_for
from .test_fast_paths import frame_records, outcome

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]
#: frame's records up to this size are also cut in two at every byte
SMALL = 3000


def chunkings(data: bytes) -> list[list[bytes]]:
    """The first line alone then the rest (one batch), and runs of a few sizes."""
    first = data.find(b"\n") + 1
    out = [[data], [data[:first], data[first:]]]
    for size in (1, 7, 64, 4096):
        out.append([data[i:i + size] for i in range(0, len(data), size)])
    return out


def assert_same(data: bytes, **options) -> None:
    for chunks in chunkings(data):
        assert outcome(chunks, True, **options) == outcome(chunks, False, **options), [len(c) for c in chunks]


@pytest.mark.parametrize("path", FILES)
def test_frames_records_of_every_fixture_read_the_same_in_batches(path):
    data = frame_records(path.read_bytes())
    if not data:
        return
    assert_same(data)
    if len(data) <= SMALL:
        for cut in range(1, len(data)):
            chunks = [data[:cut], data[cut:]]
            assert outcome(chunks, True) == outcome(chunks, False), f"cut at byte {cut}"
    else:
        for cut in cuts_for(data)[::7]:
            chunks = [data[:cut], data[cut:]]
            assert outcome(chunks, True) == outcome(chunks, False), f"cut at byte {cut}"


def test_the_fixtures_reach_the_batch_reader(monkeypatch):
    """The tests above read real streams with the batch readers, not only item by item
    (most recorded Anthropic deltas are padded with spaces, which only the per-item path
    reads: the samples' are not)."""
    read = [0]

    def counting(items, *args):
        result = batch.frame_deltas(items, *args)
        read[0] += result is not None and sum(x is not None for x in result)
        return result

    monkeypatch.setattr("sse_tool.pipeline.frame_deltas", counting)
    for path in stream_files():
        data = frame_records(path.read_bytes())
        if data:
            first = data.find(b"\n") + 1
            outcome([data[:first], data[first:]], True)
    assert read[0] > 20


# -- hostile lines ------------------------------------------------------------------------

TEXT = st.text(alphabet=st.sampled_from('ab "\\/é\u2028😀\n\t\x00\x7f{}[],:'), max_size=6)


def line(record) -> bytes:
    return orjson.dumps(record)


def anthropic_delta(text: str, kind: str = "text", index: int = 0) -> str:
    return orjson.dumps({"type": "content_block_delta", "index": index,
                         "delta": {"type": f"{kind}_delta", kind: text}}).decode()


def hand_escaped(data: str, which: str) -> str:
    """The same JSON written another way: a character as a \\u escape, a slash escaped."""
    return data.replace(which, "\\u%04x" % ord(which)) if which in data else data.replace("/", "\\/")


@st.composite
def anthropic_lines(draw) -> bytes:
    text, kind = draw(TEXT), draw(st.sampled_from(["text", "thinking"]))
    data = anthropic_delta(text, kind, draw(st.sampled_from([0, 1, 12])))
    event = draw(st.sampled_from(["content_block_delta", "message", "é", 'a"b', "", "error"]))
    choice = draw(st.integers(0, 15))
    if choice <= 4:
        return line({"event": event, "data": data})
    if choice == 5:  # extra keys, another key order, spaces
        return draw(st.sampled_from([
            line({"event": event, "data": data, "id": "3"}), line({"data": data, "event": event}),
            line({"event": event, "data": data, "retry": 5}), b'{"event": "x", "data": ' + line(data) + b"}",
            line({"event": event, "data": data[:-1], "offset": 5, "end": 9}),  # frame --offsets
        ]))
    if choice == 6:  # escapes written otherwise, inside the data or in the record's string
        inner = hand_escaped(data, draw(st.sampled_from(['"', "é", "a", "t"])))
        outer = line({"event": event, "data": inner})
        return outer.replace(b'\\"', b"\\u0022", draw(st.integers(0, 3)))
    if choice == 7:  # not a string, or frame --json's parsed data
        return line({"event": event, "data": draw(st.sampled_from([5, None, [], orjson.loads(data)]))})
    if choice == 8:  # comments and markers
        return draw(st.sampled_from([b'{"comment":"x"}', b": sse-tool reset", b": sse-tool note fetch: hi",
                                     b'{"comment":"sse-tool reset"}', b": not a marker"]))
    if choice == 9:  # invalid UTF-8, a raw control character, a lone backslash in the line
        raw = line({"event": event, "data": data})
        at = draw(st.integers(0, len(raw)))
        return raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x01", b"\\"])) + raw[at:]
    if choice == 10:  # broken JSON: the record's, or its data's
        raw = line({"event": event, "data": data})
        return draw(st.sampled_from([raw[:-1], raw[:-3] + b'"}', line({"event": event, "data": data[:-1]})]))
    if choice == 11:  # two records on a line, a line in the data, an empty text
        return draw(st.sampled_from([
            line({"event": event, "data": data}) + b"," + line({"event": event, "data": data}),
            line({"event": event, "data": data + "\n" + data}), line({"event": event, "data": anthropic_delta("")}),
        ]))
    if choice == 12:  # lone surrogates and bad escapes inside the text
        bad = draw(st.sampled_from(["\\ud800", "\\x", "\\", '\\"']))
        return line({"event": event, "data": data.replace('":"', '":"' + bad, 1)})
    return line({"event": "content_block_delta", "data": draw(st.sampled_from([
        '{"type":"ping"}', '{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
        '{"type":"message_stop"}', '{"type":"content_block_stop","index":0}', "[DONE]", "",
        '{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}',
    ]))})


ANTHROPIC_HEAD = [
    line({"event": "message_start", "data": '{"type":"message_start","message":{"model":"m"}}'}),
    line({"event": "content_block_start",
          "data": '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'}),
]
ANTHROPIC_TAIL = line({"event": "message_stop", "data": '{"type":"message_stop"}'})


@st.composite
def openai_lines(draw) -> bytes:
    content = draw(TEXT)
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": draw(st.sampled_from(["m", "m", "other"])),
             "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}
    data = orjson.dumps(chunk).decode()
    event = draw(st.sampled_from(["message", "message", "error", "é"]))
    choice = draw(st.integers(0, 8))
    if choice <= 3:
        return line({"event": event, "data": data})
    if choice == 4:
        return draw(st.sampled_from([line({"event": event, "data": data, "id": "1"}),
                                     line({"event": event, "data": data[:-1], "offset": 3})]))
    if choice == 5:
        raw = line({"event": event, "data": data})
        return draw(st.sampled_from([raw[:-2], raw + b"," + raw, raw.replace(b"c", b"\xff", 1),
                                     line({"event": event, "data": 5})]))
    if choice == 6:
        return draw(st.sampled_from([b": sse-tool reset", b'{"comment":"x"}']))
    if choice == 7:
        return line({"event": event, "data": hand_escaped(data, draw(st.sampled_from(['"', "a"])))})
    return line({"event": "message", "data": draw(st.sampled_from(["[DONE]", '{"choices":[]}', data[:-1]]))})


OPENAI_HEAD = [line({"event": "message", "data": '{"model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}'})]
OPENAI_TAIL = line({"event": "message", "data": "[DONE]"})


def assert_batches_read_the_same(head: list[bytes], lines: list[bytes], tail: bytes, cut: int) -> None:
    body = b"".join(x + b"\n" for x in [*lines, tail])
    start = b"".join(x + b"\n" for x in head)
    data = start + body
    for think_tags in ("auto", "off"):
        for chunks in ([start, body], [data], [data[:len(start) + cut], data[len(start) + cut:]]):
            fast = outcome(chunks, True, think_tags=think_tags)
            assert fast == outcome(chunks, False, think_tags=think_tags), chunks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(anthropic_lines(), min_size=1, max_size=12), st.integers(0, 400))
def test_hostile_frame_records_of_anthropic_read_the_same_in_batches(lines, cut):
    assert_batches_read_the_same(ANTHROPIC_HEAD, lines, ANTHROPIC_TAIL, cut)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(openai_lines(), min_size=1, max_size=12), st.integers(0, 400))
def test_hostile_frame_records_of_openai_read_the_same_in_batches(lines, cut):
    assert_batches_read_the_same(OPENAI_HEAD, lines, OPENAI_TAIL, cut)


@pytest.mark.parametrize("lines", [
    # good records, then one no JSON reader takes: the good ones first, then the error
    [anthropic_delta("a"), anthropic_delta("b")],
    [anthropic_delta("<think>a"), anthropic_delta("b</think>c")],
])
def test_a_bad_line_mid_batch_comes_after_the_good_records(lines):
    records = [line({"event": "content_block_delta", "data": d}) for d in lines]
    body = b"".join(x + b"\n" for x in [*records, b'{"event":"x","data":', *records])
    head = b"".join(x + b"\n" for x in ANTHROPIC_HEAD)
    fast = outcome([head, body], True)
    assert fast == outcome([head, body], False)
    good, what, _, offset = fast
    assert what == "bad input" and offset == len(head) + len(b"".join(x + b"\n" for x in records))
    assert good[-1].text in ("b", "c")


DELTA = line({"event": "content_block_delta", "data": anthropic_delta("x")})


@pytest.mark.parametrize("lines", [
    # lines that are no record each, yet joined make as many records as lines
    [b'{"event":"a"', b'"data":"b"}', DELTA + b"," + DELTA],
    [DELTA + b"," + DELTA, b'{"event":"a"', b'"data":"b"}'],
    [b'{"event":"a","data":"b"', b"}", DELTA + b"," + DELTA],
    [DELTA[:-1], b'}', DELTA],
])
def test_records_over_two_lines_are_not_read_as_one(lines):
    assert_batches_read_the_same(ANTHROPIC_HEAD, [DELTA, *lines, DELTA], ANTHROPIC_TAIL, 0)
    assert_batches_read_the_same(OPENAI_HEAD, lines, OPENAI_TAIL, 0)


@pytest.mark.parametrize("event", [b"a\x01b", b"a\\qb", b"a\\u00e9b", b"a\xffb", b"a\xc3\xa9b", b"a\\"])
def test_odd_event_names_before_a_delta_read_the_same_in_batches(event):
    odd = DELTA.replace(b"content_block_delta", event, 1)
    assert_batches_read_the_same(ANTHROPIC_HEAD, [DELTA, odd, DELTA], ANTHROPIC_TAIL, 0)


@pytest.mark.parametrize("text", ['a"b', "\\", "é\u2028", "\n", "\\u0041", "😀", '\\"'])
def test_a_text_escaped_twice_is_read_back_once(text):
    data = anthropic_delta(text)
    items = [type("Item", (), {"data": line({"event": "content_block_delta", "data": data})})()] * 2
    from sse_tool.providers.anthropic import Anthropic

    ready = batch.frame_deltas(items, *Anthropic.quick_lines)
    assert ready is not None and [d.text for d in ready] == [text, text]
