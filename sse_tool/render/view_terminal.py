"""The terminal view: the answer drawn for a person, append-only with a small live tail.

Consumes the painter's calls; produces terminal output through ``write`` (a callable
taking str) for a terminal of ``size()`` (columns, rows); both injected, so tests feed
the output to a terminal emulator. ``screen.LiveScreen`` says how the bytes hold up
against other writers and resizes; this module decides what the rows are:

* committed, once, as soon as they can no longer change: the answer's finished
  paragraphs (and the first rows of one taller than the tail allows), with
  ``markdown`` its finished blocks rendered by rich, one at a time; the reasoning
  (``show``) or its one-line summary (``collapse``); earlier stages' notes; a restart;
* the tail, redrawn by each paint and kept to a third of the screen: the open
  paragraph or block (an open code fence drawn as code), tool calls, and a status line
  saying that the text is provisional, or a spinner before any content.

What is shown while streaming follows the release policy, as in a pipe: ``delta`` all
of it, ``sentence`` whole sentences, ``complete`` nothing before the end. At the end
the rest is committed and one line says how the stream ended: a footer (model, tokens,
cost, timing) under a complete answer; under a cut or failed one, an error saying that
the text above is incomplete (``--on-truncate keep`` also shows what the policy held
back); on Ctrl-C, that it was interrupted. Nothing shown is taken back.

It knows no clock (``now`` is passed in), no input, no exit codes and no files.
"""

from __future__ import annotations

import re

from ..marker import NO_STREAM
from ..model import Channel, End, Status, error_words, stopped_early
from ..plural import count
from .blocks import Splitter, is_open_fence
from .draft import Draft
from .footer import footer
from .release import DeltaRelease
from .controls import one_line
from .rows import Words, clean, raw_offsets, wrap
from .screen import LiveScreen
from .view_plain import summary, tool_line

SPINNER = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f"
CURSOR = "\u258d"
_SGR = {"bold": "1", "dim": "2", "italic": "3", "red": "31", "yellow": "33", "cyan": "36"}
_COLOURS = {"red", "yellow", "cyan"}
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
#: at most this many tool calls in the tail (the rest are counted)
TOOLS_SHOWN = 3


class TerminalView:
    animates = True

    def __init__(self, write, size, *, colour: bool = True, colour_system: str | None = "standard",
                 reasoning: str = "collapse", markdown: bool = False, on_truncate: str = "replace",
                 policy=None, footer: bool = True) -> None:
        self.write = write
        self.size = size
        self.colour = colour
        self.colour_system = colour_system if colour else None
        self.reasoning = reasoning
        self.markdown = markdown
        self.keep_partial = on_truncate == "keep"
        self.policy = policy or DeltaRelease()
        self.show_footer = footer
        self.screen = LiveScreen()
        self._md = None  # a rich Console that renders a Markdown block, made once
        self._pending: list[str] = []  # rows to commit at the next paint (notes, a restart)
        self._start_attempt()

    def _start_attempt(self) -> None:
        self._done = 0  # characters of the answer committed
        self._splitter = Splitter()  # the answer's Markdown blocks (--markdown)
        self._gap = False  # a paragraph break is owed before the next committed row
        self._committed_any = False  # rows of this attempt's answer are on screen
        self._thought = False  # a run of reasoning is over: its summary (or text) is committed
        self._reasoning_done = 0  # characters of reasoning committed (show)
        self._turns = 0  # the draft's turns laid out so far
        self._run = 0  # where the reasoning's current run starts (characters)
        self._since = 0.0  # when it started
        self._words, self._shown_words = Words(), Words()  # of the answer, of what is shown of it

    # -- the painter's calls ------------------------------------------------------------

    def paint(self, draft: Draft, now: float) -> None:
        width, height = self.size()
        commit, tail = self._pending, []
        self._pending = []
        budget = max(2, height // 3)
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        if not draft.has_content:
            label = "waiting for the model" if draft.got_bytes else "connecting"
            tail.append(self._style(f"{frame} {label}\u2026 {now - draft.started:.1f} s", "dim"))
        elif self._take_turns(draft, commit, now, width):
            tail += self._reasoning_rows(draft.reasoning, commit, width, budget, final=False)
            tail.append(self._style(f"{frame} thinking\u2026 {now - self._since:.1f} s", "dim italic"))
        else:
            answer = draft.answer
            upto = self.policy.upto(answer)
            if answer or not draft.refusal:
                shown = answer[:upto]  # (the answer itself, not a copy, when all of it is released)
                tail += self._answer_rows(shown, commit, width, budget, final=False)
            else:  # a refusal streams in the answer's place, marked as one
                tail += [self._style(r, "yellow") for r in self._last_rows(draft.refusal, width, budget)]
            if tail and self.policy.name == "delta":
                tail[-1] = tail[-1] + self._style(CURSOR, "dim") if _fits(tail[-1], width) else tail[-1]
            tail += self._tool_rows(draft, width)
            words = self._words.of(answer, len(answer))
            held = words - self._shown_words.of(answer, upto)
            status = f"{frame} receiving (provisional) \u00b7 {count(words, 'word')}"
            tail.append(self._style(status + (f" \u00b7 {held} held back" if held > 0 else ""), "dim"))
        # the tail and the blank row above it fit the screen, however small (else each
        # paint would scroll part of it into the scrollback): its first rows go (the open
        # text's; they are committed once finished)
        tail = tail[len(tail) - (height - 1):] if len(tail) >= height else tail
        self.write(self.screen.paint(commit, [_cut(row, width) for row in tail], width))

    def note(self, text: str, now: float) -> None:
        self._pending += self._lines("\u00bb " + text, "dim", self.size()[0])

    def reset(self, draft: Draft, now: float) -> None:
        if self._committed_any or self._thought:
            text = "\u21bb the stream restarted: the text above belongs to a discarded attempt"
        else:
            text = "\u21bb the stream restarted: the previous attempt was discarded"
        self._pending += self._lines(text, "yellow", self.size()[0])
        self.policy.reset()
        self._start_attempt()

    def finish(self, draft: Draft, end: End, now: float) -> None:
        width, _ = self.size()
        commit, self._pending = self._pending, []
        complete = end.status is Status.COMPLETE
        if self._take_turns(draft, commit, now, width):
            self._end_run(draft, commit, now, width, draft.transcript.size(Channel.REASONING))
        answer = draft.answer
        shown = answer if complete or self.keep_partial else answer[:self.policy.upto(answer)]
        self._answer_rows(shown, commit, width, 0, final=True)
        for call in draft.tool_calls(end):
            commit.append(self._style(_cut("\u2699 " + tool_line(call), width), "cyan"))
        if draft.refusal:
            commit += self._lines(f"\u2298 the model refused: {draft.refusal}", "bold yellow", width)
        if complete:
            if not answer and not draft.tool_calls() and not draft.refusal:
                commit.append(self._style("(the answer is empty)", "dim"))
            if stopped_early(end.stop_reason):
                commit += self._lines(f"\u26a0 the model stopped early: {end.stop_reason}", "bold yellow", width)
            elif end.detail:
                commit += self._lines(f"\u26a0 {end.detail}", "bold yellow", width)
            line = footer(draft, end, now) if self.show_footer else None
            if line:  # (the model's name and usage keys are the provider's text)
                commit.append(self._style(_cut(one_line(clean(line)), width), "dim"))
        else:
            commit += self._failure(end, answer, shown, width)
        self.write(self.screen.close(commit, width))

    def suspend(self, draft: Draft, now: float) -> None:
        self.write(self.screen.suspend())

    def abort(self, draft: Draft, now: float, why: str | None = "interrupted") -> None:
        width, _ = self.size()
        commit, self._pending = self._pending, []
        answer = draft.answer
        shown = answer if self.keep_partial else answer[:self.policy.upto(answer)]
        self._take_turns(draft, commit, now, width)  # (a run still open is left as it stands)
        self._answer_rows(shown, commit, width, 0, final=True)
        if why:
            said = ": the answer above is incomplete" if shown.strip() else ""
            commit += self._lines(f"\u23f9 {why}{said}", "bold red", width)
        self.write(self.screen.close(commit, width))

    # -- what the rows are --------------------------------------------------------------

    def _failure(self, end: End, answer: str, shown: str, width: int) -> list[str]:
        if end.status is Status.ERROR:
            message = f"\u2717 provider error: {error_words(end.error)}"
        elif end.status is Status.TRUNCATED and end.detail == NO_STREAM:
            message = f"\u2717 {NO_STREAM}"
        elif end.status is Status.TRUNCATED:
            detail = f" ({end.detail})" if end.detail else ""
            message = f"\u2717 the response was cut off before it finished{detail}; it can be retried"
        else:
            message = f"\u2717 {end.detail or 'an earlier stage failed'}"
        rows = self._lines(message, "bold red", width)
        if shown.strip():
            rows += self._lines("  the answer above is incomplete", "red", width)
        held = len(answer.split()) - len(shown.split())
        if held > 0:
            rows += self._lines(f"  the rest of the partial answer ({count(held, 'word')}) is not shown; "
                                "--on-truncate keep shows it", "red", width)
        return rows

    def _lines(self, text: str, style: str, width: int) -> list[str]:
        """A message as committed rows: made safe, each of its lines wrapped by words (a
        provider's error or refusal may hold line ends: a row must not), each row styled."""
        return [self._style(row, style) for line in clean(text).split("\n") for row, _ in wrap(line, width)]

    def _answer_rows(self, text: str, commit: list[str], width: int, budget: int, final: bool) -> list[str]:
        """Commit what of ``text`` is finished; the rows of the open part (or, ``final``,
        commit everything)."""
        open_text = text[self._done:]
        if not open_text:
            return []
        if self.markdown:
            return self._markdown_rows(text, commit, width, budget, final)
        if final:
            self._commit_text(open_text.rstrip("\n"), commit, width)
            self._done = len(text)
            return []
        breaks = list(_BLANK_LINE.finditer(open_text))
        if breaks:  # finished paragraphs: the blank row under them is the one the cursor waits on
            self._commit_text(open_text[:breaks[-1].start()], commit, width)
            self._gap = True
            self._done += breaks[-1].end()
            open_text = open_text[breaks[-1].end():]
        rows = []  # (row, offset in open_text where the row starts)
        offset = 0
        for line in open_text.split("\n"):
            at = raw_offsets(line)  # (a row's start in the cleaned line is not the line's)
            rows += [(row, offset + (start if at is None else at[start])) for row, start in wrap(clean(line), width)]
            offset += len(line) + 1
        if len(rows) > budget:  # a paragraph taller than the tail: its first rows are final
            keep = rows[-budget]
            self._commit_rows([row for row, _ in rows[:-budget]], commit)
            self._done += keep[1]
            rows = rows[-budget:]
        return [row for row, _ in rows]

    def _markdown_rows(self, text: str, commit: list[str], width: int, budget: int, final: bool) -> list[str]:
        """Finished blocks rendered into the scrollback once; the open block's last rows."""
        splitter = self._splitter
        for block in splitter.finish(text) if final else splitter.feed(text):
            self._commit_rows(self._render_markdown(block, width), commit, gap=True)
        self._done = min(splitter.start, len(text))
        if final or not text[self._done:].strip():
            return []
        code = is_open_fence(text[self._done:self._done + 16])
        rows = self._last_rows(text[self._done:], width, budget + 1)  # only the end is wrapped
        if code and len(rows) <= budget:  # the whole block is there: its fence line is no code
            rows = rows[1:]
        return [self._style(row, "cyan") if code else row for row in rows[-budget:]]

    def _render_markdown(self, block: str, width: int) -> list[str]:
        if self._md is None:
            self._md = _markdown_console(self.colour_system)
        console = self._md
        console.width = width
        with console.capture() as capture:
            console.print(_markdown(clean(block)))  # (rich passes escape sequences on)
        rows = capture.get().split("\n")
        while rows and not _visible(rows[-1]):
            rows.pop()
        while rows and not _visible(rows[0]):
            rows.pop(0)
        return rows

    def _commit_text(self, text: str, commit: list[str], width: int) -> None:
        if not text.strip():
            return
        self._commit_rows([row for line in text.split("\n") for row, _ in wrap(clean(line), width)], commit)

    def _commit_rows(self, rows: list[str], commit: list[str], gap: bool = False) -> None:
        if not rows:
            return
        if (self._gap or (gap and self._committed_any)) and self._committed_any:
            commit.append("")
        self._gap = False
        commit += rows
        self._committed_any = True

    def _reasoning_rows(self, text: str, commit: list[str], width: int, budget: int, final: bool) -> list[str]:
        """The open run of reasoning (``text`` is the reasoning up to its end): with ``show``
        its whole lines are committed as they come, dim; the rows of the rest."""
        if self.reasoning == "hide":
            return []
        if self.reasoning == "show":
            end = text.rfind("\n") + 1 if not final else len(text)
            if end > self._reasoning_done:
                piece = text[self._reasoning_done:end].rstrip("\n")
                commit += [self._style(r, "dim") for line in piece.split("\n") for r, _ in wrap(clean(line), width)]
                self._reasoning_done = end
            rest = text[self._reasoning_done:]
            return [self._style(r, "dim") for r in self._last_rows(rest, width, budget - 1)] if rest else []
        return [self._style(r, "dim") for r in self._last_rows(text[self._run:], width, budget - 1)]

    def _take_turns(self, draft: Draft, commit: list[str], now: float, width: int) -> bool:
        """Lay out, in order, the turns the draft took since the last paint: the answer
        gives way to reasoning (its text so far is committed as it stands), or a run of
        reasoning ends (committed once, with its summary). True while no answer came yet."""
        turns = draft.turns
        while self._turns < len(turns):
            reasoning_size, answer_size, at = turns[self._turns]
            if self._turns % 2:  # (turns alternate, reasoning first)
                self._end_run(draft, commit, now, width, reasoning_size)
            else:
                answer = draft.answer[:answer_size]
                self._answer_rows(answer[:self.policy.upto(answer)], commit, width, 0, final=True)
                self._run = self._reasoning_done = reasoning_size
                self._since = at
                # the run's rows part the answer's paragraphs, as they part the first from it
                self._gap = self._gap and self.reasoning == "hide"
            self._turns += 1
        return draft.thinking

    def _end_run(self, draft: Draft, commit: list[str], now: float, width: int, upto: int) -> None:
        """A run of reasoning (from ``_run`` to ``upto``) is over: committed once."""
        text = draft.reasoning[:upto]
        if not text[self._run:]:
            return
        # (only the first run is timed: the answer's start ends it)
        said = summary(draft, now, text[self._run:], first=not self._run)
        if self.reasoning == "show":
            self._reasoning_rows(text, commit, width, 2, final=True)
            commit.append(self._style(f"\u25b4 {said}", "dim"))
        elif self.reasoning == "collapse":
            commit.append(self._style(f"\u25b8 {said}", "dim"))
        self._thought = True
        self._run = upto

    def _last_rows(self, text: str, width: int, count: int) -> list[str]:
        """The last ``count`` rows of ``text`` (only its end is wrapped: the screen's worth)."""
        count = max(1, count)
        piece = text[-count * (width + 1):]
        rows = [row for line in piece.split("\n") for row, _ in wrap(clean(line), width)]
        return rows[-count:]

    def _tool_rows(self, draft: Draft, width: int) -> list[str]:
        calls = draft.tool_calls()
        rows = [self._style(_cut("\u2699 " + tool_line(c, width), width), "cyan") for c in calls[:TOOLS_SHOWN]]
        if len(calls) > TOOLS_SHOWN:
            rows.append(self._style(f"\u2699 \u2026 and {len(calls) - TOOLS_SHOWN} more", "cyan"))
        return rows

    def _style(self, text: str, style: str) -> str:
        codes = [_SGR[s] for s in style.split() if self.colour or s not in _COLOURS]
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if codes and text else text


_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _visible(row: str) -> bool:
    return bool(_ESCAPE.sub("", row).strip())


def _fits(row: str, width: int) -> bool:
    from rich.cells import cell_len

    return cell_len(_ESCAPE.sub("", row)) < width


def _cut(row: str, width: int) -> str:
    """A status or tool row cut to the width (they are never wrapped)."""
    from rich.cells import cell_len

    plain = _ESCAPE.sub("", row)
    if cell_len(plain) <= width:
        return row
    from rich.cells import set_cell_size

    return set_cell_size(plain, width - 1) + "\u2026"


def _markdown_console(colour_system: str | None):
    import io

    from rich.console import Console

    return Console(file=io.StringIO(), force_terminal=True, color_system=colour_system, width=80,
                   _environ={}, highlight=False)


def _markdown(text: str):
    # rich.markdown brings markdown-it and pygments: a third of the start-up on a terminal,
    # paid only by --markdown.
    from rich.markdown import Markdown

    return Markdown(text)
