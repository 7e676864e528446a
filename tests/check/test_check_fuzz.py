"""Property tests of the checker: any bytes give findings or a typed error (never anything
else), the findings of any stream do not depend on its chunking, and a prefix of a stream
gives nothing beyond its findings but the truncation ones."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sse_tool.check import Checker, check
from sse_tool.errors import BadInput

PIECES = [
    b"data: ", b"data:", b"event: ", b"id: 1", b"id: ", b"retry: 10", b": ping", b"date: x", b"\n", b"\r\n",
    b"\r", b"\n\n", b"{", b"}", b'{"choices":[{"index":0,"delta":{"content":"a"}}]}', b"[DONE]",
    b'{"type":"message_start","message":{}}', b'{"candidates":[{"finishReason":"STOP"}]}', b"\xc3\xa9",
    b"\xe2\x82", b"\xff", b"\0", b"\xef\xbb\xbf", b": sse-tool reset", b"[", b"]", b",", b'{"done":true}',
]

streams = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)
settings_ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(chunks, provider="auto"):
    checker = Checker(provider)
    out = []
    for chunk in chunks:
        out += checker.feed(chunk)
    return out + checker.close()


def keys(findings):
    return [(*f.key(), f.line) for f in findings]


@settings_
@given(st.one_of(streams, st.binary(max_size=300)), st.sampled_from(["auto", "openai", "anthropic", "gemini"]))
def test_any_bytes_give_findings_or_bad_input(data, provider):
    try:
        run([data], provider)
    except BadInput:
        pass


@settings_
@given(streams, st.lists(st.integers(min_value=0, max_value=2000), max_size=6))
def test_the_findings_do_not_depend_on_the_chunking(data, cuts):
    try:
        whole = keys(check(data))
    except BadInput:
        return
    points = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]
    assert keys(run(chunks)) == whole


@settings_
@given(st.one_of(streams, st.binary(max_size=300)), st.sampled_from(["auto", "openai", "anthropic"]))
@example(data=b'data: {"a":1}\n', provider="auto")
def test_every_finding_names_a_line_the_input_has_and_the_byte_s_own_line(data, provider):
    # (a finding at the end of the input is on its last line, not on one after its line end)
    try:
        found = run([data], provider)
    except BadInput:
        return
    lines = max(1, data.count(b"\n") + (not data.endswith(b"\n")))
    for f in found:
        at = min(f.offset, len(data) - 1) if data else 0
        assert 1 <= f.line <= lines and f.line == data.count(b"\n", 0, at) + 1, f


@settings_
@given(streams, st.integers(min_value=0, max_value=2000))
@example(data=b'{"done":true}data: data: data: data: data: data: data: data: \xff\n', cut=62)
@example(data=b': sse-tool resetdata: data: data: data: data: data: \n\n{', cut=54)  # a marker line, then NDJSON
def test_a_prefix_adds_only_truncation_findings(data, cut):
    try:
        found = check(data)
        prefix = check(data[:cut])
    except BadInput:
        return
    whole = {f.key() for f in found}
    # A finding about bytes belongs to the event that completes after them; in a prefix that
    # event may be the cut one, counted differently: the same finding at the same byte.
    placed = {(f.rule.id, f.offset, f.message) for f in found}
    # (A prefix may end before the event that names the dialect, a note about the cut input
    # rather than the stream: real streams name it in their first event.)
    extra = [f for f in prefix if f.key() not in whole and (f.rule.id, f.offset, f.message) not in placed
             and f.rule.id != "stream.unknown-provider"]
    assert all(f.rule.truncation for f in extra), extra


# --- payloads of any shape, for each dialect ---------------------------------------------

FIELDS = [
    "type", "index", "item_id", "output_index", "content_index", "summary_index", "delta", "text", "error",
    "message", "choices", "id", "object", "finish_reason", "tool_calls", "function", "arguments", "name",
    "candidates", "finishReason", "usageMetadata", "totalTokenCount", "content_block", "partial_json",
    "done", "answer", "state", "sequence_number", "item", "part", "usage", "code", "status",
]
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from(["", "a", "{", "msg_1", "STOP"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(FIELDS), inner, max_size=5)),
    max_leaves=12,
)
TYPES = ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
         "message_stop", "error", "response.created", "response.output_item.added", "response.output_text.delta",
         "response.output_text.done", "response.content_part.added", "response.completed", "content-start",
         "content-delta", "content-end", "tool-call-start", "tool-call-end", "message-end", "message-start"]
payloads = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6).flatmap(
    lambda d: st.sampled_from(TYPES).map(lambda t: {**d, "type": t}) | st.just(d))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["openai", "openai-responses", "anthropic", "gemini", "vertex-search", "ollama", "cohere"]),
       st.lists(st.tuples(st.sampled_from(["message", "error", "content_block_delta"]), payloads), max_size=12))
def test_payloads_of_any_shape_give_findings_never_a_crash(provider, events):
    import orjson

    data = b"".join(b"event: %s\ndata: %s\n\n" % (name.encode(), orjson.dumps(p)) for name, p in events)
    run([data], provider)
    run([data[i:i + 7] for i in range(0, len(data), 7)], provider)


def test_a_responses_event_whose_type_is_not_a_string_is_bad_input_with_its_offset():
    import pytest

    from ..support import read_records

    with pytest.raises(BadInput, match="'type' must be a string, not an array .at byte 49"):
        read_records([b'data: {"type":"response.created","response":{}}\n\ndata: {"type":[]}\n\n'],
                     "openai-responses")
    findings = check(b'data: {"type":"response.created","response":{}}\n\ndata: {"type":[]}\n\n', "openai-responses")
    assert "stream.wrong-type" in [f.rule.id for f in findings]
