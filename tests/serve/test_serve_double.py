"""``serve`` as a test double over real HTTP: provider endpoints and ``--route``, request
bodies read defensively, ``stream: false`` with the stream's timing, the fault header,
test-scoped counts and their reset, and wire quirks on the wire."""

from __future__ import annotations

import json
import re
import socket
import time

import httpx
import pytest

from sse_tool.model import Status

from ..raw_http import request, send
from ..serve_process import ServeProcess
from ..support import FIXTURES, SAMPLES, read_records
from ..fetch.test_replay import make_recording

TEXT_SHORT = (FIXTURES / "anthropic" / "text-short.sse").read_bytes()
GEMINI_SSE = (SAMPLES / "gemini-thinking.sse").read_bytes()
GEMINI_JSON = (SAMPLES / "gemini-thinking.json").read_bytes()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    recs = tmp_path_factory.mktemp("double")
    # A recording whose body takes 0.4 s: stream: false must wait as long.
    (recs / "slow.rec").write_text(make_recording(
        [(0.0, TEXT_SHORT[:300]), (0.4, TEXT_SHORT[300:])], url="https://api.anthropic.com/v1/messages"))
    serve = ServeProcess("--speed", "0", "--as", "anthropic", "--as", "gemini", "--as", "ollama",
                         "--route", f"POST /custom/chat={FIXTURES / 'openai-chat' / 'openai-text-usage.sse'}",
                         str(FIXTURES / "anthropic"), str(SAMPLES / "gemini-thinking.sse"),
                         str(SAMPLES / "gemini-thinking.json"), str(SAMPLES / "ollama-chat-thinking.ndjson"))
    slow = ServeProcess("--as", "anthropic", str(recs / "slow.rec"))
    yield serve, slow
    assert serve.stop() == 130 and slow.stop() == 130
    assert "Traceback" not in serve.log() + slow.log()


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=20, trust_env=False) as c:
        yield c


def status_of(data: bytes) -> Status:
    return read_records([data])[-1].status


def test_a_base_path_naming_a_recording_chooses_it_and_the_bytes_are_the_files(server, client):
    serve, _ = server
    r = client.post(serve.url("/text-short/v1/messages"), json={"model": "x", "stream": True})
    assert r.status_code == 200 and r.content == TEXT_SHORT
    assert r.headers["content-type"] == "text/event-stream"


def test_a_file_answers_at_its_name_with_and_without_the_extension(server, client):
    serve, _ = server
    assert client.get(serve.url("/text-short.sse")).content == client.get(serve.url("/text-short")).content == TEXT_SHORT
    assert client.get(serve.url("/gemini-thinking.json")).content == GEMINI_JSON
    assert client.get(serve.url("/gemini-thinking.sse")).content == GEMINI_SSE


def test_gemini_takes_the_framing_its_url_asks_for(server, client):
    serve, _ = server
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert client.post(serve.url(path + "?alt=sse"), json={"contents": []}).content == GEMINI_SSE
    assert client.post(serve.url(path), json={"contents": []}).content == GEMINI_JSON
    whole = client.post(serve.url("/v1beta/models/gemini-2.5-flash:generateContent"), json={"contents": []})
    assert whole.status_code == 200 and whole.headers["content-type"] == "application/json"
    parts = whole.json()["candidates"][0]["content"]["parts"]
    assert [bool(p.get("thought")) for p in parts] == [True, False]


def test_ollama_streams_unless_told_not_to(server, client):
    serve, _ = server
    streamed = client.post(serve.url("/api/chat"), json={"model": "qwen3:8b", "messages": []})
    assert streamed.content == (SAMPLES / "ollama-chat-thinking.ndjson").read_bytes()
    whole = client.post(serve.url("/api/chat"), json={"model": "qwen3:8b", "messages": [], "stream": False}).json()
    assert whole["done"] is True and whole["message"]["content"].startswith("¡Claro!")


def test_a_route_answers_any_body_with_its_file_and_stream_false_with_its_json(server, client):
    serve, _ = server
    r = client.post(serve.url("/custom/chat"), json={"stream": True})
    assert r.content == (FIXTURES / "openai-chat" / "openai-text-usage.sse").read_bytes()
    whole = client.post(serve.url("/custom/chat"), json={"stream": False}).json()
    assert whole["object"] == "chat.completion"
    assert whole["choices"][0]["message"]["content"] == "The capital of the UK is London."


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe\x00", b"[" * 50_000])
def test_a_request_body_that_is_not_a_json_object_is_a_providers_400(server, body):
    serve, _ = server
    port = int(serve.base.rsplit(":", 1)[1])
    reply = send(port, request("/v1/messages", method="POST", body=body,
                               headers={"Content-Type": "application/json"}))
    assert reply.status == 400 and reply.header("content-type") == "application/json"
    assert json.loads(reply.body) == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "the request body is not a JSON object"}}
    time.sleep(0.05)
    assert "Traceback" not in serve.log()


def test_a_prefix_of_another_dialect_is_a_miss_that_says_so(server, client):
    serve, _ = server
    r = client.post(serve.url("/gemini-thinking/v1/messages"), json={"model": "x"})
    assert r.status_code == 422
    assert "no anthropic stream under /gemini-thinking answers messages (found: gemini)" in r.json()["error"]["message"]


def test_stream_false_arrives_when_the_whole_stream_would_have(server, client):
    _, slow = server
    start = time.monotonic()
    r = client.post(slow.url("/v1/messages"), json={"model": "claude-haiku-4-5", "max_tokens": 5})
    took = time.monotonic() - start
    assert r.status_code == 200 and r.json()["content"][0]["text"] == "Hello"
    assert took >= 0.39


def test_the_fault_header_and_test_scoped_counts(server, client):
    serve, _ = server
    headers = {"X-Sse-Tool-Test": "t1", "X-Sse-Tool-Fault": "status=529&times=2"}
    url = serve.url("/text-short/v1/messages")
    statuses = [client.post(url, json={}, headers=headers).status_code for _ in range(3)]
    assert statuses == [529, 529, 200]
    assert client.post(url, json={}, headers={**headers, "X-Sse-Tool-Test": "t2"}).status_code == 529
    assert client.get(serve.url("/_sse-tool/reset")).status_code == 405
    assert client.post(serve.url("/_sse-tool/reset?test=t1")).json() == {"reset": 1}
    assert client.post(url, json={}, headers=headers).status_code == 529
    assert client.post(serve.url("/_sse-tool/reset")).json()["reset"] == 2
    # A query parameter overrides the header.
    assert client.post(url + "?status=503", json={}, headers=headers).status_code == 503


def test_a_quirk_reaches_the_client_in_separate_writes(server):
    serve, _ = server
    port = int(serve.base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(request("/text-short?quirk=one-byte&chunk_delay=2ms", method="GET"))
        reads = []
        s.settimeout(5)
        while piece := s.recv(65536):
            reads.append(piece)
    assert len(reads) > 100  # one byte at a time, each its own chunk on the wire
    body = b"".join(reads).partition(b"\r\n\r\n")[2]
    assert b"\r\n1\r\nd\r\n" in body


def test_hold_open_keeps_the_body_open_after_the_last_event(server, client):
    serve, _ = server
    with pytest.raises(httpx.ReadTimeout):
        with client.stream("GET", serve.url("/text-short?quirk=hold-open"), timeout=1) as r:
            data = b""
            for piece in r.iter_raw():
                data += piece
    assert data == TEXT_SHORT and status_of(data) is Status.COMPLETE


def test_an_unknown_quirk_or_one_that_does_not_apply_is_a_400(server, client):
    serve, _ = server
    r = client.get(serve.url("/text-short?quirk=nope"))
    assert r.status_code == 400 and "unknown quirk nope" in r.json()["error"]["message"]
    r = client.get(serve.url("/text-short?quirk=empty-choices"))
    assert r.status_code == 400 and "OpenAI chat streams" in r.json()["error"]["message"]


def test_the_listing_shows_dialects_models_and_endpoints(server, client):
    serve, _ = server
    text = client.get(serve.url("/")).text
    assert re.search(r"^/text-short +sse, 1159 bytes .*\(anthropic claude-haiku-4-5-20251001\)$", text, re.M)
    assert "POST [/v1]/messages" in text and "POST /custom/chat -> " in text
    assert "quirk=NAME" in text
