"""``sse-tool render``: channel records (or any earlier stage's output) drawn for a person.

The edge of the render stage: parses options, picks the view (rich on a terminal, plain
text into a pipe or file), runs the read loop with the real clock, persists the result
only when the stream completed, and maps the outcome to the exit code.
"""

from __future__ import annotations

import os
import sys
import time
from enum import Enum
from typing import List, Optional

import orjson
import typer

from ..errors import BadInput, ExitCode, OutputFailed, SseToolError, Terminated
from ..marker import NO_STREAM
from ..model import Status, stopped_early
from ..pipeline import SOURCES, RecordReader
from ..plural import count
from ..providers import PROVIDERS
from ..render import persist
from ..render.controls import safe
from ..render.loop import pump
from ..render.release import make_policy
from ..render.throttle import Painter
from ..render.view_plain import PlainView
from ..sse import DEFAULT_MAX_EVENT_SIZE
from ..think import MODES
from ._edge import (Output, end_exit_code, end_message, open_input, parse_duration, parse_size, run_stage,
                    say_note, say_skipped, warn, write_stderr)
from .render_signals import Signals

From = Enum("From", {name: name for name in SOURCES}, type=str)
Provider = Enum("Provider", {name: name for name in ["auto", *PROVIDERS]}, type=str)
Reasoning = Enum("Reasoning", {n: n for n in ("auto", "show", "collapse", "hide")}, type=str)
Release = Enum("Release", {n: n for n in ("delta", "sentence", "complete")}, type=str)
OnTruncate = Enum("OnTruncate", {n: n for n in ("replace", "keep")}, type=str)
Color = Enum("Color", {n: n for n in ("auto", "always", "never")}, type=str)
ThinkTagsMode = Enum("ThinkTagsMode", {name: name for name in MODES}, type=str)

EPILOG = """\b
Examples:
  sse-tool fetch ... | sse-tool render
  sse-tool render --markdown --reasoning show < recording.sse
  curl -sN ... | sse-tool render --release sentence | tts
  sse-tool render --output answer.txt --output-json result.json < stream.sse

\b
On a terminal: a spinner until content arrives, the reasoning collapsed to one
line, the answer provisional until the terminal event. Into a pipe or file: plain
answer text only, in batches of at most one per --interval; reasoning to stderr
with --reasoning show (collapse: one summary line). A reset record
(a retry) discards the draft: the new attempt's text is the answer.

\b
Exit status:
  0  the stream completed
  2  usage error (a file that does not exist, a directory, --output not a regular file)
  3  truncated: the stream ended without the provider's terminal event, or no input at all
  4  the provider reported an error (an error body from curl too)
  5  bad input: not a stream, another provider's events (with --provider), a wrong value
  6, 7, 8 ...  an earlier stage's failure, passed on in-band (its end record's "exit")
  9  with --strict: complete, but the model stopped early (length, filter, refusal)
  11 an output could not be written (stdout or stderr closed, disk full; quietly)
  130 interrupted; 141 the reader closed the pipe (quietly)
  129, 143 ended by SIGHUP or SIGTERM (128 + the signal), as on Ctrl-C

\b
Environment (see man sse-tool-render):
  NO_COLOR          no colour on a terminal (--color always overrides it)
  FORCE_COLOR       colour on a terminal whatever it seems to support (not into a pipe)
  TERM=dumb         the plain view even on a terminal (as on one a column wide)
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""


def _open(path: str | None) -> int:
    return sys.stdin.fileno() if path in (None, "-") else open_input(path)


#: the narrowest terminal the live view can lay out (a double-width character takes two
#: columns: in one, each of its rows would take two and the view would move up too few)
MIN_COLUMNS = 2


def _is_terminal() -> bool:
    """The live view: stdout a terminal, not a dumb one, wide enough (else the plain view)."""
    return sys.stdout is not None and sys.stdout.isatty() and os.environ.get("TERM") != "dumb" \
        and _measured()[0] >= MIN_COLUMNS


def _stderr_elsewhere() -> bool:
    """stderr is open and not the file stdout is (``2>file`` under a terminal's stdout)."""
    try:
        return not os.path.samestat(os.fstat(1), os.fstat(2))
    except OSError:  # closed: nowhere to say it
        return False


def _is_live(fd: int) -> bool:
    """A pipe, a socket or a terminal: arrival times mean something (a file has none)."""
    import stat

    try:
        return not stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _terminal_view(color: str, **options):
    from rich.console import Console  # only a terminal pays for importing rich

    from ..render.view_terminal import TerminalView

    console = Console(color_system=None) if color == "never" else Console(no_color=False) \
        if color == "always" else Console()
    system = console.color_system
    return TerminalView(_write_terminal, _size, colour=system is not None and not console.no_color,
                        colour_system=system, **options)


def _measured() -> tuple[int, int]:
    """Columns and rows; 80x24 where the terminal does not say (a pseudo-terminal never
    sized reports 0x0, which Python 3.10 passes on where later ones give the fallback)."""
    import shutil

    size = shutil.get_terminal_size()
    return size.columns or 80, size.lines or 24


def _size() -> tuple[int, int]:
    """The view's size (a terminal narrowed below MIN_COLUMNS after the start: laid out at it)."""
    columns, lines = _measured()
    return max(columns, MIN_COLUMNS), max(lines, 1)


def _write_terminal(text: str) -> None:
    """One paint, written whole: Ctrl-C, SIGTERM and SIGHUP are held until it is out (a
    paint cut in the middle would leave the cursor where the next one does not expect it,
    and autowrap off)."""
    import signal

    data = text.encode("utf-8", "replace")
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    try:
        while data:
            data = data[os.write(1, data):]
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise OutputFailed(f"stdout: {exc.strerror}") from None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def render(
    files: Optional[List[str]] = typer.Argument(None, help="Inputs, drawn one after the other "
                                                           "(default: stdin; - is stdin)."),
    source: From = typer.Option("auto", "--from", help="Input kind; auto decides from the first bytes."),
    provider: Provider = typer.Option("auto", "--provider", "-p", help="Provider dialect of raw input."),
    interval: str = typer.Option("40ms", "--interval", metavar="DURATION",
                                 help="At most one paint per DURATION (0: paint every delta)."),
    reasoning: Reasoning = typer.Option("auto", "--reasoning",
                                        help="show, collapse to one line, or hide the reasoning "
                                             "(auto: collapse on a terminal, hide in a pipe)."),
    markdown: bool = typer.Option(False, "--markdown",
                                  help="Render the answer as Markdown on a terminal, block by block."),
    on_truncate: OnTruncate = typer.Option("replace", "--on-truncate",
                                           help="A cut-off answer: show no more of it than was released, "
                                                "with an error under it, or keep all of it, marked incomplete."),
    release: Release = typer.Option("delta", "--release",
                                    help="How much of the answer leaves before the end: each delta, "
                                         "whole sentences only, or all at completion (pipe and terminal)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                         help="Write the final answer to FILE, atomically, only if the stream completed."),
    output_json: Optional[str] = typer.Option(None, "--output-json", metavar="FILE",
                                              help="Write the whole result as JSON to FILE, likewise."),
    strict: bool = typer.Option(False, "--strict", help="Exit 9 when the model stopped early."),
    footer: bool = typer.Option(True, "--footer/--no-footer",
                                help="On a terminal, one dim line under a complete answer: model, tokens, "
                                     "cost, timing."),
    color: Color = typer.Option("auto", "--color", help="Colour on a terminal (NO_COLOR, FORCE_COLOR honoured)."),
    stats: bool = typer.Option(False, "--stats", help="Print the paint count and rate to stderr at exit."),
    max_event_size: str = typer.Option(f"{DEFAULT_MAX_EVENT_SIZE // 2**20}MiB", "--max-event-size",
                                       metavar="SIZE", help="Exit 5 when one event grows past SIZE."),
    think_tags: ThinkTagsMode = typer.Option("auto", "--think-tags",
                                             help="Raw input: <think>...</think> opening the answer is reasoning "
                                                  "(auto), also without <think> (on), or answer (off)."),
    lenient: bool = typer.Option(False, "--lenient",
                                 help="Skip an event that is not what its provider sends (with a warning) "
                                      "instead of stopping with exit 5."),
) -> None:
    """Draw a streamed answer: live and provisional on a terminal, plain text into a pipe.

    Reads channel records, frame records or raw provider bytes. Nothing is written to
    --output/--output-json unless the stream completed.
    """
    seconds = parse_duration(interval, "--interval")
    limit = parse_size(max_event_size, "--max-event-size")
    terminal = _is_terminal()
    # the view shows the diagnostics it draws on the terminal; stderr elsewhere (a file,
    # another terminal) gets its one line too, as from the plain view
    say = not terminal or _stderr_elsewhere()
    mode = reasoning.value if reasoning.value != "auto" else ("collapse" if terminal else "hide")
    paths = files or ["-"]

    def one(path: str, fd: int) -> int:
        clock = time.monotonic
        policy = make_policy(release.value)
        if terminal:
            view = _terminal_view(color.value, reasoning=mode, markdown=markdown, on_truncate=on_truncate.value,
                                  policy=policy, footer=footer)
        else:
            view = PlainView(out.send, write_stderr, policy, reasoning=mode, on_truncate=on_truncate.value,
                             note=say_note, shared_terminal=sys.stderr is not None and sys.stderr.isatty(),
                             out_terminal=sys.stdout is not None and sys.stdout.isatty())
        painter = Painter(view, clock, seconds)
        painter.draft.live = _is_live(fd)
        reader = RecordReader(provider.value, source.value, max_event_size=limit,
                              think_tags=think_tags.value, lenient=lenient)
        skipped = (lambda: say_skipped("render", path, reader)) if lenient else None
        with Signals(painter, terminal) as signals:  # (an abort below still has their handlers)
            try:
                end = pump(fd, reader, painter, clock, skipped, signals if signals.fd is not None else None)
            except KeyboardInterrupt:
                painter.abort("interrupted")
                raise
            except Terminated as exc:
                try:
                    painter.abort(f"terminated by {exc}")
                except (BrokenPipeError, OutputFailed):  # a terminal that hung up: nobody to tell
                    pass
                raise
            except BadInput as exc:
                # As an earlier stage's failure reaches render: the End standing for it, so the
                # view ends as it does on that End, showing all that arrived before (the one-line
                # message follows on stderr)
                painter.feed_all(reader.failed(ExitCode.BAD_INPUT, "stopped: bad input", exc.offset))
                raise
            except BaseException:
                painter.abort("stopped")
                raise
            finally:
                if stats:
                    _report(painter, clock())
        draft = painter.draft
        if not terminal:
            view.line_break()  # a diagnostic starts a line of its own, not glued to the answer
        named = f"{path}: " if len(paths) > 1 else ""  # which of the answers a diagnostic is about
        if end.status is not Status.COMPLETE:
            if say:
                if end.status is Status.TRUNCATED and end.exit is None and end.detail == NO_STREAM:
                    warn("render", f"{named}truncated: {NO_STREAM}")
                elif end.status is Status.TRUNCATED and end.exit is None:
                    warn("render", f"{named}truncated: the response was cut off "
                                   f"({end.detail or 'no terminal event'}); it can be retried")
                elif end_message(end):
                    warn("render", named + end_message(end))
            return end_exit_code(end)
        if output:
            persist.write_atomic(output, view_text(draft.answer))
        if output_json:
            persist.write_atomic(output_json, orjson.dumps(draft.result(end), option=orjson.OPT_INDENT_2) + b"\n")
        code = end_exit_code(end, strict)
        if strict and code is ExitCode.OK and draft.refusal:  # a refusal is an early stop
            code = ExitCode.STOPPED_EARLY
            if say:
                warn("render", f"{named}the model refused")
        elif stopped_early(end.stop_reason) and say:  # said with or without --strict
            warn("render", f"{named}the model stopped early ({end.stop_reason})")
        return code

    out: Output | None = None

    def body() -> int:
        nonlocal out
        out = Output()
        for path in (output, output_json):
            if path:
                persist.check_writable(path)  # fail before streaming, not after it
        if len(paths) > 1 and (output or output_json):
            raise RenderUsage("--output and --output-json take the answer of one input, not several")
        if paths == ["-"] and sys.stdin is not None and sys.stdin.isatty():
            warn("render", "reading a stream from standard input, the terminal: paste or type it, "
                           "then Ctrl-D (or give a FILE, or pipe an earlier stage in; --help)")
        code = ExitCode.OK
        for path in paths:
            fd = _open(path)
            try:
                if terminal and len(paths) > 1:
                    _write_terminal(f"\x1b[1m{safe(path)}\x1b[0m\n")  # which input the answer below is
                elif not out.at_line_start:  # a cut answer has no final newline: the next one
                    out.send(b"\n")          # starts a line of its own, not glued to it
                result = one("<stdin>" if path == "-" else path, fd)
            finally:
                if path != "-":
                    os.close(fd)
            code = worse(code, result)
        return code

    run_stage("render", body)


class RenderUsage(SseToolError):
    exit_code = ExitCode.USAGE


def view_text(answer: str) -> bytes:
    """The answer as the pipe gets it at completion: a text file ends with a newline."""
    data = answer.encode(errors="replace")
    return data + b"\n" if data and not data.endswith(b"\n") else data


def worse(code: int, other: int) -> int:
    """The exit code of several inputs: the first failure (as frame and normalize)."""
    return other if code == ExitCode.OK else code


def _report(painter: Painter, now: float) -> None:
    elapsed = max(now - painter.started, 1e-9)
    warn("render", f"stats: {count(painter.paints, 'paint')} in {elapsed:.2f} s ({painter.paints / elapsed:.1f}/s), "
                   f"{count(painter.spins, 'spinner frame')}, {count(painter.records, 'record')}")
