"""AWS event-stream bytes (``application/vnd.amazon.eventstream``) to events, one per message.

Amazon Bedrock's ``ConverseStream`` and ``InvokeModelWithResponseStream`` answer in this
binary framing, not SSE. Each message is::

    total length (u32) | headers length (u32) | prelude CRC32 (u32)
    headers | payload | message CRC32 (u32)

all big-endian; the prelude CRC covers the two lengths, the message CRC everything before
it. A header is a name (u8 length, UTF-8), a type byte and a typed value (booleans,
integers, byte arrays, strings, timestamps, UUIDs). CRCs are CRC32 as zlib computes it.

Theory of operation. ``EventStreamParser.feed(chunk)`` returns the messages that the chunk
completes, each as an ``EventMessage``: it reads like an ``SseEvent`` (``event``, ``data``,
``offset``, ``end``) so the stages after the framer need nothing new, and carries the
headers too. ``event`` is the ``:event-type`` header of an event message; an exception
message is named ``exception:`` + its ``:exception-type`` and an error message
``error:`` + its ``:error-code``, so a failure is visible in the name, as SSE's
``event: error`` is. ``data`` is the payload read as UTF-8 (Bedrock's payloads are JSON).

Cost is linear whatever the chunking. Bytes of an unfinished message are kept as a list of
pieces with their count, and joined once, when the count reaches what the current step
needs (the 12 bytes of a prelude, then the whole message): one byte at a time, a message
is joined twice. A chunk holding many messages is read in place through offsets, and only
its unfinished tail is kept. Memory is bounded by the largest message: a prelude is
checked as soon as its 12 bytes are there, so a length past ``max_event_size`` is refused
(``EventTooLarge``) before its bytes are waited for, let alone stored.

A stream repeats a few header sections (Bedrock's differ only in ``:event-type``): each
section is parsed once and its headers shared by the messages that carry it, so a
message's ``headers`` must be read, not changed.

A bad prelude CRC, bad lengths, a bad message CRC or malformed headers are ``BadInput``
with the message's offset, raised after the messages completed before it are handed out
(as the other framers do). Input ending inside a message is truncation: ``close()``
reports it, and that message, which never arrived whole, is not emitted. Bytes at the end
that cannot begin a prelude (a line end, a colon, lengths that do not fit) are no cut
message but bad input, named.

In-band markers (``marker.py``) cross this framing too: an earlier stage writes them as
text lines between messages (a retry's note before the body) or after the bytes of a
message it cut (a reset, the exit marker), and they are reported as ``SseComment``s.
Between messages, a line end or a colon is never a prelude's first byte (that message
would be over 160 MiB), so line ends and marker lines are read there. Inside a message
nothing can tell text from binary, so the message's CRC decides: a message that fails
its check (or a prelude that does) with a marker line in its bytes was cut by that
marker, which is read from there; a marker that cut the last message is found at the
end of input.
"""

from __future__ import annotations

import struct
from binascii import b2a_base64
from typing import NamedTuple
from zlib import crc32

from .errors import BadInput, EventTooLarge
from .marker import LINE_STARTS, from_line, is_marker_line
from .sse import DEFAULT_MAX_EVENT_SIZE, FrameEnd, SseComment

PRELUDE = 12  # total length, headers length, prelude CRC
MIN_MESSAGE = PRELUDE + 4  # no headers, no payload: the prelude and the message CRC

#: what may start the text of an in-band line between messages (see the docstring)
_LINE_BYTES = b"\r\n:"
#: a marker line's start after the line end that precedes it, inside bytes of a message
_CUTS = tuple(end + start for end in (b"\n", b"\r") for start in LINE_STARTS)

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
#: fixed-size header value types: type byte -> (struct, size)
_FIXED = {2: struct.Struct(">b"), 3: struct.Struct(">h"), 4: struct.Struct(">i"),
          5: struct.Struct(">q"), 8: struct.Struct(">q")}


class EventMessage(NamedTuple):
    """One message. The first six fields read as ``SseEvent``'s do (``id``/``retry`` are
    always None: the framing has neither), ``headers`` holds every header as JSON values."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None
    #: byte offset of the message in the input, and just past its message CRC
    offset: int = 0
    end: int = 0
    headers: dict | None = None


def looks_like_prelude(head: bytes) -> bool:
    """Whether ``head`` (at least 12 bytes) starts with an event-stream prelude: its CRC
    matches and its lengths fit together. Text never passes: it would need a CRC match."""
    total, headers, crc = _PRELUDE.unpack_from(head)
    return crc32(head[:8]) == crc and total >= MIN_MESSAGE and headers <= total - MIN_MESSAGE


def could_be_prelude(head: bytes) -> bool:
    """Whether ``head`` (shorter than 12 bytes, starting with a control byte) could be the
    start of a prelude cut short: the lengths it holds so far fit together."""
    if len(head) >= 4 and int.from_bytes(head[:4], "big") < MIN_MESSAGE:
        return False
    if len(head) >= 8 and int.from_bytes(head[4:8], "big") > int.from_bytes(head[:4], "big") - MIN_MESSAGE:
        return False
    return bool(head)


def event_name(headers: dict) -> str:
    """The event's name from its headers (see the module's docstring)."""
    kind = headers.get(":message-type", "event")
    if kind == "exception":
        return f"exception:{headers.get(':exception-type', '')}"
    if kind == "error":
        return f"error:{headers.get(':error-code', '')}"
    name = headers.get(":event-type")
    return name if isinstance(name, str) and name else "message"


#: the names ``event_name`` gives failure messages
FAILURES = ("exception:", "error:")


def failure_payload(message, payload):
    """What a failure message (``exception`` or ``error``) says, as AWS's SDKs read it,
    when its payload (``payload``: parsed, or the text) is not a JSON object: an error
    message has its text in the ``:error-message`` header and no payload, and an
    exception's payload may be plain text, its message. Anything else is ``payload``."""
    headers = getattr(message, "headers", None)
    if not headers or type(payload) is dict or not message.event.startswith(FAILURES):
        return payload
    text = headers.get(":error-message")
    if not isinstance(text, str) or not text:
        text = payload if isinstance(payload, str) else ""
    return {"message": text.strip()}


def parse_headers(raw: bytes, offset: int = 0) -> dict:
    """A message's header section as ``{name: value}``; ``BadInput`` at ``offset`` if malformed.

    Byte arrays become base64 text, timestamps integers (milliseconds since the epoch) and
    UUIDs their usual text form, so every value is JSON.
    """
    headers: dict = {}
    i, n = 0, len(raw)
    try:
        while i < n:
            size = raw[i]
            name = raw[i + 1 : i + 1 + size].decode("utf-8")
            i += 1 + size
            kind = raw[i]
            i += 1
            if kind <= 1:
                value = kind == 0
            elif kind in _FIXED:
                fixed = _FIXED[kind]
                value = fixed.unpack_from(raw, i)[0]
                i += fixed.size
            elif kind in (6, 7):
                length = _U16.unpack_from(raw, i)[0]
                chunk = raw[i + 2 : i + 2 + length]
                if len(chunk) < length:
                    raise IndexError
                value = chunk.decode("utf-8") if kind == 7 else b2a_base64(chunk, newline=False).decode()
                i += 2 + length
            elif kind == 9:
                if i + 16 > n:
                    raise IndexError
                import uuid  # rare: not worth its import time at start-up

                value = str(uuid.UUID(bytes=bytes(raw[i : i + 16])))
                i += 16
            else:
                raise BadInput(f"unknown header value type {kind} in header {name!r}", offset)
            if i > n:
                raise IndexError
            if not name:
                raise BadInput("an event-stream header has an empty name", offset)
            if name in headers:
                raise BadInput(f"header {name!r} appears twice in one message", offset)
            headers[name] = value
    except (IndexError, struct.error):
        raise BadInput("malformed event-stream headers (a header runs past its section)", offset) from None
    except UnicodeDecodeError:
        raise BadInput("an event-stream header name or string is not UTF-8", offset) from None
    return headers


class EventStreamParser:
    """Incremental AWS event-stream framer: ``feed(bytes) -> list[EventMessage | SseComment]``,
    ``close()``."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self._pending: list[bytes] = []  # the unfinished message, as pieces
        self._have = 0  # their bytes
        self._need = PRELUDE  # bytes the next step needs: a prelude, then the whole message
        self._pos = 0  # input offset where the pending bytes start
        self._error: BadInput | None = None
        self._marked = False  # a marker line was the last thing read: line ends may follow
        #: raw header section -> (headers, event name): a stream repeats a few
        self._sections: dict[bytes, tuple[dict, str]] = {}

    def feed(self, chunk: bytes) -> list[EventMessage | SseComment]:
        if self._error is not None:
            raise self._error
        if not chunk:
            return []
        if self._have + len(chunk) < self._need:  # most small chunks: keep the piece
            self._pending.append(chunk)
            self._have += len(chunk)
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending.clear()
        out: list = []
        self._read(chunk, out, final=False)
        return out

    def close(self) -> FrameEnd:
        """End of input: whether it stopped inside a message (which is not emitted)."""
        if self._error is not None:
            raise self._error
        out: list = []
        while self._have:  # what is left: a line arriving, or a message cut (by a marker?)
            buf = b"".join(self._pending)
            self._pending.clear()
            self._have = 0
            self._read(buf, out, final=True)
            if self._error is not None:
                raise self._error
            if not self._have:
                break
            buf = b"".join(self._pending)  # a message still unfinished: did a marker cut it?
            cut = marker_after(buf, 1, len(buf))
            if cut is None:
                break
            self._pending[:] = [buf[cut:]]
            self._have -= cut
            self._pos += cut
        if not self._have:
            return FrameEnd(None, self._pos, tuple(out))
        if self._need == PRELUDE:
            tail = b"".join(self._pending)
            if tail[:1] in _LINE_BYTES or not could_be_prelude(tail):
                # Not a prelude cut short (see the docstring): what follows the last message
                # is something else, which a reader must not take for a cut, nor skip.
                raise BadInput(f"{tail!r} follows the last message: not an event-stream message", self._pos)
            why = f"input ended inside a message prelude ({self._have} of its {PRELUDE} bytes)"
        else:
            why = f"input ended inside a message ({self._have} of its {self._need} bytes)"
        return FrameEnd(why, self._pos, tuple(out))

    # -- internals ----------------------------------------------------------------------

    def _read(self, buf: bytes, out: list, final: bool) -> None:
        try:
            i = self._messages(buf, out, final)
        except BadInput as exc:
            # Messages before the fault are good data: hand them out, fail on the next call.
            self._error = exc
            self._have = 0
            self._pending.clear()
            if out:
                return
            raise
        if i < len(buf):
            self._pending.append(buf[i:])
        self._have = len(buf) - i

    def _messages(self, buf: bytes, out: list, final: bool) -> int:
        """Read the messages (and in-band lines) ``buf`` completes into ``out``; return
        where the rest starts."""
        view = memoryview(buf)
        i, n, pos = 0, len(buf), self._pos
        try:
            while i < n:
                if buf[i] in _LINE_BYTES:  # between messages: in-band lines (see the docstring)
                    j = self._lines(buf, i, pos, out, final)
                    if j is None:  # a line that may be a marker is still arriving
                        held = n - i  # (read again on each chunk while short, else doubling)
                        self._need = held + 1 if held < 4096 else 2 * held
                        return i
                    if j > i:
                        pos += j - i
                        i = j
                        continue
                if n - i < PRELUDE:
                    break
                total, header_size, crc = _PRELUDE.unpack_from(buf, i)
                fault = None
                if crc32(view[i : i + 8]) != crc:
                    fault = BadInput(
                        f"not an AWS event stream: prelude CRC mismatch (0x{crc:08x} sent, "
                        f"0x{crc32(view[i : i + 8]):08x} computed)", pos,
                    )
                elif total < MIN_MESSAGE or header_size > total - MIN_MESSAGE:
                    fault = BadInput(
                        f"invalid event-stream message: {header_size} bytes of headers "
                        f"in a message of {total}", pos,
                    )
                elif total > self.max_event_size:  # refused before its bytes are awaited
                    fault = EventTooLarge(self.max_event_size, pos)
                elif n - i < total:
                    self._need = total
                    return i
                else:
                    end = i + total - 4
                    sent = _U32.unpack_from(buf, end)[0]
                    if crc32(view[i:end]) != sent:
                        fault = BadInput(
                            f"event-stream message CRC mismatch (0x{sent:08x} sent, "
                            f"0x{crc32(view[i:end]):08x} computed)", pos,
                        )
                if fault is not None:
                    # A marker that cut this message: drop its bytes and read from there.
                    reach = i + (total if total >= PRELUDE and crc32(view[i : i + 8]) == crc else PRELUDE)
                    cut = marker_after(buf, i + 1, min(n, reach + 12))
                    if cut is None:
                        if not final and n < reach + 12 and marker_may_start(buf, i + 1):
                            self._need = n - i + 1
                            return i
                        raise fault
                    pos += cut - i
                    i = cut
                    continue
                body = i + PRELUDE + header_size
                raw = buf[i + PRELUDE : body]
                known = self._sections.get(raw)
                if known is None:
                    headers = parse_headers(raw, pos)
                    known = (headers, event_name(headers))
                    if len(self._sections) < 256:  # bounded: a hostile stream may vary every one
                        self._sections[raw] = known
                out.append(EventMessage(
                    known[1], str(buf[body:end], "utf-8", "replace"), None, None,
                    pos, pos + total, known[0],
                ))
                self._marked = False
                i += total
                pos += total
            self._need = PRELUDE
            return i
        finally:
            self._pos = pos

    def _lines(self, buf: bytes, i: int, pos: int, out: list, final: bool) -> int | None:
        """Read the line ends and marker lines at ``buf[i:]`` (input offset ``pos``), between
        messages; return where they stop (``i`` when none are there), None to wait for
        more bytes. Line ends count only around a marker: else the prelude check refuses them."""
        n, at, start = len(buf), i, i
        while i < n:
            byte = buf[i]
            if byte in b"\r\n":
                i += 1
                if self._marked:  # the blank line after a marker
                    at = i
                continue
            if byte != 58:  # ":"
                break
            stop = buf.find(b"\n", i)
            line = buf[i:stop].rstrip(b"\r") if stop >= 0 else buf[i:]
            if stop < 0 and not final:
                if len(line) <= self.max_event_size and any(m.startswith(line[: len(m)]) for m in LINE_STARTS):
                    return None if at == start else at
                break
            marker = from_line(line) if is_marker_line(line) else None
            if marker is None:
                break
            out.append(SseComment(marker.comment(), pos + i - start))
            self._marked = True
            i = at = n if stop < 0 else stop + 1
        return at


def marker_may_start(buf: bytes, start: int) -> bool:
    """Whether the last bytes of ``buf`` (from ``start``) may be a line end and the
    beginning of a marker line, the rest of which has not arrived."""
    for at in range(max(start, len(buf) - 12), len(buf)):
        if buf[at] in b"\r\n" and any(m.startswith(buf[at + 1 :]) for m in LINE_STARTS):
            return True
    return False


def marker_after(buf: bytes, start: int, stop: int) -> int | None:
    """Where the first line end at ``start`` or after, followed by the start of a marker
    line, is in ``buf[:stop]``, or None. (Past ``start``: reading resumes there, and a
    line that only looks like a marker is refused by the prelude check after it.)"""
    found = [at for cut in _CUTS if (at := buf.find(cut, start, stop)) >= 0]
    return min(found) if found else None
