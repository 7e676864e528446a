"""Chunking never changes what ``inspect`` finds, and its verdict is ``normalize``'s.

Every fixture and sample, cut in two at every position of ``support.cut_positions`` (a
budgeted sample for the large ones, as for normalize), gives the report of the uncut
stream in every figure that is not about chunks or arrival times; and the stream cut
short at each of those positions gets the verdict ``normalize`` gives the same bytes (or
both reject them as bad input).
"""

from __future__ import annotations

import pytest

from sse_tool.errors import BadInput
from sse_tool.inspect import Inspector

from ..support import read_records, stream_files
from ..normalize.test_every_cut_normalize import cuts_for

#: every cut of every stream: exhaustive, run by CI (-m slow) rather than by default
pytestmark = pytest.mark.slow

CAUSES = {
    "complete": {"end_turn", "length", "content_filter", "refusal", "tool_use", "stop_sequence",
                 "pause", "other", "unknown"},
    "truncated": {"no_terminal_event", "cut_in_event", "cut_after_terminal", "empty"},
    "error": {"provider_error"},
}
FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]


def inspect(*chunks: bytes, fast: bool = True):
    ins = Inspector("cut", origin="recording", fast=fast)
    for i, chunk in enumerate(chunks):
        ins.feed(chunk, 1.0 + i)
    return ins.close(5.0, None)


def structure(report) -> tuple:
    """The figures that depend on the bytes alone, not on chunks or times."""
    return (report.verdict, report.cause, report.detail, report.stop_reason, report.stopped_early,
            report.error, report.provider, report.model, report.usage_reported, report.tokens,
            report.resets, report.source, report.delivery.events,
            report.sizes._replace(chunks=0))


@pytest.mark.parametrize("path", FILES)
def test_a_stream_cut_anywhere_in_two_gives_the_structure_of_the_uncut_stream(path):
    data = path.read_bytes()
    whole = structure(inspect(data))
    for cut in cuts_for(data):
        assert structure(inspect(data[:cut], data[cut:])) == whole, f"cut at byte {cut}"


@pytest.mark.parametrize("path", FILES)
def test_a_stream_cut_anywhere_in_two_is_read_in_bulk_as_the_reference_reads_it(path):
    # every figure, chunk and time ones included: runs placed by offset against each chunk
    # read alone through the reader, every event through Normalizer.feed
    data = path.read_bytes()
    for cut in cuts_for(data):
        try:
            expected = inspect(data[:cut], data[cut:], fast=False)
        except BadInput:
            with pytest.raises(BadInput):
                inspect(data[:cut], data[cut:])
            continue
        assert inspect(data[:cut], data[cut:]) == expected, f"cut at byte {cut}"


@pytest.mark.parametrize("path", FILES)
def test_a_stream_cut_short_anywhere_gets_the_verdict_normalize_gives_it(path):
    data = path.read_bytes()
    for cut in cuts_for(data):
        if not cut:
            continue
        try:
            status = read_records([data[:cut]])[-1].status.value
        except BadInput:
            with pytest.raises(BadInput):
                inspect(data[:cut])
            continue
        report = inspect(data[:cut])
        assert report.verdict == status, f"cut at byte {cut}"
        assert report.cause in CAUSES[report.verdict], f"cut at byte {cut}"
