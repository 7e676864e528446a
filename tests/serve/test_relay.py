"""The relay (``serve --upstream``) against a fake upstream on 127.0.0.1 (tests/http_server.py):
bytes unchanged and not held back, the key injected and never echoed (not even when the
upstream quotes it), disconnects passed on."""

from __future__ import annotations

import json
import re

from urllib.parse import quote

import httpx
import pytest

from sse_tool.serve.relay import forwarded_headers, returned_headers

from ..http_server import LocalServer, event, events
from ..raw_http import request, send
from ..serve_process import ServeProcess, fetch
from ..support import failed_output

KEY = "sk-relay-test-key-0123456789"
MASKED = b"*" * len(KEY)
TOKEN = "dev-token-abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def upstream():
    server = LocalServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def relay(upstream):
    serve = ServeProcess("--upstream", upstream.base, "--provider", "openai", "--token", TOKEN,
                         "--allow-path", "/", "--allow-origin", "http://localhost:5173",
                         env={"OPENAI_API_KEY": KEY})
    yield serve
    assert serve.stop() == 130
    assert KEY not in serve.log() and TOKEN not in serve.log()


@pytest.fixture(scope="module")
def keyless(upstream):
    serve = ServeProcess("--upstream", upstream.base, "--provider", "none")
    yield serve
    assert serve.stop() == 130


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=10, trust_env=False) as c:
        yield c


def last_request(upstream, path: str):
    return next(r for r in reversed(upstream.requests) if r.path.startswith(path))


def test_the_relayed_bytes_are_the_upstreams_bytes(relay, upstream, client):
    r = client.get(relay.url("/sse?n=5&delay=0"), headers=AUTH)
    assert r.status_code == 200 and r.content == events(5)
    assert r.headers["content-type"] == "text/event-stream"
    assert r.headers["x-accel-buffering"] == "no"


def test_fetch_through_the_relay_gets_what_it_gets_direct(relay, upstream):
    through = fetch(relay.url("/sse?n=4&delay=0"), "-H", f"Authorization: Bearer {TOKEN}")
    direct = fetch(upstream.url("/sse?n=4&delay=0"))
    assert through.returncode == direct.returncode == 0
    assert through.stdout == direct.stdout == events(4)


def test_the_first_bytes_are_not_held_back_until_the_upstream_finishes(relay, upstream, client):
    # The upstream sends one event, then waits on a gate the test opens only after that
    # event has come through the relay. (The relay drops a ``key=`` query parameter, a
    # credential to it, so the fake upstream's gate and disconnect flags are the default ones.)
    with client.stream("GET", relay.url("/gate"), headers=AUTH) as r:
        chunks = r.iter_raw()
        got = b""
        while len(got) < len(event(0)):
            got += next(chunks)
        assert got == event(0)
        assert not upstream.gates["default"].is_set()
        upstream.gates["default"].set()
        assert got + b"".join(chunks) == event(0) + event(1)


def test_the_key_is_injected_and_client_credentials_are_dropped(relay, upstream, client):
    r = client.post(relay.url("/capture/v1/chat/completions?key=client-key-999&alt=sse"), headers={
        **AUTH, "x-api-key": "client-key-999", "Cookie": "session=abc", "X-Custom-Auth": "zzz",
        "Origin": "http://localhost:5173", "OpenAI-Beta": "assistants=v2",
        "Content-Type": "application/json"}, content=b'{"model": "m", "stream": true}')
    assert r.status_code == 200
    seen = last_request(upstream, "/capture/v1/chat/completions")
    assert seen.method == "POST" and seen.body == b'{"model": "m", "stream": true}'
    assert seen.path == "/capture/v1/chat/completions?alt=sse"
    assert seen.header("Authorization") == f"Bearer {KEY}"
    for name in ("x-api-key", "cookie", "x-custom-auth", "origin"):
        assert seen.header(name) is None, name
    assert seen.header("openai-beta") == "assistants=v2"
    assert seen.header("content-type") == "application/json"
    echoed = json.dumps(dict(r.headers)) + r.text
    assert KEY not in echoed and TOKEN not in echoed


def test_an_upstream_error_comes_back_unchanged(relay, upstream, client):
    r = client.get(relay.url("/error?status=429&retry_after=3&message=slow"), headers=AUTH)
    direct = client.get(upstream.url("/error?status=429&retry_after=3&message=slow"))
    assert (r.status_code, r.content, r.headers["retry-after"]) == (429, direct.content, "3")


def test_an_upstream_cut_is_passed_on_as_a_cut(relay, upstream):
    # What the relay holds of an unfinished line (see sse_tool/mask.py) is dropped with the
    # cut; every line the upstream finished arrives.
    sent = events(20)[:100]
    done = fetch(relay.url("/cut?after=100&mode=chunked"), "-H", f"Authorization: Bearer {TOKEN}")
    assert done.returncode == 3
    got = _before_the_marker(done.stdout, sent)
    assert sent.startswith(got) and len(got) > sent.rfind(b"\n") and failed_output(done.stdout, got, 3)


def _before_the_marker(out: bytes, sent: bytes) -> bytes:
    """What fetch wrote of ``sent`` before its failure marker (less the line end it puts
    before a marker when the body stopped mid-line)."""
    got = out[:out.rindex(b": sse-tool exit ")]
    return got if sent.startswith(got) else got[:-1]


def test_a_client_going_away_closes_the_upstream_request(relay, upstream, client):
    with client.stream("GET", relay.url("/drip?delay=0.02"), headers=AUTH) as r:
        assert next(r.iter_raw()).startswith(b"data: ")
    assert upstream.disconnected["default"].wait(10)
    relay.wait_for(re.compile(r'"GET /drip\?delay=0.02" 200 .*client left; upstream request closed'))


def test_without_the_token_the_relay_answers_401_and_forwards_nothing(relay, upstream, client):
    before = len(upstream.requests)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = client.get(relay.url("/sse?n=1"), headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert len(upstream.requests) == before


def test_a_browser_origin_allowed_by_cors_gets_a_preflight_and_the_header(relay, client):
    preflight = client.options(relay.url("/v1/chat/completions"), headers={
        "Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "http://localhost:5173"
    assert preflight.headers["access-control-allow-headers"] == "authorization, content-type"
    r = client.get(relay.url("/sse?n=1"), headers={**AUTH, "Origin": "http://localhost:5173"})
    assert r.headers["access-control-allow-origin"] == "http://localhost:5173"
    other = client.get(relay.url("/sse?n=1"), headers={**AUTH, "Origin": "http://evil.example"})
    assert other.status_code == 403 and "access-control-allow-origin" not in other.headers


def test_an_anthropic_relay_sends_its_key_header_and_version(upstream):
    relay = ServeProcess("--upstream", upstream.base + "/capture", "--provider", "anthropic",
                         env={"ANTHROPIC_API_KEY": KEY})
    try:
        with httpx.Client(timeout=10, trust_env=False) as c:
            assert c.post(relay.url("/v1/messages"), content=b"{}",
                          headers={"Authorization": "Bearer client"}).status_code == 200
            seen = last_request(upstream, "/capture/v1/messages")
            assert seen.header("x-api-key") == KEY and seen.header("authorization") is None
            assert seen.header("anthropic-version") == "2023-06-01"
    finally:
        assert relay.stop() == 130


def test_an_unreachable_upstream_is_a_502():
    relay = ServeProcess("--upstream", "http://127.0.0.1:9", "--provider", "none")
    try:
        with httpx.Client(timeout=10, trust_env=False) as c:
            r = c.get(relay.url("/v1/models"))
        assert r.status_code == 502 and r.json()["error"]["type"] == "relay_error"
    finally:
        relay.stop()


# -- the key quoted back by the upstream ---------------------------------------------------

def test_an_error_body_that_quotes_the_key_comes_back_masked(relay, upstream, client):
    direct = client.get(upstream.url("/echo-key?status=401"), headers={"Authorization": f"Bearer {KEY}"})
    assert KEY.encode() in direct.content
    r = client.get(relay.url("/echo-key?status=401"), headers=AUTH)
    assert r.status_code == 401 and r.headers["content-type"] == "application/json"
    assert r.content == direct.content.replace(KEY.encode(), MASKED)
    assert r.json()["error"]["message"].startswith("Incorrect API key provided: ****")
    relay.wait_for(re.compile(r'"GET /echo-key\?status=401" 401 '))
    assert KEY not in relay.log()


@pytest.mark.parametrize("at", [1, 13, len(KEY) - 1])
def test_a_key_split_across_chunks_is_masked(relay, upstream, client, at):
    # The upstream writes the key in two chunks and waits on a gate between them: the whole
    # events before it are through the relay while the gate is shut, the key's start is not.
    gate = f"split-{at}"
    with client.stream("GET", relay.url(f"/echo-key?status=200&at={at}&gate={gate}"),
                       headers=AUTH) as r:
        chunks = r.iter_raw()
        got = b""
        while len(got) < len(event(0)):
            got += next(chunks)
        assert not upstream.gates[gate].is_set() and KEY[:at].encode() not in got
        upstream.gates[gate].set()
        assert got + b"".join(chunks) == event(0) + b'data: {"echo": "' + MASKED + b'"}\n\n' + event(1)


def _before_the_gate(relay, gate: str, guess: str, at: int) -> int:
    """How many bytes of an echo of ``guess``, cut ``at`` bytes into it, the relay lets
    through while the upstream waits between the two pieces."""
    reply = send(int(relay.base.rsplit(":", 1)[1]), request(
        f"/echo-key?status=200&at={at}&gate={gate}&guess={guess}", headers=AUTH), timeout=0.5)
    return len(reply.body)


@pytest.mark.parametrize("at", [3, 20, len(KEY) - 1])
def test_what_the_relay_holds_back_does_not_tell_a_right_guess_from_a_wrong_one(relay, upstream, at):
    # A client that can make the upstream echo its text must not learn, from what comes
    # back at once, whether that text is the start of the key.
    wrong = "".join("x" if c != "x" else "y" for c in KEY)
    counts = []
    for n, guess in enumerate((KEY, wrong)):
        gate = f"oracle-{at}-{n}"
        counts.append(_before_the_gate(relay, gate, guess, at))
        upstream.gates[gate].set()
    assert counts[0] == counts[1] >= len(event(0))


def test_the_url_encoded_key_is_masked_too_and_never_logged(upstream):
    odd = "sk-odd/key+with=signs%2F0123"
    encoded = quote(odd, safe="")
    relay = ServeProcess("--upstream", upstream.base, "--provider", "openai", "--allow-path", "/",
                         env={"OPENAI_API_KEY": odd})
    try:
        with httpx.Client(timeout=10, trust_env=False) as c:
            for form, shown in (("raw", odd), ("url", encoded)):
                r = c.get(relay.url(f"/echo-key?status=401&form={form}"))
                assert r.status_code == 401
                assert odd not in r.text and encoded not in r.text
                assert f"provided: {'*' * len(shown)}." in r.json()["error"]["message"]
    finally:
        assert relay.stop() == 130
    assert odd not in relay.log() and encoded not in relay.log()


def test_an_upstream_cut_inside_the_key_is_a_cut_without_the_start_of_the_key(relay):
    done = fetch(relay.url("/echo-key?status=200&at=20&cut=1"), "-H", f"Authorization: Bearer {TOKEN}")
    sent = event(0) + b'data: {"echo": "' + KEY.encode()
    got = _before_the_marker(done.stdout, sent)
    assert done.returncode == 3 and got.startswith(event(0)) and failed_output(done.stdout, got, 3)
    assert (event(0) + b'data: {"echo": "').startswith(got)
    assert KEY[:3] not in done.stderr


def test_an_sse_stream_without_the_key_is_byte_identical(relay, upstream, client):
    direct = client.get(upstream.url("/length?n=7"))
    through = client.get(relay.url("/length?n=7"), headers=AUTH)
    assert through.content == direct.content == events(7)


def test_response_headers_that_quote_the_key_are_masked():
    headers = [("x-debug", f"rejected key={KEY}"), ("Content-Encoding", "gzip"),
               ("Content-Type", "application/json")]
    assert returned_headers(headers, KEY) == [
        ("x-debug", f"rejected key={'*' * len(KEY)}"), ("Content-Type", "application/json"),
        ("X-Accel-Buffering", "no")]
    assert ("Content-Encoding", "gzip") in returned_headers(headers)


# -- compressed bodies ---------------------------------------------------------------------

def test_a_relay_with_a_key_asks_for_an_uncompressed_body_whatever_the_client_takes():
    asked = [("accept-encoding", b"gzip, br")]
    assert ("accept-encoding", "identity") in forwarded_headers([(b"Accept-Encoding", b"gzip, br")],
                                                                "openai", KEY)
    assert [h for h in forwarded_headers([(b"Accept-Encoding", b"gzip, br")], None, None)
            if h[0] == "accept-encoding"] == asked


def test_a_gzip_body_sent_anyway_is_decoded_scanned_and_sent_plain(relay, upstream, client):
    headers = {**AUTH, "Accept-Encoding": "gzip"}
    with client.stream("GET", relay.url("/gzip?n=3&delay=0"), headers=headers) as r:
        assert "content-encoding" not in r.headers
        assert b"".join(r.iter_raw()) == events(3)
    assert last_request(upstream, "/gzip").header("accept-encoding") == "identity"
    with client.stream("GET", relay.url("/echo-key?status=200&at=4&encoding=gzip"),
                       headers=headers) as r:
        assert "content-encoding" not in r.headers
        assert b"".join(r.iter_raw()) == event(0) + b'data: {"echo": "' + MASKED + b'"}\n\n' + event(1)


def test_a_body_in_an_encoding_the_relay_cannot_scan_is_refused_with_a_502(relay, client):
    r = client.get(relay.url("/echo-key?status=401&encoding=br"), headers=AUTH)
    assert r.status_code == 502 and r.json()["error"]["type"] == "relay_error"
    assert "Content-Encoding br" in r.json()["error"]["message"] and KEY not in r.text
    relay.wait_for(re.compile(r'"GET /echo-key\?status=401&encoding=br" 502 .*Content-Encoding br'))


def test_a_relay_without_a_key_passes_a_compressed_body_raw_with_its_encoding(keyless, upstream, client):
    headers = {"Accept-Encoding": "gzip"}
    with client.stream("GET", upstream.url("/gzip?n=3&delay=0"), headers=headers) as direct:
        raw = b"".join(direct.iter_raw())
    with client.stream("GET", keyless.url("/gzip?n=3&delay=0"), headers=headers) as r:
        assert r.headers["content-encoding"] == "gzip"
        assert b"".join(r.iter_raw()) == raw
    assert last_request(upstream, "/gzip").header("accept-encoding") == "gzip"
