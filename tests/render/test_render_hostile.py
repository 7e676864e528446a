"""render against hostile model text and odd windows: no control sequence from the model
reaches a terminal in any line a view draws (answer, Markdown, model name, usage keys, tool
calls, refusal, reasoning, on stdout or stderr), and the rows of the screen add up to the
text whatever its tabs and CRs and however small the window."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.model import Channel, Delta, End, Meta, Note, Status, ToolCall
from sse_tool.render.release import make_policy
from sse_tool.render.rows import clean, wrap
from sse_tool.render.view_plain import PlainView

from .test_render_terminal import Screen, answer

# a window title, a clipboard write (OSC 52), the alternate screen, a clear; C1 CSI and OSC
HOSTILE = ("x\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x1b\\\x1b[?1049h\x1b[2J\x9b2J\x9d0;t\x07"
           "\x08\x7f\ry")
LEAKS = ("\x1b]", "\x1b\\", "\x1b[?1049h", "\x1b[2J", "\x9b", "\x9d", "\x07", "\x08", "\x7f")


def no_leak(out: str) -> None:
    for leak in LEAKS:
        assert leak not in out, leak


@pytest.mark.parametrize("markdown", [False, True])
def test_no_sequence_from_the_model_reaches_the_terminal_view(markdown):
    s = Screen(markdown=markdown)
    s.feed([Meta("model", "gpt" + HOSTILE), Delta(Channel.REASONING, "think " + HOSTILE),
            answer("**a** " + HOSTILE + "\n\n" + HOSTILE + "\n"),
            ToolCall(0, "c1", "get" + HOSTILE, '{"a": "' + HOSTILE * 30 + '"}'),
            End(Status.COMPLETE, "tool_use", usage={"prompt_tokens": 1, "cost" + HOSTILE: 0.5})])
    no_leak(s.written())
    assert s.written().endswith("\x1b[?25h")  # (a cut tool line once left an OSC open here)
    assert "\ufffd]0;pwned" in s.text()  # shown, not obeyed


def test_no_sequence_from_the_model_reaches_a_refusal_or_a_failure_on_the_terminal():
    s = Screen()
    s.feed([Delta(Channel.REFUSAL, HOSTILE), End(Status.ERROR, error={"type": HOSTILE, "message": HOSTILE})])
    no_leak(s.written())


def test_no_sequence_from_the_model_reaches_stderr_or_a_terminal_on_stdout_from_the_plain_view():
    out, err = [], []
    view = PlainView(out.append, err.append, make_policy("delta"), reasoning="show", out_terminal=True)
    draft = Screen().painter.draft
    for record in (Delta(Channel.REASONING, HOSTILE), answer(HOSTILE), Delta(Channel.REFUSAL, HOSTILE),
                   ToolCall(0, "c1", "f" + HOSTILE, HOSTILE)):
        draft.add(record, 0.0)
        view.paint(draft, 0.0)
    view.finish(draft, End(Status.COMPLETE), 0.0)
    no_leak("".join(err))
    no_leak(b"".join(out).decode())
    # into a pipe or a file, the answer is the provider's text, exactly
    piped = []
    view = PlainView(piped.append, err.append, make_policy("delta"))
    view.paint(draft, 0.0)
    assert b"".join(piped).decode() == HOSTILE


def test_a_line_end_in_a_providers_text_never_makes_a_row_two():
    # a model name, a tool call's name, an error's message, a refusal, a note: each row of
    # the view is one row of the screen
    s = Screen(40, 12)
    s.painter.draft.live = False
    s.feed([Meta("model", "gpt\nmini"), ToolCall(0, "c1", "get\r\nweather", "{}"), Note("fetch: one\ntwo"),
            Delta(Channel.REFUSAL, "No.\nSorry."), End(Status.COMPLETE, "stop", usage={"prompt_tokens": 1})])
    assert s.all_lines() == ["\u00bb fetch: one", "two", "\u2699 tool call: get weather({})",
                             "\u2298 the model refused: No.", "Sorry.", "gpt mini \u00b7 1 in"]
    s = Screen(40, 12)
    s.feed([End(Status.ERROR, error={"type": "bad\nrequest", "message": "line one\nline two"})])
    assert s.all_lines() == ["\u2717 provider error: bad", "request: line one", "line two"]
    assert all("\n" not in row for row in s.written().split("\r\n"))


def rows_of(text: str, width: int) -> list[str]:
    return [row.rstrip() for line in text.split("\n") for row, _ in wrap(clean(line), width)]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(["w0", "abc", " ", "\t", "\r", "x", "\u4e2d", "\U0001f680"]), min_size=1, max_size=80),
       st.integers(1, 5), st.sampled_from([(20, 12), (9, 5), (30, 2), (12, 1), (7, 3)]))
def test_the_screen_holds_exactly_the_rows_of_the_text_whatever_its_tabs_crs_and_window(pieces, step, size):
    # one line, taller than the live tail: its first rows are committed while it grows,
    # from offsets in the text (a tab is 4 cells, a CR none)
    text = "".join(pieces).strip(" \t\r") or "x"
    width, height = size
    s = Screen(width, height, footer=False)
    s.feed([answer(text[i:i + step]) for i in range(0, len(text), step)], step=0.05)
    s.feed([End(Status.COMPLETE)])
    assert s.all_lines() == rows_of(text, width)


@pytest.mark.parametrize("height", [1, 2, 3, 4])
def test_a_window_a_few_rows_tall_gets_each_row_of_a_long_answer_once(height):
    text = " ".join(f"w{i:03d}" for i in range(200))
    s = Screen(30, height, footer=False)
    s.feed([answer(text[i:i + 3]) for i in range(0, len(text), 3)], step=0.05)
    s.feed([End(Status.COMPLETE)])
    assert s.all_lines() == rows_of(text, 30)
