"""SseParser against the WHATWG event-stream rules, one rule per case.

Every table case is run whole, one byte at a time and cut in two at every position
(h11's ``tr()``): a rule that only holds for one chunking is not a rule.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.errors import EventTooLarge, SseToolError
from sse_tool.sse import MAX_RETRY, FrameEnd, SseComment, SseEvent, SseParser

BOM = b"\xef\xbb\xbf"


def parse(*chunks: bytes, **options) -> tuple[list, FrameEnd]:
    parser = SseParser(**options)
    items = []
    for chunk in chunks:
        items += parser.feed(chunk)
    return items, parser.close()


def every_chunking(stream: bytes, **options) -> tuple[list, FrameEnd]:
    """Parse ``stream`` whole, byte by byte and cut at every position; all must agree."""
    whole = parse(stream, **options)
    assert parse(*[stream[i : i + 1] for i in range(len(stream))], **options) == whole
    for i in range(len(stream) + 1):
        assert parse(stream[:i], stream[i:], **options) == whole, f"cut at {i}"
    return whole


def fields(items) -> list[tuple]:
    return [(e.event, e.data, e.id, e.retry) for e in items]


M = "message"

# (rule, stream, events as (event, data, id, retry), input ended on an event boundary)
RULES = [
    ("lf_line_endings", b"data: a\n\n", [(M, "a", None, None)], True),
    ("crlf_line_endings", b"data: a\r\n\r\n", [(M, "a", None, None)], True),
    ("lone_cr_line_endings", b"data: a\r\r", [(M, "a", None, None)], True),
    ("mixed_line_endings", b"data: a\r\ndata: b\rdata: c\n\n", [(M, "a\nb\nc", None, None)], True),
    ("cr_then_cr_is_a_line_end_and_a_blank_line", b"data: a\r\rdata: b\r\r",
     [(M, "a", None, None), (M, "b", None, None)], True),
    ("lf_then_cr_is_a_blank_line", b"data: a\n\r", [(M, "a", None, None)], True),
    ("comment_lines_are_ignored", b": hello\ndata: a\n: between\n\n", [(M, "a", None, None)], True),
    ("a_block_of_comments_dispatches_nothing", b": ping\n\n", [], True),
    ("field_with_no_colon_has_an_empty_value", b"data\n\n", [(M, "", None, None)], True),
    ("event_with_no_colon_means_message", b"event\ndata: x\n\n", [(M, "x", None, None)], True),
    ("exactly_one_space_is_stripped_after_the_colon", b"data:  two\n\n", [(M, " two", None, None)], True),
    ("no_space_after_the_colon", b"data:tight\n\n", [(M, "tight", None, None)], True),
    ("only_the_first_colon_splits", b"data: a: b:c\n\n", [(M, "a: b:c", None, None)], True),
    ("data_lines_are_joined_with_lf_and_the_last_lf_removed", b"data: a\ndata: b\ndata:\n\n",
     [(M, "a\nb\n", None, None)], True),
    ("no_dispatch_without_a_data_line", b"event: x\n\n", [], True),
    ("empty_data_dispatches_an_empty_string", b"data:\n\n", [(M, "", None, None)], True),
    ("event_defaults_to_message_and_resets_after_dispatch", b"event: a\ndata: 1\n\ndata: 2\n\n",
     [("a", "1", None, None), (M, "2", None, None)], True),
    ("event_resets_after_a_block_without_data", b"event: a\n\ndata: 2\n\n", [(M, "2", None, None)], True),
    ("empty_event_value_means_message", b"event: \ndata: x\n\n", [(M, "x", None, None)], True),
    ("the_last_event_field_wins", b"event: a\nevent: b\ndata: x\n\n", [("b", "x", None, None)], True),
    ("id_persists_as_the_last_event_id", b"id: 7\ndata: a\n\ndata: b\n\n",
     [(M, "a", "7", None), (M, "b", "7", None)], True),
    ("id_containing_nul_is_ignored", b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
     [(M, "a", "1", None), (M, "b", "1", None)], True),
    ("id_alone_resets_the_last_event_id", b"id: 1\ndata: a\n\nid\ndata: b\n\n",
     [(M, "a", "1", None), (M, "b", "", None)], True),
    ("id_from_a_block_without_data_still_applies", b"id: 5\n\ndata: a\n\n", [(M, "a", "5", None)], True),
    ("id_keeps_its_spaces_past_the_first", b"id:  x \ndata: a\n\n", [(M, "a", " x ", None)], True),
    ("retry_of_ascii_digits_is_kept", b"retry: 3000\ndata: a\n\n", [(M, "a", None, 3000)], True),
    ("retry_with_a_unit_is_ignored", b"retry: 3s\ndata: a\n\n", [(M, "a", None, None)], True),
    ("retry_negative_is_ignored", b"retry: -1\ndata: a\n\n", [(M, "a", None, None)], True),
    ("retry_empty_is_ignored", b"retry:\ndata: a\n\n", [(M, "a", None, None)], True),
    ("retry_with_a_trailing_space_is_ignored", b"retry: 10 \ndata: a\n\n", [(M, "a", None, None)], True),
    ("retry_of_non_ascii_digits_is_ignored", "retry: ３\ndata: a\n\n".encode(), [(M, "a", None, None)], True),
    ("retry_is_kept_from_a_block_that_dispatched_nothing", b"retry: 10\n\ndata: a\n\n",
     [(M, "a", None, 10)], True),
    ("retry_keeps_the_last_valid_value", b"retry: 10\nretry: x\ndata: a\n\n", [(M, "a", None, 10)], True),
    ("retry_up_to_64_bits_is_kept", b"retry: %d\ndata: a\n\n" % MAX_RETRY, [(M, "a", None, MAX_RETRY)], True),
    ("retry_beyond_64_bits_is_ignored", b"retry: %d\ndata: a\n\n" % (MAX_RETRY + 1), [(M, "a", None, None)], True),
    # base ten: leading zeros do not count toward the 64 bits (nor toward int()'s digit limit)
    ("retry_with_leading_zeros_is_its_value", b"retry: 0001000\ndata: a\n\n", [(M, "a", None, 1000)], True),
    ("retry_of_zeros_is_zero", b"retry: 000\ndata: a\n\n", [(M, "a", None, 0)], True),
    ("retry_up_to_64_bits_after_many_zeros_is_kept", b"retry: " + b"0" * 5000 + b"%d\ndata: a\n\n" % MAX_RETRY,
     [(M, "a", None, MAX_RETRY)], True),
    ("retry_of_thousands_of_digits_is_ignored", b"retry: " + b"9" * 5000 + b"\ndata: a\n\n",
     [(M, "a", None, None)], True),
    ("unknown_fields_are_ignored", b"foo: bar\ndata: a\n\n", [(M, "a", None, None)], True),
    ("field_names_are_case_sensitive", b"Data: a\n\n", [], True),
    ("a_leading_bom_is_stripped", BOM + b"data: a\n\n", [(M, "a", None, None)], True),
    ("a_second_bom_is_kept_and_spoils_the_field_name", BOM + BOM + b"data: a\n\n", [], True),
    ("a_bom_after_the_start_is_not_stripped", b"data: a\n\n" + BOM + b"data: b\n\n",
     [(M, "a", None, None)], True),
    ("a_bom_inside_data_is_kept", b"data: " + BOM + b"x\n\n", [(M, "\ufeffx", None, None)], True),
    ("nul_in_data_is_kept", b"data: a\x00b\n\n", [(M, "a\x00b", None, None)], True),
    ("unicode_line_separators_do_not_end_lines", "data: a\u2028b\x85c\u2029d\n\n".encode(),
     [(M, "a\u2028b\x85c\u2029d", None, None)], True),
    ("form_feed_and_vertical_tab_do_not_end_lines", b"data: a\x0bb\x0cc\n\n", [(M, "a\x0bb\x0cc", None, None)], True),
    ("invalid_utf8_becomes_replacement_characters", b"data: \xff\xfe\n\n", [(M, "\ufffd\ufffd", None, None)], True),
    ("a_cut_four_byte_sequence_is_one_replacement_character", b"data: \xf0\x9f\x9aX\n\n",
     [(M, "\ufffdX", None, None)], True),
    ("an_encoded_surrogate_is_three_replacement_characters", b"data: \xed\xa0\x80\n\n",
     [(M, "\ufffd" * 3, None, None)], True),
    ("accents_and_astral_characters_survive_any_cut", "event: café\ndata: ñandú 🚀\n\n".encode(),
     [("café", "ñandú 🚀", None, None)], True),
    ("unterminated_event_at_end_of_input_is_discarded", b"data: a\n\ndata: b\n", [(M, "a", None, None)], False),
    ("unterminated_line_at_end_of_input_is_discarded", b"data: a\n\ndata: b", [(M, "a", None, None)], False),
    ("a_trailing_comment_is_not_an_event", b"data: a\n\n: bye\n", [(M, "a", None, None)], True),
    ("a_trailing_unknown_field_is_inside_an_event", b"data: a\n\nfoo\n", [(M, "a", None, None)], False),
    ("empty_input_is_complete", b"", [], True),
    ("blank_lines_alone_are_complete", b"\n\r\n\r", [], True),
    # The httpx-sse phantom event (its issue #35): a blank line while an id is sticky must
    # not dispatch anything, since no data line was seen.
    ("a_blank_line_with_a_sticky_id_and_no_data_dispatches_nothing", b"id: 1\ndata: a\n\n\n: ping\n\n\n",
     [(M, "a", "1", None)], True),
]


@pytest.mark.parametrize(("stream", "expected", "complete"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_spec_rule(stream, expected, complete):
    items, end = every_chunking(stream)
    assert fields(items) == expected
    assert end.is_complete is complete


# The examples of the WHATWG HTML standard, section "Event stream interpretation".
def test_whatwg_example_1_three_data_lines_make_one_event():
    items, end = every_chunking(b"data: YHOO\ndata: +2\ndata: 10\n\n")
    assert fields(items) == [(M, "YHOO\n+2\n10", None, None)] and end.is_complete


def test_whatwg_example_2_ids_and_a_leading_space():
    stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
    items, end = every_chunking(stream)
    assert fields(items) == [
        (M, "first event", "1", None),
        (M, "second event", "", None),
        (M, " third event", "", None),
    ]
    assert end.is_complete


def test_whatwg_example_3_empty_data_and_a_lone_newline():
    items, end = every_chunking(b"data\n\ndata\ndata\n\ndata:")
    assert fields(items) == [(M, "", None, None), (M, "\n", None, None)]
    assert not end.is_complete  # "the last block is discarded"


def test_whatwg_example_4_a_space_after_the_colon_is_optional():
    items, _ = every_chunking(b"data:test\n\ndata: test\n\n")
    assert fields(items) == [(M, "test", None, None)] * 2


# Chunk boundaries named in the spec's tricky places.
def test_crlf_split_across_chunks_is_one_terminator():
    items, end = parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")
    assert fields(items) == [(M, "a\nb", None, None)] and end.is_complete


def test_cr_ending_a_chunk_then_cr_dispatches_on_the_second_chunk():
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert fields(parser.feed(b"\r")) == [(M, "a", None, None)]


def test_cr_ending_a_chunk_then_lf_is_not_a_blank_line():
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n") == []
    assert fields(parser.feed(b"\r\n")) == [(M, "a", None, None)]


def test_bom_split_across_chunks_is_stripped():
    assert fields(parse(b"\xef", b"\xbb", b"\xbf", b"data: a\n\n")[0]) == [(M, "a", None, None)]


def test_an_incomplete_bom_is_not_stripped():
    items, _ = parse(b"\xef\xbb", b"data: a\n\n")
    assert items == []  # the field name is "\ufffddata"


def test_a_lone_partial_bom_at_the_end_is_a_cut_line():
    assert not parse(b"\xef\xbb")[1].is_complete


def test_an_event_is_not_interpreted_before_its_blank_line():
    parser = SseParser()
    assert parser.feed(b"event: x\ndata: a\n") == []
    assert fields(parser.feed(b"\n")) == [("x", "a", None, None)]


def test_an_event_is_returned_by_the_feed_that_completes_it():
    parser = SseParser()
    assert fields(parser.feed(b"data: a\n\ndata: b")) == [(M, "a", None, None)]


def test_truncation_says_why_and_where():
    _, end = parse(b"data: a\n\ndata: b")
    assert end.truncated == "input ended in the middle of a line" and end.offset == 16
    _, end = parse(b"data: a\n\nid: 1\n")
    assert "inside an event" in end.truncated and end.offset == 15


def test_offsets_point_at_the_first_field_line_and_the_blank_line():
    stream = b": c\nid: 1\ndata: a\n\r\n: d\n\ndata: b\r\n\r\n"
    items, _ = every_chunking(stream, comments=True)
    comment, first, second, third = items
    assert comment == SseComment("c", 0)
    assert (first.offset, first.end) == (4, 18)
    assert stream[first.offset : first.end] == b"id: 1\ndata: a\n"
    assert second == SseComment("d", 20)
    assert stream[third.offset : third.end] == b"data: b\r\n"


def test_offsets_count_a_stripped_bom():
    items, end = parse(BOM + b"data: a\n\n")
    assert (items[0].offset, items[0].end, end.offset) == (3, 11, 12)


def test_comments_are_reported_when_asked_with_one_space_stripped():
    items, _ = every_chunking(b": one\n:two\n:  three\n:\n\n", comments=True)
    assert [c.text for c in items] == ["one", "two", " three", ""]


def test_a_comment_is_reported_when_its_line_ends():
    parser = SseParser(comments=True)
    assert parser.feed(b"data: a\n: keep-alive\n") == [SseComment("keep-alive", 8)]


def test_events_are_named_tuples_with_keywords():
    event = SseEvent(event="x", data="y")
    assert (event.id, event.retry, event.offset, event.end) == (None, None, 0, 0)


# Limits: memory is bounded by the largest event.
def test_an_event_over_the_limit_stops_with_event_too_large():
    parser = SseParser(max_event_size=64)
    good = parser.feed(b"data: small\n\ndata: " + b"x" * 100 + b"\n\n")
    assert fields(good) == [(M, "small", None, None)]  # what came before is handed out
    with pytest.raises(EventTooLarge) as info:
        parser.feed(b"data: more\n\n")
    assert info.value.offset == 13 and info.value.exit_code == 5
    with pytest.raises(EventTooLarge):
        parser.close()


def test_a_line_growing_past_the_limit_stops_without_waiting_for_its_end():
    parser = SseParser(max_event_size=1000)
    with pytest.raises(EventTooLarge):
        for _ in range(100):
            parser.feed(b"x" * 16)


@pytest.mark.parametrize("limit", [5, 10, 11, 12, 13, 20, 21, 22, 23, 24])
@pytest.mark.parametrize("newline", [b"\r\n", b"\n"], ids=["crlf", "lf"])
def test_the_limit_trips_at_the_same_event_whatever_the_chunking(limit, newline):
    stream = b"data: abc\r\n\r\n: c\r\ndata: defgh\r\ndata: i\r\n\r\ndata: j\n\n".replace(b"\r\n", newline)
    stream += b"event: e\ndata: k\ndata: lmnopq\n\ndata: r\n\n"  # one event of many lines, then one more

    def outcome(*chunks):
        parser, items = SseParser(max_event_size=limit, comments=True), []
        try:
            for chunk in chunks:
                items += parser.feed(chunk)
            return items, parser.close()
        except EventTooLarge as exc:
            return items, exc.offset

    whole = outcome(stream)
    assert outcome(*[stream[i : i + 1] for i in range(len(stream))]) == whole
    for i in range(len(stream) + 1):
        assert outcome(stream[:i], stream[i:]) == whole, f"cut at {i}"


# Cost: linear whatever the chunking, shown by structure rather than by time.
def test_an_8mb_data_line_in_16_byte_chunks_is_kept_as_pieces_and_joined_once():
    line = b"x" * (8 * 2**20)
    parser = SseParser()
    assert parser.feed(b"event: big\ndata: ") == []
    for i in range(0, len(line), 16):
        assert parser.feed(line[i : i + 16]) == []
        if i % 2**20 == 0:
            # one piece per chunk, none of them a copy of what came before
            assert len(parser._pending) == 2 + i // 16
            assert max(map(len, parser._pending)) <= 17
    (event,) = parser.feed(b"\n\n")
    assert event.event == "big" and len(event.data) == len(line)
    assert parser._pending == [] and parser.close().is_complete


@pytest.mark.parametrize("comments", [False, True], ids=["deferred", "line-by-line"])
def test_one_event_of_200000_data_lines_in_16_byte_chunks_keeps_no_growing_buffer(comments):
    body = b"".join(b"data: %06d\n" % i for i in range(200_000))
    parser = SseParser(comments=comments)
    parser.feed(b"event: many\n")
    for i in range(0, len(body), 16):
        assert parser.feed(body[i : i + 16]) == []
        if comments:  # lines are applied as they end: data is one buffer, the partial line short
            assert sum(map(len, parser._pending)) < 16
        elif i % 2**20 == 0:
            assert max(map(len, parser._pending)) <= 16
    if comments:
        assert len(parser._data) == len(body) - 6 * 200_000  # the values and their LFs
    (event,) = parser.feed(b"\n")
    assert event.data.count("\n") == 199_999 and event.data.endswith("199999")


def test_one_byte_chunks_keep_at_most_one_line_of_pieces():
    parser = SseParser()
    stream = b"event: e\ndata: 12345\n\n" * 50
    count = 0
    for i in range(len(stream)):
        count += len(parser.feed(stream[i : i + 1]))
        assert len(parser._pending) <= 22  # never more than the event being read
    assert count == 50


# Properties.
TOKENS = [b"data", b"event", b"id", b"retry", b":", b": ", b" ", b"\r", b"\n", b"\r\n", BOM, b"x",
          b"12", b"0", b"\x00", "ñ".encode(), "🚀".encode(), b"\xf0\x9f", b"\xff", "\u2028".encode()]
streams = st.lists(st.sampled_from(TOKENS), max_size=60).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(streams, st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_random_cut_points_give_the_same_events_as_one_feed(stream, cuts):
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    assert parse(*chunks, comments=True) == parse(stream, comments=True)
    assert parse(*chunks) == parse(stream)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), streams), st.integers(1, 64), st.integers(0, 300))
def test_arbitrary_bytes_either_parse_or_raise_our_typed_error(stream, size, limit):
    parser = SseParser(max_event_size=limit, comments=True)
    try:
        for i in range(0, len(stream), size):
            for item in parser.feed(stream[i : i + size]):
                assert isinstance(item, (SseEvent, SseComment))
        assert isinstance(parser.close(), FrameEnd)
    except SseToolError:
        pass


def _reference(text: str) -> list[tuple]:
    """The spec's algorithm, literally, on decoded text (lines split on CR, LF, CRLF)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:-1]
    out, data, kind, last_id, retry = [], None, "", None, None
    for line in lines:
        if line == "":
            if data is not None:
                out.append((kind or M, data[:-1], last_id, retry))
            data, kind = None, ""
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data = (data or "") + value + "\n"
        elif name == "event":
            kind = value
        elif name == "id" and "\x00" not in value:
            last_id = value
        elif name == "retry" and value and all(c in "0123456789" for c in value) and int(value) <= MAX_RETRY:
            retry = int(value)
    return out


@settings(max_examples=400, deadline=None)
@given(streams)
def test_parsing_bytes_equals_the_spec_algorithm_on_decoded_text(stream):
    text = stream.decode("utf-8", "replace")
    text = text[1:] if text.startswith("\ufeff") else text
    assert fields(parse(stream)[0]) == _reference(text)


# An encoder, the way a server writes events, and back.
SPECIAL = ["\r", "\n", "\x00", "\ufeff", "\u2028", "\x85", "🚀", "ñ", ":", " "]
text = st.text(st.one_of(st.sampled_from(SPECIAL), st.characters(blacklist_categories=("Cs",))), max_size=30)
line_text = text.map(lambda s: s.replace("\r", "").replace("\n", ""))
generated_events = st.lists(
    st.tuples(
        line_text,  # event name ("" means none)
        text,  # data
        st.one_of(st.none(), line_text.map(lambda s: s.replace("\x00", ""))),  # id
        st.one_of(st.none(), st.integers(0, MAX_RETRY)),  # retry
        st.booleans(),  # a comment before it
    ),
    max_size=8,
)


def encode(events, bom: bool, newline: str) -> bytes:
    out = ["\ufeff" if bom else ""]
    for name, data, id_, retry, comment in events:
        if comment:
            out.append(": keep-alive" + newline)
        if id_ is not None:
            out.append("id: " + id_ + newline)
        if retry is not None:
            out.append(f"retry: {retry}{newline}")
        if name:
            out.append("event: " + name + newline)
        for line in data.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            out.append("data: " + line + newline)
        out.append(newline)
    return "".join(out).encode()


@settings(max_examples=300, deadline=None)
@given(generated_events, st.booleans(), st.sampled_from(["\n", "\r\n", "\r"]), st.integers(1, 50))
def test_encoded_events_parse_back_exactly(events, bom, newline, size):
    stream = encode(events, bom, newline)
    expected, last_id, retry = [], None, None
    for name, data, id_, r, _ in events:
        last_id = id_ if id_ is not None else last_id
        retry = r if r is not None else retry
        # the spec normalises every line ending inside data to LF
        expected.append((name or M, data.replace("\r\n", "\n").replace("\r", "\n"), last_id, retry))
    items, end = parse(*[stream[i : i + size] for i in range(0, len(stream), size)])
    assert fields(items) == expected and end.is_complete


# The fast paths (runs of usual blocks split at once, one block read by one regex call)
# against ``_lines``, the rule-by-rule reading: the same stream with CR line ends has the
# same offsets and goes through ``_lines`` only, so both must give the same items.
FIELD_TEXT = st.lists(st.one_of(st.sampled_from(["ñ", "🚀", "\x00", "\u2028", ":", " ", "data: ", "event: "]),
                                st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n")),
                      max_size=30).map("".join).map(str.encode)
DATA_BLOCK = FIELD_TEXT.map(lambda d: b"data: " + d + b"\n\n")
EVENT_BLOCK = st.tuples(FIELD_TEXT, FIELD_TEXT).map(lambda p: b"event: " + p[0] + b"\ndata: " + p[1] + b"\n\n")
USUAL = st.one_of(DATA_BLOCK, EVENT_BLOCK)
# One event of several data lines (pretty-printed JSON, say), after an optional event line.
MULTI = st.tuples(st.one_of(st.none(), FIELD_TEXT), st.lists(FIELD_TEXT, min_size=2, max_size=6)).map(
    lambda p: (b"" if p[0] is None else b"event: " + p[0] + b"\n")
    + b"".join(b"data: " + d + b"\n" for d in p[1]) + b"\n")
ODD = st.sampled_from([
    b": keep-alive\n\n", b"id: 7\ndata: a\n\n", b"data: a\ndata: b\n\n", b"data:tight\n\n", b"\n",
    b"event: e\n\n", b"retry: 10\nevent: e\ndata: x\n\n", b"event:x\ndata: y\n\n", b"data: \xff\xfe\n\n",
    b"event: \ndata: empty name\n\n", b": sse-tool reset\n\n", b"data\n\n",
])
# Blocks of one usual shape, or mixed with odd ones, repeated to make long runs.
BLOCK_RUNS = st.tuples(
    st.one_of(st.lists(DATA_BLOCK, min_size=1, max_size=20), st.lists(EVENT_BLOCK, min_size=1, max_size=20),
              st.lists(MULTI, min_size=1, max_size=10),
              st.lists(st.one_of(USUAL, USUAL, ODD, MULTI), min_size=1, max_size=20)),
    st.integers(1, 40),
).map(lambda p: b"".join(p[0]) * p[1])


@settings(max_examples=200, deadline=None)
@given(BLOCK_RUNS, st.integers(1, 5000))
def test_runs_of_usual_blocks_read_fast_give_what_the_line_by_line_rules_give(stream, size):
    reference = parse(stream.replace(b"\n", b"\r"))
    assert parse(stream) == reference
    assert parse(*[stream[i : i + size] for i in range(0, len(stream), size)]) == reference
    events = [e for e in reference[0] if isinstance(e, SseEvent)]
    assert fields(events) == _reference(stream.decode("utf-8", "replace"))
    # CRLF line ends: in small chunks no run of blocks builds up, so the rules read them
    crlf = stream.replace(b"\n", b"\r\n")
    by_rules = parse(*[crlf[i : i + 64] for i in range(0, len(crlf), 64)])
    assert parse(crlf) == by_rules and fields(e for e in by_rules[0] if isinstance(e, SseEvent)) == fields(events)


@pytest.mark.parametrize("block", [b"data: %05d\n\n", b"event: e\ndata: %05d\n\n"], ids=["data", "event"])
def test_a_run_longer_than_the_limit_is_fine_while_each_event_is_within_it(block):
    stream = b"".join(block % i for i in range(500))
    items, end = parse(stream, max_event_size=len(block % 0) - 1)  # size: the lines, blank line left out
    assert [e.data for e in items] == ["%05d" % i for i in range(500)] and end.is_complete


@pytest.mark.parametrize("block", [b"data: %05d\n\n", b"event: e\ndata: %05d\n\n"], ids=["data", "event"])
def test_one_event_over_the_limit_in_a_run_fails_there_after_the_events_before_it(block):
    stream = b"".join(block % i for i in range(300)) + block.replace(b"%05d", b"x" * 100) + block % 0
    parser = SseParser(max_event_size=50)
    items = parser.feed(stream)
    assert len(items) == 300
    with pytest.raises(EventTooLarge) as info:
        parser.close()
    assert info.value.offset == len(block % 0) * 300


def test_a_partial_line_over_the_limit_fails_at_close_at_the_latest():
    # sizes of an unfinished line are added up every so many pieces, so feed may not see it
    parser = SseParser(max_event_size=100)
    for _ in range(10):
        parser.feed(b"x" * 16)
    with pytest.raises(EventTooLarge):
        parser.close()
