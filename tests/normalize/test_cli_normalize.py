"""``sse-tool normalize`` through the CLI (CliRunner): records out, exit codes, options."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sse_tool.cli import app

from ..support import EXPECTED, FIXTURES

runner = CliRunner()

OPENAI = FIXTURES / "openai-chat/openai-text-usage.sse"
RESPONSES = FIXTURES / "openai-responses/responses-text.sse"


def normalize(*args, input_bytes: bytes | None = None, tmp_path=None):
    """Run normalize on files (CliRunner's stdin has no file descriptor, so bytes go to a file)."""
    argv = ["normalize", *map(str, args)]
    if input_bytes is not None:
        path = tmp_path / "input"
        path.write_bytes(input_bytes)
        argv.append(str(path))
    return runner.invoke(app, argv)


def lines(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def sse(*payloads) -> bytes:
    return b"".join(b"data: " + (p if isinstance(p, bytes) else json.dumps(p).encode()) + b"\n\n"
                    for p in payloads)


def chunk(delta=None, finish=None) -> dict:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta or {},
                                                           "finish_reason": finish}]}


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_every_recording_gives_the_expected_result_and_exit_code(case):
    result = normalize(FIXTURES / case["file"])
    records = lines(result)
    end = records[-1]
    assert [r["type"] for r in records].count("end") == 1 and end["type"] == "end"
    text = {"answer": "", "reasoning": ""}
    for r in records:
        if r["type"] == "delta":
            text[r["channel"]] += r["text"]
    assert (text["answer"], text["reasoning"]) == (case["answer_text"], case["reasoning_text"])
    assert (end["status"], end["stop_reason"]) == (case["status"], case["stop_reason"])
    assert result.exit_code == {"complete": 0, "truncated": 3, "error": 4}[case["status"]]


def test_complete_exits_0_with_nothing_on_stderr():
    result = normalize(OPENAI)
    assert result.exit_code == 0 and result.stderr == ""
    assert lines(result)[-1]["status"] == "complete"


def test_truncated_exits_3_and_says_why_on_one_line():
    result = normalize(FIXTURES / "openai-chat/openai-text-usage.cut-before-finish.sse")
    assert result.exit_code == 3
    assert result.stderr.count("\n") == 1 and "truncated: the stream ended without" in result.stderr


def test_truncated_inside_an_event_after_the_terminal_event_exits_3(tmp_path):
    result = normalize(input_bytes=OPENAI.read_bytes() + b"data: {\"cho", tmp_path=tmp_path)
    assert result.exit_code == 3 and "middle of a line" in result.stderr


def test_provider_error_exits_4_with_its_type_and_message():
    result = normalize(FIXTURES / "openai-chat/groq-error-event.sse")
    assert result.exit_code == 4
    assert "provider error: invalid_request_error: Tool call validation failed" in result.stderr
    assert lines(result)[-1]["error"]["type"] == "invalid_request_error"


def test_broken_json_exits_5_with_its_offset_after_writing_every_good_record(tmp_path):
    good = sse(chunk({"content": "Hi"}), chunk({"content": " there"}))
    result = normalize(input_bytes=good + b'data: {"choices": [\n\n' + sse(b"[DONE]"), tmp_path=tmp_path)
    assert result.exit_code == 5
    assert f"at byte {len(good)}" in result.stderr and "broken JSON" in result.stderr
    assert [r.get("text") for r in lines(result)] == ["Hi", " there", None]
    end = lines(result)[-1]  # every run ends with one end record, bad input included
    assert (end["type"], end["status"], end["exit"], end["offset"]) == ("end", "invalid", 5, len(good))


def test_not_a_provider_format_exits_5(tmp_path):
    result = normalize(input_bytes=sse({"hello": "world"}), tmp_path=tmp_path)
    assert result.exit_code == 5 and "unknown provider format" in result.stderr


def test_an_event_over_the_size_limit_exits_5(tmp_path):
    result = normalize("--max-event-size", "1k", input_bytes=sse(chunk({"content": "x" * 4000})),
                       tmp_path=tmp_path)
    assert result.exit_code == 5 and "--max-event-size" in result.stderr


def test_strict_exits_9_when_the_model_stopped_early(tmp_path):
    body = sse(chunk({"content": "Once upon"}), chunk(finish="length"), b"[DONE]")
    assert normalize(input_bytes=body, tmp_path=tmp_path).exit_code == 0
    result = normalize("--strict", input_bytes=body, tmp_path=tmp_path)
    assert result.exit_code == 9 and "stopped early: length" in result.stderr
    assert lines(result)[-1]["status"] == "complete"


@pytest.mark.parametrize("tail, code, status", [((), 3, "truncated"),
                                                ((b'{"error": {"message": "Token limit reached"}}',), 4, "error")])
def test_strict_leaves_a_cut_or_failed_stream_its_own_code(tail, code, status, tmp_path):
    # finish_reason "length" arrived, but the stream was then cut or failed: not "completed,
    # but the model stopped early" (9), which would hide the cut or the error
    body = sse(chunk({"content": "Once upon"}), chunk(finish="length"), *tail)
    result = normalize("--strict", input_bytes=body, tmp_path=tmp_path)
    assert result.exit_code == code and lines(result)[-1]["status"] == status
    assert "exit" not in lines(result)[-1]


def test_strict_does_not_change_a_normal_stop():
    assert normalize("--strict", OPENAI).exit_code == 0


def test_aggregate_adds_the_channel_text_so_far_to_each_delta():
    result = normalize("--aggregate", FIXTURES / "openai-chat/deepseek-reasoning-content.sse")
    deltas = [r for r in lines(result) if r["type"] == "delta"]
    so_far = {"answer": "", "reasoning": ""}
    for r in deltas:
        so_far[r["channel"]] += r["text"]
        assert r["aggregate"] == so_far[r["channel"]]
    assert "aggregate" not in lines(normalize(OPENAI))[1]


def test_verbose_says_which_provider_auto_chose_and_the_input_kind():
    result = normalize("--verbose", RESPONSES)
    assert "input is sse, provider openai-responses (recognised)" in result.stderr
    result = normalize("--verbose", "--provider", "openai", OPENAI)
    assert "provider openai (as told)" in result.stderr


def test_provider_forces_the_dialect_and_another_dialect_is_bad_input():
    result = normalize("--provider", "openai", RESPONSES)  # a Responses stream read as chat
    assert result.exit_code == 5
    assert "expected openai events, got openai-responses events" in result.stderr
    assert [(r["type"], r["status"]) for r in lines(result)] == [("end", "invalid")]


def test_unknown_provider_is_a_usage_error():
    assert normalize("--provider", "nope", OPENAI).exit_code == 2


def test_frame_records_are_recognised_and_from_forces_the_kind(tmp_path):
    framed = runner.invoke(app, ["frame", str(RESPONSES)]).stdout_bytes
    auto = normalize("-v", input_bytes=framed, tmp_path=tmp_path)
    assert "input is events" in auto.stderr
    assert auto.stdout == normalize(RESPONSES).stdout
    assert normalize("--from", "events", input_bytes=framed, tmp_path=tmp_path).stdout == auto.stdout
    forced = normalize("--from", "sse", input_bytes=framed, tmp_path=tmp_path)
    assert forced.exit_code == 3  # JSON lines read as SSE hold no SSE events: no guessing
    assert lines(forced)[-1]["detail"] == "no events arrived: input ended inside an event (no blank line after its last field)"


def test_records_input_passes_through_unchanged_with_its_exit_code(tmp_path):
    first = normalize(FIXTURES / "openai-chat/groq-error-event.sse")
    again = normalize("-v", input_bytes=first.stdout_bytes, tmp_path=tmp_path)
    assert again.stdout == first.stdout and again.exit_code == 4
    assert "channel records, passed through" in again.stderr


def test_from_records_with_aggregate_adds_aggregates(tmp_path):
    first = normalize(OPENAI).stdout_bytes
    again = normalize("--from", "records", "--aggregate", input_bytes=first, tmp_path=tmp_path)
    assert [r["aggregate"] for r in lines(again) if r["type"] == "delta"][-1] == "The capital of the UK is London."


def test_json_array_input_is_framed_and_normalized():
    result = normalize("-v", FIXTURES / "gemini/json-array-no-alt-sse.json")
    assert result.exit_code == 0 and "input is json-array" in result.stderr


def test_several_files_are_each_their_own_stream_and_the_first_failure_decides():
    result = normalize(OPENAI, FIXTURES / "openai-chat/openai-text-usage.cut-before-finish.sse",
                       FIXTURES / "openai-chat/groq-error-event.sse")
    ends = [r for r in lines(result) if r["type"] == "end"]
    assert [e["status"] for e in ends] == ["complete", "truncated", "error"]
    assert result.exit_code == 3


def test_an_empty_input_is_never_success_it_is_truncated_with_one_end_record(tmp_path):
    result = normalize(input_bytes=b"", tmp_path=tmp_path)
    assert result.exit_code == 3 and lines(result) == [
        {"type": "end", "status": "truncated", "stop_reason": None, "detail": "no stream arrived (empty input)"}]
    assert "no stream arrived" in result.stderr


def test_keep_alives_alone_are_a_truncated_stream(tmp_path):
    result = normalize(input_bytes=b": OPENROUTER PROCESSING\n\n", tmp_path=tmp_path)
    assert result.exit_code == 3 and lines(result) == [
        {"type": "end", "status": "truncated", "stop_reason": None, "detail": "no events arrived"}]


def test_a_missing_file_is_a_usage_error():
    result = normalize("/nonexistent/recording.sse")
    assert result.exit_code == 2 and "nonexistent" in result.stderr


def test_help_shows_an_example_pipe_the_exit_status_and_the_record_format():
    result = runner.invoke(app, ["normalize", "--help"])
    assert result.exit_code == 0
    for needle in ("| sse-tool normalize", "Exit status:", '"type":"end"', "--strict", "--aggregate"):
        assert needle in result.stdout
