"""Every rule of ``sse-tool check`` against a minimal stream that breaks it and only it, and
the fixed twin of that stream, which breaks nothing at all.

Each case is built from a small correct stream of its dialect with one thing changed, so the
pair shows exactly what the rule is about. Recordings (``fetch --record``) carry the HTTP
rules.
"""

from __future__ import annotations

import base64
import io

import orjson
import pytest

from sse_tool.check import RULES, Checker, check, check_recording
from sse_tool.recording import RecordingWriter

from ..support import bedrock_event

# --- stream builders ---------------------------------------------------------------------


def sse(*events, nl: str = "\n") -> bytes:
    """SSE bytes: a dict is ``data: JSON``, a str is written as given (lines of one block,
    without the blank line), a (name, dict) pair is ``event: name`` + ``data: JSON``."""
    out = []
    for e in events:
        if isinstance(e, tuple):
            name, body = e
            block = f"event: {name}\ndata: {_json(body)}\n"
        elif isinstance(e, dict):
            block = f"data: {_json(body := e)}\n"
        else:
            block = e + "\n" if e else ""
        out.append(block + "\n")
    return "".join(out).replace("\n", nl).encode()


def _json(value) -> str:
    return orjson.dumps(value).decode()


def chunk(delta=None, finish=None, index=0, **extra) -> dict:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}], **extra}


HEAD = chunk({"role": "assistant", "content": ""})
TEXT = chunk({"content": "Hi"})
FINISH = chunk({}, "stop")
DONE = "data: [DONE]"
USAGE = {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": {"total_tokens": 3}}


def chat(*events) -> bytes:
    return sse(*events, DONE)


def call(index=0, id=None, name=None, arguments="", with_index=True) -> dict:
    piece = {"function": {"arguments": arguments}}
    if with_index:
        piece["index"] = index
    if id:
        piece.update(id=id, type="function")
    if name is not None:
        piece["function"]["name"] = name
    return chunk({"tool_calls": [piece]})


TOOLS_END = chunk({}, "tool_calls")


def responses(*changes, drop=(), names=True, first=0, lost=()) -> bytes:
    """A Responses stream of one message; ``changes`` maps an event's position to a new
    payload (or adds one at the end); ``drop`` leaves events out, ``lost`` too but after
    they were numbered (as a proxy that drops them would)."""
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    events = [
        {"type": "response.created", "response": {"id": "r1", "status": "in_progress"}},
        {"type": "response.in_progress", "response": {"id": "r1", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0,
         "part": {"type": "output_text", "text": ""}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi"},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "!"},
        {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "Hi!"},
        {"type": "response.content_part.done", "item_id": "msg_1", "output_index": 0, "content_index": 0},
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "status": "completed"}},
        {"type": "response.completed", "response": {"id": "r1", "status": "completed"}},
    ]
    for position, payload in changes:
        if position is None:
            events.append(payload)
        else:
            events[position] = payload
    events = [e for i, e in enumerate(events) if i not in drop]
    out = []
    for number, e in enumerate(events, first):
        e = {**e, "sequence_number": number}
        if number - first not in lost:
            out.append((e["type"], e) if names else e)
    return sse(*out)


def anthropic(*events) -> bytes:
    return sse(*[(e["type"], e) if isinstance(e, dict) else e for e in events])


START = {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "content": [],
                                              "usage": {"input_tokens": 3, "output_tokens": 1}}}
BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
PING = {"type": "ping"}
TEXT_DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
STOP = {"type": "content_block_stop", "index": 0}
MESSAGE_DELTA = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}
MESSAGE_STOP = {"type": "message_stop"}


def tool_block(partial: str) -> list:
    return [START, {"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": partial}},
            STOP, MESSAGE_DELTA, MESSAGE_STOP]


def gemini(text="Hi", finish=None, total=3) -> dict:
    candidate = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 2, "totalTokenCount": total}}


G1, G2 = gemini("Hi"), gemini("!", "STOP", 4)


def json_array(*elements, close: str = "]") -> bytes:
    return ("[" + ",\r\n".join(_json(e) for e in elements) + close).encode()


def ollama(*lines, tail: str = "") -> bytes:
    return ("".join(_json(line) + "\n" for line in lines) + tail).encode()


O1 = {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": "Hi"}, "done": False}
O_DONE = {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": ""}, "done": True,
          "done_reason": "stop"}


def vertex(state: str, text: str = "") -> dict:
    return {"answer": {"state": state, "answerText": text}, "answerQueryToken": "t"}


def cohere(*events) -> bytes:
    return sse(*[(e["type"], e) if isinstance(e, dict) else e for e in events])


C_START = {"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}}
C_CONTENT = {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}
C_DELTA = {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Hi"}}}}
C_END = {"type": "content-end", "index": 0}
C_MESSAGE_END = {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}


def cohere_tool(arguments: str) -> bytes:
    return cohere(C_START,
                  {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
                      "id": "t1", "type": "function", "function": {"name": "f", "arguments": ""}}}}},
                  {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {
                      "function": {"arguments": arguments}}}}},
                  {"type": "tool-call-end", "index": 0}, C_MESSAGE_END)


def recording(body: bytes, status: int = 200, headers=None) -> bytes:
    if headers is None:
        headers = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
    out = io.StringIO()
    writer = RecordingWriter(out)
    writer.start("2026-01-01T00:00:00Z")
    writer.request("POST", "https://api.example.com/v1/chat/completions", [("content-type", "application/json")], b"{}")
    writer.response("HTTP/1.1", status, "OK" if status == 200 else "Too Many Requests", headers)
    half = len(body) // 2
    writer.chunk(0.1, body[:half])
    writer.chunk(0.2, body[half:])
    writer.end(0.3, "complete" if status == 200 else "http-error")
    return out.getvalue().encode()


OK_CHAT = chat(HEAD, TEXT, FINISH)


def bedrock(*events) -> bytes:
    """A ConverseStream: (name, payload) pairs as event-stream messages."""
    return b"".join(bedrock_event(name, body) for name, body in events)


B_START = ("messageStart", {"role": "assistant"})
B_TEXT = ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}})
B_STOP0 = ("contentBlockStop", {"contentBlockIndex": 0})
B_TOOL = ("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}})
B_INPUT = ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"a": 1}'}}})
B_STOP1 = ("contentBlockStop", {"contentBlockIndex": 1})
B_END = ("messageStop", {"stopReason": "end_turn"})
B_META = ("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 9}})
OK_BEDROCK = bedrock(B_START, B_TEXT, B_STOP0, B_END, B_META)
# InvokeModelWithResponseStream: Anthropic's events, base64 in chunk.bytes
WRAPPED = [("chunk", {"bytes": base64.b64encode(orjson.dumps(e)).decode()}) for e in (
    {"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant", "model": "x",
                                          "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"})]

# --- the cases: rule -> (broken, fixed); a recording when the bytes start with its magic --

CASES = {
    # bytes and framing
    "stream.bom": (b"\xef\xbb\xbf" + OK_CHAT, OK_CHAT),
    "stream.invalid-utf8": (OK_CHAT.replace(b'"Hi"', b'"H\xffi"'), OK_CHAT),
    "stream.nul": (chat(HEAD, 'data: ' + _json(TEXT) + "\n: x\0y", FINISH),
                   chat(HEAD, 'data: ' + _json(TEXT) + "\n: xy", FINISH)),
    "stream.line-over-64k": (chat(HEAD, chunk({"content": "x" * 70_000}), FINISH),
                             chat(HEAD, chunk({"content": "x" * 35_000}), chunk({"content": "x" * 35_000}), FINISH)),
    "stream.line-over-1m": (chat(HEAD, chunk({"content": "x" * 1_100_000}), FINISH),
                            chat(HEAD, *[chunk({"content": "x" * 55_000})] * 20, FINISH)),
    "stream.no-events": (b"\n", OK_CHAT),
    "stream.no-terminal-event": (sse(HEAD, TEXT, FINISH), OK_CHAT),
    "stream.after-terminal": (OK_CHAT + sse(chunk({})), OK_CHAT),
    "stream.data-not-json": (chat(HEAD, "data: hello", TEXT, FINISH), OK_CHAT),
    "stream.done-with-spaces": (sse(HEAD, TEXT, FINISH, "data: [DONE] \t"), OK_CHAT),
    "stream.wrong-type": (chat(HEAD, chunk({"content": 5}), FINISH), OK_CHAT),
    "stream.unknown-provider": (sse("data: hello"), OK_CHAT),
    "ndjson.missing-final-newline": (ollama(O1, O_DONE, tail='{"model": "m"'), ollama(O1, O_DONE)),
    "json-array.unclosed": (json_array(G1, G2, close=""), json_array(G1, G2)),
    "json-array.syntax": (json_array(G1, G2, close=" x]"), json_array(G1, G2)),
    "sse.missing-final-blank-line": (OK_CHAT + b"data: {", OK_CHAT),
    "sse.lone-cr": (OK_CHAT.replace(b"\n", b"\r"), OK_CHAT),
    "sse.mixed-line-ends": (sse(HEAD) + sse(TEXT, FINISH, DONE, nl="\r\n"), OK_CHAT),
    "sse.block-without-data": (chat("retry: 1000", HEAD, TEXT, FINISH),
                               chat("retry: 1000\ndata: " + _json(HEAD), TEXT, FINISH)),
    "sse.comment-only-block": (chat(": ping", HEAD, TEXT, FINISH), chat(": ping\ndata: " + _json(HEAD), TEXT, FINISH)),
    "sse.blank-line-after-id": (chat("id: 1\ndata: " + _json(HEAD), "", TEXT, FINISH),
                                chat("id: 1\ndata: " + _json(HEAD), TEXT, FINISH)),
    "sse.unknown-field": (chat(HEAD, "date: today\ndata: " + _json(TEXT), FINISH), OK_CHAT),
    "sse.data-comment": (chat(HEAD, "data: : keepalive", TEXT, FINISH),
                         chat(HEAD, ": keepalive\ndata: " + _json(TEXT), FINISH)),
    # OpenAI chat
    "chat.chunk-object": (chat(HEAD, TEXT, FINISH, {"id": "c1", "object": "chat.completion.usage", "usage": {"total_tokens": 3}}),
                          chat(HEAD, TEXT, FINISH, USAGE)),
    "chat.id-changed": (chat(HEAD, {**TEXT, "id": "c2"}, FINISH), OK_CHAT),
    "chat.choice-index": (chat(chunk({"role": "assistant"}, index=1), chunk({"content": "Hi"}, index=1),
                               chunk({}, "stop", index=1)), OK_CHAT),
    "chat.tool-call-index": (chat(HEAD, call(1, "call_1", "f"), call(1, arguments="{}"), TOOLS_END),
                             chat(HEAD, call(0, "call_1", "f"), call(0, arguments="{}"), TOOLS_END)),
    "chat.tool-call-no-index": (chat(HEAD, call(id="call_1", name="f", with_index=False),
                                     call(name="", arguments="{}", with_index=False), TOOLS_END),
                                chat(HEAD, call(0, "call_1", "f"), call(0, arguments="{}"), TOOLS_END)),
    "chat.tool-call-start": (chat(HEAD, call(0, "call_1"), call(0, arguments="{}"), TOOLS_END),
                             chat(HEAD, call(0, "call_1", "f"), call(0, arguments="{}"), TOOLS_END)),
    "chat.tool-arguments": (chat(HEAD, call(0, "call_1", "f"), call(0, arguments='{"a":'), TOOLS_END),
                            chat(HEAD, call(0, "call_1", "f"), call(0, arguments='{"a":1}'), TOOLS_END)),
    "chat.finish-reason-repeated": (chat(HEAD, TEXT, FINISH, FINISH), OK_CHAT),
    "chat.delta-after-finish": (chat(HEAD, FINISH, TEXT), OK_CHAT),
    "chat.usage-before-finish": (chat(HEAD, TEXT, USAGE, FINISH), chat(HEAD, TEXT, FINISH, USAGE)),
    "chat.error-shape": (sse(HEAD, TEXT, {"error": "boom"}),
                         sse(HEAD, TEXT, {"error": {"message": "boom", "type": "server_error"}})),
    # OpenAI Responses
    "responses.sequence-number": (responses(first=1), responses()),
    "responses.sequence-gap": (responses(lost=(1,)), responses()),
    "responses.created-first": (responses(drop=(0,)), responses()),
    "responses.item-not-added": (responses(drop=(2,)), responses()),
    "responses.part-not-added": (responses(drop=(3,)), responses()),
    "responses.done-text": (responses((6, {"type": "response.output_text.done", "item_id": "msg_1",
                                           "output_index": 0, "content_index": 0, "text": "Hi?"})), responses()),
    "responses.event-name": (responses().replace(b"event: response.in_progress", b"event: response.progress"),
                             responses()),
    "responses.error-shape": (responses((None, {"type": "error", "error": {"type": "server_error", "code": "x"}}),
                                        drop=range(2, 10)),
                              responses((None, {"type": "error", "error": {"type": "server_error", "code": "x",
                                                                           "message": "boom"}}), drop=range(2, 10))),
    # Anthropic
    "anthropic.message-start": (anthropic(BLOCK, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP),
                                anthropic(START, BLOCK, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP)),
    "anthropic.event-name": (anthropic(START, BLOCK, PING, "data: " + _json(TEXT_DELTA), STOP, MESSAGE_DELTA, MESSAGE_STOP),
                             anthropic(START, BLOCK, PING, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP)),
    "anthropic.block-index": (anthropic(START, {**BLOCK, "index": 1}, {**TEXT_DELTA, "index": 1}, {**STOP, "index": 1},
                                        MESSAGE_DELTA, MESSAGE_STOP),
                              anthropic(START, BLOCK, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP)),
    "anthropic.block-unpaired": (anthropic(START, BLOCK, TEXT_DELTA, STOP, TEXT_DELTA, MESSAGE_DELTA, MESSAGE_STOP),
                                 anthropic(START, BLOCK, TEXT_DELTA, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP)),
    "anthropic.delta-type": (anthropic(START, BLOCK, {**TEXT_DELTA, "delta": {"type": "thinking_delta", "thinking": "Hm"}},
                                       STOP, MESSAGE_DELTA, MESSAGE_STOP),
                             anthropic(START, BLOCK, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP)),
    "anthropic.tool-input-json": (anthropic(*tool_block('{"a":')), anthropic(*tool_block('{"a":1}'))),
    "anthropic.message-delta": (anthropic(START, BLOCK, TEXT_DELTA, STOP, MESSAGE_STOP),
                                anthropic(START, BLOCK, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP)),
    "anthropic.error-shape": (anthropic(START, {"type": "error", "error": "Overloaded"}),
                              anthropic(START, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    # Gemini
    "gemini.non-data-line": (sse(G1, ": ping\ndata: " + _json(G2)), sse(G1, G2)),
    "gemini.after-finish": (sse(G1, G2, gemini("?", total=5)), sse(G1, G2)),
    "gemini.usage-decreasing": (sse(gemini("Hi", total=9), G2), sse(G1, G2)),
    "gemini.error-shape": (sse(G1, {"error": {"message": "boom"}}),
                           sse(G1, {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}})),
    # Vertex AI Search, Ollama, Cohere
    "vertex-search.final-state": (json_array(vertex("STREAMING", "Hi"), vertex("SUCCEEDED"), vertex("STREAMING", "!")),
                                  json_array(vertex("STREAMING", "Hi"), vertex("SUCCEEDED"))),
    "bedrock.message-start": (bedrock(B_TEXT, B_START, B_STOP0, B_END), bedrock(B_START, B_TEXT, B_STOP0, B_END)),
    "bedrock.tool-unpaired": (bedrock(B_START, B_INPUT, B_STOP1, B_END), bedrock(B_START, B_TOOL, B_INPUT, B_STOP1, B_END)),
    "bedrock.tool-input": (bedrock(B_START, B_TOOL, ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {
                               "toolUse": {"input": '{"a": '}}}), B_STOP1, B_END),
                           bedrock(B_START, B_TOOL, B_INPUT, B_STOP1, B_END)),
    "bedrock.after-stop": (bedrock(B_START, B_TEXT, B_END, B_META, B_TEXT), OK_BEDROCK),
    "bedrock.chunk-bytes": (bedrock(("chunk", {"bytes": "not base64!"}), *WRAPPED), bedrock(*WRAPPED)),
    "eventstream.cut": (OK_BEDROCK + bedrock(B_TEXT)[:30], OK_BEDROCK),
    "ollama.line-shape": (ollama(O1, {**O1, "done": "no"}, O_DONE), ollama(O1, O1, O_DONE)),
    "cohere.message-start": (cohere(C_CONTENT, C_DELTA, C_END, C_MESSAGE_END),
                             cohere(C_START, C_CONTENT, C_DELTA, C_END, C_MESSAGE_END)),
    "cohere.event-name": (cohere(C_START, C_CONTENT, ("content-stop", C_DELTA), C_END, C_MESSAGE_END),
                          cohere(C_START, C_CONTENT, C_DELTA, C_END, C_MESSAGE_END)),
    "cohere.block-unpaired": (cohere(C_START, C_CONTENT, C_DELTA, {**C_DELTA, "index": 1}, C_END, C_MESSAGE_END),
                              cohere(C_START, C_CONTENT, C_DELTA, C_DELTA, C_END, C_MESSAGE_END)),
    "cohere.tool-arguments": (cohere_tool('{"a":'), cohere_tool('{"a":1}')),
    # recorded headers
    "http.status": (recording(b'{"error":{"message":"slow down"}}', status=429), recording(OK_CHAT)),
    "http.content-type": (recording(OK_CHAT, headers=[("content-type", "application/json"), ("cache-control", "no-cache")]),
                          recording(OK_CHAT)),
    "http.charset": (recording(OK_CHAT, headers=[("content-type", "text/event-stream; charset=iso-8859-1"),
                                                 ("cache-control", "no-cache")]),
                     recording(OK_CHAT, headers=[("content-type", "text/event-stream; charset=utf-8"),
                                                 ("cache-control", "no-cache")])),
    "http.cache-control": (recording(OK_CHAT, headers=[("content-type", "text/event-stream")]), recording(OK_CHAT)),
    "http.compressed": (recording(OK_CHAT, headers=[("content-type", "text/event-stream"), ("cache-control", "no-cache"),
                                                    ("content-encoding", "gzip")]), recording(OK_CHAT)),
}


def findings(data: bytes) -> list:
    if data.startswith(b"sse-tool recording"):
        return check_recording(data)[0]
    return check(data)


def test_every_rule_has_a_case():
    assert sorted(CASES) == sorted(RULES)


@pytest.mark.parametrize("rule", CASES)
def test_the_broken_stream_breaks_its_rule_and_only_it(rule):
    broken, _ = CASES[rule]
    found = findings(broken)
    assert found and {f.rule.id for f in found} == {rule}, [(f.rule.id, f.message) for f in found]


@pytest.mark.parametrize("rule", CASES)
def test_the_fixed_twin_breaks_nothing(rule):
    _, fixed = CASES[rule]
    assert [(f.rule.id, f.message) for f in findings(fixed)] == []


@pytest.mark.parametrize("rule", [r for r in CASES if not CASES[r][0].startswith(b"sse-tool recording")])
def test_each_broken_stream_gives_the_same_findings_byte_by_byte(rule):
    broken, _ = CASES[rule]
    if len(broken) > 200_000:
        pytest.skip("the long-line cases are fed in 4 KiB chunks below")
    checker = Checker()
    out = []
    for i in range(len(broken)):
        out += checker.feed(broken[i : i + 1])
    out += checker.close()
    assert [(*f.key(), f.line) for f in out] == [(*f.key(), f.line) for f in check(broken)]


@pytest.mark.parametrize("rule", ["stream.line-over-64k", "stream.line-over-1m"])
def test_a_long_line_is_found_whatever_the_chunking(rule):
    broken, _ = CASES[rule]
    checker = Checker()
    out = []
    for i in range(0, len(broken), 4096):
        out += checker.feed(broken[i : i + 4096])
    out += checker.close()
    assert [f.key() for f in out] == [f.key() for f in check(broken)]


@pytest.mark.parametrize("arguments", ["5", '"a"', "[1, 2]", "null", "true"])
def test_tool_arguments_that_are_json_but_not_an_object_break_their_rule(arguments):
    # a tool takes named arguments: OpenAI's joined pieces and Anthropic's input are objects
    openai_found = findings(chat(HEAD, call(0, "call_1", "f"), call(0, arguments=arguments), TOOLS_END))
    assert [f.rule.id for f in openai_found] == ["chat.tool-arguments"], openai_found
    assert "not an object" in openai_found[0].message
    anthropic_found = findings(anthropic(*tool_block(arguments)))
    assert [f.rule.id for f in anthropic_found] == ["anthropic.tool-input-json"], anthropic_found
    assert [f.rule.id for f in findings(cohere_tool(arguments))] == ["cohere.tool-arguments"]
    bedrock_found = findings(bedrock(B_START, B_TOOL, ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {
        "toolUse": {"input": arguments}}}), B_STOP1, B_END, B_META))
    assert [f.rule.id for f in bedrock_found] == ["bedrock.tool-input"], bedrock_found


@pytest.mark.parametrize("stream", [sse(HEAD, TEXT), anthropic(START, BLOCK, TEXT_DELTA)], ids=["openai", "anthropic"])
@pytest.mark.parametrize("data, message", [("Overloaded", "Overloaded"), ("upstream timed out: 504", None),
                                           ('"quoted"', None), ("", "an error event with no data")])
def test_an_error_event_in_plain_text_ends_the_stream_as_normalize_reads_it(stream, data, message):
    # a proxy's `event: error` with text: one finding, and no "no terminal event", for it is
    # the stream's end, as normalize (and anthropic-sdk-python) read it, not a cut
    from sse_tool import End, Status, records

    broken = stream + f"event: error\ndata: {data}\n\n".encode()
    found = findings(broken)
    assert [f.rule.id for f in found] == ["stream.data-not-json"], found
    assert "error event" in found[0].message and found[0].offset == len(stream)
    end = list(records([broken]))[-1]
    assert isinstance(end, End) and end.status is Status.ERROR
    assert end.error["message"] == (message or data)


@pytest.mark.parametrize("data", ["{oops", "[1, 2", " text after a space"])
def test_an_error_event_of_broken_json_is_broken_not_the_end(data):
    # data that starts as JSON is read as JSON (normalize: bad input), so the stream is still
    # unfinished; only text is read as the error's message
    from sse_tool import End, Status, records

    broken = sse(HEAD, TEXT) + f"event: error\ndata: {data}\n\n".encode()
    assert [f.rule.id for f in findings(broken)] == ["stream.data-not-json", "stream.no-terminal-event"]
    end = list(records([broken]))[-1]
    assert isinstance(end, End) and end.status is Status.INVALID


def test_a_recording_s_head_findings_come_in_the_order_of_its_lines():
    # the rules run in their own order (content type first); the report is in the input's
    headers = [("content-encoding", "gzip"), ("content-type", "text/plain; charset=latin-1")]
    found = findings(recording(OK_CHAT, headers=headers))
    assert [f.rule.id for f in found] == ["http.cache-control", "http.compressed", "http.content-type",
                                          "http.charset"]
    assert [f.line for f in found] == sorted(f.line for f in found)


def test_anthropic_events_without_type_or_index_are_said_without_python_s_none():
    untyped = {k: v for k, v in BLOCK.items() if k != "type"}
    unindexed = {k: v for k, v in TEXT_DELTA.items() if k != "index"}
    stopped = {k: v for k, v in STOP.items() if k != "index"}
    found = findings(anthropic(START, ("content_block_start", untyped), unindexed, stopped, MESSAGE_DELTA,
                               MESSAGE_STOP))
    messages = [f.message for f in found]
    assert "event: content_block_start for a payload without a type" in messages
    assert "content_block_delta without an index: it names no block" in messages
    assert "content_block_stop without an index: it names no block" in messages
    assert not any("None" in m for m in messages), messages


@pytest.mark.parametrize("marker", [b": sse-tool note fetch: retry 1/2 in 1s", b":sse-tool exit-ish", b": sse-tool reset"])
def test_a_block_of_an_earlier_stage_s_markers_is_no_keep_alive_finding(marker):
    # sse-tool's own lines (a retry's note before the body), not the server's comments: the
    # framers skip them, so the checker does not judge them as the stream's keep-alive
    assert findings(marker + b"\n\n" + OK_CHAT) == []
    found = findings(marker + b"\n: keep-alive\n\n" + OK_CHAT)  # the server's comment still counts
    assert [f.rule.id for f in found] == ["sse.comment-only-block"]



OK_ANTHROPIC = anthropic(START, BLOCK, TEXT_DELTA, STOP, MESSAGE_DELTA, MESSAGE_STOP)
OK_COHERE = cohere(C_START, C_CONTENT, C_DELTA, C_END, C_MESSAGE_END)
NOTE_LINE = b": sse-tool note fetch: retry 1/2 in 1s\n\n"


def second_event(data: bytes) -> int:
    """Where the second event (or event-stream message) of a stream starts."""
    from sse_tool.framing import AutoFramer

    return AutoFramer().feed(data)[1].offset


@pytest.mark.parametrize("stream", [OK_BEDROCK, OK_ANTHROPIC, OK_COHERE, OK_CHAT],
                         ids=["bedrock", "anthropic", "cohere", "openai"])
def test_an_earlier_stage_s_note_mid_stream_changes_no_finding(stream):
    at = second_event(stream)
    assert findings(stream[:at] + NOTE_LINE + stream[at:]) == []


@pytest.mark.parametrize("stream", [OK_BEDROCK, OK_ANTHROPIC, OK_COHERE], ids=["bedrock", "anthropic", "cohere"])
def test_a_retry_after_a_cut_past_the_first_event_gives_the_findings_of_the_whole_stream(stream):
    # fetch --retry-partial: the cut attempt, the reset marker, then the whole stream again;
    # the rules start over, and "first" means the first event of the attempt
    cut = second_event(stream) + 7
    assert findings(stream[:cut] + b"\n: sse-tool reset\n\n" + stream) == []


@pytest.mark.parametrize("stream, rule", [(OK_BEDROCK, "eventstream.cut"), (OK_ANTHROPIC, "sse.missing-final-blank-line")],
                         ids=["bedrock", "anthropic"])
def test_an_exit_marker_after_the_terminal_event_is_a_cut_not_a_missing_terminal_event(stream, rule):
    tail = bedrock(B_META)[:20] if stream is OK_BEDROCK else b'event: ping\ndata: {"ty'
    found = findings(stream + tail + b"\n: sse-tool exit 3 fetch: connection closed mid-body\n")
    assert [(f.rule.id, f.message) for f in found] == [
        (rule, "an earlier stage cut the stream (fetch: connection closed mid-body)")]
    assert all(f.rule.truncation for f in found)
