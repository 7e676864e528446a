"""``sse-tool frame`` through typer's CliRunner: records, options, exit codes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sse_tool.cli import app

from ..support import FIXTURES

runner = CliRunner()
STREAM = b": ping\nid: 7\nretry: 500\nevent: delta\ndata: {\"a\": 1}\n\ndata: [DONE]\n\n"


def frame(*args: str, input: bytes = STREAM):
    return runner.invoke(app, ["frame", *args], input=input)


def records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_one_record_per_event_with_its_state():
    result = frame()
    assert result.exit_code == 0 and result.stderr == ""
    assert records(result) == [
        {"event": "delta", "data": '{"a": 1}', "id": "7", "retry": 500},
        {"event": "message", "data": "[DONE]", "id": "7", "retry": 500},
    ]


def test_json_parses_data_but_done_stays_a_string():
    assert [r["data"] for r in records(frame("--json"))] == [{"a": 1}, "[DONE]"]


def test_offsets_locate_each_event_in_the_input():
    first, second = records(frame("--offsets"))
    assert STREAM[first["offset"] : first["end"]].startswith(b"id: 7")
    assert STREAM[second["offset"] : second["end"]] == b"data: [DONE]\n"


def test_comments_become_records_in_order():
    assert records(frame("--comments"))[0] == {"comment": "ping"}


def test_a_file_argument_is_read_and_dash_is_stdin():
    path = FIXTURES / "anthropic" / "text-short.sse"
    result = runner.invoke(app, ["frame", str(path), "-"], input=b"data: x\n\n")
    assert result.exit_code == 0 and records(result)[-1] == {"event": "message", "data": "x"}
    assert records(result)[0]["event"] == "message_start"


def test_the_json_array_fixture_is_framed_by_auto_detection():
    result = runner.invoke(app, ["frame", str(FIXTURES / "gemini" / "json-array-no-alt-sse.json")])
    assert result.exit_code == 0 and "candidates" in records(result)[0]["data"]


def test_from_forces_the_framing():
    result = frame("--from", "ndjson", input=b'{"a": 1}\n')
    assert records(result) == [{"event": "message", "data": '{"a": 1}'}]


def test_input_ended_inside_an_event_exits_3_after_the_good_events_and_the_cut_marker():
    result = frame(input=b"data: a\n\ndata: b")
    assert result.exit_code == 3 and records(result) == [
        {"event": "message", "data": "a"},
        {"comment": "sse-tool exit 3 frame: input ended in the middle of a line"},
    ]
    assert result.stderr.count("\n") == 1 and "truncated" in result.stderr
    with_offsets = records(frame("--offsets", input=b"data: a\n\ndata: b"))
    assert with_offsets[-1] == {"comment": "sse-tool exit 3 frame: input ended in the middle of a line",
                                "offset": 16}  # where the input ended


def test_a_clean_end_writes_no_cut_marker_even_with_comments_shown():
    result = frame("--comments", input=b": keep-alive\ndata: a\n\n")
    assert result.exit_code == 0 and records(result) == [
        {"comment": "keep-alive"}, {"event": "message", "data": "a"}]


def test_the_cut_fixture_exits_3():
    result = runner.invoke(app, ["frame", str(FIXTURES / "anthropic" / "thinking-signature.cut-mid-frame.sse")])
    assert result.exit_code == 3 and len(records(result)) == 12 + 1  # the cut marker last


def test_an_event_over_the_limit_exits_5_after_the_events_before_it():
    result = frame("--max-event-size", "1k", input=b"data: a\n\ndata: " + b"x" * 2000 + b"\n\n")
    assert result.exit_code == 5 and records(result)[0] == {"event": "message", "data": "a"}
    assert records(result)[1]["comment"].startswith("sse-tool exit 5 frame: event larger than the limit")
    assert len(records(result)) == 2  # the failure marker last, for later stages
    assert result.stderr.count("\n") == 1 and "--max-event-size" in result.stderr


def test_garbage_after_a_json_array_start_exits_5():
    result = frame(input=b"[1, 2 3]")
    assert result.exit_code == 5 and [r.get("data") for r in records(result)] == ["1", "2", None]
    assert records(result)[-1]["comment"].startswith("sse-tool exit 5 frame: ")


def test_a_missing_file_exits_2_with_one_line():
    result = runner.invoke(app, ["frame", "/nonexistent/stream.sse"])
    assert result.exit_code == 2 and records(result) == [
        {"comment": "sse-tool exit 2 frame: /nonexistent/stream.sse: No such file or directory"}]
    assert result.stderr.count("\n") == 1 and "No such file" in result.stderr


def test_a_bad_size_is_a_usage_error():
    assert frame("--max-event-size", "lots").exit_code == 2


def test_help_shows_an_example_pipe_and_the_exit_codes():
    result = runner.invoke(app, ["frame", "--help"])
    assert result.exit_code == 0
    assert "| sse-tool frame" in result.stdout and "--max-event-size" in result.stdout
    assert "Exit status" in result.stdout
