"""The whole picture a person is left with: ``render`` on a real pseudo-terminal, in the
pipes the README shows, with other writers, resizes and Ctrl-C at random moments.

Every process of a pipe writes to one pty (as in a shell); pyte's ``HistoryScreen``
reads it, so each test compares the scrollback and the screen, whole, with what is
expected. The randomised tests use fixed seeds; ``SSE_TOOL_SLOW=1`` runs many more.
"""

from __future__ import annotations

import fcntl
import os
import random
import re
import select
import shlex
import signal
import struct
import subprocess
import termios
import time

import pyte
import pytest

from ..serve_process import ServeProcess
from ..support import FIXTURES, SSE_TOOL, clean_env

COLS, ROWS = 80, 24
PATIENCE = 30  # a bound on waiting for a process, not a timing assertion
SEEDS = range(40) if os.environ.get("SSE_TOOL_SLOW") else range(3)
TOOL = " ".join(shlex.quote(part) for part in SSE_TOOL)
ANSWER = ["1. **Pouch** - references their iconic bill pouch", '2. **Pelé** - playful take on "pelican"']
THOUGHT = re.compile(r"^\u25b8 thought(?: for \d+\.\d s \(56 words\)|: 56 words)$")


class Terminal:
    """A shell command line run with a pty of COLS x ROWS as its stdout and stderr."""

    def __init__(self, command: str, stdin=subprocess.DEVNULL, cols: int = COLS, rows: int = ROWS,
                 session: bool = True, **extra_env: str) -> None:
        master, self.slave = os.openpty()
        self.cols, self.rows = cols, rows
        self._winsize(cols, rows)
        env = clean_env(TERM="xterm-256color")
        for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):
            env.pop(name, None)
        env.update(extra_env)
        # (without a session of its own, a process group of its own whose parent, this
        # process, is in the same session, as a shell's job is: the kernel stops such a
        # group on SIGTSTP, an orphaned one it does not)
        self.proc = subprocess.Popen(["bash", "-c", command], stdin=self.slave if stdin == "pty" else stdin,
                                     stdout=self.slave,
                                     stderr=self.slave, env=env, start_new_session=session,
                                     preexec_fn=None if session else os.setpgrp)
        self.master = master
        self.raw = b""
        self.screen = pyte.HistoryScreen(cols, rows, history=100000)
        self.stream = pyte.ByteStream(self.screen)

    def _winsize(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def resize(self, cols: int) -> None:
        """A new width, as a terminal window would get it: the pty's size, then SIGWINCH."""
        self.pump(0.05)
        self.screen.resize(self.rows, cols)
        self._winsize(cols, self.rows)
        self.cols = cols
        os.killpg(self.proc.pid, signal.SIGWINCH)

    def pump(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            return False
        self.raw += chunk
        self.stream.feed(chunk)
        return bool(chunk)

    def wait_for(self, needle: str) -> None:
        deadline = time.monotonic() + PATIENCE
        while needle not in "\n".join(self.lines()) and time.monotonic() < deadline:
            if not self.pump(0.05):
                break

    def finish(self) -> int:
        deadline = time.monotonic() + PATIENCE
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.pump(0.05)
        code = self.proc.wait(PATIENCE)
        os.close(self.slave)
        while self.pump(0.05):
            if not select.select([self.master], [], [], 0.05)[0]:
                break
        os.close(self.master)
        return code

    def lines(self) -> list[str]:
        """The scrollback, then the screen, each row without trailing blanks; no blank end."""
        width = self.screen.columns
        rows = [[line[x].data for x in range(width)] for line in self.screen.history.top]
        rows += [[self.screen.buffer[y][x].data for x in range(width)] for y in range(self.screen.lines)]
        lines = ["".join(row).rstrip() for row in rows]
        while lines and not lines[-1]:
            lines.pop()
        return lines


def thought(lines: list[str]) -> list[str]:
    """The reasoning's summary line, whose time depends on the run, made comparable."""
    return ["\u25b8 thought (56 words)" if THOUGHT.match(line) else line for line in lines]


@pytest.fixture(scope="module")
def serve():
    server = ServeProcess(str(FIXTURES / "anthropic"), str(FIXTURES / "openai-chat"))
    yield server
    server.stop()


# -- the README's pipes ---------------------------------------------------------------------

def test_the_readme_pipe_with_a_cut_leaves_the_partial_answer_and_the_error_under_it(serve):
    url = serve.url("/thinking-signature?cut_after_events=14")
    term = Terminal(f"{TOOL} fetch {shlex.quote(url)} | {TOOL} render --no-footer")
    assert term.finish() == 3
    lines = thought(term.lines())
    assert lines[:3] == ["\u25b8 thought (56 words)", *ANSWER]
    assert lines[3].startswith("\u2717 the response was cut off before it finished (fetch: body cut short after")
    assert lines[-1] == "  the answer above is incomplete"
    text = "\n".join(lines)
    assert "sse-tool" not in text and "provisional" not in text and "\u280b" not in text  # nobody else wrote


def test_a_429_with_retry_shows_fetchs_notice_in_the_view_then_the_answer(serve):
    url = serve.url("/thinking-signature?status=429&retry_after=1&times=1")
    term = Terminal(f"{TOOL} fetch --retry 2 {shlex.quote(url)} | {TOOL} render --no-footer")
    assert term.finish() == 0
    assert thought(term.lines()) == [
        "\u00bb fetch: HTTP 429 Too Many Requests: Too Many Requests (a fault injected by",
        "sse-tool serve) (rate_limit_error); retry 1/2 in 1s (Retry-After)",
        "\u25b8 thought (56 words)", *ANSWER,
    ]


def test_a_reset_by_retry_partial_says_the_text_above_belongs_to_a_discarded_attempt(serve):
    url = serve.url("/thinking-signature?cut_after_events=14&times=1")
    term = Terminal(f"{TOOL} fetch --retry 1 --retry-delay 10ms --retry-partial {shlex.quote(url)} "
                    f"| {TOOL} frame | {TOOL} normalize | {TOOL} render --no-footer")
    assert term.finish() == 0
    lines = thought(term.lines())
    # the cut came before the answer's lines were final: only the attempt's reasoning
    # summary had reached the scrollback
    notice = lines.index("\u21bb the stream restarted: the text above belongs to a discarded attempt")
    assert lines[notice + 1:] == ["\u25b8 thought (56 words)", *ANSWER]
    assert lines[0] == "\u25b8 thought (56 words)" and notice == 3
    assert lines[1].startswith("\u00bb fetch: body cut short") and "; retry 1/1 in " in lines[2]


def test_a_provider_error_is_shown_under_what_arrived(serve):
    term = Terminal(f"{TOOL} fetch {shlex.quote(serve.url('/groq-error-event'))} | {TOOL} render")
    assert term.finish() == 4
    text = "\n".join(term.lines())
    assert text.startswith("\u25b8 thought") and "\n\u2717 provider error: invalid_request_error: " in text
    assert "sse-tool" not in text and "provisional" not in text


# -- records fed at random moments ------------------------------------------------------------

def _records(lines: list[str], end: str = "complete") -> list[bytes]:
    import json

    out = [json.dumps({"type": "delta", "channel": "answer", "text": line + "\n"}).encode() + b"\n"
           for line in lines]
    return out + [json.dumps({"type": "end", "status": end, "stop_reason": "stop"}).encode() + b"\n"]


def _feed(term: Terminal, records: list[bytes], rng: random.Random, each=None, close: bool = True) -> None:
    writer = term.proc.stdin
    for i, record in enumerate(records):
        writer.write(record)
        writer.flush()
        if each is not None:
            each(i)
        if rng.random() < 0.3:
            term.pump(rng.random() * 0.03)
    if close:
        writer.close()


def _lines(n: int, width: int = 40) -> list[str]:
    return [f"{i:03d} " + "word " * ((i * 7) % ((width - 4) // 5)) for i in range(n)]


def render_term(*args: str, **env) -> Terminal:  # (exec: the shell's pid is render's)
    return Terminal(f"exec {TOOL} render --no-footer --interval 10ms {' '.join(args)}", stdin=subprocess.PIPE,
                    **env)


@pytest.mark.parametrize("seed", SEEDS)
def test_another_process_writing_at_random_moments_leaves_its_lines_and_the_answer_intact(seed):
    rng = random.Random(seed)
    answer = [line.rstrip() for line in _lines(3 * ROWS)]
    term = render_term()
    notices = []

    def maybe_write(i: int) -> None:
        if rng.random() < 0.15:
            notices.append(f"NOTICE {len(notices)} from another process")
            os.write(term.slave, (notices[-1] + "\n").encode())

    _feed(term, _records(answer), rng, maybe_write)
    assert term.finish() == 0
    lines = term.lines()
    assert [line for line in lines if line.startswith("NOTICE")] == notices  # each intact, on its own row
    assert [line for line in lines if line and not line.startswith("NOTICE")] == answer


@pytest.mark.parametrize("seed", SEEDS)
def test_resizes_at_random_moments_leave_no_stale_or_clipped_line(seed):
    rng = random.Random(seed)
    answer = [line.rstrip() for line in _lines(3 * ROWS, width=40)]
    term = render_term()

    def maybe_resize(i: int) -> None:
        if rng.random() < 0.2:
            term.resize(rng.choice([45, 60, 80, 100, 120]))

    _feed(term, _records(answer), rng, maybe_resize)
    assert term.finish() == 0
    assert term.lines() == answer  # each line once: no spinner, no status, nothing twice


def test_a_resize_while_the_stream_is_idle_redraws_the_tail_at_once():
    term = render_term(cols=60, rows=12)
    term.proc.stdin.write(b'{"type": "delta", "channel": "answer", "text": "The quick brown fox jumps over the '
                          b'lazy dog and keeps running far away"}\n')
    term.proc.stdin.flush()
    term.wait_for("receiving")
    time.sleep(0.3)  # the spinner has stopped: the loop waits for input with no timeout
    term.pump(0.1)
    before = len(term.raw)
    term.resize(30)
    deadline = time.monotonic() + 5  # a bound, not a timing assertion: no input comes
    while len(term.raw) == before and time.monotonic() < deadline:
        term.pump(0.05)
    term.pump(0.2)
    assert len(term.raw) > before, "nothing was painted after the resize"
    assert [line for line in term.lines() if line][-4:] == [
        "The quick brown fox jumps over", "the lazy dog and keeps running", "far away\u258d",
        term.lines()[-1]]
    assert "receiving (provisional)" in term.lines()[-1]
    term.proc.stdin.close()
    assert term.finish() == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_ctrl_c_at_a_random_moment_keeps_what_was_shown_marked_incomplete(seed):
    rng = random.Random(seed)
    answer = [line.rstrip() for line in _lines(2 * ROWS)]
    term = render_term()
    stop = rng.randrange(1, len(answer))
    records = _records(answer)[:stop]
    _feed(term, records[:stop], rng, close=False)
    term.wait_for(answer[stop - 1][:4])
    time.sleep(rng.random() * 0.05)
    os.killpg(term.proc.pid, signal.SIGINT)
    assert term.finish() == 130
    lines = term.lines()
    assert lines[-1] == "\u23f9 interrupted: the answer above is incomplete"
    assert lines[:-1] == answer[:stop]
    assert b"\x1b[?25h" in term.raw[term.raw.rfind(b"\x1b[?25l"):]  # the cursor is shown again


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_view_as_ctrl_c_does_and_exit_128_plus_the_signal(signum):
    answer = [line.rstrip() for line in _lines(5)]
    # (started with the signal's default action: under nohup, as a CI job may run, SIGHUP
    # is ignored, and render rightly keeps an ignored signal ignored)
    before = signal.signal(signum, signal.SIG_DFL)
    try:
        term = render_term()
    finally:
        signal.signal(signum, before)
    _feed(term, _records(answer)[:-1], random.Random(0), close=False)
    term.wait_for("provisional")
    os.kill(term.proc.pid, signum)
    assert term.finish() == 128 + signum
    assert term.lines() == [*answer, f"\u23f9 terminated by {signum.name}: the answer above is incomplete"]
    assert not term.screen.cursor.hidden
    assert term.raw.rfind(b"\x1b[?7h") > term.raw.rfind(b"\x1b[?7l")


def test_ctrl_z_hands_a_clean_terminal_to_the_shell_and_fg_repaints_the_tail():
    answer = [line.rstrip() for line in _lines(5)]
    term = render_term(session=False)
    _feed(term, _records(answer)[:3], random.Random(0), close=False)
    term.wait_for("provisional")
    os.killpg(term.proc.pid, signal.SIGTSTP)  # Ctrl-Z: the job's process group
    _, status = os.waitpid(term.proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    term.pump(0.2)
    assert not term.screen.cursor.hidden and "provisional" not in "\n".join(term.lines())
    assert term.raw.rfind(b"\x1b[?7h") > term.raw.rfind(b"\x1b[?7l")
    os.write(term.slave, b"[1]+  Stopped\r\n")  # what the shell says, then fg
    os.killpg(term.proc.pid, signal.SIGCONT)
    term.wait_for("provisional")  # repainted with no new input
    assert "provisional" in "\n".join(term.lines()) and term.screen.cursor.hidden
    _feed(term, _records(answer)[3:], random.Random(0))
    assert term.finish() == 0
    # (the answer's lines were one open paragraph, all in the tail: erased, then drawn again)
    assert term.lines() == ["[1]+  Stopped", *answer]


def test_an_answer_three_screens_long_reaches_the_scrollback_whole_and_once():
    answer = [line.rstrip() for line in _lines(3 * ROWS)]
    term = render_term()
    _feed(term, _records(answer), random.Random(1))
    assert term.finish() == 0
    assert term.lines() == answer
    # Nothing more in the scrollback than the answer pushed there; below the last line, at
    # most the rows the live tail (a third of the screen) took while it was on screen.
    assert len(answer) - ROWS < len(term.screen.history.top) <= len(answer) - ROWS + ROWS // 3 + 1


MARKDOWN = "\n".join(
    [f"## Part {i}\n\nParagraph {i} with **bold** words and `code`, long enough to wrap on a terminal "
     f"of eighty columns, and then some.\n\n- item {i}.1\n- item {i}.2\n\n```python\nx = {i}\n\nprint(x)\n```\n"
     for i in range(6)]) + "\n| a | b |\n|---|---|\n| 1 | 2 |\n"


def _markdown_lines(text: str, width: int = COLS) -> list[str]:
    """Each block rendered by rich on its own, one blank line between blocks."""
    import io

    from rich.console import Console
    from rich.markdown import Markdown

    from sse_tool.render.blocks import Splitter

    blocks = Splitter().finish(text)
    out: list[str] = []
    for block in blocks:
        file = io.StringIO()
        Console(file=file, width=width, color_system=None, force_terminal=False).print(Markdown(block))
        rows = [row.rstrip() for row in file.getvalue().split("\n")]
        while rows and not rows[-1]:
            rows.pop()
        while rows and not rows[0]:
            rows.pop(0)
        out += ([""] if out else []) + rows
    return out


def test_a_markdown_answer_three_screens_long_is_rendered_block_by_block_once():
    assert len(_markdown_lines(MARKDOWN)) > 3 * ROWS
    term = render_term("--markdown", NO_COLOR="1")
    import json

    pieces = [MARKDOWN[i:i + 7] for i in range(0, len(MARKDOWN), 7)]
    records = [json.dumps({"type": "delta", "channel": "answer", "text": p}).encode() + b"\n" for p in pieces]
    records.append(b'{"type": "end", "status": "complete"}\n')
    _feed(term, records, random.Random(2))
    assert term.finish() == 0
    assert term.lines() == _markdown_lines(MARKDOWN)


def test_an_open_code_fence_is_drawn_as_code_while_it_streams():
    term = render_term("--markdown")
    term.proc.stdin.write(b'{"type": "delta", "channel": "answer", "text": "Some code:\\n\\n```python\\nx = 1\\n"}\n')
    term.proc.stdin.flush()
    term.wait_for("x = 1")
    assert "```python" not in "\n".join(term.lines())
    assert re.search(rb"\x1b\[36mx = 1", term.raw)  # in the code colour, not as prose
    term.proc.stdin.close()
    assert term.finish() == 3


# -- environments ---------------------------------------------------------------------------

def test_term_dumb_gets_plain_text_and_a_diagnostic_on_a_line_of_its_own():
    term = render_term(TERM="dumb")
    _feed(term, _records(["Half an"], end="truncated")[:1] + [b'{"type":"delta","channel":"answer","text":"x"}\n'],
          random.Random(0))
    assert term.finish() == 3
    assert b"\x1b" not in term.raw
    said = "sse-tool render: truncated: the response was cut off (input ended without an end record); it can be retried"
    assert term.lines() == ["Half an", "x", said[:COLS], said[COLS:]]


def test_a_terminal_one_column_wide_gets_the_answer_whole_in_the_plain_view():
    # the live view laid out two columns in one: each row took two, text was overwritten
    term = render_term(cols=1, rows=6)
    _feed(term, [b'{"type":"delta","channel":"answer","text":"%s "}\n' % w for w in (b"ab", b"cd", b"ef")]
          + _records(["end"]), random.Random(0))
    assert term.finish() == 0
    assert term.raw.replace(b"\r\n", b"\n") == b"ab cd ef end\n"  # no cursor movement, no rows laid out
    assert term.lines() == ["a", "b", "", "c", "d", "", "e", "f", "", "e", "n", "d"]


def test_no_color_draws_the_same_screen_without_colour():
    data = (FIXTURES / "anthropic/thinking-signature.cut-mid-frame.sse").read_bytes()
    plain = render_term(NO_COLOR="1")
    coloured = render_term()
    for term in (plain, coloured):
        term.proc.stdin.write(data)
        term.proc.stdin.close()
        assert term.finish() == 3
    assert plain.lines() == coloured.lines()
    assert re.search(rb"\x1b\[[0-9;]*3[1-6]", coloured.raw) and not re.search(rb"\x1b\[[0-9;]*3[1-6]", plain.raw)


def test_a_terminal_on_stdin_says_how_to_give_the_stream():
    term = Terminal(f"exec {TOOL} render --no-footer", stdin="pty")
    term.wait_for("Ctrl-D")
    os.killpg(term.proc.pid, signal.SIGINT)
    term.finish()
    assert term.lines()[0].startswith("sse-tool render: reading a stream from standard input, the terminal")


# -- width disagreements ----------------------------------------------------------------------

#: an emoji with a skin tone: one cluster of two cells for rich, four cells where the
#: terminal draws the tone apart (tmux 3.3a; pyte too, which measures each code point)
THUMB = "\U0001f44d\U0001f3fd"


def test_emoji_the_terminal_draws_wider_than_rich_counts_reach_the_scrollback_once():
    import json

    term = render_term(cols=40, rows=12)
    records = [json.dumps({"type": "delta", "channel": "answer", "text": THUMB + " "}).encode() + b"\n"
               for _ in range(30)]
    records.append(json.dumps({"type": "delta", "channel": "answer", "text": "done."}).encode() + b"\n")
    records.append(b'{"type": "end", "status": "complete"}\n')
    for record in records:  # a paint between deltas: each one redraws a tail too wide for the terminal
        term.proc.stdin.write(record)
        term.proc.stdin.flush()
        term.pump(0.03)
    term.proc.stdin.close()
    assert term.finish() == 0
    text = "\n".join(term.lines())
    assert text.count("\U0001f44d") == 30 and text.count("done.") == 1
    assert "provisional" not in text
