"""``replay``: schedules from recordings and stream files, and the command as a real process."""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import time

import pytest

from sse_tool.errors import ExitCode
from sse_tool.recording import RecordingWriter, load_recording
from sse_tool.redact import Redactor
from sse_tool.replay import (EventEnds, Rate, RateError, Replay, Step, event_ends, parse_rate, play,
                             rate_steps, recording_steps, replay_recording)

from ..serve_process import run
from ..support import FIXTURES, SSE_TOOL, clean_env, failed_output

TEXT_SHORT = FIXTURES / "anthropic" / "text-short.sse"


def make_recording(chunks, outcome="complete", status=200, detail="", end_time=None,
                   headers=(("content-type", "text/event-stream"),),
                   url="https://api.anthropic.com/v1/messages") -> str:
    buf = io.StringIO()
    w = RecordingWriter(buf, Redactor())
    w.start("2026-01-01T00:00:00.000000Z")
    w.request("POST", url, [("x-api-key", "sk-secret-123456")], b"{}")
    w.response("HTTP/1.1", status, "OK" if status == 200 else "Too Many Requests", list(headers))
    for t, data in chunks:
        w.chunk(t, data)
    if outcome is not None:
        last = chunks[-1][0] if chunks else 0.0
        w.end(end_time if end_time is not None else last + 0.001, outcome, detail)
    return buf.getvalue()


def write(tmp_path, text: str, name="r.rec"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rec_of(text: str):
    return load_recording(io.BytesIO(text.encode()))


# -- the sans-I/O schedule -----------------------------------------------------------------


@pytest.mark.parametrize("text, rate", [
    ("20ev", Rate(20, "ev")), ("20", Rate(20, "ev")), ("2.5ev/s", Rate(2.5, "ev")),
    ("512B", Rate(512, "B")), ("4kB", Rate(4000, "B")), ("4KiB/s", Rate(4096, "B")),
    ("1MB", Rate(1_000_000, "B")),
])
def test_rates_are_events_or_bytes_a_second(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["", "fast", "0ev", "-1ev", "20 per second", "4kb/min"])
def test_a_rate_that_is_not_one_is_a_usage_error(text):
    with pytest.raises(RateError) as err:
        parse_rate(text)
    assert err.value.exit_code == ExitCode.USAGE


def test_recording_steps_are_the_recorded_gaps_divided_by_the_speed():
    rec = rec_of(make_recording([(0.4, b"a"), (0.5, b"b"), (1.5, b"c")]))
    assert recording_steps(rec, 1) == [Step(0.4, b"a"), Step(pytest.approx(0.1), b"b"), Step(1.0, b"c")]
    assert [s.delay for s in recording_steps(rec, 2)] == pytest.approx([0.2, 0.05, 0.5])
    assert [s.delay for s in recording_steps(rec, 0)] == [0, 0, 0]


def test_event_rate_writes_one_event_at_a_time_and_the_first_at_once():
    data = TEXT_SHORT.read_bytes()
    steps = rate_steps(data, parse_rate("20ev"))
    assert b"".join(s.data for s in steps) == data
    assert all(s.data.endswith(b"\n\n") for s in steps)
    assert steps[0].delay == 0 and {s.delay for s in steps[1:]} == {0.05}
    assert len(steps) == data.count(b"\n\n")


def test_byte_rate_writes_slices_a_twentieth_of_a_second_apart():
    data = bytes(range(256)) * 40
    steps = rate_steps(data, parse_rate("4kB"))
    assert b"".join(s.data for s in steps) == data
    assert {len(s.data) for s in steps[:-1]} == {200}
    assert steps[1].delay == pytest.approx(0.05)
    slow = rate_steps(b"abc", parse_rate("2B"))
    assert [s.data for s in slow] == [b"a", b"b", b"c"] and slow[1].delay == 0.5


def test_speed_scales_a_rate_and_zero_removes_every_delay():
    data = TEXT_SHORT.read_bytes()
    assert {s.delay for s in rate_steps(data, parse_rate("10ev"), 2)[1:]} == {0.05}
    assert {s.delay for s in rate_steps(data, parse_rate("10ev"), 0)} == {0}


@pytest.mark.parametrize("terminator", [b"\n", b"\r\n", b"\r"])
def test_event_ends_fall_after_each_blank_line_whatever_the_line_ends(terminator):
    data = (b": hi\n\ndata: a\n\nevent: x\ndata: b\n\n").replace(b"\n", terminator)
    ends = event_ends(data)
    assert len(ends) == 2  # the comment is not an event
    assert data[:ends[0]].endswith(b"a" + terminator * 2)
    assert ends[1] == len(data)


def test_event_ends_are_the_same_fed_byte_by_byte():
    data = TEXT_SHORT.read_bytes().replace(b"\n", b"\r\n")
    finder = EventEnds()
    fed = [end for i in range(len(data)) for end in finder.feed(data[i:i + 1])] + finder.close()
    assert fed == event_ends(data)


def test_event_ends_of_a_json_array_and_of_ndjson_are_their_elements():
    assert len(event_ends((FIXTURES / "gemini" / "json-array-no-alt-sse.json").read_bytes())) > 1
    data = b'{"a": 1}\n{"a": 2}\n'
    assert event_ends(data) == [9, 18]


BEDROCK = FIXTURES / "bedrock" / "converse-stream-text.eventstream"


def test_event_ends_of_an_aws_event_stream_are_its_messages_whatever_the_chunking():
    from sse_tool.eventstream import EventStreamParser

    data = BEDROCK.read_bytes()
    ends = [m.end for m in EventStreamParser().feed(data)]
    assert event_ends(data) == ends and ends[-1] == len(data)
    finder = EventEnds()
    assert [e for i in range(len(data)) for e in finder.feed(data[i:i + 1])] + finder.close() == ends


def test_replay_of_an_event_stream_file_writes_it_exactly_a_message_at_a_time():
    data = BEDROCK.read_bytes()
    steps = rate_steps(data, parse_rate("50ev"))
    assert len(steps) == 33 and b"".join(s.data for s in steps) == data
    done = run("replay", "--speed", "0", str(BEDROCK))
    assert done.returncode == 0 and done.stdout == data


@pytest.mark.parametrize("outcome, code", [
    ("complete", ExitCode.OK), ("truncated", ExitCode.TRUNCATED), ("timeout", ExitCode.TIMEOUT),
    ("network", ExitCode.NETWORK), ("interrupted", ExitCode.TRUNCATED),
    ("broken-pipe", ExitCode.TRUNCATED), (None, ExitCode.TRUNCATED),
])
def test_a_replay_ends_with_the_code_of_the_recorded_outcome(outcome, code):
    plan = replay_recording(rec_of(make_recording([(0.1, b"data: a\n\n")], outcome)))
    assert plan.exit_code == code
    assert [s.data for s in plan.steps] == [b"data: a\n\n"]
    assert (plan.message == "") == (code == ExitCode.OK)


def test_an_http_error_replays_no_body_only_its_message():
    text = make_recording([(0.2, b'{"error": {"message": "slow down"}}')], "http-error", status=429,
                          detail="HTTP 429 Too Many Requests: slow down (rate_limit_error)", end_time=0.3)
    plan = replay_recording(rec_of(text), speed=2)
    assert plan.steps == [] and plan.exit_code == ExitCode.HTTP_ERROR
    assert plan.message == "HTTP 429 Too Many Requests: slow down (rate_limit_error)"
    assert plan.tail == pytest.approx(0.15)


# -- the command ---------------------------------------------------------------------------


def chunks_of(data: bytes, size: int):
    return [(0.001 * i, data[i:i + size]) for i in range(0, len(data), size)]


def test_replay_writes_the_recorded_bytes_exactly(tmp_path):
    data = TEXT_SHORT.read_bytes() + "ganar 💪\r\n".encode() + b"\x00\xff"
    path = write(tmp_path, make_recording(chunks_of(data, 7)))
    done = run("replay", "--speed", "0", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == data and done.stderr == b""


def test_replay_of_a_stream_file_writes_it_exactly():
    done = run("replay", "--speed", "0", str(TEXT_SHORT))
    assert done.returncode == 0 and done.stdout == TEXT_SHORT.read_bytes()


def test_replay_reads_a_recording_from_stdin(tmp_path):
    text = make_recording([(0.0, b"data: a\n\n")])
    done = run("replay", "--speed", "0", input=text.encode())
    assert (done.returncode, done.stdout) == (0, b"data: a\n\n")


def test_replay_of_a_truncated_recording_exits_3_after_the_bytes_it_has(tmp_path):
    path = write(tmp_path, make_recording([(0.0, b"data: a\n\ndata: b")], "truncated",
                                          detail="body cut short after 17 bytes"))
    done = run("replay", "--speed", "0", str(path))
    assert done.returncode == 3
    assert failed_output(done.stdout, b"data: a\n\ndata: b", 3, "replay")
    assert b"recorded truncated: body cut short after 17 bytes" in done.stderr


def test_replay_of_an_http_error_writes_nothing_and_exits_6_with_the_status(tmp_path):
    path = write(tmp_path, make_recording([(0.1, b'{"error":{"message":"slow down"}}')], "http-error",
                                          status=429, detail="HTTP 429 Too Many Requests: slow down"))
    done = run("replay", "--speed", "0", str(path))
    assert done.returncode == 6 and failed_output(done.stdout, b"", 6, "replay")
    assert done.stderr.decode().strip() == "sse-tool replay: HTTP 429 Too Many Requests: slow down"


def test_replay_of_a_timed_out_recording_exits_8(tmp_path):
    path = write(tmp_path, make_recording([(0.0, b"data: a\n\n")], "timeout", detail="idle timeout"))
    done = run("replay", "--speed", "0", str(path))
    assert done.returncode == 8 and failed_output(done.stdout, b"data: a\n\n", 8, "replay")


def test_replay_rejects_a_rate_for_a_recording_and_a_bad_rate(tmp_path):
    path = write(tmp_path, make_recording([(0.0, b"data: a\n\n")]))
    done = run("replay", "--rate", "20ev", str(path))
    assert done.returncode == 2 and b"--rate is for stream files" in done.stderr
    done = run("replay", "--rate", "quickly", str(TEXT_SHORT))
    assert done.returncode == 2 and b"not a rate" in done.stderr


def test_a_broken_recording_is_bad_input(tmp_path):
    path = write(tmp_path, "sse-tool recording 1\n> GET http://h/\n0.1 no quotes\n")
    done = run("replay", str(path))
    assert done.returncode == 5 and b"line 3" in done.stderr and b"Traceback" not in done.stderr


def test_a_missing_file_is_a_usage_error(tmp_path):
    done = run("replay", str(tmp_path / "nope.rec"))
    assert done.returncode == 2 and b"nope.rec" in done.stderr


def test_replay_piped_to_normalize_gives_what_the_live_stream_gave(tmp_path):
    data = TEXT_SHORT.read_bytes()
    path = write(tmp_path, make_recording(chunks_of(data, 50)))
    replayed = run("replay", "--speed", "0", str(path))
    assert run("normalize", input=replayed.stdout).stdout == run("normalize", str(TEXT_SHORT)).stdout


def test_replay_keeps_the_recorded_timing_and_flushes_each_chunk(tmp_path):
    # Three chunks 0.3 s apart: the first is readable while the replay still runs (it
    # was flushed, not held), and the whole takes at least the recorded time.
    path = write(tmp_path, make_recording([(0.0, b"data: a\n\n"), (0.3, b"data: b\n\n"),
                                           (0.6, b"data: c\n\n")]))
    began = time.monotonic()
    proc = subprocess.Popen([*SSE_TOOL, "replay", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    first = os.read(proc.stdout.fileno(), 100)
    assert first == b"data: a\n\n"
    assert proc.poll() is None
    rest = proc.stdout.read()
    assert proc.wait(10) == 0
    assert rest == b"data: b\n\ndata: c\n\n"
    assert time.monotonic() - began >= 0.6
    # at twice the speed it still waits, half as long
    began = time.monotonic()
    assert run("replay", "--speed", "2", str(path)).returncode == 0
    assert time.monotonic() - began >= 0.3


def test_replay_interrupted_exits_130_quietly(tmp_path):
    proc = subprocess.Popen([*SSE_TOOL, "replay", "--rate", "1ev", str(TEXT_SHORT)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    assert os.read(proc.stdout.fileno(), 1000)  # running: the first event is out
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 130
    assert proc.stderr.read() == b""


def test_replay_into_a_closed_pipe_exits_quietly(tmp_path):
    data = b"data: x\n\n" * 20000
    path = write(tmp_path, make_recording(chunks_of(data, 9)), "big.rec")
    proc = subprocess.Popen([*SSE_TOOL, "replay", "--speed", "0", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    select.select([proc.stdout], [], [], 10)
    proc.stdout.close()  # like `| head -1`
    assert proc.wait(10) == 141
    assert proc.stderr.read() == b""


def test_a_reader_that_leaves_during_a_wait_ends_the_replay_at_once(tmp_path):
    # a minute to the next event: replay noticed the closed pipe only when it wrote it
    path = tmp_path / "slow.sse"
    path.write_bytes(b"data: a\n\ndata: b\n\n")
    proc = subprocess.Popen([*SSE_TOOL, "replay", "--rate", "0.0167ev", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    assert os.read(proc.stdout.fileno(), 100) == b"data: a\n\n"  # the first event, at once
    started = time.monotonic()
    proc.stdout.close()  # like `| head -1`, while replay waits for the next event
    assert proc.wait(30) == 141 and time.monotonic() - started < 30
    assert proc.stderr.read() == b""


@pytest.mark.parametrize("speed", ["1e-300", "-1", "nan", "inf", "0.0001"])
def test_a_speed_that_would_overflow_the_clock_is_a_usage_error(tmp_path, speed):
    path = write(tmp_path, make_recording([(0.0, b"data: a\n\n"), (1.0, b"data: b\n\n")]))
    done = run("replay", "--speed", speed, str(path))
    assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr


class FakeClock:
    """A clock that moves only when slept on, or when a write takes time."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 9))
        self.now += seconds


def test_play_waits_each_delay_then_the_tail():
    clock, sent = FakeClock(), []
    plan = Replay([Step(0.0, b"a"), Step(0.5, b"b"), Step(0.25, b"c")], 1.0, ExitCode.OK, "")
    play(plan, lambda data: sent.append((clock.now, data)), clock=clock, sleep=clock.sleep)
    assert sent == [(100.0, b"a"), (100.5, b"b"), (100.75, b"c")]
    assert clock.sleeps == [0.5, 0.25, 1.0] and clock.now == 101.75


def test_a_slow_write_delays_the_next_but_does_not_stretch_the_rest():
    clock, sent = FakeClock(), []

    def slow_send(data: bytes) -> None:
        sent.append((clock.now, data))
        if data == b"a":
            clock.now += 0.7  # a reader that takes 0.7 s: past the next step's time

    plan = Replay([Step(0.0, b"a"), Step(0.5, b"b"), Step(0.5, b"c")], 0.0, ExitCode.OK, "")
    play(plan, slow_send, clock=clock, sleep=clock.sleep)
    assert sent == [(100.0, b"a"), (100.7, b"b"), (101.0, b"c")]  # c keeps its time
    assert clock.sleeps == [0.3]


def test_an_empty_input_is_no_stream_and_never_a_success(tmp_path):
    empty = tmp_path / "empty.sse"
    empty.write_bytes(b"")
    for args, name in ((["replay"], "<stdin>"), (["replay", str(empty)], str(empty))):
        done = run(*args)
        assert done.returncode == 3 and done.stdout == b""
        assert done.stderr.decode() == f"sse-tool replay: {name}: no stream arrived (empty input)\n"
