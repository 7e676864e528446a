"""The streams a server replays: recordings and plain stream files, loaded once, by path.

Consumes file and directory names; produces ``Stream`` objects keyed by URL path: a file
named on the command line is served at ``/<name without extension>``, a file found in a
directory at ``/<its path under that directory, without extension>``; a recording is also
served at the path of the request it recorded (``/v1/chat/completions``), when no other
stream has taken it and no other recording shares it. Each ``Stream`` knows its response
head, its schedule at a given speed or rate, and how a replay of it ends. It knows
nothing of HTTP servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import BadInput
from ..framing import sniff
from ..recording import Recording, load_recording
from ..redact import MASK, is_masked, is_secret_header
from ..replay import Step, is_recording, parse_rate, rate_steps, recording_steps
from . import ServeUsage
from .faults import provider_for_host

#: plain files a directory contributes (recordings are recognised by their first line)
STREAM_SUFFIXES = (".sse", ".json", ".jsonl", ".ndjson", ".eventstream")
CONTENT_TYPES = {"sse": "text/event-stream", "json-array": "application/json",
                 "ndjson": "application/x-ndjson", "aws-eventstream": "application/vnd.amazon.eventstream"}
STREAM_HEADERS = [("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
# Recorded headers a replay must not resend: the body is stored decoded and is re-framed
# by the server, which also sets its own date and connection handling.
_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection",
                      "keep-alive", "date", "server"})
#: a recording's outcome -> how its replay ends
_ENDINGS = {"complete": "finish", "http-error": "finish", "timeout": "stall"}


@dataclass
class Stream:
    path: str
    source: str
    recording: Recording | None = None
    data: bytes = b""

    @property
    def kind(self) -> str:
        """``recording``, or the plain file's framing: ``sse``, ``json-array``, ``ndjson``,
        ``aws-eventstream``."""
        if self.recording is not None:
            return "recording"
        return sniff(self.data[:4096], final=True)

    @property
    def is_sse(self) -> bool:
        if self.recording is None:
            return self.kind == "sse"
        return "event-stream" in self.header("content-type")

    @property
    def answered(self) -> bool:
        """False for a recording whose request got no response at all."""
        return self.recording is None or self.recording.response is not None

    @property
    def provider(self) -> str | None:
        if self.recording is None or self.recording.request is None:
            return None
        return provider_for_host(urlsplit(self.recording.request.url).hostname or "")

    @property
    def ending(self) -> str:
        """``finish``, ``cut`` or ``stall``: a recording ends as its exchange did."""
        if self.recording is None:
            return "finish"
        end = self.recording.end
        return _ENDINGS.get(end.outcome, "cut") if end else "cut"

    def header(self, name: str) -> str:
        rec = self.recording
        found = [v for n, v in (rec.response.headers if rec and rec.response else [])
                 if n.lower() == name]
        return found[0] if found else ""

    def head(self) -> tuple[int, list[tuple[str, str]]]:
        """Status and headers, the recorded ones for a recording."""
        if self.recording is None:
            return 200, [("Content-Type", CONTENT_TYPES[self.kind]), *STREAM_HEADERS]
        response = self.recording.response
        headers = [(n, v) for n, v in response.headers
                   if n.lower() not in _DROPPED and v != MASK]
        names = {n.lower() for n, _ in headers}
        headers += [(n, v) for n, v in STREAM_HEADERS if n.lower() not in names]
        return response.status, headers

    def steps(self, speed: float, rate: str) -> list[Step]:
        if self.recording is not None:
            return recording_steps(self.recording, speed)
        return rate_steps(self.data, parse_rate(rate), speed)

    def describe(self) -> str:
        rec = self.recording
        if rec is None:
            return f"{self.kind}, {len(self.data)} bytes"
        status = f"HTTP {rec.response.status}" if rec.response else "no response"
        outcome = rec.end.outcome if rec.end else "no end"
        span = rec.chunks[-1].time if rec.chunks else 0.0
        return f"recording, {status}, {outcome}, {len(rec.chunks)} chunks over {span:.2f}s"


def load_streams(paths: list[str]) -> dict[str, Stream]:
    """Every stream named, by URL path; ``ServeUsage`` for a missing file or a clash."""
    streams: dict[str, Stream] = {}
    for name in paths:
        path = Path(name)
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                rel = file.relative_to(path)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                stream = _load(file, "/" + rel.with_suffix("").as_posix(), only_streams=True)
                if stream is not None:
                    _add(streams, stream)
        elif path.is_file():
            _add(streams, _load(path, "/" + path.stem, only_streams=False))
        else:
            raise ServeUsage(f"{name}: no such file or directory")
    # A recording is also served at its recorded path, unless two recordings share it.
    aliases: dict[str, list[Stream]] = {}
    for stream in streams.values():
        rec = stream.recording
        if rec is not None and rec.request is not None:
            aliases.setdefault(urlsplit(rec.request.url).path or "/", []).append(stream)
    for alias, owners in aliases.items():
        if len(owners) == 1 and alias not in streams and alias != "/":
            streams[alias] = owners[0]
    return streams


def _load(file: Path, route: str, only_streams: bool) -> Stream | None:
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ServeUsage(f"{file}: {exc.strerror}") from None
    if is_recording(data):
        try:
            recording = load_recording(file)
        except BadInput as exc:
            raise BadInput(f"{file}: {exc}") from None
        _check_masked(file, recording)
        return Stream(route, str(file), recording=recording)
    if only_streams and file.suffix.lower() not in STREAM_SUFFIXES:
        return None
    return Stream(route, str(file), data=data)


def _check_masked(file: Path, rec: Recording) -> None:
    """A recording whose credential headers still hold a value is refused: serving it
    would hand the key to anyone who asks (fetch --record never writes one)."""
    for side, head in (("request", rec.request), ("response", rec.response)):
        for name, value in head.headers if head else ():
            if is_secret_header(name) and not is_masked(value):
                raise BadInput(f"{file}: refusing to serve it: its {side} header {name} holds an "
                               "unmasked value (mask it, or record it again with fetch --record)")


def _add(streams: dict[str, Stream], stream: Stream) -> None:
    if stream.path in streams:
        raise ServeUsage(f"{stream.source} and {streams[stream.path].source} would both be "
                         f"served at {stream.path}: rename one")
    streams[stream.path] = stream
