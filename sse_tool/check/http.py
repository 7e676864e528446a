"""Rules about a recorded response's status and headers (``fetch --record`` recordings).

Judged against the body's framing: an event stream is ``text/event-stream``, NDJSON one of
the JSON Lines types, a streamed JSON array ``application/json``; a charset, when named,
is UTF-8; the stream is neither cached nor compressed.
"""

from __future__ import annotations

from operator import attrgetter

from ..recording import Recording
from .rules import ERROR, NOTE, WARNING, Finding, rule

STATUS = rule(
    "http.status", WARNING, "a status other than 200",
    """A stream is a 200 response. EventSource fails the connection on any other status, and
    SDKs treat 4xx and 5xx as errors whose body is not a stream (the body is not checked as
    one then).""",
)
CONTENT_TYPE = rule(
    "http.content-type", ERROR, "a content type that does not match the body",
    """An event stream is `text/event-stream` (EventSource fails the connection otherwise,
    and SDKs that pick a decoder by content type, as openai-go does, read it as something
    else); NDJSON is `application/x-ndjson` (or `application/jsonl`, `application/ndjson`);
    a streamed JSON array is `application/json`.""",
    ("EventSource (connection failed)",),
)
CHARSET = rule(
    "http.charset", ERROR, "a charset other than UTF-8",
    """Event streams are always UTF-8: the `text/event-stream` registration allows a charset
    parameter only with the value "utf-8", and JSON (RFC 8259) is UTF-8 too. A client that
    honours another charset decodes the text wrongly.""",
)
CACHE_CONTROL = rule(
    "http.cache-control", NOTE, "an event stream without Cache-Control: no-cache",
    """Without `Cache-Control: no-cache` (or `no-store`) a cache or proxy between server and
    client may store the response or hold it back until it ends; the WHATWG specification's
    own examples send it with every event stream.""",
)
COMPRESSED = rule(
    "http.compressed", WARNING, "a compressed stream",
    """With `Content-Encoding` (gzip, br, ...) the compressor holds events until its block
    fills unless the server flushes it after each one, and every proxy on the way must pass
    the encoding through without buffering, so events arrive late and in bursts.""",
)

_TYPES = {
    "sse": ("text/event-stream",),
    "ndjson": ("application/x-ndjson", "application/jsonl", "application/ndjson",
               "application/x-jsonlines", "application/json-lines"),
    "json-array": ("application/json",),
    "aws-eventstream": ("application/vnd.amazon.eventstream",),
}


def head_findings(rec: Recording, framing: str, head_line: int, header_lines: dict) -> list[Finding]:
    """The findings about the response head, given the body's framing; ``header_lines``
    maps a lower-case header name to the recording line where it is."""
    response = rec.response
    out: list[Finding] = []
    if response is None:
        return out
    headers: dict[str, str] = {}
    for name, value in response.headers:
        headers.setdefault(name.lower(), value)

    def at(rule_, header: str | None, message: str) -> Finding:
        return rule_.at(0, None, message)._replace(line=header_lines.get(header, head_line))

    if response.status != 200:
        out.append(at(STATUS, None, f"HTTP {response.status} {response.reason}".rstrip()
                      + (": an error response; its body is not checked as a stream" if response.status >= 400 else "")))
    if response.status >= 400:
        return out
    content_type = headers.get("content-type")
    media, _, params = (content_type or "").partition(";")
    media = media.strip().lower()
    if media not in _TYPES.get(framing, ()):
        want = " or ".join(_TYPES.get(framing, ("?",))[:2])
        shown = repr(content_type) if content_type is not None else "no Content-Type"
        out.append(at(CONTENT_TYPE, "content-type", f"{shown} for {_FRAMINGS[framing]} (want {want})"))
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            out.append(at(CHARSET, "content-type", f"charset={value.strip()}: streams are UTF-8"))
    if framing == "sse":
        directives = {d.strip().lower().split("=")[0] for d in headers.get("cache-control", "").split(",")}
        if not directives & {"no-cache", "no-store"}:
            cache = headers.get("cache-control")
            out.append(at(CACHE_CONTROL, "cache-control" if cache else None,
                          f"Cache-Control: {cache}" if cache else "no Cache-Control header"))
    encoding = headers.get("content-encoding", "").strip().lower()
    if encoding and encoding != "identity":
        out.append(at(COMPRESSED, "content-encoding", f"Content-Encoding: {encoding}"))
    out.sort(key=_line)  # in the order of the recording's lines, as the body's findings are
    return out


_line = attrgetter("line")


_FRAMINGS = {"sse": "an event stream", "ndjson": "NDJSON", "json-array": "a streamed JSON array",
             "aws-eventstream": "an AWS event stream"}


def recording_lines(lines: list[bytes]) -> tuple[list[int], int, dict[str, int]]:
    """Line numbers in a recording: of each body chunk, of the status line, and of each
    response header (lower-case name -> line)."""
    chunks: list[int] = []
    head = 0
    headers: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if line[:1].isdigit():
            chunks.append(number)
        elif line.startswith(b"< "):
            if not head:
                head = number
            else:
                headers.setdefault(line[2:].split(b":", 1)[0].strip().lower().decode("utf-8", "replace"), number)
    return chunks, head, headers
