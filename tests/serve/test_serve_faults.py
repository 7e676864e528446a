"""``sse-tool fetch`` (a real process) against ``sse-tool serve`` (a real uvicorn server) for
every fault: the exit code fetch gives and what reached its stdout."""

from __future__ import annotations

import pytest

from sse_tool.model import Reset
from sse_tool.recording import load_recording
from sse_tool.replay import event_ends
from sse_tool.sse import SseEvent, SseParser

from ..serve_process import ServeProcess, fetch, run
from ..support import FIXTURES, failed_output, read_records
from ..fetch.test_replay import make_recording

TEXT_SHORT = (FIXTURES / "anthropic" / "text-short.sse").read_bytes()
ENDS = event_ends(TEXT_SHORT)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    recs = tmp_path_factory.mktemp("recordings")
    (recs / "done.rec").write_text(make_recording(
        [(0.0, TEXT_SHORT[:300]), (0.01, TEXT_SHORT[300:])],
        headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip"),
                 ("content-length", "99"), ("set-cookie", "a=b"), ("x-request-id", "req_1")]))
    (recs / "cut.rec").write_text(make_recording([(0.0, TEXT_SHORT[:400])], "truncated"))
    (recs / "limited.rec").write_text(make_recording(
        [(0.0, b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}')],
        "http-error", status=429, headers=[("content-type", "application/json"), ("retry-after", "7")]))
    (recs / "silent.rec").write_text(make_recording([(0.0, TEXT_SHORT[:ENDS[1]])], "timeout"))
    (recs / "gemini.rec").write_text(make_recording(
        [(0.0, b'data: {"candidates": []}\n\n')],
        url="https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"))
    serve = ServeProcess("--speed", "0", str(FIXTURES), str(recs))
    yield serve
    assert serve.stop() == 130


def frames(data: bytes) -> int:
    return sum(isinstance(item, SseEvent) for item in SseParser().feed(data))


def status_of(data: bytes) -> str:
    return read_records([data])[-1].status.value


def test_a_stream_file_arrives_whole_and_fetch_exits_0(server):
    done = fetch(server.url("/anthropic/text-short"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == TEXT_SHORT


def test_cut_after_bytes_leaves_exactly_those_bytes_and_fetch_exits_3(server):
    done = fetch(server.url("/anthropic/text-short?cut_after_bytes=500"))
    assert done.returncode == 3
    assert failed_output(done.stdout, TEXT_SHORT[:500], 3)
    assert "body cut short after 500 bytes" in done.stderr


def test_cut_after_events_leaves_whole_events_and_normalize_says_truncated(server):
    done = fetch(server.url("/anthropic/text-short?cut_after_events=3"))
    assert done.returncode == 3
    assert failed_output(done.stdout, TEXT_SHORT[:ENDS[2]], 3)
    assert frames(done.stdout) == 3
    assert status_of(done.stdout) == "truncated"


def test_a_cut_before_the_first_byte_is_a_network_failure(server):
    done = fetch(server.url("/anthropic/text-short?cut_after_bytes=0"))
    assert done.returncode == 7 and failed_output(done.stdout, b"", 7)


def test_chunk_writes_reach_the_client_as_separate_pieces(server, tmp_path):
    rec = tmp_path / "chunked.rec"
    done = fetch(server.url("/anthropic/text-short?chunk=64&chunk_delay=20ms&cut_after_bytes=640"),
                 "--record", str(rec))
    assert done.returncode == 3 and failed_output(done.stdout, TEXT_SHORT[:640], 3)
    sizes = [len(c.data) for c in load_recording(rec).chunks]
    # Each write is 64 bytes; a busy reader may get two at once, never a part of one.
    assert len(sizes) > 1 and all(size % 64 == 0 for size in sizes)


def test_byte_by_byte_writes_make_the_same_stream(server):
    done = fetch(server.url("/anthropic/text-short?chunk=1"))
    assert done.returncode == 0 and done.stdout == TEXT_SHORT


def test_a_first_byte_delay_trips_the_first_byte_timeout(server):
    done = fetch(server.url("/anthropic/text-short?first_byte_delay=2s"), "--first-byte-timeout", "200ms")
    assert done.returncode == 8 and failed_output(done.stdout, b"", 8)
    assert "first-byte timeout" in done.stderr


def test_a_chunk_delay_trips_the_idle_timeout_after_the_first_write(server):
    done = fetch(server.url("/anthropic/text-short?chunk_delay=2s"), "--idle-timeout", "200ms")
    assert done.returncode == 8
    assert failed_output(done.stdout, TEXT_SHORT[:ENDS[0]], 8)  # one event per write (--rate at --speed 0)
    assert "idle timeout" in done.stderr


def test_a_stall_sends_headers_and_nothing_else(server):
    done = fetch(server.url("/anthropic/text-short?stall=1"), "--first-byte-timeout", "200ms")
    assert done.returncode == 8 and failed_output(done.stdout, b"", 8)


def test_a_stall_after_events_trips_the_idle_timeout(server):
    done = fetch(server.url("/anthropic/text-short?cut_after_events=2&stall=1"), "--idle-timeout", "200ms")
    assert done.returncode == 8
    assert failed_output(done.stdout, TEXT_SHORT[:ENDS[1]], 8)


def test_keepalives_fill_a_stall_so_only_the_total_timeout_ends_it(server):
    done = fetch(server.url("/anthropic/text-short?cut_after_events=2&stall=1&keepalive=50ms"),
                 "--idle-timeout", "300ms", "--max-time", "1s")
    assert done.returncode == 8 and "total timeout" in done.stderr
    assert done.stdout.startswith(TEXT_SHORT[:ENDS[1]])
    marker = done.stdout.rindex(b": sse-tool exit 8 fetch: total timeout")  # the failure marker last
    assert set(done.stdout[ENDS[1]:marker].splitlines()) == {b": keep-alive"}
    assert frames(done.stdout) == 2


def test_an_error_status_gives_exit_6_and_the_provider_message(server):
    done = fetch(server.url("/anthropic/text-short?status=429&retry_after=1&message=slow+down"))
    assert done.returncode == 6 and failed_output(done.stdout, b"", 6)
    assert "HTTP 429" in done.stderr and "slow down" in done.stderr


def test_an_error_status_with_a_raw_body(server):
    done = fetch(server.url("/anthropic/text-short?status=503&body=upstream+overloaded"))
    assert done.returncode == 6 and "upstream overloaded" in done.stderr


def test_times_lets_a_retry_succeed(server):
    done = fetch(server.url("/anthropic/text-short?status=503&retry_after=0&times=1"), "--retry", "1")
    assert done.returncode == 0 and done.stdout == TEXT_SHORT
    assert "retry 1/1" in done.stderr


def test_times_lets_a_partial_retry_complete_after_a_cut(server):
    done = fetch(server.url("/anthropic/text-short?cut_after_events=2&times=1"),
                 "--retry", "1", "--retry-partial", "--retry-delay", "0")
    assert done.returncode == 0, done.stderr
    assert done.stdout == TEXT_SHORT[:ENDS[1]] + b": sse-tool reset\n\n" + TEXT_SHORT
    assert status_of(done.stdout) == "complete"


@pytest.mark.parametrize("cut", [100, 300, 3000])  # in the first message, its prelude, later
def test_a_partial_retry_of_a_bedrock_stream_completes_after_a_cut(server, cut):
    # The reset marker crosses the binary event stream: the cut message fails its CRC.
    data = (FIXTURES / "bedrock" / "converse-stream-text.eventstream").read_bytes()
    done = fetch(server.url(f"/bedrock/converse-stream-text?cut_after_bytes={cut}&times=1"),
                 "--retry", "1", "--retry-partial", "--retry-delay", "0")
    assert done.returncode == 0, done.stderr
    assert done.stdout == data[:cut] + b"\n: sse-tool reset\n\n" + data
    assert status_of(done.stdout) == "complete"
    records = read_records([done.stdout])
    assert records[records.index(Reset()) + 1:] == read_records([data])  # the draft starts again


def test_a_complete_recording_replays_its_bytes(server):
    done = fetch(server.url("/done"))
    assert done.returncode == 0 and done.stdout == TEXT_SHORT


def test_a_truncated_recording_is_cut_where_it_was_cut(server):
    done = fetch(server.url("/cut"))
    assert done.returncode == 3 and failed_output(done.stdout, TEXT_SHORT[:400], 3)


def test_an_error_recording_answers_its_status_and_body(server):
    done = fetch(server.url("/limited"))
    assert done.returncode == 6 and "HTTP 429" in done.stderr and "slow down" in done.stderr


def test_a_timed_out_recording_goes_silent(server):
    done = fetch(server.url("/silent"), "--idle-timeout", "200ms")
    assert done.returncode == 8 and failed_output(done.stdout, TEXT_SHORT[:ENDS[1]], 8)


def test_a_recording_is_also_served_at_its_recorded_path_and_a_shared_one_is_a_loud_miss(server):
    done = fetch(server.url("/v1beta/models/g:streamGenerateContent?alt=sse"))
    assert done.returncode == 0 and done.stdout == b'data: {"candidates": []}\n\n'
    shared = fetch(server.url("/v1/messages"))  # done.rec, cut.rec, ... all recorded it
    assert shared.returncode == 6 and "HTTP 422" in shared.stderr
    assert "recordings of this exact request" in shared.stderr and "/cut" in shared.stderr


def test_a_fetch_recording_of_a_cut_replays_to_the_same_bytes_and_code(server, tmp_path):
    rec = tmp_path / "live.rec"
    live = fetch(server.url("/anthropic/text-short?cut_after_events=4"), "--record", str(rec))
    replayed = run("replay", "--speed", "0", str(rec))
    assert replayed.returncode == live.returncode == 3
    assert failed_output(live.stdout, TEXT_SHORT[:ENDS[3]], 3)
    assert failed_output(replayed.stdout, TEXT_SHORT[:ENDS[3]], 3, "replay")
