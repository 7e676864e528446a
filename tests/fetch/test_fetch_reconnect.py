"""``fetch --reconnect`` over real HTTP on 127.0.0.1: against a small server that follows the
spec (``eventsource_server``, none of sse-tool's code) and against ``sse-tool serve``; the
reconnection loop in-process (an injected sleep records the waits), and the command as a
process, piped into ``frame``. The output must frame as the uncut stream does."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import httpx
import pytest

from sse_tool.fetch import BodyCut, ConnectionFailed, HttpError, Request, Timeouts
from sse_tool.fetch.reconnecting import Notice, reconnecting
from sse_tool.marker import RESET_LINE as RESET_MARKER

from ..eventsource_server import SpecServer, blocks_with_ids
from ..serve_process import ServeProcess, fetch
from ..support import FIXTURES, SSE_TOOL, clean_env, cut_positions
from .test_reconnect import frames

SHORT = (FIXTURES / "anthropic" / "text-short.sse").read_bytes()
#: a stream with no provider's terminal event: only the server says when it is over
PLAIN = [(str(n), b"id: %d\nevent: tick\ndata: %d\n\n" % (n, n)) for n in range(1, 7)]


@pytest.fixture(scope="module")
def transport():
    # One transport for the in-process runs: a client of its own would load the CA
    # certificates for every connection, most of the time of these tests.
    with httpx.HTTPTransport() as t:
        yield t


@pytest.fixture
def server(request):
    servers = []

    def start(blocks, plan=None):
        servers.append(SpecServer(blocks, plan))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


class Run:
    """One ``reconnecting`` run: what it wrote, its notices, its waits, how it ended."""

    def __init__(self, url: str, transport, **options) -> None:
        self.out, self.notices, self.waits, self.error = b"", [], [], None
        headers = options.pop("headers", ())
        options.setdefault("delay", 0.0)
        options.setdefault("limit", 20)  # no test needs more: a loop is a failure, not a hang
        try:
            for item in reconnecting(Request("GET", url, headers), sleep=self.waits.append,
                                     transport=transport, trust_env=False, **options):
                if isinstance(item, bytes):
                    self.out += item
                elif isinstance(item, Notice):
                    self.notices.append(item.text)
        except (BodyCut, ConnectionFailed, HttpError) as exc:
            self.error = exc


def test_a_cut_stream_is_resumed_after_the_last_event_id(server, transport):
    blocks = blocks_with_ids(SHORT)
    whole = b"".join(b for _, b in blocks)
    cut = whole.index(b"id: 4\n") + 20  # inside event 4: events 1 to 3 were whole
    srv = server(blocks, lambda n, last: {"cut": cut} if n == 1 else {})
    run = Run(srv.url, transport)
    assert run.error is None and run.out == whole
    assert srv.last_event_ids() == [None, "3"]
    assert "resuming after id 3" in run.notices[0] and len(run.notices) == 1


def test_a_clean_end_is_reconnected_until_the_server_says_204(server, transport):
    srv = server(PLAIN, lambda n, last: {"close": 2} if n <= 3 else {"status": 204})
    run = Run(srv.url, transport)
    assert run.error is None and run.out == b"".join(b for _, b in PLAIN)
    assert srv.last_event_ids() == [None, "2", "4", "6"]
    assert "204 No Content: not reconnecting" in run.notices[-1]


def test_the_providers_terminal_event_ends_it_without_another_request(server, transport):
    srv = server(blocks_with_ids(SHORT))
    run = Run(srv.url, transport)
    assert run.error is None and len(srv.requests) == 1 and not run.notices


def test_retry_sets_the_wait_exactly(server, transport):
    def plan(n, last):
        return ({"close": 1, "prefix": b"retry: 1234\n\n"} if n == 1 else
                {"close": 1, "prefix": b"retry: 50\n\n"} if n == 2 else {"close": 1})
    srv = server(PLAIN, plan)
    run = Run(srv.url, transport, limit=3, delay=9.0)
    assert run.waits == [1.234, 0.05, 0.05]
    assert [f"retry: {v}" in t for v, t in zip((1234, 50, 50), run.notices)] == [True] * 3


def test_a_retry_line_in_the_block_a_cut_ended_sets_the_wait(server, transport):
    # The spec sets the reconnection time when the field is read, not at the blank line.
    blocks = [("1", b"id: 1\ndata: 1\n\n"), ("2", b"id: 2\nretry: 1234\ndata: 2\n\n")]
    cut = b"".join(b for _, b in blocks).index(b"data: 2")
    srv = server(blocks, lambda n, last: {"cut": cut} if n == 1 else {})
    run = Run(srv.url, transport, limit=1, delay=9.0)
    assert run.waits == [1.234] and "retry: 1234" in run.notices[0]


def test_without_retry_the_delay_is_waited(server, transport):
    srv = server(PLAIN, lambda n, last: {"close": 3})
    run = Run(srv.url, transport, delay=0.25)
    assert run.waits == [0.25, 0.25] and run.out == b"".join(b for _, b in PLAIN)


def test_a_refused_connection_is_retried_with_a_growing_backoff(transport):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/"
    run = Run(url, transport, limit=4, delay=0.5, random=lambda: 1.0)
    assert run.waits == [0.5, 1.0, 2.0, 4.0]
    assert isinstance(run.error, ConnectionFailed)
    assert str(run.error).endswith("; not reconnecting: --reconnect-limit 4 reached")


def test_refusals_after_a_connection_that_brought_events_back_off_too(server, transport):
    # The connection that brought events says nothing of the refused ones after it.
    srv = server(PLAIN, lambda n, last: {"close": 2})
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        if not waits:
            srv.close()  # from now on the port refuses
        waits.append(seconds)

    items = reconnecting(Request("GET", srv.url), limit=4, delay=0.5, random=lambda: 1.0,
                         sleep=sleep, transport=transport, trust_env=False)
    with pytest.raises(ConnectionFailed, match="--reconnect-limit 4 reached"):
        for _ in items:
            pass
    assert waits == [0.5, 0.5, 1.0, 2.0]


def test_the_limit_counts_reconnections_and_the_last_connection_decides(server, transport):
    srv = server(PLAIN, lambda n, last: {"close": 1})
    run = Run(srv.url, transport, limit=2)
    assert len(srv.requests) == 3 and run.error is None
    assert run.out == b"".join(b for _, b in PLAIN[:3])
    assert run.notices[-1] == "the server ended the stream; not reconnecting: --reconnect-limit 2 reached"
    cut = server(PLAIN, lambda n, last: {"cut": 30})
    run = Run(cut.url, transport, limit=1)
    assert isinstance(run.error, BodyCut) and len(cut.requests) == 2


def test_an_http_error_ends_the_stream(server, transport):
    srv = server(PLAIN, lambda n, last: {"close": 2} if n == 1 else {"status": 503})
    run = Run(srv.url, transport)
    assert isinstance(run.error, HttpError) and run.error.status == 503
    assert len(srv.requests) == 2 and run.out == b"".join(b for _, b in PLAIN[:2])
    again = server(PLAIN, lambda n, last: {"close": 2} if n == 1 else {"status": 503} if n == 2 else {})
    run = Run(again.url, transport, retry=1, retry_delay=0.0)  # --retry covers each connection
    assert run.error is None and run.out == b"".join(b for _, b in PLAIN)


def test_a_first_answer_that_is_no_event_stream_is_written_as_fetch_writes_it(server, transport):
    srv = server(PLAIN, lambda n, last: {"content_type": "application/json", "close": 1})
    run = Run(srv.url, transport)
    assert run.out == PLAIN[0][1] and len(srv.requests) == 1
    assert "not text/event-stream: not reconnecting" in run.notices[0]


def test_a_reconnection_that_is_no_event_stream_is_not_written(server, transport):
    srv = server(PLAIN, lambda n, last: {"close": 1} if n == 1 else {"content_type": "text/html"})
    run = Run(srv.url, transport)
    assert isinstance(run.error, HttpError) and "text/html" in str(run.error)
    assert run.out == PLAIN[0][1]


def test_a_last_event_id_given_with_H_is_where_the_first_connection_starts(server, transport):
    srv = server(PLAIN, lambda n, last: {})
    run = Run(srv.url, transport, headers=(("Last-Event-ID", "4"),))
    assert srv.last_event_ids() == ["4", "6"] and run.out == b"".join(b for _, b in PLAIN[4:])


def test_with_no_id_the_stream_starts_again_after_the_reset_marker(server, transport):
    blocks = [(None, b"data: %d\n\n" % n) for n in range(4)]
    srv = server(blocks, lambda n, last: {"cut": 12} if n == 1 else {})
    run = Run(srv.url, transport, limit=1)
    assert srv.last_event_ids() == [None, None]
    assert run.out == b"data: 0\n\n" + RESET_MARKER + b"".join(b for _, b in blocks)


def test_max_time_bounds_the_reconnections_too(server, transport):
    srv = server(PLAIN, lambda n, last: {"close": 1})
    run = Run(srv.url, transport, delay=5.0, timeouts=Timeouts(total=2.0))
    assert len(srv.requests) == 1 and "would pass --max-time" in run.notices[-1]


def test_every_cut_of_a_recording_with_ids_against_the_spec_server(server, transport):
    blocks = blocks_with_ids(SHORT, 2)
    whole = b"".join(b for _, b in blocks)
    at = [0]
    srv = server(blocks, lambda n, last: {"cut": at[0], "chunk": 7} if n == 1 else {})
    expected = frames(whole)
    for cut in cut_positions(whole)[:-1]:  # cut after the last byte: that is no cut
        at[0] = cut
        srv.requests.clear()
        run = Run(srv.url, transport)
        assert run.error is None and frames(run.out) == expected, cut
        if b"sse-tool reset" not in run.out:  # resumed: the server's bytes, none added
            assert run.out == whole, cut


# -- against sse-tool serve --------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ids")
    (folder / "short.sse").write_bytes(b"".join(b for _, b in blocks_with_ids(SHORT, 2)))
    (folder / "ticks.sse").write_bytes(b"".join(b for _, b in PLAIN))
    (folder / "patient.sse").write_bytes(b"retry: 60000\nid: 1\ndata: a\n\nid: 2\ndata: b\n\n")
    serve = ServeProcess("--speed", "0", str(folder))
    yield serve, folder
    assert serve.stop() == 130


def test_every_cut_against_serve(served, transport):
    serve, folder = served
    whole = (folder / "short.sse").read_bytes()
    expected = frames(whole)
    for cut in cut_positions(whole)[:-1]:
        url = serve.url(f"/short?cut_after_bytes={cut}&times=1")
        run = Run(url, transport, headers=(("X-Sse-Tool-Test", f"cut-{cut}"),))
        assert run.error is None and frames(run.out) == expected, cut
        if b"sse-tool reset" not in run.out:  # resumed (an id was in force): the server's bytes
            assert run.out == whole, cut


def test_serve_closes_cleanly_after_n_events_and_says_204_at_the_end(served, transport):
    serve, folder = served
    run = Run(serve.url("/ticks?close_after_events=4"), transport)
    assert run.error is None and run.out == (folder / "ticks.sse").read_bytes()
    serve.wait_for(__import__("re").compile(r"resumed after id 6: nothing follows, 204"))


def _pipe(url: str, *fetch_args: str) -> tuple[bytes, int, int, str]:
    """``sse-tool fetch ... URL | sse-tool frame``: frame's output and both exit codes."""
    env = clean_env()
    first = subprocess.Popen([*SSE_TOOL, "fetch", *fetch_args, url], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
    second = subprocess.run([*SSE_TOOL, "frame"], stdin=first.stdout, capture_output=True,
                            env=env, timeout=30)
    first.stdout.close()
    err = first.stderr.read().decode()
    first.stderr.close()
    return second.stdout, first.wait(30), second.returncode, err


def test_fetch_reconnect_piped_into_frame_gives_the_uncut_streams_frames(served):
    serve, folder = served
    whole = (folder / "short.sse").read_bytes()
    uncut, code, frame_code, _ = _pipe(serve.url("/short"))
    assert (code, frame_code) == (0, 0)
    bounds = [i + 2 for i in range(len(whole)) if whole[i:i + 2] == b"\n\n"]
    for cut in (1, 10, bounds[0] - 1, bounds[0], bounds[0] + 1, bounds[1] + 5, bounds[2], len(whole) - 3):
        got, code, frame_code, err = _pipe(serve.url(f"/short?cut_after_bytes={cut}&times=1"),
                                           "--reconnect", "--reconnect-delay", "10ms",
                                           "-H", f"X-Sse-Tool-Test: pipe-{cut}")
        assert (got, code, frame_code) == (uncut, 0, 0), (cut, err)
        assert "reconnect 1 in 0.01s" in err


def test_the_exit_status_is_the_last_connections(served):
    serve, _ = served
    done = fetch(serve.url("/ticks?cut_after_events=2"), "--reconnect-limit", "2",
                 "--reconnect-delay", "1ms")
    assert done.returncode == 3
    assert done.stdout.endswith(b"not reconnecting: --reconnect-limit 2 reached\n")
    assert done.stdout.count(b": sse-tool exit 3 fetch: body cut short") == 1
    assert done.stderr.count("; reconnect ") == 2
    assert [r["data"] for r in _records(done.stdout)] == ["1", "2", "3", "4", "5", "6"]


def test_reconnect_and_retry_partial_are_one_or_the_other():
    for option in (["--reconnect"], ["--reconnect-delay", "1ms"]):
        done = fetch("http://127.0.0.1:9/", *option, "--retry-partial")
        assert done.returncode == 2 and "give one" in done.stderr


def test_a_reader_that_leaves_during_the_wait_ends_fetch_at_once(served):
    # the stream asks for a minute between connections: fetch waited it out, then opened
    # another upstream connection, and only then found the pipe closed
    serve, _ = served
    proc = subprocess.Popen([*SSE_TOOL, "fetch", "--reconnect", serve.url("/patient?close_after_events=1")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    first = b""
    while not first.endswith(b"\n\n"):
        first += os.read(proc.stdout.fileno(), 100)
    started = time.monotonic()
    proc.stdout.close()  # like `| head -c 5`, during the minute's wait
    assert proc.wait(30) == 141 and time.monotonic() - started < 30
    assert proc.stderr.read().decode().count("reconnect 1 in 60s") == 1


def test_a_reconnect_delay_alone_asks_for_reconnection(served):
    # as --reconnect-limit does: an option of reconnection that did nothing would be a trap
    serve, folder = served
    done = fetch(serve.url("/short?cut_after_bytes=500&times=1"), "--reconnect-delay", "1ms",
                 "-H", "X-Sse-Tool-Test: delay-alone")
    assert done.returncode == 0, done.stderr
    assert frames(done.stdout) == frames((folder / "short.sse").read_bytes())
    assert "reconnect 1 in 0.001s" in done.stderr


def test_a_recording_of_a_reconnected_stream_replays_as_the_stream(served, tmp_path):
    serve, folder = served
    rec = tmp_path / "r.rec"
    done = fetch(serve.url("/short?cut_after_bytes=500&times=1"), "--reconnect", "--reconnect-delay",
                 "1ms", "--record", str(rec), "-H", "X-Sse-Tool-Test: record")
    assert done.returncode == 0
    replayed = subprocess.run([*SSE_TOOL, "replay", "--speed", "0", str(rec)], capture_output=True,
                              env=clean_env(), timeout=30)
    assert replayed.returncode == 0 and frames(replayed.stdout) == frames((folder / "short.sse").read_bytes())
    assert "reconnect 1" in rec.read_text()


def _records(out: bytes) -> list[dict]:
    import orjson

    return [orjson.loads(line) for line in frames(out).splitlines() if line.startswith(b"{")
            and b'"data"' in line]
