"""``sse-tool frame``: SSE bytes (or a JSON array, NDJSON, an AWS event stream) to one JSON
record per event."""

from __future__ import annotations

from enum import Enum
from typing import List, Optional

import typer

from ..errors import ExitCode
from ..framing import FRAMERS, AutoFramer, make_framer
from ..sse import DEFAULT_MAX_EVENT_SIZE
from ..wire import dumps, event_record
from ._edge import NO_STREAM, Output, inputs, parse_size, run_stage, warn

From = Enum("From", {name: name for name in ["auto", *FRAMERS]}, type=str)

EPILOG = """\b
Examples:
  curl -sN https://... | sse-tool frame | jq -r .data
  sse-tool frame --json samples/anthropic.sse | jq -r '.data.delta.text // empty'
  sse-tool frame --offsets --comments recording.sse
  sse-tool frame --json bedrock.eventstream | jq -c '{event, data}'

\b
Exit status:
  0  input ended on an event boundary
  3  input ended inside an event (truncated): that event is not emitted, and the
     last record is {"comment": "sse-tool truncated: WHY"}, for later stages
  5  bad input, or an event over --max-event-size
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
    limit = parse_size(max_event_size)
    kind = source.value

    def body() -> int:
        out = Output()
        code = ExitCode.OK
        for name, chunks in inputs(files):
            if kind == "auto":
                framer = AutoFramer(comments=comments, max_event_size=limit)
            else:
                framer = make_framer(kind, comments=comments, max_event_size=limit)
            received = 0
            for chunk in chunks:
                received += len(chunk)
                items = framer.feed(chunk)
                if items:
                    out.send(b"".join(
                        dumps(event_record(i, json_data=json_data, offsets=offsets)) for i in items
                    ))
            end = framer.close()
            if not received:  # an earlier stage failed and said why: exit 0, pipefail keeps its code
                warn("frame", f"{name}: {NO_STREAM}")
            elif end.truncated:
                out.send(dumps(event_record(end.comment(), offsets=offsets)))
                warn("frame", f"{name}: truncated: {end.truncated} (at byte {end.offset})")
                code = ExitCode.TRUNCATED
        return code

    run_stage("frame", body)

