"""Every recorded stream, framed whole, one byte at a time and cut in two: the same result.

The framer is ``AutoFramer`` (comments reported), so the ``.json`` Gemini stream goes
through the JSON-array framer and the ``.ndjson`` ones through the NDJSON framer, exactly
as ``sse-tool frame`` reads them.

How cut positions are chosen: ``support.cut_positions()``. A stream of up to
``ALL_CUTS_UP_TO`` bytes is cut at every position, and each cut is parsed as the whole
stream in two chunks. A larger stream is cut wherever a cut can matter: in and around each
line terminator, inside each multi-byte character, inside the first bytes of each line
(field names) and the BOM, at both ends, plus a random sample of the rest. A cut changes
only the event it falls in, and parsing the whole large stream once per cut would be
quadratic, so for a large stream each of those cuts is checked on a window of whole
events around it (from the start of the event before the cut to the end of the event
after it, itself a valid stream), against that window parsed whole; and
``FULL_CUTS_PER_LARGE_STREAM`` of the cuts, spread evenly, are checked on the whole stream.
"""

from __future__ import annotations

import bisect

import pytest

from sse_tool.framing import AutoFramer
from sse_tool.sse import SseParser

from ..support import ALL_CUTS_UP_TO, stream_files, cut_positions

FULL_CUTS_PER_LARGE_STREAM = 40
STREAMS = stream_files()


def frame(*chunks: bytes):
    framer = AutoFramer(comments=True)
    items = []
    for chunk in chunks:
        items += framer.feed(chunk)
    return items, framer.close()


@pytest.fixture(params=STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def stream(request) -> bytes:
    return request.param.read_bytes()


def test_whole_and_byte_by_byte_give_the_same_events(stream):
    whole = frame(stream)
    assert whole[0], "a recorded stream has events"
    assert frame(*[stream[i : i + 1] for i in range(len(stream))]) == whole


def test_every_cut_gives_the_same_events(stream):
    whole = frame(stream)
    cuts = cut_positions(stream)
    if len(stream) <= ALL_CUTS_UP_TO:
        for i in cuts:
            assert frame(stream[:i], stream[i:]) == whole, f"cut at {i}"
        return
    for i in cuts[:: max(1, len(cuts) // FULL_CUTS_PER_LARGE_STREAM)]:
        assert frame(stream[:i], stream[i:]) == whole, f"cut at {i}"
    # Windows of whole events: the starts of the events, as the whole parse found them.
    starts = [0] + [item.offset for item in whole[0] if hasattr(item, "data")][1:] + [len(stream)]
    for i in cuts:
        k = bisect.bisect_right(starts, i) - 1
        lo, hi = starts[max(0, k - 1)], starts[min(len(starts) - 1, k + 2)]
        window, at = stream[lo:hi], i - lo
        assert frame(window[:at], window[at:]) == frame(window), f"cut at {i} (window {lo}..{hi})"


def test_large_streams_get_windows_and_small_ones_every_cut():
    sizes = [len(p.read_bytes()) for p in STREAMS]
    assert any(s > ALL_CUTS_UP_TO for s in sizes) and any(s <= ALL_CUTS_UP_TO for s in sizes)


@pytest.mark.parametrize("size", [1, 16, 4096])
def test_fast_paths_give_what_the_line_by_line_rules_give_on_every_recorded_sse_stream(size):
    # With its LFs made CRs, a stream has the same offsets and is read by the rules, line
    # by line; as recorded, it takes the parser's fast paths (events not asked for comments).
    for path in STREAMS:
        data = path.read_bytes()
        if path.suffix != ".sse" or b"\r" in data:
            continue
        reference = parse_sse(data.replace(b"\n", b"\r"))
        assert parse_sse(data) == reference, path.name
        assert parse_sse(*[data[i : i + size] for i in range(0, len(data), size)]) == reference, path.name


def parse_sse(*chunks: bytes):
    parser = SseParser()
    items = []
    for chunk in chunks:
        items += parser.feed(chunk)
    return items, parser.close()
