"""The ASGI app that serves recordings and stream files, with faults on demand.

Consumes ASGI requests; for each, it parses the faults (server defaults overridden by
query parameters, ``faults.parse_faults``), finds the stream by path, and performs the
actions ``faults.shape`` gives: the head at once, then each write after its wait, then
either the end of the body or a cut (the app returns without ending the body, so the
server closes the connection and the client sees an incomplete chunked body). A client
that goes away ends the response at once. ``/`` lists the streams.

It does not parse options, bind sockets or log: the CLI and ``gate.Gate`` do.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from urllib.parse import parse_qsl

from .asgi import (MAX_REQUEST_SIZE, ClientGone, Departure, RequestBody, TooLarge, encode_headers,
                   json_error, respond, too_large)
from .faults import End, FaultError, FaultPlan, Wait, Write, error_answer, parse_faults, shape
from .gate import NOTE
from .streams import Stream

#: what uvicorn logs when an app returns mid-body; here that is always a deliberate cut
CUT_LOG_MESSAGE = "ASGI callable returned without completing response."


class QuietCuts(logging.Filter):
    """Drops uvicorn's error lines for a response cut on purpose, and for the open streams
    (a stall never ends by itself) that Ctrl-C closes after the grace period."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return message != CUT_LOG_MESSAGE and "timeout graceful shutdown exceeded" not in message


class StreamApp:
    def __init__(self, streams: dict[str, Stream], *, base: FaultPlan = FaultPlan(),
                 speed: float = 1.0, rate: str = "20ev", max_request_size: int = MAX_REQUEST_SIZE) -> None:
        self.streams = streams
        self._limit = max_request_size
        self._base = base
        self._speed = speed
        self._rate = rate
        self._requests: Counter[tuple[str, bytes]] = Counter()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        notes: list[str] = scope.get(NOTE, [])
        body = RequestBody(scope, receive, self._limit)
        try:
            if body.declared_too_large:
                raise TooLarge()
            await body.read()  # not used: a recording answers whatever was asked
        except TooLarge:
            notes.append("request body over the limit")
            await respond(send, *too_large(self._limit))
            return
        except ClientGone:
            notes.append("client left")
            return
        query = scope.get("query_string", b"")
        try:
            plan = parse_faults(parse_qsl(query.decode("latin-1"), keep_blank_values=True),
                                self._base, strict=False)
        except FaultError as exc:
            await respond(send, 400, [("Content-Type", "application/json")],
                          json_error(str(exc), "invalid_request_error"))
            return
        path = scope["path"].rstrip("/") or "/"
        if plan.times is not None:
            self._requests[path, query] += 1
            if self._requests[path, query] > plan.times:
                plan = plan.clean()
        if plan.describe():
            notes.append(plan.describe())
        stream = self.streams.get(path)
        gone = Departure(receive)
        try:
            if plan.status is not None:
                if plan.first_byte_delay and await gone.within(plan.first_byte_delay):
                    notes.append("client left")
                    return
                await respond(send, *error_answer(plan, stream.provider if stream else None))
            elif stream is None and path == "/":
                await respond(send, 200, [("Content-Type", "text/plain; charset=utf-8")],
                              self.listing().encode())
            elif stream is None:
                await respond(send, 404, [("Content-Type", "application/json")], json_error(
                    f"no stream at {path}; GET / lists them", "not_found_error"))
            elif not stream.answered:
                await respond(send, 502, [("Content-Type", "application/json")], json_error(
                    "the recorded request got no response", "network_error"))
            else:
                await self._play(stream, plan, send, gone, notes)
        finally:
            gone.stop()

    async def _play(self, stream: Stream, plan: FaultPlan, send, gone: Departure,
                    notes: list[str]) -> None:
        status, headers = stream.head()
        speed = self._speed if plan.speed is None else plan.speed
        steps = stream.steps(speed, plan.rate or self._rate)
        await send({"type": "http.response.start", "status": status,
                    "headers": encode_headers(headers)})
        for action in shape(steps, plan, stream.ending, comments=stream.is_sse):
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

    def listing(self) -> str:
        lines = [f"sse-tool serve: {len(self.streams)} streams"]
        width = max((len(p) for p in self.streams), default=0)
        for path, stream in sorted(self.streams.items()):
            alias = "" if stream.path == path else f"  (same as {stream.path})"
            lines.append(f"{path.ljust(width)}  {stream.describe()}  {stream.source}{alias}")
        lines += ["", "Faults, per request as query parameters (or --fault for all):",
                  "  ?cut_after_bytes=N  ?cut_after_events=N  ?stall=1  ?chunk=N",
                  "  ?first_byte_delay=2s  ?chunk_delay=50ms  ?keepalive=1s",
                  "  ?status=429&retry_after=1&message=M  ?body=TEXT  ?provider=anthropic",
                  "  ?times=N (first N requests only)  ?speed=0  ?rate=20ev|4kB"]
        return "\n".join(lines) + "\n"
