"""The Anthropic Messages adapter (``anthropic``): the recordings, then each documented quirk."""

from __future__ import annotations

import json

import orjson
import pytest

from sse_tool.model import (
    Channel, Citation, Delta, End, Meta, Redacted, Signature, Status, ToolCall, ToolResult, Usage,
)
from sse_tool.providers.anthropic import Anthropic

from ..support import EXPECTED, FIXTURES, SAMPLES, outcome, read_records

CASES = [e for e in EXPECTED if e["provider"] == "anthropic"]


def sse(*events: dict, named: bool = True) -> bytes:
    """An Anthropic stream: each payload as one event named after its ``type``."""
    out = []
    for payload in events:
        head = f"event: {payload['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(payload, ensure_ascii=False)}\n\n")
    return "".join(out).encode()


def message_start(usage=None) -> dict:
    return {"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "usage": usage or {"input_tokens": 10, "output_tokens": 1}}}


def block(index: int, kind: str, **fields) -> dict:
    return {"type": "content_block_start", "index": index, "content_block": {"type": kind, **fields}}


def delta(index: int, kind: str, **fields) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}}


def stop(index: int) -> dict:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason="end_turn", output_tokens=20) -> dict:
    return {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens}}


MESSAGE_STOP = {"type": "message_stop"}
PING = {"type": "ping"}


def texts(records, channel):
    return [r.text for r in records if isinstance(r, Delta) and r.channel is channel]


def of(records, kind):
    return [r for r in records if isinstance(r, kind)]


@pytest.mark.parametrize("entry", CASES, ids=lambda e: e["file"])
def test_recordings_give_their_expected_answer_reasoning_and_status(entry):
    records = read_records([(FIXTURES / entry["file"]).read_bytes()], "anthropic")
    expected = entry["answer_text"], entry["reasoning_text"], entry["status"], entry["stop_reason"]
    assert outcome(records) == expected


def test_thinking_then_text_goes_to_reasoning_then_answer_with_model_and_usage():
    records = read_records([(SAMPLES / "anthropic-thinking.sse").read_bytes()])
    assert of(records, Meta)[0] == Meta("model", "claude-sonnet-4-5-20250929")
    assert "🚀" in "".join(texts(records, Channel.ANSWER))
    kinds = [r.channel for r in records if isinstance(r, Delta)]
    assert kinds == sorted(kinds, key=lambda c: c is Channel.ANSWER)  # all reasoning first
    end = records[-1]
    assert end.status is Status.COMPLETE and end.stop_reason == "end_turn"
    assert end.usage["input_tokens"] == 22 and end.usage["output_tokens"] == 118


def test_a_text_block_before_a_thinking_block_keeps_each_channel_and_the_arrival_order():
    records = read_records([sse(
        message_start(),
        block(0, "text", text=""), delta(0, "text_delta", text="Primero. "), stop(0),
        block(1, "thinking", thinking="", signature=""),
        delta(1, "thinking_delta", thinking="luego pienso"), delta(1, "signature_delta", signature="sig"),
        stop(1),
        block(2, "text", text=""), delta(2, "text_delta", text="Después."), stop(2),
        message_delta(), MESSAGE_STOP,
    )])
    deltas = of(records, Delta)
    assert deltas == [Delta(Channel.ANSWER, "Primero. "), Delta(Channel.REASONING, "luego pienso"),
                      Delta(Channel.ANSWER, "Después.")]
    assert records[-1].status is Status.COMPLETE


def test_deltas_belong_to_their_block_by_index_even_when_blocks_interleave():
    records = read_records([sse(
        message_start(),
        block(0, "thinking", thinking=""), block(1, "text", text=""),
        delta(1, "text_delta", text="answer"), delta(0, "thinking_delta", thinking="thought"),
        stop(0), stop(1), message_delta(), MESSAGE_STOP,
    )])
    assert texts(records, Channel.ANSWER) == ["answer"]
    assert texts(records, Channel.REASONING) == ["thought"]


def test_several_text_blocks_are_joined_with_no_separator():
    records = read_records([sse(
        message_start(),
        block(0, "text", text=""), delta(0, "text_delta", text="Hola"), stop(0),
        block(1, "text", text=""), delta(1, "text_delta", text=" mundo"), stop(1),
        message_delta(), MESSAGE_STOP,
    )])
    assert outcome(records)[:3] == ("Hola mundo", "", "complete")


def test_signatures_and_empty_thinking_deltas_are_never_text():
    records = read_records([(FIXTURES / "anthropic/thinking-signature.sse").read_bytes()])
    signatures = of(records, Signature)
    assert len(signatures) == 1 and signatures[0].signature.startswith("EuYD")
    assert signatures[0].index == 0  # the thinking block it signs
    assert all(d.text for d in of(records, Delta))
    assert not any("EuYD" in d.text for d in of(records, Delta))


def test_redacted_thinking_shows_no_text_and_keeps_its_data_with_its_block():
    raw = (FIXTURES / "anthropic/redacted-thinking.sse").read_bytes()
    records = read_records([raw])
    assert texts(records, Channel.REASONING) == []
    redacted = of(records, Redacted)
    assert [r.index for r in redacted] == [0, 1]
    assert all(r.data and r.data.encode() in raw for r in redacted)  # exactly as sent


def test_a_tool_call_with_one_empty_input_delta_has_its_id_name_and_empty_object_arguments():
    records = read_records([(FIXTURES / "anthropic/tool-use-no-args.sse").read_bytes()])
    calls = of(records, ToolCall)
    assert calls[0] == ToolCall(0, "toolu_01CzN6riCPqw4pVSuTd9Dwn7", "pelican_name_generator", "")
    assert "".join(c.arguments for c in calls) == "{}"
    assert {c.index for c in calls} == {0}
    assert records[-1].stop_reason == "tool_use"


def test_tool_input_pieces_join_into_the_calls_json_arguments_under_the_block_index():
    records = read_records([sse(
        message_start(),
        block(0, "text", text=""), delta(0, "text_delta", text="Let me check."), stop(0),
        block(1, "tool_use", id="toolu_1", name="get_weather", input={}),
        delta(1, "input_json_delta", partial_json=""),
        delta(1, "input_json_delta", partial_json='{"city": "Bogo'),
        delta(1, "input_json_delta", partial_json='tá"}'),
        stop(1), message_delta("tool_use"), MESSAGE_STOP,
    )])
    calls = of(records, ToolCall)
    assert calls[0] == ToolCall(1, "toolu_1", "get_weather", "")
    assert {c.index for c in calls} == {1}
    assert json.loads("".join(c.arguments for c in calls)) == {"city": "Bogotá"}
    assert outcome(records) == ("Let me check.", "", "complete", "tool_use")


def test_web_search_is_a_server_tool_call_with_its_results_and_citations_as_records():
    records = read_records([(FIXTURES / "anthropic/web-search-citations.sse").read_bytes()])
    calls = of(records, ToolCall)
    assert calls[0].id.startswith("srvtoolu_") and calls[0].name == "web_search" and calls[0].server
    assert json.loads("".join(c.arguments for c in calls)) == {"query": "San Francisco weather today"}
    (result,) = of(records, ToolResult)
    assert result.id == calls[0].id and result.result["type"] == "web_search_tool_result"
    assert result.result["content"][0]["type"] == "web_search_result"
    citations = of(records, Citation)
    assert [c.index for c in citations] == [3, 5, 7, 9, 11]  # the text blocks they back
    assert all(c.source["type"] == "web_search_result_location" for c in citations)
    assert citations[4].url == "https://abc7news.com/weather/" and citations[4].text.startswith("7-Day Forecast")
    assert citations[0].title == "San Francisco, CA Hourly Weather Forecast | Weather Underground"
    assert records[-1].tool_calls == [{"index": 0, "id": calls[0].id, "name": "web_search",
                                       "complete_json": True, "server": True}]
    answer = "".join(texts(records, Channel.ANSWER))
    assert "wunderground" not in answer and "63°F" in answer


def test_an_mcp_tool_use_block_is_a_server_tool_call_and_its_result_a_record():
    records = read_records([sse(
        message_start(),
        block(0, "mcp_tool_use", id="mcptoolu_1", name="search_docs", server_name="docs", input={}),
        delta(0, "input_json_delta", partial_json='{"q": "sse"}'), stop(0),
        block(1, "mcp_tool_result", tool_use_id="mcptoolu_1", is_error=False,
              content=[{"type": "text", "text": "found"}]), stop(1),
        message_delta(), MESSAGE_STOP,
    )])
    assert of(records, ToolCall) == [ToolCall(0, "mcptoolu_1", "search_docs", "", server=True),
                                     ToolCall(0, arguments='{"q": "sse"}')]
    assert [(r.index, r.id, r.result["type"]) for r in of(records, ToolResult)] == [(1, "mcptoolu_1", "mcp_tool_result")]
    assert outcome(records)[:2] == ("", "")


def test_pings_anywhere_change_nothing():
    events = [message_start(), block(0, "text", text=""), delta(0, "text_delta", text="hi"), stop(0),
              message_delta(), MESSAGE_STOP]
    with_pings = [e for event in events for e in (PING, event)] + [PING]
    assert read_records([sse(*with_pings)]) == read_records([sse(*events)])


def test_usage_from_message_start_is_completed_by_the_cumulative_message_delta_usage():
    records = read_records([sse(
        message_start({"input_tokens": 46, "cache_read_input_tokens": 0, "output_tokens": 3}),
        block(0, "text", text=""), delta(0, "text_delta", text="ok"), stop(0),
        message_delta(output_tokens=133), MESSAGE_STOP,
    )])
    expected = {"input_tokens": 46, "cache_read_input_tokens": 0, "output_tokens": 133}
    assert of(records, Usage)[-1] == Usage(expected)
    assert records[-1].usage == expected


def test_a_stop_sequence_is_the_stop_reason_and_its_value_is_metadata():
    records = read_records([(FIXTURES / "anthropic/stop-sequence.sse").read_bytes()])
    assert records[-1].stop_reason == "stop_sequence"
    assert [m.key for m in of(records, Meta)].count("stop_sequence") == 1


def test_an_error_event_mid_stream_is_an_error_with_its_type_and_message():
    records = read_records([(SAMPLES / "anthropic-overloaded.sse").read_bytes()])
    end = records[-1]
    assert end.status is Status.ERROR
    assert end.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert end.stop_reason is None
    assert texts(records, Channel.ANSWER)  # what arrived before the error is kept


def test_an_error_after_a_terminal_looking_message_delta_and_message_stop_is_still_an_error():
    error = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    records = read_records([sse(
        message_start(), block(0, "text", text=""), delta(0, "text_delta", text="Hi"), stop(0),
        message_delta(), error, MESSAGE_STOP,
    )])
    end = records[-1]
    assert end.status is Status.ERROR and end.stop_reason == "end_turn"
    assert end.error["type"] == "api_error"


def test_a_message_delta_without_message_stop_is_truncated():
    records = read_records([sse(
        message_start(), block(0, "text", text=""), delta(0, "text_delta", text="Hi"), stop(0),
        message_delta(),
    )])
    end = records[-1]
    assert end.status is Status.TRUNCATED and end.stop_reason == "end_turn"
    assert "terminal event" in end.detail


def test_a_stream_torn_inside_an_event_is_truncated_and_keeps_what_arrived():
    records = read_records([(SAMPLES / "anthropic-truncated.sse").read_bytes()])
    end = records[-1]
    assert end.status is Status.TRUNCATED and end.stop_reason is None
    assert "".join(texts(records, Channel.ANSWER)).endswith("fue todo un éxito» ")


def test_frames_without_event_lines_read_the_same_keyed_on_the_payload_type():
    events = [message_start(), block(0, "thinking", thinking=""), delta(0, "thinking_delta", thinking="t"),
              stop(0), block(1, "text", text=""), delta(1, "text_delta", text="a"), stop(1),
              message_delta(), MESSAGE_STOP]
    assert read_records([sse(*events, named=False)]) == read_records([sse(*events)])


def test_the_event_name_stands_in_when_the_payload_has_no_type():
    data = sse(message_start(), block(0, "text", text=""), delta(0, "text_delta", text="a"), stop(0),
               message_delta()) + b"event: message_stop\ndata: {}\n\n"
    assert read_records([data])[-1].status is Status.COMPLETE


def test_unknown_event_and_delta_types_are_skipped():
    records = read_records([sse(
        message_start(), {"type": "future_event", "index": 0},
        block(0, "text", text=""), delta(0, "future_delta", text="not text"),
        delta(0, "text_delta", text="text"), stop(0), message_delta(), MESSAGE_STOP,
    )])
    assert outcome(records) == ("text", "", "complete", "end_turn")


def test_recognition_claims_anthropic_events_but_not_words_other_dialects_share():
    assert Anthropic.recognise("message_start", message_start())
    assert Anthropic.recognise("message", delta(0, "text_delta", text="x"))
    assert not Anthropic.recognise("error", {"type": "error", "error": {"type": "x", "message": "y"}})
    assert not Anthropic.recognise("ping", PING)
    assert not Anthropic.recognise("message", {"type": "response.created"})
    assert not Anthropic.recognise("message", {"choices": []})


def test_records_serialise_as_json_lines():
    from sse_tool.model import to_record

    records = read_records([(FIXTURES / "anthropic/web-search-citations.sse").read_bytes()])
    for record in records:
        orjson.dumps(to_record(record))
    assert isinstance(records[-1], End)


@pytest.mark.parametrize("data", [b"", b"upstream connect error"])
def test_an_error_event_without_json_data_is_an_error_though_the_turn_ends(data):
    # The SDK raises on an event named error whatever its data; the turn's end does not undo it.
    stream = (sse(message_start(), block(0, "text", text=""), delta(0, "text_delta", text="Hi"))
              + b"event: error\ndata: " + data + b"\n\n" + sse(stop(0), message_delta(), MESSAGE_STOP))
    end = read_records([stream])[-1]
    assert end.status is Status.ERROR
    assert end.error["message"] == (data.decode() or "an error event with no data")


@pytest.mark.parametrize("kind, delta_fields", [("signature_delta", {"signature": "S"}),
                                                ("citations_delta", {"citation": {"type": "web", "url": "u"}})])
def test_a_block_index_of_the_wrong_type_is_bad_input(kind, delta_fields):
    # (it was copied into the record: {"index": {}})
    from sse_tool.errors import BadInput
    from sse_tool.normalize import Normalizer
    from sse_tool.sse import SseEvent

    event = {"type": "content_block_delta", "index": {}, "delta": {"type": kind, **delta_fields}}
    normalizer = Normalizer("anthropic")
    with pytest.raises(BadInput, match="'index' must be an integer, not an object"):
        normalizer.feed(SseEvent("content_block_delta", json.dumps(event), None, None, 0, 10))
