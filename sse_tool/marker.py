"""In-band markers: what one stage must tell the later ones, carried in the stream itself.

A marker is an SSE comment line whose text starts with ``sse-tool``, followed by a blank
line (but the exit marker: see ``Marker.line``). Other SSE parsers skip it as a comment;
every sse-tool framer (SSE, JSON array, NDJSON) reports it wherever a line starts, and the
AWS event-stream framer between messages and where one cut a message, so it crosses
every stage of a pipe::

    : sse-tool reset                         a new attempt starts: the draft is void
    : sse-tool exit CODE STAGE: REASON       STAGE failed with exit code CODE, and why
    : sse-tool note STAGE: TEXT              something STAGE wants a person to see

On the wire between ``fetch`` and ``frame`` it is that line; in ``frame``'s records it is
``{"comment": "sse-tool exit 6 fetch: HTTP 429 ..."}``; in channel records ``reset`` is
``{"type": "reset"}``, ``note`` is ``{"type": "note", "text": "fetch: ..."}`` and ``exit``
becomes the ``end`` record (its ``exit`` field holds CODE). ``reset`` and ``exit`` end the
bytes of an attempt, so an SSE event still being built when one arrives is dropped (it
was cut). The text is one line: line ends in a reason are replaced by spaces.
"""

from __future__ import annotations

from typing import NamedTuple

#: every marker's comment text starts with this word
PREFIX = "sse-tool"
#: the marker lines as they start a line on the wire (with and without the space)
LINE_STARTS = (b": sse-tool ", b":sse-tool ")

#: the reason when an input held no byte at all (an earlier stage died without a word)
NO_STREAM = "no stream arrived (empty input)"

RESET = "reset"
EXIT = "exit"
NOTE = "note"


class Marker(NamedTuple):
    kind: str
    #: the exit code, for ``exit``
    code: int | None = None
    #: "STAGE: REASON" for ``exit`` and ``note``
    text: str = ""

    def comment(self) -> str:
        """The comment text (what follows ``: `` on the wire)."""
        if self.kind == EXIT:
            return f"{PREFIX} {EXIT} {self.code} {self.text}"
        return f"{PREFIX} {self.kind} {self.text}".rstrip()

    def line(self) -> bytes:
        """The marker as bytes on the wire: a comment line, then a blank line, but for the
        exit marker, the last line a failed stage writes: a blank line after it would end
        the event it cut, which any other SSE parser would then dispatch half made."""
        return b": " + self.comment().encode("utf-8", "replace") + (b"\n" if self.kind == EXIT else b"\n\n")


#: the reset marker on the wire
RESET_LINE = Marker(RESET).line()


def reset_after(last_byte: bytes) -> bytes:
    """The reset marker to write after a byte already written: a line end first, when the
    bytes before it stopped mid-line (a marker counts only where a line starts)."""
    return (b"" if last_byte in b"\r\n" else b"\n") + RESET_LINE


def _one_line(text: str) -> str:
    # one line, and valid UTF-8 (a file name may hold undecodable bytes as surrogates)
    return " ".join(str(text).splitlines()).encode("utf-8", "replace").decode("utf-8")


def exit_marker(code: int, stage: str, reason: str) -> Marker:
    return Marker(EXIT, int(code), f"{stage}: {_one_line(reason)}")


def note_marker(stage: str, text: str) -> Marker:
    return Marker(NOTE, None, f"{stage}: {_one_line(text)}")


def parse(text: str) -> Marker | None:
    """The marker a comment's text holds, or None if it is an ordinary comment."""
    if not text.startswith(PREFIX):
        return None
    kind, _, rest = text[len(PREFIX):].strip().partition(" ")
    if kind == RESET and not rest.strip():
        return Marker(RESET)
    if kind == NOTE:
        return Marker(NOTE, None, rest.strip())
    if kind == EXIT:
        code, _, reason = rest.partition(" ")
        if code.isascii() and code.isdigit() and len(code) <= 3 and 0 < int(code) < 256:
            return Marker(EXIT, int(code), reason.strip())
    return None


def is_marker_line(line: bytes) -> bool:
    """Whether a line (without its line end) is a marker: a cheap test on bytes."""
    return line.startswith(LINE_STARTS) or line in (b": sse-tool reset", b":sse-tool reset")


def from_line(line: bytes) -> Marker | None:
    """The marker a line holds (without its line end), or None."""
    if line[:1] != b":":
        return None
    text = line[2:] if line[1:2] == b" " else line[1:]
    return parse(text.decode("utf-8", "replace"))
