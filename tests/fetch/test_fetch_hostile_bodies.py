"""fetch against servers whose bodies go wrong: a gzip body cut short or made of several
members, an error status whose body is cut or never ends, a ``retry:`` no sleep can take.
Real processes against raw sockets on 127.0.0.1; each case once went wrong (exit 0 with
data lost, the status lost, a hang, an internal error)."""

from __future__ import annotations

import gzip
import subprocess
import time

from ..raw_http import Catcher
from ..support import SSE_TOOL, clean_env, failed_output

EVENTS = b"".join(b"data: %d\n\n" % i for i in range(100))


def fetch(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, "fetch", *args], capture_output=True, timeout=timeout, env=clean_env())


def head(status: bytes = b"200 OK", extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\nContent-Type: text/event-stream\r\n" + extra
            + b"Connection: close\r\n\r\n")


def served(*pieces: bytes, stall: float = 0.0):
    def answer(seen):
        yield from pieces
        time.sleep(stall)  # (the connection stays open meanwhile)
    return Catcher("127.0.0.1", answer=answer)


def test_a_gzip_body_cut_inside_its_last_member_is_a_cut_not_a_complete_body():
    packed = gzip.compress(EVENTS)
    server = served(head(extra=b"Content-Encoding: gzip\r\n"), packed[:-12])  # no CRC nor length
    try:
        done = fetch(server.base + "/s")
    finally:
        server.close()
    assert done.returncode == 3, done.stderr
    assert b"gzip data ended inside a member" in done.stderr
    body = done.stdout[:done.stdout.rindex(b"\n: sse-tool exit 3")]
    assert EVENTS.startswith(body) and failed_output(done.stdout, body, 3)


def test_a_gzip_body_of_several_members_is_decoded_whole():
    first, second = EVENTS[:500], EVENTS[500:]
    packed = gzip.compress(first) + gzip.compress(second)
    server = served(head(extra=b"Content-Encoding: gzip\r\n"), packed[:len(packed) // 2], packed[len(packed) // 2:])
    try:
        done = fetch(server.base + "/s")
    finally:
        server.close()
    assert (done.returncode, done.stdout) == (0, EVENTS), done.stderr


def test_a_body_that_says_gzip_but_is_not_is_said_so_not_called_a_closed_connection():
    server = served(head(extra=b"Content-Encoding: gzip\r\n"), EVENTS)
    try:
        done = fetch(server.base + "/s")
    finally:
        server.close()
    assert (done.returncode, done.stdout) == (7, b"")
    assert done.stderr.startswith(b"sse-tool fetch: the body could not be decoded: bad gzip data")
    assert done.stderr.count(b"\n") == 1


def test_an_error_status_whose_body_is_cut_is_still_that_status_and_retried():
    body = b'{"error": {"message": "boom"}}'
    server = served(b"HTTP/1.1 500 Oops\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
                    b"Connection: close\r\n\r\n" + body)
    try:
        done = fetch("--retry", "1", "--retry-delay", "10ms", "-w", "%{http_code} %{exit_code}\n", server.base + "/s")
    finally:
        server.close()
    assert done.returncode == 6 and done.stdout == b"" and done.stderr.endswith(b"500 6\n"), done.stderr
    assert len(server.seen) == 2 and b"HTTP 500 Oops: boom" in done.stderr


def test_an_error_status_whose_body_never_ends_is_said_within_seconds():
    server = served(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\n\r\n"
                    b'{"error": {"message": "upstream down"}}', stall=9)
    try:
        began = time.monotonic()
        done = fetch(server.base + "/s")
        took = time.monotonic() - began
    finally:
        server.close()
    assert done.returncode == 6 and b"HTTP 502 Bad Gateway: upstream down" in done.stderr
    assert took < 8.5  # (it waited for ever)


def test_a_retry_no_sleep_can_take_is_a_wait_of_a_day_not_an_internal_error():
    server = served(head(), b"retry: 9300000000000\nid: 1\ndata: a\n\n")
    proc = subprocess.Popen([*SSE_TOOL, "fetch", "--reconnect", server.base + "/s"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    try:
        time.sleep(3)  # the stream ends at once; fetch then waits (it once crashed there)
        assert proc.poll() is None
        proc.send_signal(2)
        out, err = proc.communicate(timeout=20)
    finally:
        server.close()
    assert b"internal error" not in err and b"capped at a day" in err, err
    assert proc.returncode == 130 and out.startswith(b"retry: 9300000000000\nid: 1\ndata: a\n\n")


def test_a_request_that_cannot_be_sent_is_a_usage_error_not_a_network_failure():
    server = served(head() + EVENTS)
    try:
        for args in (["-H", "X-A: a\r\nInjected: b"], ["-X", "GET /x HTTP/1.1"]):
            done = fetch(*args, server.base + "/x")
            assert done.returncode == 2 and done.stdout == b"", (args, done.stderr)
            assert done.stderr.startswith(b"sse-tool fetch: bad request: ") and done.stderr.count(b"\n") == 1
        assert not any(s.header("injected") for s in server.seen)  # nothing of it went out
    finally:
        server.close()


def test_a_failure_after_a_redirect_names_the_host_that_failed():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nobody listens there once the block ends
    server = served(head(b"302 Found", b"Location: http://127.0.0.1:%d/x\r\nContent-Length: 0\r\n" % closed))
    try:
        done = fetch("-L", server.base + "/start")
    finally:
        server.close()
    assert done.returncode == 7
    assert f"cannot connect to 127.0.0.1:{closed}:".encode() in done.stderr, done.stderr
