"""What ``fetch`` shows and records never holds the secret it sent, against a hostile server
that quotes it back in every place and form it can (status line, header names and
values, body split across writes; raw, URL-encoded, JSON-escaped, base64), and a proxy
whose 407 echoes the credentials."""

from __future__ import annotations

import base64
import json
import subprocess
from urllib.parse import quote

import pytest

from sse_tool.mask import forms
from sse_tool.recording import load_recording

from ..raw_http import Catcher
from ..support import SSE_TOOL, clean_env

KEY = "sk-fetch-secret-key/0123456789+abc"
PASSWORD = "proxy-pass-word-42"


def every_form(secret: str) -> set[bytes]:
    return forms(secret) | {quote(secret, safe="/").encode()}


def run_fetch(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, "fetch", *args], capture_output=True, timeout=30,
                          env=clean_env(**(env or {})))


def _echo_everywhere(seen):
    """A 401 that quotes the credential it got in the reason, a header name and value, and
    the body in each form, every form split across two writes."""
    credential = (seen.header("x-api-key") or seen.header("authorization")
                  or seen.header("proxy-authorization") or "").encode("latin-1")
    name = b"X-Seen-" + credential if credential.replace(b"-", b"").isalnum() else b"X-Seen"
    pieces = [b"HTTP/1.1 401 Bad key " + credential + b"\r\nContent-Type: application/json\r\n"
              + name + b": " + credential + b"\r\nConnection: close\r\n\r\n"]
    body = b'{"error": {"message": "Incorrect API key provided: ' + credential + b'", "type": "x"}}\n'
    pieces += [body[:60], body[60:]]
    for form in sorted(every_form(KEY)):
        pieces += [b"quoted " + form[:9], form[9:] + b"\n"]
    return pieces


def _assert_clean(data: bytes, secret: str) -> None:
    for form in every_form(secret):
        assert form not in data, form


def test_a_401_that_quotes_the_key_everywhere_leaves_no_trace_in_the_recording_or_on_stderr(tmp_path):
    server = Catcher("127.0.0.1", answer=_echo_everywhere)
    rec = tmp_path / "x.rec"
    try:
        done = run_fetch("-H", f"x-api-key: {KEY}", "--record", str(rec), server.base + "/v1/messages")
    finally:
        server.close()
    assert done.returncode == 6 and done.stdout == b""
    _assert_clean(done.stderr, KEY)
    data = rec.read_bytes()
    _assert_clean(data, KEY)
    recording = load_recording(rec)
    body = recording.body
    # Same-length masks: the body keeps its size, and its chunks their boundaries.
    expected = b"".join(_echo_everywhere(server.seen[0])[1:])
    assert len(body) == len(expected) and body.count(b"*" * len(KEY)) >= 2
    assert "<redacted>" in recording.response.reason
    assert all("<redacted>" in n or n == "X-Seen" for n, _ in recording.response.headers if n.startswith("X-Seen"))


def test_a_401_quoting_the_key_after_a_retried_body_leaves_no_trace_in_the_recording(tmp_path):
    def answer(seen):  # the first request: a body cut short; the retry: the hostile 401
        if len(server.seen) == 1:
            return [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 99\r\n"
                    b"Connection: close\r\n\r\n", b"data: {\"a\": 1}\n\ndata: {\"b"]
        return _echo_everywhere(seen)

    server = Catcher("127.0.0.1", answer=answer)
    rec = tmp_path / "x.rec"
    try:
        done = run_fetch("-H", f"x-api-key: {KEY}", "--record", str(rec), "--retry", "1",
                         "--retry-partial", "--retry-delay", "1ms", server.base + "/v1/messages")
    finally:
        server.close()
    assert done.returncode == 6 and done.stdout.startswith(b'data: {"a": 1}\n\ndata: {"b\n')
    _assert_clean(done.stderr, KEY)
    _assert_clean(rec.read_bytes(), KEY)
    recording = load_recording(rec)
    assert recording.body == b'data: {"a": 1}\n\ndata: {"b' and "401" in recording.notes[-1]
    assert "Incorrect API key provided: <redacted>" in recording.notes[-1]


def test_a_key_split_across_stream_chunks_is_masked_in_the_recording_with_its_chunk_times(tmp_path):
    key_bytes = KEY.encode()

    def stream(seen):
        return [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                b'data: {"i": 0}\n\ndata: {"echo": "' + key_bytes[:5], key_bytes[5:20],
                key_bytes[20:] + b'"}\n\n', b'data: {"i": 1}\n\n']
    server = Catcher("127.0.0.1", answer=stream)
    rec = tmp_path / "s.rec"
    try:
        done = run_fetch("-H", f"Authorization: Bearer {KEY}", "--record", str(rec), server.base + "/s")
    finally:
        server.close()
    assert done.returncode == 0
    assert done.stdout == b"".join(stream(None)[1:])  # stdout is the stream as it came
    recording = load_recording(rec)
    assert KEY.encode() not in rec.read_bytes()
    assert recording.body == b"".join(stream(None)[1:]).replace(key_bytes, b"*" * len(KEY))
    assert len(recording.chunks) == 4  # one per write, as they arrived
    times = [c.time for c in recording.chunks]
    assert times == sorted(times) and times[-1] - times[0] >= 0.1


def test_basic_credentials_from_the_url_are_masked_raw_and_in_base64(tmp_path):
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()

    def echo(seen):
        return [b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n",
                f"you sent {seen.header('authorization')} = alice:{PASSWORD}\n".encode()]
    server = Catcher("127.0.0.1", answer=echo)
    rec = tmp_path / "b.rec"
    try:
        done = run_fetch("-v", "--record", str(rec), f"http://alice:{PASSWORD}@127.0.0.1:{server.port}/x")
    finally:
        server.close()
    assert done.returncode == 6
    for data in (done.stderr, rec.read_bytes()):
        assert PASSWORD.encode() not in data and basic.encode() not in data
    assert server.seen[0].header("authorization") == f"Basic {basic}"
    # the header that went out is shown (-v) and recorded, masked, as every secret
    assert "> Authorization: Basic <redacted>\n" in done.stderr.decode()
    assert "> Authorization: Basic " in rec.read_text()


def test_a_proxy_407_that_echoes_proxy_authorization_shows_no_credentials(tmp_path):
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()

    def proxy(seen):
        echoed = seen.header("proxy-authorization") or ""
        return [b"HTTP/1.1 407 Proxy Authentication Required\r\nConnection: close\r\n"
                b"Content-Type: text/plain\r\n\r\n",
                f"denied: Proxy-Authorization: {echoed} (alice:{PASSWORD})\n".encode()]
    server = Catcher("127.0.0.1", answer=proxy)
    rec = tmp_path / "p.rec"
    try:
        done = run_fetch("--record", str(rec), "http://api.example.invalid/v1/x",
                         env={"HTTP_PROXY": f"http://alice:{PASSWORD}@127.0.0.1:{server.port}",
                              "NO_PROXY": ""})
    finally:
        server.close()
    assert server.seen and server.seen[0].header("proxy-authorization") == f"Basic {basic}"
    assert done.returncode == 6 and b"407" in done.stderr
    for data in (done.stderr, rec.read_bytes()):
        assert PASSWORD.encode() not in data and basic.encode() not in data


@pytest.mark.parametrize("variable, value, said", [
    ("HTTP_PROXY", f"http://alice:{PASSWORD}@[bad", "invalid value for HTTP_PROXY: not a proxy URL"),
    ("ALL_PROXY", f"http://[{PASSWORD}", "invalid value for ALL_PROXY: not a proxy URL"),
    ("HTTP_PROXY", f"ftp://alice:{PASSWORD}@127.0.0.1:21", "a proxy variable: Unknown scheme for proxy URL"),
    ("HTTP_PROXY", f"socks5://alice:{PASSWORD}@127.0.0.1:1", "a SOCKS proxy"),
], ids=["bad-ipv6", "bad-all-proxy", "scheme", "socks"])
def test_a_proxy_variable_fetch_cannot_use_is_a_usage_error_that_shows_no_password(variable, value, said):
    import importlib.util

    if value.startswith("socks") and importlib.util.find_spec("socksio"):
        pytest.skip("socksio is installed: a SOCKS proxy is usable")
    done = run_fetch("http://127.0.0.1:9/x", env={variable: value, "NO_PROXY": ""})
    assert done.returncode == 2, done.stderr
    text = done.stderr.decode()
    assert said in text and text.count("\n") == 1 and "Traceback" not in text
    assert PASSWORD not in text


@pytest.mark.parametrize("at", [150, 185, 195, 199, 205])
def test_a_key_at_the_edge_of_a_long_message_is_masked_whole_before_the_message_is_cut(at):
    def echo(seen):
        message = "x" * at + " " + KEY + " " + "y" * 300
        return [b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
                json.dumps({"error": {"message": message}}).encode()]
    server = Catcher("127.0.0.1", answer=echo)
    try:
        done = run_fetch("-H", f"x-api-key: {KEY}", server.base + "/v1/x")
    finally:
        server.close()
    assert done.returncode == 6
    line = done.stderr.decode()
    assert line.count("\n") == 1 and line.rstrip().endswith("…")
    for n in range(4, len(KEY)):
        assert KEY[:n] not in line


def test_a_mixed_case_key_quoted_in_a_header_name_is_masked_whatever_its_case(tmp_path):
    # Names are case-insensitive: a server (or httpx) may hand one back lower-cased
    key = "sk-Mixed-Case-Key-0123456789"

    def quoted_in_names(seen):
        sent = seen.header("x-api-key") or ""
        return [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Lower-" + sent.lower().encode()
                + b": 1\r\nX-Upper-" + sent.upper().encode() + b": 2\r\nContent-Length: 10\r\n"
                b"Connection: close\r\n\r\n", b"data: ok\n\n"]

    server = Catcher("127.0.0.1", answer=quoted_in_names)
    rec = tmp_path / "x.rec"
    try:
        done = run_fetch("-v", "-H", f"x-api-key: {key}", "--record", str(rec), server.base + "/v1/messages")
    finally:
        server.close()
    assert done.returncode == 0 and done.stdout == b"data: ok\n\n"
    for shown in (done.stderr, rec.read_bytes()):
        assert key.lower().encode() not in shown.lower()
        assert shown.lower().count(b"x-lower-<redacted>") == 1 and shown.lower().count(b"x-upper-<redacted>") == 1


def test_an_authorization_header_given_is_sent_over_the_url_s_user_and_password(tmp_path):
    # as curl does; httpx put Basic auth from the URL in its place, while the recording said
    # the header given had gone out
    server = Catcher("127.0.0.1")
    try:
        rec = tmp_path / "a.rec"
        given = run_fetch("--record", str(rec), "-H", f"Authorization: Bearer {KEY}",
                          f"http://alice:{PASSWORD}@127.0.0.1:{server.port}/v1/x")
        plain = run_fetch(f"http://alice:{PASSWORD}@127.0.0.1:{server.port}/v1/x")
    finally:
        server.close()
    assert given.returncode == 0 and plain.returncode == 0, given.stderr
    assert [s.header("authorization") for s in server.seen] == [
        f"Bearer {KEY}", "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()]
    sent = [h for h in load_recording(rec).request.headers if h[0].lower() == "authorization"]
    assert sent == [("Authorization", "Bearer <redacted>")], sent
