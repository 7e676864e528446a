"""``sse-tool serve`` resumes a stream whose events carry ids: ``Last-Event-ID`` starts it
just after the block that set that id (as ``eventsource_server.blocks_after`` says a spec
server does), 204 past the last event, 400 for an id the stream never set; and the
``close_after_events=N`` fault ends the body cleanly after N events."""

from __future__ import annotations

import json

import httpx
import pytest

from .eventsource_server import blocks_after, blocks_with_ids
from .serve_process import ServeProcess, fetch
from .support import FIXTURES

SHORT = blocks_with_ids((FIXTURES / "anthropic" / "text-short.sse").read_bytes(), 2)
TICKS = [(str(n), b"id: %d\ndata: %d\n\n" % (n, n)) for n in range(1, 6)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    (folder / "short.sse").write_bytes(b"".join(b for _, b in SHORT))
    (folder / "ticks.sse").write_bytes(b"".join(b for _, b in TICKS))
    (folder / "array.json").write_bytes(b'[{"id": "1"}, {"id": "2"}]')
    serve = ServeProcess("--speed", "0", str(folder))
    # A recording made by fetch, served as recordings are.
    rec = folder / "rec.rec"
    assert fetch(serve.url("/short"), "--record", str(rec)).returncode == 0
    again = ServeProcess("--speed", "0", str(rec))
    yield serve, again
    assert serve.stop() == 130 and again.stop() == 130


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=10, trust_env=False) as c:
        yield c


@pytest.mark.parametrize("last_id", ["1", "3", "5"])
@pytest.mark.parametrize("path", ["/short", "rec:/rec"])
def test_last_event_id_starts_after_the_block_that_set_it(served, client, path, last_id):
    serve = served[1] if path.startswith("rec:") else served[0]
    r = client.get(serve.url(path.removeprefix("rec:")), headers={"Last-Event-ID": last_id})
    assert r.status_code == 200 and r.content == b"".join(blocks_after(SHORT, last_id))
    serve.wait_for(__import__("re").compile(f"resumed after id {last_id}"))


def test_without_the_header_the_whole_stream(served, client):
    assert client.get(served[0].url("/short")).content == b"".join(b for _, b in SHORT)


def test_an_id_the_stream_never_set_is_a_400_in_the_providers_shape(served, client):
    r = client.get(served[0].url("/short"), headers={"Last-Event-ID": "2"})  # block 2 has no id
    assert r.status_code == 400
    error = r.json()
    assert error["type"] == "error" and "no event with id '2'" in error["error"]["message"]


def test_past_the_last_event_a_204_tells_the_client_to_stop(served, client):
    r = client.get(served[0].url("/ticks"), headers={"Last-Event-ID": "5"})
    assert (r.status_code, r.content) == (204, b"")


def test_faults_count_from_where_the_stream_resumes(served, client):
    r = client.get(served[0].url("/ticks?close_after_events=1"), headers={"Last-Event-ID": "2"})
    assert r.status_code == 200 and r.content == TICKS[2][1]
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(served[0].url("/ticks?cut_after_events=1"), headers={"Last-Event-ID": "3"})


def test_close_after_events_ends_the_body_cleanly(served, client):
    for n in (0, 1, 3, 9):
        r = client.get(served[0].url(f"/ticks?close_after_events={n}"))
        assert r.status_code == 200 and r.content == b"".join(b for _, b in TICKS[:n])
    # The nearer of a close and a cut decides.
    assert client.get(served[0].url("/ticks?close_after_events=2&cut_after_events=4")).content == \
        b"".join(b for _, b in TICKS[:2])
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(served[0].url("/ticks?close_after_events=4&cut_after_events=2"))


def test_a_stream_that_is_not_sse_ignores_the_header(served, client):
    r = client.get(served[0].url("/array"), headers={"Last-Event-ID": "1"})
    assert r.status_code == 200 and json.loads(r.content) == [{"id": "1"}, {"id": "2"}]


def test_fetch_reconnect_reads_a_stream_closed_every_two_events(served):
    done = fetch(served[0].url("/ticks?close_after_events=2"), "--reconnect", "--reconnect-delay", "1ms")
    assert done.returncode == 0 and done.stdout == b"".join(b for _, b in TICKS)
    assert done.stderr.count("the server ended the stream; reconnect") == 3  # 2, 2, 1 events
    assert "204 No Content" in done.stderr
