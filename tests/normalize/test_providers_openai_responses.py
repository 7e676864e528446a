"""The OpenAI Responses adapter (``openai-responses``): the recordings, then the API's other shapes."""

from __future__ import annotations

import json

import pytest

from sse_tool.model import Channel, Citation, Delta, End, Meta, Part, Status, ToolCall, ToolStatus, Usage
from sse_tool.pipeline import RecordReader
from sse_tool.providers.openai_responses import OpenAIResponses

from ..support import EXPECTED, FIXTURES, channel_text, odd_shapes

CASES = [e for e in EXPECTED if e["provider"] == "openai-responses"]


def records(data: bytes, provider: str = "auto") -> list:
    reader = RecordReader(provider)
    return reader.feed(data) + reader.close()


def events(*payloads, named: bool = True) -> bytes:
    """Responses frames: ``event: <type>`` (unless not ``named``, as OpenRouter) + JSON data."""
    out = []
    for p in payloads:
        if isinstance(p, str):
            out.append(f"data: {p}\n\n")
            continue
        head = f"event: {p['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(p)}\n\n")
    return "".join(out).encode()


def ev(kind: str, **fields) -> dict:
    return {"type": kind, **fields}


CREATED = ev("response.created", response={"status": "in_progress", "model": "gpt-5"})
COMPLETED = ev("response.completed", response={"status": "completed", "usage": {"output_tokens": 3}})


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_recording_gives_the_expected_texts_status_and_stop_reason(case):
    out = records((FIXTURES / case["file"]).read_bytes(), "openai-responses")
    end = out[-1]
    assert channel_text(out, Channel.ANSWER) == case["answer_text"]
    assert channel_text(out, Channel.REASONING) == case["reasoning_text"]
    assert (end.status.value, end.stop_reason) == (case["status"], case["stop_reason"])
    assert sum(isinstance(r, End) for r in out) == 1


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_auto_detection_picks_responses_for_every_recording(case):
    reader = RecordReader()
    reader.feed((FIXTURES / case["file"]).read_bytes())
    reader.close()
    assert reader.normalizer.provider == "openai-responses"


def test_recorded_function_call_is_one_call_with_its_arguments_and_usage_at_the_end():
    out = records((FIXTURES / "openai-responses/responses-function-call.sse").read_bytes())
    calls = [r for r in out if isinstance(r, ToolCall)]
    assert (calls[0].id, calls[0].name) == ("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital")
    assert {c.index for c in calls} == {0}
    assert json.loads("".join(c.arguments for c in calls)) == {"country": "France"}
    assert isinstance(out[-2], Usage) and out[-1].usage == out[-2].usage


def test_recorded_error_event_keeps_its_type_and_message_and_the_code_is_the_stop_reason():
    out = records((FIXTURES / "openai-responses/responses-error-insufficient-quota.sse").read_bytes())
    end = out[-1]
    assert end.status is Status.ERROR and end.stop_reason == "insufficient_quota"
    assert end.error["type"] == "insufficient_quota"
    assert end.error["message"].startswith("You exceeded your current quota")


def test_openrouter_data_only_frames_and_done_are_read_but_done_is_not_the_end():
    body = events(CREATED, ev("response.output_text.delta", delta="4"), named=False)
    out = records(b": OPENROUTER PROCESSING\n\n" + body + b"data: [DONE]\n\n")
    assert channel_text(out, Channel.ANSWER) == "4"
    assert out[-1].status is Status.TRUNCATED


def test_the_json_type_decides_not_the_event_name():
    body = b"event: message\ndata: " + json.dumps(ev("response.output_text.delta", delta="x")).encode() + b"\n\n"
    out = records(events(CREATED) + body + events(COMPLETED))
    assert channel_text(out, Channel.ANSWER) == "x"


def test_summary_and_raw_reasoning_are_reasoning_and_a_refusal_is_its_own_channel():
    out = records(events(
        CREATED,
        ev("response.reasoning_summary_part.added", summary_index=0),
        ev("response.reasoning_summary_text.delta", delta="**Plan**"),
        ev("response.reasoning_summary_text.done", text="**Plan**"),
        ev("response.reasoning_text.delta", delta=" think"),
        ev("response.output_text.delta", delta="Olá "),
        ev("response.refusal.delta", delta="não 🙅"),
        ev("response.refusal.done", refusal="não 🙅"),
        ev("response.output_text.done", text="Olá "),
        COMPLETED,
    ))
    assert channel_text(out, Channel.REASONING) == "**Plan** think"
    assert channel_text(out, Channel.ANSWER) == "Olá "
    assert channel_text(out, Channel.REFUSAL) == "não 🙅"
    assert Meta("model", "gpt-5") in out
    assert Part(Channel.REASONING) not in out  # the first part starts no paragraph


def test_summary_parts_after_the_first_start_with_a_part_record():
    raw = (FIXTURES / "openai-responses" / "responses-reasoning-summary.sse").read_bytes()
    out = records(raw)
    assert out.count(Part(Channel.REASONING)) == 3  # 4 summary parts, 3 paragraph breaks
    first = out.index(Part(Channel.REASONING))
    assert channel_text(out[:first], Channel.REASONING).endswith("safely crossing the street.")
    assert channel_text(out[first:], Channel.REASONING).startswith("**Explaining street crossing safety**")
    # the texts themselves are what was sent: joined, they are expected.json's reasoning
    entry = next(e for e in EXPECTED if e["file"].endswith("responses-reasoning-summary.sse"))
    assert channel_text(out, Channel.REASONING) == entry["reasoning_text"]


def test_a_reader_joining_with_the_parts_shows_paragraphs():
    from sse_tool.model import Transcript

    transcript = Transcript()
    for r in records((FIXTURES / "openai-responses" / "responses-reasoning-summary.sse").read_bytes()):
        if isinstance(r, Delta):
            transcript.add(r)
        elif isinstance(r, Part):
            transcript.part(r)
    text = transcript.text(Channel.REASONING)
    assert "crossing the street.\n\n**Explaining street crossing safety**" in text
    assert "safe street crossing.\n\n**Sharing street crossing safety tips**" in text

def test_incomplete_is_complete_with_the_incomplete_reason_as_stop_reason():
    out = records(events(CREATED, ev("response.output_text.delta", delta="Once upon"),
                         ev("response.incomplete", response={
                             "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                             "usage": {"output_tokens": 16}})))
    assert out[-1] == End(Status.COMPLETE, "max_output_tokens", {"output_tokens": 16})


def test_failed_without_an_error_event_is_an_error_with_the_failure_code():
    out = records(events(CREATED, ev("response.failed", response={
        "status": "failed", "error": {"code": "server_error", "message": "The model crashed"}})))
    end = out[-1]
    assert end.status is Status.ERROR and end.stop_reason == "server_error"
    assert end.error == {"type": "server_error", "message": "The model crashed", "code": "server_error"}


def test_failed_with_no_details_is_still_an_error():
    out = records(events(CREATED, ev("response.failed", response={"status": "failed", "error": None})))
    assert out[-1].status is Status.ERROR and out[-1].stop_reason == "failed"


def test_flat_error_event_as_the_api_reference_shows_it():
    out = records(events(CREATED, ev("error", code="rate_limit_exceeded", message="Slow down", param=None)))
    end = out[-1]
    assert end.status is Status.ERROR and end.stop_reason == "rate_limit_exceeded"
    assert end.error == {"type": "rate_limit_exceeded", "message": "Slow down", "code": "rate_limit_exceeded"}


def test_error_then_completed_is_still_an_error():
    out = records(events(CREATED, ev("error", error={"type": "server_error", "message": "x"}), COMPLETED))
    assert out[-1].status is Status.ERROR


def test_function_calls_use_the_output_index_and_their_call_id():
    out = records(events(
        CREATED,
        ev("response.output_item.added", output_index=1,
           item={"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": ""}),
        ev("response.function_call_arguments.delta", output_index=1, item_id="fc_1", delta='{"city":'),
        ev("response.function_call_arguments.delta", item_id="fc_1", delta='"Köln"}'),
        ev("response.function_call_arguments.done", output_index=1, item_id="fc_1", arguments='{"city":"Köln"}'),
        ev("response.output_item.done", output_index=1,
           item={"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
                 "arguments": '{"city":"Köln"}'}),
        COMPLETED,
    ))
    assert [r for r in out if isinstance(r, ToolCall)] == [
        ToolCall(1, "call_1", "weather", ""), ToolCall(1, arguments='{"city":'), ToolCall(1, arguments='"Köln"}')]


def test_a_call_whose_arguments_come_only_whole_is_emitted_from_its_done_item():
    item = {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "now", "arguments": "{}"}
    out = records(events(CREATED, ev("response.output_item.done", output_index=0, item=item), COMPLETED))
    assert [r for r in out if isinstance(r, ToolCall)] == [ToolCall(0, "call_2", "now", "{}")]


def custom_call(done: bool) -> list[dict]:
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_9", "name": "code_exec", "input": ""}
    out = [ev("response.output_item.added", output_index=0, item=item),
           ev("response.custom_tool_call_input.delta", output_index=0, item_id="ctc_1", delta="print(1)")]
    if done:
        out.append(ev("response.output_item.done", output_index=0, item={**item, "input": "print(1)",
                                                                          "status": "completed"}))
    return out


def test_a_custom_tool_call_takes_free_text_which_is_whole_when_the_turn_completed():
    # Its input is unconstrained text: no JSON parse can say it was cut, the turn's end can.
    out = records(events(CREATED, *custom_call(True), COMPLETED))
    assert [r for r in out if isinstance(r, ToolCall)] == [
        ToolCall(0, "call_9", "code_exec", "", freeform=True), ToolCall(0, arguments="print(1)")]
    assert out[-1].tool_calls == [{"index": 0, "id": "call_9", "name": "code_exec", "complete_json": True,
                                   "freeform": True}]
    cut = records(events(CREATED, *custom_call(False)))
    assert cut[-1].status is Status.TRUNCATED and cut[-1].tool_calls[0]["complete_json"] is False


def test_a_remote_mcp_call_is_run_by_openai_not_the_client():
    item = {"type": "mcp_call", "id": "mcp_1", "server_label": "dice", "name": "roll", "arguments": ""}
    out = records(events(
        CREATED, ev("response.output_item.added", output_index=0, item=item),
        ev("response.mcp_call_arguments.delta", output_index=0, item_id="mcp_1", delta='{"dice":"2d6"}'),
        ev("response.output_item.done", output_index=0, item={**item, "arguments": '{"dice":"2d6"}', "output": "7"}),
        COMPLETED))
    assert [r for r in out if isinstance(r, ToolCall)][0] == ToolCall(0, "mcp_1", "roll", "", server=True)
    assert out[-1].tool_calls[0]["server"] is True


def test_calls_without_output_index_are_numbered_in_order():
    adapter = OpenAIResponses()
    first = adapter.feed("m", ev("response.output_item.added", item={"type": "custom_tool_call", "id": "a",
                                                                       "call_id": "ca", "name": "sh", "input": ""}))
    piece = adapter.feed("m", ev("response.custom_tool_call_input.delta", item_id="a", delta="ls"))
    second = adapter.feed("m", ev("response.output_item.added", item={"type": "function_call", "id": "b",
                                                                        "name": "f"}))
    assert (first[0].index, piece[0].index, second[0].index) == (0, 0, 1)


def test_citations_and_built_in_tool_progress_are_records_not_text():
    citation = {"type": "url_citation", "url": "https://example.org", "title": "Ex", "start_index": 0, "end_index": 4}
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed",
              "action": {"type": "search", "query": "rain"}}
    out = records(events(
        CREATED,
        ev("response.web_search_call.in_progress", output_index=0, item_id="ws_1"),
        ev("response.web_search_call.searching", output_index=0, item_id="ws_1"),
        ev("response.web_search_call.completed", output_index=0, item_id="ws_1"),
        ev("response.output_item.done", output_index=0, item=search),
        ev("response.output_text.delta", delta="Rain"),
        ev("response.output_text.annotation.added", annotation=citation),
        COMPLETED,
    ))
    assert [(s.tool, s.status) for s in out if isinstance(s, ToolStatus)] == [
        ("web_search_call", "in_progress"), ("web_search_call", "searching"),
        ("web_search_call", "completed"), ("web_search_call", "completed")]
    assert ToolStatus(0, "ws_1", "web_search_call", "completed", search) in out
    assert Citation(citation, "https://example.org", "Ex") in out
    assert channel_text(out, Channel.ANSWER) == "Rain"
    assert not [r for r in out if isinstance(r, ToolCall)]  # OpenAI runs it: not a call to make


def test_a_partial_image_keeps_its_data_on_the_progress_record():
    out = records(events(CREATED, ev("response.image_generation_call.partial_image", output_index=1,
                                     item_id="ig_1", partial_image_index=0, partial_image_b64="iVBORw0K"), COMPLETED))
    assert ToolStatus(1, "ig_1", "image_generation_call", "partial_image",
                      {"partial_image_index": 0, "partial_image_b64": "iVBORw0K"}) in out


def test_unknown_events_are_skipped_and_odd_fields_bad_input_or_skipped_with_lenient():
    out = odd_shapes(events(
        CREATED, ev("response.audio.delta", delta="AAAA"), ev("response.output_text.delta", delta=None),
        ev("response.output_item.added", item="x"), ev("response.function_call_arguments.delta", delta=7),
        ev("response.output_text.delta"), ev("response.in_progress", response="?"), COMPLETED,
    ), "openai-responses")
    assert [r for r in out if isinstance(r, (Delta, ToolCall))] == []
    assert out[-1].status is Status.COMPLETE


def test_recognises_only_response_events():
    assert OpenAIResponses.recognise("message", {"type": "response.created"})
    assert not OpenAIResponses.recognise("message", {"type": "message_start"})
    assert not OpenAIResponses.recognise("message", {"choices": []})
    assert not OpenAIResponses.recognise("message", "[DONE]")
