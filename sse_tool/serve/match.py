"""Which recording answers a request, when several could: one rule, in this order.

1. an exact match of the normalised request body (the recorded request's body, with the
   fields that only choose the transport, ``stream`` and ``stream_options``, left out);
   several different recordings of one request are a miss, never a silent pick;
2. else the recordings of the model the request names (in its body, or Gemini's path):
   the recorded request's model, or the model the stream reports (``gpt-4o`` matches a
   stream of ``gpt-4o-2024-08-06``);
3. else the only candidate, whatever was asked.

Among recordings that tie, those in the framing the request wants come first (Gemini's
``alt=sse`` or not). Anything else is a ``Miss``: its message names the nearest
recordings and what differed, for the error the client sees. Before that, ``apart``
keeps a recorded whole answer (``"stream": false``) from a request for a stream.
``exact_only`` (hybrid mode, where a miss goes to the upstream) stops after step 1.
Nothing here does I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

#: request fields that choose how the answer travels, not what it is
TRANSPORT_FIELDS = ("stream", "stream_options")
#: how many of the nearest recordings a miss names
NEAREST = 3


@dataclass(frozen=True)
class Miss:
    message: str


def parse_body(data: bytes) -> dict | None:
    """A request body as a JSON object; {} for no body; None when it is not a JSON object."""
    if not data.strip():
        return {}
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else None


def normalised(body: dict) -> dict:
    return {k: v for k, v in body.items() if k not in TRANSPORT_FIELDS}


# What a provider appends to an alias to name a snapshot: a date (2024-08-06, 20251001),
# a version number (001), or "latest".
_SNAPSHOT = re.compile(r"\d{4}-\d{2}-\d{2}|\d{8}|\d{3}|latest")


def same_model(asked: str, stream) -> bool:
    """Whether the stream is of the model asked for: the same name, or a snapshot of it
    (``gpt-4o`` is answered by ``gpt-4o-2024-08-06``, not by ``gpt-4o-mini``)."""
    asked = asked.removeprefix("models/")
    for model in stream.models:
        model = model.removeprefix("models/")
        if model == asked or (model.startswith(asked + "-")
                              and _SNAPSHOT.fullmatch(model[len(asked) + 1:])):
            return True
    return False


def choose(candidates: list, body: dict, model: str | None = None, framing: str | None = None,
           *, exact_only: bool = False):
    """The stream that answers, or a ``Miss``. ``candidates`` have ``request_json``,
    ``models``, ``framing`` and ``path``."""
    if not candidates:
        return Miss("no recording could answer it")
    wanted = normalised(body)
    ranked = sorted(candidates, key=lambda s: (framing is not None and s.framing != framing, s.path))
    exact = [s for s in ranked if s.request_json is not None and normalised(s.request_json) == wanted]
    if exact and (len(exact) == 1 or _one_stream(exact)):
        return exact[0]
    if exact:
        return Miss(f"{len(exact)} recordings of this exact request: "
                    + ", ".join(s.path for s in exact[:NEAREST])
                    + (f", and {len(exact) - NEAREST} more" if len(exact) > NEAREST else "")
                    + " (choose one with a base path that names it, or --route)")
    if exact_only:
        return Miss("no recording of this exact request" + _nearest(ranked, wanted))
    if model:
        same = [s for s in ranked if same_model(model, s)]
        if same and (len(same) == 1 or _one_stream(same)):
            return same[0]
        if len(same) > 1:
            return Miss(f"{len(same)} recordings have model {model} and none was recorded "
                        f"with this exact request" + _nearest(same, wanted))
    if len(candidates) == 1 or _one_stream(ranked):
        return ranked[0]
    why = f"no recording has model {model}" if model else "the request names no model"
    return Miss(f"{why}, and {len(candidates)} could answer" + _nearest(ranked, wanted))


def apart(candidates: list, body: dict, stream_wanted: bool) -> list:
    """The candidates of the kind a request asks for: a streaming request never gets a
    recorded whole answer (``streamed`` False); a request for a whole answer gets the one
    recorded for exactly it when there is one, else any (a stream is assembled)."""
    if stream_wanted:
        return [s for s in candidates if s.streamed is not False]
    wanted = normalised(body)
    whole = [s for s in candidates if s.streamed is False and s.request_json is not None
             and normalised(s.request_json) == wanted]
    return whole or [s for s in candidates if s.streamed is not False] or candidates


def _one_stream(streams: list) -> bool:
    """Whether the candidates are one stream in several framings (Gemini's ``.sse`` and
    ``.json`` of one answer), the preferred framing first."""
    return len({s.stem for s in streams}) == 1


def _nearest(streams: list, wanted: dict) -> str:
    scored = sorted(streams, key=lambda s: (len(differences(s.request_json, wanted)), s.path))
    lines = [f"{s.path} ({_difference_text(s, wanted)})" for s in scored[:NEAREST]]
    more = f", and {len(streams) - NEAREST} more" if len(streams) > NEAREST else ""
    return "; nearest: " + ", ".join(lines) + more if lines else ""


def differences(recorded: dict | None, wanted: dict) -> list[str]:
    """The top-level fields whose values differ (all of them when nothing was recorded)."""
    if recorded is None:
        return sorted(wanted) or ["body"]
    recorded = normalised(recorded)
    return sorted(k for k in set(recorded) | set(wanted) if recorded.get(k) != wanted.get(k))


def _difference_text(stream, wanted: dict) -> str:
    model = stream.models[0] if stream.models else "no model"
    if stream.request_json is None:
        return f"{model}; no recorded request"
    diff = differences(stream.request_json, wanted)
    return f"{model}; " + ("differs in " + ", ".join(diff[:4]) + ("..." if len(diff) > 4 else "")
                           if diff else "same body")
