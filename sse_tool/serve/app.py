"""The ASGI app that serves recordings and stream files, with faults on demand.

Consumes ASGI requests; for each, it reads the body (under the size limit), parses the
faults (server defaults, then the ``X-Sse-Tool-Fault`` header, then query parameters:
``faults.parse_faults``), and finds what answers:

1. a ``--route`` for the method and path;
2. a stream served at the path (its name, with or without the extension);
3. with ``--as``, a provider endpoint (``routes``): the recordings of its dialect, under
   the path prefix when one names a stream or folder;
4. the recordings of a request to this path (their recorded URL).

When several could answer, ``match.choose`` picks one by the request's JSON body, or
answers a miss in the provider's error shape (422, which no SDK retries), naming the
nearest recordings. A request that asks for no stream (``"stream": false``, Gemini's
``generateContent``) gets the provider's non-streaming answer assembled from the
recording (``assemble``), when the stream's whole time has passed. Then it performs the
actions ``faults.shape`` gives: the head at once, each write after its wait, then the end
of the body or a cut (the app returns without ending the body, so the server closes the
connection and the client sees an incomplete chunked body). A client that goes away ends
the response at once.

A request with ``Last-Event-ID`` for an SSE stream gets the stream from just after the
first block that set that id, as a server that resumes does (the faults count from
there); an id the stream never set gets 400 in the provider's error shape, and a point
past the last event of a stream that finishes gets 204 No Content, which tells an
EventSource client to stop reconnecting. ``/`` lists the streams.

``times=N`` counts requests per test: the ``X-Sse-Tool-Test`` header names the test
(without it, all requests share one count), and ``POST /_sse-tool/reset`` (``?test=ID``
for one test) starts the counts again. In hybrid mode a request no recording matches
exactly goes to ``fallback`` (the recording relay), body and all.

It does not parse options, bind sockets or log: the CLI and ``gate.Gate`` do.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl

from .asgi import (MAX_REQUEST_SIZE, Departure, RequestBody, encode_headers, json_error,
                   last_event_id, read_body, respond)
from .assemble import assemble, can_assemble
from .faults import End, FaultError, FaultPlan, Wait, Write, error_answer, error_body, parse_faults, shape
from .gate import NOTE
from .match import Miss, apart, choose, parse_body
from .quirks import QuirkError, apply_quirks
from .routes import ENDPOINTS, Ask, ask_of, find_endpoint
from .streams import Catalogue, Stream
from .summary import summarize
from ..replay import Step, steps_from

#: what uvicorn logs when an app returns mid-body; here that is always a deliberate cut
CUT_LOG_MESSAGE = "ASGI callable returned without completing response."
#: the path that starts the ``times=N`` counts again
RESET_PATH = "/_sse-tool/reset"
#: the header naming the test a request belongs to, and the one carrying faults
TEST_HEADER = b"x-sse-tool-test"
FAULT_HEADER = b"x-sse-tool-fault"
#: a miss: the request is well formed, but no recording answers it
MISS_STATUS = 422


class QuietCuts(logging.Filter):
    """Drops uvicorn's error lines for a response cut on purpose, and for the open streams
    (a stall never ends by itself) that Ctrl-C closes after the grace period."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return message != CUT_LOG_MESSAGE and "timeout graceful shutdown exceeded" not in message


@dataclass
class Found:
    """What answers a request: a stream, or a miss (with the error shape to give it)."""

    stream: Stream | None = None
    miss: str | None = None
    shape: str | None = None
    #: whether a streaming answer is wanted (False: assemble the provider's JSON answer)
    stream_wanted: bool = True
    #: the miss is the request's fault (a body that is not JSON): 400
    bad_request: bool = False


class StreamApp:
    def __init__(self, streams: Catalogue, *, base: FaultPlan = FaultPlan(),
                 speed: float = 1.0, rate: str = "20ev", max_request_size: int = MAX_REQUEST_SIZE,
                 providers: tuple[str, ...] = (), fallback=None) -> None:
        self.streams = streams
        self._limit = max_request_size
        self._base = base
        self._speed = speed
        self._rate = rate
        self._providers = providers
        #: hybrid mode: the app that answers what no recording matches exactly
        self._fallback = fallback
        self._requests: Counter[tuple] = Counter()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        notes: list[str] = scope.get(NOTE, [])
        data = await read_body(RequestBody(scope, receive, self._limit), send, notes)
        if data is None:
            return
        headers = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), value.decode("latin-1"))
        path = scope["path"].rstrip("/") or "/"
        query = scope.get("query_string", b"").decode("latin-1")
        if path == RESET_PATH:
            await self._reset(scope["method"], dict(parse_qsl(query)), send, notes)
            return
        found = self._find(scope["method"], path, query, data)
        if found is None and self._fallback is not None and path != "/":
            notes.append("no recording: relayed")
            await self._fallback(scope, _replaying(data, receive), send)
            return
        try:
            pairs = [*parse_qsl(headers.get(FAULT_HEADER, ""), keep_blank_values=True),
                     *parse_qsl(query, keep_blank_values=True)]
            plan = parse_faults(pairs, self._base, strict=False)
        except FaultError as exc:
            shape_of = found.shape if found else None
            await respond(send, 400, [("Content-Type", "application/json")],
                          error_body(shape_of or "openai", 400, str(exc)))
            return
        if plan.times is not None:
            key = (headers.get(TEST_HEADER), path, query, headers.get(FAULT_HEADER))
            self._requests[key] += 1
            if self._requests[key] > plan.times:
                plan = plan.clean()
        stream = found.stream if found else None
        if stream is not None:
            whole = found.stream_wanted or stream.streamed is False
            notes.append(f"{'' if whole else 'assembled '}from {stream.name}")
        if plan.describe():
            notes.append(plan.describe())
        gone = Departure(receive)
        try:
            if plan.status is not None:
                if plan.first_byte_delay and await gone.within(plan.first_byte_delay):
                    notes.append("client left")
                    return
                await respond(send, *error_answer(plan, (found.shape if found else None) or (
                    stream.provider if stream else None)))
            elif found is None and path == "/":
                await respond(send, 200, [("Content-Type", "text/plain; charset=utf-8")],
                              self.listing().encode())
            elif found is None:
                await respond(send, 404, [("Content-Type", "application/json")], json_error(
                    f"no stream at {path}; GET / lists them", "not_found_error"))
            elif found.miss is not None:
                notes.append("bad request body" if found.bad_request else "miss")
                status = 400 if found.bad_request else MISS_STATUS
                await respond(send, status, [("Content-Type", "application/json")],
                              error_body(found.shape or "openai", status, found.miss))
            elif not stream.answered:
                await respond(send, 502, [("Content-Type", "application/json")], json_error(
                    "the recorded request got no response", "network_error"))
            else:
                await self._play(stream, plan, send, gone, notes, found, last_event_id(scope))
        finally:
            gone.stop()

    # -- what answers ---------------------------------------------------------------------

    def _find(self, method: str, path: str, query: str, data: bytes) -> Found | None:
        catalogue = self.streams
        routed = catalogue.route(method, path)
        hit = find_endpoint(self._providers, method, path)
        recorded = catalogue.at_recorded(path) if not hit else []
        if routed is not None:
            candidates = [routed]
        elif path in catalogue.paths:
            candidates = catalogue.paths[path]
        elif hit is not None or recorded:
            candidates = None  # chosen by the request, below
        else:
            return None
        # A path or route names its stream; in hybrid mode only a request that some
        # recording answers exactly is replayed from among many.
        exact_only = self._fallback is not None and candidates is None
        # What the request asks: from its endpoint, whichever provider's path it is.
        endpoint_hit = hit or find_endpoint(tuple(ENDPOINTS), method, path)
        body = parse_body(data) if data.strip() else {}
        shape = endpoint_hit[0].shape if endpoint_hit else None
        needs_body = endpoint_hit is not None or candidates is None or len(candidates) > 1
        if body is None:
            if needs_body:
                return Found(miss="the request body is not a JSON object", shape=shape or "openai",
                             bad_request=True)
            body = {}
        ask = ask_of(*endpoint_hit, dict(parse_qsl(query)), body) if endpoint_hit else None
        stream_wanted = ask.stream if ask else body.get("stream") is not False
        if candidates is None:
            candidates, why = self._candidates(hit, ask, recorded)
            if why:  # in hybrid mode, none yet of its dialect: relayed, and recorded
                return None if exact_only else Found(miss=why, shape=shape, stream_wanted=stream_wanted)
            candidates = apart(candidates, body, stream_wanted)
        chosen = choose(candidates, body, ask.model if ask else body.get("model"),
                        ask.framing if ask else None, exact_only=exact_only)
        if isinstance(chosen, Miss):
            if exact_only:
                return None
            asked = f" (model {ask.model})" if ask and ask.model else ""
            return Found(miss=f"sse-tool serve: no recording answers {method} {path}{asked}: "
                              f"{chosen.message}. GET / lists the recordings", shape=shape,
                         stream_wanted=stream_wanted)
        return Found(chosen, shape=shape or chosen.provider, stream_wanted=stream_wanted)

    def _candidates(self, hit, ask: Ask | None, recorded: list[Stream]) -> tuple[list[Stream], str]:
        """The streams that may answer an endpoint or a recorded path, or why none may."""
        if hit is None:
            return recorded, ""
        named = self.streams.under(ask.prefix)
        if named is None:
            return [], (f"sse-tool serve: {ask.prefix} names no stream or folder here (a base "
                        "URL may add one to choose it). GET / lists them")
        fitting = [s for s in named if s.dialect == ask.dialect]
        if not fitting:
            where = f" under {ask.prefix}" if ask.prefix else ""
            found = sorted({s.dialect or "unknown" for s in named})
            return [], (f"sse-tool serve: no {ask.dialect} stream{where} answers "
                        f"{ask.endpoint.name} (found: {', '.join(found) or 'none'})")
        return fitting, ""

    # -- answers ----------------------------------------------------------------------------

    async def _play(self, stream: Stream, plan: FaultPlan, send, gone: Departure,
                    notes: list[str], found: Found, last_id: str = "") -> None:
        speed = self._speed if plan.speed is None else plan.speed
        steps = stream.steps(speed, plan.rate or self._rate)
        status, headers = stream.head()
        ending, comments = stream.ending, stream.is_sse
        # (a recorded whole answer is replayed as it is)
        assembled = not found.stream_wanted and status < 300 and stream.streamed is not False \
            and can_assemble(stream.dialect)
        if assembled:
            if why := _not_for_whole_answers(plan):
                notes.append("fault refused: stream: false")
                await respond(send, 400, [("Content-Type", "application/json")],
                              error_body(found.shape or "openai", 400, why))
                return
            cut = None
            if plan.cut_after_events is not None:  # the answer of the stream cut there
                cut = _cut_after_events(steps, plan.cut_after_events)
                plan = replace(plan, cut_after_events=None)
            status, headers, steps, ending = _assembled(stream, cut or steps, speed, cut=cut is not None)
            comments = False
        elif last_id and comments and status < 300:
            point = stream.ids.after.get(last_id)
            if point is None:
                notes.append("Last-Event-ID not in the stream")
                await respond(send, 400, [("Content-Type", "application/json")], error_body(
                    found.shape or "openai", 400, f"sse-tool serve: {stream.name} has no event "
                    f"with id {last_id!r} to resume after"))
                return
            if not stream.ids.events_from(point) and ending == "finish":
                notes.append(f"resumed after id {last_id}: nothing follows, 204")
                await respond(send, 204, [], b"")
                return
            notes.append(f"resumed after id {last_id}")
            steps = steps_from(steps, point)
        if plan.quirk and not assembled:
            try:
                quirked = apply_quirks(steps, plan.quirk, stream.dialect, stream.framing)
            except QuirkError as exc:
                await respond(send, 400, [("Content-Type", "application/json")],
                              error_body(found.shape or "openai", 400, str(exc)))
                return
            steps, ending = quirked.steps, quirked.ending or ending
            if quirked.chunk and not plan.chunk:
                plan = replace(plan, chunk=quirked.chunk)
        await send({"type": "http.response.start", "status": status,
                    "headers": encode_headers(headers)})
        for action in shape(steps, plan, ending, comments=comments):
            if isinstance(action, Write):
                await send({"type": "http.response.body", "body": action.data, "more_body": True})
                # Let the loop run between writes: a burst of one-byte writes must not
                # starve other connections or hide a client that left.
                await asyncio.sleep(0)
                if gone.happened:
                    notes.append("client left")
                    return
            elif isinstance(action, Wait):
                if await gone.within(action.seconds):
                    notes.append("client left")
                    return
            elif isinstance(action, End):
                if action.cut:
                    notes.append("cut")
                    return  # without ending the body: the server closes the connection
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _reset(self, method: str, query: dict, send, notes: list[str]) -> None:
        if method != "POST":
            await respond(send, 405, [("Content-Type", "application/json"), ("Allow", "POST")],
                          json_error(f"POST {RESET_PATH} (?test=ID for one test)", "invalid_request_error"))
            return
        from ..plural import count

        test = query.get("test")
        gone = [k for k in self._requests if test is None or k[0] == test]
        for key in gone:
            del self._requests[key]
        notes.append(f"reset {count(len(gone), 'count')}" + (f" of test {test}" if test else ""))
        await respond(send, 200, [("Content-Type", "application/json")],
                      json.dumps({"reset": len(gone)}).encode())

    def listing(self) -> str:
        from ..plural import count

        catalogue = self.streams
        lines = [f"sse-tool serve: {count(len(catalogue), 'stream')}"]
        width = max((len(s.path) for s in catalogue.streams), default=0)
        for stream in sorted(catalogue.streams, key=lambda s: (s.path, s.name)):
            what = stream.dialect or "unknown format"
            model = f" {stream.models[0]}" if stream.models else ""
            at = f", also at {stream.recorded_path}" if stream.recorded_path not in (None, "/") else ""
            lines.append(f"{stream.path.ljust(width)}  {stream.describe()}  {stream.source}"
                         f"  ({what}{model}{at})")
        if catalogue.routes:
            lines += ["", "Routes:"] + [f"  {m} {p} -> {s.source}" for m, p, s in catalogue.routes]
        if self._providers:
            lines += ["", "Provider endpoints (--as), after any base path; a base path that "
                          "names a stream or folder chooses it:"]
            lines += [f"  POST {e.shown}" for name in self._providers for e in ENDPOINTS[name]]
        lines += ["", "Faults, per request as query parameters, the X-Sse-Tool-Fault header "
                      "(or --fault for all):",
                  "  ?cut_after_bytes=N  ?cut_after_events=N  ?close_after_events=N",
                  "  ?stall=1  ?chunk=N",
                  "  ?first_byte_delay=2s  ?chunk_delay=50ms  ?keepalive=1s",
                  "  ?status=429&retry_after=1&message=M  ?body=TEXT  ?provider=anthropic",
                  "  ?quirk=NAME,...  (split-utf8, comments, error-after-200, ...; see the man page)",
                  "  ?times=N (first N requests only; per X-Sse-Tool-Test header;",
                  f"            POST {RESET_PATH} starts again)  ?speed=0  ?rate=20ev|4kB"]
        return "\n".join(lines) + "\n"


def _not_for_whole_answers(plan: FaultPlan) -> str:
    """Why a fault cannot shape a whole (``stream: false``) answer, which has no events
    and no stream for a wire quirk to change; "" when it can."""
    asked = [f"quirk={','.join(plan.quirk)}"] if plan.quirk else []
    if plan.close_after_events is not None:
        asked.insert(0, f"close_after_events={plan.close_after_events}")
    if not asked:
        return ""
    return (f"sse-tool serve: {' and '.join(asked)} shape{'' if len(asked) > 1 else 's'} a "
            "stream, and a request without one (stream: false) gets the whole answer at once: "
            "ask for a stream, or use cut_after_events, cut_after_bytes or status")


def _cut_after_events(steps: list[Step], n: int) -> list[Step] | None:
    """The steps of the stream up to the end of its event ``n``; None when it has fewer."""
    out, waited = [], 0.0
    for action in shape(steps, FaultPlan(cut_after_events=n), comments=False):
        if isinstance(action, Wait):
            waited += action.seconds or 0.0
        elif isinstance(action, Write):
            out.append(Step(waited, action.data))
            waited = 0.0
        elif isinstance(action, End):
            return out if action.cut else None
    return None


def _assembled(stream: Stream, steps: list[Step], speed: float, *, cut: bool = False):
    """Head, steps and ending of the non-streaming answer: the provider's JSON when the
    whole stream has arrived (its recorded end, or its last write), or a cut. With
    ``cut``, ``steps`` are the stream cut short (``cut_after_events``), which has no whole
    answer but an error it reported before."""
    answer = assemble(summarize(b"".join(s.data for s in steps) if cut else stream.body))
    rec = stream.recording
    total = sum(s.delay for s in steps)
    if rec is not None and rec.end is not None and speed and not cut:
        total = max(total, rec.end.time / speed)
    keep = [(n, v) for n, v in stream.head()[1] if n.lower().startswith(("x-", "request-id",
                                                                          "anthropic-", "openai-"))]
    if answer is None:  # a cut stream has no whole answer: cut, as the network did
        return 200, [("Content-Type", "application/json"), *keep], [Step(total, b"")], "cut"
    headers = [("Content-Type", answer.content_type), *keep]
    return answer.status, headers, [Step(total, answer.body)], "finish"


def _replaying(data: bytes, receive):
    """A ``receive`` that gives the body already read, then what the client sends next."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        return await receive()

    return replay
