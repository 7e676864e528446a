"""JsonArrayParser: a streamed JSON array (Gemini without alt=sse), one event per element."""

from __future__ import annotations

import json

import pytest

from sse_tool.errors import BadInput, EventTooLarge
from sse_tool.jsonarray import JsonArrayParser

from ..support import FIXTURES


def parse(*chunks: bytes, **options):
    parser = JsonArrayParser(**options)
    items = []
    for chunk in chunks:
        items += parser.feed(chunk)
    return items, parser.close()


def every_chunking(stream: bytes):
    whole = parse(stream)
    for i in range(len(stream) + 1):
        assert parse(stream[:i], stream[i:]) == whole, f"cut at {i}"
    assert parse(*[stream[i : i + 1] for i in range(len(stream))]) == whole
    return whole


TRICKY = (
    b'[{"text": "a ] b [ c } { d", "q": "say \\"hi\\" ]"},\n'
    b' {"nested": [[1, [2]], {"x": [3]}], "esc": "back\\\\slash"} ,\r\n'
    b' [1, 2, [3]], "a \\"string\\" element", 42, -1.5e3, true, null\n]'
)


def test_elements_are_framed_exactly_with_brackets_and_quotes_inside_strings():
    items, end = every_chunking(TRICKY)
    assert [json.loads(e.data) for e in items] == json.loads(TRICKY)
    assert all(e.event == "message" for e in items) and end.is_complete


def test_each_element_text_is_its_exact_bytes():
    items, _ = parse(TRICKY)
    assert [TRICKY[e.offset : e.end].decode() for e in items] == [e.data for e in items]


def test_an_element_is_returned_by_the_feed_that_completes_it():
    parser = JsonArrayParser()
    assert parser.feed(b'[{"a": 1') == []
    assert [e.data for e in parser.feed(b'}, {"b"')] == ['{"a": 1}']


def test_an_array_not_closed_is_truncated():
    items, end = every_chunking(b'[{"a": 1}, {"b": 2}')
    assert len(items) == 2 and end.truncated == "input ended before the JSON array was closed"


def test_an_empty_array_is_complete():
    assert every_chunking(b" [ ] \n") == ([], parse(b" [ ] \n")[1])
    assert parse(b"[]")[1].is_complete


def test_a_leading_bom_is_stripped():
    items, end = parse(b"\xef\xbb\xbf[1]")
    assert [e.data for e in items] == ["1"] and items[0].offset == 4 and end.is_complete


@pytest.mark.parametrize("garbage", [b"garbage", b"{}", b"[,1]", b"[1 2]", b"[1]x"])
def test_garbage_is_bad_input(garbage):
    with pytest.raises(BadInput):
        parse(garbage)


def test_elements_before_garbage_are_handed_out_first():
    parser = JsonArrayParser()
    assert [e.data for e in parser.feed(b'[{"a": 1}, 2 3')] == ['{"a": 1}', "2"]
    with pytest.raises(BadInput):
        parser.feed(b"]")
    with pytest.raises(BadInput):
        parser.close()


def test_an_element_over_the_limit_stops_with_event_too_large():
    parser = JsonArrayParser(max_event_size=10)
    assert [e.data for e in parser.feed(b'[1, "' + b"x" * 20 + b'"]')] == ["1"]
    with pytest.raises(EventTooLarge):
        parser.close()


def test_the_gemini_fixture_frames_into_its_elements():
    raw = (FIXTURES / "gemini" / "json-array-no-alt-sse.json").read_bytes()
    items, end = every_chunking(raw)
    assert [json.loads(e.data) for e in items] == json.loads(raw) and end.is_complete


def test_a_marker_after_a_lone_cr_is_read_as_a_marker():
    # fetch cut between the CR and the LF of a CRLF array writes its marker right after the CR
    from sse_tool.marker import exit_marker
    from sse_tool.model import Status
    from sse_tool.pipeline import RecordReader

    data = b'[{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}\r\n,\r'
    data += exit_marker(8, "fetch", "idle timeout").line()
    for chunks in ([data], [data[:len(data) - 30], data[len(data) - 30:]], [bytes([b]) for b in data]):
        reader = RecordReader()
        records = [r for chunk in chunks for r in reader.feed(chunk)] + reader.close()
        end = records[-1]
        assert end.exit == 8 and end.status is not Status.COMPLETE, end
        assert [r.text for r in records if hasattr(r, "text")] == ["Hi"]
