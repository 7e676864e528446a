"""The retry marker, ``: sse-tool reset``, from the wire to the records.

``fetch --retry-partial`` writes it (after an LF when the cut left a line open) before a
new attempt's bytes; every later stage must drop what the cut attempt said."""

from __future__ import annotations

import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.model import Delta, End, Reset, Status
from sse_tool.pipeline import RecordReader
from sse_tool.sse import SseComment, SseEvent, SseParser

from ..support import FIXTURES, SSE_TOOL, clean_env, cut_positions

FULL = (FIXTURES / "anthropic/thinking-signature.sse").read_bytes()
# The first attempt cut inside a data line, as a network cut leaves it.
CUT = FULL.index(b"text_delta") + 20
RETRIED = FULL[:CUT] + b"\n: sse-tool reset\n\n" + FULL


def parse(data: bytes, **options) -> list:
    parser = SseParser(**options)
    return parser.feed(data) + [parser.close()]


def records(chunks) -> list:
    reader = RecordReader()
    out = []
    for chunk in chunks:
        out += reader.feed(chunk)
    return out + reader.close()


def test_the_marker_drops_the_event_being_built_and_is_reported_without_asking_for_comments():
    items = parse(b"event: a\ndata: {\"half\n: sse-tool reset\n\ndata: new\n\n")
    assert items[:2] == [SseComment("sse-tool reset", 22), SseEvent("message", "new", offset=40, end=50)]
    assert items[2].truncated is None


def test_other_comments_stay_silent_unless_asked_for():
    assert parse(b": keep-alive\ndata: x\n\n")[:-1] == [SseEvent("message", "x", offset=13, end=21)]


def test_the_marker_between_events_drops_nothing():
    events = [i for i in parse(b"data: a\n\n:sse-tool reset\n\ndata: b\n\n") if isinstance(i, SseEvent)]
    assert [e.data for e in events] == ["a", "b"]


def test_a_retried_stream_normalizes_to_a_reset_then_exactly_the_new_attempt():
    out = records([RETRIED])
    reset = out.index(Reset())
    assert records([FULL]) == out[reset + 1:]
    assert all(not isinstance(r, End) for r in out[:reset])


def test_the_retried_stream_gives_the_same_records_cut_anywhere():
    whole = records([RETRIED])
    for cut in cut_positions(RETRIED, sample=100):
        assert records([RETRIED[:cut], RETRIED[cut:]]) == whole, cut


def test_a_reset_voids_an_error_from_the_attempt_before_it():
    error = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    first_event = FULL[: FULL.index(b"\n\n") + 2]
    failed = records([first_event + error])
    assert failed[-1].status is Status.ERROR
    assert records([first_event + error + b": sse-tool reset\n\n" + FULL])[-1].status is Status.COMPLETE


def test_frame_passes_the_marker_on_and_normalize_after_it_agrees_with_normalize_alone():
    env = clean_env()
    framed = subprocess.run([*SSE_TOOL, "frame"], input=RETRIED, capture_output=True, env=env)
    assert b'{"comment":"sse-tool reset"}\n' in framed.stdout
    piped = subprocess.run([*SSE_TOOL, "normalize"], input=framed.stdout, capture_output=True, env=env)
    direct = subprocess.run([*SSE_TOOL, "normalize"], input=RETRIED, capture_output=True, env=env)
    assert piped.returncode == direct.returncode == 0
    assert piped.stdout == direct.stdout and b'{"type":"reset"}' in direct.stdout


def test_render_shows_only_the_new_attempt():
    env = clean_env()
    result = subprocess.run([*SSE_TOOL, "render", "--release", "complete"], input=RETRIED,
                            capture_output=True, env=env)
    answer = "".join(r.text for r in records([FULL]) if isinstance(r, Delta) and r.channel.value == "answer")
    assert result.returncode == 0 and result.stdout.decode().strip() == answer.strip()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12), st.text(max_size=20))
def test_any_text_after_exit_is_a_marker_or_an_ordinary_comment_never_a_crash(code, reason):
    # "²" and "٣" are digits to str.isdigit; only ASCII digits make an exit code.
    from sse_tool.marker import parse

    marker = parse(f"sse-tool exit {code} {reason}")
    assert marker is None or 0 < marker.code < 256
    assert parse("sse-tool exit \u00b2 fetch: x") is None and parse("sse-tool exit \u0663 fetch: x") is None
