"""The AWS event-stream framer: messages out of any chunking, CRCs and lengths checked,
typed headers read, a torn last message reported as truncation, and the ``frame`` command
around it. (Every recorded Bedrock stream cut at every byte: ``test_every_cut_*``.)"""

from __future__ import annotations

import json
import struct
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.errors import BadInput, EventTooLarge
from sse_tool.eventstream import EventMessage, EventStreamParser, parse_headers
from sse_tool.framing import AutoFramer, sniff

from ..support import FIXTURES, SSE_TOOL, bedrock_event, bedrock_exception, clean_env, event_message

TEXT = FIXTURES / "bedrock" / "converse-stream-text.eventstream"
CUT = FIXTURES / "bedrock" / "converse-stream-text.cut-mid-message.eventstream"


def parse(*chunks: bytes, limit: int = 1 << 20):
    parser = EventStreamParser(max_event_size=limit)
    out = [m for chunk in chunks for m in parser.feed(chunk)]
    return out, parser.close()


def test_a_recording_reads_as_its_messages_with_headers_and_json_payloads():
    data = TEXT.read_bytes()
    messages, end = parse(data)
    assert end.is_complete and end.offset == len(data)
    assert [m.event for m in messages[:2]] == ["messageStart", "contentBlockDelta"]
    assert messages[-2:][0].event == "messageStop" and messages[-1].event == "metadata"
    assert messages[0].headers == {":event-type": "messageStart", ":content-type": "application/json",
                                   ":message-type": "event"}
    assert json.loads(messages[1].data)["delta"] == {"text": "The"}
    # offsets tile the input: each message ends where the next starts
    assert [m.offset for m in messages[1:]] == [m.end for m in messages[:-1]] and messages[-1].end == len(data)


def test_one_byte_at_a_time_gives_the_same_messages():
    data = TEXT.read_bytes()
    assert parse(*[data[i:i + 1] for i in range(len(data))]) == parse(data)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6616), max_size=12))
def test_any_chunking_gives_the_same_messages(cuts):
    data = TEXT.read_bytes()
    points = sorted({0, len(data), *cuts})
    assert parse(*[data[a:b] for a, b in zip(points, points[1:])]) == parse(data)


def test_a_message_torn_at_the_end_is_truncation_and_is_not_emitted():
    messages, end = parse(CUT.read_bytes())
    assert len(messages) == 20 and "Louvre" not in "".join(m.data for m in messages)
    assert end.truncated == "input ended inside a message (166 of its 238 bytes)"
    assert end.offset == messages[-1].end == 3991  # where the torn message starts


def test_a_torn_prelude_is_truncation_too():
    one = bedrock_event("messageStart", {"role": "assistant"})
    _, end = parse(one + one[:5])
    assert end.truncated == "input ended inside a message prelude (5 of its 12 bytes)"
    assert end.offset == len(one)


def test_a_bad_prelude_crc_is_bad_input_with_the_offset_after_the_good_messages():
    good = bedrock_event("messageStart", {"role": "assistant"})
    bad = bytearray(good)
    bad[10] ^= 0xFF
    parser = EventStreamParser()
    assert [m.event for m in parser.feed(good + bytes(bad))] == ["messageStart"]
    with pytest.raises(BadInput, match=rf"prelude CRC mismatch .*\(at byte {len(good)}\)"):
        parser.feed(b"")
    with pytest.raises(BadInput):
        parser.close()


def test_a_bad_message_crc_is_bad_input_with_the_offset():
    good = bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}})
    flipped = bytearray(good)
    flipped[-8] ^= 0x01  # a payload byte: the prelude is fine, the message CRC is not
    with pytest.raises(BadInput, match=r"message CRC mismatch .*\(at byte 0\)"):
        parse(bytes(flipped))


@pytest.mark.parametrize("total, headers", [(15, 0), (16, 1), (40, 30)])
def test_lengths_that_do_not_fit_together_are_bad_input(total, headers):
    prelude = struct.pack(">II", total, headers)
    prelude += struct.pack(">I", __import__("zlib").crc32(prelude))
    with pytest.raises(BadInput, match="invalid event-stream message"):
        parse(prelude + bytes(max(0, total - 12)))


def test_a_length_over_the_limit_is_refused_from_the_prelude_alone():
    prelude = struct.pack(">II", 2**31, 0)
    prelude += struct.pack(">I", __import__("zlib").crc32(prelude))
    parser = EventStreamParser(max_event_size=1 << 20)
    with pytest.raises(EventTooLarge) as caught:
        parser.feed(prelude)  # nothing but the 12 bytes: no 2 GiB is waited for or kept
    assert caught.value.offset == 0 and "--max-event-size" in str(caught.value)


def test_the_limit_counts_the_whole_message():
    message = bedrock_event("metadata", {"usage": {"inputTokens": 1}})
    assert parse(message, limit=len(message))[0]
    with pytest.raises(EventTooLarge):
        parse(message, limit=len(message) - 1)


def test_every_header_type_reads_as_a_json_value():
    headers = {
        "t": (0, b""), "f": (1, b""), "b": (2, b"\xff"), "s": (3, b"\x01\x00"),
        "i": (4, b"\xff\xff\xff\xfe"), "l": (5, b"\x00\x00\x01\x00\x00\x00\x00\x00"),
        "raw": (6, b"\x00\x03\x00\x01\x02"), "str": (7, b"\x00\x03h\xc3\xa9"),
        "ts": (8, struct.pack(">q", 1700000000123)),
        "id": (9, bytes(range(16))),
    }
    (message,), _ = parse(event_message(headers, b"{}"))
    assert message.headers == {
        "t": True, "f": False, "b": -1, "s": 256, "i": -2, "l": 2**40, "raw": "AAEC",
        "str": "hé", "ts": 1700000000123, "id": "00010203-0405-0607-0809-0a0b0c0d0e0f",
    }
    assert message.event == "message"  # no :event-type


@pytest.mark.parametrize("raw, why", [
    (b"\x01a\x07\x00\x05ab", "runs past"),       # a string longer than the section
    (b"\x01a\x0c", "unknown header value type 12"),
    (b"\x01a\x00\x01a\x01", "appears twice"),
    (b"\x05ab", "runs past"),                     # a name longer than the section
    (b"\x01\xff\x00", "not UTF-8"),
    (b"\x00\x00", "empty name"),
])
def test_malformed_headers_are_bad_input(raw, why):
    with pytest.raises(BadInput, match=why):
        parse_headers(raw, 7)


def test_exceptions_and_errors_are_named_by_their_message_type():
    stream = (bedrock_exception("throttlingException", "Too many requests")
              + event_message({":message-type": "error", ":error-code": "InternalFailure",
                               ":error-message": "boom"}))
    messages, _ = parse(stream)
    assert [m.event for m in messages] == ["exception:throttlingException", "error:InternalFailure"]
    assert json.loads(messages[0].data) == {"message": "Too many requests"}


# -- recognition ------------------------------------------------------------------------

def test_sniff_waits_for_a_whole_prelude_and_checks_its_crc():
    data = TEXT.read_bytes()
    assert [sniff(data[:n]) for n in (1, 11)] == [None, None]
    assert sniff(data[:12]) == "aws-eventstream"
    assert sniff(b"\0\0\0\x10" + bytes(8)) == "sse"  # a NUL start without a prelude: binary, refused
    # An input that ends inside what could be a first prelude is a torn event stream (a cut);
    # one whose lengths cannot fit is binary.
    assert sniff(b"\0\0\0", final=True) == sniff(data[:11], final=True) == "aws-eventstream"
    assert sniff(b"\0\0\0\x05", final=True) == "sse"
    assert sniff(b"\0\0\0\x20\0\0\0\x30", final=True) == "sse"


def test_auto_framer_recognises_the_stream_one_byte_at_a_time():
    data = TEXT.read_bytes()
    framer = AutoFramer()
    out = [m for i in range(len(data)) for m in framer.feed(data[i:i + 1])]
    assert framer.kind == "aws-eventstream" and framer.close().is_complete
    assert out == parse(data)[0] and all(isinstance(m, EventMessage) for m in out)


@pytest.mark.parametrize("data", [b"\0\0\0\x05", b"\0\0\0\x10\0\0\0\0\0\0\0\0rest", b"\n\0\0"])
def test_binary_that_is_not_an_event_stream_is_refused(data):
    framer = AutoFramer()
    with pytest.raises(BadInput, match="binary data"):
        framer.feed(data)
        framer.close()


@pytest.mark.parametrize("n", range(1, 12))
def test_an_input_ending_inside_the_first_prelude_is_a_torn_event_stream(n):
    framer = AutoFramer()
    assert framer.feed(TEXT.read_bytes()[:n]) == []
    end = framer.close()
    assert framer.kind == "aws-eventstream" and end.truncated


# -- in-band markers ----------------------------------------------------------------------

NOTE = b": sse-tool note fetch: retry 1/1 in 1s\n\n"
RESET = b": sse-tool reset\n\n"
EXIT = b": sse-tool exit 8 fetch: no byte for 30s (idle timeout)\n"


def items(data: bytes, size: int = 0):
    """What the auto framer gives for ``data`` fed in chunks of ``size`` (0: at once):
    messages by their offsets and events, comments by their text; and the end."""
    framer = AutoFramer()
    size = size or len(data) or 1
    out = [m for i in range(0, len(data), size) for m in framer.feed(data[i:i + size])]
    end = framer.close()
    out += end.items
    return framer.kind, [m.text if hasattr(m, "text") else (m.event, m.offset) for m in out], end.truncated


def shifted(messages, by: int):
    return [(event, offset + by) for event, offset in messages]


def test_a_note_before_the_stream_is_read_and_the_stream_still_recognised():
    data = TEXT.read_bytes()
    plain = [(m.event, m.offset) for m in parse(data)[0]]
    for size in (0, 1, 3, 13):
        kind, out, cut = items(NOTE + NOTE + data, size)
        assert kind == "aws-eventstream" and cut is None, size
        assert out == [NOTE[2:-2].decode()] * 2 + shifted(plain, 2 * len(NOTE)), size


@pytest.mark.parametrize("line_end", [b"\n", b""])
def test_the_exit_marker_after_a_whole_message_is_read(line_end):
    # fetch writes a line end first when the body's last byte was not one (a CRC's rarely is)
    data = TEXT.read_bytes()
    messages = parse(data)[0]
    cut = messages[2].end
    for size in (0, 1, 5):
        kind, out, end = items(data[:cut] + line_end + EXIT, size)
        assert out == [(m.event, m.offset) for m in messages[:3]] + [EXIT[2:-1].decode()], size
        assert kind == "aws-eventstream" and end is None


def test_a_marker_at_every_byte_of_a_message_cuts_it():
    # The cut message is dropped; a reset's new attempt is read from its first byte, an
    # exit marker ends the stream, whatever the chunking.
    data = TEXT.read_bytes()
    messages = parse(data)[0]
    first, second = messages[0], messages[1]
    before = [(first.event, first.offset)]
    for at in range(second.offset + 1, second.end):
        head = data[:at] + (b"" if data[at - 1:at] in b"\r\n" else b"\n")
        again = shifted([(m.event, m.offset) for m in messages], len(head) + len(RESET))
        for size in (0, 1, 7):
            assert items(head + RESET + data, size)[1:] == (before + ["sse-tool reset"] + again, None), (at, size)
            assert items(head + EXIT, size)[1:] == (before + [EXIT[2:-1].decode()], None), (at, size)


def test_line_ends_between_messages_without_a_marker_are_still_refused():
    data = TEXT.read_bytes()
    cut = parse(data)[0][1].end
    with pytest.raises(BadInput, match="prelude CRC mismatch"):
        items(data[:cut] + b"\n" + data[cut:])


@pytest.mark.parametrize("tail", [b"\n", b"\r\n", b"\r", b":", b"\n\n"])
def test_a_line_end_after_the_last_message_is_bad_input_naming_it_not_a_cut(tail):
    # a line end or a colon never starts a prelude (that message would be over 160 MiB)
    data = TEXT.read_bytes()
    for size in (0, 1):
        with pytest.raises(BadInput, match=r"follows the last message: not an event-stream message") as caught:
            items(data + tail, size)
        assert repr(tail) in str(caught.value) and caught.value.offset == len(data)


@pytest.mark.parametrize("stage", ["frame", "normalize", "check"])
def test_every_stage_says_bad_input_for_a_line_end_after_the_last_message(stage, tmp_path):
    path = tmp_path / "trailing.eventstream"
    path.write_bytes(TEXT.read_bytes() + b"\r\n")
    r = subprocess.run([*SSE_TOOL, stage, str(path)], capture_output=True, env=clean_env(), timeout=60)
    assert r.returncode == 5, r.stderr
    assert f"follows the last message: not an event-stream message (at byte {len(TEXT.read_bytes())})".encode() in r.stderr


def outcome(data: bytes, cuts: list[int]):
    framer = EventStreamParser()
    points = sorted({0, len(data), *cuts})
    try:
        out = [m for a, b in zip(points, points[1:]) for m in framer.feed(data[a:b])]
        end = framer.close()
    except BadInput as exc:
        return str(exc)
    return out + list(end.items), end.truncated


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 1200), st.sampled_from([NOTE, RESET, EXIT, b": sse-tool bogus\n", b": other\n"]),
       st.sampled_from([b"\n", b"\r\n", b""]), st.lists(st.integers(0, 1400), max_size=6))
def test_a_line_anywhere_gives_one_outcome_whatever_the_chunking(at, line, before, cuts):
    data = TEXT.read_bytes()
    data = data[:at] + before + line + data[at:]
    assert outcome(data, cuts) == outcome(data, [])


@pytest.mark.parametrize("at", ["boundary", "inside"])
def test_a_line_that_only_looks_like_a_marker_is_refused_not_looped_on(at):
    data = TEXT.read_bytes()
    messages = parse(data)[0]
    cut = messages[1].end if at == "boundary" else messages[1].offset + 30
    for tail in (b"\n: sse-tool bogus\n", b"\n: sse-tool bogus\n" + data[messages[2].offset:]):
        for size in (0, 1):
            with pytest.raises(BadInput):
                items(data[:cut] + tail, size)


def test_a_first_message_over_16_mib_is_recognised():
    # its length's first byte is 1, not a NUL
    big = bedrock_event("chunk", {"bytes": "A" * (17 << 20)})
    assert big[:1] == b"\x01" and sniff(big[:12]) == "aws-eventstream"
    assert items(big + TEXT.read_bytes())[0] == "aws-eventstream"


def test_frame_passes_on_the_exit_code_of_a_marker_after_a_bedrock_body():
    data = TEXT.read_bytes()
    r = run("frame", stdin=data[:parse(data)[0][3].end] + b"\n" + EXIT)
    assert r.returncode == 8, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == {"comment": EXIT[2:-1].decode()}
    normalize = run("normalize", stdin=NOTE + data)
    assert normalize.returncode == 0, normalize.stderr
    assert json.loads(normalize.stdout.splitlines()[-1])["status"] == "complete"


# -- the frame command ------------------------------------------------------------------

def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, *args], input=stdin, capture_output=True, env=clean_env(), timeout=60)


def test_frame_writes_one_record_per_message_with_headers_and_json_payload():
    r = run("frame", "--json", "--offsets", str(TEXT))
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(records) == 33
    assert records[1] == {
        "event": "contentBlockDelta",
        "data": {"contentBlockIndex": 0, "delta": {"text": "The"}, "p": records[1]["data"]["p"]},
        "headers": {":event-type": "contentBlockDelta", ":content-type": "application/json",
                    ":message-type": "event"},
        "offset": records[0]["end"], "end": records[2]["offset"],
    }


def test_frame_of_a_torn_stream_exits_3_with_the_cut_marker_last():
    r = run("frame", "--from", "aws-eventstream", str(CUT))
    assert r.returncode == 3
    lines = r.stdout.splitlines()
    assert len(lines) == 21 and json.loads(lines[-1]) == {
        "comment": "sse-tool exit 3 frame: input ended inside a message (166 of its 238 bytes)"}
    assert b"(at byte 3991)" in r.stderr


def test_frame_of_a_corrupted_stream_exits_5_with_the_offset():
    data = bytearray(TEXT.read_bytes())
    data[200] ^= 0x40
    r = run("frame", stdin=bytes(data))
    assert r.returncode == 5 and b"CRC mismatch" in r.stderr and b"(at byte " in r.stderr
    assert r.stdout.count(b"\n") >= 1  # the messages before the fault came out first
    assert r.stderr.count(b"\n") == 1


def test_frame_told_aws_eventstream_refuses_sse_with_exit_5():
    r = run("frame", "--from", "aws-eventstream", stdin=b"data: hello there\n\n")
    assert r.returncode == 5 and b"prelude CRC mismatch" in r.stderr
    assert [json.loads(line)["comment"].split(":")[0] for line in r.stdout.splitlines()] == [
        "sse-tool exit 5 frame"]  # only its failure, for the later stages


def test_frame_records_piped_to_normalize_give_what_normalize_gives_on_the_bytes():
    framed = run("frame", str(TEXT))
    piped = run("normalize", stdin=framed.stdout)
    direct = run("normalize", str(TEXT))
    assert (piped.returncode, direct.returncode) == (0, 0)
    assert piped.stdout == direct.stdout
    cut_framed = run("frame", str(CUT))
    cut_piped = run("normalize", stdin=cut_framed.stdout)
    assert cut_piped.returncode == 3 and cut_piped.stdout == run("normalize", str(CUT)).stdout


# -- every recorded event stream, cut at every byte, with the marker a failing stage writes ---

from ..marks import spread  # noqa: E402
from ..support import stream_files  # noqa: E402

EVENT_STREAMS = [p for p in stream_files() if p.suffix == ".eventstream"]


@pytest.mark.parametrize("path", spread(EVENT_STREAMS, 4, ids=lambda p: p.name))
def test_every_cut_then_fetchs_exit_marker_gives_the_whole_messages_before_it_and_the_marker(path):
    # What fetch writes when the body is cut at any byte: a line end, then its exit marker.
    data = path.read_bytes()
    messages = [m for m in parse(data)[0]]
    for at in range(len(data) + 1):
        cut = data[:at] + (b"\n" if at else b"") + EXIT
        # (a message missing only its last byte, which is the LF fetch writes, is whole again)
        before = [(m.event, m.offset) for m in messages if m.end <= at or cut[:m.end] == data[:m.end]]
        sizes = (0, 1) if at < 40 or any(m.end == at for m in messages) else (0,)
        for size in sizes:
            kind, out, end = items(cut, size)
            assert (kind, out, end) == ("aws-eventstream" if at else kind, before + [EXIT[2:-1].decode()], None), (at, size)
