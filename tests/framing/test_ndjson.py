"""NdjsonParser: one event per non-empty line; a last line without newline is truncation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from sse_tool.errors import EventTooLarge
from sse_tool.ndjson import NdjsonParser
from sse_tool.runs import LineRun


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


@pytest.mark.parametrize("body", [
    b'{\n  "error": {\n    "code": 429,\n    "message": "slow down"\n  }\n}\n',  # a pretty-printed error body
    b'{"error": {\n  "code": 429\n}}\n', b'{"error":\n {"code": 429}}\n', b'{"code": 429,\n "message": "x"}\n',
])
def test_json_written_over_many_lines_is_read_as_one_value(body):
    items, end = every_chunking(body)
    assert [json.loads(e.data) for e in items] == [json.loads(body)] and end.truncated is None


@pytest.mark.parametrize("damage", [b'{"done": false', b'{"done": fals', b'{"a": "b"}}', b'{"message": {"content": "Hi"}'])
def test_a_broken_first_line_is_one_line_like_any_other_and_the_lines_after_it_are_read(damage):
    good = b'{"done": true}'
    first, _ = every_chunking(damage + b"\n" + good + b"\n")
    second, _ = every_chunking(good + b"\n" + damage + b"\n" + good + b"\n")
    assert [(e.data, e.offset) for e in first] == [(damage.decode(), 0), (good.decode(), len(damage) + 1)]
    assert [e.data for e in second] == [good.decode(), damage.decode(), good.decode()]


def test_a_leading_bom_is_stripped():
    items, _ = parse(b"\xef\xbb", b"\xbf{}\n")
    assert items[0].data == "{}" and items[0].offset == 3


@pytest.mark.parametrize("options", [{}, {"raw": True}, {"raw": True, "runs": True}])
@pytest.mark.parametrize("stream", [b"{}\n12345678\r\n{}\n", b"{}\n{}\n{12345678}\n{}\n{}\n{1}\n"])
@pytest.mark.parametrize("limit", [7, 8, 9, 10])
def test_the_limit_trips_at_the_same_line_whatever_the_chunking(limit, stream, options):
    def outcome(*chunks):
        parser, items = NdjsonParser(max_event_size=limit, **options), []
        try:
            for chunk in chunks:
                items += parser.feed(chunk)
            return items, parser.close()
        except EventTooLarge as exc:
            return items, exc.offset

    whole = outcome(stream)
    for i in range(len(stream) + 1):
        assert outcome(stream[:i], stream[i:]) == whole, f"cut at {i}"
        for j in range(i, len(stream) + 1):
            assert outcome(stream[:i], stream[i:j], stream[j:]) == whole, f"cut at {i} and {j}"


LINES = [b'{"a": 1}', b'{"b": "\xc3\xb1"}', b"", b"  ", b": sse-tool reset", b'["x"]', b" {}", b'"s"', b"{}\r"]


@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=12), st.integers(0, 3))
def test_raw_lines_read_a_chunk_at_once_as_decoded_lines_read_one_at_a_time(lines, first):
    # raw=True checks a whole chunk of lines at once (all starting with "{"?) to skip the
    # loop over them; raw=False reads each line alone: the same events, the data aside
    stream = b"".join(line + b"\n" for line in [*LINES[first:first + 1], *lines])
    raw, raw_end = parse(stream[:9], stream[9:], raw=True)
    each, each_end = parse(*(bytes([b]) for b in stream))
    assert [decoded(item) for item in raw] == each and raw_end == each_end


@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=12), st.integers(0, 3),
       st.lists(st.integers(0, 200), max_size=6))
def test_runs_of_lines_are_the_events_of_the_lines_read_one_at_a_time(lines, first, cuts):
    # runs=True hands a chunk of plain lines out as one LineRun, read lazily: as a
    # sequence it is the events raw=True makes, whatever the chunking
    stream = b"".join(line + b"\n" for line in [*LINES[first:first + 1], *lines])
    cuts = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    chunks = [stream[a:b] for a, b in zip(cuts, cuts[1:])]
    assert parse(*chunks, raw=True, runs=True) == parse(*chunks, raw=True) == parse(stream, raw=True)


def test_a_run_is_a_sequence_of_the_events_it_holds():
    parser = NdjsonParser(raw=True, runs=True)
    first = parser.feed(b'{"a": 1}\n')  # the first line decides many-line JSON: read alone
    run = parser.feed(b'{"b": 2}\n{"c": 3}\n{"d"')
    assert type(first) is list and type(run) is LineRun
    assert run.data == b'{"b": 2}\n{"c": 3}' and run.offset == 9 and len(run) == 2
    events = parse(b'{"a": 1}\n{"b": 2}\n{"c": 3}\n', raw=True)[0][1:]
    assert list(run) == run.events() == events and run[:] == events and run[1:] == events[1:]
    assert (run[0], run[1], run[-1], run[-2]) == (events[0], events[1], events[1], events[0])
    with pytest.raises(IndexError):
        run[2]
    assert [e.data for e in parser.feed(b': 3}\n')] == [b'{"d": 3}']  # the partial line goes on
    # a chunk with a marker, a blank line or a CR is read line by line, as without runs
    for chunk in (b'{}\n: sse-tool reset\n', b'{}\n\n{}\n', b'{}\r\n{}\n'):
        assert type(parser.feed(chunk)) is list


def decoded(item):
    """An event of a raw parser as the parser that decodes would make it."""
    return item._replace(data=item.data.decode()) if isinstance(getattr(item, "data", None), bytes) else item
