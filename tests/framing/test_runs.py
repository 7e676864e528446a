"""Runs (``runs.EventRun``): a framer made with ``runs=True`` hands out the events it read at
once as one lazy sequence; whatever the chunking, flattened, they are exactly the events
the same framer gives without runs, and ``data`` is their data joined by LF."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from sse_tool.errors import EventTooLarge
from sse_tool.framing import AutoFramer, make_framer, sniff
from sse_tool.runs import EventRun, LineRun, SseRun
from sse_tool.wire import dumps, event_record

from ..normalize.test_every_cut_normalize import cuts_for
from ..support import stream_files


def records_of(data: bytes) -> bytes:
    """``data`` as ``sse-tool frame`` writes it (an NDJSON stream: frame's records)."""
    framer = AutoFramer()
    items = framer.feed(data)
    end = framer.close()
    return b"".join(dumps(event_record(i)) for i in [*items, *end.items])


def inputs() -> list:
    """The recorded SSE streams, and frame's records of each: what normalize and render
    read with runs."""
    found = []
    for path in stream_files():
        data = path.read_bytes()
        if sniff(data, True) == "sse":
            name = path.relative_to(path.parent.parent).as_posix()
            found.append(pytest.param("sse", data, id=name))
            found.append(pytest.param("ndjson", records_of(data), id=f"{name} (frame's records)"))
    return found


INPUTS = inputs()


def framed(kind: str, chunks: list[bytes], runs: bool, limit: int = 64 * 2**20):
    """The events of ``chunks`` (runs flattened), the runs met, and the end or the failure."""
    framer = make_framer(kind, raw=True, runs=runs, max_event_size=limit)
    items, met = [], []
    try:
        for chunk in chunks:
            got = framer.feed(chunk)
            if isinstance(got, EventRun):
                met.append(got)
                assert got.data == b"\n".join(e.data for e in got)
            else:
                assert type(got) is list and not any(isinstance(i, EventRun) for i in got)
            items += got
        return items, met, framer.close()
    except EventTooLarge as exc:
        return items, met, ("too large", exc.offset)


@pytest.mark.parametrize("kind, data", INPUTS)
def test_runs_cut_anywhere_are_the_events_without_runs(kind, data):
    whole, runs, end = framed(kind, [data], runs=True)
    assert (whole, end) == framed(kind, [data], runs=False)[::2]
    for cut in cuts_for(data):
        chunks = [data[:cut], data[cut:]]
        items, met, end = framed(kind, chunks, runs=True)
        assert (items, end) == framed(kind, chunks, runs=False)[::2], f"cut at byte {cut}"
        runs += met
    # (blocks with an id line of their own, as a resumable stream's, are read event by event)
    assert runs or b"\r" in data or b"\nid: " in data or len(data) < 2048, \
        "an LF stream of this size is read as runs"


@given(st.data())
def test_runs_in_any_chunking_are_the_events_without_runs(draw):
    kind, data = draw.draw(st.sampled_from([p.values for p in INPUTS]))
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=8)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
    limit = draw.draw(st.sampled_from([64 * 2**20, 4096, 700]))
    assert framed(kind, chunks, True, limit)[::2] == framed(kind, chunks, False, limit)[::2]


@pytest.mark.parametrize("kind, stream", [
    ("sse", b"event: a\ndata: {}\n\n" + b"event: b\ndata: {\"x\":1}\n\n" * 100),
    ("sse", b"data: {}\n\n" * 150),
    ("sse", b"event: a\r\ndata: {}\r\n\r\n" * 100),  # (CRLF: runs of blocks, not lazy)
    ("ndjson", b"{}\n" + b'{"x":1}\n' * 300),
])
def test_a_run_is_a_sequence_of_its_events(kind, stream):
    framer = make_framer(kind, raw=True, runs=True)
    first = framer.feed(stream[:3])  # (an NDJSON stream's first line is read alone)
    run = framer.feed(stream[3:])
    events = make_framer(kind, raw=True).feed(stream)[len(first):]
    if b"\r" in stream:
        assert type(run) is list and run == events
        return
    assert type(run) is (SseRun if kind == "sse" else LineRun) and len(run) == len(events)
    assert list(run) == run.events() == events and run[:] == events and run[5:9] == events[5:9]
    assert [run[i] for i in (0, 1, -1, -2, len(events) - 1)] == [events[i] for i in (0, 1, -1, -2, -1)]
    with pytest.raises(IndexError):
        run[len(events)]
    assert run.data == b"\n".join(e.data for e in events)
