"""``sse-tool check`` on every recorded stream: no error on a real stream (a cut one gives
only the findings that say it was cut), the same findings whatever the chunking, and a
stream cut at any position gives at most the truncation findings beyond those of the whole
stream."""

from __future__ import annotations

import json

import pytest

from sse_tool.check import Checker, Severity, check
from sse_tool.marker import reset_after

from ..support import FIXTURES, SAMPLES, stream_files
from ..normalize.test_every_cut_normalize import cuts_for

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]

#: each recorded stream's expected status (complete, truncated or error)
STATUS = {e["file"]: e["status"] for e in json.loads((FIXTURES / "expected.json").read_text())}
STATUS.update({e["file"]: e["status"] for name in ("expected.json", "expected-more.json")
               for e in json.loads((SAMPLES / name).read_text())})


def status_of(path) -> str:
    key = path.relative_to(FIXTURES).as_posix() if FIXTURES in path.parents else path.name
    return STATUS[key]


def keys(findings) -> list[tuple]:
    return [(*f.key(), f.line) for f in findings]


def feed(chunks) -> list:
    checker = Checker()
    out = []
    for chunk in chunks:
        out += checker.feed(chunk)
    return out + checker.close()


@pytest.mark.parametrize("path", FILES)
def test_a_recorded_stream_has_no_error_but_the_truncation_of_a_cut_one(path):
    findings = check(path.read_bytes())
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if status_of(path) == "truncated":
        assert errors and all(f.rule.truncation for f in errors), errors
    else:
        assert errors == []
    assert all(not f.rule.truncation for f in findings) or status_of(path) == "truncated"


@pytest.mark.slow  # every stream in many chunkings; the cut-anywhere test runs by default
@pytest.mark.parametrize("path", FILES)
def test_any_chunking_gives_the_findings_of_the_whole_stream(path):
    data = path.read_bytes()
    whole = keys(check(data))
    for cut in cuts_for(data):
        assert keys(feed([data[:cut], data[cut:]])) == whole, f"cut at byte {cut}"
    if len(data) <= 8192:
        assert keys(feed([data[i : i + 1] for i in range(len(data))])) == whole


@pytest.mark.parametrize("path", FILES)
def test_a_stream_cut_anywhere_gives_at_most_its_truncation_findings_beyond_the_whole(path):
    data = path.read_bytes()
    whole = {f.key() for f in check(data)}
    for cut in cuts_for(data):
        extra = [f for f in check(data[:cut]) if f.key() not in whole]
        assert all(f.rule.truncation for f in extra), (cut, extra)


@pytest.mark.parametrize("path", [p for p in FILES if p.values[0].suffix == ".sse"
                                  and status_of(p.values[0]) == "complete" and b"\r" not in p.values[0].read_bytes()])
def test_a_retry_after_a_cut_in_the_first_event_gives_the_findings_of_the_stream(path):
    """``fetch --retry-partial`` writes the cut attempt, the reset marker, then the retried
    stream: what came before the marker in its block is the cut attempt's, not a finding.
    (A cut inside a character leaves invalid UTF-8 on the wire, which is said.)"""
    data = path.read_bytes()
    want = [(f.rule.id, f.message) for f in check(data)]
    for cut in range(1, data.index(b"\n\n") + 1):
        if not 0x80 <= data[cut] < 0xC0:
            retried = data[:cut] + reset_after(data[cut - 1:cut]) + data
            assert [(f.rule.id, f.message) for f in check(retried)] == want, f"cut at byte {cut}"
