"""The streams a server replays: recordings and plain stream files, loaded once, by path.

Consumes file and directory names; produces a ``Catalogue`` of ``Stream`` objects. A file
named on the command line is served at ``/<name>`` and ``/<name without extension>``, a
file found in a directory at its path under that directory, with and without the
extension; two files that differ only in their extension (``x.sse`` and ``x.json``) share
the shorter path, and a request there is matched to one (``match``). A recording is also
a candidate for the path of the request it recorded (``/v1/chat/completions``), with
every other recording of that path. Each ``Stream`` knows its response head, its
schedule at a given speed or rate, how a replay of it ends, and what it holds (its
``summary``: dialect, model, text), read once when first asked. It knows nothing of HTTP
servers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import BadInput
from ..framing import sniff
from ..model import Status
from ..recording import Recording, load_recording
from ..redact import MASK, is_masked, is_secret_header
from ..replay import Step, is_recording, parse_rate, rate_steps, recording_steps
from ..sse import SseEvent, SseParser
from . import ServeUsage
from .faults import provider_for_host
from .match import parse_body
from .summary import Summary, summarize

#: plain files a directory contributes (recordings are recognised by their first line)
STREAM_SUFFIXES = (".sse", ".json", ".jsonl", ".ndjson", ".eventstream")
CONTENT_TYPES = {"sse": "text/event-stream", "json-array": "application/json",
                 "ndjson": "application/x-ndjson", "aws-eventstream": "application/vnd.amazon.eventstream"}
STREAM_HEADERS = [("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
# Recorded headers a replay must not resend: the body is stored decoded and is re-framed
# by the server, which also sets its own date and connection handling.
_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection",
                      "keep-alive", "date", "server"})
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: a recording's outcome -> how its replay ends
_ENDINGS = {"complete": "finish", "http-error": "finish", "timeout": "stall"}


@dataclass(eq=False)
class Stream:
    #: where it is served: its path without the extension (shared with a same-named file)
    path: str
    source: str
    recording: Recording | None = None
    data: bytes = b""
    #: its path with the extension (``/x.sse``), its own
    name: str = ""

    @property
    def stem(self) -> str:
        return self.path

    @property
    def body(self) -> bytes:
        return self.recording.body if self.recording is not None else self.data

    @cached_property
    def summary(self) -> Summary:
        """What it holds, without the payloads (``summarize`` again for those)."""
        return summarize(self.body, payloads=False)

    @property
    def framing(self) -> str:
        """How the body is framed: ``sse``, ``json-array`` or ``ndjson``."""
        return self.summary.framing if self.recording is not None else self.kind

    @cached_property
    def request_json(self) -> dict | None:
        """The recorded request's body as a JSON object, when there is one."""
        rec = self.recording
        if rec is None or rec.request is None or rec.request.body is None:
            return None
        return parse_body(rec.request.body)

    @cached_property
    def models(self) -> tuple[str, ...]:
        """The model asked for in the recorded request, then the one the stream reports."""
        found = []
        if self.request_json is not None and isinstance(self.request_json.get("model"), str):
            found.append(self.request_json["model"])
        path = self.recorded_path or ""
        if "/models/" in path:
            found.append(unquote(path.rsplit("/models/", 1)[1].split(":")[0]))
        if self.summary.model:
            found.append(self.summary.model)
        return tuple(dict.fromkeys(found))

    @cached_property
    def streamed(self) -> bool | None:
        """Whether the recorded request asked for a stream: False for a recording of the
        provider's whole JSON answer (``"stream": false``), which answers only requests
        that ask for no stream, as recorded; None when that is not known."""
        from .routes import asks_stream

        rec = self.recording
        if rec is None or rec.request is None:
            return None
        parts = urlsplit(rec.request.url)
        asked = asks_stream(rec.request.method, parts.path or "/", dict(parse_qsl(parts.query)),
                            self.request_json or {})
        if asked is False and (self.is_sse or "ndjson" in self.header("content-type")):
            return None  # a stream came anyway (a body without "stream", sent by fetch)
        return asked

    @property
    def recorded_path(self) -> str | None:
        rec = self.recording
        if rec is None or rec.request is None:
            return None
        return urlsplit(rec.request.url).path or "/"

    @cached_property
    def dialect(self) -> str | None:
        """normalize's name for the provider dialect it answers in (from the recorded
        request's path for an error answer or a whole answer, whose body is no stream)."""
        rec = self.recording
        if rec is not None and rec.response is not None and (
                rec.response.status >= 400 or self.streamed is False):
            from .routes import ENDPOINTS

            path = self.recorded_path or ""
            for endpoints in ENDPOINTS.values():
                for endpoint in endpoints:
                    if endpoint.pattern.fullmatch(path):
                        return endpoint.dialect
        return self.summary.dialect

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
        """The shape of its error answers: the recorded host's provider, else its dialect's."""
        if self.recording is not None and self.recording.request is not None:
            host = provider_for_host(urlsplit(self.recording.request.url).hostname or "")
            if host is not None:
                return host
        return {"openai-responses": "openai"}.get(self.dialect, self.dialect)

    @property
    def ending(self) -> str:
        """``finish``, ``cut`` or ``stall``: a recording ends as its exchange did, a stream
        file as normalize reads it (cut: its provider's end never came)."""
        if self.recording is None:
            # A clean end would pass a cut stream off as finished (an SDK returns the text
            # so far and raises nothing): it is cut again, after the bytes that were there.
            truncated = self.dialect is not None and self.summary.status is Status.TRUNCATED
            return "cut" if truncated else "finish"
        end = self.recording.end
        return _ENDINGS.get(end.outcome, "cut") if end else "cut"

    @cached_property
    def ids(self) -> EventIds:
        """Where a client that last saw each event id resumes (nothing for other framings)."""
        return EventIds.of(self.body if self.is_sse else b"")

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
        # A name that held a secret holds the mask now, which is no header name.
        headers = [(n, v) for n, v in response.headers
                   if n.lower() not in _DROPPED and v != MASK and _TOKEN.fullmatch(n)]
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
        span = rec.times[-1] if rec.times else 0.0
        return f"recording, {status}, {outcome}, {len(rec.times)} chunks over {span:.2f}s"


@dataclass(frozen=True)
class EventIds:
    """The ids a stream's events carry: for each, the offset just past the first block that
    set it, where a client that last saw it (``Last-Event-ID``) resumes."""

    after: dict[str, int]
    #: each event's offset, in order
    events: list[int]

    @classmethod
    def of(cls, body: bytes) -> EventIds:
        parser, events = SseParser(track_ids=True), []
        try:
            events = parser.feed(body)
            parser.close()
        except BadInput:  # an event past the size limit: the ids before it still count
            pass
        after: dict[str, int] = {}
        for change in parser.ids:
            after.setdefault(change.id, change.after)
        return cls(after, [e.offset for e in events if type(e) is SseEvent])

    def events_from(self, offset: int) -> bool:
        """Whether an event starts at or after ``offset``."""
        return bool(self.events) and self.events[-1] >= offset


@dataclass
class Catalogue:
    """Every stream once, and the paths and routes each is a candidate for."""

    streams: list[Stream] = field(default_factory=list)
    #: a path with or without the extension -> the streams served there
    paths: dict[str, list[Stream]] = field(default_factory=dict)
    #: a recorded request's path -> its recordings
    recorded: dict[str, list[Stream]] = field(default_factory=dict)
    #: ``--route``: (method or ``*``, path, stream)
    routes: list[tuple[str, str, Stream]] = field(default_factory=list)

    def add(self, stream: Stream) -> None:
        for other in self.paths.get(stream.name, ()):
            raise ServeUsage(f"{stream.source} and {other.source} would both be served at "
                             f"{stream.name}: rename one")
        self.streams.append(stream)
        self.paths[stream.name] = [stream]
        if stream.path != stream.name:
            self.paths.setdefault(stream.path, []).append(stream)
        if stream.recorded_path not in (None, "/"):
            self.recorded.setdefault(stream.recorded_path, []).append(stream)

    def route(self, method: str, path: str) -> Stream | None:
        for want, at, stream in self.routes:
            if at == path and want in ("*", method):
                return stream
        return None

    def at_recorded(self, path: str) -> list[Stream]:
        """The recordings of requests to ``path``; or, when none, of requests to a path
        that ends with it after a base path (an upstream's ``/openai/v1``)."""
        if path in self.recorded:
            return self.recorded[path]
        if path.count("/") < 2:
            return []
        return [s for at, streams in self.recorded.items() if at.endswith(path) for s in streams]

    def under(self, prefix: str) -> list[Stream] | None:
        """The streams a path prefix names: ``""`` all; a stream's path that one (its
        framings); a folder what is in it; None when it names nothing."""
        if not prefix:
            return list(self.streams)
        if prefix in self.paths:
            return list(self.paths[prefix])
        inside = [s for s in self.streams if s.name.startswith(prefix + "/")]
        return inside or None

    def __len__(self) -> int:
        return len(self.streams)


def load_streams(paths: list[str], routes: list[tuple[str, str, str]] = ()) -> Catalogue:
    """Every stream named, and each ``--route`` (method, path, file); ``ServeUsage`` for a
    missing file or two files at one path."""
    catalogue = Catalogue()
    for name in paths:
        path = Path(name)
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                rel = file.relative_to(path)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                stream = _load(file, "/" + rel.as_posix(), only_streams=True)
                if stream is not None:
                    catalogue.add(stream)
        elif path.is_file():
            catalogue.add(_load(path, "/" + path.name, only_streams=False))
        else:
            raise ServeUsage(f"{name}: no such file or directory")
    for method, at, file in routes:
        found = next((s for s in catalogue.streams if Path(s.source).resolve() == Path(file).resolve()), None)
        if found is None:
            if not Path(file).is_file():
                raise ServeUsage(f"--route {method} {at}: {file}: no such file")
            found = _load(Path(file), "/" + Path(file).name, only_streams=False)
        catalogue.routes.append((method, at, found))
    return catalogue


def _load(file: Path, name: str, only_streams: bool) -> Stream | None:
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ServeUsage(f"{file}: {exc.strerror}") from None
    route = name.rsplit(".", 1)[0] if "." in name.rsplit("/", 1)[1] else name
    if is_recording(data):
        try:
            recording = load_recording(file)
        except BadInput as exc:
            raise BadInput(f"{file}: {exc}") from None
        _check_masked(file, recording)
        return Stream(route, str(file), recording=recording, name=name)
    if only_streams and file.suffix.lower() not in STREAM_SUFFIXES:
        return None
    return Stream(route, str(file), data=data, name=name)


def _check_masked(file: Path, rec: Recording) -> None:
    """A recording whose credential headers still hold a value is refused: serving it
    would hand the key to anyone who asks (fetch --record never writes one)."""
    for side, head in (("request", rec.request), ("response", rec.response)):
        for name, value in head.headers if head else ():
            if is_secret_header(name) and not is_masked(value):
                raise BadInput(f"{file}: refusing to serve it: its {side} header {name} holds an "
                               "unmasked value (mask it, or record it again with fetch --record)")
