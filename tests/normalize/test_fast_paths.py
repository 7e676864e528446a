"""The fast paths give exactly what the reference path gives.

``RecordReader(fast=False)`` reads every event through ``Normalizer.feed`` (the adapters'
``feed``, every value type-checked) and every channel record through ``from_record``; the
default reads the common delta event with the adapter's ``quick``, frame's plain event
records and channel delta records with a few plain tests. For every fixture and sample,
in each form a later stage may read it (the provider's bytes, ``frame``'s records of them,
``normalize``'s records of those), cut in two at every position, both give the same
records, or the same bad input at the same offset.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_tool.decode import decode_field
from sse_tool.errors import BadInput
from sse_tool.framing import AutoFramer, make_framer, sniff
from sse_tool.model import Channel, Delta, Part, Transcript, to_record
from sse_tool.pipeline import RecordReader
from sse_tool.render.draft import Draft
from sse_tool.sse import SseEvent
from sse_tool.wire import dumps, event_record

from ..support import stream_files
from .test_every_cut_normalize import cuts_for

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]


def outcome(chunks: list[bytes], fast: bool, provider: str = "auto", think_tags: str = "auto"):
    """The records, or what made the input bad input (message and offset)."""
    reader = RecordReader(provider, think_tags=think_tags, fast=fast)
    records = []
    try:
        for chunk in chunks:
            records += reader.feed(chunk)
        return records + reader.close()
    except BadInput as exc:
        return records, "bad input", str(exc), exc.offset


def frame_records(data: bytes) -> bytes:
    """``data`` as ``sse-tool frame`` writes it (its cut marker included)."""
    framer = AutoFramer()
    try:
        items = framer.feed(data)
        end = framer.close()
    except BadInput:
        return b""
    lines = b"".join(dumps(event_record(i)) for i in items)
    return lines + (dumps(event_record(end.comment())) if end.truncated else b"")


def channel_records(data: bytes) -> bytes:
    """``data`` as ``sse-tool normalize`` writes it (reading it the reference way)."""
    result = outcome([data], fast=False)
    records = result[0] if isinstance(result, tuple) else result
    return b"".join(dumps(to_record(r)) for r in records)


def assert_same_everywhere(data: bytes, **options) -> None:
    whole = outcome([data], fast=False, **options)
    assert outcome([data], fast=True, **options) == whole
    for cut in cuts_for(data):
        chunks = [data[:cut], data[cut:]]
        assert outcome(chunks, fast=True, **options) == outcome(chunks, fast=False, **options), f"cut at byte {cut}"


@pytest.mark.parametrize("path", FILES)
def test_the_providers_bytes_cut_anywhere_read_the_same_fast_and_slow(path):
    assert_same_everywhere(path.read_bytes())


@pytest.mark.parametrize("path", FILES)
def test_frames_records_cut_anywhere_read_the_same_fast_and_slow(path):
    data = frame_records(path.read_bytes())
    if data:
        assert_same_everywhere(data)


@pytest.mark.parametrize("path", FILES)
def test_channel_records_cut_anywhere_read_the_same_fast_and_slow(path):
    data = channel_records(path.read_bytes())
    if data:
        assert_same_everywhere(data)


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openai-responses"])
def test_a_named_provider_and_think_tags_on_read_the_same_fast_and_slow(provider):
    for path in stream_files():
        data = path.read_bytes()
        for think_tags in ("on", "off"):
            assert outcome([data], True, provider, think_tags) == outcome([data], False, provider, think_tags), path


ANTHROPIC_HEAD = (b'data: {"type":"message_start","message":{"model":"m"}}\n\n'
                  b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n')


@pytest.mark.parametrize("event", [
    # what quick must leave to feed: values of another type, empty text, other fields
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":[]}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":["text_delta"],"text":"x"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":{}}}\n\n',
    b'event: content_block_delta\ndata: {"index":0,"delta":{"type":"text_delta","text":"x"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"<think>a</think>b"}}\n\n',
    # lines of Anthropic's exact shape, which a batch reads with one regex and one loads
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u00e9\\n\\"\\\\"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\x"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\tb"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\xff"}}\n\n',
    b'data: {"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}\n\n',
    b'data: {"type":"content_block_delta","index":7,"delta":{"type":"thinking_delta","thinking":"x"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","text":"x"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\ud800"}}\n\n',
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}\ndata: x\n\n',
])
def test_odd_anthropic_deltas_read_the_same_fast_and_slow(event):
    # amid ordinary deltas, so that a batch read ahead holds it (a cut after the head)
    ordinary = b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"o"}}\n\n'
    data = ANTHROPIC_HEAD + (ordinary + event) * 2 + ordinary + b'data: {"type":"message_stop"}\n\n'
    for think_tags in ("auto", "on", "off"):
        assert outcome([data], True, think_tags=think_tags) == outcome([data], False, think_tags=think_tags)
    assert_same_everywhere(data)
    assert_same_everywhere(frame_records(data))


OPENAI = b'data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'


@pytest.mark.parametrize("chunk", [
    b'{"model":"m","choices":[{"index":0,"delta":{"content":5}}]}',
    b'{"model":"m","choices":[{"index":0,"delta":{"content":""}}]}',
    b'{"model":"other","choices":[{"index":0,"delta":{"content":"x"}}]}',
    b'{"model":7,"choices":[{"index":0,"delta":{"content":"x"}}]}',
    b'{"choices":[{"index":1,"delta":{"content":"x"}}]}',
    b'{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}',
    b'{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":3}]}',
    b'{"choices":[{"index":0,"delta":{"content":"x","reasoning_content":"r"}}]}',
    b'{"choices":[{"index":0,"delta":{"content":"x","tool_calls":"no"}}]}',
    b'{"choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"total_tokens":3}}',
    b'{"choices":[{"index":0,"delta":{"content":"x"}}],"usage":"many"}',
    b'{"choices":[{"index":0,"delta":{"content":"x"}}],"error":{"message":"boom"}}',
    b'{"choices":[{"index":0,"delta":{"content":"x"}}],"x_groq":{"usage":{"total_tokens":3}}}',
    b'{"choices":[{"index":0,"delta":{"content":"x"}},{"index":1,"delta":{"content":"y"}}]}',
    b'{"choices":["x"]}',
])
def test_odd_openai_chunks_read_the_same_fast_and_slow(chunk):
    ordinary = b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"o"}}]}\n\n'
    data = OPENAI + (ordinary + b"data: " + chunk + b"\n\n") * 2 + ordinary + b"data: [DONE]\n\n"
    assert outcome([data], True) == outcome([data], False)
    assert outcome([data], True, "openai") == outcome([data], False, "openai")
    assert_same_everywhere(data)
    assert_same_everywhere(frame_records(data))


@pytest.mark.parametrize("line", [
    b'{"type":"delta","channel":"answer","text":5}',
    b'{"type":"delta","channel":"speech","text":"x"}',
    b'{"type":"delta","channel":["answer"],"text":"x"}',
    b'{"type":"delta","channel":"answer"}',
    b'{"type":"delta","channel":"reasoning","text":"x","aggregate":"x"}',
    b'{"type":"delta","channel":"answer","text":"\xff"}',
    # delta lines of normalize's own shape whose text one loads of them all must get right
    b'{"type":"delta","channel":"answer","text":""}',
    b'{"type":"delta","channel":"answer","text":"\\u00e9\\n\\"q\\" \\\\"}',
    b'{"type":"delta","channel":"answer","text":"\\ud800"}',
    b'{"type":"delta","channel":"answer","text":"a\\x"}',
    b'{"type":"delta","channel":"answer","text":"a\tb"}',
    b'{"type":"delta","channel":"answer","text":"a"},{"type":"delta","channel":"answer","text":"b"}',
    b'{"type":"delta","channel":"reasoning","text":"a\\"}',
])
def test_odd_delta_records_read_the_same_fast_and_slow(line):
    data = b'{"type":"delta","channel":"answer","text":"a"}\n' + line + b'\n{"type":"end","status":"complete"}\n'
    assert_same_everywhere(data)


@pytest.mark.parametrize("line", [
    b'{"event":"message","data":5}',
    b'{"event":7,"data":"{}"}',
    b'{"event":"message","data":"{\\"choices\\":[{\\"delta\\":{\\"content\\":\\"x\\"}}]}","id":3}',
    b'{"event":"message","data":"{\\"choices\\":[{\\"delta\\":{\\"content\\":\\"x\\"}}]}","id":"3"}',
    b'{"event":"message","data":"{\\"choices\\":[{\\"delta\\":{\\"content\\":\\"\xff\\"}}]}"}',
    b'{"event":"message","data":"{\\"choices\\":[{\\"delta\\":{\\"content\\":\\"x\\"}}"}',
])
def test_odd_frame_records_read_the_same_fast_and_slow(line):
    head = b'{"event":"message","data":"{\\"model\\":\\"m\\",\\"choices\\":[{\\"delta\\":{\\"content\\":\\"a\\"}}]}"}\n'
    assert_same_everywhere(head + line + b'\n{"event":"message","data":"[DONE]"}\n')


def framed(data: bytes, chunks: list[bytes], raw: bool):
    """The events (data decoded) of ``chunks`` read by the framer ``data`` is sniffed as,
    or what made them bad input."""
    kind = sniff(data, True)
    framer = make_framer(kind, comments=True, raw=raw)
    items = []
    try:
        for chunk in chunks:
            items += framer.feed(chunk)
        end = framer.close()
    except BadInput as exc:
        return "bad input", str(exc), exc.offset
    items += end.items
    return [i._replace(data=decode_field(i.data)) if type(i) is SseEvent and type(i.data) is bytes else i
            for i in items], end


#: the streams the framers with a raw mode (SSE and NDJSON) read
RAW_FRAMED = [p for p in FILES if sniff(p.values[0].read_bytes(), True) in ("sse", "ndjson")]


@pytest.mark.parametrize("path", RAW_FRAMED)
def test_raw_framers_cut_anywhere_give_the_decoded_framers_events(path):
    """normalize reads the data as the bytes that arrived (``raw=True``): decoded, they are
    the text the framers give ``frame``."""
    data = path.read_bytes()
    assert framed(data, [data], raw=True) == framed(data, [data], raw=False)
    for cut in cuts_for(data):
        chunks = [data[:cut], data[cut:]]
        assert framed(data, chunks, raw=True) == framed(data, chunks, raw=False), f"cut at byte {cut}"


@pytest.mark.parametrize("data", [
    b"data: {\"a\":\"\xc3\xa9\"}\n\n",  # one block
    b"event: e\ndata: {}\n\n" * 200,  # a run of blocks (one C call)
    b"data: {}\n\n" * 200,
    b"data: {\ndata: }\n\n",  # many data lines
    b"data: {}\r\n\r\n",  # CR line ends: read line by line
])
def test_the_raw_sse_framer_hands_out_the_bytes_that_arrived(data):
    events = make_framer("sse", raw=True).feed(data)
    assert events and all(type(e.data) is bytes for e in events)
    assert [e.data.decode() for e in events] == [e.data for e in make_framer("sse").feed(data)]


def test_the_raw_ndjson_framer_hands_out_the_bytes_that_arrived():
    data = b'{"a":1}\n' * 100 + b'{"b":"\xc3\xa9"}\n'
    events = make_framer("ndjson", raw=True).feed(data)
    assert len(events) == 101 and events[-1].data == b'{"b":"\xc3\xa9"}'


DELTAS = st.lists(st.tuples(st.sampled_from(list(Channel)), st.sampled_from(["", "a", "é ", "\n", "xyz"])),
                  max_size=600)


@given(DELTAS, st.integers(1, 5))
def test_a_reads_run_of_deltas_is_stored_as_one_by_one(deltas, reads):
    """``Draft.add_deltas`` (render's painter, a read at a time) against ``Draft.add``."""
    one, many = Draft(), Draft()
    step = max(1, len(deltas) // reads)
    for i in range(0, len(deltas), step):
        run = [Delta(c, t) for c, t in deltas[i:i + step]]
        one.batch = many.batch = i
        changed = [one.add(d, float(i)) for d in run]
        assert many.add_deltas(run, float(i)) == any(changed)
    assert vars(one).keys() == vars(many).keys()
    for name in ("reasoning_started", "reasoning_last", "answer_started", "last_content", "_batches",
                 "thinking", "turns"):
        assert getattr(one, name) == getattr(many, name)
    assert (one.answer, one.reasoning, one.refusal) == (many.answer, many.reasoning, many.refusal)


@given(DELTAS, st.lists(st.integers(0, 2000), max_size=20))
def test_the_text_from_a_position_is_the_texts_tail(deltas, looks):
    """``Transcript.text_from`` (render into a pipe) against ``text``, read at any moments."""
    kept, joined = Transcript(), Transcript()
    for i, (channel, text) in enumerate(deltas):
        kept.add(Delta(channel, text))
        joined.add(Delta(channel, text))
        if looks and i % (len(looks) + 1) == 0:
            start = looks[i % len(looks)]
            assert kept.text_from(channel, start) == joined.text(channel)[start:]
    for channel in Channel:
        assert kept.text_from(channel, 0) == joined.text(channel) == kept.text(channel)


@given(DELTAS, st.lists(st.sampled_from(["add", "extend", "part", "text", "text_from"]), min_size=1, max_size=8))
def test_the_size_of_a_text_is_its_length_whatever_was_read_of_it(deltas, steps):
    """``Transcript.size`` (render's turns between reasoning and answer) against the text,
    stored and read in every way."""
    transcript, texts = Transcript(), {c: "" for c in Channel}
    for i, (channel, text) in enumerate(deltas):
        step = steps[i % len(steps)]
        if step == "extend":
            transcript.extend(channel, [text, text])
            texts[channel] += text * 2
        elif step == "part":
            transcript.part(Part(channel))
            texts[channel] += "\n\n" if texts[channel] else ""
        else:
            transcript.add(Delta(channel, text))
            texts[channel] += text
            if step == "text":
                transcript.text(channel)
            elif step == "text_from":
                transcript.text_from(channel, i)
        assert transcript.size(channel) == len(texts[channel])
    for channel in Channel:
        assert transcript.size(channel) == len(transcript.text(channel)) == len(texts[channel])


def test_the_text_read_after_every_delta_stays_the_text():
    """A look after every delta (render --interval 0): blocks of blocks, the same text."""
    transcript, text = Transcript(), ""
    for i in range(3000):
        piece = f"{i} é"
        transcript.add(Delta(Channel.ANSWER, piece))
        assert transcript.text_from(Channel.ANSWER, len(text)) == piece
        text += piece
    assert len(transcript.pieces[Channel.ANSWER]) <= Transcript._BLOCK + 1
    assert transcript.text_from(Channel.ANSWER, 5) == text[5:]
    assert transcript.text(Channel.ANSWER) == text


@given(st.lists(st.text(alphabet=st.sampled_from('a"\\, é\n\t\x00\u2028{}[]'), max_size=8), min_size=1, max_size=30),
       st.sampled_from(list(Channel)))
def test_a_reads_deltas_are_written_as_each_record_alone(texts, channel):
    """normalize writes one channel's deltas with one dumps and one replace: the same bytes
    as each record's own line."""
    from sse_tool.cli.normalize import _Writer

    sent = []
    out = type("Out", (), {"send": lambda self, data: sent.append(data)})()
    writer = _Writer(out, aggregate=False, strict=False)
    records = [Delta(channel, t) for t in texts]
    writer.send(records)
    assert sent == [b"".join(dumps(to_record(r)) for r in records)]
    assert writer.refused is (channel is Channel.REFUSAL)
