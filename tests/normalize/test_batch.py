"""The batch readers (``sse_tool/batch.py``) give what reading each item alone gives.

normalize reads ``frame``'s records of a whole chunk at once where it can: the adapter's
common delta event matched inside the records' strings (``frame_deltas``); each other
record is read alone, its plain event and data parsed once. The reference is
``RecordReader(fast=False)``, which reads every record with ``load_event`` and every event
with ``Normalizer.feed``: the same records, or the same bad input at the same offset, with
the good records before it. A first chunk of one line lets the rest arrive as one batch
with the provider already known (the first batch of a stream is read item by item).
"""

from __future__ import annotations

from contextlib import suppress

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_tool import batch
from sse_tool.model import Meta

from ..support import stream_files
from .test_every_cut_normalize import cuts_for
from .test_fast_paths import frame_records, outcome

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]
#: frame's records up to this size are also cut in two at every byte
SMALL = 3000


def first_end(data: bytes) -> int:
    """Where the first event ends: its blank line in SSE, else the first line's end."""
    blank = data.find(b"\n\n") if data[:1] != b"{" else -1
    return blank + 2 if blank >= 0 else data.find(b"\n") + 1


def chunkings(data: bytes) -> list[list[bytes]]:
    """The first event alone then the rest (one batch), and runs of a few sizes."""
    first = first_end(data)
    out = [[data], [data[:first], data[first:]]]
    for size in (1, 7, 64, 4096):
        out.append([data[i:i + size] for i in range(0, len(data), size)])
    return out


def assert_same(data: bytes, **options) -> None:
    for chunks in chunkings(data):
        assert outcome(chunks, True, **options) == outcome(chunks, False, **options), [len(c) for c in chunks]


@pytest.mark.parametrize("path", FILES)
def test_frames_records_of_every_fixture_read_the_same_in_batches(path):
    data = frame_records(path.read_bytes())
    if not data:
        return
    assert_same(data)
    if len(data) <= SMALL:
        for cut in range(1, len(data)):
            chunks = [data[:cut], data[cut:]]
            assert outcome(chunks, True) == outcome(chunks, False), f"cut at byte {cut}"
    else:
        for cut in cuts_for(data)[::7]:
            chunks = [data[:cut], data[cut:]]
            assert outcome(chunks, True) == outcome(chunks, False), f"cut at byte {cut}"


@pytest.mark.parametrize("path", [p for p in FILES if p.values[0].suffix == ".sse"])
def test_the_providers_bytes_read_the_same_in_batches(path):
    data = path.read_bytes()
    assert_same(data)
    first = first_end(data)
    for cut in cuts_for(data) if len(data) > SMALL else range(first, len(data)):
        chunks = [data[:first], data[first:cut], data[cut:]]
        assert outcome(chunks, True) == outcome(chunks, False), f"cut at byte {cut}"


def test_the_fixtures_reach_the_batch_reader(monkeypatch):
    """The tests above read real streams with the batch readers, not only item by item
    (most recorded Anthropic deltas are padded with spaces, which only the per-item path
    reads: the samples' are not), the raw bytes and frame's records, of each provider
    that has a batch path."""
    read: dict = {}

    def counting(reader):
        def count(items, *args):
            result = reader(items, *args)
            key = (reader.__name__, tuple(args[1]))  # the adapter's keys
            read[key] = read.get(key, 0) + (result is not None and sum(x is not None for x in result))
            return result
        return count

    monkeypatch.setattr("sse_tool.pipeline.frame_deltas", counting(batch.frame_deltas))
    monkeypatch.setattr("sse_tool.pipeline.quick_records", counting(batch.quick_records))
    for path in stream_files():
        for data in (path.read_bytes(), frame_records(path.read_bytes())):
            if data:
                first = first_end(data)
                outcome([data[:first], data[first:]], True)
    for reader in ("frame_deltas", "quick_records"):
        assert read[(reader, (b"text", b"thinking"))] > 20
        assert read[(reader, (b"content",))] > 20  # OpenAI chat
        assert read[(reader, (b"output_text",))] > 200  # OpenAI Responses


# -- hostile lines ------------------------------------------------------------------------

TEXT = st.text(alphabet=st.sampled_from('ab "\\/é\u2028😀\n\t\x00\x7f{}[],:'), max_size=6)


def line(record) -> bytes:
    return orjson.dumps(record)


def anthropic_delta(text: str, kind: str = "text", index: int = 0) -> str:
    return orjson.dumps({"type": "content_block_delta", "index": index,
                         "delta": {"type": f"{kind}_delta", kind: text}}).decode()


def hand_escaped(data: str, which: str) -> str:
    """The same JSON written another way: a character as a \\u escape, a slash escaped."""
    return data.replace(which, "\\u%04x" % ord(which)) if which in data else data.replace("/", "\\/")


@st.composite
def anthropic_lines(draw) -> bytes:
    text, kind = draw(TEXT), draw(st.sampled_from(["text", "thinking"]))
    data = anthropic_delta(text, kind, draw(st.sampled_from([0, 1, 12])))
    event = draw(st.sampled_from(["content_block_delta", "message", "é", 'a"b', "", "error"]))
    choice = draw(st.integers(0, 15))
    if choice <= 4:
        return line({"event": event, "data": data})
    if choice == 5:  # extra keys, another key order, spaces
        return draw(st.sampled_from([
            line({"event": event, "data": data, "id": "3"}), line({"data": data, "event": event}),
            line({"event": event, "data": data, "retry": 5}), b'{"event": "x", "data": ' + line(data) + b"}",
            line({"event": event, "data": data[:-1], "offset": 5, "end": 9}),  # frame --offsets
        ]))
    if choice == 6:  # escapes written otherwise, inside the data or in the record's string
        inner = hand_escaped(data, draw(st.sampled_from(['"', "é", "a", "t"])))
        outer = line({"event": event, "data": inner})
        return outer.replace(b'\\"', b"\\u0022", draw(st.integers(0, 3)))
    if choice == 7:  # not a string, or frame --json's parsed data
        return line({"event": event, "data": draw(st.sampled_from([5, None, [], orjson.loads(data)]))})
    if choice == 8:  # comments and markers
        return draw(st.sampled_from([b'{"comment":"x"}', b": sse-tool reset", b": sse-tool note fetch: hi",
                                     b'{"comment":"sse-tool reset"}', b": not a marker"]))
    if choice == 9:  # invalid UTF-8, a raw control character, a lone backslash in the line
        raw = line({"event": event, "data": data})
        at = draw(st.integers(0, len(raw)))
        return raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x01", b"\\"])) + raw[at:]
    if choice == 10:  # broken JSON: the record's, or its data's
        raw = line({"event": event, "data": data})
        return draw(st.sampled_from([raw[:-1], raw[:-3] + b'"}', line({"event": event, "data": data[:-1]})]))
    if choice == 11:  # two records on a line, a line in the data, an empty text
        return draw(st.sampled_from([
            line({"event": event, "data": data}) + b"," + line({"event": event, "data": data}),
            line({"event": event, "data": data + "\n" + data}), line({"event": event, "data": anthropic_delta("")}),
        ]))
    if choice == 12:  # lone surrogates and bad escapes inside the text
        bad = draw(st.sampled_from(["\\ud800", "\\x", "\\", '\\"']))
        return line({"event": event, "data": data.replace('":"', '":"' + bad, 1)})
    return line({"event": "content_block_delta", "data": draw(st.sampled_from([
        '{"type":"ping"}', '{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
        '{"type":"message_stop"}', '{"type":"content_block_stop","index":0}', "[DONE]", "",
        '{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}',
    ]))})


ANTHROPIC_HEAD = [
    line({"event": "message_start", "data": '{"type":"message_start","message":{"model":"m"}}'}),
    line({"event": "content_block_start",
          "data": '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'}),
]
ANTHROPIC_TAIL = line({"event": "message_stop", "data": '{"type":"message_stop"}'})


@st.composite
def openai_lines(draw) -> bytes:
    content = draw(TEXT)
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": draw(st.sampled_from(["m", "m", "other"])),
             "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}
    data = orjson.dumps(chunk).decode()
    event = draw(st.sampled_from(["message", "message", "error", "é"]))
    choice = draw(st.integers(0, 8))
    if choice <= 3:
        return line({"event": event, "data": data})
    if choice == 4:
        return draw(st.sampled_from([line({"event": event, "data": data, "id": "1"}),
                                     line({"event": event, "data": data[:-1], "offset": 3})]))
    if choice == 5:
        raw = line({"event": event, "data": data})
        return draw(st.sampled_from([raw[:-2], raw + b"," + raw, raw.replace(b"c", b"\xff", 1),
                                     line({"event": event, "data": 5})]))
    if choice == 6:
        return draw(st.sampled_from([b": sse-tool reset", b'{"comment":"x"}']))
    if choice == 7:
        return line({"event": event, "data": hand_escaped(data, draw(st.sampled_from(['"', "a"])))})
    return line({"event": "message", "data": draw(st.sampled_from(["[DONE]", '{"choices":[]}', data[:-1]]))})


OPENAI_HEAD = [line({"event": "message", "data": '{"model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}'})]
OPENAI_TAIL = line({"event": "message", "data": "[DONE]"})


def assert_batches_read_the_same(head: list[bytes], lines: list[bytes], tail: bytes, cut: int) -> None:
    body = b"".join(x + b"\n" for x in [*lines, tail])
    start = b"".join(x + b"\n" for x in head)
    data = start + body
    for think_tags in ("auto", "off"):
        for chunks in ([start, body], [data], [data[:len(start) + cut], data[len(start) + cut:]]):
            fast = outcome(chunks, True, think_tags=think_tags)
            assert fast == outcome(chunks, False, think_tags=think_tags), chunks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(anthropic_lines(), min_size=1, max_size=12), st.integers(0, 400))
def test_hostile_frame_records_of_anthropic_read_the_same_in_batches(lines, cut):
    assert_batches_read_the_same(ANTHROPIC_HEAD, lines, ANTHROPIC_TAIL, cut)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(openai_lines(), min_size=1, max_size=12), st.integers(0, 400))
def test_hostile_frame_records_of_openai_read_the_same_in_batches(lines, cut):
    assert_batches_read_the_same(OPENAI_HEAD, lines, OPENAI_TAIL, cut)


@pytest.mark.parametrize("lines", [
    # good records, then one no JSON reader takes: the good ones first, then the error
    [anthropic_delta("a"), anthropic_delta("b")],
    [anthropic_delta("<think>a"), anthropic_delta("b</think>c")],
])
def test_a_bad_line_mid_batch_comes_after_the_good_records(lines):
    records = [line({"event": "content_block_delta", "data": d}) for d in lines]
    body = b"".join(x + b"\n" for x in [*records, b'{"event":"x","data":', *records])
    head = b"".join(x + b"\n" for x in ANTHROPIC_HEAD)
    fast = outcome([head, body], True)
    assert fast == outcome([head, body], False)
    good, what, _, offset = fast
    assert what == "bad input" and offset == len(head) + len(b"".join(x + b"\n" for x in records))
    assert good[-1].text in ("b", "c")


DELTA = line({"event": "content_block_delta", "data": anthropic_delta("x")})


@pytest.mark.parametrize("lines", [
    # lines that are no record each, yet joined make as many records as lines
    [b'{"event":"a"', b'"data":"b"}', DELTA + b"," + DELTA],
    [DELTA + b"," + DELTA, b'{"event":"a"', b'"data":"b"}'],
    [b'{"event":"a","data":"b"', b"}", DELTA + b"," + DELTA],
    [DELTA[:-1], b'}', DELTA],
])
def test_records_over_two_lines_are_not_read_as_one(lines):
    assert_batches_read_the_same(ANTHROPIC_HEAD, [DELTA, *lines, DELTA], ANTHROPIC_TAIL, 0)
    assert_batches_read_the_same(OPENAI_HEAD, lines, OPENAI_TAIL, 0)


@pytest.mark.parametrize("event", [b"a\x01b", b"a\\qb", b"a\\u00e9b", b"a\xffb", b"a\xc3\xa9b", b"a\\"])
def test_odd_event_names_before_a_delta_read_the_same_in_batches(event):
    odd = DELTA.replace(b"content_block_delta", event, 1)
    assert_batches_read_the_same(ANTHROPIC_HEAD, [DELTA, odd, DELTA], ANTHROPIC_TAIL, 0)


def delta_items(texts: list[str]) -> list:
    """frame's records of Anthropic's delta event for ``texts``, as the framer's items."""
    return [type("Item", (), {"data": line({"event": "content_block_delta", "data": anthropic_delta(text)})})()
            for text in texts]


@pytest.mark.parametrize("text", ['a"b', "\\", "é\u2028", "\n", "\\u0041", "😀", '\\"', '\\\\"', '"\\',
                                  '\\\\', '""', "\t\x01", "\\n"])
def test_a_text_escaped_twice_is_read_back_once(text):
    from sse_tool.providers.anthropic import Anthropic

    ready = batch.frame_deltas(delta_items([text, text]), *Anthropic.quick_lines)
    assert ready is not None and [d.text for d in ready] == [text, text]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from('\\"n/ua0\n\té\u2028\U0001f600\x7f'), max_size=8)
                | st.text(), min_size=2, max_size=6))
def test_any_texts_escaped_twice_are_read_back_once(texts):
    from sse_tool.providers.anthropic import Anthropic

    ready = batch.frame_deltas(delta_items(texts), *Anthropic.quick_lines)
    assert ready is not None and [d and d.text for d in ready] == [text or None for text in texts]


# -- OpenAI's lines, whose batch path follows the model named before ----------------------

def openai_chunk(text="x", model="m") -> dict:
    """A chunk of answer text in the layout OpenAI writes, which a batch reads."""
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1735689600, "model": model,
            "service_tier": "default", "system_fingerprint": "fp_1",
            "choices": [{"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}],
            "usage": None, "obfuscation": "Ab1"}


def _delta(delta: dict):
    return lambda chunk: chunk["choices"][0].update(delta=delta)


def _choice(**members):
    return lambda chunk: chunk["choices"][0].update(members)


def _member(key: str, value):
    return lambda chunk: chunk.update({key: value})


def _without(*keys: str):
    def change(chunk):
        for key in keys:
            (chunk if key in chunk else chunk["choices"][0]).pop(key)
    return change


def _reordered(chunk):
    items = list(chunk.items())
    chunk.clear()
    chunk.update(items[1::2] + items[::2])


def _choices(choices):
    return lambda chunk: chunk.update(choices=choices(chunk["choices"][0]))


#: one change to a chunk of OpenAI's layout each: what ``quick`` leaves to ``feed``, what
#: it reads that other servers write (members left out, a role), and other layouts
CHANGES = [
    _delta({"role": "assistant", "content": "t"}), _delta({"content": "t", "role": "assistant"}),
    _delta({"role": "tool", "content": "t"}), _delta({"role": None, "content": "t"}), _delta({"content": None}),
    _delta({"content": ""}), _delta({"content": "t", "refusal": None}), _delta({"refusal": "no"}),
    _delta({"content": "t", "reasoning_content": "r"}), _delta({"content": "t", "reasoning_content": None}),
    _delta({"reasoning": "r"}), _delta({"content": "t", "reasoning": "r"}),
    _delta({"content": "t", "reasoning_details": [{"type": "reasoning.text", "text": "r"}]}),
    _delta({"content": "t", "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]}),
    _delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]}),
    _delta({"content": [{"type": "text", "text": "t"}]}), _delta({"content": 5}), _delta({}), _delta([]),
    _delta({"content": "<think>a</think>b"}),
    _choice(finish_reason="stop"), _choice(finish_reason=3), _choice(index=1), _choice(index=None),
    _choice(logprobs={"content": []}), _choice(native_finish_reason=None), _choice(delta=None),
    _member("usage", {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}), _member("usage", "many"),
    _member("usage", {}), _member("x_groq", {"usage": {"total_tokens": 3}}), _member("x_groq", None),
    _member("error", {"message": "boom"}), _member("error", None), _member("error", ""),
    _member("created", 10 ** 19), _member("created", -1), _member("created", 1.5), _member("created", None),
    _member("id", 'a"b'), _member("id", "é"), _member("id", "a\tb"), _member("id", None), _member("id", 5),
    _member("service_tier", None), _member("system_fingerprint", None), _member("obfuscation", 5),
    _member("object", "chat.completion"), _member("model", None), _member("model", 7), _member("model", "other"),
    _member("model", "M"), _member("provider", "P"),
    _without("logprobs"), _without("index"), _without("finish_reason"), _without("service_tier"),
    _without("system_fingerprint"), _without("obfuscation", "usage"), _without("service_tier", "system_fingerprint",
                                                                                "obfuscation", "usage", "logprobs"),
    _without("model"), _without("id"), _without("created"), _without("object"), _reordered,
    _choices(lambda c: []), _choices(lambda c: [c, {**c, "index": 1}]), _choices(lambda c: ["x"]),
    _choices(lambda c: [dict(reversed(list(c.items())))]), _choices(lambda c: c),
    lambda chunk: (chunk.clear(), chunk.update(error={"message": "boom", "type": "server_error"})),
]


@st.composite
def openai_events(draw) -> tuple[str | None, bytes]:
    """(event name, data) of a hostile chunk: OpenAI's layout, changed a little or much
    (most as OpenAI writes them: a batch reads those)."""
    chunk = openai_chunk(draw(TEXT), draw(st.sampled_from(["m"] * 6 + ["other", "é/x", 'q"x', "a\\b"])))
    for change in draw(st.lists(st.sampled_from(CHANGES), max_size=2)) if draw(st.booleans()) else ():
        with suppress(LookupError, AttributeError, TypeError):  # (one that no longer applies: skipped)
            change(chunk)
    data = orjson.dumps(chunk)
    how = draw(st.integers(0, 15))
    if how == 0:
        data = hand_escaped(data.decode(), draw(st.sampled_from(['"', "m", "a", "/"]))).encode()
    elif how == 1:
        data = draw(st.sampled_from([b"[DONE]", b"", data[:-1], data + b" ", b"5", data.replace(b":", b": ", 3)]))
    elif how == 2:  # a bad escape, a raw control character or invalid UTF-8 in the text or elsewhere
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\\x", b"\\ud800", b"\x01", b"\xff", b"\xc3"])) + data[at:]
    event = draw(st.sampled_from([None, None, None, "message", "error", "delta", "é"]))
    return event, data


def openai_stream(events: list[tuple[str | None, bytes]], model: str = "m") -> tuple[bytes, bytes]:
    """The SSE of a head naming ``model`` and then ``events`` and [DONE], as (head, rest)."""
    def block(event, data):
        return (b"event: " + event.encode() + b"\n" if event is not None else b"") + b"data: " + data + b"\n\n"

    head = block(None, orjson.dumps({**openai_chunk("", model), "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}))
    return head, b"".join(block(*e) for e in events) + block(None, b"[DONE]")


def assert_both_forms_read_the_same(head: bytes, body: bytes, cut: int) -> None:
    """The SSE, and frame's records of it, read the same fast and slow, in a few chunkings."""
    data = head + body
    records = frame_records(data)
    start = first_end(records)
    for first, whole in ((len(head), data), (start, records)):
        if not whole:
            continue
        at = min(first + cut, len(whole))
        for think_tags in ("auto", "off"):
            for chunks in ([whole[:first], whole[first:]], [whole], [whole[:first], whole[first:at], whole[at:]]):
                fast = outcome(chunks, True, think_tags=think_tags)
                assert fast == outcome(chunks, False, think_tags=think_tags), chunks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(openai_events(), min_size=1, max_size=12), st.integers(0, 600))
def test_hostile_openai_chunks_read_the_same_in_batches(events, cut):
    assert_both_forms_read_the_same(*openai_stream(events), cut)


M_X = orjson.dumps(openai_chunk("x"))
OTHER_Y = orjson.dumps(openai_chunk("y", "other"))


@pytest.mark.parametrize("events, models", [
    # the model changes mid-batch: a chunk naming the model before is then the feed's (a
    # model record, then its text), and back
    ([M_X, OTHER_Y, M_X, M_X, OTHER_Y, OTHER_Y], ["m", "other", "m", "other"]),
    ([OTHER_Y, M_X], ["m", "other", "m"]),
    ([M_X, orjson.dumps({**openai_chunk("u", "other"), "usage": {"total_tokens": 3}}), M_X], ["m", "other", "m"]),
])
def test_a_change_of_model_mid_batch_reads_the_same(events, models):
    head, body = openai_stream([(None, e) for e in events])
    assert_both_forms_read_the_same(head, body, 0)
    for data, first in ((head + body, len(head)), (frame_records(head + body), None)):
        first = first or first_end(data)
        records = outcome([data[:first], data[first:]], True)
        assert [r.value for r in records if type(r) is Meta] == models


def test_a_reset_mid_batch_reads_the_same():
    """After a retry's reset the adapter starts over: no model named yet."""
    head, body = openai_stream([(None, M_X)] * 3)
    lines = frame_records(head + body).split(b"\n")
    data = b"\n".join([*lines[:2], b'{"comment":"sse-tool reset"}', *lines[2:]])
    start = first_end(data)
    assert outcome([data[:start], data[start:]], True) == outcome([data[:start], data[start:]], False)


RESPONSES_DELTA = {"type": "response.output_text.delta", "sequence_number": 5, "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "delta": "x", "logprobs": [], "obfuscation": "Ab1"}


@st.composite
def responses_events(draw) -> tuple[str | None, bytes]:
    """(event name, data) of a hostile Responses event: the text delta's layout, changed."""
    event = {**RESPONSES_DELTA, "delta": draw(TEXT)}
    what = draw(st.integers(0, 7))
    if what == 0:
        event["type"] = draw(st.sampled_from(["response.refusal.delta", "response.reasoning_text.delta",
                                              "response.reasoning_summary_text.delta", "response.completed"]))
    elif what == 1:
        event.update(draw(st.sampled_from([{"delta": 5}, {"delta": None}, {"logprobs": [{"token": "x"}]},
                                           {"item_id": None}, {"sequence_number": 10 ** 19}, {"extra": 1}])))
    elif what == 2:
        event = {key: event[key] for key in draw(st.permutations(list(event)))}
    elif what == 3:
        for key in draw(st.lists(st.sampled_from(["sequence_number", "logprobs", "obfuscation", "item_id"]))):
            event.pop(key, None)
    data = orjson.dumps(event)
    if what == 4:  # the same key twice: the last one counts
        data = data[:-1] + draw(st.sampled_from([b',"delta":"z"}', b',"type":"response.completed"}', b',"delta":5}']))
    elif what == 5:
        data = hand_escaped(data.decode(), draw(st.sampled_from(['"', "e", "/"]))).encode()
    return draw(st.sampled_from([None, "response.output_text.delta", "error"])), data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(responses_events(), min_size=1, max_size=10), st.integers(0, 400))
def test_hostile_responses_events_read_the_same_in_batches(events, cut):
    def block(event, data):
        return (b"event: " + event.encode() + b"\n" if event is not None else b"") + b"data: " + data + b"\n\n"

    head = block(None, b'{"type":"response.created","response":{"model":"m","status":"in_progress"}}')
    tail = block(None, b'{"type":"response.completed","response":{"model":"m","status":"completed"}}')
    assert_both_forms_read_the_same(head, b"".join(block(*e) for e in events) + tail, cut)


@pytest.mark.parametrize("change", range(len(CHANGES)))
def test_each_change_to_openais_chunk_reads_the_same_in_batches(change):
    """Each change alone, in a batch among chunks as OpenAI writes them."""
    chunk = openai_chunk("y")
    CHANGES[change](chunk)
    odd = (None, orjson.dumps(chunk))
    head, body = openai_stream([(None, M_X), odd, (None, M_X), odd, (None, M_X)])
    for cut in (0, len(body) // 2):
        assert_both_forms_read_the_same(head, body, cut)


@pytest.mark.parametrize("event", ["error", "message", "é", "a\\b"])
def test_an_event_named_otherwise_reads_the_same_in_batches(event):
    """``quick`` leaves an ``error`` event to ``feed`` whatever it holds."""
    head, body = openai_stream([(None, M_X), (event, M_X), (None, M_X)])
    assert_both_forms_read_the_same(head, body, 0)
