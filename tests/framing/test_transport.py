"""Transports: a growing-snapshot source gives exactly the events of the chunk stream."""

from __future__ import annotations

import codecs
import random

import pytest

from sse_tool.errors import BadInput
from sse_tool.framing import AutoFramer
from sse_tool.sse import FrameEnd
from sse_tool.transport import SnapshotReader, feed_all, feed_snapshots

from ..support import stream_files


def test_snapshot_reader_passes_on_only_the_new_part():
    reader = SnapshotReader()
    assert [reader.feed(s) for s in [b"", b"ab", b"ab", b"abcd"]] == [b"", b"ab", b"", b"cd"]


def test_text_snapshots_become_utf8_chunks():
    reader = SnapshotReader()
    assert [reader.feed(s) for s in ["ñ", "ñ🚀", "ñ🚀!"]] == ["ñ".encode(), "🚀".encode(), b"!"]


def test_a_shrinking_snapshot_is_bad_input():
    reader = SnapshotReader()
    reader.feed(b"abc")
    with pytest.raises(BadInput):
        reader.feed(b"ab")


def byte_snapshots(data: bytes, rng: random.Random) -> list[bytes]:
    ends = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, 40))) + [len(data)]
    return [data[:e] for e in ends]


def text_snapshots(data: bytes, rng: random.Random) -> list[str]:
    """What a text client shows as the body grows: a split character is held back."""
    decoder, text, out = codecs.getincrementaldecoder("utf-8")("replace"), "", []
    start = 0
    while start < len(data):
        end = start + rng.randint(1, 300)
        text += decoder.decode(data[start:end])
        out.append(text)
        start = end
    return out


@pytest.mark.parametrize("path", stream_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_snapshots_give_exactly_the_events_of_the_chunk_stream(path):
    data = path.read_bytes()
    rng = random.Random(path.name)
    chunks = list(feed_all(AutoFramer(comments=True), [data[i : i + 512] for i in range(0, len(data), 512)]))
    assert isinstance(chunks[-1], FrameEnd)
    assert list(feed_snapshots(AutoFramer(comments=True), byte_snapshots(data, rng))) == chunks
    if path.suffix == ".eventstream":  # binary: no client shows it as text
        return
    from_text = list(feed_snapshots(AutoFramer(comments=True), text_snapshots(data, rng)))
    assert from_text[:-1] == chunks[:-1]
    try:
        data.decode()
    except UnicodeDecodeError:  # a cut character never shows in text: only the verdict agrees
        assert from_text[-1].truncated and chunks[-1].truncated
    else:
        assert from_text[-1] == chunks[-1]
