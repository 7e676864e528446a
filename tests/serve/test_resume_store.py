"""The resumable relay's memory alone (``serve/resume.py``): ids added to events and nothing
else changed, whatever the chunking; the buffer bounded in bytes, streams and time, with
the clock given."""

from __future__ import annotations

import re

import pytest

from sse_tool.serve.resume import ID, Store, Tagger, parse_id
from sse_tool.sse import SseParser

from ..support import FIXTURES, cut_positions

NAME = "A" * 22


def tagged(data: bytes, sizes: list[int]) -> tuple[list, bytes]:
    """The tagger's pieces for ``data`` fed in pieces cut at ``sizes`` positions, and the end."""
    tagger, pieces, at = Tagger(NAME), [], 0
    for cut in [*sizes, len(data)]:
        pieces += tagger.feed(data[at:cut])
        at = cut
    return pieces, tagger.close()


def untagged(data: bytes) -> bytes:
    return re.sub(rb"id: " + NAME.encode() + rb":\d+(?:\r\n|\r|\n)", b"", data)


def test_each_event_gets_the_next_id_and_nothing_else_changes():
    data = (FIXTURES / "anthropic" / "text-short.sse").read_bytes()
    whole, _ = tagged(data, [])
    out = b"".join(d for _, d in whole)
    assert untagged(out) == data
    parser = SseParser()
    events = parser.feed(out)
    assert [e.id for e in events] == [f"{NAME}:{n}" for n in range(1, len(events) + 1)]
    assert [n for n, _ in whole] == list(range(1, len(events) + 1))
    for cut in cut_positions(data):  # the same pieces joined, wherever the chunks end
        pieces, rest = tagged(data, [cut])
        assert b"".join(d for _, d in pieces) + rest == out, cut


def test_line_ends_comments_and_blocks_without_data():
    data = (b": hi\r\n\r\nid: up-1\r\ndata: a\r\n\r\nid: only\r\n\r\nretry: 10\rdata: b\r\r"
            b"data: c\n\ndata: half")
    for size in range(1, 6):
        pieces, rest = tagged(data, list(range(size, len(data), size)))
        out = b"".join(d for _, d in pieces)
        assert rest == b"data: half"
        assert untagged(out) + rest == data
        events = SseParser().feed(out)
        assert [(e.data, e.id) for e in events] == [("a", f"{NAME}:1"), ("b", f"{NAME}:2"), ("c", f"{NAME}:3")]
        assert b"id: up-1\r\nid: " + NAME.encode() in out.replace(b"data: a\r\n", b"")  # the upstream's stays, ours comes last


def test_ids_are_unguessable_names():
    store = Store(1 << 20, 60)
    names = {store.open(("GET", "u", b""), 200, [], 0.0).name for _ in range(200)}
    assert len(names) == 200 and all(ID.fullmatch(f"{n}:1") for n in names)
    assert parse_id(f"{NAME}:7") == (NAME, 7)
    for bad in ("", "7", f"{NAME}", f"{NAME}:", f"{NAME}:x", f"{NAME[:-1]}:1", f"{NAME}:1:2",
                f"{NAME}:{'9' * 16}", f"../{NAME}:1"):
        assert parse_id(bad) is None, bad


def _stream(store, pieces, now=0.0):
    stream = store.open(("GET", "u", b""), 200, [], now)
    store.append(stream, pieces)
    return stream


def test_where_a_resume_starts():
    store = Store(1 << 20, 60)
    stream = _stream(store, [(None, b": c\n\n"), (1, b"e1"), (2, b"e2"), (None, b": k\n\n"), (3, b"e3")])
    assert stream.count == 3 and stream.end == 5
    assert stream.start_after(1) == 2 and stream.read(2) == [b"e2", b": k\n\n", b"e3"]
    assert stream.start_after(3) == 5 and stream.read(5) == []
    assert stream.start_after(4) == "unknown" and stream.start_after(0) == "unknown"


def test_past_the_limit_the_oldest_pieces_of_the_largest_stream_go():
    store = Store(100, 60)
    small = _stream(store, [(1, b"s" * 10)])
    big = _stream(store, [(n, b"b" * 30) for n in range(1, 4)])
    assert store.size == 100 and big.first == 0
    store.append(small, [(2, b"s" * 10)])  # 110: big loses its oldest
    assert store.size == 80 and big.first == 1 and big.start_after(1) == "gone" and big.start_after(2) == 2
    assert small.start_after(1) == 1
    assert big.read(0) is None and big.read(1) == [b"b" * 30, b"b" * 30]


def test_a_stream_is_forgotten_ttl_after_it_ended_or_its_clients_left():
    store = Store(1 << 20, 10)
    ended = _stream(store, [(1, b"x")])
    store.finish(ended, "finish", 5.0)
    alone = _stream(store, [(1, b"y")])
    store.detach(alone, store.attach(alone, 0), 3.0)
    busy = _stream(store, [(1, b"z")])
    store.attach(busy, 0)
    assert store.expire(12.9) == [] and store.expire(13.0) == [alone] and alone.removed and alone.read(0) is None
    assert store.expire(14.9) == [] and store.get(ended.name) is ended
    assert store.expire(15.0) == [ended] and store.get(ended.name) is None
    assert store.expire(1e9) == [] and store.get(busy.name) is busy
    assert store.size == 1


def test_a_piece_a_connected_client_still_needs_is_never_dropped():
    store = Store(100, 60)
    live = _stream(store, [(1, b"a" * 40)])
    cursor = store.attach(live, 0)
    idle = _stream(store, [(1, b"b" * 40)])
    store.append(live, [(2, b"a" * 40)])  # 120: only idle's piece may go
    assert (idle.first, live.first, store.size) == (1, 0, 80) and not store.held_back(live)
    store.append(live, [(3, b"a" * 40)])  # 120 again, all of it needed: the upstream waits
    assert live.first == 0 and store.size == 120 and store.held_back(live)
    cursor.seq = 2  # the client was sent two pieces
    store.trim()
    assert (live.first, store.size) == (1, 80) and not store.held_back(live)
    store.detach(live, cursor, 1.0)
    assert live.needed == live.end


def test_at_most_max_streams_the_oldest_finished_making_room():
    store = Store(1 << 20, 60, max_streams=2)
    a, b = _stream(store, []), _stream(store, [])
    assert store.open(("GET", "u", b""), 200, [], 0.0) is None  # both live: refused
    store.finish(b, "finish", 1.0)
    store.finish(a, "cut", 2.0)
    c = store.open(("GET", "u", b""), 200, [], 3.0)
    assert c is not None and b.name not in store and a.name in store


@pytest.mark.parametrize("n", [1, 1000])
def test_a_long_stream_keeps_what_the_limit_allows_and_no_more(n):
    store = Store(50 * n, 60)
    stream = _stream(store, [])
    seq = 0
    for i in range(1, 20_000 + 1):
        store.append(stream, [(i, b"%05d" % i * n)])
        got = stream.read(seq)
        seq += len(got)
        assert got == [b"%05d" % i * n]
        if i > 10:  # ten pieces fit: events i-9 to i
            assert stream.start_after(i - 9) == seq - 9 and stream.start_after(i - 10) == "gone"
        # What the limit dropped is not held on to (the lists are compacted now and then).
        assert len(stream._data) <= 150 and len(stream._events) <= 150
