"""A small event-stream server that follows the WHATWG spec's server side, on 127.0.0.1.

Written from the spec, not from sse-tool's code, so that ``fetch --reconnect`` is tested
against a server that knows nothing of it. The stream is a list of blocks, each given with
the id it sets (None: none); a request with ``Last-Event-ID: X`` gets the blocks after the
first block that set X (an unknown id gets 400, and 204 when none follows: the spec's way
to stop a client), without it the whole stream. What each
connection does is decided by ``plan(n, last_event_id)`` (n: 1 for the first request),
which returns a dict:

  cut=N        send N bytes of the body, then close without ending it (a cut)
  close=K      send K blocks, then end the body cleanly
  status=S     answer S (204: no body; others: a short text body)
  content_type the Content-Type (default text/event-stream)
  prefix=B     bytes sent before the blocks (a ``retry:`` line, a BOM)
  chunk=N      write the body N bytes at a time (default: one write per block)

Every request is kept in ``requests`` as (path, headers with lower-case names).
"""

from __future__ import annotations

import socket
import threading
from http.server import ThreadingHTTPServer

from .http_server import QuietHandler


class SpecServer:
    def __init__(self, blocks: list[tuple[str | None, bytes]], plan=None) -> None:
        self.blocks = blocks
        self.plan = plan or (lambda n, last_id: {})
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/events"
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def body(self) -> bytes:
        """The whole stream, as a client that is never cut reads it."""
        return b"".join(block for _, block in self.blocks)

    def after(self, last_id: str | None) -> list[bytes] | None:
        return blocks_after(self.blocks, last_id)

    def last_event_ids(self) -> list[str | None]:
        return [headers.get("last-event-id") for _, headers in self.requests]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(QuietHandler):
    def do_GET(self) -> None:
        app: SpecServer = self.server.app
        headers = {k.lower(): v for k, v in self.headers.items()}
        with app._lock:
            app.requests.append((self.path, headers))
            n = len(app.requests)
        last_id = headers.get("last-event-id")
        plan = app.plan(n, last_id)
        self.close_connection = True
        status = plan.get("status", 200)
        blocks = app.after(last_id)
        body = b""
        if blocks is None:
            status, body = 400, b"unknown Last-Event-ID"
        elif last_id is not None and not blocks and "status" not in plan:
            status = 204  # nothing after that event: the client is told to stop
        if status != 200:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "0" if status == 204 else str(len(body)))
            self.end_headers()
            if status != 204:
                self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", plan.get("content_type", "text/event-stream"))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        prefix = plan.get("prefix", b"")
        if "close" in plan:
            blocks = blocks[:plan["close"]]
        data = prefix + b"".join(blocks)
        cut = plan.get("cut")
        if cut is not None:
            data = data[:cut]
        size = plan.get("chunk")
        pieces = [data[i:i + size] for i in range(0, len(data), size)] if size else \
            [prefix] + blocks if cut is None else [data]
        try:
            for piece in pieces:
                if piece:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
            if cut is None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def blocks_after(blocks: list[tuple[str | None, bytes]], last_id: str | None) -> list[bytes] | None:
    """The blocks after the first block that set ``last_id`` (all of them without one);
    None for an id no block set."""
    if last_id is None:
        return [block for _, block in blocks]
    for i, (block_id, _) in enumerate(blocks):
        if block_id == last_id:
            return [block for _, block in blocks[i + 1:]]
    return None


def blocks_with_ids(body: bytes, every: int = 1) -> list[tuple[str | None, bytes]]:
    """A stream (LF or CRLF line ends) cut into blocks, the first and each ``every``-th after it
    given ``id: N`` (N counting blocks from 1), as a server that numbers its events does; a
    block with an id of its own keeps it."""
    blank = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
    nl = blank[:len(blank) // 2]
    out = []
    for n, block in enumerate(body.split(blank)[:-1], 1):
        own = [line[3:].removeprefix(b" ") for line in block.split(nl) if line.startswith(b"id:")]
        if own:  # a stream that numbers its events itself (samples/openai-chat-resumable.sse)
            out.append((own[-1].decode(), block + blank))
        elif (n - 1) % every == 0:
            out.append((str(n), b"id: %d%s%s%s" % (n, nl, block, blank)))
        else:
            out.append((None, block + blank))
    return out
