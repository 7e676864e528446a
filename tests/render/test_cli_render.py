"""``sse-tool render`` into a pipe, as a real process (PYTHONUNBUFFERED unset)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time

import pytest

from ..support import EXPECTED, FIXTURES, SSE_TOOL, clean_env

FULL = FIXTURES / "anthropic/thinking-signature.sse"
CUT = FIXTURES / "anthropic/thinking-signature.cut-mid-frame.sse"
ANSWER = next(e for e in EXPECTED if e["file"] == "anthropic/thinking-signature.sse")["answer_text"]
#: a bound on how long to wait for a process (a failure bound, not a timing assertion)
PATIENCE = 20


def run(*args: str, data: bytes = b"", **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, "render", *args], input=data, capture_output=True,
                          env=clean_env(**env), timeout=PATIENCE)


def records(*items: dict) -> bytes:
    return b"".join(json.dumps(item).encode() + b"\n" for item in items)


def delta(text: str, channel: str = "answer") -> dict:
    return {"type": "delta", "channel": channel, "text": text}


def end(status: str = "complete", **extra) -> dict:
    return {"type": "end", "status": status, **extra}


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*SSE_TOOL, "render", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())


def read_until(proc: subprocess.Popen, wanted: bytes) -> bytes:
    """What the process wrote to stdout, once it contains ``wanted`` (or it gives up)."""
    got, deadline = b"", time.monotonic() + PATIENCE
    while wanted not in got and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            got += chunk
    return got


def test_a_complete_stream_prints_the_plain_answer_and_exits_0():
    r = run(data=FULL.read_bytes())
    assert r.returncode == 0
    assert r.stdout == ANSWER.encode() + b"\n"
    assert b"\x1b" not in r.stdout and r.stderr == b""


def test_a_truncated_stream_exits_3_and_says_it_was_cut_off_on_stderr():
    r = run(data=(FIXTURES / "openai-chat/openai-text-usage.cut-before-finish.sse").read_bytes())
    assert r.returncode == 3
    assert r.stdout == b"The capital of the UK is London."
    assert b"cut off" in r.stderr and b"retried" in r.stderr


def test_a_provider_error_exits_4_with_its_type_and_message():
    r = run(data=(FIXTURES / "openai-chat/groq-error-event.sse").read_bytes())
    assert r.returncode == 4
    assert b"provider error: invalid_request_error: Tool call validation failed" in r.stderr


def test_bad_input_exits_5_with_one_line():
    r = run(data=b"{not json\n")
    assert r.returncode == 5 and r.stderr.count(b"\n") == 1


def test_strict_exits_9_when_the_model_stopped_early_and_0_without_it():
    data = records(delta("Once upon a"), end(stop_reason="max_tokens"))
    assert run(data=data).returncode == 0
    r = run("--strict", data=data)
    assert r.returncode == 9 and b"stopped early (max_tokens)" in r.stderr
    assert run("--strict", data=records(delta("Hi"), end(stop_reason="stop"))).returncode == 0


def test_text_reaches_the_reader_before_the_input_ends():
    proc = start()
    proc.stdin.write(records(delta("first words "), delta("arrive")))
    proc.stdin.flush()
    assert read_until(proc, b"first words arrive") == b"first words arrive"
    proc.stdin.write(records(delta(" later"), end()))
    proc.stdin.close()
    assert proc.stdout.read() == b" later\n"
    assert proc.wait(PATIENCE) == 0


def test_release_sentence_lets_out_whole_sentences_while_streaming_and_the_rest_at_the_end():
    proc = start("--release", "sentence")
    proc.stdin.write(records(delta("One sentence. And half"), delta(" of another")))
    proc.stdin.flush()
    assert read_until(proc, b"One sentence. ") == b"One sentence. "
    proc.stdin.write(records(delta(" one."), end()))
    proc.stdin.close()
    assert proc.stdout.read() == b"And half of another one.\n"
    assert proc.wait(PATIENCE) == 0


def test_release_complete_prints_nothing_for_a_truncated_stream_and_exits_3():
    r = run("--release", "complete", data=CUT.read_bytes())
    assert r.returncode == 3 and r.stdout == b""
    r = run("--release", "complete", data=FULL.read_bytes())
    assert r.returncode == 0 and r.stdout == ANSWER.encode() + b"\n"


def test_reasoning_show_streams_it_to_stderr_and_never_to_stdout():
    r = run("--reasoning", "show", data=FULL.read_bytes())
    assert r.stdout == ANSWER.encode() + b"\n"
    assert b"Captain Beak" in r.stderr


def test_from_and_provider_are_passed_to_the_reader():
    data = (FIXTURES / "openai-chat/openai-text-usage.sse").read_bytes()
    assert run("--provider", "openai", "--from", "sse", data=data).returncode == 0
    assert run("--from", "records", data=data).returncode == 5


def test_a_file_argument_is_read_like_stdin():
    assert subprocess.run([*SSE_TOOL, "render", str(FULL)], capture_output=True,
                          env=clean_env(), timeout=PATIENCE).stdout == ANSWER.encode() + b"\n"


@pytest.mark.parametrize("args", [["--interval", "soon"], ["--release", "paragraph"]])
def test_bad_options_are_usage_errors(args):
    assert run(*args).returncode == 2


def test_help_shows_examples_and_the_exit_status():
    r = subprocess.run([*SSE_TOOL, "render", "--help"], capture_output=True, env=clean_env(COLUMNS="100"))
    assert r.returncode == 0
    assert b"Examples:" in r.stdout and b"Exit status:" in r.stdout and b"--on-truncate" in r.stdout


def test_render_into_a_pipe_does_not_import_rich():
    code = ("import sys\nfrom sse_tool.cli import app\ntry:\n    app(prog_name='sse-tool')\n"
            "except SystemExit:\n    pass\nsys.stderr.write(str(any(m.startswith('rich') for m in sys.modules)))")
    r = subprocess.run([SSE_TOOL[0], "-c", code, "render"], input=FULL.read_bytes(),
                       capture_output=True, env=clean_env(), timeout=PATIENCE)
    assert r.stdout == ANSWER.encode() + b"\n" and r.stderr == b"False"


def test_stats_reports_the_paint_count_on_stderr():
    r = run("--stats", data=records(delta("a"), delta("b"), end()))
    assert r.returncode == 0 and b"stats: " in r.stderr and b" paints in " in r.stderr


# -- persisting only what finished -----------------------------------------------------

def test_output_and_output_json_hold_the_result_of_a_complete_stream(tmp_path):
    out, js = tmp_path / "a.txt", tmp_path / "a.json"
    r = run("--output", str(out), "--output-json", str(js), data=FULL.read_bytes())
    assert r.returncode == 0
    assert out.read_bytes() == r.stdout == ANSWER.encode() + b"\n"  # the same bytes as the pipe got
    result = json.loads(js.read_text())
    assert result["status"] == "complete" and result["answer"] == ANSWER
    assert result["stop_reason"] == "end_turn" and "Captain Beak" in result["reasoning"]
    assert result["usage"]["output_tokens"] > 0 and result["tool_calls"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.txt"]  # no temporary left


@pytest.mark.parametrize("data", [CUT.read_bytes(), (FIXTURES / "openai-chat/groq-error-event.sse").read_bytes()],
                         ids=["truncated", "error"])
def test_a_stream_that_did_not_complete_creates_no_file_and_leaves_an_existing_one_untouched(tmp_path, data):
    new, old = tmp_path / "new.txt", tmp_path / "old.json"
    old.write_text("previous answer")
    stamp = os.stat(old).st_mtime_ns
    r = run("--output", str(new), "--output-json", str(old), data=data)
    assert r.returncode in (3, 4)
    assert not new.exists()
    assert old.read_text() == "previous answer" and os.stat(old).st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


def test_ctrl_c_exits_130_and_writes_no_output_file(tmp_path):
    out = tmp_path / "a.txt"
    proc = start("--output", str(out))
    proc.stdin.write(records(delta("partial answer")))
    proc.stdin.flush()
    assert read_until(proc, b"partial answer") == b"partial answer"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(PATIENCE) == 130
    proc.stdin.close()
    assert list(tmp_path.iterdir()) == []


def test_an_output_in_a_missing_directory_is_a_usage_error_before_reading(tmp_path):
    r = run("--output", str(tmp_path / "no" / "a.txt"), data=FULL.read_bytes())
    assert r.returncode == 2 and r.stdout == b""


def test_several_files_are_drawn_in_turn_and_the_exit_code_is_the_first_failure(tmp_path):
    r = subprocess.run([*SSE_TOOL, "render", str(FULL), str(CUT), str(FULL)], capture_output=True,
                       env=clean_env(), timeout=PATIENCE)
    assert r.returncode == 3
    assert r.stdout.startswith((ANSWER + "\n").encode()) and r.stdout.endswith((ANSWER + "\n").encode())
    assert r.stderr.decode().count("truncated") == 1 and f"sse-tool render: {CUT}: truncated" in r.stderr.decode()
    # the cut answer has no newline of its own: the next answer starts a line all the same
    half = tmp_path / "half.jsonl"
    half.write_bytes(records(delta("Half an"), end("truncated")))
    cut_first = subprocess.run([*SSE_TOOL, "render", str(half), str(FULL)], capture_output=True, env=clean_env(),
                               timeout=PATIENCE)
    assert cut_first.stdout == b"Half an\n" + (ANSWER + "\n").encode()
    both = run("-o", str(tmp_path / "x"), str(FULL), str(FULL))
    assert both.returncode == 2 and "one input" in both.stderr.decode()


def test_an_early_stop_is_said_on_stderr_without_strict_too():
    r = run(data=records(delta("Half"), end(stop_reason="max_tokens")))
    assert r.returncode == 0 and r.stdout == b"Half\n"
    assert r.stderr.decode() == "sse-tool render: the model stopped early (max_tokens)\n"


def test_release_complete_with_on_truncate_keep_lets_out_the_partial_answer():
    r = run("--release", "complete", "--on-truncate", "keep", data=records(delta("Half an"), end("truncated")))
    assert r.returncode == 3 and r.stdout == b"Half an"


def test_a_note_of_an_earlier_stage_is_said_on_stderr_as_that_stage_would():
    r = run(data=records({"type": "note", "text": "fetch: HTTP 429; retry 1/2 in 1s (backoff)"},
                         delta("Hi"), end()))
    assert r.returncode == 0 and r.stdout == b"Hi\n"
    assert r.stderr.decode() == "sse-tool fetch: HTTP 429; retry 1/2 in 1s (backoff)\n"


@pytest.mark.parametrize("stage", ["render", "normalize", "frame"])
def test_a_note_without_a_stage_is_said_as_sse_tool_s_own(stage):
    """A note marker written by hand or by another tool names no stage: not "sse-tool ?:"."""
    done = subprocess.run([*SSE_TOOL, stage], input=b": sse-tool note hello there\n\n", capture_output=True,
                          env=clean_env(), timeout=30)
    assert done.stderr.decode().splitlines()[0] == "sse-tool: hello there"
