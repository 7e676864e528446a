"""``sse-tool serve`` over HTTP: heads, listing, errors, server-wide faults, the access log,
and the command's own refusals and exit codes."""

from __future__ import annotations

import random
import re
import time

import httpx
import pytest

from ..serve_process import ServeProcess, run
from ..support import FIXTURES
from ..fetch.test_replay import make_recording

TEXT_SHORT = (FIXTURES / "anthropic" / "text-short.sse").read_bytes()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    recs = tmp_path_factory.mktemp("recs")
    (recs / "gem.rec").write_text(make_recording(
        [(0.0, b"data: {}\n\n")], headers=[("content-type", "text/event-stream"), ("x-request-id", "r1"),
                                           ("content-encoding", "gzip")],
        url="https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"))
    serve = ServeProcess("--speed", "0", str(FIXTURES / "anthropic" / "text-short.sse"), str(recs / "gem.rec"),
                         str(FIXTURES / "gemini" / "json-array-no-alt-sse.json"))
    yield serve
    assert serve.stop() == 130


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=10, trust_env=False) as c:
        yield c


def test_a_stream_file_has_the_event_stream_headers(server, client):
    r = client.get(server.url("/text-short"))
    assert r.status_code == 200 and r.content == TEXT_SHORT
    assert r.headers["content-type"] == "text/event-stream"
    assert r.headers["cache-control"] == "no-cache" and r.headers["x-accel-buffering"] == "no"
    assert r.headers["transfer-encoding"] == "chunked"


def test_a_json_array_file_is_served_as_json(server, client):
    assert client.get(server.url("/json-array-no-alt-sse")).headers["content-type"] == "application/json"


def test_an_aws_event_stream_file_is_served_with_its_content_type(client, tmp_path):
    (tmp_path / "bedrock").mkdir()
    data = (FIXTURES / "bedrock" / "converse-stream-text.eventstream").read_bytes()
    (tmp_path / "bedrock" / "converse.eventstream").write_bytes(data)
    serve = ServeProcess("--speed", "0", str(tmp_path))  # found in a directory by its suffix
    try:
        r = client.get(serve.url("/bedrock/converse"))
        assert r.status_code == 200 and r.content == data
        assert r.headers["content-type"] == "application/vnd.amazon.eventstream"
    finally:
        serve.stop()


@pytest.mark.parametrize("name", ["anthropic-truncated.sse", "ollama-truncated.ndjson",
                                  "vertex-search-truncated.json", "bedrock-invoke-truncated.eventstream"])
def test_a_cut_stream_file_is_served_cut_after_all_its_bytes(name):
    # It ended cleanly: a client (an SDK) took half an answer for a whole one.
    from ..raw_http import request, send
    from ..support import SAMPLES

    data = (SAMPLES / name).read_bytes()
    serve = ServeProcess("--speed", "0", str(SAMPLES / name))
    try:
        raw = send(int(serve.base.rsplit(":", 1)[1]), request("/" + name))
        assert raw.status == 200 and raw.body == data  # every byte that was there...
        assert not raw.raw_body.endswith(b"0\r\n\r\n")  # ...and no last chunk: a cut
        with httpx.Client(timeout=10, trust_env=False) as client, pytest.raises(httpx.RemoteProtocolError):
            client.get(serve.url("/" + name))
    finally:
        assert serve.stop() == 130


def test_a_recording_has_its_recorded_headers_without_the_encoding(server, client):
    r = client.get(server.url("/gem"))
    assert r.content == b"data: {}\n\n"
    assert r.headers["x-request-id"] == "r1" and "content-encoding" not in r.headers


def test_headers_go_out_before_any_body_byte(server, client):
    # A stall sends no body byte ever: the head arriving at all shows it was not held back.
    with client.stream("GET", server.url("/text-short?stall=1")) as r:
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"


def test_the_root_lists_the_streams_and_the_faults(server, client):
    text = client.get(server.url("/")).text
    assert re.search(r"^/text-short +sse, 1159 bytes", text, re.M)
    assert "/v1beta/models/g:streamGenerateContent" in text and "cut_after_events=N" in text


def test_an_unknown_path_is_404_and_a_bad_fault_400(server, client):
    r = client.get(server.url("/nope"))
    assert r.status_code == 404 and "GET / lists them" in r.json()["error"]["message"]
    r = client.get(server.url("/text-short?chunk=0"))
    assert r.status_code == 400 and "chunk=0" in r.json()["error"]["message"]


def test_an_error_fault_takes_the_shape_of_the_recorded_provider(server, client):
    r = client.get(server.url("/gem?status=429&retry_after=2"))
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    assert r.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    r = client.get(server.url("/text-short?status=529&provider=anthropic"))
    assert r.json()["error"]["type"] == "overloaded_error"


def test_the_access_log_has_one_redacted_line_per_request(server, client):
    with pytest.raises(httpx.RemoteProtocolError):  # the cut
        client.get(server.url("/text-short?key=sk-live-abcdef123&cut_after_bytes=10"),
                   headers={"Authorization": "Bearer sk-live-abcdef123"})
    line = server.wait_for(re.compile(r'.*"GET /text-short\?key=.*')).group(0)
    assert "sk-live" not in server.log()
    assert "key=<redacted>&cut_after_bytes=10" in line and " 200 10B " in line and line.endswith("cut")


def test_a_client_leaving_a_stall_is_noticed(server, client):
    with client.stream("GET", server.url("/text-short?stall=1&first_byte_delay=1ms")) as r:
        assert r.status_code == 200
    server.wait_for(re.compile(r'"GET /text-short\?stall=1&first_byte_delay=1ms" 200 0B .*client left'))


def test_server_wide_faults_apply_unless_a_query_overrides_them(tmp_path):
    serve = ServeProcess("--speed", "0", "--fault", "cut_after_bytes=100", "--fault", "chunk=10",
                         str(FIXTURES / "anthropic" / "text-short.sse"))
    try:
        with httpx.Client(timeout=10, trust_env=False) as c:
            with pytest.raises(httpx.RemoteProtocolError):
                c.get(serve.url("/text-short"))
            assert c.get(serve.url("/text-short?cut_after_bytes=2000")).content == TEXT_SHORT
    finally:
        assert serve.stop() == 130


@pytest.mark.parametrize("args, message", [
    (["--host", "0.0.0.0", "x.sse"], "refusing to listen on 0.0.0.0 without --allow-remote"),
    (["--host", "0.0.0.0", "--allow-remote", "--upstream", "https://api.openai.com"],
     "--allow-remote with --upstream needs --token"),
    ([], "give recordings or stream files to serve, or --upstream URL"),
    (["--fault", "cut_after=1", str(FIXTURES)], "unknown fault 'cut_after'"),
    (["--upstream", "http://127.0.0.1:9"], "give --provider"),
    (["--upstream", "https://api.anthropic.com"], "set ANTHROPIC_API_KEY"),
    (["--rate", "soon", str(FIXTURES)], "not a rate"),
    (["missing.sse"], "missing.sse: no such file"),
])
def test_serve_refuses_with_a_usage_error(args, message):
    done = run("serve", "--port", "0", *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr.decode() and b"Traceback" not in done.stderr


def test_serve_rejects_an_unreadable_recording_as_bad_input(tmp_path):
    bad = tmp_path / "bad.rec"
    bad.write_text("sse-tool recording 1\nwhat is this\n")
    done = run("serve", "--port", "0", str(bad))
    assert done.returncode == 5 and b"bad.rec" in done.stderr


def test_two_files_for_one_path_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    for d in (tmp_path / "a", tmp_path):
        (d / "x.sse").write_bytes(TEXT_SHORT)
    done = run("serve", "--port", "0", str(tmp_path / "x.sse"), str(tmp_path / "a" / "x.sse"))
    assert done.returncode == 2 and b"would both be served at /x" in done.stderr


def test_ctrl_c_while_uvicorn_starts_exits_130_quietly():
    """SIGINT in the moments after "listening on", while the event loop starts: the race
    test_serve_ctrl_c.py shows without timing (a Ctrl-C dropped there left serve listening,
    or exiting 0). Rare on any one machine; these tries keep the whole path honest."""
    rng = random.Random(40)
    for _ in range(20):
        serve = ServeProcess("--speed", "0", str(FIXTURES / "anthropic" / "text-short.sse"))
        time.sleep(rng.uniform(0, 0.04))
        assert serve.stop() == 130, serve.log()
        assert serve.log().count("\n") == 2, serve.log()  # "listening on" and who may call


def test_ctrl_c_closes_open_streams_and_exits_130_quietly():
    serve = ServeProcess(str(FIXTURES / "anthropic" / "text-short.sse"))
    with httpx.Client(timeout=10, trust_env=False) as c:
        with c.stream("GET", serve.url("/text-short?stall=1")) as r:
            assert r.status_code == 200
            assert serve.stop() == 130  # a stall never ends: the grace period does
    serve.wait_for(re.compile(r"stall=1; server stopped"))
    assert "Traceback" not in serve.log() and "ERROR" not in serve.log()
