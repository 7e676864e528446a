"""A stream that fails ends alike whichever stage read its bytes: ``normalize FILE``,
``frame FILE | normalize`` and ``render`` on the raw bytes, on frame's records and on
normalize's records give the same end record, the same exit code and the same answer
text. Each case is an edge where the paths once differed (real processes and pipes)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ..support import FIXTURES, SSE_TOOL, clean_env

TOOL = " ".join(SSE_TOOL)


def shell(line: str, path) -> subprocess.CompletedProcess:
    """``line`` with ``$T`` the command and ``$F`` the input; stdout, stderr, and the exit
    code of each stage of the pipe (``PIPESTATUS``) as the last line of stderr."""
    script = f"set -o pipefail; {line}; echo \"codes ${{PIPESTATUS[*]}}\" >&2"
    return subprocess.run(["bash", "-c", script], capture_output=True, timeout=60,
                          env=clean_env(T=TOOL, F=str(path)))


def codes(done: subprocess.CompletedProcess) -> list[int]:
    return [int(c) for c in done.stderr.decode().splitlines()[-1].split()[1:]]


def end_of(done: subprocess.CompletedProcess) -> dict:
    end = json.loads(done.stdout.splitlines()[-1])
    assert end["type"] == "end"
    end.pop("offset", None)  # (where the framing failed: frame's marker does not carry it)
    return end


def normalized_both_ways(path) -> tuple[dict, dict, int, int]:
    raw = shell("$T normalize $F", path)
    piped = shell("$T frame $F | $T normalize", path)
    return end_of(raw), end_of(piped), codes(raw)[-1], codes(piped)[-1]


def texts_every_way(path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for name, line in (("raw", "$T render < $F"), ("frame", "$T frame < $F | $T render"),
                       ("normalize", "$T normalize < $F | $T render"),
                       ("both", "$T frame < $F | $T normalize | $T render")):
        done = shell(line, path)
        assert b"Traceback" not in done.stderr
        out[name] = (done.stdout, codes(done)[-1])
    return out


OPENAI = (FIXTURES / "openai-chat/openai-text-usage.sse").read_bytes()


def test_broken_json_in_the_last_event_before_a_cut_is_the_cut_on_every_path(tmp_path):
    # the finish chunk complete but its JSON broken, then the body stops inside the next event
    finish = OPENAI.index(b'"finish_reason":"stop"')
    start = OPENAI.rindex(b"data:", 0, finish)
    stop = OPENAI.index(b"\n\n", finish)
    path = tmp_path / "x.sse"
    path.write_bytes(OPENAI[:stop - 20] + b"\n\ndata: {\"id\":")
    raw, piped, raw_code, piped_code = normalized_both_ways(path)
    assert raw == piped and raw["status"] == "truncated" and raw_code == piped_code == 3
    assert {code for _, code in texts_every_way(path).values()} == {3}
    # not before a cut, it is what it is: broken (5), on every path
    path.write_bytes(OPENAI[:stop - 20] + OPENAI[stop:])
    raw, piped, raw_code, piped_code = normalized_both_ways(path)
    assert raw["status"] == piped["status"] == "invalid" and raw_code == piped_code == 5
    assert OPENAI[start:start + 5] == b"data:"


def test_render_shows_all_that_arrived_before_bad_input_whatever_the_timing(tmp_path):
    # "Hello" and " world" in two reads of render's (keep-alives between), then bad input:
    # the text the throttle had not painted yet was dropped on the raw paths
    data = (FIXTURES / "anthropic/text-short.sse").read_bytes()
    start = data.index(b"event: content_block_delta")
    end = data.index(b"\n\n", start) + 2
    world = data[start:end].replace(b'"Hello"', b'" world"')
    path = tmp_path / "x.sse"
    path.write_bytes(data[:end] + b": keep-alive\n\n" * 8000 + world
                     + b'event: message_delta\ndata: {"type":"message_delta",\n\n')
    every = texts_every_way(path)
    assert set(every.values()) == {(b"Hello world", 5)}, every


@pytest.mark.parametrize("done, status, code", [
    (b"data: [DONE] \r\n\r\n", "complete", 0),    # the SDKs take it (they test startswith)
    (b"data: [DONE]\t\n\n", "complete", 0),
    (b"data:  [DONE]\n\n", "invalid", 5),       # nor do they take this: it is not JSON either
])
def test_done_with_whitespace_after_it_ends_the_stream(tmp_path, done, status, code):
    path = tmp_path / "x.sse"
    path.write_bytes(OPENAI[:OPENAI.rindex(b"data: [DONE]")] + done)
    raw, piped, raw_code, piped_code = normalized_both_ways(path)
    assert raw["status"] == piped["status"] == status and raw_code == piped_code == code
    if status == "complete":
        assert raw == piped


def test_a_framing_failure_after_a_tool_call_ends_with_its_summary_on_every_path(tmp_path):
    data = (FIXTURES / "openai-chat/openai-tool-call-usage.sse").read_bytes()
    at = data.index(b"\n\n", data.index(b'"arguments":"country"')) + 2
    path = tmp_path / "x.sse"
    path.write_bytes(data[:at] + b"data: " + b"x" * 5000 + b"\n\n" + data[at:])
    raw = shell("$T normalize --max-event-size 4KiB $F", path)
    piped = shell("$T frame --max-event-size 4KiB $F | $T normalize", path)
    assert codes(raw) == [5] and codes(piped) == [5, 5]
    ends = end_of(raw), end_of(piped)
    assert ends[0]["tool_calls"] == ends[1]["tool_calls"] == [
        {"index": 0, "id": "call_ZR5UUuTt3pf61kjwAJIYdVMj", "name": "get_capital", "complete_json": False}]
    assert ends[0]["status"] == ends[1]["status"] == "invalid"


NO_BODY = {
    "no response": "",
    "a head, no body": "< HTTP/1.1 200 OK\n< content-type: text/event-stream\n",
}


@pytest.mark.parametrize("head", NO_BODY.values(), ids=NO_BODY.keys())
def test_a_recording_of_a_fetch_that_failed_before_its_body_is_no_stream_for_every_stage(tmp_path, head):
    path = tmp_path / "x.rec"
    path.write_text("sse-tool recording 1\nstart 2026-01-01T00:00:00.000000Z\n"
                    "> POST https://api.openai.com/v1/chat/completions\n" + head
                    + "end 0.100000 network connection refused\n")
    normalized = shell("$T normalize $F", path)
    assert codes(normalized) == [3] and end_of(normalized)["status"] == "truncated"
    inspected = shell("$T inspect --json --fail-on truncated $F", path)
    report = json.loads(inspected.stdout.splitlines()[0])
    assert codes(inspected) == [3] and (report["verdict"], report["cause"]) == ("truncated", "network")
    checked = shell("$T check $F", path)
    assert codes(checked) == [3] and b"no stream arrived" in checked.stderr


@pytest.mark.parametrize("after", [b"data: x", b"data: {\"a\"", b"event: ping\ndata: {}\n"])
def test_bytes_after_an_exit_marker_leave_its_code_on_every_path(tmp_path, after):
    # frame wrote its own cut (3) after the marker, so the pipe lost fetch's 7.
    path = tmp_path / "failed.sse"
    path.write_bytes(b"data: {\"choices\":[]}\n\n: sse-tool exit 7 fetch: boom\n" + after)
    raw, piped, raw_code, piped_code = normalized_both_ways(path)
    assert raw == piped and raw["exit"] == 7 and raw_code == piped_code == 7
    render = shell("$T render < $F", path)
    pipe = shell("$T frame < $F | $T normalize | $T render", path)
    assert codes(render) == [7] and codes(pipe) == [7, 7, 7]
