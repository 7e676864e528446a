"""Errors and exit codes: the one table scripts rely on (see CONVENTIONS.md).

Cores never print or exit: they raise one of these typed errors, each carrying the exit
code it suggests (h11's ``error_status_hint``), or they report an outcome as data.
Only the CLI edge turns either into a process exit code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    #: the stream completed (for ``frame``: input ended on an event boundary)
    OK = 0
    #: an unexpected internal error (a bug)
    INTERNAL = 1
    #: bad option or argument
    USAGE = 2
    #: input ended inside an event, or without the provider's terminal event
    TRUNCATED = 3
    #: the provider reported an error inside the stream
    PROVIDER_ERROR = 4
    #: not what the stage reads, or an event over the size limit
    BAD_INPUT = 5
    #: HTTP error status from the server
    HTTP_ERROR = 6
    #: connect, DNS, TLS, or connection reset before the first byte
    NETWORK = 7
    #: connect, first byte, idle or total timeout
    TIMEOUT = 8
    #: only with ``--strict``: complete, but the model stopped early
    STOPPED_EARLY = 9
    #: a CI gate: ``check`` found problems at or above ``--fail-on``, or ``inspect --fail-on``
    #: saw a threshold crossed (a stall, a late first token, a slow rate, a burst)
    FINDINGS = 10
    #: an output could not be written: stdout or stderr closed, or the disk full
    OUTPUT = 11
    #: SIGHUP (``render``: its view ended as on Ctrl-C; 128 + the signal, as a shell says it)
    HANGUP = 129
    #: SIGINT
    INTERRUPTED = 130
    #: SIGTERM (``render``, as SIGHUP)
    TERMINATED = 143
    #: downstream closed the pipe
    BROKEN_PIPE = 141


class SseToolError(Exception):
    """Base of every error the package raises on purpose."""

    exit_code: ExitCode = ExitCode.INTERNAL


class OutputFailed(SseToolError):
    """Writing stdout, stderr or an output file failed (closed, full, an I/O error)."""

    exit_code = ExitCode.OUTPUT


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: the stage ends as on Ctrl-C and exits 128 + the signal's
    number, the status a shell reports for a process the signal killed. A BaseException,
    as KeyboardInterrupt is, so that no ``except Exception`` takes it for a failure."""

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(name)
        self.signum = signum
        self.exit_code = ExitCode(128 + signum)


class BadInput(SseToolError):
    """The input is not what the stage reads. ``offset`` is the byte offset, when known."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, message: str, offset: int | None = None) -> None:
        if offset is not None:
            message = f"{message} (at byte {offset})"
        super().__init__(message)
        self.offset = offset


class EventTooLarge(BadInput):
    """An event (or a line of it) grew past the configured size limit."""

    def __init__(self, limit: int, offset: int | None = None) -> None:
        super().__init__(
            f"event larger than the limit of {limit} bytes; raise it with --max-event-size",
            offset,
        )
        self.limit = limit
