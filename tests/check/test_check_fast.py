"""The checker's batch paths give exactly what it says of each event alone.

``Checker(fast=False)`` judges every event by itself: its framing (``Blocks.event``), its
JSON, the adapter's ``feed`` and the rules' ``feed``. The default judges the framing of a
batch of events of the usual shape at once (``Blocks.run``) and skips the runs of the
dialect's common delta event that its rules' ``quick`` clears (``check/quick.py``). For
every fixture and sample, as recorded and with lines the batch paths must judge (an
unknown field, a comment, an id in every event), cut in two anywhere and fed in several
chunk sizes, both give the same findings (rule, offset, event, message, line), or the
same bad input; so do streams built from the delta events the fast paths take and the
ones next to them that they must refuse.
"""

from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_tool.check import Checker, report
from sse_tool.check.quick import STRING
from sse_tool.errors import BadInput

from ..normalize.test_every_cut_normalize import cuts_for
from ..support import stream_files

FILES = [pytest.param(p, id=p.relative_to(p.parent.parent).as_posix()) for p in stream_files()]
SIZES = (1, 7, 64, 4096)


def outcome(chunks, fast: bool, provider: str = "auto"):
    return findings_of(Checker(provider, fast=fast), chunks)


def findings_of(checker: Checker, chunks):
    """The findings as tuples, or those before bad input and the error."""
    found = []
    try:
        for chunk in chunks:
            found += checker.feed(chunk)
        found += checker.close()
    except BadInput as exc:
        return [tuple(f) for f in found], "bad input", str(exc), exc.offset
    return [tuple(f) for f in found]


def assert_same(data: bytes, provider: str = "auto", cuts=None) -> None:
    assert outcome([data], True, provider) == outcome([data], False, provider)
    for size in SIZES:
        if size == 1 and len(data) > 20_000:
            continue
        chunks = [data[i:i + size] for i in range(0, len(data), size)]
        assert outcome(chunks, True, provider) == outcome(chunks, False, provider), f"chunks of {size}"
    for cut in cuts_for(data) if cuts is None else cuts:
        chunks = [data[:cut], data[cut:]]
        assert outcome(chunks, True, provider) == outcome(chunks, False, provider), f"cut at byte {cut}"


def with_lines(data: bytes, line: bytes) -> bytes:
    """The stream with ``line`` before the first field of every event (as check_bench's
    corpus with a finding in every event)."""
    for field in (b"data: ", b"event: "):
        data = data.replace(b"\n\n" + field, b"\n\n" + line + b"\n" + field)
    return data


@pytest.mark.parametrize("path", FILES)
def test_a_recorded_stream_cut_anywhere_gives_the_same_findings_fast_and_slow(path):
    assert_same(path.read_bytes())


@pytest.mark.parametrize("line", [b"date: x", b": a comment", b"id: 7", b"data:no space", b"retry: 5"])
@pytest.mark.parametrize("path", [p for p in FILES if p.values[0].suffix == ".sse"])
def test_a_stream_with_a_line_to_judge_in_every_event_gives_the_same_findings_fast_and_slow(path, line):
    data = with_lines(path.read_bytes(), line)
    assert_same(data, cuts=cuts_for(data)[::7])


# --- the delta events the fast paths take, and their neighbours ---------------------------

def anthropic_delta(index: int, kind: str, text: str, raw: str | None = None) -> str:
    literal = raw if raw is not None else orjson.dumps(text).decode()
    return ('event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,"delta":'
            '{"type":"%s_delta","%s":%s}}\n\n' % (index, kind, kind, literal))


def anthropic_event(kind: str, payload: dict, name: str | None = None) -> str:
    return f"event: {name or kind}\ndata: {orjson.dumps({'type': kind, **payload}).decode()}\n\n"


ANTHROPIC = [
    anthropic_event("message_start", {"message": {"id": "m", "model": "c", "usage": {}}}),
    anthropic_event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    anthropic_event("content_block_start", {"index": 1, "content_block": {"type": "thinking", "thinking": ""}}),
    anthropic_event("content_block_start", {"index": 2, "content_block": {"type": "tool_use", "id": "t", "name": "f"}}),
    anthropic_event("content_block_start", {"index": 3, "content_block": {"type": "other"}}),
    anthropic_event("content_block_stop", {"index": 0}),
    anthropic_event("content_block_stop", {"index": 1}),
    anthropic_event("message_delta", {"delta": {"stop_reason": "end_turn"}}),
    anthropic_event("message_stop", {}),
    anthropic_event("ping", {}),
    anthropic_delta(0, "text", "hi", raw='"h\\u00e9 \\ud83d\\ude00"'),
    anthropic_delta(0, "text", "", raw='"bad \\x escape"'),
    anthropic_delta(0, "text", "", raw='"a lone \\ud800"'),
    anthropic_delta(0, "text", "", raw='"a tab\t"'),
    anthropic_delta(0, "thinking", ""),
    anthropic_delta(7, "text", "to a block never started"),
    anthropic_delta(1, "text", "to a thinking block"),
    anthropic_delta(3, "text", "to a block of another type"),
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unnamed"}}\n\n',
    'event: other\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}\n\n',
    ": keep-alive\n\n",
    "\n",
]


def openai_chunk(content: str = "a", *, id: str = "c1", model: str = "m1", rest: str = ',"usage":null',
                 choice: str = '"logprobs":null,"finish_reason":null') -> str:
    return ('data: {"id":%s,"object":"chat.completion.chunk","created":1,"model":%s,"choices":[{"index":0,'
            '"delta":{"content":%s},%s}]%s}\n\n' % (orjson.dumps(id).decode(), orjson.dumps(model).decode(),
                                                    orjson.dumps(content).decode(), choice, rest))


OPENAI = [
    openai_chunk(""), openai_chunk("text"), openai_chunk("x", id="c2"), openai_chunk("x", model="m2"),
    openai_chunk("x", choice='"logprobs":null,"finish_reason":"stop"'), openai_chunk("x", rest=""),
    openai_chunk("x", rest=',"usage":null,"obfuscation":"abc"'), openai_chunk("\u00e9\U0001F600"),
    openai_chunk("x", rest=',"usage":{"total_tokens":3}'),
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[]}\n\n',
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":1,'
    '"delta":{"content":"b"},"logprobs":null,"finish_reason":null}]}\n\n',
    'event: error\n' + openai_chunk("x"),
    'data: {"error":{"message":"overloaded"}}\n\n',
    "data: [DONE]\n\n",
]

streams = {
    "anthropic": st.lists(st.sampled_from(range(len(ANTHROPIC))), max_size=30),
    "openai": st.lists(st.sampled_from(range(len(OPENAI))), max_size=30),
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["anthropic", "openai"]).flatmap(lambda p: st.tuples(st.just(p), streams[p])),
       st.sampled_from(["auto", "named"]), st.integers(min_value=1, max_value=400))
def test_streams_of_delta_events_and_their_neighbours_give_the_same_findings_fast_and_slow(picked, named, size):
    provider, picks = picked
    events = ANTHROPIC if provider == "anthropic" else OPENAI
    # a stream that starts as the provider's usually does, so that runs of deltas are cleared
    start = [0, 1, 2, 3, 4] if provider == "anthropic" else [1]
    data = "".join(events[i] for i in start + picks).encode()
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    provider = provider if named == "named" else "auto"
    assert outcome(chunks, True, provider) == outcome(chunks, False, provider)


# --- STRING accepts only what a JSON parser reads -----------------------------------------

_STRING = re.compile(STRING)
PIECES = ["a", "\u00e9", "\U0001F600", "\t", "\x00", "\x1f", "\x7f", "\u2028", '"', "\\", "\\\\", '\\"',
          "\\n", "\\t", "\\/", "\\x", "\\u", "\\u00e9", "\\u00E9", "\\u12", "\\ud83d", "\\ude00", "\\uD83D",
          "\\uDE00", "\\udbff\\udfff", "\\ud83d\\u0041", "\\ud800\\ud800", "\ufffd"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
def test_a_string_literal_the_fast_path_matches_is_one_json_reads(text):
    literal = f'"{text}"'
    if _STRING.fullmatch(literal):
        assert isinstance(orjson.loads(literal), str)


def test_the_string_pattern_takes_the_usual_literals():
    for text in ["", "plain", "h\u00e9", "\U0001F600", 'a "quote"', "a\\b", "line\nend", "\x00", "\u2028"]:
        assert _STRING.fullmatch(orjson.dumps(text).decode())
    assert _STRING.fullmatch('"\\ud83d\\ude00 \\u00e9 \\/"')


# --- the findings as --format json writes them --------------------------------------------

def test_json_lines_writes_each_finding_as_its_record():
    data = with_lines((stream_files()[0]).read_bytes(), b"date: x") + b"data: {\n\n\0"
    findings = Checker().feed(data)
    assert len(findings) > 3
    expected = b"".join(orjson.dumps(report.record(f, "x.sse")) + b"\n" for f in findings)
    assert report.json_lines(findings, "x.sse") == expected
