"""Bad input of every kind to ``frame``, ``normalize`` and ``render``, as real processes.

Each case ends with the documented exit code and at most one line on stderr, never a
traceback, and whatever good records came before the bad bytes reach stdout first.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile

import pytest

from ..support import FIXTURES, SSE_TOOL, clean_env

WAIT = 60
STAGES = ["frame", "normalize", "render"]
THINKING = FIXTURES / "anthropic/thinking-signature.sse"


def run(stage: str, data: bytes = b"", *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, stage, *args], input=data, capture_output=True, env=clean_env(),
                          timeout=WAIT)


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    assert text.startswith("sse-tool ")
    return text


def random_bytes() -> bytes:
    data = random.Random(7).randbytes(4096)
    assert data[:1] not in (b"[", b"{", b"\n", b"\r", b" ")
    return data


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(65536)


#: what each stage writes when it fails at once with ``code``: its in-band failure marker
#: (frame: the marker record; normalize: the end record; render: nothing)
def failure_output(stage: str, stdout: bytes, code: int) -> None:
    if stage == "render":
        assert stdout == b""
        return
    (line,) = stdout.splitlines()
    record = json.loads(line)
    if stage == "frame":
        assert record["comment"].startswith(f"sse-tool exit {code} frame: ")
    else:
        assert record["type"] == "end" and record["exit"] == code


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("data", [random_bytes(), PNG], ids=["random-bytes", "png"])
def test_binary_input_is_bad_input_exit_5(stage, data):
    p = run(stage, data)
    assert p.returncode == 5
    failure_output(stage, p.stdout, 5)
    assert "binary data" in one_line(p.stderr)


@pytest.mark.parametrize("stage", STAGES)
def test_binary_input_told_it_is_sse_is_read_as_the_spec_says(stage):
    # --from does no guessing: random bytes are an event stream with no events, cut short
    p = run(stage, random_bytes(), "--from", "sse")
    assert p.returncode == 3
    assert "truncated" in one_line(p.stderr)


def _with_invalid_utf8() -> bytes:
    data = (FIXTURES / "anthropic/text-short.sse").read_bytes()
    at = data.index(b'"text":"', data.index(b"text_delta")) + len(b'"text":"')
    return data[:at] + b"\xff\xfe\xc3" + data[at:]


def test_invalid_utf8_in_sse_data_is_replaced_as_the_spec_says_and_the_stream_completes():
    data = _with_invalid_utf8()
    frame, normalize, render = (run(stage, data) for stage in STAGES)
    assert frame.returncode == normalize.returncode == render.returncode == 0
    assert frame.stderr == normalize.stderr == render.stderr == b""
    assert "\ufffd\ufffd\ufffdHello" in frame.stdout.decode()
    deltas = [json.loads(line) for line in normalize.stdout.splitlines()]
    assert {"type": "delta", "channel": "answer", "text": "\ufffd\ufffd\ufffdHello"} in deltas
    assert render.stdout.decode().startswith("\ufffd\ufffd\ufffdHello")


def _broken(lines: list[bytes], at: int) -> bytes:
    return b"".join(lines[:at]) + b'{"type": oops\n' + b"".join(lines[at:])


@pytest.fixture(scope="module")
def records():
    """(frame records, channel records) of the thinking stream, as lines."""
    events = run("frame", THINKING.read_bytes()).stdout.splitlines(keepends=True)
    channel = run("normalize", THINKING.read_bytes()).stdout.splitlines(keepends=True)
    return events, channel


def test_frame_frames_every_line_of_json_lines_and_leaves_the_json_to_its_reader(records):
    events, _ = records
    data = _broken(events, 5)
    p = run("frame", data)
    assert p.returncode == 0 and p.stderr == b""
    assert len(p.stdout.splitlines()) == len(events) + 1


@pytest.mark.parametrize("kind", ["events", "records"])
def test_normalize_emits_every_good_record_before_a_broken_line_then_exits_5(records, kind):
    events, channel = records
    lines = events if kind == "events" else channel
    at = len(lines) - 3
    p = run("normalize", _broken(lines, at))
    assert p.returncode == 5
    message = one_line(p.stderr)
    assert "invalid record" in message and f"at byte {len(b''.join(lines[:at]))}" in message
    good = run("normalize", b"".join(lines[:at])).stdout.splitlines()
    out = p.stdout.splitlines()
    assert out[:-1] == good[:-1]  # the good records; then this stage's own end record, invalid
    end = json.loads(out[-1])
    assert (end["status"], end["exit"], end["offset"]) == ("invalid", 5, len(b"".join(lines[:at])))


@pytest.mark.parametrize("kind", ["events", "records"])
def test_render_shows_the_answer_of_the_good_records_before_a_broken_line_then_exits_5(records, kind):
    events, channel = records
    lines = events if kind == "events" else channel
    at = len(lines) - 3
    p = run("render", _broken(lines, at))
    assert p.returncode == 5
    assert "invalid record" in one_line(p.stderr)
    answer = "".join(json.loads(line).get("text", "") for line in channel[:-1]
                     if json.loads(line).get("channel") == "answer")
    assert p.stdout and answer.encode().startswith(p.stdout)
    assert p.stdout == run("render", b"".join(lines[:at])).stdout


@pytest.mark.parametrize("stage", ["normalize", "render"])
def test_broken_json_in_an_sse_event_comes_after_the_good_records_and_exits_5(stage):
    data = THINKING.read_bytes()
    second_text = data.index(b"text_delta", data.index(b"text_delta") + 1)
    at = data.rindex(b"data: {", 0, second_text) + len(b"data: {")
    p = run(stage, data[:at] + b"oops" + data[at:])  # inside the object: broken JSON
    assert p.returncode == 5
    assert "at byte" in one_line(p.stderr)
    good = run(stage, data[:data.rindex(b"\n\n", 0, at) + 2])
    if stage == "normalize":
        assert p.stdout.splitlines()[:-1] == good.stdout.splitlines()[:-1]
        assert json.loads(p.stdout.splitlines()[-1])["status"] == "invalid"
    else:
        assert p.stdout == good.stdout != b""


@pytest.mark.parametrize("stage", STAGES)
def test_an_empty_input_is_never_success_it_says_no_stream_arrived_and_exits_3(stage):
    p = run(stage, b"")
    assert p.returncode == 3
    failure_output(stage, p.stdout, 3) if stage == "frame" else None
    assert "no stream arrived" in one_line(p.stderr)


@pytest.mark.parametrize("stage", STAGES)
def test_a_file_that_does_not_exist_is_a_usage_error(stage, tmp_path):
    missing = tmp_path / "nowhere.sse"
    p = run(stage, b"", str(missing))
    assert p.returncode == 2
    failure_output(stage, p.stdout, 2)
    assert "No such file or directory" in one_line(p.stderr)


@pytest.mark.parametrize("stage", [*STAGES, "replay"])
def test_a_directory_is_a_usage_error(stage, tmp_path):
    p = run(stage, b"", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "is a directory" in one_line(p.stderr)


# -- a 100 MB line, streamed in: exit 5 at the 64 MiB limit, memory bounded -----------------

HUNDRED_MB = 100 * 2**20
BLOCK = b"x" * 2**20
MAX_RSS = 300 * 2**20


def feed_long_line(stage: str, head: bytes) -> tuple[int, int, bytes]:
    """(exit code, child's peak RSS in bytes, stderr) after streaming ``head`` and then
    100 MB without a newline into ``stage``'s stdin, or until it stops reading. The child
    reports its own peak (``ru_maxrss`` would count the test process it was forked from)."""
    from .test_memory_bounds import _REPORTING

    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "hwm")
        code, stderr = _fed_long_line([sys.executable, "-c", _REPORTING, stage], head,
                                      clean_env(SSE_TOOL_TEST_HWM=report))
        with open(report) as f:
            return code, int(f.read()) * 1024, stderr


def _fed_long_line(command: list[str], head: bytes, env: dict) -> tuple[int, bytes]:
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    try:
        proc.stdin.write(head)
        for _ in range(HUNDRED_MB // len(BLOCK)):
            proc.stdin.write(BLOCK)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # it stopped reading: what we want
    stderr = proc.stderr.read()
    code = proc.wait()
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    proc.stderr.close()
    return code, stderr


@pytest.mark.parametrize("stage, head", [
    ("frame", b"data: "), ("normalize", b"data: "), ("render", b"data: "),
    ("frame", b'{"event":"message","data":"'), ("normalize", b'{"event":"message","data":"'),
    ("render", b'{"type":"delta","channel":"answer","text":"'),
], ids=["frame-sse", "normalize-sse", "render-sse", "frame-json-line", "normalize-json-line",
        "render-json-line"])
def test_a_100_mb_line_stops_at_the_size_limit_with_exit_5_and_bounded_memory(stage, head):
    code, rss, stderr = feed_long_line(stage, head)
    assert code == 5
    assert "larger than the limit of 67108864 bytes" in one_line(stderr)
    assert rss < MAX_RSS, f"max RSS {rss / 2**20:.0f} MiB"
