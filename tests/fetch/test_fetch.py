"""fetch against a real local server, in process (typer's CliRunner): every outcome and option.

The process-level behaviours (pipes, signals, buffering) are in test_fetch_process.py.
"""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from sse_tool.cli import app
from sse_tool.fetch import Request, Timeouts, error_message, stream
from sse_tool.recording import load_recording

from ..http_server import LocalServer, event, events
from ..support import failed_output

SECRET = "sk-test-secret-0123456789"


@pytest.fixture(scope="module")
def server():
    s = LocalServer()
    yield s
    s.close()


def fetch(*args, input=None, env=None):
    return CliRunner().invoke(app, ["fetch", *args], input=input, env=env or {})


def test_the_body_arrives_unchanged_and_exit_0(server):
    r = fetch(server.url("/sse?n=5"))
    assert r.exit_code == 0, r.stderr
    assert r.stdout_bytes == events(5) and r.stderr == ""


def test_a_content_length_body_arrives_whole(server):
    r = fetch(server.url("/length?n=4"))
    assert (r.exit_code, r.stdout_bytes) == (0, events(4))


def test_sse_headers_are_sent_by_default_and_can_be_overridden_or_removed(server):
    n = len(server.requests)
    fetch(server.url("/capture/a"))
    fetch(server.url("/capture/b"), "-H", "Accept: application/json", "-H", "Cache-Control:")
    a, b = server.requests[n], server.requests[n + 1]
    assert (a.header("Accept"), a.header("Cache-Control"), a.method) == ("text/event-stream", "no-cache", "GET")
    assert (b.header("Accept"), b.header("Cache-Control")) == ("application/json", None)


def test_data_posts_by_default_and_reads_files_and_stdin(server, tmp_path):
    n = len(server.requests)
    f = tmp_path / "body.json"
    f.write_bytes(b'{"from": "file"}\n')
    fetch(server.url("/capture/d"), "-d", "a=1&b=2")
    fetch(server.url("/capture/f"), "--json", f"@{f}")
    fetch(server.url("/capture/s"), "-X", "PUT", "--json", "@-", input=b'{"from": "stdin"}')
    d, j, s = server.requests[n:n + 3]
    assert (d.method, d.body, d.header("Content-Type")) == ("POST", b"a=1&b=2", "application/x-www-form-urlencoded")
    assert (j.method, j.body, j.header("Content-Type")) == ("POST", b'{"from": "file"}\n', "application/json")
    assert (s.method, s.body) == ("PUT", b'{"from": "stdin"}')


def test_gzip_bodies_are_decoded(server):
    r = fetch(server.url("/gzip?n=4"))
    assert (r.exit_code, r.stdout_bytes) == (0, events(4))


def test_http_errors_exit_6_with_the_providers_message_and_nothing_on_stdout(server):
    r = fetch(server.url("/error?status=401&message=Invalid+API+key&type=authentication_error"))
    assert r.exit_code == 6 and failed_output(r.stdout_bytes, b"", 6)
    assert r.stderr.strip() == "sse-tool fetch: HTTP 401 Unauthorized: Invalid API key (authentication_error)"


def test_long_error_messages_are_shortened_to_one_line(server):
    r = fetch(server.url("/error?status=500&message=" + "word+" * 200 + "end"))
    assert r.exit_code == 6
    assert len(r.stderr.strip().splitlines()) == 1 and len(r.stderr) < 300 and r.stderr.strip().endswith("…")


@pytest.mark.parametrize("body, message", [
    (b'{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}',
     "Quota exceeded (RESOURCE_EXHAUSTED)"),
    (b'[{"error":{"code":400,"message":"Bad model","status":"INVALID_ARGUMENT"}}]', "Bad model (INVALID_ARGUMENT)"),
    (b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "Overloaded (overloaded_error)"),
    (b'{"detail":"Not Found"}', "Not Found"),
    (b'{"error":"model not loaded"}', "model not loaded"),
    (b"<html>\n<body>Bad Gateway</body></html>", "<html> <body>Bad Gateway</body></html>"),
])
def test_error_messages_from_each_providers_shape(body, message):
    assert error_message(body) == message


def test_a_body_cut_short_exits_3_keeping_what_arrived(server):
    for mode in ("length", "chunked", "reset"):
        r = fetch(server.url(f"/cut?after=150&mode={mode}"))
        assert r.exit_code == 3, (mode, r.stderr)
        assert failed_output(r.stdout_bytes, events(20)[:150], 3)
        assert "cut short" in r.stderr


def spec_events(data: bytes) -> list[bytes]:
    """The data of each event a plain WHATWG parser dispatches (every comment ignored,
    sse-tool's markers included; an event without its blank line at the end discarded)."""
    events, pending = [], []
    *lines, _unfinished = data.split(b"\n")
    for line in lines:
        if not line:
            if pending:
                events.append(b"\n".join(pending))
            pending = []
        elif line.startswith(b"data"):
            value = line.partition(b":")[2]
            pending.append(value[1:] if value.startswith(b" ") else value)
    return events


def test_a_cut_event_stays_unfinished_for_any_sse_parser_despite_the_exit_marker(server):
    body = events(20)
    inside = [i for i in range(1, 400) if body[i - 1:i] == b"\n" and body[i:i + 1] != b"\n"]
    for after in (inside[0], inside[3], 150, 151):
        r = fetch(server.url(f"/cut?after={after}&mode=length"))
        assert r.exit_code == 3 and b": sse-tool exit 3 fetch: " in r.stdout_bytes
        got = spec_events(r.stdout_bytes)
        assert got == spec_events(body[:after]) and all(data.endswith(b"}") for data in got), after


def test_a_connection_closed_before_any_body_byte_exits_7(server):
    r = fetch(server.url("/cut?after=0&mode=length"))
    assert r.exit_code == 7 and failed_output(r.stdout_bytes, b"", 7)


def test_a_refused_connection_exits_7(server):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    r = fetch(f"http://127.0.0.1:{port}/")
    assert r.exit_code == 7 and "cannot connect" in r.stderr


@pytest.mark.parametrize("path, option, which", [
    ("/silent?key=t1", "--first-byte-timeout", "first-byte timeout"),
    ("/slow-head?delay=5", "--first-byte-timeout", "first-byte timeout"),
    ("/stall?key=t2", "--idle-timeout", "idle timeout"),
    ("/drip?key=t3&delay=0.05", "--max-time", "total timeout"),
])
def test_each_timeout_exits_8_naming_which(server, path, option, which):
    r = fetch(server.url(path), option, "300ms")
    assert r.exit_code == 8, r.stderr
    assert r.stderr.startswith(f"sse-tool fetch: {which}")


def test_the_connect_timeout_exits_8_naming_it():
    # A listening socket whose accept queue is full drops further SYNs (Linux), so the
    # connection is never made: a connect timeout without leaving 127.0.0.1.
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", port))
        fillers.append(c)
    try:
        r = fetch(f"http://127.0.0.1:{port}/", "--connect-timeout", "300ms", "--max-time", "3s")
    finally:
        for c in fillers + [listener]:
            c.close()
    if "total timeout" in r.stderr:
        pytest.skip("this kernel accepted the connection despite the full queue")
    assert r.exit_code == 8 and r.stderr.startswith("sse-tool fetch: connect timeout"), r.stderr


def test_the_idle_timeout_does_not_fire_while_data_flows(server):
    r = fetch(server.url("/sse?n=6&delay=0.05"), "--idle-timeout", "2s", "--first-byte-timeout", "2s")
    assert (r.exit_code, r.stdout_bytes) == (0, events(6))


def test_retries_after_503_until_the_server_recovers(server):
    r = fetch(server.url("/flaky?key=r1&fail=2&status=503"), "--retry", "3", "--retry-delay", "10ms")
    assert r.exit_code == 0, r.stderr
    assert r.stdout_bytes == events(3)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and all("HTTP 503" in line and "retry" in line and "backoff" in line for line in lines)


def test_retry_after_is_honoured_and_said(server):
    n = len(server.requests)
    r = fetch(server.url("/flaky?key=r2&fail=1&status=429&retry_after=0.3"), "--retry", "1")
    assert r.exit_code == 0, r.stderr
    assert "retry 1/1 in 0.3s (Retry-After)" in r.stderr
    first, second = server.requests[n:n + 2]
    assert second.time - first.time >= 0.29


def test_retries_run_out_and_the_last_failure_decides_the_exit(server):
    r = fetch(server.url("/flaky?key=r3&fail=9&status=502"), "--retry", "1", "--retry-delay", "10ms")
    assert r.exit_code == 6 and r.stderr.count("HTTP 502") == 2


def test_client_errors_are_not_retried(server):
    r = fetch(server.url("/error?status=400"), "--retry", "3")
    assert r.exit_code == 6 and "retry" not in r.stderr


def test_a_partial_body_is_not_retried_without_retry_partial(server):
    r = fetch(server.url("/partial-then-ok?key=p1"), "--retry", "2")
    assert r.exit_code == 3
    assert failed_output(r.stdout_bytes, event(0) + b'data: {"i": 1, "te', 3)


def test_retry_partial_writes_the_reset_marker_on_a_line_of_its_own(server):
    r = fetch(server.url("/partial-then-ok?key=p2"), "--retry", "2", "--retry-partial",
              "--retry-delay", "10ms")
    assert r.exit_code == 0, r.stderr
    assert r.stdout_bytes == event(0) + b'data: {"i": 1, "te' + b"\n: sse-tool reset\n\n" + events(3)


def test_redirects_are_followed_with_L_only(server):
    r = fetch(server.url("/redirect?to=/sse%3Fn%3D2"))
    assert r.exit_code == 6 and "use -L" in r.stderr and failed_output(r.stdout_bytes, b"", 6)
    r = fetch("-L", server.url("/redirect?to=/sse%3Fn%3D2"))
    assert (r.exit_code, r.stdout_bytes) == (0, events(2))


@pytest.mark.parametrize("args, query, said", [
    ((), "to=none&status=302", "HTTP 302 Found: no body and no Location to follow"),
    (("-L",), "to=none&status=302", "HTTP 302 Found: no body and no Location to follow"),
    (("-L",), "to=/sse&status=304", "HTTP 304 Not Modified: no body"),
    ((), "to=/sse&status=304", "HTTP 304 Not Modified: no body"),
])
def test_a_3xx_that_cannot_be_followed_says_why_and_not_to_use_L(server, args, query, said):
    r = fetch(*args, server.url(f"/redirect?{query}"))
    assert r.exit_code == 6 and r.stdout_bytes == b""
    assert r.stderr.strip().endswith(said), r.stderr


def test_credentials_are_not_sent_to_another_origin_on_a_redirect(server):
    n = len(server.requests)
    other = f"http://localhost:{server.port}/capture/elsewhere"
    r = fetch("-L", "-H", f"x-api-key: {SECRET}", "-H", f"Authorization: Bearer {SECRET}",
              server.url("/redirect?to=" + other.replace(":", "%3A").replace("/", "%2F")))
    assert r.exit_code == 0, r.stderr
    hop = server.requests[n + 1]
    assert hop.path == "/capture/elsewhere"
    assert hop.header("x-api-key") is None and hop.header("Authorization") is None


def test_proxies_come_from_the_environment(server):
    n = len(server.requests)
    r = fetch("http://sse-tool.invalid/capture/via-proxy", env={"HTTP_PROXY": server.base, "NO_PROXY": ""})
    assert r.exit_code == 0, r.stderr
    assert server.requests[n].path == "http://sse-tool.invalid/capture/via-proxy"


def test_usage_errors_exit_2(server):
    assert fetch().exit_code == 2
    assert fetch("-H", "no colon", server.url("/sse")).exit_code == 2
    assert fetch("-d", "@/nonexistent/file", server.url("/sse")).exit_code == 2
    assert fetch("--idle-timeout", "soon", server.url("/sse")).exit_code == 2
    assert fetch("--provider", "openai", server.url("/sse")).exit_code == 2
    assert fetch("ftp://127.0.0.1/x").exit_code == 2


# -- secrets ---------------------------------------------------------------------------

def test_verbose_shows_both_heads_with_secrets_redacted(server):
    r = fetch("-v", "-H", f"Authorization: Bearer {SECRET}", "-H", f"x-api-key: {SECRET}",
              server.url(f"/sse?n=1&key={SECRET}"))
    assert r.exit_code == 0
    assert SECRET not in r.stderr
    assert "> GET" in r.stderr and "< HTTP/1.1 200 OK" in r.stderr
    assert "> Authorization: Bearer <redacted>" in r.stderr and "> x-api-key: <redacted>" in r.stderr
    assert "key=<redacted>" in r.stderr


def test_a_key_echoed_in_an_error_body_is_redacted(server):
    r = fetch("-H", f"x-goog-api-key: {SECRET}", server.url(f"/error?status=400&message=bad+key+{SECRET}"))
    assert r.exit_code == 6 and SECRET not in r.stderr and "<redacted>" in r.stderr


def test_keys_from_the_environment_never_appear_in_messages(server):
    r = fetch("--provider", "openai", "--model", "m", "--prompt", "hi", "--base-url",
              server.url(f"/error?status=401&message=key+{SECRET}+rejected&x="),
              env={"OPENAI_API_KEY": SECRET})
    assert r.exit_code == 6 and SECRET not in r.stderr


# -- recording -------------------------------------------------------------------------

def test_a_recording_holds_the_exchange_and_the_exact_body(server, tmp_path):
    path = tmp_path / "x.rec"
    r = fetch("--record", str(path), "-H", f"Authorization: Bearer {SECRET}", "--json", '{"q": 1}',
              server.url(f"/gzip?n=5&key={SECRET}"))
    assert r.exit_code == 0
    text = path.read_text()
    assert SECRET not in text
    rec = load_recording(path)
    assert rec.body == r.stdout_bytes == events(5)
    assert (rec.request.method, rec.request.body) == ("POST", b'{"q": 1}')
    assert ("Authorization", "Bearer <redacted>") in rec.request.headers
    assert rec.response.status == 200 and ("Content-Encoding", "gzip") in rec.response.headers
    assert rec.end.outcome == "complete"
    times = [c.time for c in rec.chunks]
    assert times == sorted(times) and times[0] > 0


def test_a_recording_of_a_failure_says_how_it_ended(server, tmp_path):
    cut, err = tmp_path / "cut.rec", tmp_path / "err.rec"
    fetch("--record", str(cut), server.url("/cut?after=99"))
    fetch("--record", str(err), server.url("/error?status=503&message=busy"))
    c, e = load_recording(cut), load_recording(err)
    assert (c.end.outcome, c.body) == ("truncated", events(20)[:99])
    assert (e.end.outcome, e.response.status) == ("http-error", 503)
    assert json.loads(e.body) == {"error": {"message": "busy", "type": "api_error"}}


def test_a_recording_after_retry_partial_matches_stdout(server, tmp_path):
    path = tmp_path / "p.rec"
    r = fetch("--record", str(path), "--retry", "1", "--retry-partial", "--retry-delay", "1ms", server.url("/partial-then-ok?key=p3"))
    rec = load_recording(path)
    assert rec.body == r.stdout_bytes and any(c.data.endswith(b": sse-tool reset\n\n") for c in rec.chunks)
    assert rec.notes and "retry 1/1" in rec.notes[0]


def test_an_error_that_answers_a_retry_after_a_body_is_a_note_and_replays_like_fetch(server, tmp_path):
    # The stream bytes went to stdout before the retry met a 401; the error's body did not,
    # so it is no chunk of the recording, and a replay writes what fetch wrote.
    path = tmp_path / "e.rec"
    r = fetch("--record", str(path), "--retry", "1", "--retry-partial", "--retry-delay", "1ms",
              server.url("/partial-then-ok?key=e401&then=401"))
    rec = load_recording(path)
    body = event(0) + b'data: {"i": 1, "te'
    assert r.exit_code == 6 and failed_output(r.stdout_bytes, body, 6)
    assert (rec.response.status, rec.body, rec.end.outcome) == (200, body, "http-error")
    assert "the retry was answered HTTP/1.1 401 Unauthorized" in rec.notes[-1]
    assert "something failed" in rec.notes[-1]
    replayed = CliRunner().invoke(app, ["replay", "--speed", "0", str(path)])
    assert replayed.exit_code == 6
    assert replayed.stdout_bytes == r.stdout_bytes.replace(b"exit 6 fetch:", b"exit 6 replay:")


# -- the library -----------------------------------------------------------------------

def test_the_library_yields_the_request_the_head_and_chunks(server):
    from sse_tool.fetch import Head, Sending

    items = list(stream(Request("GET", server.url("/sse?n=2")), timeouts=Timeouts(idle=5)))
    assert isinstance(items[0], Sending) and items[0].attempt == 1
    assert isinstance(items[1], Head) and items[1].status == 200
    assert b"".join(i for i in items if isinstance(i, bytes)) == events(2)


def test_a_transport_can_be_passed_in():
    import httpx

    body = gzip.compress(b"data: x\n\n")

    def answer(request):
        return httpx.Response(200, headers={"content-encoding": "gzip"}, content=body)

    items = list(stream(Request("GET", "http://example.invalid/"), transport=httpx.MockTransport(answer)))
    assert b"".join(i for i in items if isinstance(i, bytes)) == b"data: x\n\n"
