"""AutoFramer: SSE, JSON array or NDJSON, recognised from the first bytes."""

from __future__ import annotations

import pytest

from sse_tool.framing import FRAMERS, AutoFramer, make_framer, sniff
from sse_tool.jsonarray import JsonArrayParser
from sse_tool.ndjson import NdjsonParser
from sse_tool.sse import SseParser

from ..support import FIXTURES


@pytest.mark.parametrize(
    ("head", "kind"),
    [(b"[", "json-array"), (b" \r\n\t[{", "json-array"), (b"\xef\xbb\xbf[", "json-array"),
     (b"{", "ndjson"), (b"\n{", "ndjson"), (b"data: x", "sse"), (b": ping", "sse"),
     (b"event: x", "sse"), (b"\n\n", None), (b"", None), (b"\xef\xbb", None)],
)
def test_sniff_decides_from_the_first_non_blank_byte(head, kind):
    assert sniff(head) == kind


def test_sniff_with_nothing_left_to_read_is_sse():
    assert sniff(b" \n", final=True) == "sse"


def test_the_gemini_json_fixture_goes_through_the_json_array_framer():
    raw = (FIXTURES / "gemini" / "json-array-no-alt-sse.json").read_bytes()
    framer = AutoFramer()
    items = framer.feed(raw)
    assert framer.kind == "json-array" and len(items) >= 2 and framer.close().is_complete


def test_leading_blanks_are_held_until_the_first_byte_decides():
    framer = AutoFramer()
    for byte in b"\r\n  \n":
        assert framer.feed(bytes([byte])) == [] and framer.kind is None
    assert [e.data for e in framer.feed(b'{"a": 1}\n')] == ['{"a": 1}']
    assert framer.kind == "ndjson"
    assert framer.feed(b"")  == []


def test_blank_or_empty_input_is_complete_sse_without_events():
    for stream in (b"", b"\n\n"):
        framer = AutoFramer()
        assert framer.feed(stream) == [] and framer.close().is_complete and framer.kind == "sse"


def test_offsets_count_the_held_blanks():
    framer = AutoFramer()
    framer.feed(b"\n")
    (event,) = framer.feed(b"data: a\n\n")
    assert event.offset == 1


def test_make_framer_builds_each_kind_with_its_options():
    assert set(FRAMERS) == {"sse", "json-array", "ndjson", "aws-eventstream"}
    sse = make_framer("sse", comments=True, max_event_size=10)
    assert isinstance(sse, SseParser) and sse.comments and sse.max_event_size == 10
    assert isinstance(make_framer("json-array", comments=True), JsonArrayParser)
    assert isinstance(make_framer("ndjson", max_event_size=5), NdjsonParser)


NOTE = b": sse-tool note fetch: HTTP 503; retry 1/2 in 1s (backoff)\n\n"
BODIES = {
    "json-array": b'[{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}]',
    "ndjson": b'{"model":"m","message":{"role":"assistant","content":"hi"},"done":true,"done_reason":"stop"}\n',
    "sse": b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
}


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_leading_note_markers_are_skipped_when_the_framing_is_recognised(kind):
    from sse_tool.framing import sniff
    from sse_tool.pipeline import RecordReader

    data = NOTE + NOTE + BODIES[kind]
    assert sniff(data) == kind and sniff(NOTE) is None and sniff(NOTE[:9]) is None
    for step in (1, 5, len(data)):
        reader = RecordReader()
        records = [r for i in range(0, len(data), step) for r in reader.feed(data[i:i + step])]
        records += reader.close()
        assert reader.source == kind
        assert [type(r).__name__ for r in records[:2]] == ["Note", "Note"]
        assert type(records[-1]).__name__ == "End"


@pytest.mark.parametrize("marker", [b": sse-tool exit 3 fetch: body cut short\n", b": sse-tool note fetch: hi\n",
                                    b": sse-tool reset\n"])
@pytest.mark.parametrize("before", [b"", b'data: {"type":"content_blo\n', b"data: {\n"])
def test_a_marker_on_the_last_line_is_read_with_or_without_a_blank_line_after_it(marker, before):
    """The exit marker ends a failed stage's output with no blank line after it; a marker
    among the last lines of the input, complete but before no blank line, is read as one."""
    from sse_tool.pipeline import RecordReader

    head = BODIES["sse"].replace(b"message_stop", b"message_start")
    def read(data, step):
        reader = RecordReader("anthropic")
        records = [r for i in range(0, len(data), step) for r in reader.feed(data[i:i + step])]
        return records + reader.close()
    void = b"note" not in marker  # exit and reset void the event they cut: a blank line changes nothing
    for step in (1, 7, 1000):
        assert read(head + before + marker, step) == read(head + before + marker + (b"\n" if void else b""), 1000)
    framer = SseParser()
    items = framer.feed(head + before + marker)
    end = framer.close()
    assert [i.text for i in (*items, *end.items) if type(i).__name__ == "SseComment"] == [marker[2:-1].decode()]
