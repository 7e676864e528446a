"""``serve --upstream URL --resumable`` against a fake upstream on 127.0.0.1 that counts its
requests (tests/http_server.py): every event gets the relay's id, a client that comes back
with ``Last-Event-ID`` gets the rest from the buffer, and whatever the clients do, each
stream costs exactly one upstream request. The buffer is bounded, expires, holds the key
masked, and one client cannot read another's stream."""

from __future__ import annotations

import random
import re
import socket
import threading
import time

import httpx
import pytest

from sse_tool.serve.resume import ID
from sse_tool.sse import SseParser

from ..http_server import LocalServer, event, events
from ..serve_process import ServeProcess, fetch

KEY = "sk-resume-test-key-0123456789"
TOKEN = "resume-token-abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
OUR_ID = re.compile(rb"id: [A-Za-z0-9_-]{22}:\d+\n")


@pytest.fixture(scope="module")
def upstream():
    server = LocalServer()
    yield server
    server.close()


def _relay(upstream, *args):
    return ServeProcess("--upstream", upstream.base, "--provider", "openai", "--token", TOKEN,
                        "--allow-path", "/", "--resumable", *args, env={"OPENAI_API_KEY": KEY})


@pytest.fixture(scope="module")
def relay(upstream):
    serve = _relay(upstream)
    yield serve
    assert serve.stop() == 130
    assert KEY not in serve.log() and TOKEN not in serve.log() and "Traceback" not in serve.log()


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=10, trust_env=False) as c:
        yield c


def requests_to(upstream, path: str) -> int:
    return sum(1 for r in upstream.requests if r.path == path)


def parse(data: bytes) -> list[tuple[str, str]]:
    return [(e.id, e.data) for e in SseParser().feed(data)]


def read_events(response, n: int | None) -> tuple[bytes, list]:
    """The first ``n`` events of a streamed response (all, with None), and their bytes."""
    parser, got, raw = SseParser(), [], b""
    for chunk in response.iter_raw():
        raw += chunk
        got += parser.feed(chunk)
        if n is not None and len(got) >= n:
            break
    return raw, [(e.id, e.data) for e in got]


def test_each_event_gets_the_relays_id_and_nothing_else_changes(relay, upstream, client):
    r = client.get(relay.url("/sse?n=5&delay=0&t=ids"), headers=AUTH)
    assert r.status_code == 200 and OUR_ID.sub(b"", r.content) == events(5)
    ids = [i for i, _ in parse(r.content)]
    name = ids[0].split(":")[0]
    assert ids == [f"{name}:{n}" for n in range(1, 6)] and ID.fullmatch(ids[0])
    relay.wait_for(re.compile(r'"GET /sse\?n=5&delay=0&t=ids" 200 .*resumable stream #\d+'))
    assert name not in relay.log()


def test_a_client_that_left_gets_the_rest_and_the_upstream_is_asked_once(relay, upstream, client):
    path = "/gate?t=left"
    with client.stream("GET", relay.url(path), headers=AUTH) as r:
        _, first = read_events(r, 1)
    assert first[0][1] == event(0)[6:-2].decode()
    upstream.gates["default"].set()  # the upstream goes on, with nobody listening
    time.sleep(0.3)
    assert not upstream.disconnected["default"].is_set()
    rest = client.get(relay.url(path), headers={**AUTH, "Last-Event-ID": first[0][0]})
    assert rest.status_code == 200 and [d for _, d in parse(rest.content)] == [event(1)[6:-2].decode()]
    done = client.get(relay.url(path), headers={**AUTH, "Last-Event-ID": parse(rest.content)[0][0]})
    assert done.status_code == 204
    assert requests_to(upstream, path) == 1
    upstream.gates["default"].clear()


@pytest.mark.parametrize("seed", range(4))
def test_whatever_the_clients_do_one_upstream_request_per_stream(relay, upstream, client, seed):
    rng = random.Random(seed)
    n = 25
    path = f"/sse?n={n}&delay=0.01&t=any-{seed}"
    seen: dict[int, str] = {}

    def note(got):
        for i, data in got:
            k = int(i.split(":")[1])
            assert seen.setdefault(k, data) == data  # the same event under the same id, always
        return got

    with client.stream("GET", relay.url(path), headers=AUTH) as r:
        got = note(read_events(r, rng.randint(1, 8))[1])
    name = got[0][0].split(":")[0]
    for _ in range(rng.randint(2, 5)):
        after = rng.choice(sorted(seen))
        headers = {**AUTH, "Last-Event-ID": f"{name}:{after}"}
        action = rng.choice(["some", "all", "twice", "wrong-body"])
        if action == "wrong-body":
            r = client.post(relay.url(path), headers=headers, content=b'{"other": 1}')
            assert r.status_code == 409 and "another request" in r.json()["error"]["message"]
            continue
        readers = 2 if action == "twice" else 1
        for _ in range(readers):
            with client.stream("GET", relay.url(path), headers=headers) as r:
                if r.status_code == 204:
                    assert after == n
                    continue
                got = note(read_events(r, rng.randint(1, 6) if action == "some" else None)[1])
                assert [int(i.split(":")[1]) for i, _ in got] == list(range(after + 1, after + 1 + len(got)))
    last = max(seen)
    if last < n:
        r = client.get(relay.url(path), headers={**AUTH, "Last-Event-ID": f"{name}:{last}"})
        note(parse(r.content))
    assert [seen[k] for k in sorted(seen)] == [event(i)[6:-2].decode() for i in range(n)]
    assert requests_to(upstream, path) == 1


class CuttingProxy:
    """TCP to ``port``; the first connection's answer is cut after ``cut`` bytes."""

    def __init__(self, port: int, cut: int) -> None:
        self._port, self._cut, self.connections = port, cut, 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            up = socket.create_connection(("127.0.0.1", self._port))
            limit = self._cut if self.connections == 1 else None
            threading.Thread(target=self._pipe, args=(conn, up, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(up, conn, limit), daemon=True).start()

    @staticmethod
    def _pipe(src, dst, limit) -> None:
        sent = 0
        try:
            while data := src.recv(65536):
                if limit is not None and sent + len(data) >= limit:
                    dst.sendall(data[:limit - sent])
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._sock.close()


@pytest.mark.parametrize("cut", [250, 420, 700])
def test_fetch_reconnect_through_a_cut_gets_the_upstreams_stream_once(relay, upstream, cut):
    path = f"/sse?n=12&delay=0.02&t=fetch-{cut}"
    proxy = CuttingProxy(int(relay.base.rsplit(":", 1)[1]), cut)
    try:
        done = fetch(f"http://127.0.0.1:{proxy.port}{path}", "--reconnect", "--reconnect-delay",
                     "10ms", "-H", f"Authorization: Bearer {TOKEN}")
    finally:
        proxy.close()
    assert done.returncode == 0, done.stderr
    # Cut, resumed from the buffer, then (no provider's terminal event here) told by a 204
    # that nothing follows.
    assert "resuming after id" in done.stderr and proxy.connections == 3
    assert done.stderr.endswith("the server answered 204 No Content: not reconnecting\n")
    assert OUR_ID.sub(b"", done.stdout) == events(12)
    assert requests_to(upstream, path) == 1


def test_the_key_is_masked_before_the_buffer_keeps_anything(relay, upstream, client):
    path = "/echo-key?status=200&t=mask"
    r = client.get(relay.url(path), headers=AUTH)
    first = parse(r.content)[0][0]
    again = client.get(relay.url(path), headers={**AUTH, "Last-Event-ID": first})
    for body in (r.content, again.content):
        assert KEY.encode() not in body and b"*" * len(KEY) in body
    assert requests_to(upstream, path) == 1


def test_refusals_are_clear_and_never_reach_the_upstream(relay, upstream, client):
    path = "/sse?n=3&delay=0&t=refuse"
    r = client.get(relay.url(path), headers=AUTH)
    name = parse(r.content)[0][0].split(":")[0]
    other = ("B" if name[0] != "B" else "C") + name[1:]
    cases = {
        f"{other}:1": (410, "not buffered"),  # a guess at another stream's name
        f"{name}:9": (400, "no event 9"),
        "garbage": (400, "not an id this relay gave"),
        "x" * 4000: (400, "not an id this relay gave"),
        f"{name}:3": (204, None),
    }
    for last_id, (status, words) in cases.items():
        got = client.get(relay.url(path), headers={**AUTH, "Last-Event-ID": last_id})
        assert got.status_code == status, last_id
        if words:
            assert words in got.json()["error"]["message"]
    unauthorised = client.get(relay.url(path), headers={"Last-Event-ID": f"{name}:1"})
    assert unauthorised.status_code == 401
    assert requests_to(upstream, path) == 1 and name not in relay.log()


def test_an_answer_that_is_not_an_event_stream_is_relayed_as_before(relay, upstream, client):
    r = client.get(relay.url("/error?status=429&retry_after=3&message=slow"), headers=AUTH)
    direct = client.get(upstream.url("/error?status=429&retry_after=3&message=slow"))
    assert (r.status_code, r.content) == (429, direct.content)


def test_an_upstream_cut_is_a_cut_and_then_a_clear_502(relay, upstream, client):
    path = "/cut?after=100&mode=chunked&t=upcut"
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(relay.url(path), headers=AUTH)
    with client.stream("GET", relay.url(path), headers={**AUTH, "Last-Event-ID": "A" * 22 + ":1"}) as r:
        assert r.status_code == 410
    # A client that got the events before the cut is told that nothing more will come.
    raw = b""
    with client.stream("GET", relay.url("/cut?after=100&mode=chunked&t=upcut2"), headers=AUTH) as r:
        with pytest.raises(httpx.RemoteProtocolError):
            for chunk in r.iter_raw():
                raw += chunk
    last = parse(raw)[-1][0]
    r = client.get(relay.url("/cut?after=100&mode=chunked&t=upcut2"), headers={**AUTH, "Last-Event-ID": last})
    assert r.status_code == 502 and "nothing more will come" in r.json()["error"]["message"]


def test_a_stream_expires_after_its_ttl(upstream, client):
    serve = _relay(upstream, "--resume-ttl", "1s")
    try:
        path = "/sse?n=3&delay=0&t=ttl"
        first = parse(client.get(serve.url(path), headers=AUTH).content)[0][0]
        assert client.get(serve.url(path), headers={**AUTH, "Last-Event-ID": first}).status_code == 200
        time.sleep(1.3)
        gone = client.get(serve.url(path), headers={**AUTH, "Last-Event-ID": first})
        assert gone.status_code == 410 and "--resume-ttl" in gone.json()["error"]["message"]
        assert requests_to(upstream, path) == 1
    finally:
        assert serve.stop() == 130


def test_a_stream_nobody_came_back_for_is_closed_upstream(client):
    upstream = LocalServer()  # its own: the drip's disconnect flag is watched
    serve = _relay(upstream, "--resume-ttl", "2s")
    try:
        with client.stream("GET", serve.url("/drip?delay=0.02"), headers=AUTH) as r:
            read_events(r, 2)
        time.sleep(0.5)
        assert not upstream.disconnected["default"].is_set()  # read on while it may be resumed
        line = serve.wait_for(re.compile(r'"GET /drip\?delay=0.02" 200 .*client left.*'))[0]
        assert "upstream request closed" not in line and "the upstream is read on" in line
        assert upstream.disconnected["default"].wait(5)  # then let go
    finally:
        assert serve.stop() == 130
        upstream.close()


def test_the_buffer_keeps_the_newest_events_within_its_size(upstream, client):
    serve = _relay(upstream, "--resume-buffer", "400")
    try:
        path = "/sse?n=20&delay=0&t=small"
        ids = [i for i, _ in parse(client.get(serve.url(path), headers=AUTH).content)]
        old = client.get(serve.url(path), headers={**AUTH, "Last-Event-ID": ids[0]})
        assert old.status_code == 410 and "--resume-buffer" in old.json()["error"]["message"]
        recent = client.get(serve.url(path), headers={**AUTH, "Last-Event-ID": ids[-3]})
        assert recent.status_code == 200 and [i for i, _ in parse(recent.content)] == ids[-2:]
    finally:
        assert serve.stop() == 130


@pytest.mark.parametrize("args, words", [
    (["--resumable", "x.sse"], "works with the plain relay"),
    (["--upstream", "http://127.0.0.1:9", "--provider", "none", "--resumable", "--record-dir", "d"],
     "works with the plain relay"),
    (["--upstream", "http://127.0.0.1:9", "--provider", "none", "--resume-ttl", "1s"],
     "go with --resumable"),
])
def test_resumable_options_are_checked(args, words):
    serve = ServeProcess(*args, ready=False)
    assert serve.proc.wait(20) == 2
    serve.stop()
    assert words in serve.log()


# -- line ends -------------------------------------------------------------------------------

def _crlf_stream(opened: threading.Event, released: threading.Event):
    """An upstream that streams Anthropic's text-short in CRLF lines, one event a write, and
    sends the rest only once ``opened`` is set (or 5 s have passed: then ``released``)."""
    from ..support import FIXTURES

    blocks = (FIXTURES / "anthropic" / "text-short.sse").read_bytes().replace(b"\n", b"\r\n") \
        .split(b"\r\n\r\n")

    def answer(seen):
        yield b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        for i, block in enumerate(b for b in blocks if b):
            if i == 4:  # message_start, content_block_start, ping, the first text delta
                opened.wait(5)
                released.set()
            yield block + b"\r\n\r\n"

    return answer


@pytest.mark.parametrize("ending", [b"\r\n", b"\r", b"\n"])
def test_the_relays_id_line_ends_as_its_block_does(ending):
    from sse_tool.serve.resume import Tagger

    data = b"event: a" + ending + b"data: 1" + ending + ending + b"data: 2" + ending + ending
    tagger = Tagger("A" * 22)
    out = b"".join(d for _, d in tagger.feed(data))
    assert out == (b"event: a" + ending + b"data: 1" + ending + b"id: " + b"A" * 22 + b":1" + ending
                   + ending + b"data: 2" + ending + b"id: " + b"A" * 22 + b":2" + ending + ending)


def test_the_anthropic_sdk_streams_a_crlf_stream_through_the_resumable_relay_as_it_comes():
    # An LF-only id line in a CRLF stream hid every event end from the SDK's splitter
    # (it looks for CRLF CRLF): nothing arrived until the upstream ended.
    anthropic = pytest.importorskip("anthropic")
    from ..raw_http import Catcher

    opened, released = threading.Event(), threading.Event()
    upstream = Catcher("127.0.0.1", answer=_crlf_stream(opened, released))
    serve = ServeProcess("--upstream", upstream.base, "--provider", "anthropic", "--resumable",
                         env={"ANTHROPIC_API_KEY": KEY})
    try:
        client = anthropic.Anthropic(base_url=serve.base, api_key="unused", max_retries=0)
        text, early = "", None
        with client.messages.stream(model="m", max_tokens=10,
                                    messages=[{"role": "user", "content": "hi"}]) as stream:
            for piece in stream.text_stream:
                if early is None:
                    early = not released.is_set()
                    opened.set()
                text += piece
        assert early is True  # the first text came before the upstream sent the rest
        assert text == stream.get_final_message().content[0].text and text
    finally:
        opened.set()
        assert serve.stop() == 130
        upstream.close()
