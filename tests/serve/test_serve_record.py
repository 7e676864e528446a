"""Record once, replay forever: ``serve --upstream URL --record-dir DIR`` in front of a real
upstream on 127.0.0.1, then ``serve`` on DIR with the upstream gone (same bytes, the same
timing within a tolerance), and hybrid mode. The upstream is hostile: it echoes the
relay's key in every place it can (reason phrase, header names and values, cookies, a
redirect URL, the body raw, URL-encoded, JSON-escaped and split across writes, an error
body), and no form of the key may reach DIR or the log."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import quote

import httpx
import pytest

from sse_tool.mask import forms

from ..raw_http import Catcher
from ..serve_process import ServeProcess

KEY = "sk-ant-rec/key+0123456789abcdef"
EVENTS = [b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
          b'"role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":3,'
          b'"output_tokens":1}}}\n\n',
          b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
          b'"content_block":{"type":"text","text":""}}\n\n',
          b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
          b'"delta":{"type":"text_delta","text":"Hel"}}\n\n',
          b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
          b'"delta":{"type":"text_delta","text":"lo \xc3\xb1"}}\n\n',
          b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
          b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
          b'"usage":{"output_tokens":2}}\n\n',
          b'event: message_stop\ndata: {"type":"message_stop"}\n\n']


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def hostile(seen) -> list[bytes]:
    """An Anthropic-like stream that quotes the key it was sent in every place."""
    key = (seen.header("x-api-key") or "").encode()
    body = json.loads(seen.body or b"{}")
    url_key, json_key = quote(key.decode(), safe="").encode(), json.dumps(key.decode())[1:-1].encode()
    if body.get("model") == "reject":
        error = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: %s"}}' % key
        return [b"HTTP/1.1 401 Unauthorized " + key + b"\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(error), error]
    head = (b"HTTP/1.1 200 OK " + key + b"\r\nContent-Type: text/event-stream\r\n"
            b"X-Echo: " + key + b"\r\nX-" + key.replace(b"/", b"-").replace(b"+", b"-") + b": 1\r\n"
            b"X-Echo-Url: " + url_key + b"\r\nSet-Cookie: session=" + key + b"\r\n"
            b"Link: <https://example.test/?key=" + key + b">\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n")
    echo = b"event: ping\ndata: {\"raw\": \"%s\", \"json\": \"%s\", \"url\": \"%s\"}\n\n" % (key, json_key, url_key)
    split = b"event: ping\ndata: {\"again\": \"" + key + b"\"}\n\n"
    pieces = [head, chunk(EVENTS[0] + echo)] + [chunk(e) for e in EVENTS[1:4]]
    pieces += [chunk(split[:25]), chunk(split[25:])]  # the key cut in two writes
    pieces += [chunk(e) for e in EVENTS[4:]] + [b"0\r\n\r\n"]
    return pieces


def post(serve: ServeProcess, body: dict) -> tuple[int, bytes, list[float]]:
    """Status, body and the arrival time of each read, from the request on."""
    times, data = [], b""
    with httpx.Client(timeout=20, trust_env=False) as client:
        start = time.monotonic()
        with client.stream("POST", serve.url("/v1/messages"), json=body,
                           headers={"X-Sse-Tool-Test": "t", "X-Sse-Tool-Fault": "chunk=1"}) as r:
            for piece in r.iter_raw():
                times.append(time.monotonic() - start)
                data += piece
    return r.status_code, data, times


def no_key_in(text_or_bytes) -> None:
    data = text_or_bytes.encode() if isinstance(text_or_bytes, str) else text_or_bytes
    for form in forms(KEY) | {KEY.encode()}:
        assert form not in data, form


ASK = {"model": "claude-x", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "a"}]}
OTHER = {**ASK, "messages": [{"role": "user", "content": "b"}]}
REJECT = {**ASK, "model": "reject"}


@pytest.fixture
def recorded(tmp_path):
    """DIR after a record session against the hostile upstream, and what clients got."""
    upstream = Catcher("127.0.0.1", answer=hostile)
    folder = tmp_path / "recordings"
    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--record-dir", str(folder),
                         env={"ANTHROPIC_API_KEY": KEY})
    try:
        got = {name: post(serve, body) for name, body in (("ask", ASK), ("other", OTHER), ("reject", REJECT))}
        serve.wait_for(re.compile(r"401 .*recorded"))
    finally:
        assert serve.stop() == 130
        upstream.close()
    log = serve.log()
    assert "Traceback" not in log
    no_key_in(log)
    return folder, got, upstream


def test_record_mode_relays_masked_and_writes_one_recording_per_request(recorded):
    folder, got, upstream = recorded
    files = sorted(p.name for p in folder.iterdir())
    assert len(files) == 3 and all(re.fullmatch(r"v1-messages-[0-9a-f]{12}\.rec", f) for f in files)
    assert len(upstream.seen) == 3 and upstream.seen[0].header("x-api-key") == KEY
    # The local server's own headers never go upstream.
    assert upstream.seen[0].header("x-sse-tool-test") is None and upstream.seen[0].header("x-sse-tool-fault") is None
    status, body, _ = got["ask"]
    assert status == 200 and b"Hello" not in body and b'"text":"lo \xc3\xb1"' in body
    no_key_in(body)  # the client never sees the key either
    assert got["reject"][0] == 401


def test_no_form_of_the_key_reaches_the_folder(recorded):
    folder, _, _ = recorded
    for path in folder.iterdir():
        no_key_in(path.read_bytes())
        no_key_in(path.name)
    text = b"".join(p.read_bytes() for p in folder.iterdir()).decode()
    assert "> x-api-key: <redacted>" in text and "< set-cookie: <redacted>" in text
    assert "end" in text and " http-error HTTP 401" in text


def test_replay_with_the_upstream_gone_gives_the_same_bytes_and_timing(recorded):
    folder, got, upstream = recorded
    serve = ServeProcess("--record-dir", str(folder))
    try:
        for name, body in (("ask", ASK), ("other", OTHER), ("reject", REJECT)):
            status, data, times = post(serve, body)
            live_status, live_data, live_times = got[name]
            assert (status, data) == (live_status, live_data), name
            if name != "reject":
                # Eight writes 50 ms apart upstream: the replay keeps the gaps.
                assert live_times[-1] > 0.3
                assert abs(times[-1] - live_times[-1]) < 0.25 + 0.2 * live_times[-1], (times, live_times)
                assert times[0] < times[-1] - 0.2  # not all at once
        assert not upstream.touched or len(upstream.seen) == 3  # nothing more reached it
    finally:
        assert serve.stop() == 130
    assert "Traceback" not in serve.log()


def test_replay_with_another_request_misses_loudly(recorded):
    folder, _, _ = recorded
    serve = ServeProcess("--speed", "0", "--record-dir", str(folder))
    try:
        status, data, _ = post(serve, {**ASK, "messages": [{"role": "user", "content": "new"}]})
        assert status == 422
        message = json.loads(data)["error"]["message"]
        assert "3 recordings of POST" not in message and "differs in messages" in message
    finally:
        assert serve.stop() == 130


def test_hybrid_mode_replays_a_match_and_relays_and_records_the_rest(tmp_path):
    upstream = Catcher("127.0.0.1", answer=hostile)
    folder = tmp_path / "hybrid"
    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--record-dir", str(folder),
                         "--mode", "hybrid", "--speed", "0", env={"ANTHROPIC_API_KEY": KEY})
    try:
        first = post(serve, ASK)
        assert len(upstream.seen) == 1 and first[0] == 200
        serve.wait_for(re.compile(r"recorded v1-messages-"))
        again = post(serve, ASK)  # now from DIR: the upstream sees nothing
        assert len(upstream.seen) == 1 and again[1] == first[1]
        post(serve, OTHER)
        assert len(upstream.seen) == 2
        serve.wait_for(re.compile(r'"POST /v1/messages" 200 .*from /v1-messages-'))
    finally:
        assert serve.stop() == 130
        upstream.close()
    assert len(list(folder.glob("*.rec"))) == 2 and not list(folder.glob(".*"))
    for path in folder.iterdir():
        no_key_in(path.read_bytes())
    no_key_in(serve.log())


def test_hybrid_mode_with_as_relays_and_records_before_any_recording_of_its_dialect(tmp_path):
    # --as found no recording of the dialect and answered every request with a 422 miss:
    # nothing was ever relayed, so nothing was ever recorded.
    anthropic = pytest.importorskip("anthropic")
    upstream = Catcher("127.0.0.1", answer=hostile)
    folder = tmp_path / "hybrid-as"
    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--record-dir", str(folder),
                         "--mode", "hybrid", "--as", "anthropic", "--speed", "0",
                         env={"ANTHROPIC_API_KEY": KEY})
    client = anthropic.Anthropic(base_url=serve.base, api_key="client-side-key", max_retries=0)

    def ask() -> str:
        with client.messages.stream(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]) as s:
            return "".join(s.text_stream)

    try:
        assert ask() == "Hello ñ" and len(upstream.seen) == 1
        serve.wait_for(re.compile(r"recorded v1-messages-"))
        assert ask() == "Hello ñ" and len(upstream.seen) == 1  # the second from DIR
        serve.wait_for(re.compile(r'"POST /v1/messages" 200 .*from /v1-messages-'))
    finally:
        assert serve.stop() == 130
        upstream.close()
    assert len(list(folder.glob("*.rec"))) == 1
    no_key_in(serve.log())


MESSAGE = {"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-x",
           "content": [{"type": "text", "text": "Whole answer"}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}


def whole_or_stream(seen) -> list[bytes]:
    """Anthropic's whole JSON message for a request without ``stream``, else ``hostile``'s stream."""
    if json.loads(seen.body or b"{}").get("stream") is True:
        return hostile(seen)
    body = json.dumps(MESSAGE).encode()
    return [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % len(body), body]


def test_a_recorded_whole_answer_replays_as_recorded_and_only_to_a_request_for_one(tmp_path):
    # The JSON answer was "assembled" as if a stream (and cut), and a request for a stream
    # with the same body was answered with it; the two were one recording.
    anthropic = pytest.importorskip("anthropic")
    upstream = Catcher("127.0.0.1", answer=whole_or_stream)
    folder = tmp_path / "kinds"
    messages = [{"role": "user", "content": "Hi"}]

    def whole(serve) -> str:
        client = anthropic.Anthropic(base_url=serve.base, api_key="k", max_retries=0)
        return client.messages.create(model="claude-x", max_tokens=10, messages=messages).content[0].text

    def streamed(serve) -> str:
        client = anthropic.Anthropic(base_url=serve.base, api_key="k", max_retries=0)
        with client.messages.stream(model="claude-x", max_tokens=10, messages=messages) as s:
            return "".join(s.text_stream)

    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--record-dir", str(folder),
                         "--mode", "hybrid", "--speed", "0", env={"ANTHROPIC_API_KEY": KEY})
    try:
        assert whole(serve) == "Whole answer" and len(upstream.seen) == 1
        serve.wait_for(re.compile(r"recorded v1-messages-"))
        assert whole(serve) == "Whole answer" and len(upstream.seen) == 1  # replayed
        assert streamed(serve) == "Hello ñ" and len(upstream.seen) == 2  # relayed: no stream recorded yet
        first = serve.wait_for(re.compile(r"recorded (v1-messages-\w+\.rec)"))[1]
        serve.wait_for(re.compile(rf"recorded (?!{first})v1-messages-"))
    finally:
        assert serve.stop() == 130
        upstream.close()
    assert len(list(folder.glob("*.rec"))) == 2
    offline = ServeProcess("--speed", "0", "--as", "anthropic", "--record-dir", str(folder))
    try:
        assert whole(offline) == "Whole answer" and streamed(offline) == "Hello ñ"
        assert "assembled" not in offline.log()
    finally:
        assert offline.stop() == 130


def test_the_sdk_records_once_and_runs_offline(tmp_path):
    anthropic = pytest.importorskip("anthropic")
    upstream = Catcher("127.0.0.1", answer=hostile)
    folder = tmp_path / "sdk"

    def ask(serve) -> str:
        client = anthropic.Anthropic(base_url=serve.base, api_key="client-side-key", max_retries=0)
        with client.messages.stream(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]) as s:
            return "".join(s.text_stream)

    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--record-dir", str(folder),
                         env={"ANTHROPIC_API_KEY": KEY})
    try:
        live = ask(serve)
    finally:
        serve.stop()
        upstream.close()
    assert live == "Hello ñ"
    assert upstream.seen[0].header("x-api-key") == KEY  # the client's own key never went
    replay = ServeProcess("--speed", "0", "--as", "anthropic", "--record-dir", str(folder))
    try:
        assert ask(replay) == live
    finally:
        replay.stop()


@pytest.mark.parametrize("args, message", [
    (["--mode", "record", "x.sse"], "--mode record relays and records: give --upstream URL and --record-dir DIR"),
    (["--mode", "hybrid", "--upstream", "http://127.0.0.1:9", "--provider", "none"],
     "--mode hybrid relays and records"),
    (["--mode", "replay", "--upstream", "http://127.0.0.1:9", "--provider", "none", "--record-dir", "d"],
     "--mode replay answers from files only"),
    (["--upstream", "http://127.0.0.1:9", "--provider", "none", "--as", "openai"],
     "--as and --route choose recordings"),
    (["--route", "POST /v1/x", "x.sse"], "--route: expected 'METHOD /PATH=FILE'"),
    (["--route", "POST /v1/x=missing.sse", "--as", "openai"], "missing.sse: no such file"),
])
def test_the_new_options_refuse_what_cannot_work(args, message, tmp_path):
    from ..serve_process import run

    done = run("serve", "--port", "0", *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr.decode() and b"Traceback" not in done.stderr


def test_requests_that_differ_in_their_query_or_an_unspelled_path_get_two_recordings():
    from sse_tool.serve.record import recording_name

    body = b'{"contents": [{"parts": [{"text": "Hi"}]}]}'
    gemini = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    names = {recording_name("POST", gemini + "?alt=sse", body), recording_name("POST", gemini, body),
             recording_name("POST", "http://u/v1/chat/completions", b"{}"),
             recording_name("POST", "http://u/v1/chat-completions", b"{}"),
             recording_name("POST", "http://u/" + "a" * 81, b"{}"), recording_name("POST", "http://u/" + "a" * 82, b"{}")}
    assert len(names) == 6
    # a plain path without a query is named as before (method and body in the hash)
    import hashlib

    assert recording_name("POST", "http://u/v1/messages", b'{"stream": true}') == \
        f"v1-messages-{hashlib.sha256(b'POST {}').hexdigest()[:12]}.rec"
    # a request for the whole answer is not the same recording as one for a stream
    assert recording_name("POST", "http://u/v1/messages", b'{"stream": false}') != \
        recording_name("POST", "http://u/v1/messages", b'{"stream": true}')
