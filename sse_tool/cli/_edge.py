"""The thin edge every subcommand shares: inputs, outputs, option values, exit codes.

The cores never touch a file descriptor; this module does, and it is the only place that
turns an outcome or an exception into a process exit code (see ``errors.ExitCode``).
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import typer

from .. import units
from ..errors import ExitCode, OutputFailed, SseToolError, Terminated

if TYPE_CHECKING:
    from ..model import End

READ_SIZE = 65536
#: what a pipe on stdout is widened to hold (Linux; 64 KiB by default): a stage's batch for
#: one read (frame writes ~75 KiB of records per 64 KiB of SSE) then goes in without
#: waiting for the reader to make room (wall time of frame | normalize | render on 20 MB:
#: -10 to -13%; 1 MiB gains little more). Kept small, as the kernel counts it against the
#: user's share of pipe memory whether it is used or not.
PIPE_SIZE = 256 * 1024

#: set by ``sse-tool --debug`` (or SSE_TOOL_DEBUG=1): show tracebacks of internal errors
debug = bool(os.environ.get("SSE_TOOL_DEBUG"))


class MissingInput(SseToolError):
    exit_code = ExitCode.USAGE


# C0 and C1 controls and DEL: a message may quote a server or a file, and raw, they could
# move the cursor, recolour or clear a terminal, or forge a line of their own.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def pass_on_usage_error(stage: str, code: int, reason: str) -> None:
    """A command line refused before the stage ran, for a later stage of ours that reads
    this one's output: the failure as this stage writes one (a byte stage's exit marker,
    frame's marker record, normalize's end record), so that the pipe ends with this code
    and message, not "no stream arrived". A file or another program gets nothing."""
    if stage not in ("fetch", "replay", "frame", "normalize") or os.isatty(1):
        return
    from ..downstream import read_by_a_stage
    from ..marker import exit_marker

    if not read_by_a_stage(1):
        return
    marker = exit_marker(code, stage, reason)
    if stage == "frame":
        from ..sse import SseComment
        from ..wire import dumps, event_record

        data = dumps(event_record(SseComment(marker.comment())))
    elif stage == "normalize":
        from ..model import to_record
        from ..normalize import failed_end
        from ..wire import dumps

        data = dumps(to_record(failed_end(code, marker.text)))
    else:
        data = marker.line()
    try:
        os.write(1, data)
    except OSError:  # the reader gone: the exit code says it
        pass


def warn(stage: str, message: str) -> None:
    """One diagnostic line on stderr, control characters shown as ``\\xHH``
    (``OutputFailed`` if stderr is closed or full)."""
    line = _CONTROL.sub(_escaped, " ".join(str(message).splitlines()))
    write_stderr(f"sse-tool {stage}: {line}\n" if stage else f"sse-tool: {line}\n")


def write_stderr(text: str) -> None:
    """``text`` on stderr as UTF-8 bytes whatever the locale, as on stdout, at once
    (``OutputFailed`` if stderr is closed or full)."""
    if sys.stderr is None:  # started with stderr closed
        raise OutputFailed("stderr is closed")
    try:
        sys.stderr.flush()
        stream = getattr(sys.stderr, "buffer", None)
        if stream is None:  # a text-only stderr (some test runners)
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            stream.write(text.encode("utf-8", "replace"))
            stream.flush()
    except OSError as exc:
        raise OutputFailed(f"stderr: {exc.strerror}") from None


def _escaped(m: re.Match) -> str:
    return "\t" if m.group() == "\t" else f"\\x{ord(m.group()):02x}"


def wait(seconds: float, fd: int = 1) -> None:
    """``time.sleep(seconds)`` that ends as a closed pipe (BrokenPipeError) as soon as the
    reader of ``fd`` has gone (the pipe's write end polls POLLERR, a terminal POLLHUP):
    a wait for a reconnection, a retry or a replay's next chunk must not outlive the
    pipe it would write to (``| head``), nor keep an upstream waiting on a process that has
    nothing left to do. A file, or a descriptor poll cannot watch, waits the time."""
    import select
    import time

    deadline = time.monotonic() + seconds
    try:
        poller = select.poll()
        poller.register(fd, 0)  # (errors and hang-ups are always reported)
    except (AttributeError, OSError, ValueError):
        time.sleep(seconds)
        return
    while (left := deadline - time.monotonic()) > 0:
        for _, events in poller.poll(left * 1000 + 1):
            if events & (select.POLLERR | select.POLLHUP):
                raise BrokenPipeError("the reader of the output has gone")
            if events & select.POLLNVAL:  # not open: writing will say so
                time.sleep(max(0.0, deadline - time.monotonic()))
                return


def read_fd(fd: int, size: int = READ_SIZE) -> Iterator[bytes]:
    """Chunks as they arrive: os.read returns what a pipe holds, it does not wait to fill."""
    while chunk := os.read(fd, size):
        yield chunk


def open_input(path: str) -> int:
    """A file descriptor to read ``path`` from; a usage error if it cannot be read."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise MissingInput(f"{path}: {exc.strerror}") from None
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise MissingInput(f"{path}: is a directory")
    return fd


def inputs(paths: list[str] | None) -> Iterator[tuple[str, Iterator[bytes]]]:
    """(name, chunks) for each input named, ``-`` or nothing meaning stdin."""
    for path in paths or ["-"]:
        if path == "-":
            yield "<stdin>", _stdin_chunks()
            continue
        fd = open_input(path)
        try:
            yield path, read_fd(fd)
        finally:
            os.close(fd)


def _stdin_chunks() -> Iterator[bytes]:
    try:
        return read_fd(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        # An in-memory stdin (typer's CliRunner) has no descriptor: read what it holds.
        return iter(lambda: sys.stdin.buffer.read1(READ_SIZE), b"")


def _widen_pipe(stream, size: int) -> None:
    """Let the pipe ``stream`` writes to, if it is one, hold ``size`` bytes (where the system
    allows: Linux, within the user's limits; for a file, a terminal or elsewhere, nothing)."""
    import fcntl

    if hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fd = stream.fileno()
            if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < size:
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
        except (AttributeError, OSError, ValueError):  # no descriptor, not a pipe, refused
            pass


class Output:
    """stdout as bytes; ``send`` writes a batch and flushes it at once (a pipe stage must).

    ``OutputFailed`` if stdout is closed or full (a closed pipe stays BrokenPipeError).
    """

    _widened = False  # stdout's pipe, once per process

    def __init__(self) -> None:
        if sys.stdout is None:  # started with stdout closed
            raise OutputFailed("stdout is closed")
        self._out = sys.stdout.buffer
        if not Output._widened:
            Output._widened = True
            _widen_pipe(self._out, PIPE_SIZE)
        #: the last byte written ended a line (or nothing was written): a marker may follow
        self.at_line_start = True
        #: whether any byte was written
        self.began = False
        self._stage_reads: bool | None = None

    def send(self, data: bytes) -> None:
        if data:
            try:
                self._out.write(data)
                self._out.flush()
            except BrokenPipeError:
                raise
            except OSError as exc:
                raise OutputFailed(f"stdout: {exc.strerror}") from None
            self.at_line_start = data[-1] in (10, 13)
            self.began = True

    def read_by_a_stage(self) -> bool:
        """Whether a later sse-tool stage reads this output (``downstream``; asked once)."""
        if self._stage_reads is None:
            from ..downstream import read_by_a_stage

            try:
                fd = self._out.fileno()
            except (AttributeError, OSError, ValueError):  # an in-memory stdout (tests)
                fd = None
            self._stage_reads = fd is not None and read_by_a_stage(fd)
        return self._stage_reads

    def notice(self, stage: str, text: str) -> None:
        """Something for a person to see: a note marker when a later stage reads this
        output and shows it in its own view, else one line on stderr."""
        if self.read_by_a_stage():
            from ..marker import note_marker

            self.marker(note_marker(stage, text))
        else:
            warn(stage, text)

    def marker(self, marker) -> None:
        """Write an in-band marker (``marker.Marker``) on a line of its own; not on a
        terminal, where a person reads the bytes and no later stage does. A failure marker
        that cannot be written (the reader gone, the output full) leaves the failure's own
        exit code: it was said on stderr, and no later stage reads this output anyway."""
        if self._out.isatty():
            return
        try:
            self.send((b"" if self.at_line_start else b"\n") + marker.line())
        except (BrokenPipeError, OutputFailed):
            _silence_outputs(stderr=False)


def pass_note(out: Output, text: str) -> None:
    """An earlier stage's note that this stage passes on in-band: said on stderr too when
    no later stage will show it."""
    if not out.read_by_a_stage():
        say_note(text)


def say_note(text: str) -> None:
    """An earlier stage's note ("STAGE: TEXT"), said as that stage would have said it (a
    note without a stage, from another tool, as "sse-tool: TEXT")."""
    stage, sep, rest = text.partition(": ")
    warn(stage if sep else "", rest if sep else text)


def end_exit_code(end: End, strict: bool = False) -> ExitCode:
    """The exit status an ``end`` record stands for, in every stage that reads records."""
    from ..model import Status, stopped_early  # not at import: frame never needs records

    if end.exit is not None:  # an earlier stage's failure, an interruption, --strict
        return _code(end.exit)
    if end.status is Status.ERROR:
        return ExitCode.PROVIDER_ERROR
    if end.status is Status.TRUNCATED:
        return ExitCode.TRUNCATED
    if end.status is Status.INVALID:
        return ExitCode.BAD_INPUT
    if end.status is Status.FAILED:
        return ExitCode.INTERNAL
    if strict and stopped_early(end.stop_reason):
        return ExitCode.STOPPED_EARLY
    return ExitCode.OK


def end_message(end: End) -> str | None:
    """One line saying why a stream did not simply complete, or None (nothing to say
    about an interruption: Ctrl-C ends every stage of a pipe quietly)."""
    from ..model import Status, error_words

    if end.exit == ExitCode.INTERRUPTED:
        return None
    if end.status is Status.ERROR:
        return f"provider error: {error_words(end.error)}"
    if end.status is Status.TRUNCATED:
        return f"truncated: {end.detail or 'the stream did not finish'}"
    if end.status is Status.INVALID:
        return f"bad input: {end.detail or 'not what this stage reads'}"
    if end.status is Status.FAILED:
        return f"failed (exit {end.exit}): {end.detail or 'an earlier stage failed'}"
    return None


def say_skipped(stage: str, name: str, reader) -> None:
    """With --lenient: say each bad event the reader skipped, one line each."""
    normalizer = reader.normalizer
    if normalizer is not None and normalizer.warnings:
        for line in normalizer.warnings:
            warn(stage, f"{name}: {line}")
        normalizer.warnings.clear()


def _code(value: int) -> int:
    try:
        return ExitCode(value)
    except ValueError:
        return value


#: ``mark(code, reason, exc)``: write the in-band marker (or end record) of a failure
Mark = Callable[[int, str, "BaseException | None"], None]


def run_stage(stage: str, body: Callable[[], int], mark: Mark | None = None) -> None:
    """Run a subcommand body and exit with the code its outcome maps to.

    A failure raised by the body is said on stderr (one line) and, when the stage has an
    output that later stages read, marked in it with ``mark``, so that they exit with the
    same code (the body marks the failures it returns itself). A closed pipe and an output
    that cannot be written end the stage quietly: there is nowhere to say or mark it.
    """
    reason, error = None, None
    try:
        _interrupt_as_exception()
        code = body()
    except BrokenPipeError:
        code = ExitCode.BROKEN_PIPE
    except OutputFailed:
        code = ExitCode.OUTPUT
    except KeyboardInterrupt:
        code, reason = ExitCode.INTERRUPTED, "interrupted"
    except Terminated as exc:  # quietly, as Ctrl-C: the view says it (render installs it)
        code = exc.exit_code
    except SseToolError as exc:
        code, reason, error = exc.exit_code, str(exc), exc
    except typer.Exit:
        raise
    except Exception as exc:  # a bug: one line, the traceback only when asked
        if debug:
            traceback.print_exc()
        code, error = ExitCode.INTERNAL, exc
        reason = f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)"
    if reason is not None:
        try:
            if code is not ExitCode.INTERRUPTED:
                warn(stage, reason)
            if mark is not None:
                mark(code, reason, error)
        except BrokenPipeError:  # the failure is said; the reader is gone (an interrupted
            # stage whose reader ended first): what stays in stdout's buffer must not fail
            # the interpreter's last flush, which would make the exit code 120
            _silence_outputs(stderr=False)
        except (OutputFailed, OSError):
            code = ExitCode.OUTPUT  # stderr itself cannot be written
    if code in (ExitCode.BROKEN_PIPE, ExitCode.OUTPUT):
        _silence_outputs()
    raise typer.Exit(int(code))


def _interrupt_as_exception() -> None:
    """From here on Ctrl-C is KeyboardInterrupt, which the body ends cleanly on (during
    start-up it exits 130 at once: ``sse_tool.entry``)."""
    import signal

    from ..entry import _interrupted

    try:
        if signal.getsignal(signal.SIGINT) is _interrupted:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            sys.unraisablehook = _interrupt_again(sys.unraisablehook)
    except ValueError:  # not the main thread
        pass


def _interrupt_again(prior):
    """Python drops a KeyboardInterrupt raised inside a weakref callback or ``__del__``
    (an import's module-lock callback, say: a lazy import in a body), printing "Exception
    ignored", and the stage went on as if Ctrl-C had never come (a fetch of a silent
    server waited for ever). Such an interrupt is delivered again, to the code that runs
    after the callback; any other lost exception is reported as before."""
    import _thread
    import signal

    main = _thread.get_ident()  # (called in the main thread)

    def hook(unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # from another thread: raised in this one, the signal's handler would run here
            # and be dropped again; sent to the main thread, it also ends a blocking wait
            _thread.start_new_thread(signal.pthread_kill, (main, signal.SIGINT))
        else:
            prior(unraisable)
    return hook


def _silence_outputs(stderr: bool = True) -> None:
    # The reader is gone or the output broken: point stdout (and stderr) at /dev/null so
    # the interpreter's final flush does not raise again (Python's recipe for SIGPIPE).
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2))[:2 if stderr else 1]:
        try:
            os.dup2(devnull, stream.fileno() if stream is not None else fd)
        except (OSError, ValueError):
            pass


def parse_size(text: str, option: str | None = None) -> int:
    """``16MiB`` -> bytes (``units.parse_size``); a usage error (naming ``option``) if it
    is not a size."""
    return _option(units.parse_size, text, option)


def parse_duration(text: str, option: str | None = None) -> float:
    """``40ms`` -> seconds (``units.parse_duration``); a usage error (naming ``option``) if
    it is not a duration."""
    return _option(units.parse_duration, text, option)


def _option(parse: Callable[[str], float], text: str, option: str | None):
    try:
        return parse(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option and f"'{option}'") from None
