"""``sse-tool frame``: SSE bytes (or a JSON array, NDJSON, an AWS event stream) to one JSON
record per event."""

from __future__ import annotations

from enum import Enum
from typing import List, Optional

import typer

from ..errors import ExitCode
from ..framing import FRAMERS, AutoFramer, make_framer
from ..marker import EXIT, NO_STREAM, NOTE, exit_marker, parse
from ..sse import DEFAULT_MAX_EVENT_SIZE, SseComment
from ..wire import dumps, event_record
from ._edge import Output, inputs, parse_size, pass_note, run_stage, warn

From = Enum("From", {name: name for name in ["auto", *FRAMERS]}, type=str)

EPILOG = """\b
Examples:
  curl -sN https://... | sse-tool frame | jq -r .data
  sse-tool frame --json stream.sse | jq -rj '.data.delta.text // empty'
  sse-tool frame --offsets --comments recording.sse
  sse-tool frame --json bedrock.eventstream | jq -c '{event, data}'

\b
Exit status (a failure is also the last record, {"comment": "sse-tool exit CODE frame: WHY"},
for later stages; an earlier stage's failure marker is passed on, with its code):
  0  input ended on an event boundary
  2  usage error (a file that does not exist, a directory)
  3  input ended inside an event (truncated): that event is not emitted; or no input at all
  5  bad input, or an event over --max-event-size
  11 the output could not be written (stdout closed or full; quietly)
  130 interrupted; 141 the reader closed the pipe (quietly)

\b
Environment (output is UTF-8 whatever the locale; see man sse-tool-frame):
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""


def frame(
    files: Optional[List[str]] = typer.Argument(
        None, help="Inputs, each its own stream (default: stdin; - is stdin)."
    ),
    source: From = typer.Option(
        "auto", "--from", help="Input framing; auto decides from the first bytes."
    ),
    json_data: bool = typer.Option(
        False, "--json", "-j", help="Emit data that is a JSON object or array parsed, for jq."
    ),
    offsets: bool = typer.Option(
        False, "--offsets", help="Add each event's byte offset in its input and its end (where its blank line starts)."
    ),
    comments: bool = typer.Option(
        False, "--comments",
        help="Emit comment lines (keep-alives) as {\"comment\": ...} records. The retry marker "
        "': sse-tool reset' is always emitted: it voids the event being built.",
    ),
    max_event_size: str = typer.Option(
        f"{DEFAULT_MAX_EVENT_SIZE // 2**20}MiB", "--max-event-size", metavar="SIZE",
        help="Stop with exit 5 when one event grows past SIZE (e.g. 16MiB).",
    ),
) -> None:
    """Turn SSE bytes into JSON Lines, one record per event, each flushed as it completes.

    Follows the WHATWG event-stream rules exactly (LF, CRLF and CR line ends, comments,
    multi-line data, id and retry state) whatever the chunking of the input.
    """
    limit = parse_size(max_event_size, "--max-event-size")
    kind = source.value

    out = None

    def body() -> int:
        nonlocal out
        out = Output()
        code = ExitCode.OK
        for name, chunks in inputs(files):
            if kind == "auto":
                framer = AutoFramer(comments=comments, max_event_size=limit)
            else:
                framer = make_framer(kind, comments=comments, max_event_size=limit)
            received = 0
            passed_on = None  # an earlier stage's failure, passed on as its marker
            for chunk in chunks:
                received += len(chunk)
                items = framer.feed(chunk)
                if items:
                    passed_on = _failure(items, passed_on, out)
                    out.send(b"".join(
                        dumps(event_record(i, json_data=json_data, offsets=offsets)) for i in items
                    ))
            end = framer.close()
            if end.items:
                passed_on = _failure(end.items, passed_on, out)
                out.send(b"".join(dumps(event_record(i, json_data=json_data, offsets=offsets))
                                  for i in end.items))
            last = None  # this stage's own failure record
            if not received:  # nothing at all: an earlier stage died without a word
                stream_code, why = ExitCode.TRUNCATED, NO_STREAM
                last = _record(stream_code, why)
            elif passed_on is not None:  # (bytes after its marker are no attempt to judge)
                stream_code, why = passed_on.code, passed_on.text
            elif end.truncated:
                stream_code, why = ExitCode.TRUNCATED, f"truncated: {end.truncated} (at byte {end.offset})"
                last = dumps(event_record(end.comment(), offsets=offsets))
            else:
                continue
            # Ctrl-C ends a pipe quietly; a later stage of ours says the rest (in-band).
            # (Asked before the failure record goes out: a reader may end as soon as it has it.)
            said_later = stream_code == ExitCode.INTERRUPTED or out.read_by_a_stage()
            if last is not None:
                out.send(last)
            if not said_later:
                warn("frame", f"{name}: {why}")
            if code is ExitCode.OK:
                code = stream_code
        return code

    def mark(code: int, reason: str, error) -> None:
        if out is not None:
            out.send(_record(code, reason))

    run_stage("frame", body, mark)


def _record(code: int, reason: str) -> bytes:
    """frame's own failure, as the marker record it ends its output with."""
    return dumps(event_record(SseComment(exit_marker(code, "frame", reason).comment())))


def _failure(items: list, known, out: Output):
    """The last exit marker among ``items`` (a reset voids one), else ``known``; notes
    among them are said on stderr when no later stage will show them. Called before the
    items go out: whether a later stage reads this output is asked while it surely still
    does (a reader may end as soon as it has a failure)."""
    for item in items:
        if type(item) is SseComment:
            marker = parse(item.text)
            if marker is not None and marker.kind == NOTE:
                pass_note(out, marker.text)
            elif marker is not None:
                known = marker if marker.kind == EXIT else None
                if known is not None:
                    out.read_by_a_stage()  # (asked once, kept)
    return known
