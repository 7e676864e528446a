"""The Ollama adapter (``ollama``): ``/api/chat`` and ``/api/generate`` NDJSON."""

from __future__ import annotations

import json

import pytest

from sse_tool.model import Channel, End, Meta, Status, ToolCall, Usage
from sse_tool.pipeline import RecordReader

from ..support import SAMPLES, channel_text, odd_shapes


def records(data: bytes, provider: str = "ollama") -> list:
    reader = RecordReader(provider)
    return reader.feed(data) + reader.close()


def lines(*objects) -> bytes:
    return b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in objects)


def chat(content: str = "", done: bool = False, **extra) -> dict:
    message = {"role": "assistant", "content": content}
    message.update(extra.pop("message", {}))
    return {"model": "qwen3:8b", "created_at": "2025-09-18T10:20:01.5Z", "message": message,
            "done": done, **extra}


def generate(response: str = "", done: bool = False, **extra) -> dict:
    return {"model": "deepseek-r1:8b", "created_at": "2025-09-18T10:20:01.5Z", "response": response,
            "done": done, **extra}


DONE = {"done_reason": "stop", "total_duration": 2318467291, "load_duration": 41562917,
        "prompt_eval_count": 24, "prompt_eval_duration": 182771000, "eval_count": 81,
        "eval_duration": 2081239000}


def test_chat_thinking_is_reasoning_and_content_is_answer():
    out = records(lines(chat(message={"thinking": "Pienso"}), chat(" y "), chat("respondo 🚀"),
                        chat(done=True, **DONE)))
    assert channel_text(out, Channel.REASONING) == "Pienso"
    assert channel_text(out, Channel.ANSWER) == " y respondo 🚀"


def test_generate_reads_response_and_thinking_at_the_top_level():
    out = records(lines(generate(thinking="Hmm"), generate("¡Hola"), generate("!"),
                        generate(done=True, context=[1, 2, 3], **DONE)))
    assert (channel_text(out, Channel.REASONING), channel_text(out, Channel.ANSWER)) == ("Hmm", "¡Hola!")
    assert out[-1].status is Status.COMPLETE


def test_done_line_is_the_end_with_done_reason_and_counts_as_usage():
    out = records(lines(chat("a"), chat(done=True, **DONE)))
    end = out[-1]
    assert (end.status, end.stop_reason) == (Status.COMPLETE, "stop")
    assert end.usage == {k: v for k, v in DONE.items() if k != "done_reason"}
    assert [r.usage for r in out if isinstance(r, Usage)] == [end.usage]


@pytest.mark.parametrize("reason", ["length", "load", "unload"])
def test_other_done_reasons_are_the_stop_reason(reason):
    assert records(lines(chat("a"), chat(done=True, done_reason=reason)))[-1].stop_reason == reason


def test_tool_calls_come_whole_with_arguments_as_json():
    call = {"id": "call_1", "function": {"index": 0, "name": "get_weather",
                                         "arguments": {"ciudad": "Sevilla", "días": 2}}}
    second = {"function": {"name": "get_time", "arguments": {}}}
    out = records(lines(chat(message={"tool_calls": [call]}), chat(message={"tool_calls": [second]}),
                        chat(done=True, **DONE)))
    calls = [r for r in out if isinstance(r, ToolCall)]
    assert [(c.index, c.id, c.name) for c in calls] == [(0, "call_1", "get_weather"), (1, None, "get_time")]
    assert json.loads(calls[0].arguments) == {"ciudad": "Sevilla", "días": 2}
    assert calls[1].arguments == "{}"
    assert channel_text(out, Channel.ANSWER) == ""


def test_an_error_line_is_a_provider_error_even_mid_stream():
    message = "an error was encountered while running the model: unexpected EOF"
    out = records(lines(chat("Hola"), {"error": message}))
    end = out[-1]
    assert end.status is Status.ERROR
    assert end.error == {"type": "error", "message": message}
    assert channel_text(out, Channel.ANSWER) == "Hola"


def test_a_stream_that_is_only_an_error_line_is_an_error():
    assert records(lines({"error": "model 'nope' not found"}), "auto")[-1].status is Status.ERROR


def test_no_done_line_is_truncated():
    end = records(lines(chat("Hola"), chat(" mundo")))[-1]
    assert end.status is Status.TRUNCATED and "terminal event" in end.detail


def test_done_line_without_its_newline_is_whole_and_completes():
    out = records(lines(chat("Hola"), chat(done=True, **DONE))[:-1])
    assert out[-1].status is Status.COMPLETE


def test_done_line_cut_before_its_end_is_truncated():
    data = lines(chat("Hola"), chat(done=True, **DONE))[:-2]
    out = records(data)
    assert out[-1].status is Status.TRUNCATED and out[-1].usage is None
    assert channel_text(out, Channel.ANSWER) == "Hola"  # the cut line is not read at all


def test_model_is_metadata_once():
    out = records(lines(chat("a"), chat("b"), chat(done=True)))
    assert [r.value for r in out if isinstance(r, Meta) and r.key == "model"] == ["qwen3:8b"]


@pytest.mark.parametrize("name", ["ollama-chat-thinking.ndjson", "ollama-generate-thinking.ndjson",
                                  "ollama-chat-tool-call.ndjson"])
def test_auto_detection_recognises_ndjson_and_ollama(name):
    reader = RecordReader()
    out = reader.feed((SAMPLES / name).read_bytes()) + reader.close()
    assert (reader.source, reader.normalizer.provider) == ("ndjson", "ollama")
    assert sum(isinstance(r, End) for r in out) == 1


def test_openai_compatible_chunks_are_not_claimed_by_ollama():
    from sse_tool.providers import recognise
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "a"}}]}
    assert recognise("message", chunk) == "openai"
    assert recognise("message", chat("a")) == "ollama"


def test_odd_shapes_are_bad_input_or_skipped_with_lenient():
    out = odd_shapes(lines(chat(message={"tool_calls": "x", "thinking": 3}), [1], "s",
                           {"model": 5, "message": None, "done": False}, chat(done=True)), "ollama")
    assert out[-1].status is Status.COMPLETE


@pytest.mark.parametrize("line", [0, 1])
def test_a_broken_line_is_bad_input_at_its_offset_the_first_as_any_other(line):
    from sse_tool.check import check
    from sse_tool.errors import BadInput

    good = [lines(chat("A")), lines(chat("B")), lines(chat(done=True, done_reason="stop"))]
    good[line] = good[line].replace(b"}\n", b"\n")  # the last brace lost
    data = b"".join(good)
    offset = len(b"".join(good[:line]))
    with pytest.raises(BadInput) as caught:
        records(data, "auto")
    assert caught.value.offset == offset
    reader = RecordReader(lenient=True)  # skipped with a warning: the other lines are read
    out = reader.feed(data) + reader.close()
    assert channel_text(out, Channel.ANSWER) == "AB".replace("AB"[line], "") and out[-1].status is Status.COMPLETE
    assert [(f.rule.id, f.offset) for f in check(data)] == [("stream.data-not-json", offset)]
