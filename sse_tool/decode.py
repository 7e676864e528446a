"""Bytes to text: incremental UTF-8 decoding that survives any chunking.

``Utf8Decoder.feed(bytes) -> str`` holds back an incomplete multi-byte sequence at the end
of a chunk until the next chunk completes it, so a character split by the network (an
accent, a 4-byte emoji) is never lost or mangled. Invalid bytes become U+FFFD following
the WHATWG "decode" rules (maximal subparts, never an exception). One leading BOM is
stripped, and only at the very start of the stream, even when it arrives byte by byte.

The SSE parser (``sse.py``) splits lines on bytes first and decodes each complete field
with ``decode_field``. That is equivalent to running this decoder over the whole stream:
CR and LF are ASCII, never part of a multi-byte sequence, so a line boundary always ends
any pending sequence. Working on bytes is what lets the parser report exact byte offsets.
"""

from __future__ import annotations

import codecs

BOM = codecs.BOM_UTF8


def decode_field(raw: bytes) -> str:
    """Decode one complete field value (never raises)."""
    return raw.decode("utf-8", "replace")


class Utf8Decoder:
    """Incremental UTF-8 decoder: ``feed`` chunks, then ``close`` once."""

    __slots__ = ("_decoder", "_at_start", "_head")

    def __init__(self) -> None:
        # "utf-8-sig" would strip a BOM too, but it swallows a BOM split from a
        # following invalid byte differently; keeping the BOM logic here makes it exact.
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._at_start = True
        self._head = b""

    def feed(self, chunk: bytes) -> str:
        if self._at_start:
            chunk = self._head + chunk
            if len(chunk) < len(BOM) and BOM.startswith(chunk):
                self._head = chunk  # could still become a BOM: wait for more
                return ""
            self._at_start = False
            self._head = b""
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
        return self._decoder.decode(chunk)

    def close(self) -> tuple[str, bool]:
        """Return the remaining text and whether the stream ended inside a character."""
        head, self._head = self._head, b""
        self._at_start = False
        incomplete = bool(head) or bool(self._decoder.getstate()[0])
        return self._decoder.decode(head, final=True), incomplete
