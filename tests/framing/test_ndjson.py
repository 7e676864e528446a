"""NdjsonParser: one event per non-empty line; a last line without newline is truncation."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from sse_tool.errors import EventTooLarge
from sse_tool.ndjson import NdjsonParser


def parse(*chunks: bytes, **options):
    parser = NdjsonParser(**options)
    items = []
    for chunk in chunks:
        items += parser.feed(chunk)
    return items, parser.close()


def every_chunking(stream: bytes, **options):
    whole = parse(stream, **options)
    for i in range(len(stream) + 1):
        assert parse(stream[:i], stream[i:], **options) == whole, f"cut at {i}"
    return whole


def test_each_line_is_an_event_with_crlf_and_blank_lines_tolerated():
    stream = b'{"a": 1}\n\r\n{"b": "\xc3\xb1"}\r\n  \n{"c": 3}\n'
    items, end = every_chunking(stream)
    assert [e.data for e in items] == ['{"a": 1}', '{"b": "ñ"}', '{"c": 3}'] and end.is_complete
    assert [stream[e.offset : e.end] for e in items] == [b'{"a": 1}', b'{"b": "\xc3\xb1"}', b'{"c": 3}']


def test_a_last_line_without_newline_is_truncation():
    items, end = every_chunking(b'{"a": 1}\n{"b": 2')
    assert len(items) == 1 and "no final newline" in end.truncated and end.offset == 16


def test_a_last_line_without_newline_that_is_whole_json_is_an_event():
    parser = NdjsonParser()
    assert len(parser.feed(b'{"a": 1}\n{"b": 2}')) == 1
    end = parser.close()
    assert end.is_complete and [i.data for i in end.items] == ['{"b": 2}']


def test_trailing_blanks_without_newline_are_not_truncation():
    assert parse(b'{"a": 1}\n  ')[1].is_complete


def test_a_leading_bom_is_stripped():
    items, _ = parse(b"\xef\xbb", b"\xbf{}\n")
    assert items[0].data == "{}" and items[0].offset == 3


@pytest.mark.parametrize("limit", [7, 8, 9, 10])
def test_the_limit_trips_at_the_same_line_whatever_the_chunking(limit):
    stream = b"{}\n12345678\r\n{}\n"

    def outcome(*chunks):
        parser, items = NdjsonParser(max_event_size=limit), []
        try:
            for chunk in chunks:
                items += parser.feed(chunk)
            return items, parser.close()
        except EventTooLarge as exc:
            return items, exc.offset

    whole = outcome(stream)
    for i in range(len(stream) + 1):
        assert outcome(stream[:i], stream[i:]) == whole, f"cut at {i}"


LINES = [b'{"a": 1}', b'{"b": "\xc3\xb1"}', b"", b"  ", b": sse-tool reset", b'["x"]', b" {}", b'"s"', b"{}\r"]


@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=12), st.integers(0, 3))
def test_raw_lines_read_a_chunk_at_once_as_decoded_lines_read_one_at_a_time(lines, first):
    # raw=True checks a whole chunk of lines at once (all starting with "{"?) to skip the
    # loop over them; raw=False reads each line alone: the same events, the data aside
    stream = b"".join(line + b"\n" for line in [*LINES[first:first + 1], *lines])
    raw, raw_end = parse(stream[:9], stream[9:], raw=True)
    each, each_end = parse(*(bytes([b]) for b in stream))
    assert [decoded(item) for item in raw] == each and raw_end == each_end


def decoded(item):
    """An event of a raw parser as the parser that decodes would make it."""
    return item._replace(data=item.data.decode()) if isinstance(getattr(item, "data", None), bytes) else item
