"""The terminal view drawn into a capture console; pyte replays the bytes into a screen."""

from __future__ import annotations

import subprocess
import sys

import pyte
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..support import FIXTURES
from sse_tool.model import Channel, Delta, End, Reset, Status, ToolCall
from sse_tool.render.throttle import Painter
from sse_tool.pipeline import RecordReader
from sse_tool.render.release import make_policy
from sse_tool.render.draft import Draft
from sse_tool.render.rows import Words
from sse_tool.render.view_terminal import TerminalView

WIDTH, HEIGHT = 80, 24


class Screen:
    """The terminal view over an injected writer, the painter over it, and what a
    terminal (pyte, scrollback included) shows of what it wrote."""

    def __init__(self, width: int = WIDTH, height: int = HEIGHT, **view_options) -> None:
        self.out: list[str] = []
        self.width, self.height = width, height
        self.now = 0.0
        view = TerminalView(self.out.append, lambda: (self.width, self.height), colour=False, **view_options)
        self.painter = Painter(view, lambda: self.now)

    def feed(self, records, step: float = 0.05) -> None:
        for record in records:
            self.now += step
            self.painter.feed(record)
            self.painter.tick()

    def written(self) -> str:
        return "".join(self.out)

    def all_lines(self) -> list[str]:
        """Scrollback and screen, each row without its trailing blanks."""
        screen = pyte.HistoryScreen(self.width, self.height, history=10000)
        pyte.Stream(screen).feed(self.written())
        rows = [[line[x].data for x in range(self.width)] for line in screen.history.top]
        rows += [[screen.buffer[y][x].data for x in range(self.width)] for y in range(self.height)]
        lines = ["".join(row).rstrip() for row in rows]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def lines(self) -> list[str]:
        return self.all_lines()

    def text(self) -> str:
        return "\n".join(line for line in self.lines() if line)


def fixture_records(name: str) -> list:
    reader = RecordReader()
    return reader.feed((FIXTURES / name).read_bytes()) + reader.close()


def answer(text):
    return Delta(Channel.ANSWER, text)


def test_before_any_content_a_spinner_says_connecting_with_the_elapsed_time():
    s = Screen()
    s.now = 0.5
    s.painter.tick()
    assert "connecting\u2026 0.5 s" in s.text()
    s.painter.arrived()
    s.now = 0.7
    s.painter.tick()
    assert "waiting for the model\u2026 0.7 s" in s.text()


def test_while_streaming_the_answer_is_marked_provisional_with_a_cursor():
    s = Screen()
    s.feed([answer("Hello"), answer(" world")])
    text = s.text()
    assert "Hello world\u258d" in text
    assert "receiving (provisional)" in text


def test_a_complete_answer_is_printed_once_stable_without_the_provisional_marks():
    s = Screen()
    s.feed([answer("Hello"), answer(" world"), End(Status.COMPLETE, "stop")])
    assert s.all_lines() == ["Hello world"]
    assert s.written().endswith("\rHello world\x1b[K\r\n\x1b[J\x1b[?2026l\x1b[?25h")  # written once, at the end


def test_a_cut_off_answer_stays_with_an_error_under_it_that_says_it_is_incomplete():
    s = Screen()
    s.feed([answer("The partial"), End(Status.TRUNCATED, detail="no terminal event")])
    assert s.all_lines() == [
        "The partial",
        "\u2717 the response was cut off before it finished (no terminal event); it can be",
        "retried",
        "  the answer above is incomplete",
    ]


def test_release_complete_shows_nothing_of_a_cut_answer_only_the_error():
    s = Screen(policy=make_policy("complete"))
    s.feed([answer("The partial answer"), End(Status.TRUNCATED, detail="no terminal event")])
    assert s.all_lines() == [
        "\u2717 the response was cut off before it finished (no terminal event); it can be",
        "retried",
        "  the rest of the partial answer (3 words) is not shown; --on-truncate keep",
        "shows it",
    ]


def test_on_truncate_keep_shows_what_the_policy_held_back_marked_incomplete():
    s = Screen(on_truncate="keep", policy=make_policy("complete"))
    s.feed([answer("The partial"), End(Status.TRUNCATED)])
    assert s.all_lines() == ["The partial", "\u2717 the response was cut off before it finished; it can be retried",
                             "  the answer above is incomplete"]


def test_a_provider_error_is_shown_with_its_type_and_message():
    s = Screen()
    s.feed([End(Status.ERROR, error={"type": "overloaded_error", "message": "Overloaded"})])
    assert "provider error: overloaded_error: Overloaded" in s.text()


def test_reasoning_streams_in_its_own_block_then_collapses_to_one_line():
    s = Screen()
    s.painter.draft.live = True
    records = fixture_records("anthropic/thinking-signature.sse")
    first_answer = next(i for i, r in enumerate(records) if isinstance(r, Delta) and r.channel is Channel.ANSWER)
    for record in records[:first_answer]:
        s.painter.arrived()
        s.feed([record])
    assert "thinking\u2026" in s.text() and "Captain Beak" in s.text()
    s.feed(records[first_answer:])
    lines = s.all_lines()
    assert lines[0].startswith("\u25b8 thought for ") and lines[0].endswith("(56 words)")
    assert lines[1:3] == ["1. **Pouch** - references their iconic bill pouch",
                          '2. **Pelé** - playful take on "pelican"']
    assert lines[3] == ("claude-haiku-4-5-20251001 \u00b7 46 in \u00b7 133 out \u00b7 first token 0.20 s "
                        "\u00b7 380 tok/s")
    assert len(lines) == 4


def test_a_file_read_at_once_says_the_word_count_without_a_time():
    s = Screen()
    s.feed(fixture_records("anthropic/thinking-signature.sse"))
    assert s.all_lines() == ["\u25b8 thought: 56 words",
                             "1. **Pouch** - references their iconic bill pouch",
                             '2. **Pelé** - playful take on "pelican"',
                             "claude-haiku-4-5-20251001 \u00b7 46 in \u00b7 133 out"]


def test_reasoning_show_keeps_the_reasoning_text_above_the_answer():
    s = Screen(reasoning="show")
    s.feed(fixture_records("anthropic/thinking-signature.sse"))
    text = s.text()
    assert "Captain Beak" in text and text.index("Captain Beak") < text.index("Pouch** - references")


INTERLEAVED = [Delta(Channel.REASONING, "First I think about A.\n"), answer("Answer part one.\n\n"),
               Delta(Channel.REASONING, "Now I reconsider B.\n"), answer("Answer part two.")]


@pytest.mark.parametrize("mode, lines", [
    ("show", ["First I think about A.", "\u25b4 thought: 5 words", "Answer part one.",
              "Now I reconsider B.", "\u25b4 thought: 4 words", "Answer part two."]),
    ("collapse", ["\u25b8 thought: 5 words", "Answer part one.", "\u25b8 thought: 4 words", "Answer part two."]),
])
@pytest.mark.parametrize("paints", ["each record", "once at the end"])
def test_reasoning_after_the_answer_started_is_laid_out_where_it_came(mode, lines, paints):
    # Anthropic's interleaved thinking, a Responses stream of several items: the second
    # run of reasoning was dropped (the reasoning was ended once, for good)
    s = Screen(reasoning=mode, footer=False)
    if paints == "each record":
        s.feed(INTERLEAVED + [End(Status.COMPLETE)])
    else:  # a file read at once: one paint, at the end, for all of it
        s.painter.feed_all(INTERLEAVED + [End(Status.COMPLETE)])
    assert s.all_lines() == lines


def test_a_second_run_of_reasoning_streams_in_the_tail_while_it_comes():
    s = Screen(reasoning="collapse")
    s.feed(INTERLEAVED[:3])
    lines = s.all_lines()
    assert lines[lines.index("Answer part one.") + 2] == "Now I reconsider B."  # (under the tail's blank row)
    assert lines[-1].endswith(" thinking\u2026 0.0 s")  # timed from the run's start


def test_reasoning_hide_shows_neither_the_text_nor_a_summary():
    s = Screen(reasoning="hide")
    s.feed(fixture_records("anthropic/thinking-signature.sse"))
    assert "Captain Beak" not in s.text() and "thought for" not in s.text()


def test_a_cut_inside_the_reasoning_shows_the_summary_and_the_cut_off_error():
    s = Screen()
    s.feed(fixture_records("anthropic/thinking-signature.cut-mid-frame.sse"))
    lines = s.all_lines()
    assert lines[0] == "\u25b8 thought: 56 words"
    assert lines[1].startswith("\u2717 the response was cut off") and "Captain Beak" not in s.text()


def test_markdown_renders_the_final_answer():
    s = Screen(markdown=True)
    s.feed([answer("Some **bold** words"), End(Status.COMPLETE)])
    assert "Some bold words" in s.text()


@pytest.mark.parametrize("tail, shown", [
    ("- one\n- two\n", ["• one", "• two"]),  # a list goes on across blank lines: open at the end
    ("```python\nx = 1\nprint(x)\n", ["x = 1", "print(x)"]),  # a fence never closed (cut by a length stop)
    ("| a | b |\n|---|---|\n| 1 | 2 |", ["1", "2"]),  # the last row without its line end
    ("Last words", ["Last words"]),
], ids=["list", "open-fence", "table", "line"])
@pytest.mark.parametrize("pieces", [1, 3])
def test_markdown_draws_the_open_block_at_the_end_as_it_stands(tail, shown, pieces):
    # the open block was drawn live as plain rows, then the final paint erased those rows
    # to draw it rendered, and gave it nothing to draw
    text = "Intro.\n\n" + tail
    s = Screen(markdown=True)
    step = -(-len(text) // pieces)
    s.feed([answer(text[i:i + step]) for i in range(0, len(text), step)] + [End(Status.COMPLETE, stop_reason="length")])
    screen = s.text()
    assert "Intro." in screen and all(part in screen for part in shown), screen


def test_the_terminal_view_loads_rich_markdown_only_for_markdown():
    # markdown-it and pygments come with it: a third of render's start-up on a terminal
    code = ("import sys\n"
            "from sse_tool.render.view_terminal import TerminalView\n"
            "print('rich.markdown' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout == "False\n", done.stderr


def test_a_long_answer_reaches_the_scrollback_line_by_line_once_and_only_the_tail_is_redrawn():
    s = Screen()
    s.feed([answer(f"line {i}\n") for i in range(200)], step=0.01)
    before = len(s.written())
    s.now += 1
    s.painter.feed(answer("line 200"))
    s.painter.tick()
    last_paint = s.written()[before:]
    assert last_paint.count("\n") < HEIGHT // 2
    lines = s.all_lines()
    assert lines[-3:] == ["line 199", "line 200\u258d", "\u280b receiving (provisional) \u00b7 402 words"]
    assert [line for line in lines[:-2] if line] == [f"line {i}" for i in range(200)]
    s.feed([End(Status.COMPLETE)])
    assert s.all_lines() == [f"line {i}" for i in range(201)]


def test_tool_calls_are_shown_as_one_line_with_name_and_arguments():
    s = Screen()
    s.feed([ToolCall(0, "c1", "get_weather", '{"city": "Paris"}'), End(Status.COMPLETE, "tool_use")])
    assert 'get_weather({"city": "Paris"})' in s.text()


def test_a_tool_call_cut_in_its_arguments_says_so_where_a_narrow_window_still_shows_it():
    data = (FIXTURES / "openai-chat" / "openai-tool-call-usage.sse").read_bytes()
    reader = RecordReader()
    s = Screen(width=40)
    s.feed(reader.feed(data[:data.index(b'"arguments":"country"') + 200]) + reader.close())
    assert s.lines()[0] == "\u2699 incomplete tool call: get_capital({\"c\u2026"


def test_a_reset_says_the_stream_restarted_and_only_the_new_attempt_is_the_answer():
    s = Screen()
    s.feed([answer("Old attempt"), Reset(), answer("New"), End(Status.COMPLETE)])
    lines = [line for line in s.lines() if line]
    assert "restarted" in lines[0] and lines[-1] == "New" and "Old attempt" not in s.text()


def test_interrupting_keeps_the_text_marked_incomplete_and_shows_the_cursor():
    s = Screen()
    s.feed([answer("partial")])
    s.painter.abort()
    assert s.written().endswith("\x1b[?25h")
    assert s.all_lines() == ["partial", "\u23f9 interrupted: the answer above is incomplete"]


def test_bad_input_says_it_stopped_on_bad_input_not_that_it_was_interrupted():
    # (render ends on its own bad input with the End an earlier stage's would give)
    s = Screen()
    s.feed([answer("partial"), End(Status.INVALID, detail="stopped: bad input", exit=5)])
    assert s.all_lines() == ["partial", "\u2717 stopped: bad input", "  the answer above is incomplete"]


def test_no_stream_leaves_the_screen_clean_for_the_one_line_message():
    s = Screen()
    s.painter.abort(None)
    assert s.text() == ""


def test_the_tail_is_drawn_with_autowrap_off_and_every_paint_ends_with_it_on():
    # A tail row the terminal draws wider than rich counts is clipped, not wrapped (a
    # wrapped row would make the move up land short); committed rows wrap as usual.
    s = Screen(20, 8)
    s.feed([answer("\U0001f44d\U0001f3fd " * 12), answer("\n\nnext")])
    s.feed([End(Status.COMPLETE)])
    tails = [out for out in s.out if "\x1b[?7l" in out]
    assert tails and all(out.endswith("\x1b[?7h\x1b[?2026l") for out in tails)
    for out in s.out:  # the blank row, then autowrap off, then only the tail
        assert out.count("\x1b[?7l") == out.count("\x1b[?7h") <= 1
        if "\x1b[?7l" in out:
            assert out.index("\x1b[?7l") > out.rfind("\x1b[K\r\n", 0, out.index("\x1b[?7l")) >= 0
    assert "\x1b[?7l" not in s.out[-1]  # the final answer, never clipped


class Measured(str):
    """The answer as a view reads it, keeping the length of every text split into words
    (a slice of it is a plain str: only the whole answer is measured)."""

    splits: list[int] = []

    def split(self, *args):
        Measured.splits.append(len(self))
        return super().split(*args)


class MeasuredDraft(Draft):
    @property
    def answer(self) -> str:
        return Measured(super().answer)


@pytest.mark.parametrize("release", ["delta", "sentence"])
def test_a_paint_counts_the_words_of_the_new_text_not_of_the_whole_answer(release):
    # len(answer.split()) at each paint: 72 ms a paint at 2 million characters
    view = TerminalView(lambda text: None, lambda: (80, 24), colour=False, policy=make_policy(release))
    draft, Measured.splits = MeasuredDraft(), []
    for i in range(300):  # (a word cut between deltas now and then)
        draft.add(answer(f"word{i} is one. " if i % 3 else "ha"), float(i))
        view.paint(draft, float(i))
    assert not Measured.splits  # only slices of the new text were split
    draft.add(answer("lf"), 300.0)
    out = []
    view.write = out.append
    view.paint(draft, 300.0)
    text = str.__str__(draft.answer)
    held = len(text.split()) - len(text[:make_policy(release).upto(text)].split())
    status = f"receiving (provisional) \u00b7 {len(text.split())} words" + (f" \u00b7 {held} held back" if held else "")
    assert status + "\x1b[0m" in "".join(out)  # as the whole answer's words say


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=" \n\tab\u3000\x1c", max_size=6), max_size=12))
def test_words_counted_piece_by_piece_are_the_words_of_the_whole(pieces):
    counter, text = Words(), ""
    for piece in pieces:
        text += piece
        assert counter.of(text, len(text)) == len(text.split())
