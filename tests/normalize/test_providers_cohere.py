"""The Cohere v2 chat streaming adapter (``cohere``)."""

from __future__ import annotations

import json

import pytest

from sse_tool.model import Channel, Citation, End, Meta, Status, ToolCall, Usage
from sse_tool.pipeline import RecordReader
from sse_tool.providers import recognise

from ..support import SAMPLES, channel_text, odd_shapes


def records(data: bytes, provider: str = "cohere") -> list:
    reader = RecordReader(provider)
    return reader.feed(data) + reader.close()


def sse(*events, named: bool = True) -> bytes:
    out = []
    for e in events:
        head = f"event: {e['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(e, ensure_ascii=False)}\n\n")
    return "".join(out).encode()


def start() -> dict:
    return {"id": "c14c", "type": "message-start",
            "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}}}


def content(index: int, **piece) -> dict:
    return {"type": "content-delta", "index": index, "delta": {"message": {"content": piece}}}


def block(index: int, kind: str) -> dict:
    return {"type": "content-start", "index": index, "delta": {"message": {"content": {"type": kind, kind: ""}}}}


def tool_start(index: int, call_id: str, name: str, arguments: str = "") -> dict:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def tool_delta(index: int, arguments: str) -> dict:
    call = {"function": {"arguments": arguments}}
    return {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": call}}}


USAGE = {"billed_units": {"input_tokens": 3, "output_tokens": 9}, "tokens": {"input_tokens": 70, "output_tokens": 9}}


def end(reason: str = "COMPLETE", **extra) -> dict:
    return {"type": "message-end", "delta": {"finish_reason": reason, "usage": USAGE, **extra}}


def test_thinking_and_text_content_go_to_their_channels():
    out = records(sse(start(), block(0, "thinking"),
                      content(0, thinking="Veamos: "), content(0, thinking="«launch»."),
                      {"type": "content-end", "index": 0}, block(1, "text"),
                      content(1, text="Lanzamiento "), content(1, text="🚀"),
                      {"type": "content-end", "index": 1}, end()))
    assert channel_text(out, Channel.REASONING) == "Veamos: «launch»."
    assert channel_text(out, Channel.ANSWER) == "Lanzamiento 🚀"
    assert (out[-1].status, out[-1].stop_reason) == (Status.COMPLETE, "COMPLETE")


def test_tool_plan_is_reasoning_and_tool_calls_are_joined_by_index():
    out = records(sse(start(),
                      {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "Buscaré el tiempo."}}},
                      tool_start(0, "get_weather_1", "get_weather"),
                      tool_delta(0, '{"ciudad"'), tool_delta(0, ': "Sevilla"}'),
                      {"type": "tool-call-end", "index": 0},
                      tool_start(1, "get_time_2", "get_time", "{}"),
                      {"type": "tool-call-end", "index": 1}, end("TOOL_CALL")))
    assert channel_text(out, Channel.REASONING) == "Buscaré el tiempo." and channel_text(out, Channel.ANSWER) == ""
    calls = [r for r in out if isinstance(r, ToolCall)]
    assert [(c.index, c.id, c.name) for c in calls if c.id] == [
        (0, "get_weather_1", "get_weather"), (1, "get_time_2", "get_time")]
    assert "".join(c.arguments for c in calls if c.index == 0) == '{"ciudad": "Sevilla"}'
    assert out[-1].stop_reason == "TOOL_CALL"


def test_citations_are_citation_records_not_text():
    citation = {"start": 0, "end": 4, "text": "Hola", "type": "TEXT_CONTENT",
                "sources": [{"type": "document", "id": "doc:0"}]}
    out = records(sse(start(), content(0, text="Hola"),
                      {"type": "citation-start", "index": 0, "delta": {"message": {"citations": citation}}},
                      {"type": "citation-end", "index": 0}, end()))
    assert [r for r in out if isinstance(r, Citation)] == [Citation(citation, text="Hola")]
    assert channel_text(out, Channel.ANSWER) == "Hola"


def test_message_end_carries_usage():
    out = records(sse(start(), content(0, text="a"), end()))
    assert out[-1].usage == USAGE
    assert sum(isinstance(r, Usage) for r in out) == 1


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "STOP_SEQUENCE"])
def test_other_finish_reasons_complete_with_their_reason(reason):
    last = records(sse(start(), content(0, text="a"), end(reason)))[-1]
    assert (last.status, last.stop_reason) == (Status.COMPLETE, reason)


def test_finish_reason_error_is_an_error_with_its_message():
    out = records(sse(start(), content(0, text="Ho"), end("ERROR", error="internal server error")))
    assert (out[-1].status, out[-1].stop_reason) == (Status.ERROR, "ERROR")
    assert out[-1].error == {"type": "error", "message": "internal server error"}
    assert channel_text(out, Channel.ANSWER) == "Ho"


def test_finish_reason_timeout_is_an_error_too():
    end_record = records(sse(start(), end("TIMEOUT")))[-1]
    assert (end_record.status, end_record.error["type"]) == (Status.ERROR, "timeout")


def test_no_message_end_is_truncated():
    assert records(sse(start(), content(0, text="Hola")))[-1].status is Status.TRUNCATED


def test_data_only_frames_are_read_from_the_json_type():
    out = records(sse(start(), content(0, text="Hola"), end(), named=False), "auto")
    assert channel_text(out, Channel.ANSWER) == "Hola" and out[-1].status is Status.COMPLETE


def test_cohere_events_are_not_mistaken_for_anthropic_ones():
    assert recognise("message-start", start()) == "cohere"
    assert recognise("content-delta", content(0, text="a")) == "cohere"
    assert recognise("message_start", {"type": "message_start", "message": {}}) == "anthropic"


@pytest.mark.parametrize("name", ["cohere-thinking.sse", "cohere-tool-call.sse"])
def test_auto_detection_recognises_cohere(name):
    reader = RecordReader()
    out = reader.feed((SAMPLES / name).read_bytes()) + reader.close()
    assert (reader.source, reader.normalizer.provider) == ("sse", "cohere")
    assert sum(isinstance(r, End) for r in out) == 1


def test_odd_shapes_are_bad_input_or_skipped_with_lenient():
    out = odd_shapes(sse(start(), {"type": "content-delta", "delta": None},
                      {"type": "tool-call-delta", "delta": {"message": {"tool_calls": []}}},
                      {"type": "tool-call-start", "delta": {"message": {"tool_calls": {"function": "x"}}}},
                      {"type": "debug"}, end()), "cohere")
    assert out[-1].status is Status.COMPLETE
