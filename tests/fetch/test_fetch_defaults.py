"""What fetch assumes for a newcomer: its own User-Agent, a scheme when the URL has none,
and piped text put before --prompt (as llm does), all seen by a real local server."""

from __future__ import annotations

import json
import subprocess

import pytest

from sse_tool import __version__
from sse_tool.fetch import with_scheme

from ..http_server import LocalServer
from ..support import SSE_TOOL, clean_env


@pytest.fixture(scope="module")
def server():
    s = LocalServer()
    yield s
    s.close()


def fetch(*args, input: bytes = b"", **env):
    return subprocess.run([*SSE_TOOL, "fetch", *args], input=input, capture_output=True, timeout=30,
                          env=clean_env(OPENAI_API_KEY="", **env))


def sent(server, *args, input: bytes = b""):
    n = len(server.requests)
    r = fetch(*args, input=input)
    assert r.returncode == 0, r.stderr
    return server.requests[n]


def test_the_user_agent_is_sse_tools_own_and_h_replaces_it(server):
    assert sent(server, server.url("/capture/ua")).header("User-Agent") == f"sse-tool/{__version__}"
    assert sent(server, server.url("/capture/ua"), "-H", "User-Agent: mine/1").header("User-Agent") == "mine/1"


@pytest.mark.parametrize("name", ["User-Agent", "Accept", "Accept-Encoding", "Cache-Control", "Connection"])
def test_an_empty_h_sends_no_such_header_as_curl_does(server, name):
    # not ours, and not the HTTP client's default in its place either
    request = sent(server, server.url("/capture/ua"), "-H", f"{name}:")
    assert name.lower() not in {n.lower() for n, _ in request.headers}, request.headers


@pytest.mark.parametrize("given, url", [
    ("example.com", "https://example.com"),
    ("api.example.com/v1/chat?x=1", "https://api.example.com/v1/chat?x=1"),
    ("localhost:8000/events", "http://localhost:8000/events"),
    ("LOCALHOST", "http://LOCALHOST"),
    ("127.0.0.1:9/x", "http://127.0.0.1:9/x"),
    ("[::1]:8080/", "http://[::1]:8080/"),
    ("localhost.example.com", "https://localhost.example.com"),
    ("http://example.com", "http://example.com"),
    ("ftp://example.com/f", "ftp://example.com/f"),
])
def test_a_url_without_a_scheme_gets_https_or_http_on_loopback(given, url):
    assert with_scheme(given) == url


def test_a_local_url_without_a_scheme_is_fetched_over_http(server):
    bare = server.url("/capture/bare").removeprefix("http://")
    assert not bare.startswith("http")
    assert sent(server, bare).path == "/capture/bare"


def test_another_scheme_is_refused_in_the_tools_words():
    r = fetch("ftp://127.0.0.1:9/file")
    assert r.returncode == 2 and not r.stdout
    assert r.stderr.decode().strip() == "sse-tool fetch: bad URL: 'ftp://127.0.0.1:9/file' is not an http or https URL"


@pytest.mark.parametrize("url, why", [
    ("http://[::1/x?key=sk-secret-1", "Invalid IPv6 URL"),
    ("http://127.0.0.1:abc/?key=sk-secret-1", "Port could not be cast to integer value as 'abc'"),
    ("http://[zz]/?key=sk-secret-1", "'zz' does not appear to be an IPv4 or IPv6 address"),
    ("http://127.0.0.1:99999/x?key=sk-secret-1", "Port out of range 0-65535"),
])
def test_a_url_that_cannot_be_read_is_a_usage_error_that_does_not_repeat_it(url, why):
    r = fetch(url)
    assert r.returncode == 2 and not r.stdout
    assert r.stderr.decode() == f"sse-tool fetch: bad URL: {why}\n"  # not the URL: it may hold a key
    r = fetch("--provider", "openai", "--model", "m", "--prompt", "hi", "-H", "Authorization: Bearer sk-test-123",
              "--base-url", url)
    assert r.returncode == 2 and r.stderr.decode() == f"sse-tool fetch: bad URL: {why}\n"


def prompt_sent(server, *args, input: bytes = b"") -> str:
    got = sent(server, "--provider", "openai", "--model", "m", "--base-url", server.url("/capture/v1"),
               *args, input=input)
    return json.loads(got.body)["messages"][-1]["content"]


def test_piped_text_goes_before_the_prompt(server):
    assert prompt_sent(server, "--prompt", "Summarize", input=b"notes\nmore notes\n") == \
        "notes\nmore notes\n\nSummarize"


def test_with_nothing_piped_the_prompt_is_alone(server):
    assert prompt_sent(server, "--prompt", "Summarize") == "Summarize"
    n = len(server.requests)
    r = subprocess.run([*SSE_TOOL, "fetch", "--provider", "openai", "--model", "m", "--prompt", "Hi",
                        "--base-url", server.url("/capture/v1")], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=30, env=clean_env(OPENAI_API_KEY=""))
    assert r.returncode == 0, r.stderr
    assert json.loads(server.requests[n].body)["messages"][-1]["content"] == "Hi"


def test_prompt_dash_still_means_stdin_is_the_prompt(server):
    assert prompt_sent(server, "--prompt", "-", input="¿Por qué?\n".encode()) == "¿Por qué?\n"


def test_a_socket_left_open_on_stdin_is_not_waited_for(server):
    import socket

    ours, theirs = socket.socketpair()  # never closed while fetch runs: reading it would hang
    try:
        n = len(server.requests)
        r = subprocess.run([*SSE_TOOL, "fetch", "-p", "openai", "-m", "m", "--prompt", "Hi",
                            "--base-url", server.url("/capture/v1")], stdin=theirs,
                           capture_output=True, timeout=30, env=clean_env(OPENAI_API_KEY=""))
    finally:
        ours.close()
        theirs.close()
    assert r.returncode == 0, r.stderr
    assert json.loads(server.requests[n].body)["messages"][-1]["content"] == "Hi"


@pytest.mark.parametrize("args, said", [
    (["--prompt", "hi"], "--prompt goes with --provider"),
    (["--model", "m", "--param", "a=1"], "--model, --param go with --provider"),
    (["--base-url", "http://127.0.0.1:9/v1"], "--base-url goes with --provider"),
])
def test_the_options_of_a_providers_body_with_a_url_are_a_usage_error_not_left_out(args, said):
    r = fetch(*args, "http://127.0.0.1:9/x")
    assert r.returncode == 2 and not r.stdout
    assert r.stderr.decode() == f"sse-tool fetch: {said} (a URL's body is --data or --json)\n"
