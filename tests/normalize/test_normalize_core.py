"""The provider-independent core: Normalizer's status rule and auto-detection, RecordReader."""

from __future__ import annotations

import json

import pytest

from sse_tool.errors import BadInput
from sse_tool.model import Channel, Delta, End, Status, to_record
from sse_tool.model import EARLY_STOP_REASONS, stopped_early
from sse_tool.normalize import MAX_UNRECOGNISED, Normalizer
from sse_tool.pipeline import RecordReader
from sse_tool.sse import FrameEnd, SseComment, SseEvent, SseParser
from sse_tool.wire import dumps, event_record

from ..support import FIXTURES, SAMPLES, read_records

CHUNK = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
FINISH = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def event(payload, name: str = "message", offset: int = 0) -> SseEvent:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return SseEvent(name, data, None, None, offset, offset)


def run(normalizer: Normalizer, *items, frame_end: FrameEnd | None = None) -> list:
    out = []
    for item in items:
        out += normalizer.feed(item)
    return out + normalizer.close(frame_end)


def test_terminal_event_and_a_clean_end_is_complete():
    out = run(Normalizer("openai"), event(CHUNK), event(FINISH), event("[DONE]"))
    assert out == [Delta(Channel.ANSWER, "Hi"), End(Status.COMPLETE, "stop")]


def test_clean_end_of_input_without_the_terminal_event_is_truncated_with_a_reason():
    end = run(Normalizer("openai"), event(CHUNK), event(FINISH))[-1]
    assert end.status is Status.TRUNCATED and "terminal event" in end.detail


def test_terminal_event_then_input_cut_inside_an_event_is_truncated_with_the_framing_reason():
    cut = FrameEnd("input ended in the middle of a line", 99)
    end = run(Normalizer("openai"), event(CHUNK), event("[DONE]"), frame_end=cut)[-1]
    assert end == End(Status.TRUNCATED, None, None, None, "input ended in the middle of a line")


def test_frames_cut_marker_reads_as_the_framing_reason_and_a_reset_voids_it():
    cut = FrameEnd("input ended in the middle of a line", 99)
    end = run(Normalizer("openai"), event(CHUNK), event("[DONE]"), cut.comment())[-1]
    assert end == End(Status.TRUNCATED, None, None, None, "input ended in the middle of a line")
    end = run(Normalizer("openai"), event(CHUNK), cut.comment(), event(CHUNK))[-1]
    assert end.detail == "input ended in the middle of a line, before the provider's terminal event"
    retried = run(Normalizer("openai"), event(CHUNK), cut.comment(), SseComment("sse-tool reset"),
                  event(CHUNK), event("[DONE]"))
    assert retried[-1] == End(Status.COMPLETE)


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.sse")), ids=lambda p: p.name)
def test_a_stream_cut_anywhere_says_the_same_from_its_bytes_and_from_frames_records(path):
    data = path.read_bytes()
    if data.endswith((b"\n\n", b"\r\n\r\n")):
        data += b"event: ping\ndata: {}\n\n"  # so cuts also fall after the terminal event
    for cut in range(0, len(data) + 1, 7):
        framer = SseParser()
        items = framer.feed(data[:cut])
        end = framer.close()
        lines = b"".join(dumps(event_record(i)) for i in items)
        if end.truncated:
            lines += dumps(event_record(end.comment()))  # as the frame command writes it
        from_frame = RecordReader()
        records = from_frame.feed(lines) + from_frame.close()
        assert records == read_records([data[:cut]]), f"cut at byte {cut}"


def test_an_error_wins_over_a_terminal_event():
    error = {"error": {"type": "server_error", "message": "boom"}}
    end = run(Normalizer("openai"), event(CHUNK), event(error), event("[DONE]"))[-1]
    assert end.status is Status.ERROR and end.error == {"type": "server_error", "message": "boom"}


def test_no_events_at_all_is_truncated():
    assert run(Normalizer()) == [End(Status.TRUNCATED, detail="no events arrived")]


def test_comments_are_ignored():
    out = run(Normalizer(), SseComment("keep-alive"), event(CHUNK), SseComment("x"), event("[DONE]"))
    assert out[-1].status is Status.COMPLETE


def test_auto_holds_events_until_one_is_recognised_then_replays_them():
    normalizer = Normalizer()
    assert normalizer.feed(event({"hello": 1})) == []
    assert normalizer.feed(event(CHUNK)) == [Delta(Channel.ANSWER, "Hi")]
    assert normalizer.provider == "openai"


def test_auto_gives_up_after_too_many_unknown_events():
    normalizer = Normalizer()
    with pytest.raises(BadInput, match="--provider"):
        for i in range(MAX_UNRECOGNISED + 1):
            normalizer.feed(event({"hello": i}, offset=i))


def test_unknown_format_at_close_is_bad_input():
    normalizer = Normalizer()
    normalizer.feed(event({"hello": 1}))
    with pytest.raises(BadInput, match="unknown provider format"):
        normalizer.close()


def test_a_lone_error_object_is_an_error_whatever_the_provider():
    end = run(Normalizer(), event({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}))[-1]
    assert end.status is Status.ERROR and end.error["message"] == "quota"


def test_broken_json_names_the_event_and_its_offset_once_the_next_item_shows_it_was_not_cut():
    normalizer = Normalizer("openai")
    assert normalizer.feed(event('{"choices": [', name="delta", offset=42)) == []
    with pytest.raises(BadInput, match=r"'delta'.*at byte 42"):
        normalizer.feed(event(CHUNK))
    with pytest.raises(BadInput, match=r"'delta'.*at byte 42"):
        run(Normalizer("openai"), event('{"choices": [', name="delta", offset=42))  # the input's clean end


def test_broken_json_just_before_a_cut_is_part_of_the_cut_whoever_found_it():
    # What a failure left is counted as that failure, on every framing and every path: the
    # raw bytes (the framing's cut) and frame's records (its exit marker) say the same
    broken = event('{"choices": [', offset=42)
    cut = FrameEnd("input ended in the middle of a line", 99)
    by_framing = run(Normalizer("openai"), event(CHUNK), broken, frame_end=cut)[-1]
    by_marker = run(Normalizer("openai"), event(CHUNK), broken, cut.comment())[-1]
    assert by_framing == by_marker and by_framing.status is Status.TRUNCATED
    assert by_framing.detail == "input ended in the middle of a line, before the provider's terminal event"
    fetch_failed = run(Normalizer("openai"), event(CHUNK), broken, SseComment("sse-tool exit 7 fetch: reset"))[-1]
    assert (fetch_failed.status, fetch_failed.exit) == (Status.FAILED, 7)


def test_unknown_provider_is_refused():
    with pytest.raises(ValueError):
        Normalizer("nope")


@pytest.mark.parametrize("reason", ["length", "max_tokens", "MAX_TOKENS", "content_filter", "SAFETY",
                                    "refusal", "max_output_tokens"])
def test_early_stop_reasons(reason):
    assert stopped_early(reason) and reason.lower() in EARLY_STOP_REASONS


@pytest.mark.parametrize("reason", [None, "stop", "end_turn", "STOP", "completed", "tool_calls", "tool_use",
                                    "stop_sequence"])
def test_normal_stop_reasons_are_not_early(reason):
    assert not stopped_early(reason)


# -- RecordReader: any earlier stage's output ------------------------------------------------

RAW = (FIXTURES / "openai-chat/openai-text-usage.sse").read_bytes()


def read(data: bytes, source: str = "auto", chunk: int | None = None) -> tuple[RecordReader, list]:
    reader = RecordReader(source=source)
    out = []
    for i in range(0, len(data), chunk or len(data) or 1):
        out += reader.feed(data[i:i + (chunk or len(data))])
    return reader, out + reader.close()


def frame_lines(data: bytes) -> bytes:
    from sse_tool.sse import SseParser

    parser = SseParser()
    return b"".join(dumps(event_record(e)) for e in parser.feed(data))


def test_raw_sse_frame_records_and_channel_records_all_give_the_same_records():
    reader, from_raw = read(RAW)
    assert reader.source == "sse"
    reader, from_events = read(frame_lines(RAW))
    assert reader.source == "events" and from_events == from_raw
    records = b"".join(dumps(to_record(r)) for r in from_raw)
    reader, passed = read(records)
    assert reader.source == "records" and passed == from_raw


def test_the_result_does_not_depend_on_the_chunking():
    whole = read(RAW)[1]
    assert read(RAW, chunk=1)[1] == whole
    assert read(RAW, chunk=7)[1] == whole


def test_records_after_the_end_record_are_not_this_streams():
    lines = dumps({"type": "end", "status": "complete", "stop_reason": "stop"})
    lines += dumps({"type": "delta", "channel": "answer", "text": "late"})
    assert read(lines)[1] == [End(Status.COMPLETE, "stop")]


def test_records_without_an_end_record_are_truncated():
    out = read(dumps({"type": "delta", "channel": "answer", "text": "a"}))[1]
    assert out[-1].status is Status.TRUNCATED


def test_an_invalid_record_is_bad_input_with_its_offset():
    first = dumps({"type": "delta", "channel": "answer", "text": "a"})
    reader = RecordReader(source="records")
    out = reader.feed(first + dumps({"type": "delta", "channel": "nowhere", "text": "b"}))
    assert out == [Delta(Channel.ANSWER, "a")]
    with pytest.raises(BadInput, match=f"at byte {len(first)}"):
        reader.close()


def test_good_records_before_broken_json_are_returned_and_the_error_waits_in_error():
    head = RAW[: RAW.index(b'"finish_reason":"stop"')]
    head = head[: head.rindex(b"data:")]
    reader = RecordReader()
    out = reader.feed(head + b'data: {"choices": [}\n\ndata: {}\n\n')
    assert "".join(r.text for r in out if isinstance(r, Delta)) == "The capital of the UK is London."
    assert isinstance(reader.error, BadInput) and f"at byte {len(head)}" in str(reader.error)
    with pytest.raises(BadInput):
        reader.feed(b"data: [DONE]\n\n")


def test_broken_json_first_is_raised_once_the_next_event_arrives():
    reader = RecordReader()
    assert reader.feed(b'data: {"choices": [}\n\n') == []
    with pytest.raises(BadInput, match="at byte 0"):
        reader.feed(b"data: {}\n\n")


def test_an_empty_input_means_no_stream_arrived_and_is_truncated():
    # Not a byte: an earlier stage died without a word (one that fails says so in-band).
    assert read(b"")[1] == [End(Status.TRUNCATED, detail="no stream arrived (empty input)")]


def test_bytes_without_any_event_are_a_truncated_stream():
    assert read(b": keep-alive\n\n")[1] == [End(Status.TRUNCATED, detail="no events arrived")]


def test_a_cut_inside_the_first_event_says_where_it_was_cut():
    sse = b'data: {"choices": [{"delta": {"content": "hi"'
    bedrock = (SAMPLES / "bedrock-invoke-nova.eventstream").read_bytes()[:100]
    assert read(sse)[1] == [End(Status.TRUNCATED, detail="no events arrived: input ended in the middle of a line")]
    assert read(bedrock)[1] == [End(Status.TRUNCATED, detail="no events arrived: input ended inside a message "
                                                             "(100 of its 199 bytes)")]


def test_unknown_source_is_refused():
    with pytest.raises(ValueError):
        RecordReader(source="xml")


def test_an_unknown_provider_is_refused_before_any_data():
    # (it was taken, and an empty input then ended "truncated: no stream arrived")
    import sse_tool

    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        RecordReader("nope")
    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        list(sse_tool.records([b""], provider="nope"))
