"""The fault plan, sans I/O: parsing, the writes and waits it makes of a schedule, error bodies."""

from __future__ import annotations

import itertools
import json

import pytest

from sse_tool.replay import Step, event_ends, parse_rate, rate_steps
from sse_tool.serve.faults import (KEEPALIVE, End, FaultError, FaultPlan, Wait, Write, error_answer,
                                   parse_fault_option, parse_faults, shape)
from sse_tool.serve.streams import Stream
from sse_tool.recording import parse_recording

from ..support import FIXTURES
from ..fetch.test_replay import make_recording

DATA = (FIXTURES / "anthropic" / "text-short.sse").read_bytes()
ENDS = event_ends(DATA)
STEPS = rate_steps(DATA, parse_rate("20ev"))


def plan(**query) -> FaultPlan:
    return parse_faults(((k, str(v)) for k, v in query.items()), strict=False)


def run(steps, p: FaultPlan, ending="finish", comments=True, limit=10_000):
    return list(itertools.islice(shape(steps, p, ending, comments=comments), limit))


def body(actions) -> bytes:
    return b"".join(a.data for a in actions if isinstance(a, Write))


def test_query_names_take_dashes_or_underscores_and_unknown_ones_are_ignored():
    p = parse_faults([("cut-after-bytes", "5"), ("chunk_delay", "50ms"), ("alt", "sse")], strict=False)
    assert (p.cut_after_bytes, p.chunk_delay) == (5, 0.05)


def test_server_options_reject_unknown_names_and_a_query_overrides_them():
    with pytest.raises(FaultError, match="unknown fault 'cut_after'"):
        parse_faults([parse_fault_option("cut_after=3")])
    base = parse_faults([parse_fault_option("cut_after_bytes=100"), parse_fault_option("stall")])
    assert base.stall and base.cut_after_bytes == 100
    assert parse_faults([("cut_after_bytes", "7"), ("stall", "0")], base, strict=False) == FaultPlan(cut_after_bytes=7)


@pytest.mark.parametrize("name, value", [
    ("chunk", "0"), ("cut_after_bytes", "-1"), ("cut_after_events", "x"), ("status", "99"),
    ("first_byte_delay", "soon"), ("keepalive", "0"), ("stall", "maybe"), ("speed", "-1"),
    ("rate", "fast"), ("provider", "acme"), ("times", "0"),
])
def test_a_bad_value_is_an_error_naming_it(name, value):
    with pytest.raises(FaultError, match=name):
        parse_faults([(name, value)], strict=False)


def test_without_faults_each_step_is_one_write_and_the_body_ends():
    actions = run(STEPS, FaultPlan())
    assert [a for a in actions if not isinstance(a, Wait)] == [Write(s.data) for s in STEPS] + [End(cut=False)]


def test_cut_after_bytes_sends_exactly_that_many_then_cuts():
    actions = run(STEPS, plan(cut_after_bytes=700))
    assert body(actions) == DATA[:700] and actions[-1] == End(cut=True)


def test_cut_after_events_stops_after_that_events_blank_line():
    for n in (1, 3):
        actions = run(STEPS, plan(cut_after_events=n, chunk=100))
        assert body(actions) == DATA[:ENDS[n - 1]] and actions[-1] == End(cut=True)


def test_a_cut_past_the_end_leaves_the_stream_whole():
    assert run(STEPS, plan(cut_after_events=999))[-1] == End(cut=False)
    assert run(STEPS, plan(cut_after_bytes=0)) == [End(cut=True)]


def test_chunk_rechunks_across_steps_into_equal_writes():
    steps = [Step(0.1, b"abc"), Step(0.2, b"defgh"), Step(0.3, b"ij")]
    assert run(steps, plan(chunk=4)) == [
        Wait(pytest.approx(0.3)), Write(b"abcd"), Write(b"efgh"), Wait(0.3), Write(b"ij"),
        End(cut=False)]
    ones = run(STEPS, plan(chunk=1))
    assert body(ones) == DATA and {len(a.data) for a in ones if isinstance(a, Write)} == {1}


def test_first_byte_delay_and_chunk_delay_add_waits():
    steps = [Step(0, b"a"), Step(0, b"b"), Step(0.5, b"c")]
    assert run(steps, plan(first_byte_delay="2s", chunk_delay="50ms")) == [
        Wait(2.0), Write(b"a"), Wait(0.05), Write(b"b"), Wait(0.55), Write(b"c"), End(cut=False)]


def test_a_stall_alone_holds_the_connection_after_the_headers():
    assert run(STEPS, plan(stall=1)) == [Wait(None), End(cut=False)]


def test_a_stall_after_events_sends_them_then_holds():
    actions = run(STEPS, plan(stall=1, cut_after_events=2))
    assert body(actions) == DATA[:ENDS[1]] and actions[-2:] == [Wait(None), End(cut=False)]


def test_keepalives_fill_a_stall_for_ever():
    actions = run(STEPS, plan(stall=1, cut_after_events=1, keepalive="1s"), limit=50)
    assert actions[0] == Write(DATA[:ENDS[0]])
    tail = actions[1:]
    assert tail[:4] == [Wait(1.0), Write(KEEPALIVE), Wait(1.0), Write(KEEPALIVE)]
    assert len(actions) == 50


def test_keepalives_fill_long_gaps_only_at_line_starts_and_only_in_sse():
    steps = [Step(0, b"data: a\n\n"), Step(2.5, b"data: b"), Step(3, b"\n\n")]
    assert run(steps, plan(keepalive="1s")) == [
        Write(b"data: a\n\n"), Wait(1.0), Write(KEEPALIVE), Wait(1.0), Write(KEEPALIVE), Wait(0.5),
        Write(b"data: b"), Wait(3), Write(b"\n\n"), End(cut=False)]
    assert KEEPALIVE not in body(run(steps, plan(keepalive="1s"), comments=False))


def test_a_recordings_ending_applies_when_no_fault_stops_it_first():
    assert run(STEPS, FaultPlan(), ending="cut")[-1] == End(cut=True)
    assert run(STEPS, FaultPlan(), ending="stall")[-2:] == [Wait(None), End(cut=False)]


def test_times_keeps_speed_and_rate_but_drops_the_faults():
    p = plan(status=503, times=1, speed=0, rate="5ev")
    assert p.clean() == FaultPlan(speed=0, rate="5ev")
    assert p.describe() == "status=503&times=1"


@pytest.mark.parametrize("provider, expected", [
    ("openai", {"error": {"message": "M", "type": "rate_limit_error", "param": None, "code": None}}),
    ("anthropic", {"type": "error", "error": {"type": "rate_limit_error", "message": "M"}}),
    ("gemini", {"error": {"code": 429, "message": "M", "status": "RESOURCE_EXHAUSTED"}}),
])
def test_error_bodies_take_the_providers_shape(provider, expected):
    status, headers, data = error_answer(plan(status=429, message="M", retry_after=3), provider)
    assert status == 429 and json.loads(data) == expected
    assert ("Retry-After", "3") in headers and ("Content-Type", "application/json") in headers


def test_an_error_body_given_raw_is_sent_as_is():
    assert error_answer(plan(status=500, body="oops"))[1:] == ([("Content-Type", "text/plain; charset=utf-8")], b"oops")
    assert error_answer(plan(status=500, body='{"x":1}'))[2] == b'{"x":1}'


def test_a_recordings_head_drops_what_a_replay_must_not_resend():
    rec = parse_recording(make_recording([(0, b"data: a\n\n")], headers=[
        ("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip"), ("Content-Length", "9"),
        ("Transfer-Encoding", "chunked"), ("Set-Cookie", "a=b"), ("X-Request-Id", "r1")]).split("\n"))
    status, headers = Stream("/r", "r.rec", recording=rec).head()
    assert status == 200
    assert headers == [("Content-Type", "text/event-stream"), ("X-Request-Id", "r1"),
                       ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
