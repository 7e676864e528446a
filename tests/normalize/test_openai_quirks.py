"""What real OpenAI-compatible servers send beyond OpenAI's own chunks: Mistral's typed
content, tool-call pieces without ``index``, a usage frame before ``[DONE]`` with credits,
and an error frame in place of the rest of the stream."""

from __future__ import annotations

import json

from sse_tool.model import Channel, Status, ToolCall, Usage
from sse_tool.pipeline import RecordReader

from ..support import SAMPLES, channel_text


def records(data: bytes, provider: str = "openai") -> list:
    reader = RecordReader(provider)
    return reader.feed(data) + reader.close()


def sse(*payloads) -> bytes:
    return b"".join(
        b"data: " + (p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)).encode() + b"\n\n"
        for p in payloads
    )


def chunk(delta: dict | None = None, finish=None, **extra) -> dict:
    return {"object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **extra}


def calls(out: list) -> dict[int, tuple]:
    """index -> (id, name, joined arguments)."""
    joined: dict[int, list] = {}
    for r in out:
        if isinstance(r, ToolCall):
            entry = joined.setdefault(r.index, [None, None, ""])
            entry[0] = entry[0] or r.id
            entry[1] = entry[1] or r.name
            entry[2] += r.arguments
    return {k: tuple(v) for k, v in joined.items()}


def test_mistral_typed_parts_split_thinking_from_text_in_the_sample():
    out = records((SAMPLES / "mistral-magistral.sse").read_bytes())
    assert channel_text(out, Channel.REASONING) == (
        "El usuario pregunta cómo se dice «launch» en español cuando se habla de un cohete. "
        "La traducción más natural es «lanzamiento»; también podría añadir un ejemplo breve.")
    assert channel_text(out, Channel.ANSWER).startswith("¡Claro! En español se dice **lanzamiento**.")


def test_mistral_thinking_given_as_a_plain_string_is_reasoning_too():
    parts = [{"type": "thinking", "thinking": "Hmm, "}, {"type": "text", "text": "Sí."}]
    out = records(sse(chunk({"content": parts}), chunk({}, "stop"), "[DONE]"))
    assert (channel_text(out, Channel.REASONING), channel_text(out, Channel.ANSWER)) == ("Hmm, ", "Sí.")


def test_tool_call_pieces_without_index_form_two_calls_in_the_sample():
    out = records((SAMPLES / "mistral-tool-calls-no-index.sse").read_bytes())
    assert calls(out) == {
        0: ("Xq7Rk2pLm", "get_weather", '{"ciudad": "Sevilla", "unidad": "celsius"}'),
        1: ("Pz3Wm8nQa", "get_time", '{"ciudad": "Sevilla"}'),
    }
    assert (out[-1].status, out[-1].stop_reason) == (Status.COMPLETE, "tool_calls")


def test_a_piece_repeating_its_calls_id_continues_that_call():
    piece = {"id": "call_7", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    more = {"id": "call_7", "type": "function", "function": {"name": "get_weather", "arguments": '{"a": 1}'}}
    out = records(sse(chunk({"tool_calls": [piece]}), chunk({"tool_calls": [more]}),
                      chunk({}, "tool_calls"), "[DONE]"))
    assert calls(out) == {0: ("call_7", "get_weather", '{"a": 1}')}
    assert sum(1 for r in out if isinstance(r, ToolCall) and r.id) == 1  # one call starts, not two


def test_usage_frame_before_done_passes_credits_through_to_the_usage_and_end_records():
    out = records((SAMPLES / "credits-usage.sse").read_bytes())
    usage = [r.usage for r in out if isinstance(r, Usage)]
    assert usage == [{"prompt_tokens": 24, "completion_tokens": 58, "total_tokens": 82,
                      "credits_spent": 0.0164, "credits_remaining": 41.2871}]
    assert (out[-1].status, out[-1].stop_reason, out[-1].usage) == (Status.COMPLETE, "stop", usage[0])


def test_a_usage_frame_alone_does_not_end_the_stream():
    frame = {"object": "chat.completion.usage", "usage": {"prompt_tokens": 1, "credits_spent": 0.5}}
    end = records(sse(chunk({"content": "a"}), chunk({}, "stop"), frame))[-1]
    assert end.status is Status.TRUNCATED and end.usage["credits_spent"] == 0.5


def test_an_error_frame_in_place_of_the_rest_is_an_error_not_a_truncation():
    out = records((SAMPLES / "credits-error-frame.sse").read_bytes())
    end = out[-1]
    assert end.status is Status.ERROR and end.detail is None
    assert end.error == {"type": "upstream_error", "code": 502,
                         "message": "upstream connection lost while streaming; 0.0071 credits were charged"}
    assert channel_text(out, Channel.ANSWER) == (
        "¡Claro! En español se dice **lanzamiento**. Por ejemplo: «El lanzamiento del cohete fue todo un éxito» 🚀")


def test_an_error_frame_with_only_a_message_is_an_error():
    end = records(sse(chunk({"content": "a"}), {"error": {"message": "Internal error"}}))[-1]
    assert (end.status, end.error["type"], end.error["message"]) == (Status.ERROR, "error", "Internal error")


def test_the_quirky_samples_are_recognised_as_openai():
    for name in ("mistral-magistral.sse", "mistral-tool-calls-no-index.sse", "credits-usage.sse",
                 "credits-error-frame.sse"):
        reader = RecordReader()
        reader.feed((SAMPLES / name).read_bytes())
        reader.close()
        assert reader.normalizer.provider == "openai", name


# -- what follows the end ---------------------------------------------------------------

def test_nothing_after_done_is_read_whichever_path_reads_it():
    # openai-python and openai-go stop at [DONE]: answer text, a tool call or an error after
    # it reach no client. The common delta chunks after it must not slip through the fast
    # paths (one chunk at a time, or a batch of lines read at once).
    from ..support import FIXTURES, SSE_TOOL, clean_env, read_records

    data = (FIXTURES / "openai-chat" / "openai-text-usage.sse").read_bytes()
    deltas = [block + b"\n\n" for block in data.split(b"\n\n") if b'"content":"' in block]
    late = b"".join(deltas * 40) + b'event: error\ndata: {"error": {"message": "late"}}\n\n'
    expected = read_records([data])
    longer = data + late
    for size in (len(longer), 4096, 100, 7):
        got = read_records([longer[i:i + size] for i in range(0, len(longer), size)])
        assert got == expected, size
    import subprocess

    env = clean_env()
    framed = subprocess.run([*SSE_TOOL, "frame"], input=longer, capture_output=True, env=env, timeout=60).stdout
    piped = subprocess.run([*SSE_TOOL, "normalize"], input=framed, capture_output=True, env=env, timeout=60)
    direct = subprocess.run([*SSE_TOOL, "normalize"], input=data, capture_output=True, env=env, timeout=60)
    assert (piped.returncode, piped.stdout) == (0, direct.stdout)


def test_an_error_event_without_json_data_is_a_provider_error():
    # The SDKs raise on an event named error whatever its data; a bare "data:" dispatches.
    for data, message in [(b"", "an error event with no data"), (b"upstream connect error", "upstream connect error")]:
        stream = sse(chunk({"content": "Hi"})) + b"event: error\ndata: " + data + b"\n\n" + sse(chunk(finish="stop"), "[DONE]")
        end = records(stream)[-1]
        assert end.status is Status.ERROR and end.error == {"type": "error", "message": message}
