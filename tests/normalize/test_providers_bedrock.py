"""The Bedrock adapter: Converse events, exceptions, and InvokeModelWithResponseStream chunks
read by the model family's adapter. (The recordings' texts, status, stop reason, tool calls
and usage: ``test_normalize_fixtures``; every cut: ``test_every_cut_normalize``.)"""

from __future__ import annotations

import base64
import json
import subprocess

import pytest

from sse_tool.eventstream import EventStreamParser
from sse_tool.model import (
    Channel, Citation, Delta, End, Meta, Redacted, Signature, Status, ToolCall, Usage,
)
from sse_tool.providers.bedrock import Bedrock

from ..support import (
    FIXTURES, SAMPLES, SSE_TOOL, bedrock_event, bedrock_exception, clean_env, event_message, read_records,
)


def records(stream: bytes) -> list:
    return read_records([stream])


def test_a_tool_call_streams_its_input_under_the_block_index():
    out = records((SAMPLES / "bedrock-converse-tool-reasoning.eventstream").read_bytes())
    calls = [r for r in out if isinstance(r, ToolCall)]
    assert calls[0] == ToolCall(3, "tooluse_Qm3vX8rT2nLk5pWz9aYbCd", "buscar_ejemplos", "")
    assert json.loads("".join(c.arguments for c in calls)) == {"palabra": "lanzamiento", "idioma": "es", "máximo": 2}
    assert out[-1].tool_calls == [{"index": 3, "id": "tooluse_Qm3vX8rT2nLk5pWz9aYbCd",
                                   "name": "buscar_ejemplos", "complete_json": True}]


def test_signatures_and_redacted_reasoning_are_kept_with_their_block():
    out = records((SAMPLES / "bedrock-converse-tool-reasoning.eventstream").read_bytes())
    (signature,) = [r for r in out if isinstance(r, Signature)]
    (redacted,) = [r for r in out if isinstance(r, Redacted)]
    assert signature.index == 0 and signature.signature.startswith("ErcBCkgI")
    assert redacted == Redacted("RXF3S0NrZ0lCeEFCR0FJaVFLenp1WTN4MnZOb1ZkS3c=", 1)


def test_usage_and_latency_come_from_the_metadata_event():
    out = records((FIXTURES / "bedrock" / "converse-stream-text.eventstream").read_bytes())
    usage = [r for r in out if isinstance(r, Usage)]
    assert usage == [Usage({"inputTokens": 13, "outputTokens": 82, "totalTokens": 95})]  # {} serverToolUsage left out
    assert Meta("metrics", {"latencyMs": 522}) in out


def test_the_stream_is_complete_at_message_stop_without_the_metadata_event():
    data = (FIXTURES / "bedrock" / "converse-stream-text.eventstream").read_bytes()
    last = EventStreamParser().feed(data)[-1]
    assert last.event == "metadata"
    end = records(data[: last.offset])[-1]
    assert (end.status, end.stop_reason, end.usage) == (Status.COMPLETE, "end_turn", None)


def test_the_padding_field_means_nothing():
    plain = bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hola"}})
    padded = bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hola"}, "p": "abcdefgh"})
    assert records(plain) == records(padded)


def test_a_tool_call_without_input_gets_an_empty_object():
    stream = b"".join([
        bedrock_event("messageStart", {"role": "assistant"}),
        bedrock_event("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "now"}}}),
        bedrock_event("contentBlockStop", {"contentBlockIndex": 0}),
        bedrock_event("messageStop", {"stopReason": "tool_use"}),
    ])
    out = records(stream)
    assert [r for r in out if isinstance(r, ToolCall)] == [ToolCall(0, "t1", "now", ""), ToolCall(0, arguments="{}")]
    assert out[-1].tool_calls == [{"index": 0, "id": "t1", "name": "now", "complete_json": True}]


def test_a_citation_delta_is_a_citation_record():
    citation = {"title": "Lanzamiento", "sourceContent": [{"text": "El lanzamiento "}, {"text": "del cohete"}],
                "location": {"web": {"url": "https://example.org/cohete", "domain": "example.org"}}}
    out = Bedrock().feed("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"citation": citation}})
    assert out == [Citation(citation, "https://example.org/cohete", "Lanzamiento", "El lanzamiento del cohete", 2)]


@pytest.mark.parametrize("kind", ["throttlingException", "validationException", "serviceUnavailableException"])
def test_an_exception_first_is_recognised_and_is_a_provider_error(kind):
    out = records(bedrock_exception(kind, "Too many requests, please wait before trying again."))
    assert out[-1] == End(Status.ERROR, None, None, {"type": kind, "message": "Too many requests, please wait before trying again."})


def test_a_model_stream_error_keeps_the_model_status_and_message():
    payload = {"message": "Model stream failed", "originalStatusCode": 500, "originalMessage": "upstream reset"}
    stream = bedrock_event("messageStart", {"role": "assistant"}) + event_message(
        {":message-type": "exception", ":exception-type": "modelStreamErrorException"}, json.dumps(payload).encode())
    assert records(stream)[-1].error == {"type": "modelStreamErrorException", "message": "Model stream failed",
                                         "code": 500, "original_message": "upstream reset"}


def test_an_error_message_is_a_provider_error_named_by_its_code():
    stream = bedrock_event("messageStart", {"role": "assistant"}) + event_message(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"})
    end = records(stream)[-1]
    assert end.error == {"type": "InternalFailure", "message": "boom"}  # its text is a header's
    assert end.status is Status.ERROR


def test_an_exception_whose_payload_is_plain_text_is_a_provider_error_with_that_text():
    # AWS's SDKs take a payload that is not JSON as the message (botocore: {"message": body}).
    stream = bedrock_event("messageStart", {"role": "assistant"}) + event_message(
        {":message-type": "exception", ":exception-type": "throttlingException", ":content-type": "text/plain"},
        b"Too many requests, slow down\n")
    end = records(stream)[-1]
    assert end.status is Status.ERROR
    assert end.error == {"type": "throttlingException", "message": "Too many requests, slow down"}


@pytest.mark.parametrize("stages", [["normalize"], ["frame", "normalize"], ["check"]])
def test_every_stage_reads_the_failure_said_in_headers_or_text(stages, tmp_path):
    head = bedrock_event("messageStart", {"role": "assistant"})
    for failure, said in [
        (event_message({":message-type": "error", ":error-code": "InternalFailure",
                        ":error-message": "The server hit a snag"}), "InternalFailure: The server hit a snag"),
        (event_message({":message-type": "exception", ":exception-type": "throttlingException"},
                       b"Too many requests"), "throttlingException: Too many requests"),
    ]:
        path = tmp_path / "failed.eventstream"
        path.write_bytes(head + failure)
        data = path.read_bytes()
        for stage in stages:
            r = subprocess.run([*SSE_TOOL, stage, "--provider", "bedrock"] if stage == "check" else
                               [*SSE_TOOL, stage], input=data, capture_output=True, env=clean_env(), timeout=60)
            data = r.stdout
        if stages == ["check"]:
            assert r.returncode == 0 and b"stream.not-json" not in r.stdout, r.stdout
        else:
            assert r.returncode == 4 and f"provider error: {said}".encode() in r.stderr, r.stderr


def test_normalize_exits_4_on_an_exception_with_its_message():
    r = subprocess.run([*SSE_TOOL, "normalize", str(SAMPLES / "bedrock-converse-stream-error.eventstream")],
                       capture_output=True, env=clean_env(), timeout=60)
    assert r.returncode == 4
    assert b"provider error: modelStreamErrorException: The model encountered an error" in r.stderr


@pytest.mark.parametrize("reason, early", [
    ("end_turn", False), ("tool_use", False), ("stop_sequence", False), ("max_tokens", True),
    ("model_context_window_exceeded", True), ("content_filtered", True), ("guardrail_intervened", True),
    ("malformed_model_output", True), ("malformed_tool_use", True),
])
def test_strict_exits_9_on_every_documented_stop_reason_that_ends_the_answer_early(reason, early, tmp_path):
    path = tmp_path / "stop.eventstream"
    path.write_bytes(b"".join([
        bedrock_event("messageStart", {"role": "assistant"}),
        bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Some text"}}),
        bedrock_event("messageStop", {"stopReason": reason}),
    ]))
    r = subprocess.run([*SSE_TOOL, "normalize", "--strict", str(path)], capture_output=True, env=clean_env(), timeout=60)
    assert r.returncode == (9 if early else 0), r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["status"] == "complete"


# -- InvokeModelWithResponseStream ------------------------------------------------------

def inner_events(path) -> list[dict]:
    messages = EventStreamParser().feed(path.read_bytes())
    return [json.loads(base64.b64decode(json.loads(m.data)["bytes"])) for m in messages]


def test_an_anthropic_invoke_stream_reads_as_the_same_events_sent_as_sse():
    path = SAMPLES / "bedrock-invoke-anthropic.eventstream"
    events = inner_events(path)
    sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events).encode()
    metrics = Meta("invocation_metrics", events[-1]["amazon-bedrock-invocationMetrics"])
    got = records(path.read_bytes())
    assert metrics in got
    assert [r for r in got if r != metrics] == records(sse)


def test_an_invoke_stream_cut_short_is_truncated_before_the_family_terminal_event():
    end = records((SAMPLES / "bedrock-invoke-truncated.eventstream").read_bytes())[-1]
    assert end.status is Status.TRUNCATED and "inside a message" in end.detail


def test_nova_invoke_chunks_wrap_converse_events():
    out = records((SAMPLES / "bedrock-invoke-nova.eventstream").read_bytes())
    assert out[-1] == End(Status.COMPLETE, "end_turn", {"inputTokens": 9, "outputTokens": 38})
    assert Meta("invocation_metrics", {"inputTokenCount": 9, "outputTokenCount": 38, "invocationLatency": 530,
                                       "firstByteLatency": 201}) in out


def test_a_chunk_of_an_unknown_family_is_kept_as_metadata_and_never_completes():
    chunk = {"bytes": base64.b64encode(b'{"generation": "hola", "stop_reason": null}').decode()}
    out = records(bedrock_event("chunk", chunk))
    assert out[0] == Meta("chunk", {"generation": "hola", "stop_reason": None})
    assert out[-1].status is Status.TRUNCATED


def anthropic_chunks(*texts: str) -> list[bytes]:
    """An InvokeModel stream of Claude's events, one chunk each; the texts are text deltas."""
    events = [{"type": "message_start", "message": {"id": "msg_bdrk_1", "role": "assistant", "content": [],
                                                    "usage": {"input_tokens": 5, "output_tokens": 1}}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
                for t in texts),
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
              {"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 5,
                                                                            "outputTokenCount": 2}}]
    return [bedrock_event("chunk", {"bytes": base64.b64encode(json.dumps(e).encode()).decode()}) for e in events]


@pytest.mark.parametrize("bad", [
    "not base64!",
    base64.b64encode(b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_d').decode(),  # broken JSON
    base64.b64encode(b'{"type": "content_block_delta"}').decode()[:-3],  # torn base64
    "eyJ0eXBlIjogImNvbn\nRlbnQifQ==",  # a stray character a lenient decoder would skip
    base64.b64encode(b'[1, 2]').decode(),  # JSON, but not an event
])
def test_a_chunk_whose_bytes_are_not_base64_json_is_bad_input_as_check_says(bad):
    from sse_tool.check import check
    from sse_tool.errors import BadInput
    from sse_tool.pipeline import RecordReader

    chunks = anthropic_chunks("Hello", " there")
    chunks[3] = bedrock_event("chunk", {"bytes": bad})  # the " there" delta
    offset = len(b"".join(chunks[:3]))
    with pytest.raises(BadInput, match=r"chunk.bytes is not base64 of a JSON object") as caught:
        records(b"".join(chunks))
    assert caught.value.offset == offset
    reader = RecordReader(lenient=True)  # skipped with a warning: the rest is read
    out = reader.feed(b"".join(chunks)) + reader.close()
    assert "".join(r.text for r in out if isinstance(r, Delta)) == "Hello"
    assert out[-1].status is Status.COMPLETE and len(reader.normalizer.warnings) == 1
    assert [(f.rule.id, f.offset) for f in check(b"".join(chunks))] == [("bedrock.chunk-bytes", offset)]


def gpt_oss_chunks(finish: str | None = "stop", metrics: bool = True) -> list[bytes]:
    """An InvokeModel stream of OpenAI-style chunks, as gpt-oss on Bedrock answers: built
    from the documented shapes (docs/providers.md, sections 1 and 8), not recorded. The
    last chunk carries the finish_reason and Bedrock's invocation metrics; no [DONE]."""
    def chunk(delta: dict, reason=None, **extra) -> dict:
        return {"id": "chatcmpl-8f3c2a9e4b7d41c6", "object": "chat.completion.chunk", "created": 1755600000,
                "model": "openai.gpt-oss-20b-1:0",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}], **extra}
    last = {"amazon-bedrock-invocationMetrics": {"inputTokenCount": 18, "outputTokenCount": 9,
                                                 "invocationLatency": 412, "firstByteLatency": 187}} if metrics else {}
    events = [chunk({"role": "assistant", "content": ""}), chunk({"content": "¡Claro! "}),
              chunk({"content": "Se dice «lanzamiento» 🚀"}), chunk({}, finish, **last)]
    return [bedrock_event("chunk", {"bytes": base64.b64encode(json.dumps(e, ensure_ascii=False).encode()).decode(),
                                    "p": "abcdefghij"}) for e in events]


def test_openai_style_invoke_chunks_end_at_the_chunk_with_the_invocation_metrics_after_the_finish():
    from sse_tool.check import check

    data = b"".join(gpt_oss_chunks())
    out = records(data)
    assert out[-1] == End(Status.COMPLETE, "stop")  # [DONE] is not JSON: no chunk can carry it
    assert "".join(r.text for r in out if isinstance(r, Delta)) == "¡Claro! Se dice «lanzamiento» 🚀"
    assert Meta("invocation_metrics", {"inputTokenCount": 18, "outputTokenCount": 9, "invocationLatency": 412,
                                       "firstByteLatency": 187}) in out
    assert check(data) == []


@pytest.mark.parametrize("chunks", [gpt_oss_chunks()[:-1], gpt_oss_chunks(finish=None), gpt_oss_chunks(metrics=False)],
                         ids=["cut-before-the-last-chunk", "metrics-without-a-finish", "finish-without-metrics"])
def test_openai_style_invoke_chunks_without_that_chunk_are_truncated(chunks):
    from sse_tool.check import check

    data = b"".join(chunks)
    assert records(data)[-1].status is Status.TRUNCATED
    assert [f.rule.id for f in check(data)] == ["stream.no-terminal-event"]


def test_openai_style_invoke_chunks_cut_anywhere_are_truncated():
    data = b"".join(gpt_oss_chunks())
    for cut in range(len(data)):
        assert records(data[:cut])[-1].status is Status.TRUNCATED, cut


def test_bedrock_is_recognised_only_by_its_own_events():
    assert Bedrock.recognise("contentBlockDelta", {"delta": {}})
    assert Bedrock.recognise("chunk", {"bytes": "e30="})
    assert Bedrock.recognise("exception:throttlingException", {"message": "x"})
    assert not Bedrock.recognise("message", {"delta": {}})
    assert not Bedrock.recognise("chunk", {"text": "x"})


def test_reasoning_text_is_reasoning_and_empty_deltas_are_dropped():
    adapter = Bedrock()
    assert adapter.feed("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": ""}}) == []
    assert adapter.feed("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"reasoningContent": {"text": "Hmm"}}}) == [
        Delta(Channel.REASONING, "Hmm")]
