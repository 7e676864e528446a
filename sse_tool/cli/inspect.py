"""``sse-tool inspect``: what happened in a stream, when, and why it felt slow.

The edge around ``sse_tool.inspect``: reads each input (a recording, with its recorded
timing; a plain stream file, without timing; stdin live, timestamping each read as it
returns), feeds the inspector, and writes the reports: for a person (rich on a terminal,
plain text elsewhere) or as JSON lines. ``--tee`` copies stdin to stdout unchanged while
inspecting it; the report then goes to stderr (or ``--output``).
"""

from __future__ import annotations

import gc
import os
import stat
import sys
import time
from enum import Enum
from typing import List, Optional

import typer

from ..errors import BadInput, ExitCode, SseToolError
from ..marker import NO_STREAM
from ..pipeline import SOURCES
from ..providers import PROVIDERS
from ..sse import DEFAULT_MAX_EVENT_SIZE
from ._edge import Output, open_input, parse_size, read_fd, run_stage, warn

From = Enum("From", {name: name for name in SOURCES}, type=str)
Provider = Enum("Provider", {name: name for name in ["auto", *PROVIDERS]}, type=str)
Color = Enum("Color", {n: n for n in ("auto", "always", "never")}, type=str)
SortKey = Enum("SortKey", {n: n for n in ("given", "file", "verdict", "ttft", "tps", "stall", "burst",
                                          "duration", "bytes")}, type=str)

EPILOG = """\b
Examples:
  sse-tool fetch --provider openai --model gpt-4o-mini --prompt Hi --record hi.rec | sse-tool render
  sse-tool inspect hi.rec
  sse-tool fetch https://host/v1/chat ... | sse-tool inspect --tee | sse-tool render
  sse-tool inspect --sort ttft --reverse recordings/*.rec
  sse-tool inspect --json --fail-on truncated,error,stall=30s ci/*.rec | jq -c 'select(.kind=="summary")'

\b
Inputs: recordings (fetch --record: timing from the recording, t=0 when the request was
sent), plain stream files (structure only, no timing) and stdin live (t=0 when inspect
started reading). One input gets a full report, several get a row each and aggregates.
In a pipe, a failure of fetch or replay (an HTTP error, a timeout) is the verdict, and
--tee passes it on to the next stage.
--fail-on CONDITIONS (comma-separated): truncated, error, early (complete but stopped
early), burst, stall=DURATION (longest stall at least that), ttft=DURATION (first token
at least that late, or never), tps=N (output slower than N tokens a second).

\b
Exit status:
  0  the reports were written (whatever the streams' verdicts, without --fail-on)
  3  --fail-on truncated met;  4  --fail-on error met;  9  --fail-on early met
  10 --fail-on threshold crossed (stall, ttft, tps, burst)
  2  usage error;  5  an input is not a stream or recording (the others are reported)
  130 interrupted (the report of what arrived is still written); 141 the reader closed the pipe
  With several inputs, the first input (in order) with a code gives it.

\b
Environment (see man sse-tool-inspect):
  NO_COLOR, FORCE_COLOR, TERM=dumb  colour of the report on a terminal (--color)
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""


class InspectUsage(SseToolError):
    exit_code = ExitCode.USAGE


def _complete_conditions(incomplete: str) -> list[str]:
    """Shell completion of --fail-on: the names of conditions, after those given."""
    from ..inspect.many import FLAGS, THRESHOLDS

    given, comma, last = incomplete.rpartition(",")
    return [f"{given}{comma}{name}" for name in (*FLAGS, *(f"{t}=" for t in THRESHOLDS))
            if name.startswith(last)]


def inspect(
    files: Optional[List[str]] = typer.Argument(
        None, help="Recordings or stream files (default: stdin, read live; - is stdin)."
    ),
    json_out: bool = typer.Option(False, "--json", "-j",
                                  help="One JSON object per stream, then one summary object (JSON lines)."),
    fail_on: Optional[str] = typer.Option(
        None, "--fail-on", metavar="CONDITIONS", autocompletion=_complete_conditions,
        help="Exit non-zero when a stream meets one of these comma-separated conditions (below)."),
    tee: bool = typer.Option(False, "--tee", help="Copy the input to stdout unchanged (the report goes to stderr)."),
    sort: SortKey = typer.Option("given", "--sort", help="Order of the rows (several inputs): by a column."),
    reverse: bool = typer.Option(False, "--reverse", "-r", help="Reverse the order of --sort."),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                         help="Write the report to FILE instead (atomically, at the end)."),
    provider: Provider = typer.Option("auto", "--provider", "-p", help="Provider dialect; auto recognises it."),
    source: From = typer.Option("auto", "--from", help="What the input is; auto decides from the first bytes."),
    color: Color = typer.Option("auto", "--color", help="Colour on a terminal (NO_COLOR, FORCE_COLOR honoured)."),
    max_event_size: str = typer.Option(f"{DEFAULT_MAX_EVENT_SIZE // 2**20}MiB", "--max-event-size",
                                       metavar="SIZE", help="An event over SIZE makes its input unreadable (5)."),
) -> None:
    """Report what happened in a stream, when, and why it felt slow.

    Verdict and cause, timeline (time to first token, phases), rates, gaps and stalls
    (keep-alives apart), delivery shape and bursts, sizes and usage, and a picture of
    the content over time.
    """
    from ..inspect.many import parse_fail_on

    limit = parse_size(max_event_size, "--max-event-size")

    def body() -> int:
        conditions = parse_fail_on(fail_on) if fail_on else []
        # What is read is kept until the report (chunks, arrivals): a growing heap of
        # tuples that the cyclic collector would walk again and again (a third of the
        # time on a long recording) to find no cycle. The process ends after the report.
        gc.disable()
        if tee and len(files or []) > 1:
            raise InspectUsage("--tee copies one input: give one file, or none for stdin")
        if output:
            from ..render import persist

            persist.check_writable(output)
        run = _Run(conditions, json_out, output, tee, provider.value, source.value, limit)
        try:
            for path in files or ["-"]:
                run.one(path)
        except KeyboardInterrupt:
            run.interrupted = True
        return run.finish(sort.value, reverse, color.value)

    run_stage("inspect", body)


class _Run:
    """The inputs of one command, their reports, and where the reports go."""

    def __init__(self, conditions, json_out, output, tee, provider, source, limit) -> None:
        self.conditions = conditions
        self.json_out = json_out
        self.output = output
        self.tee = Output() if tee else None
        # A recording is told by its first line whatever --from says; ``recording`` insists.
        self.recordings_only = source == "recording"
        self.options = {"provider": provider, "source": "auto" if self.recordings_only else source,
                        "max_event_size": limit}
        self.results: list = []  # (report, conditions met)
        self.codes: list[int] = []  # per input, in order
        self.unreadable = self.empty = 0
        self.interrupted = False
        self.start = time.monotonic()
        self._written: list[bytes] = []  # JSON lines for --output

    # -- one input ----------------------------------------------------------------------

    def one(self, path: str) -> None:
        name = "<stdin>" if path == "-" else path
        fd = self._open(path)
        if path == "-" and fd >= 0 and os.isatty(fd):
            warn("inspect", "reading a stream from the terminal (Ctrl-D ends it); "
                            "give a FILE, or pipe a stream in")
        try:
            report = self._read(name, fd, live=path == "-" and _is_live(fd))
        except BadInput as exc:
            warn("inspect", f"{name}: {exc}")
            self.unreadable += 1
            self.codes.append(ExitCode.BAD_INPUT)
            if self.tee and not self.interrupted:  # the bytes still go on, unchanged (a
                # stream found bad as Ctrl-C closed it is not read to its end)
                for chunk in read_fd(fd):
                    self.tee.send(chunk)
            return
        finally:
            if path != "-":
                os.close(fd)
        if report is None:
            warn("inspect", f"{name}: {NO_STREAM}")
            self.empty += 1
            # no stream is never a success where the caller asks about cut streams
            if any(c.name == "truncated" for c in self.conditions):
                self.codes.append(ExitCode.TRUNCATED)
            return
        from ..inspect.many import findings

        met = findings(report, self.conditions)
        self.results.append((report, met))
        self.codes.append(met[0].exit_code if met else ExitCode.OK)
        if self.json_out:
            self._json(report, met)

    @staticmethod
    def _open(path: str) -> int:
        if path == "-":
            try:
                return sys.stdin.fileno()
            except (AttributeError, OSError, ValueError):
                return -1  # an in-memory stdin (typer's CliRunner)
        return open_input(path)

    def _chunks(self, fd: int):
        if fd < 0:
            return iter(lambda: sys.stdin.buffer.read1(65536), b"")
        return read_fd(fd)

    def _read(self, name: str, fd: int, live: bool):
        """The report of one input, or None if no byte arrived."""
        from ..inspect.core import Inspector
        from ..recording import MAGIC

        magic = MAGIC.encode()
        chunks = self._chunks(fd)
        head: list[tuple[float, bytes]] = []  # what arrived before the kind was known
        size = 0
        for chunk in chunks:
            head.append((self._now(), chunk))
            self._pass(chunk)
            size += len(chunk)
            if size >= len(magic) or not magic.startswith(b"".join(c for _, c in head)):
                break
        if not size:
            return None
        if self.recordings_only or b"".join(c for _, c in head).startswith(magic):
            return self._recording(name, b"".join([c for _, c in head]), map(self._pass, chunks))
        inspector = Inspector(name, origin="live" if live else "file", **self.options)
        for t, chunk in head:
            inspector.feed(chunk, t if live else None)
        ended = None
        try:
            for chunk in chunks:
                t = self._now()
                self._pass(chunk)
                inspector.feed(chunk, t if live else None)
            ended = self._now()
        except KeyboardInterrupt:
            self.interrupted = True
            return inspector.close(self._now(), "interrupted", "interrupted (Ctrl-C)")
        return inspector.close(ended if live else None, "complete" if live else None)

    def _recording(self, name: str, head: bytes, chunks):
        """The report of a recording, read as it arrives: its chunks go to the inspector as
        their lines complete, the inspector made once the response's head is read."""
        from itertools import chain

        from ..recording import ChunkReader

        reader = ChunkReader(max_line=4 * self.options["max_event_size"] + 64)
        inspector = None
        for data in chain([head], chunks, [None]):
            times, datas = reader.feed(data) if data is not None else reader.close()
            if reader.error is not None:
                raise reader.error
            if times or data is None:
                if inspector is None:
                    inspector = self._inspector(name, reader.recording)
                inspector.feed_all(times, datas)
        end = reader.recording.end
        if end is None:
            return inspector.close(None, "unended", "the recording has no end line (the recorder was stopped)")
        return inspector.close(end.time, end.outcome, end.detail)

    def _inspector(self, name: str, rec):
        from ..inspect.core import Inspector
        from ..inspect.report import Http

        request, response = rec.request, rec.response
        http = Http(
            method=request.method if request else None, url=request.url if request else None,
            status=response.status if response else None, reason=response.reason if response else "",
            content_type=next((v for n, v in response.headers if n.lower() == "content-type"), None)
            if response else None, started=rec.start)
        return Inspector(name, origin="recording", http=http, **self.options)

    def _now(self) -> float:
        return time.monotonic() - self.start

    def _pass(self, chunk: bytes) -> bytes:
        if self.tee is not None:
            self.tee.send(chunk)
        return chunk

    # -- the reports --------------------------------------------------------------------

    def _json(self, report, met) -> None:
        from ..inspect.report import to_json
        from ..wire import dumps

        self._emit(dumps(to_json(report, [c.label() for c in met])))

    def _emit(self, line: bytes) -> None:
        if self.output:
            self._written.append(line)
        elif self.tee:
            sys.stderr.buffer.write(line)
            sys.stderr.buffer.flush()
        else:
            Output().send(line)

    def finish(self, sort: str, reverse: bool, color: str) -> int:
        from ..inspect import many, view

        code = next((c for c in self.codes if c), ExitCode.OK)
        if self.interrupted:
            code = ExitCode.INTERRUPTED
        results = many.sort_reports(self.results, sort, reverse)
        summary = many.summarize([r for r, _ in results], unreadable=self.unreadable, empty=self.empty,
                                 met=[m for _, m in results], code=code)
        if self.json_out:
            from ..wire import dumps

            self._emit(dumps(many.summary_json(summary)))
            if self.output:
                self._save(b"".join(self._written))
            return code
        if not results:
            return code
        if len(results) == 1 and not self.unreadable and not self.empty:
            lines = view.report_lines(*results[0])
        else:
            lines = view.table_lines(results, summary)
        if self.output:
            self._save(view.plain(lines).encode())
            return code
        stream = sys.stderr if self.tee else sys.stdout
        if _is_terminal(stream):
            stream.flush()
            view.show(lines, stream, color=_colour(color))
        else:
            data = view.plain(lines).encode()
            if self.tee:
                sys.stderr.flush()
                sys.stderr.buffer.write(data)
                sys.stderr.buffer.flush()
            else:
                Output().send(data)
        return code

    def _save(self, data: bytes) -> None:
        from ..render import persist

        persist.write_atomic(self.output, data)


def _is_live(fd: int) -> bool:
    """stdin from a pipe, a socket or a terminal is read live; from a file it is a file."""
    if fd < 0:
        return False
    try:
        return not stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _colour(choice: str) -> bool:
    if choice == "never":
        return False
    if choice == "always":
        return True
    return not os.environ.get("NO_COLOR")
