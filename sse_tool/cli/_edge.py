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

from ..errors import ExitCode, SseToolError

if TYPE_CHECKING:
    from ..model import End

READ_SIZE = 65536

#: set by ``sse-tool --debug`` (or SSE_TOOL_DEBUG=1): show tracebacks of internal errors
debug = bool(os.environ.get("SSE_TOOL_DEBUG"))


class MissingInput(SseToolError):
    exit_code = ExitCode.USAGE


# C0 and C1 controls and DEL: a message may quote a server or a file, and raw, they could
# move the cursor, recolour or clear a terminal, or forge a line of their own.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def warn(stage: str, message: str) -> None:
    """One diagnostic line on stderr, control characters shown as ``\\xHH``."""
    line = _CONTROL.sub(_escaped, " ".join(str(message).splitlines()))
    text = f"sse-tool {stage}: {line}\n"
    sys.stderr.flush()
    stream = getattr(sys.stderr, "buffer", None)
    if stream is None:  # a text-only stderr (some test runners)
        sys.stderr.write(text)
        sys.stderr.flush()
    else:  # UTF-8 bytes whatever the locale, as on stdout
        stream.write(text.encode("utf-8", "replace"))
        stream.flush()


def _escaped(m: re.Match) -> str:
    return "\t" if m.group() == "\t" else f"\\x{ord(m.group()):02x}"


def read_fd(fd: int, size: int = READ_SIZE) -> Iterator[bytes]:
    """Chunks as they arrive: os.read returns what a pipe holds, it does not wait to fill."""
    while chunk := os.read(fd, size):
        yield chunk


def inputs(paths: list[str] | None) -> Iterator[tuple[str, Iterator[bytes]]]:
    """(name, chunks) for each input named, ``-`` or nothing meaning stdin."""
    for path in paths or ["-"]:
        if path == "-":
            yield "<stdin>", _stdin_chunks()
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise MissingInput(f"{path}: {exc.strerror}") from None
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


class Output:
    """stdout as bytes; ``send`` writes a batch and flushes it at once (a pipe stage must)."""

    def __init__(self) -> None:
        self._out = sys.stdout.buffer

    def send(self, data: bytes) -> None:
        if data:
            self._out.write(data)
            self._out.flush()


def end_exit_code(end: End, strict: bool = False) -> ExitCode:
    """The exit status an ``end`` record stands for, in every stage that reads records."""
    from ..model import Status, stopped_early  # not at import: frame never needs records

    if end.status is Status.ERROR:
        return ExitCode.PROVIDER_ERROR
    if end.status is Status.TRUNCATED:
        return ExitCode.TRUNCATED
    if strict and stopped_early(end.stop_reason):
        return ExitCode.STOPPED_EARLY
    return ExitCode.OK


#: said when an input held no byte at all: an earlier stage (fetch) failed and said why, so
#: this stage exits 0 and ``set -o pipefail`` reports that stage's own code, not a made-up one
NO_STREAM = "no stream arrived (empty input)"


def run_stage(stage: str, body: Callable[[], int]) -> None:
    """Run a subcommand body and exit with the code its outcome maps to."""
    try:
        code = body()
    except BrokenPipeError:
        code = ExitCode.BROKEN_PIPE
        _silence_stdout()
    except KeyboardInterrupt:
        code = ExitCode.INTERRUPTED
    except SseToolError as exc:
        warn(stage, str(exc))
        code = exc.exit_code
    except typer.Exit:
        raise
    except Exception as exc:  # a bug: one line, the traceback only when asked
        if debug:
            traceback.print_exc()
        warn(stage, f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)")
        code = ExitCode.INTERNAL
    raise typer.Exit(int(code))


def _silence_stdout() -> None:
    # The reader is gone: point stdout at /dev/null so the interpreter's final flush
    # does not raise again (the documented Python recipe for SIGPIPE).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


_SIZE = re.compile(r"(\d+)\s*([kmg]?)(i?b?)", re.I)
_TIME = re.compile(r"(\d+(?:\.\d*)?)\s*(ms|s|m|h)?", re.I)


def parse_size(text: str) -> int:
    """``65536``, ``64k``, ``16MiB``, ``1G`` -> bytes (K/M/G are powers of 1024)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise typer.BadParameter(f"not a size: {text!r} (try 16MiB)")
    return int(m.group(1)) * 1024 ** " kmg".index(m.group(2).lower() or " ")


def parse_duration(text: str) -> float:
    """``40ms``, ``2s``, ``1.5``, ``1m`` -> seconds (a bare number is seconds)."""
    m = _TIME.fullmatch(text.strip())
    if not m:
        raise typer.BadParameter(f"not a duration: {text!r} (try 40ms, 2s or 1m)")
    unit = (m.group(2) or "s").lower()
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
