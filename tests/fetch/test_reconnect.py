"""``fetch --reconnect``'s core without a network: ``reconnect.Resumer`` fed connections that a
server following the spec would send (``eventsource_server.blocks_after``), cut anywhere,
chunked anyhow; ``reconnect.Waits`` with a fixed random source. What is written must frame
as the uncut stream does: no event twice, none lost, no half event."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.decode import BOM
from sse_tool.framing import AutoFramer
from sse_tool.marker import RESET_LINE as RESET_MARKER
from sse_tool.reconnect import MAX_WAIT, MIN_BACKOFF, Resumer, Waits
from sse_tool.sse import SseParser
from sse_tool.wire import dumps, event_record

from ..eventsource_server import blocks_after, blocks_with_ids
from ..support import FIXTURES, cut_positions, stream_files

#: recorded streams cut at every position, given ids on every block or on every third
SMALL = ["anthropic/text-short.sse", "anthropic/tool-use-no-args.sse"]
#: cut positions tried in each of the other recorded streams
SAMPLED_CUTS = 40


def frames(data: bytes) -> bytes:
    """What ``sse-tool frame`` writes for ``data``, and how it ends."""
    framer = AutoFramer()
    items = framer.feed(data)
    end = framer.close()
    return b"".join(dumps(event_record(i)) for i in [*items, *end.items]) + (
        b"(truncated)" if end.truncated else b"")


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)] or [b""]


def connect(resumer: Resumer, body: bytes, size: int) -> bytes:
    resumer.begin()
    return b"".join(resumer.feed(p) for p in pieces(body, size))


def reconnected(blocks, cuts: list[int], size: int = 1 << 20, bom: bool = False) -> tuple[bytes, Resumer]:
    """What the resumer writes when the first connections are cut ``cuts`` bytes in and
    each reconnection asks the server to resume after the last event id."""
    resumer = Resumer()
    out = b""
    for cut in [*cuts, None]:
        rest = blocks_after(blocks, resumer.last_id if resumer.resumes() else None)
        assert rest is not None
        body = (BOM if bom else b"") + b"".join(rest)
        out += connect(resumer, body if cut is None else body[:cut], size)
        if cut is None:
            return out + resumer.finish(), resumer
        resumer.drop()


def check_cuts(blocks, cuts, sizes=(1 << 20,)) -> None:
    whole = b"".join(b for _, b in blocks)
    expected = frames(whole)
    for cut in cuts:
        for size in sizes:
            out, _ = reconnected(blocks, [cut], size)
            assert frames(out) == expected, (cut, size)


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("every", [1, 3])
def test_one_cut_anywhere_writes_the_uncut_streams_frames(name, every):
    blocks = blocks_with_ids((FIXTURES / name).read_bytes(), every)
    cuts = cut_positions(b"".join(b for _, b in blocks))
    # Each connection's body as one chunk at every cut; in small chunks, and byte by
    # byte, at a sample of them (the parser's own tests hold chunking to the rules).
    check_cuts(blocks, cuts)
    check_cuts(blocks, cuts[::5], (7,))
    check_cuts(blocks, cuts[::31], (1,))


@pytest.mark.parametrize("path", [p for p in stream_files() if p.suffix == ".sse"], ids=lambda p: p.name)
def test_every_recorded_stream_cut_at_a_sample_of_places(path):
    blocks = blocks_with_ids(path.read_bytes(), 2)
    cuts = cut_positions(b"".join(b for _, b in blocks))
    check_cuts(blocks, random.Random(path.name).sample(cuts, min(SAMPLED_CUTS, len(cuts))), (1 << 20, 3))


def test_without_a_cut_the_bytes_are_the_streams_bytes():
    blocks = blocks_with_ids((FIXTURES / SMALL[0]).read_bytes(), 2)
    whole = b"".join(b for _, b in blocks)
    for size in (1, 5, 1 << 20):
        out, resumer = reconnected(blocks, [], size)
        assert out == whole and resumer.terminal


def test_events_without_an_id_written_before_a_cut_are_not_written_again():
    blocks = [("1", b"id: 1\ndata: a\n\n"), (None, b"data: b\n\n"), (None, b"data: c\n\n"),
              ("2", b"id: 2\ndata: d\n\n")]
    cut = len(b"id: 1\ndata: a\n\ndata: b\n\ndata:")  # inside c: a and b were written
    out, resumer = reconnected(blocks, [cut])
    assert [r["data"] for r in _records(out)] == ["a", "b", "c", "d"]
    assert RESET_MARKER not in out and resumer.last_id == "2"


def test_an_id_only_block_is_where_the_server_resumes():
    # The id is set by a block with no data: the events after it come again on resume.
    blocks = [("1", b"id: 1\ndata: a\n\n"), ("x", b"id: x\n\n"), (None, b"data: b\n\n"),
              (None, b"data: c\n\n")]
    whole = b"".join(b for _, b in blocks)
    for cut in range(len(whole) + 1):
        out, _ = reconnected(blocks, [cut])
        assert frames(out) == frames(whole), cut


def test_a_server_that_resumes_at_a_later_id_is_believed():
    # The server sets a new id before the events the client would drop: nothing is dropped.
    resumer = Resumer()
    out = connect(resumer, b"id: 1\ndata: a\n\ndata: b\n\ndata: c", 100)
    resumer.drop()
    out += connect(resumer, b"id: 5\ndata: e\n\ndata: f\n\n", 100) + resumer.finish()
    assert [r["data"] for r in _records(out)] == ["a", "b", "e", "f"]


def test_with_no_id_the_stream_starts_again_after_the_reset_marker():
    resumer = Resumer()
    out = connect(resumer, b"data: a\n\ndata: b", 3)
    resumer.drop()
    assert not resumer.resumes()
    out += connect(resumer, b"data: a\n\ndata: b\n\n", 3) + resumer.finish()
    assert out == b"data: a\n\n" + RESET_MARKER + b"data: a\n\ndata: b\n\n"


def test_an_empty_id_resets_it_and_nothing_is_resumed():
    resumer = Resumer()
    connect(resumer, b"id: 1\ndata: a\n\nid\ndata: b\n\n", 4)
    assert resumer.last_id == "" and not resumer.resumes()


def test_a_half_event_is_never_written_and_held_bytes_go_only_at_the_end():
    resumer = Resumer()
    assert connect(resumer, b"data: a\n\ndata: b", 1) == b"data: a\n\n"
    assert resumer.finish() == b"data: b"  # no other connection follows: written as it came


def test_a_byte_order_mark_starts_only_the_first_connection():
    blocks = blocks_with_ids((FIXTURES / SMALL[0]).read_bytes())
    whole = b"".join(b for _, b in blocks)
    out, _ = reconnected(blocks, [200, 300], bom=True, size=2)
    assert out.startswith(BOM) and out.count(BOM) == 1 and frames(out) == frames(whole)


def test_crlf_split_across_chunks_at_a_cut():
    blocks = [("1", b"id: 1\r\ndata: a\r\n\r\n"), ("2", b"id: 2\r\ndata: b\r\n\r\n"),
              ("3", b"id: 3\rdata: c\r\r")]
    whole = b"".join(b for _, b in blocks)
    for cut in range(len(whole) + 1):
        for size in (1, 2, 3):
            out, _ = reconnected(blocks, [cut], size)
            assert frames(out) == frames(whole), (cut, size)


def test_retry_and_id_are_those_of_whole_blocks():
    resumer = Resumer()
    connect(resumer, b"retry: 1500\nid: 1\ndata: a\n\nretry: 9\nid: 2\ndata: b", 1)
    assert (resumer.retry, resumer.last_id) == (1500, "1")  # the cut block is not read yet
    resumer.drop()
    # its retry line counts once the connection ended (the spec sets it when read), its id not
    assert (resumer.retry, resumer.last_id) == (9, "1")


def test_the_providers_terminal_event_ends_the_stream():
    resumer = Resumer()
    resumer.begin()
    resumer.feed(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n')
    assert not resumer.terminal
    resumer.feed(b"data: [DONE]\n\n")
    assert resumer.terminal


@st.composite
def streams(draw):
    """Blocks with unique ids (the first always has one), some without, some id-only,
    with retry lines, comments, and one line-end style."""
    nl = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    blocks = []
    for i in range(draw(st.integers(1, 8))):
        lines = []
        has_id = i == 0 or draw(st.booleans())
        if draw(st.booleans()):
            lines.append(b": note %d" % i)
        if draw(st.integers(0, 4)) == 0:
            lines.append(b"retry: %d" % draw(st.integers(0, 5000)))
        if has_id:
            lines.append(b"id: i%d" % i)
        if not has_id or draw(st.integers(0, 5)):
            if draw(st.booleans()):
                lines.append(b"event: e%d" % i)
            lines += [b"data: d%d-%d \xc3\xa9" % (i, k) for k in range(draw(st.integers(1, 2)))]
        blocks.append(("i%d" % i if has_id else None, nl.join(lines) + nl + nl))
    return blocks


@settings(max_examples=300, deadline=None)
@given(streams(), st.lists(st.integers(0, 400), max_size=3), st.integers(1, 9), st.booleans())
def test_any_stream_cut_anywhere_any_number_of_times(blocks, cuts, size, bom):
    whole = b"".join(b for _, b in blocks)
    out, _ = reconnected(blocks, cuts, size, bom)
    assert frames(out) == frames((BOM if bom else b"") + whole)


def test_the_parser_says_where_whole_blocks_end_and_which_set_the_id():
    data = b"id: 1\ndata: a\n\n: c\n\nid: 2\n\ndata: b\nid: 3\n\nretry: 20\ndata: x"
    for size in (1, 2, len(data)):
        parser = SseParser(track_ids=True)
        for p in pieces(data, size):
            parser.feed(p)
        assert [(c.end, c.after, c.id) for c in parser.ids] == [(14, 15, "1"), (26, 27, "2"), (41, 42, "3")]
        assert parser.sealed == 42 and parser.last_event_id == "3"
        # a retry line counts when read (the spec), an id line at the blank line
        assert not parser.close().is_complete
        assert parser.last_event_id == "3" and parser.reconnection_time == 20


def test_a_reset_marker_voids_the_id_and_retry_of_the_block_it_cuts():
    for comments in (False, True):
        parser = SseParser(comments=comments)
        events = parser.feed(b"id: 1\ndata: a\n\nid: 2\nretry: 7\ndata: b\n: sse-tool reset\n\ndata: c\n\n")
        assert [(e.data, e.id, e.retry) for e in events if hasattr(e, "data")] == [
            ("a", "1", None), ("c", "1", None)]
        assert parser.last_event_id == "1" and parser.reconnection_time is None


def test_waits_honour_retry_exactly_after_progress():
    waits = Waits(None, 3.0, random=lambda: 0.5)
    assert waits.after(True, 1500).seconds == 1.5
    assert waits.after(True, None).seconds == 3.0
    assert waits.after(True, 0).seconds == 0.0


def test_repeated_failures_back_off_with_jitter_from_the_retry_value():
    waits = Waits(None, 3.0, random=lambda: 1.0)
    got = [waits.after(False, 1000).seconds for _ in range(7)]
    assert got == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    low = Waits(None, 3.0, random=lambda: 0.0)
    assert [low.after(False, 1000).seconds for _ in range(3)] == [1.0, 1.0, 2.0]
    assert waits.after(True, 1000).seconds == 1.0  # progress: back to retry


def test_a_retry_of_zero_does_not_make_a_busy_loop():
    waits = Waits(None, 3.0, random=lambda: 0.0)
    assert [waits.after(False, 0).seconds for _ in range(3)] == [0.0, MIN_BACKOFF, 2 * MIN_BACKOFF]


def test_a_retry_longer_than_the_cap_is_still_honoured():
    waits = Waits(None, 3.0, random=lambda: 1.0)
    assert [waits.after(False, 60_000).seconds for _ in range(2)] == [60.0, 60.0]


@pytest.mark.parametrize("progress", [True, False])
def test_a_retry_no_sleep_can_take_waits_a_day(progress):
    # retry: 2**64-1 ms is a valid field (and 9.3e12 ms once crashed the sleep with exit 1)
    for retry in (2**64 - 1, 9_300_000_000_000, 86_400_001):
        waits = Waits(None, 3.0, random=lambda: 1.0)
        wait = waits.after(progress, retry)
        assert wait.seconds == MAX_WAIT and "capped at a day" in wait.basis
    assert Waits(None, 3.0).after(True, 86_400_000).seconds == MAX_WAIT


def test_the_limit_counts_reconnections():
    waits = Waits(2, 0.1)
    assert waits.after(True, None) and waits.after(False, None)
    assert waits.after(True, None) is None


def _records(out: bytes) -> list[dict]:
    import orjson

    return [orjson.loads(line) for line in frames(out).splitlines() if line.startswith(b"{")]
