"""The checker's memory bounds change nothing it says.

Three mechanisms keep ``check`` from holding memory per line or per finding: the complete
blocks after the last event are judged once ``SETTLE_GAP`` bytes of them wait (not when
the next event comes), regions are split into lines ``_WINDOW`` bytes at a time, and past
``per_rule`` findings are counted, not kept. With the first two forced to their smallest
(settle at every chunk, windows of a few bytes) every fixture, cut in two where a cut can
matter (a sample of them) and in several chunk sizes, and streams built from the pieces that matter (pings, blocks without data,
blank lines after an id, CR and CRLF, the reset marker, a BOM), give exactly the findings
of the default; with a cap, the findings kept are the first of each rule and the others
are counted.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sse_tool.check import Checker, core
from sse_tool.check import sse as check_sse

from ..normalize.test_every_cut_normalize import cuts_for
from ..support import stream_files
from .test_check_fast import findings_of
from .test_check_fuzz import PIECES

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()
         if p.suffix == ".sse"]
SIZES = (1, 7, 64, 4096)
#: (SETTLE_GAP, _WINDOW): settle at every chunk, split a few bytes at a time, or both
SMALLEST = [(0, 64 * 1024), (64 * 1024, 3), (0, 1)]

GAP_PIECES = PIECES + [b"\n\n: ping\n\n", b": ping\r\n\r\n", b"id: 7\n\n", b"retry: 5\n\n", b"foo: x\n",
                       b"a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 7\nh: 8\ni: 9\n\n", b"data: {}\n\n",
                       b"event: e\ndata: 1\r\n\r\n"]
streams = st.lists(st.sampled_from(GAP_PIECES), max_size=40).map(b"".join)


def outcome(chunks, provider: str = "auto", per_rule: int | None = None):
    checker = Checker(provider, per_rule=per_rule)
    return findings_of(checker, chunks), checker.dropped


def at_smallest(chunks, provider: str, settle: int, window: int):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(core, "SETTLE_GAP", settle)
        m.setattr(check_sse, "_WINDOW", window)
        return in_order(outcome(chunks, provider))


def in_order(outcome):
    """Findings come out sorted within each batch; settled blocks come out earlier, so a
    finding said of the whole stream at its end (offset 0) can come after them."""
    said, dropped = outcome
    found, *error = said if isinstance(said, tuple) else (said,)
    return sorted(found, key=lambda f: (f[1], f[0].id, f[3])), error, dropped


def chunkings(data: bytes):
    yield "whole", [data]
    for size in SIZES:
        if size == 1 and len(data) > 20_000:
            continue
        yield f"chunks of {size}", [data[i:i + size] for i in range(0, len(data), size)]
    for cut in cuts_for(data)[::6]:
        yield f"cut at byte {cut}", [data[:cut], data[cut:]]


def with_gaps(data: bytes) -> bytes:
    """The stream with pings, a block without data and an extra blank line between events."""
    return data.replace(b"\n\n", b"\n\n: ping\n\nid: 4\n\n\n", 40)


@pytest.mark.parametrize("settle, window", SMALLEST)
@pytest.mark.parametrize("path", FILES)
def test_a_recorded_stream_gives_the_same_findings_with_the_bounds_at_their_smallest(path, settle, window):
    for data in (path.read_bytes(), with_gaps(path.read_bytes())):
        for how, chunks in chunkings(data):
            assert at_smallest(chunks, "auto", settle, window) == in_order(outcome(chunks)), how


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.lists(st.integers(min_value=0, max_value=400), max_size=6),
       st.sampled_from(["auto", "openai", "anthropic", "gemini"]), st.sampled_from(SMALLEST))
def test_any_stream_gives_the_same_findings_with_the_bounds_at_their_smallest(data, cuts, provider, smallest):
    cuts = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
    assert at_smallest(chunks, provider, *smallest) == in_order(outcome(chunks, provider))


def assert_capped_as_shown(chunks, provider: str = "auto") -> None:
    every, _ = outcome(chunks, provider)
    if isinstance(every, tuple):  # bad input
        return
    for cap in (1, 3):
        kept, dropped = outcome(chunks, provider, per_rule=cap)
        seen: Counter = Counter()
        first = []
        for f in every:
            seen[f[0].id] += 1
            if seen[f[0].id] <= cap:
                first.append(f)
        assert kept == first
        assert dropped == {rule: n - cap for rule, n in seen.items() if n > cap}


@pytest.mark.parametrize("path", FILES)
def test_a_cap_keeps_the_first_findings_of_each_rule_and_counts_the_rest(path):
    for data in (path.read_bytes(), with_gaps(path.read_bytes())):
        for how, chunks in list(chunkings(data))[:6]:
            assert_capped_as_shown(chunks)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.integers(min_value=1, max_value=50), st.sampled_from(["auto", "openai", "anthropic"]))
@example(data=b"[data:\xffdata: \xff", size=2, provider="auto")  # bytes after a JSON array's break
def test_any_stream_capped_keeps_the_first_findings_of_each_rule(data, size, provider):
    assert_capped_as_shown([data[i:i + size] for i in range(0, len(data), size)], provider)


@given(st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r", b"\r\n", b"", b"x" * 9]), max_size=30).map(b"".join),
       st.integers(min_value=0, max_value=5), st.integers(min_value=0, max_value=5),
       st.sampled_from([1, 2, 3, 5, 8]))
@settings(max_examples=500, deadline=None)
def test_lines_split_in_windows_are_the_lines_split_at_once(data, start, drop, window):
    start, end = min(start, len(data)), max(min(start, len(data)), len(data) - drop)
    at_once = list(check_sse._split(data, start, end))
    assert at_once == check_sse._split_window(data, start, check_sse._lines_end(data, start, end))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(check_sse, "_WINDOW", window)
        assert list(check_sse._split(data, start, end)) == at_once


def test_settling_happens_on_a_stream_of_pings():
    """So that the tests above compare something: pings alone are judged before the end."""
    checker = Checker("openai")
    found = []
    for _ in range(40):
        found += checker.feed(b": ping\n\n" * 1000)
        assert len(checker._buf) < 2 * core.SETTLE_GAP
    assert len(found) >= 40_000 - core.SETTLE_GAP // 8  # all but the last 64 KiB (8 bytes a ping)
    found += checker.close()
    assert [f.rule.id for f in found].count("sse.comment-only-block") == 40_000


def test_a_finding_about_the_whole_stream_is_on_line_1_after_its_bytes_were_dropped():
    """Unrecognised events are held up to 64, then checked and their bytes dropped: "no
    provider dialect recognised" (offset 0) was numbered with the line the checker had
    reached (140 here)."""
    checker = Checker()
    found = checker.feed(b"data: {}\n\n" * 70) + checker.close()
    assert [(f.rule.id, f.offset, f.line) for f in found] == [("stream.unknown-provider", 0, 1)]
