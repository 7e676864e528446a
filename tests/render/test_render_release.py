"""Release policies and the plain view, fed directly (no process, no clock)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.model import Channel, Delta, End, Status, ToolCall
from sse_tool.render.throttle import Painter
from sse_tool.render.release import SentenceRelease, make_policy
from sse_tool.render.view_plain import PlainView


def sentence_upto(pieces: list[str]) -> list[str]:
    policy, text, shown = SentenceRelease(), "", []
    for piece in pieces:
        text += piece
        shown.append(text[: policy.upto(text)])
    return shown


def test_sentence_release_lets_out_only_whole_sentences():
    assert sentence_upto(["Hello wor", "ld. How a", "re you? I am", " fine"]) == [
        "", "Hello world. ", "Hello world. How are you? ", "Hello world. How are you? ",
    ]


def test_a_sentence_end_split_across_deltas_is_found():
    assert sentence_upto(["One.", " Two"]) == ["", "One. "]
    assert sentence_upto(["Wait\u2026", "\nmore"]) == ["", "Wait\u2026\n"]


def test_a_full_stop_without_whitespace_after_it_is_not_a_sentence_end():
    assert sentence_upto(["Version 3.11 is out", " and e.g"]) == ["", ""]


def test_closing_quotes_belong_to_the_sentence_and_paragraph_breaks_end_one():
    assert sentence_upto(['He said "stop." Then']) == ['He said "stop." ']
    assert sentence_upto(["# Title\n\nbody"]) == ["# Title\n\n"]


class Sink:
    def __init__(self) -> None:
        self.out = b""
        self.err = ""

    def write_out(self, data: bytes) -> None:
        self.out += data

    def write_err(self, text: str) -> None:
        self.err += text


def run_plain(records, release="delta", reasoning="hide", on_truncate="replace", interval=0):
    sink = Sink()
    view = PlainView(sink.write_out, sink.write_err, make_policy(release), reasoning=reasoning,
                     on_truncate=on_truncate)
    painter = Painter(view, lambda: 0.0, interval)
    outs = []
    for record in records:
        painter.feed(record)
        painter.tick()
        outs.append(sink.out)
    return sink, outs


def stream(*texts, status=Status.COMPLETE):
    return [Delta(Channel.ANSWER, t) for t in texts] + [End(status, "stop")]


def test_plain_view_appends_only_new_text_and_ends_a_complete_answer_with_a_newline():
    sink, outs = run_plain(stream("Hello", " world"))
    assert outs[:2] == [b"Hello", b"Hello world"]
    assert sink.out == b"Hello world\n" and sink.err == ""


@pytest.mark.parametrize("release, complete, truncated", [
    ("delta", b"One. Two\n", b"One. Two"),
    ("sentence", b"One. Two\n", b"One. "),
    ("complete", b"One. Two\n", b""),
])
def test_each_release_policy_at_completion_and_at_a_cut(release, complete, truncated):
    assert run_plain(stream("One. ", "Two"), release)[0].out == complete
    assert run_plain(stream("One. ", "Two", status=Status.TRUNCATED), release)[0].out == truncated


def test_release_complete_writes_nothing_before_the_end():
    sink, outs = run_plain(stream("One. ", "Two. ", "Three"), "complete")
    assert outs[:-1] == [b"", b"", b""]


def test_on_truncate_keep_lets_what_was_held_back_out_under_every_policy():
    # keep: the partial answer is written (marked incomplete on stderr), as the man page says
    cut = stream("One. ", "Two", status=Status.TRUNCATED)
    assert run_plain(cut, "sentence", on_truncate="keep")[0].out == b"One. Two"
    assert run_plain(cut, "complete", on_truncate="keep")[0].out == b"One. Two"
    assert run_plain(cut, "complete")[0].out == b""


def test_reasoning_goes_to_stderr_only_when_asked():
    records = [Delta(Channel.REASONING, "think "), Delta(Channel.REASONING, "hard")] + stream("A")
    hidden = run_plain(records)[0]
    shown = run_plain(records, reasoning="show")[0]
    collapsed = run_plain(records, reasoning="collapse")[0]
    assert hidden.out == shown.out == collapsed.out == b"A\n"
    assert hidden.err == ""
    assert shown.err == "think hard\n"
    assert collapsed.err == "[thought: 2 words]\n"  # no live timing: the words, no time


def test_tool_calls_get_one_line_on_stderr_and_nothing_on_stdout():
    records = [ToolCall(0, "c1", "get_weather", '{"city":'), ToolCall(0, arguments=' "Paris"}')]
    sink = run_plain(records + [End(Status.COMPLETE, "tool_calls")])[0]
    assert sink.out == b""
    assert sink.err == 'tool call: get_weather({"city": "Paris"})\n'


def test_a_tool_call_whose_arguments_are_not_whole_json_says_so_before_its_name():
    from sse_tool.pipeline import RecordReader

    from ..support import FIXTURES

    data = (FIXTURES / "openai-chat" / "openai-tool-call-usage.sse").read_bytes()
    cut = data[:data.index(b'"arguments":"country"') + 200]
    reader = RecordReader()
    sink = run_plain(reader.feed(cut) + reader.close())[0]
    assert sink.err == 'incomplete tool call: get_capital({"country)\n'
    reader = RecordReader()
    whole = run_plain(reader.feed(data) + reader.close())[0]
    assert whole.err.startswith("tool call: get_capital(")


_PIECES = ["a", "b", ".", "!", "?", "\u2026", '"', ")", "\u201d", " ", "\t", "\n", "\r", " " * 9, '"' * 9, "\n" + " " * 9]


@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join), st.lists(st.integers(0, 120), max_size=8))
@settings(max_examples=1500, deadline=None)
def test_sentence_release_does_not_depend_on_where_paints_fell(text, cuts):
    # what leaves at each paint is what a policy reading that prefix in one go releases
    # (a boundary longer than any fixed look-back, "\n" and blanks, split anywhere)
    policy = SentenceRelease()
    for cut in sorted({min(c, len(text)) for c in cuts} | {len(text)}):
        assert policy.upto(text[:cut]) == SentenceRelease().upto(text[:cut]), (text, cut)


def test_a_long_boundary_split_by_a_paint_is_still_found():
    assert sentence_upto(["First part\n          ", "\nSecond part"]) == ["", "First part\n          \n"]
    assert sentence_upto(['"Stop.' + '"' * 12, " Go"]) == ["", '"Stop.' + '"' * 12 + " "]
