"""The OpenAI Chat Completions adapter (``openai``): the recordings, then each documented quirk."""

from __future__ import annotations

import json

import pytest

from sse_tool.errors import BadInput
from sse_tool.model import Channel, Delta, End, Meta, Redacted, Signature, Status, ToolCall, Usage
from sse_tool.pipeline import RecordReader

from ..support import EXPECTED, FIXTURES, channel_text, odd_shapes

CASES = [e for e in EXPECTED if e["provider"] == "openai-chat"]


def records(data: bytes, provider: str = "auto") -> list:
    reader = RecordReader(provider)
    return reader.feed(data) + reader.close()


def sse(*payloads, event: str | None = None) -> bytes:
    """Data-only SSE frames; dicts become JSON, strings are sent as they are."""
    head = f"event: {event}\n" if event else ""
    return b"".join(
        (head + "data: " + (p if isinstance(p, str) else json.dumps(p)) + "\n\n").encode()
        for p in payloads
    )


def chunk(delta: dict | None = None, finish=None, **extra) -> dict:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta or {},
            "finish_reason": finish}], **extra}


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_recording_gives_the_expected_texts_status_and_stop_reason(case):
    out = records((FIXTURES / case["file"]).read_bytes(), "openai")
    end = out[-1]
    assert channel_text(out, Channel.ANSWER) == case["answer_text"]
    assert channel_text(out, Channel.REASONING) == case["reasoning_text"]
    assert (end.status.value, end.stop_reason) == (case["status"], case["stop_reason"])
    assert sum(isinstance(r, End) for r in out) == 1


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_auto_detection_picks_openai_for_every_chat_recording(case):
    reader = RecordReader()
    reader.feed((FIXTURES / case["file"]).read_bytes())
    reader.close()
    assert reader.normalizer.provider == "openai"


def test_usage_chunk_with_empty_choices_is_a_usage_record_and_the_end_carries_it():
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    out = records(sse(chunk({"content": "Hi"}), chunk(finish="stop"),
                      {"object": "chat.completion.chunk", "choices": [], "usage": usage}, "[DONE]"))
    assert Usage(usage) in out
    assert out[-1] == End(Status.COMPLETE, "stop", usage)


def test_finish_reason_without_done_is_truncated():
    out = records(sse(chunk({"content": "Hi"}), chunk(finish="stop")))
    assert out[-1].status is Status.TRUNCATED and out[-1].stop_reason == "stop"


def test_parallel_tool_calls_are_joined_by_index_apart_from_the_answer():
    out = records((FIXTURES / "openai-chat/openai-parallel-tool-calls.sse").read_bytes())
    calls = [r for r in out if isinstance(r, ToolCall)]
    starts = {c.index: c.name for c in calls if c.name}
    assert sorted(starts) == [0, 1]
    for index in starts:
        assert "".join(c.arguments for c in calls if c.index == index) == "{}"
    assert channel_text(out, Channel.ANSWER) == ""


def test_tool_call_pieces_without_index_continue_the_latest_call():
    pieces = [
        {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": '{"ci'}},
        {"function": {"name": "", "arguments": 'ty": "Paris"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}},
    ]
    out = records(sse(*(chunk({"tool_calls": [p]}) for p in pieces), chunk(finish="tool_calls"), "[DONE]"))
    calls = [r for r in out if isinstance(r, ToolCall)]
    assert [(c.index, c.id, c.name) for c in calls] == [
        (0, "call_a", "weather"), (0, None, None), (1, "call_b", "time")]
    assert "".join(c.arguments for c in calls if c.index == 0) == '{"city": "Paris"}'


def test_tool_calls_starting_at_index_one_keep_their_index():
    out = records(sse(chunk({"tool_calls": [{"index": 1, "id": "c", "function": {"name": "f", "arguments": ""}}]}),
                      chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}), "[DONE]"))
    assert {r.index for r in out if isinstance(r, ToolCall)} == {1}


def test_mistral_content_arrays_split_thinking_from_text():
    thinking = [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me see. "}]}]
    answer = [{"type": "text", "text": "Bonjour à toi 👋"}]
    out = records(sse(chunk({"content": thinking}), chunk({"content": answer}), chunk(finish="stop"), "[DONE]"))
    assert channel_text(out, Channel.REASONING) == "Let me see. "
    assert channel_text(out, Channel.ANSWER) == "Bonjour à toi 👋"


def test_reasoning_details_count_only_when_the_reasoning_string_is_absent():
    both = {"reasoning": "We need", "reasoning_details": [{"type": "reasoning.text", "text": "We need"}]}
    details_only = {"reasoning_details": [{"type": "reasoning.text", "text": " to add"},
                                          {"type": "reasoning.summary", "summary": " numbers"},
                                          {"type": "reasoning.encrypted", "data": "opaque"}]}
    out = records(sse(chunk(both), chunk(details_only), "[DONE]"))
    assert channel_text(out, Channel.REASONING) == "We need to add numbers"


def test_reasoning_content_is_reasoning_and_null_content_is_nothing():
    out = records(sse(chunk({"content": None, "reasoning_content": "Hmm"}),
                      chunk({"content": "Hi", "reasoning_content": None}), "[DONE]"))
    assert [r for r in out if isinstance(r, Delta)] == [
        Delta(Channel.REASONING, "Hmm"), Delta(Channel.ANSWER, "Hi")]


def test_a_refusal_is_its_own_channel_not_the_answer():
    out = records(sse(chunk({"content": None, "refusal": "I can't help with that."}), chunk(finish="stop"),
                      "[DONE]"))
    assert channel_text(out, Channel.REFUSAL) == "I can't help with that."
    assert channel_text(out, Channel.ANSWER) == ""
    assert out[-1].status is Status.COMPLETE


def test_openrouter_reasoning_signatures_and_encrypted_reasoning_are_kept():
    raw = (FIXTURES / "openai-chat" / "openrouter-reasoning.sse").read_bytes()
    out = records(raw)
    (signature,) = [r for r in out if isinstance(r, Signature)]
    assert signature.signature.startswith("Et0BCkgIChACGAIqQA2s7h7t") and signature.index == 0
    encrypted = {"type": "reasoning.encrypted", "data": "gAAAAABo", "index": 1}
    out = records(sse(chunk({"reasoning_details": [encrypted]}), chunk(finish="stop"), "[DONE]"))
    assert [r for r in out if isinstance(r, Redacted)] == [Redacted("gAAAAABo", 1)]


def test_event_error_frame_is_an_error_even_without_an_error_key_inside():
    out = records(sse(chunk({"content": "Hi"})) + sse({"message": "boom", "type": "server_error"}, event="error"))
    assert out[-1].status is Status.ERROR
    assert out[-1].error == {"type": "server_error", "message": "boom"}


def test_top_level_error_frame_then_done_is_still_an_error():
    out = records(sse(chunk({"content": "Hi"}),
                      {"error": {"message": "overloaded", "type": "server_error", "code": None}}, "[DONE]"))
    assert out[-1].status is Status.ERROR and out[-1].error["message"] == "overloaded"


def test_mistral_finish_reason_error_is_an_error():
    out = records(sse(chunk({"content": "Hi"}), chunk(finish="error"), "[DONE]"))
    assert out[-1].status is Status.ERROR and out[-1].stop_reason == "error"


def test_a_stream_of_only_an_error_object_is_read_as_an_error():
    out = records(sse({"error": {"message": "Rate limit", "type": "rate_limit_error"}}))
    assert out[-1].status is Status.ERROR and out[-1].error["type"] == "rate_limit_error"


def test_openrouter_keep_alive_comments_change_nothing():
    body = sse(chunk({"content": "2 + 2"}), chunk({"content": " = 4"}, finish="stop"), "[DONE]")
    with_comments = b": OPENROUTER PROCESSING\n\n" * 5 + body.replace(b"\n\n", b"\n\n: OPENROUTER PROCESSING\n\n", 1)
    assert records(with_comments) == records(body)


def test_choices_other_than_zero_are_ignored():
    other = {"object": "chat.completion.chunk",
             "choices": [{"index": 1, "delta": {"content": "other"}, "finish_reason": "length"}]}
    out = records(sse(chunk({"content": "mine"}), other, chunk(finish="stop"), "[DONE]"))
    assert channel_text(out, Channel.ANSWER) == "mine" and out[-1].stop_reason == "stop"


def test_model_is_a_meta_record_once_and_groq_usage_is_read():
    usage = {"prompt_tokens": 1, "completion_tokens": 1}
    out = records(sse(chunk({"content": "a"}, model="m1"), chunk({"content": "b"}, model="m1"),
                      chunk(finish="stop", x_groq={"id": "x", "usage": usage}), "[DONE]"))
    assert [r for r in out if isinstance(r, Meta)] == [Meta("model", "m1")]
    assert out[-1].usage == usage


def test_odd_shapes_are_bad_input_or_skipped_with_lenient():
    out = odd_shapes(sse({"choices": [None, {"index": 0, "delta": "text?"}]}, chunk({"tool_calls": ["x", {}]}),
                      chunk({"tool_calls": [{"index": 0, "function": "f"}]}), chunk({"tool_calls": {"a": 1}}),
                      chunk(x_groq="?"), chunk({"reasoning_details": [None, {"text": 3}]}),
                      {"choices": [{"index": 0, "delta": {"content": 5}}]}, "[1, 2]", "[DONE]"), "openai")
    assert out[-1].status is Status.COMPLETE


def test_broken_json_in_an_event_is_bad_input_with_its_byte_offset():
    good = sse(chunk({"content": "Hi"}))
    reader = RecordReader("openai")
    out = reader.feed(good + b'data: {"choices": [\n\n' + sse("[DONE]"))
    assert channel_text(out, Channel.ANSWER) == "Hi"  # the good record before it is kept
    with pytest.raises(BadInput, match=f"at byte {len(good)}"):
        reader.close()
