"""``<think>…</think>`` in the answer: moved to the reasoning channel whatever the splitting
(every split position of every sample, one character at a time, random splits), later
mentions kept, an unclosed block reported as reasoning cut short."""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.model import Channel, Delta, Reset, Status
from sse_tool.think import ThinkTags

from ..support import SAMPLES, SSE_TOOL, channel_text, clean_env, read_records

R1 = ("<think>\nEl usuario pregunta por «launch». Nada de <think> anidado aquí.\n</think>\n\n"
      "¡Claro! Se dice **lanzamiento** 🚀. Un modelo escribe <think> al pensar.")
TEXTS = {
    "block then answer": R1,
    "blanks before the block": "  \n<think>razono</think>respuesta",
    "no block": "Hola <think> no empieza aquí",
    "nova's <thinking> is not <think>": "<thinking>plan</thinking>\nanswer",
    "unclosed": "<think>pienso y pienso </thi",
    "only blanks": " \n ",
    "tag alone": "<think></think>",
    "almost a tag": "<thin",
    "no opening tag": "pensando...\n</think>\n\nrespuesta",
}


def split_run(mode: str, pieces: list[str]) -> tuple[str, str, bool]:
    """(answer, reasoning, cut) for the answer text given as these deltas."""
    think = ThinkTags(mode)
    out = [d for piece in pieces for d in think.feed(piece)] + think.close()
    assert all(d.text for d in out), "no empty deltas"
    return channel_text(out, Channel.ANSWER), channel_text(out, Channel.REASONING), think.cut


@pytest.mark.parametrize("mode", ["auto", "on"])
@pytest.mark.parametrize("name", TEXTS)
def test_every_split_position_and_one_character_at_a_time_give_the_unsplit_result(name, mode):
    text = TEXTS[name]
    whole = split_run(mode, [text])
    for i in range(len(text) + 1):
        assert split_run(mode, [text[:i], text[i:]]) == whole, f"split at {i}"
    assert split_run(mode, list(text)) == whole


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(TEXTS)), st.sampled_from(["auto", "on"]),
       st.lists(st.integers(min_value=0, max_value=200), max_size=10))
def test_any_splitting_gives_the_unsplit_result(name, mode, cuts):
    text = TEXTS[name]
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    assert split_run(mode, [text[a:b] for a, b in zip(points, points[1:])]) == split_run(mode, [text])


@pytest.mark.parametrize("name, answer, reasoning, cut", [
    ("block then answer", "¡Claro! Se dice **lanzamiento** 🚀. Un modelo escribe <think> al pensar.",
     "El usuario pregunta por «launch». Nada de <think> anidado aquí.", False),
    ("blanks before the block", "respuesta", "razono", False),
    ("no block", "Hola <think> no empieza aquí", "", False),
    ("nova's <thinking> is not <think>", "<thinking>plan</thinking>\nanswer", "", False),
    ("unclosed", "", "pienso y pienso </thi", True),
    ("only blanks", " \n ", "", False),
    ("tag alone", "", "", False),
    ("almost a tag", "<thin", "", False),
    ("no opening tag", "pensando...\n</think>\n\nrespuesta", "", False),
])
def test_auto_splits_only_an_answer_that_opens_with_think(name, answer, reasoning, cut):
    assert split_run("auto", [TEXTS[name]]) == (answer, reasoning, cut)


def test_on_also_reads_an_answer_that_starts_inside_the_block():
    assert split_run("on", [TEXTS["no opening tag"]]) == ("respuesta", "pensando...", False)
    assert split_run("on", [TEXTS["block then answer"]]) == split_run("auto", [TEXTS["block then answer"]])
    assert split_run("on", ["sin cierre"]) == ("", "sin cierre", True)


def test_the_tag_split_across_deltas_as_servers_send_it():
    assert split_run("auto", ["<", "think", ">", "hmm", "</", "think", ">", "ok"]) == ("ok", "hmm", False)


def test_after_the_block_the_answer_passes_without_being_read_again():
    think = ThinkTags()
    think.feed("<think>a</think>b")
    assert think.done and think.feed("<think>") == [Delta(Channel.ANSWER, "<think>")]


# -- through the reader and the commands -------------------------------------------------

def openai_stream(*contents: str) -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]} for c in contents]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def reader_texts(data: bytes, mode: str = "auto"):
    from sse_tool.pipeline import RecordReader

    reader = RecordReader(think_tags=mode)
    out = reader.feed(data) + reader.close()
    return channel_text(out, Channel.ANSWER), channel_text(out, Channel.REASONING), out[-1]


def test_off_leaves_the_answer_as_sent():
    data = (SAMPLES / "openai-chat-think-tags.sse").read_bytes()
    answer, reasoning, _ = reader_texts(data, "off")
    assert answer.startswith("<think>\nEl usuario") and reasoning == ""


def test_a_retry_starts_the_detection_again():
    first = openai_stream("<think>uno</think>", "respuesta uno")
    second = openai_stream("<think>dos</think>", "respuesta dos")
    cut = first[: first.index(b"data: ", 10)]  # the first event only: the attempt was cut after it
    out = read_records([cut + b": sse-tool reset\n" + second])
    reset = out.index(Reset())
    after = out[reset:]
    assert channel_text(after, Channel.REASONING) == "dos" and channel_text(after, Channel.ANSWER) == "respuesta dos"


def test_an_unclosed_block_ends_complete_with_the_reasoning_cut_short():
    answer, reasoning, end = reader_texts((SAMPLES / "ollama-think-unclosed.ndjson").read_bytes())
    assert answer == "" and reasoning.endswith("«lanzamiento», pero")
    assert end.status is Status.COMPLETE and end.stop_reason == "length" and "never closed" in end.detail


def test_a_truncated_stream_inside_the_block_keeps_its_own_detail():
    data = openai_stream("<think>pienso", " más")
    _, reasoning, end = reader_texts(data[: data.index(b"[DONE]") - 6])
    assert reasoning == "pienso más" and end.status is Status.TRUNCATED and "terminal event" in end.detail


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, *args], input=stdin, capture_output=True, env=clean_env(), timeout=60)


@pytest.mark.parametrize("mode, answer_starts", [("auto", "¡Claro!"), ("off", "<think>")])
def test_normalize_think_tags_option(mode, answer_starts):
    r = run("normalize", "--think-tags", mode, str(SAMPLES / "openai-chat-think-tags.sse"))
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.splitlines()]
    answer = "".join(x["text"] for x in records if x.get("channel") == "answer")
    assert answer.startswith(answer_starts)


def test_normalize_warns_about_an_unclosed_block_and_exits_by_the_stop_reason():
    r = run("normalize", str(SAMPLES / "ollama-think-unclosed.ndjson"))
    assert r.returncode == 0 and b"never closed" in r.stderr
    assert run("normalize", "--strict", str(SAMPLES / "ollama-think-unclosed.ndjson")).returncode == 9


def test_records_already_normalized_are_not_split_again():
    off = run("normalize", "--think-tags", "off", str(SAMPLES / "openai-chat-think-tags.sse")).stdout
    again = run("normalize", stdin=off)  # auto, but these are channel records: passed through
    assert again.stdout == off


def test_render_shows_the_answer_without_the_block_and_the_reasoning_apart():
    r = run("render", "--reasoning", "show", str(SAMPLES / "openai-chat-think-tags.sse"))
    assert r.returncode == 0
    assert r.stdout.decode().startswith("¡Claro!") and b"<think>\n" not in r.stdout
    assert "El usuario pregunta" in r.stderr.decode()
