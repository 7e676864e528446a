"""``sse-tool normalize``: any earlier stage's output to channel records, one JSON line each.

Reads raw provider bytes (SSE, a JSON array, NDJSON, an AWS event stream), ``frame``
records or channel records (passed through) with ``pipeline.RecordReader``, and writes
each batch of records as soon as an input chunk yields it. The stream's ``end`` record decides the exit status
(``_edge.end_exit_code``), so a later stage reading these records maps it the same way.
"""

from __future__ import annotations

from enum import Enum
from typing import List, Optional

import orjson
import typer

from ..errors import BadInput, ExitCode
from ..model import Channel, Delta, End, Reset, Status, Transcript, to_record
from ..pipeline import SOURCES, RecordReader
from ..providers import PROVIDERS
from ..sse import DEFAULT_MAX_EVENT_SIZE
from ..think import MODES
from ..wire import dumps
from ._edge import NO_STREAM, Output, end_exit_code, inputs, parse_size, run_stage, warn

From = Enum("From", {name: name for name in SOURCES}, type=str)
Provider = Enum("Provider", {name: name for name in ["auto", *PROVIDERS]}, type=str)
ThinkTagsMode = Enum("ThinkTagsMode", {name: name for name in MODES}, type=str)

EPILOG = """\b
Examples:
  curl -sN https://... | sse-tool normalize | jq -rj 'select(.channel=="answer").text'
  sse-tool normalize samples/anthropic-thinking.sse
  sse-tool frame recording.sse | sse-tool normalize --provider openai --aggregate

\b
Records (JSON Lines; exactly one end record, always last):
  {"type":"delta","channel":"answer","text":"ganar "}   (channel: answer, reasoning, refusal)
  {"type":"part","channel":"reasoning"}   (a new part: show a blank line before it)
  {"type":"tool_call","index":0,"id":"call_1","name":"get_weather","arguments":"{\\"ci"}
  {"type":"usage","usage":{...}}   {"type":"meta","key":"model","value":"..."}
  signature, redacted, citation, tool_status, tool_result: see man sse-tool-normalize
  {"type":"end","status":"complete","stop_reason":"end_turn","usage":{...},
   "tool_calls":[{"index":0,"id":"call_1","name":"get_weather","complete_json":true}]}
  status: complete (terminal event arrived), truncated, or error (with "error": {type, message})

\b
Exit status:
  0  the stream completed
  3  truncated: input ended without the provider's terminal event, or inside an event
  4  the provider reported an error in the stream
  5  bad input: not a known format, broken JSON in an event (the message has its byte offset)
  9  only with --strict: completed, but the model stopped early (length, max tokens,
     content filter, safety, refusal)
  130 interrupted (the records still end with a truncated end record)
  141 the reader closed the pipe (quietly)

\b
Environment (output is UTF-8 whatever the locale; see man sse-tool-normalize):
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""


def why(end: End) -> str | None:
    """One line saying why a stream did not simply complete, or None."""
    if end.status is Status.ERROR:
        error = end.error or {}
        return f"provider error: {error.get('type', 'error')}: {error.get('message', '')}".rstrip(": ")
    if end.status is Status.TRUNCATED:
        return f"truncated: {end.detail or 'the stream did not finish'}"
    return None


#: a delta's JSON line up to its text: deltas are nearly every record, and writing them
#: this way costs a quarter of building each dict first
_DELTA_HEAD = {c: b'{"type":"delta","channel":"%s","text":' % c.value.encode() for c in Channel}


class _Writer:
    """Records to JSON lines, adding each delta's channel text so far when asked."""

    def __init__(self, out: Output, aggregate: bool) -> None:
        self.out = out
        self.transcript = Transcript() if aggregate else None
        self.end: End | None = None
        self.refused = False  # a refusal came in place of the answer (--strict: exit 9)

    def send(self, records: list) -> None:
        if not records:
            return
        transcript = self.transcript
        lines = []
        for record in records:
            if type(record) is Delta and transcript is None:
                lines.append(_DELTA_HEAD[record.channel] + orjson.dumps(record.text) + b"}\n")
                if record.channel is Channel.REFUSAL:
                    self.refused = True
                continue
            if type(record) is Delta and record.channel is Channel.REFUSAL:
                self.refused = True
            elif type(record) is Reset:  # the refusing attempt, if any, is void
                self.refused = False
            line = to_record(record)
            if transcript is not None:
                if isinstance(record, Delta):
                    transcript.add(record)
                    line["aggregate"] = transcript.text(record.channel)
                elif isinstance(record, Reset):
                    transcript.clear()
            if isinstance(record, End):
                self.end = record
            lines.append(dumps(line))
        self.out.send(b"".join(lines))


def normalize(
    files: Optional[List[str]] = typer.Argument(
        None, help="Inputs, each its own stream with its own end record (default: stdin; - is stdin)."
    ),
    provider: Provider = typer.Option(
        "auto", "--provider", "-p", help="The provider's dialect; auto recognises it from the first events."
    ),
    source: From = typer.Option(
        "auto", "--from", help="What the input is; auto decides from the first bytes."
    ),
    aggregate: bool = typer.Option(
        False, "--aggregate", help="Add the channel's text so far to each delta (output grows quadratically)."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Say on stderr which input kind and provider were recognised."
    ),
    max_event_size: str = typer.Option(
        f"{DEFAULT_MAX_EVENT_SIZE // 2**20}MiB", "--max-event-size", metavar="SIZE",
        help="Stop with exit 5 when one event grows past SIZE (e.g. 16MiB).",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 9 when the stream completed but the model stopped early."
    ),
    think_tags: ThinkTagsMode = typer.Option(
        "auto", "--think-tags",
        help="Move <think>...</think> at the start of the answer to the reasoning channel: auto "
        "(when the answer opens with <think>), on (also when only </think> comes), off.",
    ),
) -> None:
    """Turn a provider's stream into answer and reasoning deltas, tool calls, usage and one end record.

    Accepts raw SSE (or a JSON array, NDJSON, an AWS event stream), sse-tool frame output, or channel records
    (passed through), recognised from the first bytes. Each record is written and flushed
    as soon as the input that produced it has been read.
    """
    limit = parse_size(max_event_size)

    def body() -> int:
        writer = _Writer(Output(), aggregate)
        code = ExitCode.OK
        for name, chunks in inputs(files):
            reader = RecordReader(provider.value, source.value, max_event_size=limit,
                                  think_tags=think_tags.value)
            told = not verbose
            try:
                for chunk in chunks:
                    writer.send(reader.feed(chunk))
                    if not told:
                        told = _tell(name, reader)
                    if reader.error is not None:  # its good records are out: fail now
                        raise reader.error
                writer.send(reader.close())
            except BadInput as exc:
                raise BadInput(f"{name}: {exc}") from None
            except KeyboardInterrupt:
                if writer.end is None:  # partial output is marked as such
                    writer.send([End(Status.TRUNCATED, detail="interrupted")])
                raise
            if not told:
                _tell(name, reader, final=True)
            end = writer.end
            refused, writer.refused = writer.refused, False
            if end is None:  # close() ends with one unless not a byte arrived
                warn("normalize", f"{name}: {NO_STREAM}")
                continue
            writer.end = None
            stream_code = end_exit_code(end, strict)
            message = why(end)
            if strict and refused and stream_code is ExitCode.OK:
                stream_code, message = ExitCode.STOPPED_EARLY, "the model refused"
            elif message is None and stream_code is ExitCode.STOPPED_EARLY:
                message = f"the model stopped early: {end.stop_reason}"
            elif message is None and end.detail:  # complete, with something to say (a <think> never closed)
                message = end.detail
            if message:
                warn("normalize", f"{name}: {message}")
            if code is ExitCode.OK:
                code = stream_code
        return code

    run_stage("normalize", body)


def _tell(name: str, reader: RecordReader, final: bool = False) -> bool:
    """Say what auto-detection chose, once it has chosen; True once said."""
    if reader.source is None:
        return False
    if reader.source == "records":
        warn("normalize", f"{name}: input is channel records, passed through")
        return True
    chosen = reader.normalizer.provider if reader.normalizer else None
    if chosen is None:
        if final:
            warn("normalize", f"{name}: input is {reader.source}, no provider recognised")
        return final
    how = "recognised" if reader.provider == "auto" else "as told"
    warn("normalize", f"{name}: input is {reader.source}, provider {chosen} ({how})")
    return True
