"""The terminal view: the answer drawn for a person, with rich.

Consumes the painter's calls; produces screen updates on a rich ``Console`` (injected, so
tests capture it in a string). While the stream runs, one ``Live`` region at the bottom
shows only what is still changing, cut to the terminal height: a spinner before any
content; the reasoning while it streams; the tail of the answer with a cursor and a dim
"provisional" label; one line per tool call. Finished blocks (the reasoning, collapsed to
a one-line summary or shown in full) are committed above the region and never redrawn, so
a long answer neither flickers nor freezes past the screen height. On finish the region is
dropped and the result printed once, stable: the answer (as Markdown if asked), or, for a
cut-off stream, an error saying so in place of the partial answer (or the partial answer
marked incomplete, with ``on_truncate="keep"``), or the provider's error.

It deliberately does not know time (``now`` is passed in), input, exit codes or files.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from ..model import End, Status
from ..model import stopped_early
from .draft import Draft
from .view_plain import summary, tool_line

SPINNER = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f"
CURSOR = "\u258d"


class TerminalView:
    animates = True

    def __init__(self, console: Console, *, reasoning: str = "collapse", markdown: bool = False,
                 on_truncate: str = "replace") -> None:
        self.console = console
        self.reasoning = reasoning
        self.markdown = markdown
        self.keep_partial = on_truncate == "keep"
        self.live = Live(console=console, auto_refresh=False, transient=True,
                         redirect_stdout=False, redirect_stderr=False)
        self._committed = 0  # characters of reasoning committed above the live region

    # -- the painter's calls ------------------------------------------------------------

    def paint(self, draft: Draft, now: float) -> None:
        if not self.live.is_started:
            self.live.start()
        if draft.answer_started is not None:
            self._commit_reasoning(draft, now)
        self.live.update(self._region(draft, now), refresh=True)

    def reset(self, draft: Draft, now: float) -> None:
        if self.live.is_started:
            self.live.update(Text(""), refresh=False)
        self._commit(Text("\u21bb the stream restarted: the previous attempt was discarded", style="yellow"))
        self._committed = 0

    def finish(self, draft: Draft, end: End, now: float) -> None:
        self._stop()
        self._commit_reasoning(draft, now)
        print_ = self.console.print
        for call in draft.tool_calls():
            print_(Text("\u2699 " + tool_line(call), style="cyan", overflow="ellipsis", no_wrap=True))
        answer = draft.answer
        if draft.refusal:
            print_(Text(f"\u2298 the model refused: {draft.refusal}", style="bold yellow"))
        if end.status is Status.COMPLETE:
            if answer:
                print_(_markdown(answer) if self.markdown else Text(answer))
            elif not draft.tool_calls() and not draft.refusal:
                print_(Text("(the answer is empty)", style="dim"))
            if stopped_early(end.stop_reason):
                print_(Text(f"\u26a0 the model stopped early: {end.stop_reason}", style="bold yellow"))
            return
        if end.status is Status.ERROR:
            err = end.error or {}
            message = f"\u2717 provider error: {err.get('type', 'error')}: {err.get('message', '')}"
        else:
            detail = f" ({end.detail})" if end.detail else ""
            message = f"\u2717 the response was cut off before it finished{detail}; it can be retried"
        if answer and self.keep_partial:
            print_(Text(answer))
            print_(Text("[incomplete: the answer above is partial]", style="bold red"))
        elif answer:
            words = len(answer.split())
            message += f"\n  the partial answer ({words} words) is not shown; --on-truncate keep shows it"
        print_(Text(message, style="bold red"))

    def abort(self, draft: Draft, now: float, why: str | None = "interrupted") -> None:
        self._stop()
        self._commit_reasoning(draft, now)
        if draft.answer and self.keep_partial:
            self.console.print(Text(draft.answer))
        if why:
            self.console.print(Text(f"\u23f9 {why}: the answer is incomplete", style="bold red"))

    # -- drawing ------------------------------------------------------------------------

    def _region(self, draft: Draft, now: float) -> Group:
        width, height = self.console.size
        budget = max(3, height - 1)  # the region must fit, or rich scrolls and freezes it
        parts: list = []
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        if not draft.has_content:
            label = "waiting for the model" if draft.got_bytes else "connecting"
            return Group(Text(f"{frame} {label}\u2026 {now - draft.started:.1f} s", style="dim"))
        tools = [Text("\u2699 " + tool_line(c, width), style="cyan", overflow="ellipsis", no_wrap=True)
                 for c in draft.tool_calls()]
        budget -= len(tools) + 1
        if draft.answer_started is None and draft.reasoning_started is not None:
            thought = now - draft.reasoning_started
            parts.append(Text(f"{frame} thinking\u2026 {thought:.1f} s", style="dim italic"))
            if self.reasoning != "hide":
                parts.append(self._tail(draft.reasoning[self._committed:], width, budget - 1, "dim"))
        elif draft.answer_started is not None:
            shown = draft.answer or draft.refusal  # a refusal streams in the answer's place
            parts.append(self._tail(shown, width, budget, "" if draft.answer else "yellow", cursor=True))
        parts += tools
        words = len(draft.answer.split()) if draft.answer_started is not None else 0
        parts.append(Text(f"\u2026 receiving (provisional) \u00b7 {words} words", style="dim"))
        return Group(*parts)

    def _tail(self, text: str, width: int, lines: int, style: str, cursor: bool = False) -> Text:
        """The last ``lines`` screen lines of ``text``, wrapped to ``width``.

        Only the last ``lines * (width + 1)`` characters can reach the screen, so only they
        are wrapped: a paint costs the screen size, not the answer length.
        """
        lines = max(1, lines)
        piece = Text(text[-lines * (width + 1):], style=style)
        if cursor:
            piece.append(CURSOR, style="dim")
        wrapped = piece.wrap(self.console, width, overflow="fold")
        tail = Text("\n").join(wrapped[-lines:])
        tail.no_wrap = True  # already wrapped: rendering need not divide the lines again
        return tail

    def _commit_reasoning(self, draft: Draft, now: float) -> None:
        text = draft.reasoning
        if len(text) <= self._committed:
            return
        if self.reasoning == "show":
            self._commit(Text(f"\u25be {summary(draft, now)}", style="dim"))
            self._commit(Text(text[self._committed:], style="dim"))
        elif self.reasoning == "collapse":
            self._commit(Text(f"\u25b8 {summary(draft, now)}", style="dim"))
        self._committed = len(text)

    def _commit(self, renderable) -> None:
        self.console.print(renderable)  # with Live running, this lands above its region

    def _stop(self) -> None:
        if self.live.is_started:
            self.live.update(Text(""), refresh=False)
            self.live.stop()
        self.console.show_cursor(True)


def _markdown(text: str):
    # rich.markdown brings markdown-it and pygments: a third of the start-up on a terminal,
    # paid only by --markdown.
    from rich.markdown import Markdown

    return Markdown(text)
