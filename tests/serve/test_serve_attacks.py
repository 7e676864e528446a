"""``sse-tool serve`` attacked as a hostile client would: raw requests over a socket against a
real ``serve`` process, with a real upstream on 127.0.0.1 and a catching server on
127.0.0.2 (a host of the attacker's choosing). No byte of the key may reach any host but
the upstream, nothing but a plain path under the base may reach the upstream, and every
refusal is a clean 4xx with one line saying why, never a traceback."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_tool.serve.relay import Relay
from sse_tool.serve.target import RefusedTarget, check_target

from ..raw_http import SSE_ANSWER, Catcher, request, send
from ..serve_process import ServeProcess
from ..support import SSE_TOOL, clean_env

KEY = "sk-ant-attack-key-0123456789abcdef"
TOKEN = "attack-suite-token-42"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BODY = b'{"model":"m","stream":true,"messages":[]}'


@pytest.fixture(scope="module")
def catcher():
    server = Catcher("127.0.0.2")
    yield server
    server.close()


@pytest.fixture(scope="module")
def upstream():
    server = Catcher("127.0.0.1")
    yield server
    server.close()


def _relay(upstream_url: str, provider: str, *args: str, variable: str = "ANTHROPIC_API_KEY"):
    return ServeProcess("--upstream", upstream_url, "--provider", provider, *args, env={variable: KEY})


@pytest.fixture(scope="module")
def relays(upstream):
    """One relay per provider, each with its key header, behind a token."""
    started = {
        "anthropic": _relay(upstream.base, "anthropic", "--token", TOKEN),
        "gemini": _relay(upstream.base, "gemini", "--token", TOKEN, variable="GEMINI_API_KEY"),
        "openai": _relay(upstream.base, "openai", "--token", TOKEN, variable="OPENAI_API_KEY"),
    }
    yield started
    for serve in started.values():
        assert serve.stop() == 130
        assert KEY not in serve.log() and "Traceback" not in serve.log()


@pytest.fixture(scope="module")
def based(upstream):
    """A relay to an upstream with a base path, without a token (so the Host rule holds)."""
    serve = _relay(upstream.base + "/v1", "openai", variable="OPENAI_API_KEY")
    yield serve
    assert serve.stop() == 130
    assert KEY not in serve.log() and "Traceback" not in serve.log()


def port_of(serve: ServeProcess) -> int:
    return int(serve.base.rsplit(":", 1)[1])


def attack(serve: ServeProcess, target, **kwargs):
    return send(port_of(serve), request(target, **kwargs))


def _nothing_reached(catcher: Catcher, upstream: Catcher, before: int) -> None:
    assert not catcher.touched
    assert len(upstream.seen) == before


def _clean_refusal(reply, status: int) -> None:
    assert reply.status == status, reply
    assert reply.header("content-type") == "application/json"
    assert b"Traceback" not in reply.body and len(reply.body.splitlines()) == 1


# -- critical: the key goes to the upstream and nowhere else -----------------------------

@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_a_target_that_names_another_host_is_refused_before_any_connection(relays, upstream, catcher, provider):
    serve = relays[provider]
    before = len(upstream.seen)
    for target in (f"@{catcher.host}:{catcher.port}/v1/messages",          # became userinfo
                   f"http://{catcher.host}:{catcher.port}/v1/messages",    # absolute-form
                   f"{catcher.host}:{catcher.port}",                       # authority-form
                   f"//{catcher.host}:{catcher.port}/v1/messages",         # scheme-relative
                   "0/v1/messages",                                         # a port for a portless upstream
                   f"/v1/messages@{catcher.host}:{catcher.port}",
                   f"/v1/\\@{catcher.host}:{catcher.port}/x", "*",
                   "/v1/messages#x", "/v1/messages?a=1#x"):                # a fragment (was a 500)
        for method in ("POST", "CONNECT", "OPTIONS"):
            reply = attack(serve, target, method=method, headers=AUTH, body=BODY)
            _clean_refusal(reply, 400)
    _nothing_reached(catcher, upstream, before)
    assert KEY not in serve.log()


def test_dot_segments_raw_or_encoded_in_any_case_never_leave_the_base_path(based, upstream, catcher):
    before = len(upstream.seen)
    for target in ("/../admin/keys", "/./chat/completions", "/chat/../../admin", "/%2e%2e/admin",
                   "/%2E%2e/admin", "/.%2E/admin", "/%252e%252e/admin", "/%25252E%25252E/admin",
                   "/chat/..;/admin", "/chat/%2fadmin", "/chat/%2F..%2Fadmin", "/chat%5c..%5cadmin",
                   "/chat/%00", "/chat/%0d%0aHost:%20evil", "/%c0%ae%c0%ae/admin"):
        reply = attack(based, target, method="POST", body=BODY)
        _clean_refusal(reply, 400)
    _nothing_reached(catcher, upstream, before)


def test_a_plain_path_goes_under_the_base_path_with_the_key(based, upstream):
    reply = attack(based, "/chat/completions?alt=sse&key=client-key", method="POST",
                   headers={"Authorization": "Bearer client-credential", "Cookie": "a=b"}, body=BODY)
    assert reply.status == 200 and reply.body == b"data: ok\n\n"
    seen = upstream.seen[-1]
    assert seen.target == b"/v1/chat/completions?alt=sse"
    assert seen.header("authorization") == f"Bearer {KEY}"
    assert seen.header("cookie") is None and seen.body == BODY


def test_only_paths_under_an_allowed_prefix_are_relayed(relays, upstream, catcher):
    before = len(upstream.seen)
    for target in ("/admin/keys", "/v1beta/models", "/v10/messages", "/", "/v1"):
        _clean_refusal(attack(relays["anthropic"], target, method="POST", headers=AUTH, body=BODY), 403)
    _nothing_reached(catcher, upstream, before)
    assert attack(relays["anthropic"], "/v1/messages", method="POST", headers=AUTH, body=BODY).status == 200
    assert upstream.seen[-1].header("x-api-key") == KEY
    assert attack(relays["gemini"], "/v1beta/models/m:streamGenerateContent?alt=sse", method="POST",
                  headers=AUTH, body=BODY).status == 200
    assert upstream.seen[-1].header("x-goog-api-key") == KEY


def test_allow_path_replaces_the_default(upstream):
    serve = _relay(upstream.base, "anthropic", "--allow-path", "/v1/messages")
    try:
        assert attack(serve, "/v1/messages", method="POST", body=BODY).status == 200
        assert attack(serve, "/v1/messages/batches", method="POST", body=BODY).status == 200
        _clean_refusal(attack(serve, "/v1/models"), 403)
    finally:
        assert serve.stop() == 130


# Pieces that have turned relays into open proxies somewhere.
_PIECES = st.sampled_from([
    "/", "//", "..", ".", "%2e", "%2E", "%252e", "%2f", "%2F", "%5c", "\\", "@", ":", "127.0.0.2",
    "http:", "https://", "v1", "messages", "chat", "?", "#", ";", "%00", "%40", "%3a", "0", "*",
    "evil", "%25", "%", "a", "&", "=", "key",
])
_ATTACKS = st.lists(_PIECES, min_size=1, max_size=10).map("".join).filter(
    lambda t: t and all(0x21 <= ord(c) < 0x7F for c in t))


def _plain_under(path: bytes, base: bytes) -> bool:
    segments = path.split(b"?")[0].split(b"/")
    return path.startswith(base + b"/") and b".." not in segments and b"." not in segments


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_ATTACKS)
def test_whatever_the_target_nothing_but_a_plain_path_under_the_base_reaches_anyone(based, upstream, catcher, target):
    before = len(upstream.seen)
    reply = attack(based, target, method="POST", body=BODY)
    assert not catcher.touched
    assert reply.status in (200, 400, 403, 404), reply
    if reply.status == 200:
        assert len(upstream.seen) == before + 1
        assert _plain_under(upstream.seen[-1].target, b"/v1")
    else:
        assert len(upstream.seen) == before


@settings(max_examples=500, deadline=None)
@given(_ATTACKS | st.text(min_size=1, max_size=30).map(lambda t: t.encode("utf-8").decode("latin-1")))
def test_the_relay_builds_no_url_off_its_upstream_for_any_target(target):
    # Sans-I/O, for upstreams the tests cannot listen on: a default port and a base path.
    for upstream in ("https://api.anthropic.com", "http://127.0.0.1:8080/base/v1"):
        relay = Relay(upstream, provider="anthropic", paths=("/",))
        try:
            url = relay.target(target.encode("latin-1"))
        except (RefusedTarget, ValueError):
            continue
        assert (url.scheme, url.host, url.port) == (relay.upstream.scheme, relay.upstream.host,
                                                    relay.upstream.port)
        assert _plain_under(url.raw_path, relay.upstream.raw_path.rstrip(b"/"))
        check_target(target.encode("latin-1"))


# -- high: who may use the relay ---------------------------------------------------------

def test_without_a_token_only_a_host_that_names_this_server_is_served(based, upstream, catcher):
    before = len(upstream.seen)
    for host in ("evil.example", "evil.example:8000", f"{catcher.host}:{port_of(based)}", "",
                 "127.0.0.1.evil.example", "localhost.evil.example"):
        _clean_refusal(send(port_of(based), request("/chat/completions", method="POST", host=host,
                                                    body=BODY)), 403)
    _nothing_reached(catcher, upstream, before)
    for host in ("127.0.0.1", f"127.0.0.1:{port_of(based)}", "localhost", f"LOCALHOST:{port_of(based)}"):
        assert send(port_of(based), request("/chat/completions", method="POST", host=host,
                                            body=BODY)).status == 200


def test_allow_host_adds_a_name(upstream):
    serve = _relay(upstream.base, "anthropic", "--allow-host", "relay.internal")
    try:
        assert send(port_of(serve), request("/v1/messages", method="POST", host="relay.internal:8000",
                                            body=BODY)).status == 200
        assert send(port_of(serve), request("/v1/messages", method="POST", host="other.internal",
                                            body=BODY)).status == 403
    finally:
        assert serve.stop() == 130


def test_a_browser_page_is_refused_unless_its_origin_is_allowed(based, upstream, catcher):
    before = len(upstream.seen)
    # A form POST needs no preflight: only the Origin header says a page sent it.
    for origin in ("http://evil.example", "null", "http://localhost:5173"):
        reply = attack(based, "/chat/completions", method="POST", body=BODY,
                       headers={"Origin": origin, "Content-Type": "text/plain"})
        _clean_refusal(reply, 403)
        assert reply.header("access-control-allow-origin") is None
        preflight = attack(based, "/chat/completions", method="OPTIONS", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST"})
        assert preflight.status == 403
    _nothing_reached(catcher, upstream, before)


def test_an_allowed_origin_gets_cors_with_its_preflight(upstream):
    serve = _relay(upstream.base, "anthropic", "--token", TOKEN, "--allow-origin", "http://localhost:5173")
    try:
        before = len(upstream.seen)
        preflight = attack(serve, "/v1/messages", method="OPTIONS", headers={
            "Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert preflight.status == 204 and len(upstream.seen) == before  # answered by the relay
        assert preflight.header("access-control-allow-origin") == "http://localhost:5173"
        assert preflight.header("access-control-allow-headers") == "authorization, content-type"
        assert "POST" in preflight.header("access-control-allow-methods")
        reply = attack(serve, "/v1/messages", method="POST", body=BODY,
                       headers={**AUTH, "Origin": "http://localhost:5173"})
        assert reply.status == 200 and reply.header("access-control-allow-origin") == "http://localhost:5173"
        assert reply.header("vary") == "Origin"
        no_token = attack(serve, "/v1/messages", method="POST", body=BODY,
                          headers={"Origin": "http://localhost:5173"})
        assert no_token.status == 401
    finally:
        assert serve.stop() == 130


@pytest.mark.parametrize("url", [
    "http://user:UPWSECRET99@127.0.0.1:9/?key=QKEYSECRET99", "http://:UPWSECRET99@127.0.0.1:9/",
    "https://127.0.0.1:9/v1?api_key=QKEYSECRET99&x=1", "http://[::1:UPWSECRET99@/", "http://[bad?key=QKEYSECRET99",
    "ftp://u:UPWSECRET99@127.0.0.1/",
])
def test_a_refused_upstream_url_is_said_without_the_credentials_it_holds(url):
    # the URL was refused for holding credentials: the message must not repeat them
    done = subprocess.run([*SSE_TOOL, "serve", "--upstream", url, "--provider", "none", "--port", "0"],
                          capture_output=True, timeout=20, env=clean_env())
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().count("\n") == 1 and "--upstream" in done.stderr.decode()
    assert b"SECRET99" not in done.stderr and b"Traceback" not in done.stderr, done.stderr


def test_a_relay_open_to_the_network_needs_a_token_which_may_stay_out_of_ps(upstream):
    done = subprocess.run([*SSE_TOOL, "serve", "--upstream", upstream.base, "--provider", "anthropic",
                           "--host", "0.0.0.0", "--allow-remote", "--port", "0"],
                          capture_output=True, timeout=20, env=clean_env(ANTHROPIC_API_KEY=KEY))
    assert done.returncode == 2
    assert done.stderr.decode().count("\n") == 1 and "--token" in done.stderr.decode()
    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--host", "127.0.0.1",
                         env={"ANTHROPIC_API_KEY": KEY, "SSE_TOOL_SERVE_TOKEN": TOKEN})
    try:
        cmdline = open(f"/proc/{serve.proc.pid}/cmdline", "rb").read()
        assert TOKEN.encode() not in cmdline and KEY.encode() not in cmdline
        assert attack(serve, "/v1/messages", method="POST", body=BODY).status == 401
        assert attack(serve, "/v1/messages", method="POST", body=BODY, host="anything.example",
                      headers=AUTH).status == 200  # with a token, the Host does not matter
    finally:
        assert serve.stop() == 130


def test_the_start_up_says_in_one_line_who_may_use_it(based, relays):
    assert re.search(r"open to clients that call it 127\.0\.0\.1 or localhost or \[::1\], no token; "
                     r"no browser page\n", based.log())
    assert "open to clients that send the token (any Host); no browser page" in relays["openai"].log()
    assert re.search(r"relaying /v1/ to http://127\.0\.0\.1:\d+ with the key from ANTHROPIC_API_KEY",
                     relays["anthropic"].log())


# -- the relay's mask --------------------------------------------------------------------

def _echo(seen):
    """An upstream that quotes the key back in every way it can: in a header name (where
    the key is a valid name) and value, and in the body, each form split across two writes."""
    from sse_tool.mask import forms

    key = seen.header("x-api-key") or ""
    name = f"X-Echo-{key}" if re.fullmatch(r"[\w.-]+", key) else "X-Echo"
    pieces = [f"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
              f"{name}: {key}\r\nConnection: close\r\n\r\n".encode()]
    for form in sorted(forms(key)):
        pieces += [b'{"error": "bad key ' + form[:7], form[7:] + b'"}\n']
    return pieces


def _any_case(form: bytes):
    return re.compile(re.escape(form), re.IGNORECASE)


# '/' and '+' make the encoded forms differ; real keys are mixed-case, and a header name
# comes back lower-cased (httpx), so a name must be masked whatever its case
@pytest.mark.parametrize("key", [KEY, KEY + "/+", "sk-ant-Attack-KEY-0123456789ABCdef"])
def test_the_relay_masks_the_key_in_every_form_and_place(key, tmp_path):
    from sse_tool.mask import forms

    every = sorted(forms(key))
    upstream = Catcher("127.0.0.1", answer=_echo)
    folder = tmp_path / "recordings"
    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--record-dir", str(folder),
                         env={"ANTHROPIC_API_KEY": key})
    try:
        reply = attack(serve, "/v1/messages", method="POST", body=BODY)
        assert reply.status == 401
        serve.wait_for(re.compile(r"401 .*recorded"))
        for form in every:
            assert form not in reply.head + reply.body, form
        assert reply.body == b"".join(b'{"error": "bad key ' + b"*" * len(f) + b'"}\n' for f in every)
        if "/" not in key:
            assert b"x-echo-" + b"*" * len(key) + b": " + b"*" * len(key) in reply.head.lower()
        else:
            assert len(every) == 6  # raw, %2F%2B, %2f%2b, /%2B, /%2b, JSON-escaped \/
        recordings = [p.read_bytes() for p in folder.iterdir()]
        assert len(recordings) == 1
        for form in every:
            assert not _any_case(form).search(reply.head + recordings[0]), form
    finally:
        assert serve.stop() == 130
        upstream.close()
    assert not _any_case(key.encode()).search(serve.log().encode())


def test_a_cookie_the_upstream_sets_for_one_client_never_goes_up_with_another(upstream):
    """The relay's one HTTP client keeps no cookie jar: sessions upstream stay each client's."""
    answers = iter([[b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Set-Cookie: sess=ALICE-PRIVATE; Path=/\r\nSet-Cookie2: old=1\r\n"
                     b"Content-Length: 10\r\nConnection: close\r\n\r\n", b"data: ok\n\n"]])
    setter = Catcher("127.0.0.1", answer=lambda seen: next(answers, SSE_ANSWER))
    serve = _relay(setter.base, "anthropic")
    try:
        first = attack(serve, "/v1/messages", method="POST", body=BODY)
        assert first.status == 200
        assert first.header("set-cookie") is None and first.header("set-cookie2") is None
        assert attack(serve, "/v1/messages", method="POST", body=BODY).status == 200
        assert [seen.header("cookie") for seen in setter.seen] == [None, None]
    finally:
        assert serve.stop() == 130
        setter.close()


def test_a_request_framed_both_by_length_and_by_chunks_is_refused(relays, upstream, catcher):
    """Content-Length with Transfer-Encoding: the relay must not forward one framing while
    the server read the other (RFC 9112 6.3: handled as an error)."""
    before = len(upstream.seen)
    raw = (b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
           + b"\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
           b"3\r\nabc\r\n0\r\n\r\n")
    reply = send(port_of(relays["anthropic"]), raw)
    _clean_refusal(reply, 400)
    assert b"both Content-Length and Transfer-Encoding" in reply.body
    _nothing_reached(catcher, upstream, before)
    assert "Traceback" not in relays["anthropic"].log()


def test_no_spelling_of_a_key_parameter_goes_upstream(relays, upstream):
    # Google reads a key from ?key= and from its system-parameter spelling ?$key=
    for query in ("key=CLIENTKEY", "$key=CLIENTKEY", "%24key=CLIENTKEY", "KEY=CLIENTKEY", "%6Bey=CLIENTKEY",
                  "api_key=CLIENTKEY", "Access_Token=CLIENTKEY"):
        reply = attack(relays["gemini"], f"/v1beta/models/m:streamGenerateContent?alt=sse&{query}&x=1",
                       method="POST", headers=AUTH, body=BODY)
        assert reply.status == 200, query
        assert upstream.seen[-1].target == b"/v1beta/models/m:streamGenerateContent?alt=sse&x=1", query
        assert b"CLIENTKEY" not in upstream.seen[-1].head


@pytest.fixture(scope="module")
def every_mode(upstream, tmp_path_factory):
    """A relay in each mode: with a key, without one, recording, resumable."""
    folder = tmp_path_factory.mktemp("header-recordings")
    started = {
        "key": _relay(upstream.base, "openai", variable="OPENAI_API_KEY"),
        "keyless": ServeProcess("--upstream", upstream.base, "--provider", "none"),
        "record": _relay(upstream.base, "openai", "--record-dir", str(folder), variable="OPENAI_API_KEY"),
        "resumable": _relay(upstream.base, "openai", "--resumable", variable="OPENAI_API_KEY"),
    }
    yield started
    for serve in started.values():
        assert serve.stop() == 130
        assert KEY not in serve.log() and "Traceback" not in serve.log(), serve.log()


# Any bytes but the line ends (which would end the header): UTF-8 text, obs-text, controls.
_HEADER_VALUES = (st.binary(min_size=1, max_size=24)
                  | st.text(min_size=1, max_size=12).map(lambda t: t.encode("utf-8"))
                  ).filter(lambda v: b"\r" not in v and b"\n" not in v)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.sampled_from(["key", "keyless", "record", "resumable"]), value=_HEADER_VALUES)
def test_any_header_value_a_client_can_send_is_forwarded_as_its_bytes_or_refused(every_mode, upstream, mode, value):
    # A non-ASCII value (X-Title: Café) was a 500 with a traceback: httpx encodes a str
    # value as ASCII. What the HTTP server accepts goes up byte for byte, less the
    # whitespace around it; what it does not is its 400, and reaches no one.
    serve = every_mode[mode]
    before = len(upstream.seen)
    reply = attack(serve, "/v1/chat/completions", method="POST", body=BODY,
                   headers={"X-Title": value.decode("latin-1")})
    assert reply.status in (200, 400), (reply, serve.log()[-2000:])
    if reply.status == 200:
        assert len(upstream.seen) == before + 1
        assert upstream.seen[-1].header("x-title").encode("latin-1") == value.strip(b" \t")
    else:
        assert len(upstream.seen) == before


def test_a_non_ascii_header_value_goes_up_unchanged_in_every_mode(every_mode, upstream):
    for mode, serve in every_mode.items():
        reply = attack(serve, "/v1/chat/completions", method="POST", body=BODY,
                       headers={"X-Title": "Café ☕".encode().decode("latin-1")})
        assert reply.status == 200, (mode, reply)
        assert upstream.seen[-1].header("x-title").encode("latin-1") == "Café ☕".encode(), mode
        assert "Traceback" not in serve.log(), mode


# -- medium: bounded resources, clean errors ---------------------------------------------

def _peak_rss_kib(pid: int) -> int:
    status = open(f"/proc/{pid}/status").read()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))


def test_a_large_request_body_is_streamed_to_the_upstream_not_held(upstream):
    size = 96 * 1024 * 1024
    serve = _relay(upstream.base, "anthropic", "--max-request-size", "128MiB")
    try:
        assert attack(serve, "/v1/messages", method="POST", body=b"{}").status == 200
        before = _peak_rss_kib(serve.proc.pid)
        reply = attack(serve, "/v1/messages", method="POST", body=b"x" * size)
        assert reply.status == 200 and upstream.seen[-1].body_size == size
        assert upstream.seen[-1].header("content-length") == str(size)
        assert _peak_rss_kib(serve.proc.pid) - before < 32 * 1024  # it was +1.5 GB for 512 MiB
    finally:
        assert serve.stop() == 130


def test_a_body_over_the_limit_is_a_413_whatever_its_framing(upstream, catcher):
    serve = _relay(upstream.base, "anthropic", "--max-request-size", "1MiB")
    try:
        before = len(upstream.seen)
        # Declared: refused before it is read, so a client waiting for 100 Continue gets none.
        declared = send(port_of(serve), b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Content-Length: 5000000\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
        _clean_refusal(declared, 413)
        assert b"100 Continue" not in declared.head
        assert len(upstream.seen) == before
        # Chunked: refused as soon as the count passes the limit; the upstream request is abandoned.
        piece = b"x" * 65536
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(40)) + b"0\r\n\r\n"
        reply = send(port_of(serve), request("/v1/messages", method="POST",
                                             headers={"Transfer-Encoding": "chunked"}) + chunked)
        _clean_refusal(reply, 413)
        assert all(s.body_size <= 1024 * 1024 for s in upstream.seen[before:])
    finally:
        assert serve.stop() == 130
    assert not catcher.touched


def test_the_stream_server_caps_request_bodies_too(tmp_path):
    (tmp_path / "s.sse").write_bytes(b"data: ok\n\n")
    serve = ServeProcess("--speed", "0", "--max-request-size", "1KiB", str(tmp_path / "s.sse"))
    try:
        _clean_refusal(attack(serve, "/s", method="POST", body=b"x" * 2000), 413)
        assert attack(serve, "/s", method="POST", body=b"x" * 1000).status == 200
    finally:
        assert serve.stop() == 130


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attack-streams")
    (folder / "s.sse").write_bytes(b"data: ok\n\n")
    serve = ServeProcess("--speed", "0", str(folder / "s.sse"))
    yield serve
    assert serve.stop() == 130


@pytest.mark.parametrize("target, why", [
    ("*", "must be a path starting with /"),
    ("/s?retry_after=1%0d%0aX-Injected:%201&status=429", "printable characters only"),
    ("/s?status=204&message=hi", "answers without a body"),
    ("/s?status=99", "an HTTP status from 200 to 599"),
])
def test_bad_requests_to_the_stream_server_are_one_line_400s(streams, target, why):
    reply = attack(streams, target, method="OPTIONS" if target == "*" else "GET")
    _clean_refusal(reply, 400)
    assert why in reply.body.decode()
    assert b"X-Injected" not in reply.head
    time.sleep(0.1)
    assert "Traceback" not in streams.log() and "Exception" not in streams.log()


def test_a_status_without_a_body_is_answered_without_one(streams):
    for status in (204, 304):
        reply = attack(streams, f"/s?status={status}&retry_after=2")
        assert (reply.status, reply.body, reply.header("retry-after")) == (status, b"", "2")
    assert "Traceback" not in streams.log()


def test_control_bytes_from_a_request_reach_the_log_escaped(streams):
    attack(streams, "/s?status=429&message=%1b[2J%1b[31mred%0dforged%07")
    line = streams.wait_for(re.compile(r'"GET /s\?status=429.*')).group(0)
    assert "\x1b" not in streams.log() and "\r" not in streams.log() and "\x07" not in streams.log()
    assert "\\x1b[2J\\x1b[31mred" in line and "\\x07" in line


def test_a_client_that_goes_away_mid_body_ends_quietly(upstream):
    serve = _relay(upstream.base, "anthropic")
    try:
        with socket.create_connection(("127.0.0.1", port_of(serve))) as s:
            s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"
                      + b"x" * 5000)
        serve.wait_for(re.compile(r'"POST /v1/messages" .*client left'))
        assert attack(serve, "/v1/messages", method="POST", body=BODY).status == 200
    finally:
        assert serve.stop() == 130
    assert "Traceback" not in serve.log()


def test_serve_refuses_a_recording_that_still_holds_a_key(tmp_path):
    rec = tmp_path / "leaky.rec"
    rec.write_text("sse-tool recording 1\n> POST https://api.anthropic.com/v1/messages\n"
                   f"> x-api-key: {KEY}\n< HTTP/1.1 200 OK\n0.1 \"data: ok\\n\\n\"\nend 0.2 complete\n")
    done = subprocess.run([*SSE_TOOL, "serve", "--port", "0", str(rec)], capture_output=True,
                          timeout=20, env=clean_env())
    err = done.stderr.decode()
    assert done.returncode == 5 and err.count("\n") == 1
    assert "leaky.rec" in err and "x-api-key" in err and KEY not in err
    rec.write_text(rec.read_text().replace(KEY, "<redacted>"))
    serve = ServeProcess("--speed", "0", str(rec))
    assert serve.stop() == 130


def test_ctrl_c_stops_a_relay_with_a_request_in_flight(upstream):
    slow = Catcher("127.0.0.1", answer=lambda seen: [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                                     b"Transfer-Encoding: chunked\r\n\r\n"] + [b"a\r\ndata: x\n\n\n\r\n"] * 60)
    serve = _relay(slow.base, "anthropic")
    try:
        s = socket.create_connection(("127.0.0.1", port_of(serve)))
        s.sendall(request("/v1/messages", method="POST", body=BODY))
        assert s.recv(100).startswith(b"HTTP/1.1 200")
        serve.proc.send_signal(signal.SIGINT)
        assert serve.proc.wait(10) == 130
        s.close()
    finally:
        serve.stop()
        slow.close()
    assert "Traceback" not in serve.log()
