import io
import re

import pytest
from hypothesis import given, settings, strategies as st

from sse_tool.errors import BadInput
from sse_tool.recording import (Chunk, RecordingWriter, _only_our_escapes, escape, load_recording,
                                parse_recording, unescape)
from sse_tool.redact import Redactor


@given(st.binary())
def test_any_bytes_round_trip_through_escaping(data):
    text = escape(data)
    assert "\n" not in text and "\r" not in text
    assert unescape(text) == data


@given(st.text())
def test_any_text_round_trips_through_escaping(text):
    data = text.encode("utf-8", "surrogatepass")
    assert unescape(escape(data)) == data


def test_escaping_keeps_text_readable_and_shows_invisible_bytes():
    assert escape('data: {"t":"ganar 💪"}\r\n\n'.encode()) == 'data: {"t":"ganar 💪"}\\r\\n\\n'
    assert escape(b"a\\b\tc\x00\x7f") == "a\\\\b\\tc\\x00\\x7f"
    assert escape("\ufeffx\u2028".encode()) == "\\xef\\xbb\\xbfx\\xe2\\x80\\xa8"
    # a character split between two chunks stays exact on both sides
    assert escape("💪".encode()[:2]) == "\\xf0\\x9f"
    assert escape(b"  trailing space  ") == "  trailing space  "


def _record(chunks, **kw):
    buf = io.StringIO()
    w = RecordingWriter(buf, Redactor())
    w.start("2026-01-01T00:00:00.000000Z")
    w.request("POST", "http://h/v1/messages", [("Content-Type", "application/json")], b'{"a": 1}')
    w.response("HTTP/1.1", 200, "OK", [("content-type", "text/event-stream")])
    for t, data in chunks:
        w.chunk(t, data)
    w.note("retry 1/2: something")
    w.end(1.5, "truncated", "body cut short")
    return buf.getvalue()


@given(st.lists(st.binary(min_size=1), max_size=20))
def test_a_recording_round_trips_bytes_and_chunk_boundaries(datas):
    chunks = [(i * 0.001, d) for i, d in enumerate(datas)]
    rec = parse_recording(_record(chunks).split("\n"))
    assert [c.data for c in rec.chunks] == datas
    assert rec.body == b"".join(datas)


def test_a_recording_reads_back_every_field():
    text = _record([(0.25, b"data: a\n\n"), (0.5, b"data: b\n\n")])
    rec = load_recording(io.BytesIO(text.encode()))
    assert rec.start == "2026-01-01T00:00:00.000000Z"
    assert (rec.request.method, rec.request.url, rec.request.body) == ("POST", "http://h/v1/messages", b'{"a": 1}')
    assert rec.request.headers == [("Content-Type", "application/json")]
    assert (rec.response.http_version, rec.response.status, rec.response.reason) == ("HTTP/1.1", 200, "OK")
    assert rec.response.headers == [("content-type", "text/event-stream")]
    assert rec.chunks == [Chunk(0.25, b"data: a\n\n"), Chunk(0.5, b"data: b\n\n")]
    assert rec.notes == ["retry 1/2: something"]
    assert (rec.end.time, rec.end.outcome, rec.end.detail) == (1.5, "truncated", "body cut short")


def test_the_documented_example_parses(tmp_path):
    import sse_tool.recording as module

    doc = module.__doc__
    example = doc[doc.index("::") + 2:doc.index("Lines:")]
    lines = [line[4:] for line in example.strip("\n").splitlines()]
    path = tmp_path / "example.rec"
    path.write_text("\n".join(lines))
    rec = load_recording(path)
    assert rec.response.status == 200 and len(rec.chunks) == 3 and rec.end.outcome == "complete"
    assert rec.chunks[2].data == b": sse-tool reset\n\n"


def test_the_writer_redacts_headers_and_urls():
    buf = io.StringIO()
    w = RecordingWriter(buf, Redactor())
    w.request("GET", "http://h/x?key=AIza-secret-1", [("x-api-key", "sk-secret-123")])
    w.response("HTTP/1.1", 401, "Unauthorized", [("set-cookie", "sid=abcdef")])
    assert "secret" not in buf.getvalue() and "abcdef" not in buf.getvalue()


def test_a_recording_survives_windows_line_ends_and_blank_lines():
    text = _record([(0.1, b"x\r\n")]).replace("\n", "\r\n") + "\r\n\r\n"
    rec = parse_recording(text.encode().split(b"\n"))
    assert rec.chunks[0].data == b"x\r\n"


@pytest.mark.parametrize("bad, where", [
    ("not a recording\n", "line 1"),
    ("sse-tool recording 1\n0.1 unquoted\n", "line 2"),
    ("sse-tool recording 1\n> GET http://h/\nwhat is this\n", "line 3"),
    ("sse-tool recording 1\n> GET http://h/\nend 1.0 exploded\n", "line 3"),
    ("sse-tool recording 1\n0.1 \"x\"\n", "line 2: a body chunk before the request line"),
])
def test_bad_recordings_are_bad_input_naming_the_line(bad, where):
    with pytest.raises(BadInput, match=where):
        parse_recording(bad.split("\n"))


def _read_both(data: bytes):
    """(load_recording's result or error, parse_recording's line by line)."""
    def attempt(read):
        try:
            return read()
        except (BadInput, UnicodeDecodeError) as exc:
            return type(exc)

    return (attempt(lambda: load_recording(io.BytesIO(data))),
            attempt(lambda: parse_recording(data.split(b"\n"))))


@given(st.lists(st.binary(min_size=1, max_size=40), max_size=12))
def test_reading_a_whole_recording_at_once_gives_what_reading_it_line_by_line_gives(datas):
    data = _record([(i * 0.25, d) for i, d in enumerate(datas)]).encode()
    whole, by_lines = _read_both(data)
    assert whole == by_lines and [c.data for c in whole.chunks] == datas


@given(st.lists(st.binary(min_size=1, max_size=30), min_size=1, max_size=6), st.data())
def test_a_damaged_recording_is_read_at_once_as_line_by_line_or_rejected_alike(datas, draw):
    data = bytearray(_record([(i * 0.5, d) for i, d in enumerate(datas)]).encode())
    for _ in range(draw.draw(st.integers(1, 4))):  # overwrite bytes with those a reader trips on
        at = draw.draw(st.integers(0, len(data) - 1))
        data[at:at + 1] = draw.draw(st.sampled_from([b"\\", b'"', b"\n", b" ", b"x", b"9", b"\xff", b"q", b""]))
    whole, by_lines = _read_both(bytes(data))
    assert whole == by_lines


@settings(max_examples=500)
@given(st.lists(st.sampled_from([b"\\", b"\\\\", b"\\x", b"\\x4", b"\\n", b"n", b"r", b"t", b"x", b"0", b"a",
                                 b"F", b"g", b'"', b" "]), max_size=16).map(b"".join))
def test_the_bulk_check_of_escapes_agrees_with_reading_them_left_to_right(data):
    # the reference: our escapes taken from the left, as a reader takes them; any
    # backslash left over starts an escape that is not ours
    ours = re.sub(rb"\\(?:[\\nrt]|x[0-9a-fA-F]{2})", b"", data)
    assert _only_our_escapes(data) == (b"\\" not in ours)
