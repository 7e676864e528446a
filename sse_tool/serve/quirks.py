"""Wire quirks that broke real clients, applied to any stream at the byte level.

Consumes a replay schedule (``replay.Step`` list), the quirk names a request asked for
(``quirk=split-utf8,comments``), and the stream's dialect and framing; produces the
schedule with the quirks in it, and how the body ends when a quirk decides
(``hold-open``). Every quirk keeps the stream's meaning for a client that follows the
SSE spec (or JSON's whitespace rules), except ``error-after-200``, which is the point of
its own test, and ``data-keepalive``, which is what the reported servers send: a correct
client reads the same answer, a fragile one breaks as the reported ones did.

Quirks that change bytes are edits on the whole body (insert, replace); the steps keep
their delays, each ending where its last original byte went. Quirks that re-chunk add
cut points, whose pieces go out at once (delay 0), made as they are written;
``one-byte`` is left to the ``chunk`` fault's own re-chunking. Cost is linear in the
body. Nothing here does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import ExitCode, SseToolError
from ..replay import Step, event_ends


class QuirkError(SseToolError):
    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class Quirk:
    name: str
    #: what it does to the stream
    does: str
    #: who sent it, and what it broke
    broke: str
    #: framings it applies to
    framings: tuple[str, ...] = ("sse",)


_ALL = ("sse", "ndjson", "json-array")
#: the catalogue, in the order quirks are applied; docs/ and the README's table follow it
QUIRKS = {q.name: q for q in (
    Quirk("comments", "`: OPENROUTER PROCESSING` comment blocks before the first event and after each",
          "OpenRouter; Go clients: \"unexpected end of JSON input\" (docker/docker-agent#2349, "
          "openai/openai-go#227)"),
    Quirk("ping-after-id", "a block `id:` + `: ping` (no data) after the first event",
          "an LLM gateway's keep-alive after `id:` lines; openai-python dispatched an empty event: "
          "JSONDecodeError (theopenco/llmgateway#2334)"),
    Quirk("id-only", "a block with only `id:` after the first event",
          "gateways; openai-python: JSONDecodeError on the empty event (openai/openai-python#2722, #3833)"),
    Quirk("retry-only", "a block with only `retry: 3000` after the first event",
          "gateways; the same empty-event failure (openai/openai-python#2722)"),
    Quirk("event-keepalive", "a bare `event: keepalive` block (no data) after the first event",
          "keep-alives without data; openai-python 3.57.0 reads an empty event: JSONDecodeError "
          "(seen with sse-tool serve)"),
    Quirk("data-keepalive", "`data: : keepalive` after the first event (data that is not JSON)",
          "Vertex AI partner models; clients that parse every `data` as JSON "
          "(anomalyco/opencode#50871)"),
    Quirk("empty-choices", "an OpenAI chunk with `choices: []` after the first event",
          "OpenAI-compatible servers (the usage chunk); code reading `choices[0]`: IndexError "
          "(microsoft/foundry-local#905)"),
    Quirk("error-after-200", "after the first event, the provider's error event ends the stream",
          "Anthropic (`overloaded_error` in a 200 stream); SDK retries act on the HTTP status "
          "only (anthropics/anthropic-sdk-python#688, vercel/ai#2453)", _ALL),
    Quirk("long-line", "the first JSON line padded with spaces past 64 KiB",
          "large Responses events; Go clients on bufio.Scanner's 64 KiB limit: \"token too long\" "
          "(openai/openai-go#368)", _ALL),
    Quirk("huge-line", "the first JSON line padded with spaces past 1 MiB",
          "large tool results; clients with a 1 MiB line cap drop the stream (achetronic/magec#45)", _ALL),
    Quirk("no-space", "`data:`, `event:` and `id:` without the space after the colon",
          "Spring and other servers; clients matching `data: ` exactly (openai/openai-python#498)"),
    Quirk("cr", "every line ends with a lone CR",
          "allowed by the spec, rarely sent; parsers that split lines on LF only"),
    Quirk("split-crlf", "CRLF line ends, each write ending between the CR and the LF",
          "any server, by chance; eventsource-parser saw two events (rexxars/eventsource-parser#17)"),
    Quirk("split-utf8", "each multi-byte UTF-8 character split across two writes",
          "any server, by chance; UnicodeDecodeError or U+FFFD (vllm-project/vllm#38732)", _ALL),
    Quirk("one-byte", "every byte its own write",
          "a slow or congested connection; clients that assume a whole line per read", _ALL),
    Quirk("hold-open", "the body stays open after the last event, until the client leaves",
          "upstreams that keep the connection after the end; a gateway hung after finish_reason "
          "(maximhq/bifrost#6784)", _ALL),
)}
_LONG = {"long-line": 64 * 1024 + 1, "huge-line": 1024 * 1024 + 1}
_INSERTED = {
    "ping-after-id": b"id: sse-tool-1\n: ping\n\n",
    "id-only": b"id: sse-tool-1\n\n",
    "retry-only": b"retry: 3000\n\n",
    "event-keepalive": b"event: keepalive\n\n",
    "data-keepalive": b"data: : keepalive\n\n",
}
_COMMENT = b": OPENROUTER PROCESSING\n\n"
_LINE_END = re.compile(rb"\r\n|\r|\n")


def parse_quirks(value: str) -> tuple[str, ...]:
    """``a,b`` -> ("a", "b"), each a known quirk; ValueError naming the unknown ones."""
    names = tuple(n.strip().lower().replace("_", "-") for n in value.split(",") if n.strip())
    unknown = [n for n in names if n not in QUIRKS]
    if unknown:
        raise ValueError(f"unknown quirk {', '.join(unknown)} (known: {', '.join(QUIRKS)})")
    return names


class Quirked(NamedTuple):
    #: the schedule with the quirks in it (an iterator when it is cut finely)
    steps: Iterable[Step]
    #: the ending a quirk imposes (``stall`` for ``hold-open``), None to keep the stream's
    ending: str | None
    #: writes of at most this many bytes (``one-byte``: 1), left to ``faults.shape``
    chunk: int | None


def apply_quirks(steps: list[Step], names: tuple[str, ...], dialect: str | None,
                 framing: str) -> Quirked:
    """The steps with the quirks in them, the ending and the write size they impose."""
    for name in names:
        if framing not in QUIRKS[name].framings:
            raise QuirkError(f"quirk {name} applies to {' and '.join(QUIRKS[name].framings)} "
                             f"streams; this one is {framing}")
    if "empty-choices" in names and dialect != "openai":
        raise QuirkError(f"quirk empty-choices applies to OpenAI chat streams; this one is {dialect}")
    ordered = [n for n in QUIRKS if n in names]
    for name in ordered:
        body = b"".join(s.data for s in steps)
        edits = _edits(name, body, dialect, framing)
        if edits:
            steps = _rewrite(steps, edits)
    cuts = _cuts(ordered, b"".join(s.data for s in steps))
    return Quirked(_split(steps, cuts) if cuts else steps, "stall" if "hold-open" in names else None,
                   1 if "one-byte" in names else None)


# -- edits: (start, end, replacement) on the whole body ------------------------------------


def _edits(name: str, body: bytes, dialect: str | None, framing: str) -> list[tuple[int, int, bytes]]:
    ends = event_ends(body)
    first = ends[0] if ends else len(body)
    if name in _INSERTED:
        return [(first, first, _INSERTED[name])]
    if name == "comments":
        return [(0, 0, _COMMENT)] + [(end, end, _COMMENT) for end in ends]
    if name == "empty-choices":
        return [(first, first, _empty_choices(body[:first]))]
    if name == "error-after-200":
        return [(first, len(body), _error_event(dialect, framing))]
    if name in _LONG:
        brace = body.find(b"{")
        return [(brace + 1, brace + 1, b" " * _LONG[name])] if brace >= 0 else []
    if name == "no-space":
        return [(m.start(), m.end(), m[1]) for m in
                re.finditer(rb"(?m)^(data:|event:|id:) ", body)]
    if name == "cr":
        return [(m.start(), m.end(), b"\r") for m in _LINE_END.finditer(body) if m[0] != b"\r"]
    if name == "split-crlf" and framing == "sse":
        return [(m.start(), m.end(), b"\r\n") for m in _LINE_END.finditer(body) if m[0] != b"\r\n"]
    return []


def _rewrite(steps: list[Step], edits: list[tuple[int, int, bytes]]) -> list[Step]:
    """The steps of the edited body: each ends where its last original byte went (an edit
    that spans a step's end goes whole to that step). One pass over steps and edits."""
    body = b"".join(s.data for s in steps)
    pieces, pos = [], 0
    for start, end, text in edits:
        pieces += (body[pos:start], text)
        pos = end
    pieces.append(body[pos:])
    new_body = b"".join(pieces)
    out, prev, carried = [], 0, 0.0
    bound, shift, j = 0, 0, 0
    for step in steps:
        bound += len(step.data)
        while j < len(edits) and edits[j][1] <= bound and bound < len(body):
            start, end, text = edits[j]
            shift += len(text) - (end - start)
            j += 1
        if bound >= len(body):
            new = len(new_body)
        elif j < len(edits) and edits[j][0] < bound:  # inside an edit: it goes with this step
            new = edits[j][0] + shift + len(edits[j][2])
        else:
            new = bound + shift
        data = new_body[prev:new]
        prev = max(prev, new)
        if data:
            out.append(Step(step.delay + carried, data))
            carried = 0.0
        else:  # all its bytes were replaced: its wait goes to the next write
            carried += step.delay
    return out


# -- cuts: extra write boundaries ----------------------------------------------------------


def _cuts(names: list[str], body: bytes) -> list[int]:
    """Where the quirks cut writes, in order."""
    cuts: set[int] = set()
    if "split-crlf" in names:
        cuts |= {m.start() + 1 for m in re.finditer(rb"\r\n", body)}
    if "split-utf8" in names:
        cuts |= {m.start() + 1 for m in re.finditer(rb"[\xc2-\xf4][\x80-\xbf]", body)}
    return sorted(cuts)


def _split(steps: list[Step], cuts: list[int]) -> Iterator[Step]:
    """The steps cut at ``cuts`` (sorted), made as they are asked for: a long recording
    with a cut in every character is never held as that many steps."""
    pos, j = 0, 0
    for step in steps:
        end = pos + len(step.data)
        start, delay = 0, step.delay
        while j < len(cuts) and cuts[j] < end:
            if cuts[j] > pos + start:
                yield Step(delay, step.data[start:cuts[j] - pos])
                start, delay = cuts[j] - pos, 0.0
            j += 1
        yield Step(delay, step.data[start:])
        pos = end


# -- provider-shaped pieces ----------------------------------------------------------------


def _error_event(dialect: str | None, framing: str) -> bytes:
    message = "Overloaded (a quirk injected by sse-tool serve)"
    if framing == "ndjson":
        return json.dumps({"error": message}).encode() + b"\n"
    if framing == "json-array":
        return b",\r\n" + json.dumps({"error": {"code": 503, "message": message,
                                                  "status": "UNAVAILABLE"}}).encode() + b"]"
    if dialect == "anthropic":
        return b"event: error\ndata: " + json.dumps(
            {"type": "error", "error": {"type": "overloaded_error", "message": message}}).encode() + b"\n\n"
    if dialect == "openai-responses":
        return b"event: error\ndata: " + json.dumps(
            {"type": "error", "code": "server_error", "message": message, "param": None}).encode() + b"\n\n"
    if dialect == "gemini":
        return b"data: " + json.dumps(
            {"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}}).encode() + b"\n\n"
    if dialect == "cohere":
        return b"event: message-end\ndata: " + json.dumps(
            {"type": "message-end", "delta": {"finish_reason": "ERROR", "error": message}}).encode() + b"\n\n"
    return b"data: " + json.dumps({"error": {"message": message, "type": "server_error",
                                             "param": None, "code": None}}).encode() + b"\n\n"


def _empty_choices(first_event: bytes) -> bytes:
    chunk = {"id": "chatcmpl-sse-tool", "object": "chat.completion.chunk", "created": 0, "model": ""}
    m = re.search(rb"data: ?(\{.*\})", first_event)
    if m:
        try:
            known = json.loads(m[1])
            chunk.update({k: known[k] for k in ("id", "created", "model") if k in known})
        except ValueError:
            pass
    return b"data: " + json.dumps({**chunk, "choices": []}).encode() + b"\n\n"
