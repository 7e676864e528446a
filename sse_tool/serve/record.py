"""Record mode: each exchange the relay makes, written to a folder as a recording.

Consumes what the relay sees of one exchange (the request it sends upstream, body
included; the response head; each body chunk as it arrives, decoded; how it ended) and
writes it through ``recording.RecordingWriter`` with the server's ``Redactor``, which
knows the relay's key: the key, in every form, never reaches the folder (credential
headers are ``<redacted>``, every other header, the reason phrase, the request body and
every chunk are masked, also across chunk boundaries). Times are seconds after the
request was sent, from the injected clock, so a replay keeps the timing.

A recording is written to a hidden temporary file (``.NAME.partial``, which ``serve``
never loads) and renamed when the exchange ends, so a replay never sees half of one. Its
name is the request path and a hash of the method, the normalised body and whether it
asks for a stream (``v1-chat-completions-3f2a9c1b7e04.rec``): recording the same request
again replaces it, and requests that differ are kept apart. An exchange that got no
response, or whose client left before the end, is not kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import orjson

from ..recording import RecordingWriter
from ..redact import Redactor
from .match import normalised, parse_body
from .routes import asks_stream

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def recording_name(method: str, url: str, body: bytes) -> str:
    """``<path slug>-<hash of the method, the normalised body and what the slug does not
    say>.rec``. The slug spells a plain path (``/v1/chat/completions``) exactly; the query
    and any other path (Gemini's ``models/gemini-2.5-flash:streamGenerateContent``, where
    ``?alt=sse`` asks for another framing; a path cut at 80 characters) go into the hash
    too, so that two requests that differ there are two recordings. ``url`` is redacted:
    the relay's key, in a query, goes into no hash."""
    parts = urlsplit(url)
    path = parts.path.strip("/")
    slug = _UNSAFE.sub("-", path).strip("-.")[:80] or "root"
    parsed = parse_body(body)
    canonical = orjson.dumps(normalised(parsed), option=orjson.OPT_SORT_KEYS) if parsed else body
    said = not parts.query and len(path) <= 80 and _PLAIN.fullmatch(path) is not None
    rest = b"" if said else f" {parts.path}?{parts.query}".encode()
    # A request for the whole answer and one for a stream are two recordings (the body
    # less ``stream`` is the same): neither may replace the other.
    if asks_stream(method, parts.path or "/", dict(parse_qsl(parts.query)), parsed or {}) is False:
        rest += b" whole"
    digest = hashlib.sha256(method.encode() + b" " + canonical + rest).hexdigest()[:12]
    return f"{slug}-{digest}.rec"


#: a path the slug spells exactly ("/" as "-", nothing else changed)
_PLAIN = re.compile(r"[A-Za-z0-9._/]*")


class Recorder:
    def __init__(self, folder: Path, redactor: Redactor, *,
                 saved: Callable[[Path], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = folder
        self._redactor = redactor
        self.saved = saved
        self._clock = clock

    def take(self, method: str, url: str, headers: list[tuple[str, str]]) -> Take:
        """One exchange, its request about to be sent."""
        return Take(self, method, url, headers, self._clock())


class Take:
    def __init__(self, recorder: Recorder, method: str, url: str,
                 headers: list[tuple[str, str]], start: float) -> None:
        self._recorder = recorder
        self._method, self._url, self._headers = method, url, headers
        self._start = start
        self._when = datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
        self._body = bytearray()
        self._file = None
        self._writer: RecordingWriter | None = None
        self._status = 0
        self.path: Path | None = None
        #: why this exchange is not being recorded ("" while it is)
        self.failed = ""

    def request_chunk(self, data: bytes) -> None:
        self._body += data

    def response(self, http_version: str, status: int, reason: str,
                 headers: list[tuple[str, str]]) -> None:
        folder = self._recorder.folder
        body = bytes(self._body)
        self.path = folder / recording_name(self._method, self._recorder._redactor.url(self._url), body)
        self._partial = folder / f".{self.path.name}.{os.getpid()}.{id(self)}.partial"
        try:
            self._file = open(self._partial, "w", encoding="utf-8", newline="\n")
        except OSError as exc:  # the relay goes on; the log says why nothing was kept
            self.failed = f"not recorded: {self._partial.parent}: {exc.strerror}"
            return
        self._writer = RecordingWriter(self._file, self._recorder._redactor)
        self._writer.start(self._when)
        self._writer.request(self._method, self._url, self._headers, body or None)
        self._writer.response(http_version, status, reason, headers)
        self._status = status

    def chunk(self, data: bytes) -> None:
        if self._writer is not None and data:
            self._writer.chunk(self._elapsed(), data)

    def end(self, outcome: str | None = None, detail: str = "") -> Path | None:
        """Closes the recording and puts it in place; its path (None if none was begun)."""
        if self._writer is None:
            return None
        if outcome is None:
            outcome, detail = ("http-error", f"HTTP {self._status}") if self._status >= 400 \
                else ("complete", "")
        self._writer.end(self._elapsed(), outcome, detail)
        self._file.close()
        os.replace(self._partial, self.path)
        self._writer = None
        if self._recorder.saved is not None:
            self._recorder.saved(self.path)
        return self.path

    def discard(self) -> None:
        if self._writer is None:
            return
        self._file.close()
        self._writer = None
        try:
            os.unlink(self._partial)
        except OSError:
            pass

    def _elapsed(self) -> float:
        return max(0.0, self._recorder._clock() - self._start)
