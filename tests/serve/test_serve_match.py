"""``serve`` as a test double, sans I/O: provider endpoints, the matching rule, the
catalogue of paths, ``stream: false`` answers assembled from every recorded stream, and
the wire-quirk catalogue applied to every recorded stream."""

from __future__ import annotations

import json

import pytest

from sse_tool.model import Channel, Delta, Status, ToolCall
from sse_tool.recording import parse_recording
from sse_tool.replay import Step, event_ends
from sse_tool.serve.assemble import assemble, can_assemble
from sse_tool.serve.faults import FaultPlan, Write, shape
from sse_tool.serve.match import Miss, choose, parse_body
from sse_tool.serve.quirks import QUIRKS, QuirkError, apply_quirks
from sse_tool.serve.routes import ENDPOINTS, RouteError, ask_of, find_endpoint, parse_route
from sse_tool.serve.streams import Stream, load_streams
from sse_tool.serve.summary import summarize

from ..support import FIXTURES, SAMPLES, cut_positions, read_records, stream_files
from ..fetch.test_replay import make_recording

STREAMS = [p for p in stream_files() if summarize(p.read_bytes()).dialect is not None]


def ids(path) -> str:
    return f"{path.parent.name}/{path.name}"


def answer_of(records) -> tuple[str, str]:
    """(the answer, a refusal in its place included; the reasoning)."""
    text = {c: "".join(r.text for r in records if type(r) is Delta and r.channel is c) for c in Channel}
    return text[Channel.ANSWER] + text[Channel.REFUSAL], text[Channel.REASONING]


# -- endpoints ----------------------------------------------------------------------------

@pytest.mark.parametrize("path, name, prefix", [
    ("/v1/chat/completions", "chat completions", ""),
    ("/chat/completions", "chat completions", ""),
    ("/openai-chat/openai-text-usage/v1/chat/completions", "chat completions", "/openai-chat/openai-text-usage"),
    ("/v1/responses", "responses", ""),
    ("/v1/messages", "messages", ""),
    ("/fixtures/anthropic/v1/messages", "messages", "/fixtures/anthropic"),
    ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "generateContent", ""),
    ("/v1/projects/p/locations/us/publishers/google/models/g:generateContent", "generateContent", ""),
    ("/api/chat", "chat", ""), ("/api/generate", "chat", ""), ("/v2/chat", "chat", ""),
])
def test_each_sdk_path_reaches_its_endpoint_with_or_without_a_version_after_any_prefix(path, name, prefix):
    hit = find_endpoint(tuple(ENDPOINTS), "POST", path)
    assert hit is not None and hit[0].name == name
    assert ask_of(*hit, {}, {}).prefix == prefix
    assert find_endpoint(tuple(ENDPOINTS), "GET", path) is None


def test_what_a_request_asks_follows_each_providers_rules():
    def ask(path, body=None, query=None):
        return ask_of(*find_endpoint(tuple(ENDPOINTS), "POST", path), query or {}, body or {})

    assert ask("/v1/chat/completions", {"model": "m", "stream": True}).stream
    assert not ask("/v1/chat/completions", {"model": "m"}).stream  # OpenAI: no field, no stream
    assert ask("/api/chat", {"model": "m"}).stream  # Ollama streams unless told not to
    assert not ask("/api/chat", {"model": "m", "stream": False}).stream
    gemini = ask("/v1beta/models/gemini-x:streamGenerateContent", query={"alt": "sse"})
    assert (gemini.model, gemini.stream, gemini.framing) == ("gemini-x", True, "sse")
    plain = ask("/v1beta/models/gemini-x:streamGenerateContent")
    assert (plain.stream, plain.framing) == (True, "json-array")
    assert not ask("/v1beta/models/gemini-x:generateContent").stream
    assert ask("/api/chat", {"model": "m"}).framing == "ndjson"


@pytest.mark.parametrize("text, parsed", [
    ("POST /v1/chat/completions=a.sse", ("POST", "/v1/chat/completions", "a.sse")),
    ("/v1/messages/=x.rec", ("*", "/v1/messages", "x.rec")),
    ("get /x = y.sse", ("GET", "/x", "y.sse")),
])
def test_a_route_names_a_method_a_path_and_a_file(text, parsed):
    assert parse_route(text) == parsed


@pytest.mark.parametrize("text", ["POST /x", "x=y.sse", "POST /x extra=y", "POST /x="])
def test_a_bad_route_says_what_is_expected(text):
    with pytest.raises(RouteError):
        parse_route(text)


# -- matching -----------------------------------------------------------------------------

def recorded(name: str, body: dict | None, model_seen="gpt-4o-2024-08-06") -> Stream:
    chunk = (b'data: {"model":"%s","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
             b"data: [DONE]\n\n" % model_seen.encode())
    text = make_recording([(0.0, chunk)], url="https://api.openai.com/v1/chat/completions")
    rec = parse_recording(text.splitlines())
    rec.request.body = None if body is None else json.dumps(body).encode()
    return Stream(f"/{name}", name, recording=rec, name=f"/{name}.rec")


A = {"model": "gpt-4o", "messages": [{"role": "user", "content": "a"}]}
B = {"model": "gpt-4o", "messages": [{"role": "user", "content": "b"}]}
C = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "c"}]}


def test_an_exact_body_wins_whatever_the_transport_fields():
    streams = [recorded("a", A), recorded("b", B), recorded("c", C, "gpt-4o-mini")]
    assert choose(streams, {**B, "stream": True, "stream_options": {"include_usage": True}}).path == "/b"


def test_then_the_model_then_the_only_candidate():
    streams = [recorded("a", A), recorded("c", C, "gpt-4o-mini")]
    new = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "new"}]}
    assert choose(streams, new, "gpt-4o-mini").path == "/c"
    # A dated model in the stream answers its alias.
    assert choose([recorded("x", None, "gpt-4o-2024-08-06"), recorded("c", C, "gpt-4o-mini")],
                  {"model": "gpt-4o"}, "gpt-4o").path == "/x"
    assert choose([recorded("a", A)], {"model": "other"}, "other").path == "/a"


def test_a_miss_names_the_nearest_recordings_and_what_differed():
    streams = [recorded("a", A), recorded("b", B), recorded("c", C, "gpt-4o-mini")]
    miss = choose(streams, {**A, "temperature": 0}, "gpt-4o")
    assert isinstance(miss, Miss)
    assert "2 recordings have model gpt-4o" in miss.message
    assert "/a (gpt-4o; differs in temperature)" in miss.message
    assert "/b (gpt-4o; differs in messages, temperature)" in miss.message
    none = choose(streams, {"model": "claude"}, "claude")
    assert isinstance(none, Miss) and "no recording has model claude, and 3 could answer" in none.message


def test_two_recordings_of_one_request_are_a_miss_not_a_silent_pick():
    miss = choose([recorded("a", A), recorded("a2", A)], A, "gpt-4o")
    assert isinstance(miss, Miss) and "2 recordings of this exact request: /a, /a2" in miss.message


def test_hybrid_matching_takes_only_an_exact_body():
    streams = [recorded("a", A)]
    assert choose(streams, A, "gpt-4o", exact_only=True).path == "/a"
    assert isinstance(choose(streams, B, "gpt-4o", exact_only=True), Miss)


@pytest.mark.parametrize("data, parsed", [
    (b"", {}), (b"  ", {}), (b'{"a": 1}', {"a": 1}), (b"[1]", None), (b"{nope", None),
    (b"\xff\xfe", None), (b"[" * 100_000, None),
])
def test_a_request_body_is_read_defensively(data, parsed):
    assert parse_body(data) == parsed


# -- the catalogue ------------------------------------------------------------------------

def test_a_file_is_served_with_and_without_its_extension_and_a_shared_stem_starts(tmp_path):
    catalogue = load_streams([str(SAMPLES / "gemini-thinking.sse"), str(SAMPLES / "gemini-thinking.json"),
                              str(SAMPLES / "anthropic-thinking.sse")])
    assert [s.name for s in catalogue.paths["/gemini-thinking"]] == ["/gemini-thinking.sse", "/gemini-thinking.json"]
    assert catalogue.paths["/anthropic-thinking.sse"] == catalogue.paths["/anthropic-thinking"]
    # The shared stem is one stream in two framings: a request picks by the framing it wants.
    both = catalogue.paths["/gemini-thinking"]
    assert choose(both, {}, framing="json-array").name == "/gemini-thinking.json"
    assert choose(both, {}, framing="sse").name == "/gemini-thinking.sse"


def test_the_samples_folder_serves_at_last():
    catalogue = load_streams([str(SAMPLES)])
    assert "/gemini-thinking" in catalogue.paths and "/gemini-thinking.json" in catalogue.paths


def test_a_prefix_names_a_stream_a_folder_or_nothing(tmp_path):
    (tmp_path / "team").mkdir()
    for name in ("team/a.sse", "team/b.sse", "c.sse"):
        (tmp_path / name).write_bytes(b"data: {}\n\n")
    catalogue = load_streams([str(tmp_path)])
    assert [s.name for s in catalogue.under("/team")] == ["/team/a.sse", "/team/b.sse"]
    assert [s.name for s in catalogue.under("/team/a")] == ["/team/a.sse"]
    assert len(catalogue.under("")) == 3 and catalogue.under("/nope") is None


# -- stream: false ------------------------------------------------------------------------

ASSEMBLED = [p for p in STREAMS if can_assemble(summarize(p.read_bytes()).dialect)]


def assembled_text(dialect: str, body: dict) -> tuple[str, str, list]:
    """(answer, reasoning, tool calls as (name, arguments object)) of a non-streaming answer,
    read the way its SDK reads it."""
    if dialect == "openai":
        m = body["choices"][0]["message"]
        calls = [(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                 for c in m.get("tool_calls") or ()]
        return m["content"] or "", m.get("reasoning_content") or m.get("reasoning") or "", calls
    if dialect == "openai-responses":
        out, think, calls = [], [], []
        for item in body["output"]:
            if item["type"] == "message":
                out += [c.get("text") or c.get("refusal") or "" for c in item["content"]]
            elif item["type"] == "reasoning":
                think += [s["text"] for s in item.get("summary") or ()]
                think += [c["text"] for c in item.get("content") or ()]
            elif item["type"] == "function_call":
                calls.append((item["name"], json.loads(item["arguments"] or "{}")))
        return "".join(out), "".join(think), calls
    if dialect == "anthropic":
        blocks = body["content"]
        return ("".join(b["text"] for b in blocks if b["type"] == "text"),
                "".join(b["thinking"] for b in blocks if b["type"] == "thinking"),
                [(b["name"], b["input"]) for b in blocks if b["type"].endswith("tool_use")])
    if dialect == "gemini":
        parts = body["candidates"][0]["content"]["parts"]
        return ("".join(p.get("text", "") for p in parts if not p.get("thought")),
                "".join(p.get("text", "") for p in parts if p.get("thought")),
                [(p["functionCall"]["name"], p["functionCall"].get("args", {}))
                 for p in parts if "functionCall" in p])
    if dialect == "ollama":
        source = body.get("message") or body
        return (source.get("content", body.get("response", "")), source.get("thinking", ""),
                [(c["function"]["name"], c["function"]["arguments"]) for c in source.get("tool_calls") or ()])
    if dialect == "cohere":
        m = body["message"]
        return ("".join(c["text"] for c in m["content"] if c["type"] == "text"),
                m.get("tool_plan", "") + "".join(c["thinking"] for c in m["content"] if c["type"] == "thinking"),
                [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m.get("tool_calls") or ()])
    raise AssertionError(dialect)


@pytest.mark.parametrize("path", ASSEMBLED, ids=ids)
def test_stream_false_gets_the_same_text_tools_and_end_in_the_providers_shape(path):
    data = path.read_bytes()
    summary = summarize(data)
    records = read_records([data], think_tags="off")
    end = records[-1]
    answer = assemble(summary)
    if end.status is Status.TRUNCATED:
        assert answer is None  # no whole answer: the server cuts, as the network did
        return
    body = json.loads(answer.body)
    if end.status is Status.ERROR:
        assert answer.status >= 400 and end.error["message"] in json.dumps(body, ensure_ascii=False)
        return
    assert answer.status == 200
    text, reasoning = answer_of(records)
    got_text, got_reasoning, got_calls = assembled_text(summary.dialect, body)
    assert got_text == text
    if summary.dialect not in ("openai-responses",):  # Responses keeps its own output items
        assert got_reasoning == reasoning
    calls: dict[int, list] = {}
    for r in records:
        if type(r) is ToolCall:
            calls.setdefault(r.index, [None, ""])
            calls[r.index][0] = calls[r.index][0] or r.name
            calls[r.index][1] += r.arguments
    assert got_calls == [(n, json.loads(a or "{}")) for n, a in (calls[i] for i in sorted(calls))]


def test_an_anthropic_message_keeps_block_order_signatures_and_stop_reason():
    body = json.loads(assemble(summarize(SAMPLES.joinpath("anthropic-thinking.sse").read_bytes())).body)
    assert [b["type"] for b in body["content"]] == ["thinking", "text"]
    assert body["content"][0]["signature"] and body["stop_reason"] == "end_turn"
    assert body["type"] == "message" and body["usage"]["output_tokens"]


def test_an_error_stream_answers_the_providers_error_status_and_body():
    answer = assemble(summarize(SAMPLES.joinpath("anthropic-overloaded.sse").read_bytes()))
    assert answer.status == 529
    assert json.loads(answer.body) == {"type": "error", "error": {"type": "overloaded_error",
                                                                  "message": "Overloaded"}}


# -- wire quirks --------------------------------------------------------------------------

SSE_STREAMS = [p for p in STREAMS if summarize(p.read_bytes()).framing == "sse"][:12]


def steps_of(data: bytes) -> list[Step]:
    out, start = [], 0
    for end in event_ends(data) + [len(data)]:
        if end > start:
            out.append(Step(0.01, data[start:end]))
            start = end
    return out


def applied(steps, names, dialect, framing) -> tuple[list[Step], str | None]:
    quirked = apply_quirks(steps, names, dialect, framing)
    return list(quirked.steps), quirked.ending


def keeps_meaning(quirk: str) -> bool:
    return quirk not in ("error-after-200", "data-keepalive")


@pytest.mark.parametrize("quirk", [q for q in QUIRKS if keeps_meaning(q)])
@pytest.mark.parametrize("path", SSE_STREAMS, ids=ids)
def test_every_quirk_that_keeps_the_meaning_keeps_normalizes_answer(path, quirk):
    data = path.read_bytes()
    summary = summarize(data)
    if quirk == "empty-choices" and summary.dialect != "openai":
        with pytest.raises(QuirkError):
            applied(steps_of(data), (quirk,), summary.dialect, "sse")
        return
    steps, ending = applied(steps_of(data), (quirk,), summary.dialect, "sse")
    assert read_records([s.data for s in steps], think_tags="off") == read_records([data], think_tags="off")
    assert ending == ("stall" if quirk == "hold-open" else None)


@pytest.mark.parametrize("path", SSE_STREAMS, ids=ids)
def test_error_after_200_ends_the_stream_with_the_providers_error(path):
    data = path.read_bytes()
    summary = summarize(data)
    steps, _ = applied(steps_of(data), ("error-after-200",), summary.dialect, "sse")
    end = read_records([s.data for s in steps], think_tags="off")[-1]
    assert end.status is Status.ERROR and "Overloaded" in end.error["message"]


def test_chunk_quirks_cut_where_they_say():
    data = "data: {\"t\": \"ñ€😀\"}\n\n".encode()
    steps, _ = applied([Step(0.5, data)], ("split-utf8",), None, "sse")
    assert b"".join(s.data for s in steps) == data
    assert [s.delay for s in steps] == [0.5, 0.0, 0.0, 0.0]
    for s in steps[:-1]:
        with pytest.raises(UnicodeDecodeError):
            s.data.decode()
    crlf, _ = applied([Step(0, b"data: 1\n\ndata: 2\n\n")], ("split-crlf",), None, "sse")
    assert [s.data for s in crlf] == [b"data: 1\r", b"\n\r", b"\ndata: 2\r", b"\n\r", b"\n"]
    one = apply_quirks([Step(0, b"data: 1\n\n")], ("one-byte",), None, "sse")
    assert one.chunk == 1  # left to the chunk fault, which re-chunks as it writes
    writes = [a for a in shape(one.steps, FaultPlan(chunk=one.chunk)) if isinstance(a, Write)]
    assert [w.data for w in writes] == [bytes([b]) for b in b"data: 1\n\n"]


def test_inserted_blocks_land_after_the_first_event_and_lines_grow_past_the_limits():
    data = b"data: {\"a\": 1}\n\ndata: [DONE]\n\n"
    for quirk, block in (("ping-after-id", b"id: sse-tool-1\n: ping\n\n"), ("id-only", b"id: sse-tool-1\n\n"),
                         ("retry-only", b"retry: 3000\n\n"), ("event-keepalive", b"event: keepalive\n\n"),
                         ("data-keepalive", b"data: : keepalive\n\n")):
        steps, _ = applied([Step(0, data)], (quirk,), "openai", "sse")
        assert b"".join(s.data for s in steps) == data[:16] + block + data[16:]
    for quirk, limit in (("long-line", 64 * 1024), ("huge-line", 1024 * 1024)):
        steps, _ = applied([Step(0, data)], (quirk,), "openai", "sse")
        assert len(b"".join(s.data for s in steps).split(b"\n")[0]) > limit
    cr, _ = applied([Step(0, data)], ("cr",), "openai", "sse")
    assert b"\n" not in b"".join(s.data for s in cr)


def test_a_quirk_for_sse_is_refused_for_other_framings():
    with pytest.raises(QuirkError, match="applies to sse streams; this one is ndjson"):
        applied([Step(0, b'{"done": true}\n')], ("comments",), "ollama", "ndjson")
    steps, _ = applied([Step(0, b'{"a": 1}\n{"done": true}\n')], ("error-after-200",), "ollama", "ndjson")
    assert b"".join(s.data for s in steps) == b'{"a": 1}\n{"error": "Overloaded (a quirk injected by sse-tool serve)"}\n'


def test_a_recordings_timing_survives_its_quirks():
    steps = [Step(0.1, b"data: {\"a\": 1}\n\n"), Step(0.2, b"data: {\"b\": 2}\n\n"), Step(0.3, b"data: [DONE]\n\n")]
    for quirk in QUIRKS:
        if quirk in ("empty-choices", "error-after-200", "one-byte", "split-crlf", "split-utf8"):
            continue
        got, _ = applied(steps, (quirk,), "openai", "sse")
        assert sum(s.delay for s in got) == pytest.approx(0.6), quirk


# -- every cut ------------------------------------------------------------------------------

CUT_STREAMS = [FIXTURES / "anthropic" / "text-short.sse", FIXTURES / "openai-chat" / "openai-tool-call-usage.sse",
               FIXTURES / "gemini" / "text-basic.sse", SAMPLES / "ollama-chat-tool-call.ndjson",
               SAMPLES / "cohere-tool-call.sse", FIXTURES / "openai-responses" / "responses-text.sse"]


@pytest.mark.parametrize("path", CUT_STREAMS, ids=ids)
def test_a_recording_cut_anywhere_assembles_to_its_answer_or_to_a_cut(path):
    data = path.read_bytes()
    for cut in cut_positions(data)[::3]:
        piece = data[:cut]
        summary = summarize(piece)
        if not can_assemble(summary.dialect):
            continue  # too short to tell whose it is: served as it is
        answer = assemble(summary)
        end = read_records([piece], think_tags="off")[-1]
        if answer is None:
            assert end.status is Status.TRUNCATED
        elif answer.status == 200:
            assert end.status is Status.COMPLETE
            assert assembled_text(summary.dialect, json.loads(answer.body))[0] == answer_of(read_records([piece], think_tags="off"))[0]


@pytest.mark.parametrize("path", CUT_STREAMS[:3], ids=ids)
def test_quirks_give_the_same_bytes_however_the_recording_was_chunked(path):
    data = path.read_bytes()
    summary = summarize(data)
    for quirk in QUIRKS:
        if quirk == "empty-choices" and summary.dialect != "openai" or summary.framing not in QUIRKS[quirk].framings:
            continue
        whole = b"".join(s.data for s in applied([Step(0, data)], (quirk,), summary.dialect, summary.framing)[0])
        for cut in range(1, len(data), 37):
            steps = [Step(0.1, data[:cut]), Step(0.2, data[cut:])]
            got, _ = applied(steps, (quirk,), summary.dialect, summary.framing)
            assert b"".join(s.data for s in got) == whole, (quirk, cut)
            assert sum(s.delay for s in got) == pytest.approx(0.3) or quirk == "error-after-200"
