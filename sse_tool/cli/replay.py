"""``sse-tool replay``: a recording (or a stream file) to stdout with its timing, chunk by chunk.

The edge around ``sse_tool.replay``: reads the file, sleeps until each write is due
(deadlines from the start, so slow writes do not add up), flushes every chunk, and exits
as the recorded exchange ended.
"""

from __future__ import annotations

from typing import Optional

import typer

from ..errors import ExitCode, SseToolError
from ..marker import NO_STREAM, exit_marker
from ._edge import Output, inputs, run_stage, wait, warn

EPILOG = """\b
Examples:
  sse-tool replay why.rec | sse-tool render          # as it looked live
  sse-tool replay --speed 0 why.rec | sse-tool normalize
  sse-tool replay --rate 50ev tests/fixtures/anthropic/text-short.sse | sse-tool render
  sse-tool replay --rate 1kB stream.sse | sse-tool frame

\b
A recording (fetch --record) is written as it arrived: the same chunks, after the same
gaps (divided by --speed; 0 for none), ending as the exchange ended. Any other file is a
stream file (SSE, JSON array, NDJSON, AWS event stream), written at --rate: RATE is
events (or messages) a second (20ev, the default) or bytes a second (512B, 4kB = 4000,
4KiB = 4096, 1MB); "/s" may follow.

\b
Exit status (a recording's, as fetch gave it):
  0  complete (and any stream file that is not empty)
  3  truncated: the body was cut, or the recorder stopped early (interrupted, closed pipe);
     or an empty input (no stream arrived)
  6  HTTP error status: the message on stderr, nothing on stdout but the marker (after
     the body, when the error answered a retry or reconnection after it)
  7  network failure;  8  timeout
  2  usage error;  5  not a readable recording;  130 interrupted;  141 the reader closed the pipe
A failure also ends stdout with ': sse-tool exit CODE replay: WHY', for the later stages
(before the body began, only when a later stage of sse-tool reads it).

\b
Environment (see man sse-tool-replay):
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""


class ReplayUsage(SseToolError):
    exit_code = ExitCode.USAGE


#: the slowest replay: a thousand times slower (slower ones overflow the clock)
MIN_SPEED = 0.001


def _speed(value: float) -> float:
    if value != value or value in (float("inf"), float("-inf")) or value < 0 or 0 < value < MIN_SPEED:
        raise typer.BadParameter(f"{value:g}: give 0 (no delays) or a factor from {MIN_SPEED:g} up")
    return value


def replay(
    file: str = typer.Argument("-", help="A recording (fetch --record) or a stream file; - is stdin."),
    speed: float = typer.Option(1.0, "--speed", callback=_speed,
                                help="Timing factor: 2 twice as fast, 0 no delays (at least 0.001)."),
    rate: Optional[str] = typer.Option(None, "--rate", metavar="RATE",
                                       help="Pace of a stream file: events (20ev) or bytes (4kB) a second [default: 20ev]."),
) -> None:
    """Write a recorded response body to stdout with its recorded timing, flushing each chunk,
    so that `replay rec | render` looks like the live run."""

    from ..recording import parse_recording
    from ..replay import DEFAULT_RATE, Replay, is_recording, parse_rate, play, rate_steps, replay_recording

    out = None

    def mark(code: int, reason: str, error=None) -> None:
        # As fetch: before the body began, only for a later stage (a recorded HTTP error
        # leaves a file empty).
        if out is not None and (out.began or out.read_by_a_stage()):
            out.marker(exit_marker(code, "replay", reason))

    def body() -> int:
        nonlocal out
        out = Output()
        for name, chunks in inputs([file]):  # (one input; read while it is open)
            data = b"".join(chunks)
        if not data:  # nothing to play: never a success (the next stage would say the same)
            warn("replay", f"{name}: {NO_STREAM}")
            return ExitCode.TRUNCATED
        if is_recording(data):
            if rate is not None:
                raise ReplayUsage("--rate is for stream files: a recording has its own timing (use --speed)")
            plan = replay_recording(parse_recording(data.split(b"\n")), speed)
        else:
            plan = Replay(rate_steps(data, parse_rate(rate or DEFAULT_RATE), speed), 0.0, ExitCode.OK, "")
        play(plan, out.send, sleep=wait)
        if plan.message and not (plan.exit_code and out.read_by_a_stage()):
            warn("replay", plan.message)  # (a later stage of ours says a failure marked in-band)
        if plan.exit_code:  # the recorded failure, in-band for the later stages
            mark(plan.exit_code, plan.message or "the recorded exchange failed")
        return plan.exit_code

    run_stage("replay", body, mark)
