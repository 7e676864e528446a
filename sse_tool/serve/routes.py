"""The providers' endpoints that ``serve --as`` answers, and what a request to one asks for.

Consumes a request's method, decoded path, query and parsed JSON body; produces an
``Ask``: which dialect of recording can answer it, the model it names, whether it wants a
stream (and in which framing), the error shape its SDK understands, and the path prefix
before the API's own path. Each SDK calls a fixed path under its base URL, with or
without a version segment (``/v1``): both are accepted, after any prefix. A prefix that
names a served stream or folder narrows the choice to it, so an SDK whose base URL is
``http://127.0.0.1:8000/anthropic/text-short`` gets that recording, whatever it sends.

``--route 'METHOD PATH=FILE'`` is parsed here too. Nothing here does I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

# A Vertex AI model path: /v1/projects/P/locations/L/publishers/google/models/M:verb
_VERTEX = r"(?:/projects/[^/]+/locations/[^/]+/publishers/google)?"


@dataclass(frozen=True)
class Endpoint:
    name: str
    #: the path as people write it (``[/v1]/messages``)
    shown: str
    pattern: re.Pattern
    #: normalize's provider names of the recordings that answer it
    dialect: str
    #: the error body's shape (``faults.error_body``)
    shape: str
    #: whether a request without a ``stream`` field streams (Ollama's default)
    streams_by_default: bool = False


def _endpoint(name: str, shown: str, pattern: str, dialect: str, shape: str, **kw) -> Endpoint:
    return Endpoint(name, shown, re.compile(rf"(?P<prefix>.*?){pattern}"), dialect, shape, **kw)


#: ``--as`` name -> the endpoints its SDK calls
ENDPOINTS: dict[str, tuple[Endpoint, ...]] = {
    "openai": (
        _endpoint("chat completions", "[/v1]/chat/completions", r"(?:/v1)?/chat/completions",
                  "openai", "openai"),
        _endpoint("responses", "[/v1]/responses", r"(?:/v1)?/responses", "openai-responses", "openai"),
    ),
    "anthropic": (_endpoint("messages", "[/v1]/messages", r"(?:/v1)?/messages", "anthropic", "anthropic"),),
    "gemini": (_endpoint(
        "generateContent", "[/v1beta]/models/MODEL:streamGenerateContent (or :generateContent)",
        rf"(?:/v1beta|/v1alpha|/v1)?{_VERTEX}/models/(?P<model>[^/:]+)"
        r":(?P<verb>streamGenerateContent|generateContent)", "gemini", "gemini"),),
    "ollama": (_endpoint("chat", "/api/chat (or /api/generate)", r"/api/(?P<verb>chat|generate)",
                         "ollama", "ollama", streams_by_default=True),),
    "cohere": (_endpoint("chat", "[/v2]/chat", r"(?:/v2)?/chat", "cohere", "cohere"),),
}
#: the framing each dialect streams in (Gemini's depends on ``alt=sse``)
FRAMING = {"ollama": "ndjson"}


@dataclass(frozen=True)
class Ask:
    """What a request to a provider endpoint asks for."""

    endpoint: Endpoint
    #: the path before the API's own path ("" for none)
    prefix: str
    model: str | None
    #: False for a non-streaming request (``"stream": false``, Gemini's generateContent)
    stream: bool
    #: the framing a streaming answer must have: ``sse``, ``json-array`` or ``ndjson``
    framing: str

    @property
    def dialect(self) -> str:
        return self.endpoint.dialect


def find_endpoint(names: tuple[str, ...], method: str, path: str) -> tuple[Endpoint, re.Match] | None:
    """The first endpoint of the ``--as`` providers that ``path`` reaches."""
    if method != "POST":
        return None
    for name in names:
        for endpoint in ENDPOINTS[name]:
            m = endpoint.pattern.fullmatch(path)
            if m:
                return endpoint, m
    return None


def ask_of(endpoint: Endpoint, m: re.Match, query: dict[str, str], body: dict) -> Ask:
    """The ``Ask`` of a request that reached ``endpoint`` (``m``: the path's match)."""
    groups = m.groupdict()
    model = groups.get("model")
    model = unquote(model) if model else body.get("model")
    verb = groups.get("verb")
    if verb in ("streamGenerateContent", "generateContent"):
        stream = verb == "streamGenerateContent"
        framing = "sse" if query.get("alt") == "sse" else "json-array"
    else:
        wanted = body.get("stream")
        stream = endpoint.streams_by_default if wanted is None else wanted is True
        framing = FRAMING.get(endpoint.dialect, "sse")
    return Ask(endpoint, m["prefix"].rstrip("/"), model if isinstance(model, str) else None,
               stream, framing)


def asks_stream(method: str, path: str, query: dict[str, str], body: dict) -> bool | None:
    """Whether a request to any provider's endpoint asks for a stream; None for another
    path (its answer is served as recorded, whatever it is)."""
    hit = find_endpoint(tuple(ENDPOINTS), method, path)
    return ask_of(*hit, query, body).stream if hit else None


class RouteError(ValueError):
    """A ``--route`` that cannot be read; the text says why."""


def parse_route(text: str) -> tuple[str, str, str]:
    """``'POST /v1/chat/completions=FILE'`` -> (method, path, file); the method may be
    left out (any method)."""
    target, sep, file = text.partition("=")
    parts = target.split()
    if not sep or not file.strip() or len(parts) not in (1, 2):
        raise RouteError(f"expected 'METHOD /PATH=FILE', got {text!r}")
    method, path = (parts if len(parts) == 2 else ("*", parts[0]))
    if not path.startswith("/"):
        raise RouteError(f"the path must start with /, got {path!r}")
    return method.upper(), path.rstrip("/") or "/", file.strip()
