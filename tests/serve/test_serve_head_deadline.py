"""``serve --head-timeout``: a client that never finishes a request head (slowloris) loses
its connection; one that finishes in time, and a response that lasts longer, are served
as before. Raw sockets against a real relay whose upstream is a real server on 127.0.0.1."""

from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest

from ..raw_http import Catcher
from ..serve_process import ServeProcess
from ..support import SSE_TOOL, clean_env

KEY = "sk-head-deadline-key-0123456789"
HEAD = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
EVENTS = [b"data: %d\n\n" % i for i in range(20)]


@pytest.fixture(scope="module")
def upstream():
    # 20 events 50 ms apart: a response that outlasts the head deadline
    answer = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n", *EVENTS]
    server = Catcher("127.0.0.1", answer=lambda seen: answer)
    yield server
    server.close()


@pytest.fixture(scope="module")
def relay(upstream):
    serve = ServeProcess("--upstream", upstream.base, "--provider", "openai", "--head-timeout", "0.5s",
                         env={"OPENAI_API_KEY": KEY})
    yield serve
    assert serve.stop() == 130
    assert KEY not in serve.log()


def connect(relay) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", int(relay.base.rsplit(":", 1)[1])))
    sock.settimeout(10)  # a bound for a hung test, far past the deadline
    return sock


def read_all(sock: socket.socket) -> bytes:
    got = b""
    while data := sock.recv(65536):
        got += data
    return got


def test_a_head_never_finished_gets_a_408_and_the_connection_is_closed(relay, upstream):
    before = len(upstream.seen)
    with connect(relay) as sock:
        sock.sendall(HEAD[:20])  # half a request line, then nothing
        reply = read_all(sock)
    assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n") and b"connection: close" in reply
    assert reply.endswith(b'{"error": {"message": "no whole request head within 0.5s", "type": "request_timeout"}}')
    relay.wait_for(re.compile(r"408 no whole request head within 0\.5s"))
    assert len(upstream.seen) == before


def test_many_half_sent_heads_are_all_dropped_and_the_relay_still_serves(relay):
    socks = [connect(relay) for _ in range(40)]
    try:
        for n, sock in enumerate(socks):
            sock.sendall(HEAD[:n % len(HEAD)])  # nothing at all, or a head cut anywhere
        for n, sock in enumerate(socks):
            reply = read_all(sock)  # the relay closes every one
            assert reply == b"" if n % len(HEAD) == 0 else reply.startswith(b"HTTP/1.1 408 "), (n, reply)
    finally:
        for sock in socks:
            sock.close()
    with connect(relay) as sock:
        sock.sendall(HEAD + b"Connection: close\r\n\r\n")
        assert read_all(sock).startswith(b"HTTP/1.1 200 OK")


def test_a_head_sent_slowly_but_in_time_and_a_response_longer_than_the_deadline_are_served(relay):
    with connect(relay) as sock:
        whole = HEAD + b"Connection: close\r\n\r\n"
        for i in range(0, len(whole), 8):  # in pieces, each a little later
            sock.sendall(whole[i:i + 8])
            time.sleep(0.02)
        reply = read_all(sock)
    assert reply.startswith(b"HTTP/1.1 200 OK") and b"data: 19\n\n" in reply  # ~1 s of events


def test_each_request_on_a_kept_alive_connection_gets_its_own_deadline(relay):
    with connect(relay) as sock:
        sock.sendall(HEAD + b"\r\n")
        first = b""
        while b"data: 19\n\n" not in first:  # (the upstream closed: the relay ends its chunked body)
            first += sock.recv(65536)
        sock.sendall(HEAD[:10])  # the next request's head, never finished
        rest = read_all(sock)
    assert b"HTTP/1.1 408 Request Timeout" in rest


def test_a_head_timeout_of_zero_is_a_usage_error():
    done = subprocess.run([*SSE_TOOL, "serve", "--upstream", "http://127.0.0.1:9", "--provider", "none",
                           "--head-timeout", "0"], capture_output=True, timeout=30, env=clean_env())
    assert done.returncode == 2 and b"--head-timeout must be more than 0" in done.stderr
