"""``sse-tool normalize``: any earlier stage's output to channel records, one JSON line each.

Reads raw provider bytes (SSE, a JSON array, NDJSON, an AWS event stream), ``frame``
records or channel records (passed through) with ``pipeline.RecordReader``, and writes
each batch of records as soon as an input chunk yields it. The stream's ``end`` record decides the exit status
(``_edge.end_exit_code``), so a later stage reading these records maps it the same way.
"""

from __future__ import annotations

from enum import Enum
from operator import attrgetter
from typing import List, Optional

import orjson
import typer

from ..errors import BadInput, ExitCode
from ..model import Channel, Delta, End, Note, Reset, Status, Transcript, stopped_early, to_record
from ..normalize import failed_end
from ..pipeline import SOURCES, RecordReader
from ..providers import PROVIDERS
from ..sse import DEFAULT_MAX_EVENT_SIZE
from ..think import MODES
from ..wire import dumps
from ._edge import (Output, end_exit_code, end_message, inputs, parse_size, pass_note, run_stage, say_skipped,
                    warn)

From = Enum("From", {name: name for name in SOURCES}, type=str)
Provider = Enum("Provider", {name: name for name in ["auto", *PROVIDERS]}, type=str)
ThinkTagsMode = Enum("ThinkTagsMode", {name: name for name in MODES}, type=str)

EPILOG = """\b
Examples:
  curl -sN https://... | sse-tool normalize | jq -rj 'select(.channel=="answer").text'
  sse-tool normalize stream.sse
  sse-tool frame recording.sse | sse-tool normalize --provider openai --aggregate

\b
Records (JSON Lines; exactly one end record, always last):
  {"type":"delta","channel":"answer","text":"ganar "}   (channel: answer, reasoning, refusal)
  {"type":"part","channel":"reasoning"}   (a new part: show a blank line before it)
  {"type":"tool_call","index":0,"id":"call_1","name":"get_weather","arguments":"{\\"ci"}
  {"type":"usage","usage":{...}}   {"type":"meta","key":"model","value":"..."}
  signature, redacted, citation, tool_status, tool_result: see man sse-tool-normalize
  {"type":"note","text":"fetch: HTTP 503; retry 1/2 in 0.5s (backoff)"}
  {"type":"end","status":"complete","stop_reason":"end_turn","usage":{...},
   "tool_calls":[{"index":0,"id":"call_1","name":"get_weather","complete_json":true}]}
  status: complete (terminal event arrived), truncated, error (with "error": {type, message}),
  invalid (bad input, with "offset"), or failed (an earlier stage failed; "exit" is its code)

\b
Exit status:
(the end record's: every input ends with one, failures included; an earlier stage's
failure marker becomes the end record, its code in "exit")
  0  the stream completed
  2  usage error (a file that does not exist, a directory)
  3  truncated: input ended without the provider's terminal event, or inside an event,
     or no input at all
  4  the provider reported an error in the stream (an error body from curl too)
  5  bad input (status "invalid", with "offset"): not a stream, another provider's events,
     broken JSON, a value of the wrong type (--lenient skips bad events with a warning)
  6, 7, 8  passed on from fetch (HTTP error, network failure, timeout): status "failed"
  9  only with --strict: completed, but the model stopped early (length, max tokens,
     content filter, safety, refusal)
  11 the output could not be written (stdout closed or full; quietly)
  130 interrupted (the records still end with a truncated end record)
  141 the reader closed the pipe (quietly)

\b
Environment (output is UTF-8 whatever the locale; see man sse-tool-normalize):
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""


#: a delta's JSON line up to its text: deltas are nearly every record, and writing them
#: this way costs a quarter of building each dict first
_DELTA_HEAD = {c: b'{"type":"delta","channel":"%s","text":' % c.value.encode() for c in Channel}
#: between two texts of one channel's deltas: the end of a line and the start of the next,
#: in place of ``",`` LF two spaces ``"`` in an indented JSON array of strings, which is only
#: ever between two of them (a string's own line ends are escaped)
_BETWEEN = {c: b'"}\n' + head + b'"' for c, head in _DELTA_HEAD.items()}
_TEXT, _CHANNEL = attrgetter("text"), attrgetter("channel")


_DELTAS = {Delta}


class _Writer:
    """Records to JSON lines, adding each delta's channel text so far when asked."""

    def __init__(self, out: Output, aggregate: bool, strict: bool) -> None:
        self.out = out
        self.transcript = Transcript() if aggregate else None
        self.strict = strict
        self.end: End | None = None  # the end record of the current input, once written
        self.refused = False  # a refusal came in place of the answer (--strict: exit 9)

    def send(self, records: list) -> None:
        if not records:
            return
        transcript = self.transcript
        if transcript is None and set(map(type, records)) == _DELTAS:
            channels = set(map(_CHANNEL, records))
            if len(channels) == 1:  # nearly every read's records: one dumps, one replace
                channel = channels.pop()
                self.refused = self.refused or channel is Channel.REFUSAL
                texts = orjson.dumps(list(map(_TEXT, records)), option=orjson.OPT_INDENT_2)[4:-2]
                self.out.send(_DELTA_HEAD[channel] + texts.replace(b'",\n  "', _BETWEEN[channel]) + b"}\n")
                return
        lines = []
        for record in records:
            if type(record) is Delta and transcript is None:
                lines.append(_DELTA_HEAD[record.channel] + orjson.dumps(record.text) + b"}\n")
                if record.channel is Channel.REFUSAL:
                    self.refused = True
                continue
            if type(record) is Delta and record.channel is Channel.REFUSAL:
                self.refused = True
            elif type(record) is Note:
                pass_note(self.out, record.text)
            elif type(record) is Reset:  # the refusing attempt, if any, is void
                self.refused = False
            elif isinstance(record, End):
                if self.strict and record.exit is None and record.status is Status.COMPLETE and (
                        stopped_early(record.stop_reason) or self.refused):
                    record = record._replace(exit=ExitCode.STOPPED_EARLY)  # later stages exit 9 too
                self.end = record
                if _may_say(record) or self.refused:
                    # asked before the end record goes out: a reader may end once it has it
                    self.out.read_by_a_stage()
            line = to_record(record)
            if transcript is not None:
                if isinstance(record, Delta):
                    transcript.add(record)
                    line["aggregate"] = transcript.text(record.channel)
                elif isinstance(record, Reset):
                    transcript.clear()
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
    lenient: bool = typer.Option(
        False, "--lenient",
        help="Skip an event that is not what its provider sends (not JSON, a value of the wrong "
        "type) with a warning, instead of stopping with exit 5.",
    ),
) -> None:
    """Turn a provider's stream into answer and reasoning deltas, tool calls, usage and one end record.

    Accepts raw SSE (or a JSON array, NDJSON, an AWS event stream), sse-tool frame output, or channel records
    (passed through), recognised from the first bytes. Each record is written and flushed
    as soon as the input that produced it has been read.
    """
    limit = parse_size(max_event_size, "--max-event-size")
    writer: _Writer | None = None
    reader: RecordReader | None = None

    def body() -> int:
        nonlocal writer, reader
        writer = _Writer(Output(), aggregate, strict)
        code = ExitCode.OK
        streams = inputs(files)
        while True:
            writer.end = None  # the next input's end is owed, even if it cannot be opened
            writer.refused = False
            reader = None  # (until this input is open: a failure to open ends it plainly)
            try:
                name, chunks = next(streams)
            except StopIteration:
                break
            reader = RecordReader(provider.value, source.value, max_event_size=limit,
                                  think_tags=think_tags.value, lenient=lenient)
            told = not verbose
            try:
                for chunk in chunks:
                    writer.send(reader.feed(chunk))
                    say_skipped("normalize", name, reader)
                    if not told:
                        told = _tell(name, reader)
                    if reader.error is not None:  # its good records are out: fail now
                        raise reader.error
                writer.send(reader.close())
                say_skipped("normalize", name, reader)
            except BadInput as exc:
                raise named(exc, name) from None
            if not told:
                _tell(name, reader, final=True)
            end = writer.end
            stream_code = end_exit_code(end)
            message = end_message(end)
            if message is None and stream_code is ExitCode.STOPPED_EARLY and writer.refused:
                message = "the model refused"
            elif message is None and stream_code is ExitCode.STOPPED_EARLY:
                message = f"the model stopped early: {end.stop_reason}"
            elif message is None and end.detail and end.status is Status.COMPLETE:
                # complete, with something to say (a <think> never closed)
                message = end.detail
            if message and not writer.out.read_by_a_stage():  # (else the end record says it)
                warn("normalize", f"{name}: {message}")
            if code is ExitCode.OK:
                code = stream_code
        return code

    def mark(code: int, reason: str, error) -> None:
        """End the input being read with the end record of this stage's own failure."""
        if writer is None or writer.end is not None:
            return
        detail, offset = f"normalize: {reason}", getattr(error, "offset", None)
        writer.send(reader.failed(code, detail, offset) if reader is not None else [failed_end(code, detail, offset)])

    run_stage("normalize", body, mark)


def _may_say(end: End) -> bool:
    """Whether normalize may have something to say of a stream that ends so (a failure, an
    early stop, a detail): then whether a later stage shows it is worth asking."""
    return (end.status is not Status.COMPLETE or end.exit is not None or bool(end.detail)
            or stopped_early(end.stop_reason))


def named(exc: BadInput, name: str) -> BadInput:
    """``exc`` with the input's name in front of its message (its offset kept)."""
    out = BadInput(f"{name}: {exc}")
    out.offset = exc.offset
    return out


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
