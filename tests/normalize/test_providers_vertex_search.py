"""The Vertex AI Search ``streamAnswer`` adapter (``vertex-search``)."""

from __future__ import annotations

import json

import pytest

from sse_tool.model import Channel, Delta, End, Meta, Status
from sse_tool.pipeline import RecordReader

from ..support import SAMPLES


def records(data: bytes, provider: str = "vertex-search") -> list:
    reader = RecordReader(provider)
    return reader.feed(data) + reader.close()


def array(*elements, closed: bool = True) -> bytes:
    """Elements laid out as Google streams them: pretty-printed, ``,\\r\\n`` between."""
    body = "\n,\r\n".join(json.dumps(e, ensure_ascii=False, indent=2) for e in elements)
    return ("[" + body + ("\n]" if closed else "")).encode()


def answer(state: str = "STREAMING", **fields) -> dict:
    return {"answer": {"state": state, **fields}}


def text(out: list) -> str:
    return "".join(r.text for r in out if isinstance(r, Delta) and r.channel is Channel.ANSWER)


def meta(out: list, key: str) -> list:
    return [r.value for r in out if isinstance(r, Meta) and r.key == key]


def test_answer_pieces_concatenate_even_when_a_piece_ends_mid_word():
    out = records(array(answer(answerText="El lanzam"), answer(answerText="iento del cohete."),
                        answer("SUCCEEDED")))
    assert text(out) == "El lanzamiento del cohete."
    assert [r.text for r in out if isinstance(r, Delta)] == ["El lanzam", "iento del cohete."]
    assert (out[-1].status, out[-1].stop_reason) == (Status.COMPLETE, "SUCCEEDED")


def test_cumulative_pieces_emit_only_the_new_suffix():
    first, second = "Ein Raketenstart ", "Ein Raketenstart heißt auf Spanisch "
    out = records(array(answer(answerText=first), answer(answerText=second),
                        answer("SUCCEEDED", answerText=second + "lanzamiento.")))
    assert text(out) == "Ein Raketenstart heißt auf Spanisch lanzamiento."
    # the first piece at once (both readings begin with it); the rest once the stream decided
    assert [r.text for r in out if isinstance(r, Delta)][0] == "Ein Raketenstart "


# -- snapshot or delta: decided from the stream as a whole ------------------------------------

def deltas(pieces: list[str], final: str | None = None) -> list[str]:
    out = records(array(*(answer(answerText=p) for p in pieces), answer("SUCCEEDED", **(
        {"answerText": final} if final is not None else {}))))
    assert out[-1].status is Status.COMPLETE
    return [r.text for r in out if isinstance(r, Delta)]


def test_a_delta_stream_whose_text_repeats_itself_is_concatenated():
    # the reproducer: one piece repeating the text so far proves nothing
    assert "".join(deltas(["Repite: ", "Repite: eco."])) == "Repite: Repite: eco."
    assert "".join(deltas(["eco ", "eco ", "eco "])) == "eco eco eco "
    assert "".join(deltas(["Di: ", "Di: hola", "y adiós"])) == "Di: Di: holay adiós"


def test_a_snapshot_stream_whose_text_repeats_itself_is_read_as_snapshots():
    pieces = ["eco ", "eco eco ", "eco eco eco ", "eco eco eco eco."]
    assert "".join(deltas(pieces)) == "eco eco eco eco."
    assert "".join(deltas(pieces[:3])) == "eco eco eco "


def test_snapshot_or_delta_is_decided_the_same_whatever_the_chunking():
    from ..support import read_records

    for pieces in (["Repite: ", "Repite: eco."], ["eco ", "eco eco ", "eco eco eco "]):
        data = array(*(answer(answerText=p) for p in pieces), answer("SUCCEEDED"))
        whole = text(records(data))
        for size in (1, 7, 64):
            chunks = [data[i:i + size] for i in range(0, len(data), size)]
            assert text(read_records(chunks, "vertex-search")) == whole


def test_text_held_while_undecided_is_not_lost_when_the_stream_is_cut():
    out = records(array(answer(answerText="Repite: "), answer(answerText="Repite: eco."), closed=False))
    assert text(out) == "Repite: Repite: eco." and out[-1].status is Status.TRUNCATED


def test_a_final_element_repeating_the_whole_answer_does_not_double_it():
    pieces = ["BigQuery es un almacén de datos. ", "Spanner es una base de datos transaccional."]
    out = records(array(*(answer(answerText=p) for p in pieces),
                        answer("SUCCEEDED", answerText="".join(pieces))))
    assert text(out) == "".join(pieces)


def test_short_pieces_that_repeat_are_kept_as_they_are():
    # "ja" then "ja": too little text to call the second piece a repetition
    assert text(records(array(answer(answerText="ja"), answer(answerText="ja"), answer("SUCCEEDED")))) == "jaja"


def test_steps_references_citations_and_related_questions_are_metadata_in_any_order():
    steps = [{"state": "SUCCEEDED", "description": "Rephrase the query and search.",
              "actions": [{"searchAction": {"query": "lanzamiento"}}]}]
    refs = [{"chunkInfo": {"content": "Lanzamiento: acción de lanzar.",
                           "documentMetadata": {"title": "Glosario"}}}]
    cites = [{"startIndex": "0", "endIndex": "5", "sources": [{"referenceId": "0"}]}]
    out = records(array(
        answer(references=refs),
        answer(answerText="Hola ", relatedQuestions=["¿Y «despegue»?"]),
        answer("SUCCEEDED", citations=cites, steps=steps),
    ))
    assert text(out) == "Hola "
    assert meta(out, "steps") == [steps]
    assert meta(out, "references") == [refs]
    assert meta(out, "citations") == [cites]
    assert meta(out, "related_questions") == [["¿Y «despegue»?"]]


def test_elements_without_any_of_the_optional_fields_are_fine():
    out = records(array(answer(), answer(answerText="Sí."), answer("SUCCEEDED")))
    assert text(out) == "Sí." and out[-1].status is Status.COMPLETE


def test_session_token_and_answer_name_are_metadata_once_each():
    head = {"session": {"name": "projects/p/sessions/1"}, "answerQueryToken": "tok"}
    out = records(array({**answer(name="answers/9", answerText="a"), **head},
                        {**answer("SUCCEEDED", name="answers/9"), **head}))
    assert meta(out, "session") == ["projects/p/sessions/1"]
    assert meta(out, "answer_query_token") == ["tok"]
    assert meta(out, "id") == ["answers/9"]


@pytest.mark.parametrize("state", ["STREAMING", "IN_PROGRESS", "STATE_UNSPECIFIED"])
def test_only_succeeded_completes_the_answer(state):
    end = records(array(answer(answerText="Casi"), answer(state)))[-1]
    assert end.status is Status.TRUNCATED


def test_failed_is_an_error_carrying_the_skipped_reasons():
    end = records(array(answer(answerText="El "),
                        answer("FAILED", answerSkippedReasons=["NO_RELEVANT_CONTENT", "LOW_GROUNDED_ANSWER"])))[-1]
    assert end.status is Status.ERROR and end.stop_reason == "FAILED"
    assert end.error["type"] == "NO_RELEVANT_CONTENT"
    assert "LOW_GROUNDED_ANSWER" in end.error["message"]


def test_failed_without_reasons_is_still_an_error():
    end = records(array(answer("FAILED")))[-1]
    assert (end.status, end.error["type"]) == (Status.ERROR, "FAILED")


def test_a_skipped_answer_that_succeeded_names_the_reason_as_its_stop_reason():
    out = records(array(answer("SUCCEEDED", answerText="No se pudo generar un resumen.",
                               answerSkippedReasons=["OUT_OF_DOMAIN_QUERY_IGNORED"])))
    assert (out[-1].status, out[-1].stop_reason) == (Status.COMPLETE, "OUT_OF_DOMAIN_QUERY_IGNORED")
    assert meta(out, "answer_skipped_reasons") == [["OUT_OF_DOMAIN_QUERY_IGNORED"]]


def test_an_error_element_is_a_provider_error():
    err = {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}
    end = records(array(answer(answerText="a"), err))[-1]
    assert (end.status, end.error["type"], end.error["code"]) == (Status.ERROR, "RESOURCE_EXHAUSTED", 429)


def test_succeeded_but_the_array_not_closed_is_truncated():
    end = records(array(answer(answerText="a"), answer("SUCCEEDED"), closed=False))[-1]
    assert end.status is Status.TRUNCATED and "JSON array" in end.detail


def test_alt_sse_frames_give_the_same_records_as_the_array():
    elements = json.loads((SAMPLES / "vertex-search-answer.json").read_bytes())
    frames = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\r\n\r\n" for e in elements)
    assert records(frames, "auto") == records((SAMPLES / "vertex-search-answer.json").read_bytes(), "auto")


def test_auto_detection_recognises_the_answer_stream():
    reader = RecordReader()
    out = reader.feed((SAMPLES / "vertex-search-answer.json").read_bytes()) + reader.close()
    assert (reader.source, reader.normalizer.provider) == ("json-array", "vertex-search")
    assert sum(isinstance(r, End) for r in out) == 1


def test_values_of_the_wrong_type_are_bad_input_or_skipped_with_lenient():
    from sse_tool.errors import BadInput

    data = array({"answer": "no"}, {"answer": {"answerText": 5, "steps": None}}, [1, 2], "x",
                 answer("SUCCEEDED"))
    with pytest.raises(BadInput, match="at byte"):
        records(data)
    reader = RecordReader("vertex-search", lenient=True)
    out = reader.feed(data) + reader.close()
    assert text(out) == "" and out[-1].status is Status.COMPLETE
    assert len(reader.normalizer.warnings) == 4
