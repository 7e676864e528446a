"""The record types beyond text and its end (parts, refusals, signatures, redacted reasoning,
citations, server tools, the end's tool-call summary): each one written and read back
unchanged, recognised as channel records, passed through a second ``normalize``, and drawn
(or quietly left out) by ``render``."""

from __future__ import annotations

import json
import subprocess

import orjson
import pytest

from sse_tool.model import (
    RECORD_TYPES, Channel, Citation, Delta, End, Part, Redacted, Signature, Status, ToolCall, ToolResult,
    ToolStatus, from_record, to_record,
)
from sse_tool.pipeline import sniff_lines

from ..marks import spread
from ..support import FIXTURES, SAMPLES, SSE_TOOL, clean_env

EVERY_KIND = [
    Delta(Channel.REFUSAL, "No puedo."),
    Part(Channel.REASONING),
    ToolCall(1, "srvtoolu_1", "web_search", "", server=True),
    ToolStatus(1, "ws_1", "web_search_call", "searching"),
    ToolStatus(1, "ws_1", "web_search_call", "completed", {"id": "ws_1", "action": {"query": "q"}}),
    ToolResult(2, "srvtoolu_1", {"type": "web_search_tool_result", "content": []}),
    Signature("EuYD", 0),
    Signature("c2ln"),
    Redacted("EmwKAhgB", 1),
    Citation({"type": "url_citation", "url": "https://e.org"}, "https://e.org", "E", "cited", 3),
    Citation({"start": 0}),
    End(Status.COMPLETE, "tool_use", tool_calls=[{"index": 0, "id": "c", "name": "f", "complete_json": False}]),
]


@pytest.mark.parametrize("record", EVERY_KIND, ids=lambda r: type(r).__name__)
def test_each_record_is_written_and_read_back_unchanged(record):
    line = to_record(record)
    assert line["type"] in RECORD_TYPES
    assert from_record(orjson.loads(orjson.dumps(line))) == record
    assert sniff_lines(line) == "records"  # a stream starting with it is channel records


def test_fields_left_unknown_are_left_out():
    assert to_record(Signature("s")) == {"type": "signature", "signature": "s"}
    assert to_record(Citation({"a": 1})) == {"type": "citation", "source": {"a": 1}}
    assert to_record(ToolCall(0, arguments="{}")) == {"type": "tool_call", "index": 0, "arguments": "{}"}


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, *args], input=stdin, capture_output=True, env=clean_env(), timeout=60)


STREAMS = [SAMPLES / "openai-responses-web-search.sse", FIXTURES / "anthropic" / "web-search-citations.sse",
           FIXTURES / "gemini" / "grounding-web-search.sse", SAMPLES / "bedrock-converse-tool-reasoning.eventstream",
           FIXTURES / "anthropic" / "redacted-thinking.sse", SAMPLES / "openai-responses-refusal.sse"]


@pytest.mark.parametrize("path", spread(STREAMS, 3, ids=lambda p: p.name))
def test_records_of_every_kind_pass_through_normalize_and_render_draws_the_answer(path):
    records = run("normalize", str(path))
    assert records.returncode == 0, records.stderr
    again = run("normalize", stdin=records.stdout)
    assert again.stdout == records.stdout  # passed through unchanged
    direct, piped = run("render", str(path)), run("render", stdin=records.stdout)
    assert piped.returncode == direct.returncode == 0, piped.stderr
    assert piped.stdout == direct.stdout and piped.stderr == direct.stderr


def test_render_shows_summary_parts_as_paragraphs():
    r = run("render", "--reasoning", "show", str(SAMPLES / "openai-responses-web-search.sse"))
    assert "en español.\n\n**Comprobando el uso**" in r.stderr.decode()
    assert r.stdout.decode() == "¡Claro! Se dice **lanzamiento**: «El lanzamiento del cohete fue un éxito» 🚀.\n"


def test_a_refusal_is_not_the_answer_but_is_said():
    path = str(SAMPLES / "openai-responses-refusal.sse")
    r = run("render", path)
    assert r.returncode == 0 and r.stdout == b""
    assert "the model refused: Lo siento, no puedo ayudar con eso." in r.stderr.decode()
    records = [json.loads(line) for line in run("normalize", path).stdout.splitlines()]
    assert "".join(x["text"] for x in records if x.get("channel") == "refusal") == "Lo siento, no puedo ayudar con eso."
    assert not [x for x in records if x.get("channel") == "answer"]


@pytest.mark.parametrize("stage", ["normalize", "render"])
def test_strict_makes_a_refusal_exit_9(stage):
    r = run(stage, "--strict", str(SAMPLES / "openai-responses-refusal.sse"))
    assert r.returncode == 9 and b"refused" in r.stderr


def test_output_json_says_whether_each_tool_calls_arguments_are_whole(tmp_path):
    out = tmp_path / "result.json"
    r = run("render", "--output-json", str(out), str(SAMPLES / "bedrock-converse-tool-reasoning.eventstream"))
    assert r.returncode == 0, r.stderr
    (call,) = json.loads(out.read_text())["tool_calls"]
    assert call["name"] == "buscar_ejemplos" and call["complete_json"] is True


def openai_tool_stream(*pieces: str, done: bool = True) -> bytes:
    calls = [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": calls}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]}
               for p in pieces]
    out = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return out + (b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n' if done else b"")


@pytest.mark.parametrize("pieces, done, whole", [
    (['{"city": ', '"Bogotá"}'], True, True),
    (['{"city": ', '"Bog'], False, False),  # the stream was cut inside the arguments
    (['{"city": ', '"Bog'], True, False),   # or the provider ended the call with broken JSON
    ([], True, False),                      # no arguments at all: nothing to run
])
def test_the_end_record_says_whether_each_calls_arguments_are_whole_json(pieces, done, whole):
    r = run("normalize", stdin=openai_tool_stream(*pieces, done=done))
    end = json.loads(r.stdout.splitlines()[-1])
    assert end["tool_calls"] == [{"index": 0, "id": "call_1", "name": "get_weather", "complete_json": whole}]
    assert r.returncode == (0 if done else 3)


def test_a_stream_without_tool_calls_has_no_summary():
    end = json.loads(run("normalize", str(SAMPLES / "anthropic-thinking.sse")).stdout.splitlines()[-1])
    assert "tool_calls" not in end


@pytest.mark.parametrize("error, words", [
    ({"type": "overloaded_error", "message": "Overloaded"}, "overloaded_error: Overloaded"),
    ({"type": "error", "message": "internal server error"}, "internal server error"),
    ({"message": "boom"}, "boom"),
    ({"type": "rate_limit"}, "rate_limit"),
    ({}, "error"),
    (None, "error"),
])
def test_a_provider_error_is_said_in_one_line_without_a_type_that_says_nothing(error, words):
    from sse_tool.model import error_words

    assert error_words(error) == words


@pytest.mark.parametrize("code", [0, -1, 256])
def test_an_end_record_whose_exit_is_no_failure_s_code_is_refused(code):
    # exit 0 on a failed end would have made a failure read as success ("failed (exit 0)", 0)
    with pytest.raises(ValueError, match="not a failure's exit code"):
        from_record({"type": "end", "status": "failed", "exit": code})
    for stage in ("render", "normalize"):
        done = run(stage, stdin=b'{"type":"end","status":"failed","stop_reason":null,"exit":%d}\n' % code)
        assert done.returncode == 5, (stage, done.returncode, done.stderr)
