"""Rules about the bytes of any stream (SSE, NDJSON, a JSON array) and how it ends.

``ByteScan`` reads each chunk with a few C-level calls (``isascii``, ``find``, a strict
UTF-8 decoder only where a chunk is not ASCII) and reports a BOM, NUL bytes and invalid
UTF-8 with their offsets. The rest of this module is the rules the checker core applies
itself, framing aside: lines too long for common client buffers, data that is not the
provider's JSON, the stream's end (no event at all, no terminal event, events after it).
"""

from __future__ import annotations

from codecs import getincrementaldecoder

import orjson

from ..decode import BOM
from ..providers.errors import error_event, plain_text
from .rules import ERROR, NOTE, WARNING, Finding, rule

BOM_AT_START = rule(
    "stream.bom", WARNING, "the stream starts with a UTF-8 byte order mark",
    """The WHATWG event-stream decoder strips one leading BOM, but decoders that split lines
    first do not: openai-python decodes each line with plain "utf-8", so its first line is
    "\\ufeffdata: ...", an unknown field, and the first event is silently lost. JSON (RFC 8259,
    section 8.1) forbids a BOM in a JSON text, which also breaks NDJSON and JSON array
    readers that parse the first line or the whole body.""",
    ("openai-python (first event lost)",),
)
INVALID_UTF8 = rule(
    "stream.invalid-utf8", ERROR, "bytes that are not UTF-8",
    """Event streams, JSON Lines and JSON are UTF-8. A spec-exact SSE parser replaces the bad
    bytes with U+FFFD (the text is corrupted); openai-python decodes each line strictly and
    raises UnicodeDecodeError, ending the stream.""",
    ("openai-python (UnicodeDecodeError)",),
)
NUL = rule(
    "stream.nul", WARNING, "a NUL byte",
    """NUL is legal in an SSE line but nowhere useful: a raw NUL is not allowed in JSON
    strings, an `id:` value holding one is ignored by the spec (and by openai-python), and C
    clients that keep lines as NUL-terminated strings cut the line there.""",
)
LINE_64K = rule(
    "stream.line-over-64k", WARNING, "a line longer than 64 KiB",
    """Go's bufio.Scanner stops at a token over 64 KiB (MaxScanTokenSize) with "bufio.Scanner:
    token too long", and many Go clients read SSE and NDJSON line by line with its default
    buffer: openai-go's Responses streams did (openai/openai-go#368), and so did several
    gateways (writer/cerebro#307, ferro-labs/ai-gateway#129). The length counts the line end.""",
    ("Go bufio.Scanner with its default buffer (openai-go before its buffer was raised)",),
)
LINE_1M = rule(
    "stream.line-over-1m", WARNING, "a line longer than 1 MiB",
    """Clients that raised bufio.Scanner's limit often raised it to 1 MiB and fail past it:
    term-llm's OpenAI-compatible, Responses and xAI streams (SamSaffron/term-llm#298, #347,
    #429) and goai (zendev-sh/goai#70). Large tool arguments and inline images reach this.
    Reported instead of stream.line-over-64k for the same line.""",
    ("clients with a 1 MiB line buffer (term-llm, goai before their fixes)",),
)
NO_EVENTS = rule(
    "stream.no-events", ERROR, "the input holds no event",
    """Bytes arrived, but not one complete event: the response was cut before its first
    event, or it is not a stream at all.""",
    truncation=True,
)
NO_TERMINAL = rule(
    "stream.no-terminal-event", ERROR, "the stream ended without the provider's terminal event",
    """Only the terminal event (`data: [DONE]`, `message_stop`, `response.completed`, a
    `finishReason`, `done: true`, ...) proves the turn finished; without it a client cannot
    tell a complete answer from a cut one, and strict clients report an error (a gateway
    that re-labels a cut stream as finished shows half an answer as complete:
    BerriAI/litellm#40260). Not reported after the provider's error event, which ends a
    stream on its own (an `event: error` in plain text too).""",
    truncation=True,
)
AFTER_TERMINAL = rule(
    "stream.after-terminal", ERROR, "an event after the provider's terminal event",
    """The terminal event is the last one. openai-python and openai-go stop reading at
    `data: [DONE]`, so what follows is lost; for the named-event dialects a second end, or
    content after the end, makes the turn's result depend on the client. OpenRouter's
    `data: [DONE]` after `response.completed` on its Responses endpoint is accepted (the
    openai SDKs stop at it).""",
    ("openai-python, openai-go (events after [DONE] are never read)",),
)
DATA_NOT_JSON = rule(
    "stream.data-not-json", ERROR, "an event whose data is not a JSON object",
    """Every LLM dialect here sends one JSON object per event (OpenAI's `[DONE]` aside), and
    the SDKs parse every event they dispatch: openai-python and anthropic-sdk-python call
    json.loads (JSONDecodeError), google-genai raises "Failed to parse response as JSON",
    openai-node fails in JSON.parse. Empty data (`data:` alone) is not JSON either. An
    `event: error` in plain text (as some proxies write it) is still the stream's error, its
    text the message, as normalize and anthropic-sdk-python read it; the openai SDKs fail on
    it with a JSON error instead of raising the API error.""",
    ("openai-python", "anthropic-sdk-python", "google-genai", "openai-node"),
)
DONE_WITH_SPACES = rule(
    "stream.done-with-spaces", WARNING, "the OpenAI sentinel `[DONE]` with whitespace after it",
    """openai-python and openai-node end the stream at data that starts with `[DONE]`, so
    they take `[DONE] ` (and normalize reads it as the end too); a client that compares the
    data with `[DONE]` exactly misses the end and fails parsing it as JSON.""",
)
WRONG_TYPE = rule(
    "stream.wrong-type", ERROR, "a field of the dialect's payload with the wrong JSON type",
    """Each dialect's fields have one JSON type (text is a string, usage an object, an index
    an integer); clients read them as such, and a string where an object belongs (or an
    array where text belongs) fails there: a typed SDK raises a validation error, and
    normalize stops with bad input at that event's offset.""",
)
NDJSON_NO_NEWLINE = rule(
    "ndjson.missing-final-newline", ERROR, "the NDJSON stream ends inside a line",
    """Each NDJSON line ends with a newline; a last line without one is a cut stream, and
    line readers either drop it or hand over half a JSON object.""",
    truncation=True,
)
JSON_ARRAY_UNCLOSED = rule(
    "json-array.unclosed", ERROR, "the streamed JSON array is not closed",
    """A streamed JSON array (Gemini or Vertex AI Search without `alt=sse`) is complete only
    with its closing `]`; without it the body is not JSON and the last element may be cut.""",
    truncation=True,
)
EVENTSTREAM_CUT = rule(
    "eventstream.cut", ERROR, "the AWS event stream ends inside a message",
    """Each event-stream message declares its total length in its prelude; a body that
    ends before that many bytes is a cut stream, and decoders (botocore's among them)
    drop the torn message or fail.""",
    truncation=True,
)
JSON_ARRAY_SYNTAX = rule(
    "json-array.syntax", ERROR, "the streamed JSON array is malformed",
    """Between elements a JSON array holds only `,` and whitespace, and nothing follows its
    `]`; anything else makes the whole body invalid JSON for clients that parse it whole
    and stops incremental readers at that point.""",
)
UNKNOWN_PROVIDER = rule(
    "stream.unknown-provider", NOTE, "no provider dialect recognised",
    """None of the dialects recognised the stream, so only the framing rules were checked;
    name the dialect with --provider to check its rules too.""",
)

#: what each dialect's terminal event is, for messages
TERMINAL = {
    "openai": "data: [DONE]",
    "openai-responses": "response.completed, response.incomplete or response.failed",
    "anthropic": "message_stop",
    "gemini": "a finishReason (or promptFeedback.blockReason)",
    "vertex-search": "answer.state SUCCEEDED or FAILED",
    "ollama": "a line with done: true",
    "cohere": "message-end",
    "bedrock": "messageStop (or, in InvokeModel chunks, the model's own terminal event)",
}

_64K = 64 * 1024
_1M = 1024 * 1024

#: payload of an event whose data is not JSON (already reported)
NOT_JSON = object()


class ByteScan:
    """BOM, NUL and invalid UTF-8, chunk by chunk; findings carry event index -1 (the core
    assigns it once it knows which event the offset belongs to)."""

    __slots__ = ("_pos", "_head", "_decoder")

    def __init__(self, start: int = 0) -> None:
        self._pos = start  # (a scan from a later offset starts where no character is cut)
        self._head: bytes | None = b"" if start == 0 else None  # the first bytes, until a BOM is decided
        self._decoder = getincrementaldecoder("utf-8")()  # strict: errors raise

    def feed(self, chunk: bytes) -> list[Finding]:
        out: list[Finding] = []
        pos = self._pos
        self._pos += len(chunk)
        if self._head is not None:
            self._head += chunk[: len(BOM) - len(self._head)]
            if len(self._head) == len(BOM) or not BOM.startswith(self._head):
                if self._head == BOM:
                    out.append(BOM_AT_START.at(0, -1, "the stream starts with a UTF-8 BOM (EF BB BF)"))
                self._head = None
        if 0 in chunk:
            at = chunk.find(b"\0")
            while at >= 0:
                out.append(NUL.at(pos + at, -1, "a NUL byte"))
                at = chunk.find(b"\0", at + 1)
        held, _ = self._decoder.getstate()
        if held or not chunk.isascii():
            self._utf8(held + chunk, pos - len(held), out)
        return out

    def _utf8(self, data: bytes, base: int, out: list[Finding]) -> None:
        decoder = self._decoder
        decoder.reset()
        start = 0
        while True:
            try:
                decoder.decode(data[start:] if start else data)
                return
            except UnicodeDecodeError as exc:
                bad = data[start + exc.start : start + exc.end]
                out.append(INVALID_UTF8.at(base + start + exc.start, -1,
                                           f"invalid UTF-8: {bad.hex(' ')} ({exc.reason})"))
                start += exc.end
                decoder.reset()


def long_line(length: int, offset: int, event: int) -> Finding | None:
    """The finding for a line of ``length`` bytes (its line end included), if too long."""
    if length > _1M:
        return LINE_1M.at(offset, event, f"a line of {length:,} bytes (over 1 MiB)")
    if length > _64K:
        return LINE_64K.at(offset, event, f"a line of {length:,} bytes (over 64 KiB)")
    return None


def payload(data: str, provider: str, offset: int, event: int, out: list[Finding], name: str = "message"):
    """The event's data as the dialect's JSON object, or ``NOT_JSON`` (reported in ``out``).

    OpenAI's ``[DONE]`` sentinel is returned as the string; so is it on the Responses
    endpoint, where OpenRouter appends it. An error event (``name``) in plain text is the
    error object it stands for, as normalize reads it: the stream's end, not a cut."""
    if provider in ("openai", "openai-responses") and data.rstrip() == "[DONE]":
        if data != "[DONE]":
            out.append(DONE_WITH_SPACES.at(offset, event, f"data {_quote(data)}: [DONE] with whitespace after it"))
        return "[DONE]"
    if name == "error" and plain_text(data):
        what = f"an error event in plain text ({_quote(data)})" if data else "an error event with no data"
        out.append(DATA_NOT_JSON.at(offset, event, f"{what}, not JSON: read as the provider's error, the stream's end"))
        return error_event(data)
    first = data[:1]
    if first == ":":  # a comment sent as data: its own rule, in the SSE family
        from .sse import DATA_COMMENT

        out.append(DATA_COMMENT.at(offset, event, f"data {_quote(data)} is a comment sent as data"))
        return NOT_JSON
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        what = "empty data" if not data.strip() else f"data {_quote(data)} is not JSON ({exc})"
        out.append(DATA_NOT_JSON.at(offset, event, what))
        return NOT_JSON
    if not isinstance(value, dict):
        out.append(DATA_NOT_JSON.at(offset, event, f"data {_quote(data)} is JSON but not an object"))
        return NOT_JSON
    return value


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
