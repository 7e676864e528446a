"""A real HTTP server on 127.0.0.1, in a thread, with the behaviours fetch must handle.

Each path is one behaviour; query parameters tune it, and ``key`` names the state a test
watches (a gate to release, a disconnect to observe, a request counter). Responses are
written byte by byte as the test needs them, which is why this is ``http.server`` with
hand-written framing rather than a framework that would buffer or fix them.

Paths:
  /sse?n=3&delay=0.01          n events, chunked, one write each, ``delay`` between
  /length?n=3                  the same body with Content-Length
  /gate?key=K                  one event, then waits for ``gates[K]`` before the second
  /drip?key=K&delay=0.02       events until the client goes away (``disconnected[K]``)
  /stall?key=K                 one event, then silence until the client goes away
  /silent?key=K                reads the request, never answers
  /slow-head?delay=S           waits S seconds before the status line
  /drip-head?delay=0.5         the status line, then one header line every ``delay``, never
                               ending the head (until the client goes away, 600 lines at most)
  /continue?delay=0.1          ``100 Continue`` every ``delay``, never a final status (likewise)
  /error?status=429&retry_after=1&message=M&type=T&body=RAW
                               an error status with a provider-style JSON body
  /flaky?key=K&fail=2&status=503&retry_after=0
                               the first ``fail`` requests get the error, then /sse
  /cut?after=N&mode=length|chunked|reset
                               starts a body, sends N bytes, closes (or resets) the connection
  /partial-then-ok?key=K&then=STATUS
                               first request: part of an event, then a cut; then the full body
                               (or, with ``then``, an error with that status)
  /gzip?n=3&delay=0.01         gzip-encoded events, each flushed so it can be decoded at once
  /redirect?to=PATH&status=302 a redirect to PATH (to=none: without a Location)
  /capture/...                 records the request in ``requests``, answers a short stream
  /echo-key?status=401&form=raw|url&at=N&gate=G&cut=1&encoding=gzip|br&guess=TEXT
                               quotes the credential it received (or TEXT), as some APIs do: an error
                               body, or (status 200) events with the key written in two
                               chunks cut N bytes into it, waiting for ``gates[G]`` between
                               (or, with ``cut``, closing the connection there)
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit


def events(n: int) -> bytes:
    """The body the streaming paths send: n small SSE events."""
    return b"".join(event(i) for i in range(n))


def event(i: int) -> bytes:
    return b'data: {"i": %d, "text": "chunk %d \xf0\x9f\x92\xaa"}\n\n' % (i, i)


@dataclass
class Captured:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes
    time: float

    def header(self, name: str) -> str | None:
        return next((v for n, v in self.headers if n.lower() == name.lower()), None)

    def json(self):
        return json.loads(self.body)


class _Gone(Exception):
    """The client closed the connection."""


class Events(dict):
    """Named ``threading.Event``s, made on first use by whichever thread asks first.

    Not a ``defaultdict``: its ``__missing__`` runs ``threading.Event()``, Python code the
    interpreter may switch threads in, so a test and a handler asking for a new name at the
    same moment could each get an event of its own, and the handler would wait for ever
    on one the test never sets."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def __missing__(self, name: str) -> threading.Event:
        with self._lock:
            return self.setdefault(name, threading.Event())


class LocalServer:
    def __init__(self) -> None:
        self.requests: list[Captured] = []
        self.gates = Events()
        self.disconnected = Events()
        self.counts: Counter[str] = Counter()
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self
        self.port = self._httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def count(self, key: str) -> int:
        with self._lock:
            self.counts[key] += 1
            return self.counts[key]

    def close(self) -> None:
        self.stopping.set()
        for gate in list(self.gates.values()):
            gate.set()
        self._httpd.shutdown()
        self._httpd.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1, no log lines."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass


class _Handler(QuietHandler):
    def do_GET(self) -> None:
        app: LocalServer = self.server.app
        parts = urlsplit(self.path)
        self.q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        app.requests.append(Captured(self.command, self.path, list(self.headers.items()), body,
                                     time.monotonic()))
        self.close_connection = True
        name = parts.path.strip("/").split("/")[0].replace("-", "_") or "sse"
        key = self.q.get("key", "default")
        try:
            getattr(self, "route_" + name, self.route_missing)(app, key)
        except _Gone:
            app.disconnected[key].set()
        except OSError:
            app.disconnected[key].set()

    do_POST = do_PUT = do_DELETE = do_GET

    # -- writing helpers ---------------------------------------------------------------

    def head(self, status: int = 200, headers=(), chunked: bool = True, length: int | None = None):
        self.send_response(status)
        names = {n.lower() for n, _ in headers}
        if "content-type" not in names:
            self.send_header("Content-Type", "text/event-stream")
        for name, value in headers:
            self.send_header(name, value)
        if length is not None:
            self.send_header("Content-Length", str(length))
        elif chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def chunk(self, data: bytes) -> None:
        self.write(b"%x\r\n%s\r\n" % (len(data), data))

    def write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            raise _Gone from None

    def end_chunks(self) -> None:
        self.write(b"0\r\n\r\n")

    def pause(self, seconds: float | None, gate: threading.Event | None = None) -> None:
        """Wait ``seconds`` (None: until the gate opens or the client leaves), noticing a
        client that closes the connection meanwhile."""
        app: LocalServer = self.server.app
        until = None if seconds is None else time.monotonic() + seconds
        while not app.stopping.is_set():
            if gate is not None and gate.is_set():
                return
            left = 0.05 if until is None else min(0.05, until - time.monotonic())
            if left <= 0:
                return
            readable, _, _ = select.select([self.connection], [], [], left)
            if readable:
                try:
                    data = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    raise _Gone from None
                if not data:
                    raise _Gone

    # -- routes ------------------------------------------------------------------------

    def route_missing(self, app, key) -> None:
        self.route_error(app, key, status=404)

    def route_sse(self, app, key) -> None:
        n, delay = int(self.q.get("n", 3)), float(self.q.get("delay", 0.01))
        self.head()
        for i in range(n):
            if i:
                self.pause(delay)
            self.chunk(event(i))
        self.end_chunks()

    def route_length(self, app, key) -> None:
        body = events(int(self.q.get("n", 3)))
        self.head(length=len(body))
        self.write(body)

    def route_gate(self, app, key) -> None:
        self.head()
        self.chunk(event(0))
        self.pause(None, app.gates[key])
        self.chunk(event(1))
        self.end_chunks()

    def route_drip(self, app, key) -> None:
        delay = float(self.q.get("delay", 0.02))
        self.head()
        i = 0
        while not app.stopping.is_set():
            self.chunk(event(i))
            i += 1
            self.pause(delay)

    def route_stall(self, app, key) -> None:
        self.head()
        self.chunk(event(0))
        self.pause(None)

    def route_silent(self, app, key) -> None:
        self.pause(None)

    def route_slow_head(self, app, key) -> None:
        self.pause(float(self.q.get("delay", 1)))
        self.route_sse(app, key)

    def route_drip_head(self, app, key) -> None:
        delay = float(self.q.get("delay", 0.5))
        self.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
        for i in range(600):
            self.pause(delay)
            self.write(b"X-Drip-%d: slowly\r\n" % i)

    def route_continue(self, app, key) -> None:
        delay = float(self.q.get("delay", 0.1))
        for _ in range(600):
            self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.pause(delay)

    def route_error(self, app, key, status: int | None = None) -> None:
        status = status or int(self.q.get("status", 500))
        if "body" in self.q:
            body = self.q["body"].encode()
        else:
            body = json.dumps({"error": {"message": self.q.get("message", "something failed"),
                                         "type": self.q.get("type", "api_error")}}).encode()
        headers = [("Content-Type", "application/json")]
        if "retry_after" in self.q:
            headers.append(("Retry-After", self.q["retry_after"]))
        self.head(status, headers, length=len(body))
        self.write(body)

    def route_flaky(self, app, key) -> None:
        if app.count(key) <= int(self.q.get("fail", 1)):
            self.route_error(app, key, status=int(self.q.get("status", 503)))
        else:
            self.route_sse(app, key)

    def route_cut(self, app, key) -> None:
        body = events(20)
        after = int(self.q.get("after", 100))
        mode = self.q.get("mode", "length")
        if mode == "length":
            self.head(length=len(body))
            self.write(body[:after])
        else:
            self.head()
            self.chunk(body[:after])
        if mode == "reset":
            # SO_LINGER with a zero timeout: close() sends RST instead of FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            self.connection.shutdown(socket.SHUT_WR)
        self.connection.close()

    def route_partial_then_ok(self, app, key) -> None:
        if app.count(key) == 1:
            self.head()
            self.chunk(event(0) + b'data: {"i": 1, "te')  # cut inside a line
            self.connection.close()
        elif "then" in self.q:  # ?then=STATUS: the later requests get that error
            self.route_error(app, key, status=int(self.q["then"]))
        else:
            self.route_sse(app, key)

    def route_gzip(self, app, key) -> None:
        n, delay = int(self.q.get("n", 3)), float(self.q.get("delay", 0.01))
        self.head(headers=[("Content-Encoding", "gzip")])
        z = zlib.compressobj(wbits=31)  # 31: a gzip header and trailer
        for i in range(n):
            if i:
                self.pause(delay)
            self.chunk(z.compress(event(i)) + z.flush(zlib.Z_SYNC_FLUSH))
        self.chunk(z.flush())
        self.end_chunks()

    def route_redirect(self, app, key) -> None:
        self.send_response(int(self.q.get("status", 302)))
        if self.q.get("to") != "none":  # ?to=none: no Location at all
            self.send_header("Location", self.q.get("to", "/sse"))
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def route_echo_key(self, app, key) -> None:
        sent = (self.headers.get("Authorization") or "").removeprefix("Bearer ") or \
            self.headers.get("x-api-key") or self.headers.get("x-goog-api-key") or ""
        sent = self.q.get("guess", sent)  # an attacker's guess, echoed as the key would be
        if self.q.get("form") == "url":
            sent = quote(sent, safe="")
        status = int(self.q.get("status", 401))
        if status != 200:
            message = f"Incorrect API key provided: {sent}. You can find your API key at ..."
            parts = [json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
                     .encode()]
        else:
            quoted = b'data: {"echo": "%s"}\n\n' % sent.encode()
            at = quoted.index(b": \"") + 3 + int(self.q.get("at", 5))
            parts = [event(0), quoted[:at], quoted[at:] + event(1)]
        encoding = self.q.get("encoding")
        if encoding == "gzip":
            z = zlib.compressobj(wbits=31)
            parts = [z.compress(p) + z.flush(zlib.Z_SYNC_FLUSH) for p in parts] + [z.flush()]
        headers = [("Content-Type", "application/json" if status != 200 else "text/event-stream")]
        if encoding:
            headers.append(("Content-Encoding", encoding))
        self.head(status, headers)
        for i, part in enumerate(parts):
            if i == 2 and "gate" in self.q:
                self.pause(None, app.gates[self.q["gate"]])
            if i == 2 and "cut" in self.q:  # inside the key: close without ending the body
                self.connection.shutdown(socket.SHUT_WR)
                return
            self.chunk(part)
        self.end_chunks()

    def route_capture(self, app, key) -> None:
        self.route_sse(app, key)

