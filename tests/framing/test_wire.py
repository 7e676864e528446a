"""wire: frame's JSON Lines records, and reading them back."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.errors import BadInput
from sse_tool.sse import MAX_RETRY, SseComment, SseEvent
from sse_tool.wire import dumps, event_record, is_event_record, load_event


def test_a_record_has_event_and_data_and_the_state_once_set():
    assert event_record(SseEvent("message", "x")) == {"event": "message", "data": "x"}
    record = event_record(SseEvent("e", "x", "", 0))
    assert record == {"event": "e", "data": "x", "id": "", "retry": 0}


def test_a_record_is_one_utf8_line():
    line = dumps(event_record(SseEvent("e", "ñ\n🚀\u2028")))
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and "ñ".encode() in line


def test_json_data_is_parsed_only_when_it_is_an_object_or_array():
    def data(text):
        return event_record(SseEvent("m", text), json_data=True)["data"]

    assert data('{"a": [1]}') == {"a": [1]}
    assert data("[1, 2]") == [1, 2]
    assert data("[DONE]") == "[DONE]"
    assert data("{broken") == "{broken"
    assert data("42") == "42" and data('"s"') == '"s"'


def test_json_data_stays_a_string_where_parsing_would_round_an_integer():
    def data(text):
        return event_record(SseEvent("m", text), json_data=True)["data"]

    # orjson reads -2**63 .. 2**64-1 as integers, and rounds others to floats
    for edge in (2**64 - 1, -2**63, 10**18, -(10**18)):
        assert data('{"n": %d, "s": "x"}' % edge) == {"n": edge, "s": "x"}
    for beyond in (str(2**64), str(-2**63 - 1), str(10**30), "9" * 5000):
        text = '[1, {"n": %s}]' % beyond
        assert data(text) == text
    # many digits inside a string, or in a float, round nothing: parsed
    assert data('{"id": "12345678901234567890123", "x": 1.2345678901234567890e3}') == \
        {"id": "12345678901234567890123", "x": 1234.567890123456789}
    assert data('{"n": 12345678901234567890123') == '{"n": 12345678901234567890123'  # (not JSON)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
                    max_leaves=12).filter(lambda v: isinstance(v, (list, dict))))
def test_json_data_is_parsed_exactly_or_left_as_its_text(value):
    import json

    text = json.dumps(value)
    got = event_record(SseEvent("m", text), json_data=True)["data"]
    assert got == text or (got == value and json.dumps(got) == text)


def test_offsets_are_added_when_asked():
    record = event_record(SseEvent("m", "x", None, None, 5, 12), offsets=True)
    assert (record["offset"], record["end"]) == (5, 12)
    assert event_record(SseComment("ping", 3), offsets=True) == {"comment": "ping", "offset": 3}


def test_the_largest_retry_fits_in_a_record():
    assert orjson.loads(dumps(event_record(SseEvent("m", "x", None, MAX_RETRY))))["retry"] == MAX_RETRY


def test_a_record_that_is_not_an_event_is_bad_input():
    with pytest.raises(BadInput):
        load_event({"type": "delta"})
    assert not is_event_record({"type": "delta"}) and is_event_record({"event": "m", "data": ""})


def test_json_parsed_data_reads_back_as_text():
    record = orjson.loads(dumps(event_record(SseEvent("m", '{"a": 1}'), json_data=True)))
    assert orjson.loads(load_event(record).data) == {"a": 1}


text = st.text(st.characters(blacklist_categories=("Cs",)))
events = st.builds(
    SseEvent, text, text, st.one_of(st.none(), text), st.one_of(st.none(), st.integers(0, MAX_RETRY)),
    st.integers(0, 2**40), st.integers(0, 2**40),
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(events, st.builds(SseComment, text, st.integers(0, 2**40))))
def test_dump_then_load_gives_back_the_same_item(item):
    assert load_event(orjson.loads(dumps(event_record(item, offsets=True)))) == item
