"""``sse-tool render`` on a real pseudo-terminal, fed slowly; pyte reads the screen.

stdout and stderr are a pty of 80x24 (so rich sees a terminal of that size), stdin is a
pipe this test writes to event by event, checking the screen between writes.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time

import pyte

from ..support import FIXTURES, SSE_TOOL, clean_env

COLS, ROWS = 80, 24
PATIENCE = 20  # a bound on waiting for the screen, not a timing assertion
FULL = (FIXTURES / "anthropic/thinking-signature.sse").read_bytes()
CUT = (FIXTURES / "anthropic/thinking-signature.cut-mid-frame.sse").read_bytes()


class Terminal:
    def __init__(self, *args: str, stderr=None, **extra_env: str) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        env = clean_env(TERM="xterm-256color")
        for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):
            env.pop(name, None)
        env.update(extra_env)
        self.proc = subprocess.Popen([*SSE_TOOL, "render", *args], stdin=subprocess.PIPE,
                                     stdout=slave, stderr=slave if stderr is None else stderr, env=env)
        os.close(slave)
        self.master = master
        self.raw = b""
        self.screen = pyte.Screen(COLS, ROWS)
        self.stream = pyte.ByteStream(self.screen)

    def write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display if line.strip())

    def pump(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.raw += chunk
        self.stream.feed(chunk)
        return bool(chunk)

    def wait_for(self, *needles: str) -> str:
        deadline = time.monotonic() + PATIENCE
        while not all(n in self.text() for n in needles) and time.monotonic() < deadline:
            if not self.pump(0.1):
                break
        return self.text()

    def finish(self) -> int:
        self.proc.stdin.close()
        code = self.proc.wait(PATIENCE)
        while self.pump(0.05) and select.select([self.master], [], [], 0)[0]:
            pass
        os.close(self.master)
        return code


def events(data: bytes) -> list[bytes]:
    """The exact bytes, cut after each blank line (a cut-off tail stays cut off)."""
    return re.findall(rb".*?\n\n|.+\Z", data, re.S)


def test_the_screen_while_streaming_and_after_completion():
    term = Terminal()
    assert "connecting\u2026" in term.wait_for("connecting")
    parts = events(FULL)
    first_text = next(i for i, e in enumerate(parts) if b'"text_delta"' in e)
    for event in parts[:first_text]:
        term.write(event)
    term.wait_for("thinking\u2026", "Let me give two brief")
    term.write(parts[first_text])
    screen = term.wait_for("\u258d", "thought for")
    assert "1. **Pouch**" in screen and "provisional" in screen and "Captain Beak" not in screen
    for event in parts[first_text + 1:]:
        term.write(event)
    code = term.finish()
    lines = term.text().split("\n")
    assert code == 0
    assert lines[0].startswith("\u25b8 thought for ") and lines[0].endswith("(56 words)")
    assert lines[1:3] == ["1. **Pouch** - references their iconic bill pouch",
                          '2. **Pelé** - playful take on "pelican"']
    assert lines[3].startswith("claude-haiku-4-5-20251001 \u00b7 46 in \u00b7 133 out \u00b7 first token ")
    assert len(lines) == 4 and not term.screen.cursor.hidden


def test_the_screen_after_a_cut_shows_the_error_not_a_partial_answer():
    term = Terminal()
    for event in events(CUT):
        term.write(event)
    term.wait_for("thinking")
    code = term.finish()
    screen = term.text()
    assert code == 3
    assert "cut off" in screen and "retried" in screen
    assert "thinking\u2026" not in screen and "provisional" not in screen


def test_ctrl_c_leaves_a_clean_screen_with_the_cursor_shown():
    term = Terminal()
    term.write(b'{"type": "delta", "channel": "answer", "text": "half an answer"}\n')
    term.wait_for("half an answer\u258d")
    term.proc.send_signal(signal.SIGINT)
    code = term.finish()
    assert code == 130
    assert "interrupted" in term.text() and "provisional" not in term.text()
    assert not term.screen.cursor.hidden


#: an SGR sequence that sets a foreground colour (bold and dim are not colours)
COLOUR = re.compile(rb"\x1b\[(?:\d+;)*(?:3[0-7]|38;[25];[\d;]+)m")


def cut_off_screen(*args: str, **env: str) -> Terminal:
    term = Terminal(*args, **env)
    term.write(CUT)
    assert term.finish() == 3
    return term


def test_colour_on_a_terminal_unless_no_color_or_color_never():
    assert COLOUR.search(cut_off_screen().raw)
    assert not COLOUR.search(cut_off_screen(NO_COLOR="1").raw)
    assert not COLOUR.search(cut_off_screen("--color", "never").raw)
    assert COLOUR.search(cut_off_screen("--color", "always", NO_COLOR="1").raw)


def test_a_dumb_terminal_gets_the_plain_view_without_cursor_movement():
    term = Terminal(TERM="dumb")
    term.write(FULL)
    assert term.finish() == 0
    assert b"\x1b" not in term.raw
    assert term.raw.replace(b"\r\n", b"\n").endswith(b'2. **Pel\xc3\xa9** - playful take on "pelican"\n')


def test_reasoning_that_comes_after_the_answer_started_is_shown_where_it_came():
    # (Anthropic's interleaved thinking): the second run was dropped, the pipe printed both
    term = Terminal("--reasoning", "show", "--no-footer")
    for channel, text in [("reasoning", "First I think about A.\n"), ("answer", "Answer part one.\n\n"),
                          ("reasoning", "Now I reconsider B.\n"), ("answer", "Answer part two.")]:
        term.write(json.dumps({"type": "delta", "channel": channel, "text": text}).encode() + b"\n")
        term.wait_for(text.strip())
    term.write(b'{"type": "end", "status": "complete"}\n')
    assert term.finish() == 0
    lines = [re.sub(r"thought for \d+\.\d s \((\d+ words)\)", r"thought: \1", line)
             for line in term.text().split("\n")]
    assert lines == ["First I think about A.", "\u25b4 thought: 5 words", "Answer part one.",
                     "Now I reconsider B.", "\u25b4 thought: 4 words", "Answer part two."]


def test_a_line_end_in_a_tool_calls_name_keeps_the_live_region_one_row_per_call():
    # the tail row took three rows of the screen: each paint moved up too few and left
    # provisional rows in the scrollback
    term = Terminal("--no-footer", "--interval", "0")
    term.write(b'{"type": "delta", "channel": "answer", "text": "Let me check."}\n')
    term.write(b'{"type": "tool_call", "index": 0, "id": "c0", "name": "get\\nweather\\nnow", "arguments": "{"}\n')
    term.wait_for("get weather now({")
    for piece in ('\\"city\\": ', '\\"Paris\\"', "}"):
        term.write(b'{"type": "tool_call", "index": 0, "arguments": "%s"}\n' % piece.encode())
        term.wait_for(piece.replace("\\", "").strip())
    term.write(b'{"type": "end", "status": "complete", "stop_reason": "tool_use"}\n')
    assert term.finish() == 0
    assert term.text().split("\n") == ["Let me check.", '\u2699 tool call: get weather now({"city": "Paris"})']


def test_a_diagnostic_goes_to_stderr_too_when_stderr_is_not_the_terminal(tmp_path):
    # (README: every diagnostic of every stage is one plain line on stderr); said once
    # when stderr is the terminal the view draws on
    with open(tmp_path / "err", "wb") as err:
        term = Terminal(stderr=err)
        term.write(CUT)
        assert term.finish() == 3
    said = ("sse-tool render: truncated: the response was cut off (input ended in the middle of a line, "
            "before the provider's terminal event); it can be retried\n")
    assert (tmp_path / "err").read_text() == said
    assert "cut off" in term.text() and "sse-tool render" not in term.text()
    assert "sse-tool render" not in cut_off_screen().text()
