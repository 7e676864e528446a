"""A ``fetch --record`` recording read as it arrives: ``recording.ChunkReader`` gives the
chunks ``load_recording`` gives, whatever the cuts in the recording's bytes, and the
stages that read channel records (``RecordReader``: normalize, render) read a recording as
the stream its body holds."""

from __future__ import annotations

import io
import random
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from sse_tool import pipeline, recording
from sse_tool.errors import BadInput
from sse_tool.marker import NO_STREAM
from sse_tool.pipeline import RecordReader
from sse_tool.recording import ChunkReader, RecordingWriter, load_recording
from sse_tool.redact import Redactor

from ..support import SSE_TOOL, clean_env, read_records, stream_files
from .test_every_cut_normalize import cuts_for

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]


def make_recording(data: bytes, seed: str, status: int = 200, end: bool = True) -> bytes:
    """``data`` as a recording of one exchange, in chunks cut at random, a note among them."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, 30))) if len(data) > 1 else []
    bounds = [0, *cuts, len(data)]
    out = io.StringIO()
    writer = RecordingWriter(out, Redactor())
    writer.start("2026-01-01T00:00:00.000000Z")
    writer.request("POST", "https://api.example.com/v1/messages", [("content-type", "application/json")], b"{}")
    writer.response("HTTP/1.1", status, "OK", [("content-type", "text/event-stream")])
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        writer.chunk(0.25 + i / 100, data[a:b])
        if i == len(bounds) // 2:
            writer.note("a note between two chunks")
    if end:
        writer.end(0.25 + len(bounds) / 100, "complete")
    return out.getvalue().encode()


def chunks_read(pieces: list[bytes], max_line: int = 1 << 62):
    """(times, datas, the recording's head) of a recording fed to a ``ChunkReader``."""
    reader = ChunkReader(max_line)
    times: list = []
    datas: list = []
    for piece in [*pieces, None]:
        t, d = reader.feed(piece) if piece is not None else reader.close()
        times += t
        datas += d
    return times, datas, reader.recording


@pytest.mark.parametrize("path", FILES)
def test_a_recording_cut_anywhere_gives_the_chunks_load_recording_gives(path):
    rec_bytes = make_recording(path.read_bytes(), path.name)
    whole = load_recording(io.BytesIO(rec_bytes))
    for cut in cuts_for(rec_bytes):
        times, datas, head = chunks_read([rec_bytes[:cut], rec_bytes[cut:]])
        assert (times, datas) == (whole.times, whole.datas), f"cut at byte {cut}"
        assert (head.request, head.response, head.end, head.notes, head.start) == (
            whole.request, whole.response, whole.end, whole.notes, whole.start)


def test_a_recording_fed_a_byte_at_a_time_gives_its_chunks():
    rec_bytes = make_recording(b"event: a\ndata: {\"x\": \"caf\xc3\xa9 \\\\ \\n\"}\r\n\r\n" * 5, "one")
    whole = load_recording(io.BytesIO(rec_bytes))
    times, datas, _ = chunks_read([rec_bytes[i:i + 1] for i in range(len(rec_bytes))])
    assert (times, datas) == (whole.times, whole.datas)


def test_a_bad_line_is_raised_after_the_chunks_before_it_with_the_words_of_load_recording():
    good = make_recording(b"data: a\n\ndata: b\n\n", "bad", end=False)
    broken = good + b'0.9 "data: c\\n\\n"\nthis is no line\n0.95 "data: d\\n\\n"\n'
    with pytest.raises(BadInput) as whole:
        load_recording(io.BytesIO(broken))
    reader = ChunkReader()
    _, datas = reader.feed(broken)
    assert b"".join(datas) == b"data: a\n\ndata: b\n\ndata: c\n\n"  # the lines before the bad one
    with pytest.raises(BadInput) as streamed:
        reader.close()
    assert str(streamed.value) == str(whole.value) and "line" in str(whole.value)


def test_an_escape_not_of_ours_is_named_whatever_the_block():
    rec_bytes = make_recording(b"data: a\n\n", "esc", end=False) + b'0.5 "data: \\q"\n'
    for cut in range(1, len(rec_bytes)):
        with pytest.raises(BadInput, match="unknown escape"):
            chunks_read([rec_bytes[:cut], rec_bytes[cut:]])


def test_a_line_longer_than_the_limit_stops_the_reader():
    rec_bytes = make_recording(b"data: a\n\n", "long", end=False) + b'0.5 "' + b"x" * 5000
    with pytest.raises(BadInput, match="longer than 1,000 bytes"):
        chunks_read([rec_bytes[i:i + 100] for i in range(0, len(rec_bytes), 100)], max_line=1000)


def test_the_first_line_must_say_recording():
    with pytest.raises(BadInput, match="not an sse-tool recording"):
        chunks_read([b'0.1 "data: a\\n\\n"\n'])


# -- read by the stages --------------------------------------------------------------------


def records_of(pieces: list[bytes], source: str = "auto") -> list:
    reader = RecordReader(source=source)
    out = []
    for piece in pieces:
        out += reader.feed(piece)
    return out + reader.close()


def outcome(pieces: list[bytes], source: str = "auto"):
    try:
        return records_of(pieces, source)
    except BadInput as exc:
        return ("bad input", str(exc).split(" (at byte")[0])


@pytest.mark.parametrize("path", FILES)
def test_a_recording_cut_anywhere_gives_the_records_of_its_body(path):
    data = path.read_bytes()  # binary ones (Bedrock's) too: the recording escapes them
    rec_bytes = make_recording(data, path.name)
    try:
        expected = read_records([data])
    except BadInput as exc:
        expected = ("bad input", str(exc).split(" (at byte")[0])
    for cut in cuts_for(rec_bytes):
        assert outcome([rec_bytes[:cut], rec_bytes[cut:]]) == expected, f"cut at byte {cut}"
    assert outcome([rec_bytes], source="recording") == expected


def test_a_recording_without_body_is_no_stream():
    rec_bytes = make_recording(b"", "empty")
    assert records_of([rec_bytes])[-1].detail.startswith(NO_STREAM)


def test_bytes_that_only_begin_like_a_recording_are_read_as_the_input():
    # a prefix of the format line, then the input ends: the bytes are the stream (not one)
    assert outcome([b"sse-t"])[0] == "bad input"
    sample = next(p for p in stream_files() if p.name == "anthropic-thinking.sse").read_bytes()
    assert records_of([sample[i:i + 1] for i in range(len(sample))]) == read_records([sample])


def test_from_recording_refuses_what_is_not_one():
    assert outcome([b"data: a\n\n"], source="recording") == (
        "bad input", "not an sse-tool recording (line 1 is not 'sse-tool recording 1')")


def test_the_format_line_is_known_without_importing_the_recording_module():
    assert pipeline._MAGIC == recording.MAGIC.encode()


def test_normalize_and_render_read_a_recording_as_replay_sends_it(tmp_path):
    sample = next(p for p in stream_files() if p.name == "anthropic-thinking.sse")
    rec = tmp_path / "answer.rec"
    rec.write_bytes(make_recording(sample.read_bytes(), "cli"))
    env = clean_env()
    for stage in ("normalize", "render"):
        direct = subprocess.run([*SSE_TOOL, stage, str(rec)], capture_output=True, env=env)
        replay = subprocess.Popen([*SSE_TOOL, "replay", "--speed", "0", str(rec)], stdout=subprocess.PIPE, env=env)
        replayed = subprocess.run([*SSE_TOOL, stage], stdin=replay.stdout, capture_output=True, env=env)
        replay.stdout.close()
        replay.wait()
        assert direct.returncode == replayed.returncode == 0, direct.stderr
        assert direct.stdout == replayed.stdout and direct.stdout


# -- what a hostile or broken recording can hold ------------------------------------------

_LINES = st.one_of(
    st.binary(max_size=40).map(lambda b: b'0.5 "' + recording.escape(b).encode() + b'"'),  # a good chunk line
    st.binary(max_size=30),  # anything at all
    st.sampled_from([b"# a note", b"> GET http://h/", b"< HTTP/1.1 200 OK", b"< x: y", b"end 1.0 complete",
                     b"end 1.0 nonsense", b'0.5 "unclosed', b'0.5 "\\q"', b'0.5 "\\x4"', b"1e400 \"x\"",
                     b"", b"\r", b'0.5 ""\r']),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=12), st.integers(min_value=1, max_value=50), st.booleans())
def test_any_lines_after_the_format_line_are_read_or_refused_never_crash(lines, size, head):
    data = recording.MAGIC.encode() + b"\n" + (b"> POST http://h/v1\n" if head else b"") + b"\n".join(lines)
    pieces = [data[i:i + size] for i in range(0, len(data), size)]
    try:
        whole = load_recording(io.BytesIO(data))
    except BadInput as exc:
        whole = exc
    try:
        times, datas, rec = chunks_read(pieces)
    except BadInput as exc:
        # refused for the same reason, whatever the cuts
        assert isinstance(whole, BadInput) and str(exc) == str(whole)
    else:
        assert not isinstance(whole, BadInput), whole
        assert (times, datas, rec.end, rec.notes) == (whole.times, whole.datas, whole.end, whole.notes)
    outcome(pieces)  # records or BadInput: nothing else escapes
