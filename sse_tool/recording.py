"""The ``fetch --record`` format: one HTTP exchange as readable lines, body bytes exact.

A recording is UTF-8 text, one item per ``\\n``-terminated line, read top to bottom::

    sse-tool recording 1
    start 2026-11-30T14:05:11.123456Z
    > POST https://api.anthropic.com/v1/messages
    > content-type: application/json
    > x-api-key: <redacted>
    > "{"model":"claude-x","stream":true}"
    < HTTP/1.1 200 OK
    < content-type: text/event-stream
    0.412031 "event: message_start\\ndata: {"type":"message_start"}\\n\\n"
    0.413377 "event: ping\\ndata: {"type": "ping"}\\n\\n"
    # retry 1/3: connection closed before the body was complete; waiting 0.6s
    1.502000 ": sse-tool reset\\n\\n"
    end 2.250310 complete

Lines:

* ``sse-tool recording 1``: first line, the format and its version.
* ``# ...``: a comment (fetch notes retries here); readers skip it. Blank lines are skipped.
* ``start TIME``: when the request was sent, ISO 8601 in UTC (informational).
* ``> METHOD URL`` opens the request; then ``> name: value`` per request header, and
  ``> "BYTES"`` for the request body when there is one.
* ``< HTTP/x STATUS REASON`` opens the response; then ``< name: value`` per response header.
* ``SECONDS "BYTES"``: one body chunk, exactly as it arrived (one read from the connection),
  ``SECONDS`` after the request was sent (a decimal, microsecond resolution).
* ``end SECONDS OUTCOME [DETAIL]``: how the exchange ended: ``complete``, ``truncated``,
  ``timeout``, ``network``, ``http-error``, ``interrupted`` or ``broken-pipe``, and a
  one-line detail. A recording without ``end`` was cut off (the recorder was killed).

``"BYTES"`` is the byte string between the first and the last double quote of the line
(quotes inside need no escape). Valid UTF-8 is written as is, except: ``\\`` is ``\\\\``;
LF, CR and TAB are ``\\n``, ``\\r``, ``\\t``; every other byte that is a control character,
DEL, a C1 control, U+2028/U+2029 (line breaks to some readers), U+FEFF (an invisible BOM)
or not valid UTF-8 is ``\\xHH`` per byte. Decoding maps ``\\xHH`` to the byte HH and other
text to its UTF-8, so every byte string (a split character included) round-trips exactly.

The body is what fetch received and wrote to stdout: after content decoding (gzip), so a
replaying server must not resend ``content-encoding``, ``content-length`` or
``transfer-encoding``. After a ``--retry-partial`` retry the reset marker and the new
attempt's bytes follow as further chunks, as on stdout; for an HTTP error status the chunks
hold the error body (which fetch does not write to stdout), except when the error answered
a retry or reconnection after a body went out: then a note holds the error's status line and body.

Secrets. The writer hides every secret its redactor learned (the key fetch sent, in a
header, the URL or a Basic credential, and the provider keys in the environment) in
every part of the file: credential headers are ``<redacted>``; any other header name or
value, the reason phrase, notes and the end detail go through the redactor's text
masking; the request body and the body chunks through ``mask.Masker`` (with its generic
patterns), which replaces each form of a secret (raw, URL-encoded, JSON-escaped, base64
of a Basic credential) with ``*`` of the same length, also when it is split across
chunks. To see such a split, a chunk whose unfinished last line could still be one is
written once the next chunk (or the end) arrives, with its own time and length: chunk
boundaries and times stay as they were.
"""

from __future__ import annotations

import codecs
import copy
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import IO, NamedTuple

from .errors import BadInput

MAGIC = "sse-tool recording 1"

#: outcomes an ``end`` line may name
OUTCOMES = ("complete", "truncated", "timeout", "network", "http-error", "interrupted", "broken-pipe")

# Characters that escaping turns into \xHH bytes (see the module docstring), besides the
# surrogates that stand for invalid UTF-8 bytes after decoding with "surrogateescape".
_SHOWN_AS_BYTES = (
    "".join(map(chr, range(0x00, 0x20))) + "\x7f"
    + "".join(map(chr, range(0x80, 0xA0))) + "\u2028\u2029\ufeff"
)
_ESCAPE_TABLE = {ord(c): "".join(f"\\x{b:02x}" for b in c.encode()) for c in _SHOWN_AS_BYTES}
_ESCAPE_TABLE.update({ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
_SURROGATE = re.compile("[\udc80-\udcff]")
_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|(.))")
_SIMPLE = {"\\": b"\\", "n": b"\n", "r": b"\r", "t": b"\t"}
# Our escapes, matched left to right as a reader takes them: text in which a backslash
# is left once they are removed holds another escape, and takes the slow path (which
# rejects it); the rest is read by Python's own decoder (see _escape_decode).
_OURS = re.compile(r"\\(?:[\\nrt]|x[0-9a-fA-F]{2})")
#: a backslash that starts none of our escapes, once escaped backslashes are taken out
_NOT_OURS = re.compile(rb"\\(?![nrt]|x[0-9a-fA-F]{2})")
# For _parse_bytes: after the first line, each line starting with a digit, as (the time
# up to the first space, then '"' and the bytes between the quotes that open and end the
# rest when it is a chunk line as _parse_line reads one, else two empty strings); and
# each line that is not blank and does not start with a digit. Both start with a newline,
# which the regex engine finds fast, where a ^ would be tried at every byte.
_DIGIT_LINE = re.compile(rb'\n([0-9][^ \n]*)(?: (")([^\n]*)"\r*(?=\n|$)|[^\n]*)')
_OTHER_LINE = re.compile(rb"\n([^0-9\n][^\n]*)")


def escape(data: bytes) -> str:
    """Bytes as the readable, reversible text of a ``"BYTES"`` field."""
    text = data.decode("utf-8", "surrogateescape").translate(_ESCAPE_TABLE)
    return _SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


def unescape(text: str) -> bytes:
    """The inverse of ``escape``."""
    if "\\" not in text:
        return text.encode("utf-8")
    if "\\" not in _OURS.sub("", text):
        return _escape_decode(text.encode("utf-8"))
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(text):
        out += text[pos:m.start()].encode("utf-8")
        if m.group(1) is not None:
            out.append(int(m.group(1), 16))
        elif m.group(2) in _SIMPLE:
            out += _SIMPLE[m.group(2)]
        else:
            raise ValueError(f"unknown escape \\{m.group(2)}")
        pos = m.end()
    out += text[pos:].encode("utf-8")
    return bytes(out)


@dataclass
class RecordedRequest:
    method: str
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None


@dataclass
class RecordedResponse:
    http_version: str
    status: int
    reason: str
    headers: list[tuple[str, str]] = field(default_factory=list)


class Chunk(NamedTuple):
    """One body chunk (a named tuple, not a dataclass: a long recording has a great many,
    and a frozen dataclass costs several times more to build)."""

    #: seconds after the request was sent
    time: float
    data: bytes


@dataclass(frozen=True)
class Ending:
    time: float
    outcome: str
    detail: str = ""


@dataclass
class Recording:
    request: RecordedRequest | None = None
    response: RecordedResponse | None = None
    #: the body chunks as two columns, when each arrived (seconds after the request was
    #: sent) and its bytes: a long recording has a great many, and a reader that takes
    #: them in bulk (``inspect``) need not build a tuple for each
    times: list[float] = field(default_factory=list)
    datas: list[bytes] = field(default_factory=list)
    end: Ending | None = None
    start: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def chunks(self) -> list[Chunk]:
        """The body chunks, in order."""
        return list(map(_new_chunk, zip(self.times, self.datas)))

    @property
    def body(self) -> bytes:
        return b"".join(self.datas)


class RecordingWriter:
    """Writes one exchange, flushing each line, so a recording survives a killed process.

    The caller supplies the times (seconds after the request was sent) and the values as
    they went over the wire; this class only redacts and formats them.
    """

    def __init__(self, file: IO[str], redactor=None) -> None:
        from .redact import Redactor

        self._file = file
        self._redact = redactor if redactor is not None else Redactor()
        self._body = None  # a Masker, made once the request's secrets are known
        self._waiting: deque[tuple[float, int]] = deque()  # (time, length) of unwritten chunks
        self._masked = bytearray()  # masked bytes of those chunks, in order
        self._line(MAGIC)

    def _masker(self):
        from .mask import Masker

        if self._body is None:
            self._body = Masker(self._redact.secrets, patterns=True)
        return self._body

    def start(self, when: str) -> None:
        self._line(f"start {when}")

    def request(self, method: str, url: str, headers: Iterable[tuple[str, str]],
                body: bytes | None = None) -> None:
        lines = [f"> {method} {self._redact.url(url)}"]
        lines += self._headers(">", headers)
        if body is not None:
            masker = self._masker()
            lines.append(f'> "{escape(masker.feed(body) + masker.close())}"')
        self._line("\n".join(lines))

    def response(self, http_version: str, status: int, reason: str,
                 headers: Iterable[tuple[str, str]]) -> None:
        lines = [f"< {http_version} {status} {_one_line(self._redact.text(reason))}".rstrip()]
        lines += self._headers("<", headers)
        self._line("\n".join(lines))

    def _headers(self, mark: str, headers: Iterable[tuple[str, str]]) -> list[str]:
        return [f"{mark} {_one_line(n)}: {_one_line(v)}"
                for n, v in self._redact.headers(headers)]

    def chunk(self, time: float, data: bytes) -> None:
        self._waiting.append((time, len(data)))
        self._masked += self._masker().feed(data)
        self._write_chunks()

    def _write_chunks(self, final: bool = False) -> None:
        if final and self._body is not None:
            self._masked += self._body.close()
        while self._waiting and len(self._masked) >= self._waiting[0][1]:
            time, size = self._waiting.popleft()
            self._line(f'{time:.6f} "{escape(bytes(self._masked[:size]))}"')
            del self._masked[:size]

    def note(self, text: str) -> None:
        self._write_chunks(final=True)
        self._line(f"# {_one_line(self._redact.text(text))}")

    def end(self, time: float, outcome: str, detail: str = "") -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        self._write_chunks(final=True)
        self._line(f"end {time:.6f} {outcome} {_one_line(self._redact.text(detail))}".rstrip())

    def _line(self, text: str) -> None:
        self._file.write(text + "\n")
        self._file.flush()


def _one_line(text: str) -> str:
    return " ".join(str(text).splitlines())


def load_recording(source: str | Path | IO[str] | IO[bytes]) -> Recording:
    """Read a recording from a path or an open file; ``BadInput`` names the first bad line."""
    if isinstance(source, (str, Path)):
        data = Path(source).read_bytes()
    else:
        data = source.read()
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return _parse_bytes(data)


def _parse_bytes(data: bytes) -> Recording:
    """``parse_recording(data.split(b"\\n"))``, with the chunk lines read in bulk (see
    ``_read_lines``)."""
    rec = Recording()
    _read_lines(rec, data, 1)
    return rec


def parse_recording(lines: Iterable[bytes | str]) -> Recording:
    """A recording from its lines (bytes or text, with or without their line ends)."""
    rec = Recording()
    _by_lines(rec, lines, 1)
    return rec


class ChunkReader:
    """A recording read as its bytes arrive (sans-I/O): ``feed(bytes)`` returns the body
    chunks of the chunk lines it completed, as two columns (times, datas), and ``close()``
    those of a last line without its line end. The other lines fill ``recording`` (its
    own chunk columns stay empty: the chunks are handed out, not kept, so memory is
    bounded by the longest line, at most ``max_line`` bytes). ``body(bytes)`` gives the
    chunks' bytes joined, for a reader of the stream alone.

    A bad line, as ``load_recording`` names it, is kept in ``error`` (a ``BadInput``) once
    ``feed`` returned the chunks of the lines before it, and raised by the next call;
    ``close`` raises it at once."""

    def __init__(self, max_line: int = 1 << 62) -> None:
        self.recording = Recording()
        self.max_line = max_line
        self.error: BadInput | None = None
        self._parts: list[bytes] = []  # a line not finished yet
        self._waiting = 0  # its length
        self._number = 1  # the recording's line the next block starts with

    def feed(self, data: bytes) -> tuple[list[float], list[bytes]]:
        if self.error is not None:
            raise self.error
        cut = data.rfind(b"\n") + 1
        if not cut:
            self._wait(data)
            return [], []
        block = data[:cut]
        if self._parts:
            block = b"".join([*self._parts, block])
        self._parts, self._waiting = [], 0
        chunks = self._chunks(block)
        self._wait(data[cut:])
        return chunks

    def close(self) -> tuple[list[float], list[bytes]]:
        if self.error is not None:
            raise self.error
        block, self._parts = b"".join(self._parts), []
        chunks = self._chunks(block) if block else ([], [])
        if self.error is not None:  # the last line alone: nothing before it to hand out
            raise self.error
        return chunks

    @staticmethod
    def body(chunks: tuple[list[float], list[bytes]]) -> bytes:
        return b"".join(chunks[1])

    def _wait(self, data: bytes) -> None:
        if data:
            self._parts.append(data)
            self._waiting += len(data)
            if self._waiting > self.max_line:
                self.error = BadInput(f"recording line {self._number} is longer than {self.max_line:,} bytes")
                raise self.error

    def _chunks(self, block: bytes) -> tuple[list[float], list[bytes]]:
        rec = self.recording
        try:
            self._number += _read_lines(rec, block, self._number)
        except BadInput as exc:
            self.error = exc  # raised after the chunks of the lines before it
        chunks = rec.times, rec.datas
        rec.times, rec.datas = [], []
        return chunks


def _read_lines(rec: Recording, block: bytes, number: int) -> int:
    """Read the lines of ``block`` (whole lines; the last may lack its line end) into
    ``rec``, the first being the recording's line ``number``; how many lines were read.

    The chunk lines (nearly every line of a long recording) are read in bulk: regex and
    ``map`` calls over the whole block, all in C, no Python code per line. Anything
    unusual (a line starting with a digit that is not quite a chunk line, an escape not of
    ours, text that is not UTF-8, a bad line of another kind) is read line by line
    instead, which says what is wrong."""
    lines = left = block.count(b"\n") + (not block.endswith(b"\n"))
    if not block.isascii():
        try:
            block.decode("utf-8")
        except UnicodeDecodeError:
            _by_lines(rec, block.split(b"\n"), number)
            return lines
    text = b"\n" + block  # each line, the first included, then starts after a newline
    found = _DIGIT_LINE.findall(text)  # (time, '"' if a chunk line, its quoted bytes)
    start = 0  # where the lines not read yet start, in the block
    if found and rec.request is None:  # the lines before the first chunk first: the request is among them
        start = _DIGIT_LINE.search(text).start()
        if start:
            head = _read_lines(rec, block[:start], number)  # a few lines, no chunk among them
            number, left = number + head, left - head
        if rec.request is None:
            _by_lines(rec, block[start:].split(b"\n"), number)  # which says that a chunk came first
            return lines
    if not all(map(itemgetter(1), found)) or not _only_our_escapes(block):
        _by_lines(rec, block[start:].split(b"\n"), number)
        return lines
    bodies = map(itemgetter(2), found)
    if _ESCAPE_DECODE is not None:
        datas = list(map(itemgetter(0), map(_ESCAPE_DECODE, bodies)))
    else:
        datas = list(map(_escape_decode, bodies))
    try:
        times = list(map(float, map(itemgetter(0), found)))
        if len(found) < left:  # lines of other kinds: read into a copy, kept if all are good
            others = _OTHER_LINE.findall(text, start)
            trial = copy.deepcopy(rec)  # the lines before this block: a header or two, no chunk
            if number == 1:  # the first line is the format's
                if block[:1].isdigit():
                    raise ValueError("a chunk line before the format line")
                _by_lines(trial, others[:1], 1)
                others = others[1:]
            for line in others:
                _parse_line(trial, line.decode("utf-8").rstrip("\r"))
            vars(rec).update(vars(trial))
        elif number == 1:
            raise ValueError("no format line")
    except (ValueError, IndexError, BadInput):
        _by_lines(rec, block[start:].split(b"\n"), number)  # which says what is wrong
        return lines
    rec.times += times
    rec.datas += datas
    return lines


def _by_lines(rec: Recording, lines: Iterable[bytes | str], number: int) -> None:
    """Read ``lines`` into ``rec`` one by one, the first being the recording's line ``number``."""
    for number, raw in enumerate(lines, number):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            if number == 1:
                raise BadInput(f"not an sse-tool recording (line 1 is not {MAGIC!r})") from None
            raise BadInput(f"recording line {number}: not UTF-8 (byte {exc.start}), which a "
                           "recording never holds raw: it writes such bytes as \\xHH") from None
        # Escaped bytes never hold a raw CR or LF, so stripping the line end loses nothing.
        line = line.rstrip("\r\n")
        if number == 1:
            if line.strip() != MAGIC:
                raise BadInput(f"not an sse-tool recording (line 1 is not {MAGIC!r})")
            continue
        try:
            _parse_line(rec, line)
        except (ValueError, IndexError) as exc:
            raise BadInput(f"recording line {number}: {exc}") from None


def _only_our_escapes(data: bytes) -> bool:
    """Whether every backslash in ``data`` is part of one of our escapes as ``_OURS``
    reads them, in two C calls. Escaped backslashes go first (``replace`` pairs them from
    the left, as a reader does), each for a NUL, which no escape takes for its letter or
    digits; then no backslash may be left that does not start ``\\n``, ``\\r``, ``\\t``
    or ``\\x`` and two hex digits."""
    return _NOT_OURS.search(data.replace(b"\\\\", b"\0")) is None


def _escape_decode(data: bytes) -> bytes:
    """Our escapes (only ours: see ``_OURS``) resolved, in C: Python's own decoder
    reads them the same way (each byte a character, escapes resolved, back to bytes)."""
    if _ESCAPE_DECODE is not None:
        return _ESCAPE_DECODE(data)[0]
    return data.decode("unicode_escape").encode("latin-1")


# CPython's bytes-to-bytes decoder, twice as fast as the round trip; undocumented, so
# only used when it is there.
_ESCAPE_DECODE = getattr(codecs, "escape_decode", None)
_new_chunk = partial(tuple.__new__, Chunk)  # a Chunk from a (time, data) pair, in C


def _parse_line(rec: Recording, line: str) -> None:
    if not line.strip():
        return
    if line.startswith("#"):
        rec.notes.append(line[1:].strip())
    elif line.startswith("> "):
        rest = line[2:]
        if rec.request is None:
            method, url = rest.split(" ", 1)
            rec.request = RecordedRequest(method, url)
        elif rest.startswith('"'):
            rec.request.body = _quoted(rest)
        else:
            rec.request.headers.append(_header(rest))
    elif line.startswith("< "):
        rest = line[2:]
        if rec.response is None:
            version, status, *reason = rest.split(" ", 2)
            rec.response = RecordedResponse(version, int(status), reason[0] if reason else "")
        else:
            rec.response.headers.append(_header(rest))
    elif line.startswith("start "):
        rec.start = line[6:].strip()
    elif line.startswith("end "):
        _, time, *rest = line.split(" ", 3)
        outcome = rest[0] if rest else ""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        rec.end = Ending(float(time), outcome, rest[1] if len(rest) > 1 else "")
    elif line[:1].isdigit():
        if rec.request is None:
            raise ValueError("a body chunk before the request line")
        time, rest = line.split(" ", 1)
        rec.times.append(float(time))
        rec.datas.append(_quoted(rest))
    else:
        raise ValueError(f"unrecognised line {line[:40]!r}")


def _quoted(text: str) -> bytes:
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise ValueError("expected bytes in double quotes")
    return unescape(text[1:-1])


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep:
        raise ValueError(f"expected 'name: value', got {text[:40]!r}")
    return name.strip(), value.strip()
