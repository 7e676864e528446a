"""The painter: receiving is not painting. A fake clock, a view that logs every call."""

from __future__ import annotations

from sse_tool.model import Channel, Delta, End, Reset, Status, ToolCall, Usage
from sse_tool.render.throttle import SPINNER_DELAY, Painter


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class LogView:
    """Records what each call would have shown."""

    def __init__(self, animates: bool = False) -> None:
        self.animates = animates
        self.log: list[tuple] = []

    def paint(self, draft, now):
        self.log.append(("paint", draft.answer, now))

    def reset(self, draft, now):
        self.log.append(("reset", draft.answer, now))

    def finish(self, draft, end, now):
        self.log.append(("finish", draft.answer, end.status))

    def abort(self, draft, now, why=None):
        self.log.append(("abort", draft.answer, now))

    def kinds(self):
        return [entry[0] for entry in self.log]


def answer(text: str) -> Delta:
    return Delta(Channel.ANSWER, text)


def make(interval=0.04, animates=False):
    clock = FakeClock()
    view = LogView(animates)
    return clock, view, Painter(view, clock, interval)


def test_a_burst_of_1000_deltas_in_100ms_gives_at_most_3_paints():
    clock, view, painter = make()
    for _ in range(1000):
        painter.feed(answer("x"))
        painter.tick()
        clock.advance(0.0001)
    assert painter.paints <= 3
    assert view.kinds() == ["paint"] * painter.paints


def test_a_delta_only_stores_and_the_tick_paints_the_latest_aggregate():
    clock, view, painter = make()
    painter.feed(answer("a"))
    painter.feed(answer("b"))
    assert view.log == []
    painter.tick()
    assert view.log == [("paint", "ab", 0.0)]


def test_no_paint_before_the_interval_has_passed_and_one_when_it_has():
    clock, view, painter = make()
    painter.feed(answer("a"))
    painter.tick()
    painter.feed(answer("b"))
    clock.advance(0.039)
    painter.tick()
    assert painter.paints == 1
    assert painter.deadline() == 0.04
    clock.advance(0.001)
    painter.tick()
    assert [e[1] for e in view.log] == ["a", "ab"]


def test_ticks_without_new_deltas_paint_nothing():
    clock, view, painter = make()
    painter.feed(answer("a"))
    for _ in range(10):
        painter.tick()
        clock.advance(0.05)
    assert painter.paints == 1
    assert painter.deadline() is None


def test_interval_zero_paints_every_delta():
    clock, view, painter = make(interval=0)
    for piece in "abc":
        painter.feed(answer(piece))
    assert [e[1] for e in view.log] == ["a", "ab", "abc"]


def test_reset_cancels_the_pending_paint_and_paints_the_empty_draft_at_once():
    clock, view, painter = make()
    painter.feed(answer("first"))
    painter.tick()
    painter.feed(answer(" attempt"))  # pending, not yet due
    painter.feed(Reset())
    assert view.log[-2:] == [("reset", "", 0.0), ("paint", "", 0.0)]
    assert painter.deadline() is None  # the pending paint of the void attempt is gone
    clock.advance(1)
    painter.tick()
    assert view.kinds() == ["paint", "reset", "paint"]


def test_finishing_cancels_the_pending_paint_before_the_final_answer():
    clock, view, painter = make()
    painter.feed(answer("Hel"))
    painter.tick()
    painter.feed(answer("lo"))  # a paint is pending
    painter.feed(End(Status.COMPLETE, "stop"))
    clock.advance(1)
    painter.tick()
    painter.feed(answer(" late"))
    assert view.log == [("paint", "Hel", 0.0), ("finish", "Hello", Status.COMPLETE)]
    assert painter.deadline() is None


def test_every_frame_shown_is_a_prefix_of_the_final_text():
    clock, view, painter = make()
    words = [f"w{i} " for i in range(300)]
    for i, word in enumerate(words):
        painter.feed(answer(word))
        clock.advance(0.003 * (i % 7))
        painter.tick()
    painter.feed(End(Status.COMPLETE))
    final = "".join(words)
    assert view.log[-1] == ("finish", final, Status.COMPLETE)
    assert all(final.startswith(text) for kind, text, _ in view.log[:-1])
    assert len(view.log) > 10


def test_an_animating_view_gets_spinner_frames_only_before_content():
    clock, view, painter = make(animates=True)
    assert painter.deadline() == SPINNER_DELAY
    clock.advance(0.1)
    painter.tick()
    assert view.log == []
    clock.advance(SPINNER_DELAY)
    painter.tick()
    clock.advance(0.1)
    painter.tick()
    assert painter.spins == 2 and painter.paints == 0
    painter.feed(answer("a"))
    painter.tick()
    clock.advance(1)
    painter.tick()
    assert painter.spins == 2 and painter.paints == 1


def test_records_that_change_nothing_visible_schedule_no_paint():
    clock, view, painter = make()
    painter.feed(Usage({"output_tokens": 3}))
    painter.feed(answer(""))
    assert painter.deadline() is None
    painter.feed(ToolCall(0, "call_1", "get_weather", ""))
    assert painter.deadline() == 0.0


def test_abort_stops_painting_and_tells_the_view():
    clock, view, painter = make()
    painter.feed(answer("par"))
    painter.abort()
    painter.tick()
    assert view.kinds() == ["abort"]
