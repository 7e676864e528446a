"""Chunking never changes what ``normalize`` says: every fixture and sample, cut in two at
every position of ``support.cut_positions``, framed and normalized in process, gives the
same records as the uncut stream; so does the growing-snapshot transport fed growing
prefixes (byte by byte for small streams), and, for the samples, text snapshots that grow
by whole characters."""

from __future__ import annotations

import random

import pytest

from sse_tool.transport import SnapshotReader

from ..support import SAMPLES, cut_positions, read_records, stream_files

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]

#: bytes normalized per stream at most (cuts x length): each cut re-reads the whole stream,
#: so beyond this a stream gets a seeded sample of its cut positions, the cuts that split a
#: line terminator or a character first
BUDGET = 3_000_000
EDGE = 32  # cuts this close to either end are always kept


def cuts_for(data: bytes) -> list[int]:
    cuts = cut_positions(data)
    limit = max(150, BUDGET // max(1, len(data)))
    if len(cuts) <= limit:
        return cuts
    n, rng = len(data), random.Random(0)

    def splits_something(c: int) -> bool:
        return data[c - 1] in b"\r\n" or data[c] in b"\r\n" or 0x80 <= data[c] < 0xC0

    ends = [c for c in cuts if c < EDGE or c > n - EDGE]
    first = [c for c in cuts if EDGE <= c <= n - EDGE and splits_something(c)]
    rest = [c for c in cuts if EDGE <= c <= n - EDGE and not splits_something(c)]
    room = max(0, limit - len(ends))
    if len(first) >= room:
        return sorted(ends + rng.sample(first, room))
    return sorted(ends + first + rng.sample(rest, min(len(rest), room - len(first))))


@pytest.mark.parametrize("path", FILES)
def test_a_stream_cut_anywhere_in_two_gives_the_records_of_the_uncut_stream(path):
    data = path.read_bytes()
    whole = read_records([data])
    for cut in cuts_for(data):
        assert read_records([data[:cut], data[cut:]]) == whole, f"cut at byte {cut}"


@pytest.mark.parametrize("path", FILES)
def test_growing_snapshots_give_the_records_of_the_uncut_stream(path):
    data = path.read_bytes()
    view = memoryview(data)
    snapshots = SnapshotReader()
    chunks = [bytes(snapshots.feed(view[:end])) for end in [*cut_positions(data), len(data)]]
    assert b"".join(chunks) == data
    assert read_records(chunks) == read_records([data])


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.sse")), ids=lambda p: p.name)
def test_text_snapshots_growing_by_one_character_give_the_records_of_the_uncut_stream(path):
    data = path.read_bytes()
    text = data.decode("utf-8", "surrogateescape")
    if "\udc80" <= max(text) <= "\udcff":  # a sample torn inside a character is not text
        text = data[: data.rfind(b"\n") + 1].decode()
        data = text.encode()
    snapshots = SnapshotReader()
    chunks = [snapshots.feed(text[:end]) for end in range(len(text) + 1)]
    assert read_records(chunks) == read_records([data])
