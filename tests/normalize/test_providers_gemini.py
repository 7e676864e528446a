"""The Gemini adapter (``gemini``): the recordings (``alt=sse`` and the JSON array), then
each documented quirk."""

from __future__ import annotations

import json

import pytest

from sse_tool.model import Channel, Citation, Delta, Meta, Signature, Status, ToolCall, Usage
from sse_tool.providers.gemini import Gemini

from ..support import EXPECTED, FIXTURES, SAMPLES, outcome, read_records

CASES = [e for e in EXPECTED if e["provider"] == "gemini"]
CASES_BY_FILE = {e["file"]: e for e in CASES}


def sse(*chunks: dict) -> bytes:
    """An ``alt=sse`` stream: data-only frames, CRLF line ends."""
    return "".join(f"data: {json.dumps(c, ensure_ascii=False)}\r\n\r\n" for c in chunks).encode()


def array(*chunks: dict, closed: bool = True) -> bytes:
    """The stream without ``alt=sse``: one pretty-printed JSON array, elements as they come."""
    body = "[" + "\n,\r\n".join(json.dumps(c, ensure_ascii=False, indent=2) for c in chunks)
    return (body + ("\n]" if closed else "\n")).encode()


def chunk(*parts: dict, finish: str | None = None, usage: dict | None = None, **candidate) -> dict:
    cand = {"content": {"parts": list(parts), "role": "model"}, "index": 0, **candidate}
    if finish:
        cand["finishReason"] = finish
    out = {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": "r1"}
    if usage:
        out["usageMetadata"] = usage
    return out


def texts(records, channel):
    return [r.text for r in records if isinstance(r, Delta) and r.channel is channel]


def of(records, kind):
    return [r for r in records if isinstance(r, kind)]


def metas(records, key):
    return [m.value for m in of(records, Meta) if m.key == key]


@pytest.mark.parametrize("entry", CASES, ids=lambda e: e["file"])
def test_recordings_give_their_expected_answer_reasoning_and_status(entry):
    records = read_records([(FIXTURES / entry["file"]).read_bytes()], "gemini")
    expected = entry["answer_text"], entry["reasoning_text"], entry["status"], entry["stop_reason"]
    assert outcome(records) == expected


def test_thought_parts_are_reasoning_and_other_text_is_the_answer():
    records = read_records([sse(
        chunk({"text": "Pienso… ", "thought": True}),
        chunk({"text": "¡Hola! 🚀"}, {"text": "", "thoughtSignature": "c2ln"}),
        chunk({"text": " Adiós.", "thought": False}, finish="STOP"),
    )])
    assert outcome(records) == ("¡Hola! 🚀 Adiós.", "Pienso… ", "complete", "STOP")
    assert metas(records, "model") == ["gemini-2.5-flash"]  # once, not per chunk
    assert of(records, Signature) == [Signature("c2ln")]  # on a text part: no tool call
    assert all(d.text for d in of(records, Delta))


def test_the_sse_sample_and_the_json_array_sample_give_the_same_records():
    from_sse = read_records([(SAMPLES / "gemini-thinking.sse").read_bytes()])
    from_array = read_records([(SAMPLES / "gemini-thinking.json").read_bytes()])
    assert from_sse == from_array
    assert from_sse[-1].status is Status.COMPLETE


def test_usage_metadata_is_repeated_and_the_last_one_counts():
    early = {"promptTokenCount": 12, "totalTokenCount": 12}
    late = {"promptTokenCount": 12, "candidatesTokenCount": 8, "totalTokenCount": 20}
    records = read_records([sse(chunk({"text": "a"}, usage=early), chunk({"text": "b"}, usage=early),
                                chunk({"text": "c"}, finish="STOP", usage=late))])
    assert of(records, Usage) == [Usage(early), Usage(late)]  # a repeat is not news
    assert records[-1].usage == late


@pytest.mark.parametrize("name", ["grounding-web-search.sse", "thought-summaries.sse", "text-basic.sse"])
def test_a_recording_ends_with_its_last_usage_metadata_not_a_sum(name):
    raw = (FIXTURES / "gemini" / name).read_bytes()
    chunks = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]
    last = [c["usageMetadata"] for c in chunks if c.get("usageMetadata")][-1]
    assert read_records([raw])[-1].usage == last


def test_a_whole_function_call_is_one_tool_call_with_json_arguments():
    records = read_records([sse(
        chunk({"functionCall": {"name": "get_weather", "args": {"city": "Bogotá", "days": 2}},
               "thoughtSignature": "EqAB"}),
        chunk({"functionCall": {"id": "call-2", "name": "get_time", "args": {}}}, finish="STOP"),
    )])
    calls = of(records, ToolCall)
    assert calls[0] == ToolCall(0, None, "get_weather", "")
    assert json.loads(calls[1].arguments) == {"city": "Bogotá", "days": 2}
    assert calls[2:] == [ToolCall(1, "call-2", "get_time", ""), ToolCall(1, arguments="{}")]
    assert texts(records, Channel.ANSWER) == []
    assert of(records, Signature) == [Signature("EqAB", 0)]  # the call it rides on


def test_the_recorded_function_call_with_a_thought_signature_has_no_text():
    records = read_records([(FIXTURES / "gemini/function-call-thought-signature.sse").read_bytes()])
    calls = of(records, ToolCall)
    assert calls[0].name == "get_country"
    assert "".join(c.arguments for c in calls) == "{}"
    assert outcome(records) == ("", "", "complete", "STOP")


def test_vertex_partial_args_are_assembled_into_the_calls_arguments():
    records = read_records([(FIXTURES / "gemini/vertex-partial-args-tool-call.sse").read_bytes()])
    calls = of(records, ToolCall)
    assert calls[0] == ToolCall(0, None, "writeItems", "")
    assert {c.index for c in calls} == {0}
    assert json.loads("".join(c.arguments for c in calls)) == {"operations": [
        {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
        {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3},
    ]}


def test_a_continued_partial_string_is_appended_and_other_value_kinds_are_kept():
    def piece(path, will_continue=False, **value):
        return {"jsonPath": path, **value, **({"willContinue": True} if will_continue else {})}

    records = read_records([sse(
        chunk({"functionCall": {"name": "note", "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [piece("$.text", True, stringValue="Hola, ")],
                                "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [piece("$.text", True, stringValue="señor")],
                                "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [piece("$.text", stringValue=""),
                                                piece("$.flags[0]", boolValue=True),
                                                piece("$.flags[1]", boolValue=False),
                                                piece("$.flags[0]", boolValue=False),
                                                piece("$.extra", nullValue=None)],
                                "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [piece("$.n", numberValue=3)]}}, finish="STOP"),
    )])
    arguments = "".join(c.arguments for c in of(records, ToolCall))
    assert json.loads(arguments) == {"text": "Hola, señor", "flags": [False, False], "extra": None, "n": 3}


@pytest.mark.parametrize("path", ["$.a[1]", "$.a[10000000000]", "$.a[0].b[2]"])
def test_a_partial_args_index_that_skips_elements_is_bad_input_not_padding(path):
    # elements arrive in order; padding up to an index from a few bytes of input could take
    # gigabytes (and would stand for elements that never arrived)
    from sse_tool.errors import BadInput

    stream = sse(chunk({"functionCall": {"name": "f", "willContinue": True}}),
                 chunk({"functionCall": {"partialArgs": [{"jsonPath": path, "numberValue": 1}]}}, finish="STOP"))
    with pytest.raises(BadInput, match="skips from element 0 to element"):
        read_records([stream])


def test_code_execution_parts_are_metadata_not_text():
    records = read_records([sse(
        chunk({"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}}),
        chunk({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}),
        chunk({"text": "The result is 4."}, finish="STOP"),
    )])
    assert metas(records, "executable_code") == [{"language": "PYTHON", "code": "print(2 + 2)"}]
    assert metas(records, "code_execution_result") == [{"outcome": "OUTCOME_OK", "output": "4\n"}]
    assert outcome(records) == ("The result is 4.", "", "complete", "STOP")


def test_grounding_gives_a_citation_per_supported_segment_and_source():
    records = read_records([(FIXTURES / "gemini/grounding-web-search.sse").read_bytes()])
    grounding = metas(records, "grounding")
    assert len(grounding) == 1 and grounding[0]["webSearchQueries"]  # kept whole too; empty ones skipped
    citations = of(records, Citation)
    supports = grounding[0]["groundingSupports"]
    assert len(citations) == sum(len(s["groundingChunkIndices"]) for s in supports)
    first = citations[0]
    assert first.text.startswith("As of Tuesday afternoon, the temperature is around 69°F")
    assert (first.url, first.title) == ("https://www.google.com/search?q=weather+in+San Francisco, CA,+US",
                                        "Weather information for San Francisco, CA, US")
    assert citations[1].title == "timeanddate.com"
    answer = "".join(texts(records, Channel.ANSWER))
    assert all(c.text in answer for c in citations)  # each cites a piece of the answer


def test_citation_metadata_gives_a_citation_per_source():
    source = {"startIndex": 0, "endIndex": 5, "uri": "https://example.org", "license": "mit"}
    records = read_records([sse(chunk({"text": "Hello"}, finish="STOP", citationMetadata={"citationSources": [source]}))])
    assert of(records, Citation) == [Citation(source, "https://example.org")]


def test_only_candidate_zero_is_read():
    first = chunk({"text": "uno"}, finish="STOP")
    first["candidates"].append({"content": {"parts": [{"text": "dos"}]}, "index": 1, "finishReason": "SAFETY"})
    assert outcome(read_records([sse(first)])) == ("uno", "", "complete", "STOP")


def test_a_finish_reason_other_than_stop_still_completes_the_turn_with_that_reason():
    records = read_records([sse(chunk({"text": "cut by the"}, finish="MAX_TOKENS",
                                      finishMessage="limit reached"))])
    assert outcome(records) == ("cut by the", "", "complete", "MAX_TOKENS")
    assert metas(records, "finish_message") == ["limit reached"]


def test_a_blocked_prompt_ends_the_turn_with_the_block_reason_as_stop_reason():
    blocked = {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
               "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
               "modelVersion": "gemini-2.5-flash"}
    for data in (sse(blocked), array(blocked)):
        records = read_records([data])
        assert outcome(records) == ("", "", "complete", "SAFETY")


def test_an_error_object_is_an_error_whose_type_is_its_status():
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    records = read_records([sse(chunk({"text": "Empiezo"}), error)])
    end = records[-1]
    assert end.status is Status.ERROR
    assert end.error == {"type": "UNAVAILABLE", "message": "The model is overloaded.", "code": 503}
    assert texts(records, Channel.ANSWER) == ["Empiezo"]


def test_an_error_object_alone_is_an_error_with_the_provider_recognised_or_named():
    error = {"error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}}
    for provider in ("auto", "gemini"):
        for data in (sse(error), array(error)):
            end = read_records([data], provider)[-1]
            assert end.status is Status.ERROR and end.error["type"] == "RESOURCE_EXHAUSTED"


def test_an_sse_stream_without_a_finish_reason_is_truncated():
    records = read_records([sse(chunk({"text": "Hola"}), chunk({"text": " mundo"}))])
    assert outcome(records) == ("Hola mundo", "", "truncated", None)


def test_a_json_array_not_closed_is_truncated_even_after_the_finish_reason():
    data = array(chunk({"text": "Hola"}), chunk({"text": " mundo"}, finish="STOP"), closed=False)
    end = read_records([data])[-1]
    assert end.status is Status.TRUNCATED and end.stop_reason == "STOP"


def test_a_closed_json_array_without_a_finish_reason_is_truncated():
    end = read_records([array(chunk({"text": "Hola"}))])[-1]
    assert end.status is Status.TRUNCATED and end.stop_reason is None


def test_the_recorded_json_array_cut_before_its_closing_bracket_is_truncated():
    data = (FIXTURES / "gemini/json-array-no-alt-sse.json").read_bytes()
    records = read_records([data[: data.rindex(b"]")]])
    assert records[-1].status is Status.TRUNCATED
    assert outcome(records)[:2] == ("Scoop", CASES_BY_FILE["gemini/json-array-no-alt-sse.json"]["reasoning_text"])



def test_recognition_is_by_gemini_keys_and_never_claims_other_dialects():
    assert Gemini.recognise("message", {"candidates": []})
    assert Gemini.recognise("message", {"usageMetadata": {"promptTokenCount": 1}})
    assert Gemini.recognise("message", {"promptFeedback": {"blockReason": "OTHER"}})
    assert Gemini.recognise("message", {"modelVersion": "gemini-2.5-pro"})
    assert not Gemini.recognise("message", {"choices": [], "object": "chat.completion.chunk"})
    assert not Gemini.recognise("message_start", {"type": "message_start", "message": {}})
    assert not Gemini.recognise("message", {"error": {"code": 500, "message": "x"}})
    assert not Gemini.recognise("message", "[DONE]")


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "SAFETY", "OTHER", "IMAGE_RECITATION", "IMAGE_OTHER", "NO_IMAGE",
                                    "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MISSING_THOUGHT_SIGNATURE"])
def test_every_finish_reason_but_stop_is_an_early_stop(reason):
    from sse_tool.model import stopped_early

    end = read_records([sse(chunk({"text": "Hi"}), chunk({"text": ""}, finish=reason))])[-1]
    assert end.status is Status.COMPLETE and end.stop_reason == reason and stopped_early(reason)
    assert not stopped_early("STOP")


@pytest.mark.parametrize("reason", ["SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "JAILBREAK", "MODEL_ARMOR"])
def test_a_blocked_prompt_is_an_early_stop_whatever_the_reason(reason):
    from sse_tool.model import stopped_early

    end = read_records([sse({"promptFeedback": {"blockReason": reason}, "usageMetadata": {"promptTokenCount": 5}})])[-1]
    assert end.status is Status.COMPLETE and end.stop_reason == reason and stopped_early(reason)
