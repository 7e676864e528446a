"""Property tests over what the stages read: any input ends well or fails with our errors.

The invariant (h11's fuzz test): fed arbitrary bytes, arbitrary JSON lines, or a recording
cut, flipped, with events dropped or repeated, in any chunking, ``AutoFramer`` and
``RecordReader`` either give their output (records ending with exactly one ``End``) or
raise an ``SseToolError``; never another exception. A few CLI runs check the same at the
edge: a documented exit code and no traceback.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sse_tool.cli import app
from sse_tool.errors import SseToolError
from sse_tool.eventstream import EventMessage
from sse_tool.framing import AutoFramer, make_framer
from sse_tool.model import End
from sse_tool.pipeline import RecordReader
from sse_tool.sse import FrameEnd, SseComment, SseEvent

from ..support import FIXTURES, stream_files

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RECORDINGS = [p.read_bytes() for p in stream_files() if p.is_relative_to(FIXTURES) and p.stat().st_size < 20000]


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in zip(points, points[1:])]


def frame_all(chunks: list[bytes]):
    framer = AutoFramer(comments=True, max_event_size=1 << 20)
    items = []
    for chunk in chunks:
        items += framer.feed(chunk)
    return items, framer.close()


def read_all(chunks: list[bytes], provider: str = "auto") -> tuple[list, Exception | None]:
    """Records until the end or the first error, as a stage's loop sees them."""
    reader = RecordReader(provider, max_event_size=1 << 20)
    out: list = []
    try:
        for chunk in chunks:
            out += reader.feed(chunk)
        out += reader.close()
    except Exception as exc:  # checked by the caller: it must be one of ours
        return out, exc
    return out, None


def check_framer(chunks: list[bytes]) -> None:
    try:
        items, end = frame_all(chunks)
    except SseToolError:
        return
    assert all(isinstance(i, (SseEvent, EventMessage, SseComment)) for i in items)
    assert isinstance(end, FrameEnd)


def check_reader(chunks: list[bytes]) -> None:
    records, error = read_all(chunks)
    ends = [i for i, r in enumerate(records) if isinstance(r, End)]
    if error is not None:
        assert isinstance(error, SseToolError), repr(error)
        assert len(ends) <= 1 and ends in ([], [len(records) - 1])
        return
    assert ends == [len(records) - 1], records[-3:]  # not a byte at all included


cuts = st.lists(st.integers(min_value=0, max_value=10**6), max_size=8)


@FUZZ
@given(st.binary(max_size=3000), cuts)
def test_arbitrary_bytes_frame_or_raise_our_error(data, points):
    check_framer(chunked(data, points))


@FUZZ
@given(st.binary(max_size=3000), cuts)
def test_arbitrary_bytes_give_records_ending_in_one_end_or_our_error(data, points):
    check_reader(chunked(data, points))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
record_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["delta", "end", "tool_call", "usage", "meta", "reset", "other"])},
    optional={"channel": st.sampled_from(["answer", "reasoning", "x"]) | json_values,
              "text": st.text(max_size=20) | json_values,
              "status": st.sampled_from(["complete", "truncated", "error", "odd"]) | json_values,
              "stop_reason": st.none() | st.text(max_size=8), "error": json_values,
              "usage": json_values, "index": json_values, "key": json_values, "value": json_values},
)
event_like = st.fixed_dictionaries(
    {"event": st.text(max_size=20) | json_values, "data": st.text(max_size=60) | json_values},
    optional={"id": json_values, "retry": json_values, "offset": json_values},
)
json_line = st.one_of(record_like, event_like, json_values).map(lambda v: json.dumps(v).encode())


@FUZZ
@given(st.lists(json_line, min_size=1, max_size=12), st.booleans(), cuts)
def test_arbitrary_json_lines_give_records_ending_in_one_end_or_our_error(lines, final_newline, points):
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    check_reader(chunked(data, points))


def events_of(data: bytes) -> list[bytes]:
    sep = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
    return [part + sep for part in data.split(sep) if part]


@st.composite
def mutated_recordings(draw) -> bytes:
    data = draw(st.sampled_from(RECORDINGS))
    events = events_of(data)
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(events) - 1))
        if draw(st.booleans()):
            events.insert(i, events[i])  # duplicated
        elif len(events) > 1:
            del events[i]  # dropped
    out = bytearray(b"".join(events))
    for _ in range(draw(st.integers(0, 4))):  # bytes flipped
        if out:
            out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
    return bytes(out[:draw(st.integers(0, len(out)))])  # cut


@FUZZ
@given(mutated_recordings(), cuts)
def test_mutated_recordings_frame_or_raise_our_error(data, points):
    check_framer(chunked(data, points))


@FUZZ
@given(mutated_recordings(), cuts)
def test_mutated_recordings_give_records_ending_in_one_end_or_our_error(data, points):
    check_reader(chunked(data, points))


# -- the same at the edge: a documented code, no traceback ----------------------------------

runner = CliRunner()
CODES = {"frame": {0, 3, 5}, "normalize": {0, 3, 4, 5}, "render": {0, 3, 4, 5}}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(CODES)), st.one_of(mutated_recordings(), st.binary(max_size=500)))
def test_the_commands_give_a_documented_code_and_at_most_one_line_for_any_input(tmp_path, stage, data):
    path = tmp_path / "input"
    path.write_bytes(data)
    result = runner.invoke(app, [stage, str(path)])
    assert result.exit_code in CODES[stage], (result.exit_code, result.output)
    assert isinstance(result.exception, (SystemExit, type(None)))
    assert "Traceback" not in result.stderr
    # at most one diagnostic; render also shows a tool call or a refusal on stderr, in the
    # plain view's own lines, as it does for any stream that holds one
    said = [line for line in result.stderr.splitlines()
            if not (stage == "render" and line.startswith(("tool call: ", "incomplete tool call: ", "the model refused: ")))]
    assert len(said) <= 1 and all(line.startswith(f"sse-tool {stage}: ") for line in said), result.stderr


# -- WHATWG in auto mode: input that begins like SSE is read exactly as --from sse reads it --

sse_starts = st.sampled_from([b"data: ", b"data:", b"event: x\ndata: ", b": ping\n", b"id: 1\n", b"retry: 5\n",
                              b"\xef\xbb\xbfdata: ", b"\n\ndata: ", b"data\n"])


def framed(framer, chunks: list[bytes]):
    items = []
    try:
        for chunk in chunks:
            items += framer.feed(chunk)
        return items, framer.close()
    except SseToolError as exc:
        return items, type(exc)


@FUZZ
@given(sse_starts, st.binary(max_size=2000), cuts)
def test_input_that_begins_like_sse_is_read_as_the_spec_says_in_auto_mode(start, rest, points):
    # invalid UTF-8 becomes U+FFFD and NUL is kept, whatever the bytes after the start
    chunks = chunked(start + rest, points)
    auto = framed(AutoFramer(max_event_size=4096), chunks)
    told = framed(make_framer("sse", max_event_size=4096), chunks)
    assert auto == told


# -- the failure marker: whatever the framing, wherever the cut, whatever the chunking --------

# (an AWS event stream too: the marker cuts a message, found by its failed CRC, or a prelude)
STREAMS_OF_EVERY_FRAMING = [p.read_bytes() for p in stream_files() if p.stat().st_size < 20000]


def with_exit_marker(data: bytes, code: int) -> bytes:
    """``data`` then the failure marker, as a failing stage writes it after its output."""
    from sse_tool.marker import exit_marker

    sep = b"" if not data or data[-1:] in b"\r\n" else b"\n"
    return data + sep + exit_marker(code, "fetch", "idle timeout: nothing received for 1s").line()


@FUZZ
@given(st.sampled_from(STREAMS_OF_EVERY_FRAMING), st.integers(0, 10**6), st.sampled_from([1, 2, 6, 7, 8, 130]),
       cuts)
def test_a_failure_marker_after_any_cut_decides_the_end_in_every_framing(data, at, code, points):
    data = with_exit_marker(data[:at % (len(data) + 1)], code)
    records, error = read_all(chunked(data, points))
    assert error is None, (error, data[-300:])
    end = records[-1]
    assert isinstance(end, End) and end.exit == code and "idle timeout" in end.detail

    # the same through frame's records
    items, frame_end = frame_all(chunked(data, points))
    from sse_tool.wire import dumps, event_record

    lines = b"".join(dumps(event_record(i)) for i in [*items, *frame_end.items])  # as frame writes them
    assert frame_end.truncated is None
    again, error = read_all(chunked(lines, points))
    assert error is None and again[-1] == end
