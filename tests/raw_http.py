"""Raw HTTP on loopback, for tests that attack: a server that keeps exactly what reaches it
and answers with scripted bytes, and a client that sends bytes no HTTP library would.

``Catcher(host)`` listens on ``host`` (``127.0.0.2`` is loopback too, and stands for "a host
the attacker chose"), reads each request (head, then a Content-Length or chunked body,
counted, of which the first 64 KiB are kept) and answers with ``answer(request)``: a list
of byte pieces written with a short pause between them, so that each is its own read on
the other side. ``send`` writes one raw request and reads the reply until the server
closes the connection.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass, field

KEEP = 64 * 1024
SSE_ANSWER = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 10\r\n"
              b"Connection: close\r\n\r\n", b"data: ok\n\n"]


@dataclass
class Seen:
    head: bytes
    body_size: int = 0
    body: bytes = b""

    @property
    def request_line(self) -> bytes:
        return self.head.split(b"\r\n", 1)[0]

    @property
    def target(self) -> bytes:
        return self.request_line.split(b" ")[1]

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            n, _, v = line.partition(b":")
            if n.strip().lower() == name.lower().encode():
                return v.strip().decode("latin-1")
        return None


@dataclass
class Reply:
    status: int
    head: bytes
    body: bytes = field(repr=False, default=b"")
    #: the body as it came, chunked framing included (a cut one has no last chunk)
    raw_body: bytes = field(repr=False, default=b"")

    def header(self, name: str) -> str | None:
        return Seen(self.head).header(name)


class Catcher:
    def __init__(self, host: str = "127.0.0.1", answer=lambda seen: SSE_ANSWER) -> None:
        self.seen: list[Seen] = []
        self.connections = 0
        self.answer = answer
        self._sock = socket.create_server((host, 0))
        self.host = host
        self.port = self._sock.getsockname()[1]
        self.base = f"http://{host}:{self.port}"
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def touched(self) -> bool:
        """Whether anything at all connected."""
        return self.connections > 0

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        with conn:
            try:
                seen = self._read(conn)
            except (OSError, ValueError):
                return
            with self._lock:
                self.seen.append(seen)
            try:
                for i, piece in enumerate(self.answer(seen)):
                    if i:
                        time.sleep(0.05)
                    conn.sendall(piece)
            except OSError:
                pass

    def _read(self, conn: socket.socket) -> Seen:
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                raise ValueError("closed before the head ended")
            data += more
        head, _, rest = data.partition(b"\r\n\r\n")
        seen = Seen(head)
        length = seen.header("content-length")
        if length is not None:
            self._body(conn, seen, rest, int(length))
        elif (seen.header("transfer-encoding") or "").lower() == "chunked":
            self._chunked(conn, seen, rest)
        return seen

    def _take(self, seen: Seen, data: bytes) -> None:
        seen.body_size += len(data)
        if len(seen.body) < KEEP:
            seen.body += data[:KEEP - len(seen.body)]

    def _body(self, conn, seen: Seen, rest: bytes, length: int) -> None:
        self._take(seen, rest[:length])
        while seen.body_size < length:
            more = conn.recv(min(1 << 20, length - seen.body_size))
            if not more:
                raise ValueError("closed inside the body")
            self._take(seen, more)

    def _chunked(self, conn, seen: Seen, rest: bytes) -> None:
        buffer = rest
        while True:
            while b"\r\n" not in buffer:
                buffer += _recv(conn)
            size_line, _, buffer = buffer.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                return
            while len(buffer) < size + 2:
                buffer += _recv(conn)
            self._take(seen, buffer[:size])
            buffer = buffer[size + 2:]

    def close(self) -> None:
        self._sock.close()


def _recv(conn: socket.socket) -> bytes:
    more = conn.recv(1 << 20)
    if not more:
        raise ValueError("closed inside the body")
    return more


def send(port: int, data: bytes, host: str = "127.0.0.1", timeout: float = 10) -> Reply:
    """One raw request; the reply read until the server closes (send ``Connection: close``)
    or ``timeout`` seconds pass without a byte."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        try:
            while more := s.recv(65536):
                got += more
        except (ConnectionResetError, TimeoutError):
            pass
    head, _, body = got.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    if m is None:
        raise AssertionError(f"no HTTP answer: {got[:200]!r}")
    reply = Reply(int(m.group(1)), head, body, body)
    if (reply.header("transfer-encoding") or "").lower() == "chunked":
        reply.body = _dechunk(body)
    return reply


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2:]
    return out


def request(target: str | bytes, *, method: str = "GET", host: str = "127.0.0.1",
            headers: dict[str, str] | None = None, body: bytes | None = None) -> bytes:
    """The bytes of one request, exactly as given (target included)."""
    if isinstance(target, str):
        target = target.encode("latin-1")
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"Host: " + host.encode("latin-1"),
             b"Connection: close"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}".encode("latin-1"))
    if body is not None and not any(n.lower() == "transfer-encoding" for n in headers or {}):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")
