"""A real TLS server on 127.0.0.1, in a thread, speaking HTTP/2 or HTTP/1.1 as ALPN decides.

The certificates are made in memory for the test run (``trustme``): a CA, which the client
is told to trust through SSL_CERT_FILE or SSL_CERT_DIR, and a server certificate issued by
it. ``alpn`` is what the server offers: ``("h2", "http/1.1")`` for an HTTP/2 server,
``("http/1.1",)`` for one that a client asking for HTTP/2 must fall back from.

Each path is one behaviour, the same over both protocols; the body is the one
``tests/http_server.py`` sends, so tests compare it with ``events(n)``:
  /sse?n=3&delay=0.01       n events, one write (one DATA frame) each, then the end
  /cut?after=N&mode=close   N bytes of events(20), then the connection is closed without
                            finishing the body (no TLS close_notify, no END_STREAM);
                            mode=reset sends an HTTP/2 RST_STREAM instead, mode=goaway
                            a GOAWAY (both with the error code INTERNAL_ERROR)
  /drip?key=K               an event every 10 ms until the client goes away
  /stall?key=K              one event, then silence until the client goes away
``disconnected[K]`` is set when the client of the request with ``key=K`` goes away, so a
test can prove the upstream was closed; ``protocols`` lists what ALPN chose, connection
by connection.

Why not ``tests/http_server.py`` behind TLS: its handler peeks at the socket with
MSG_PEEK, which SSL sockets refuse, and it frames HTTP/1.1 only. Here HTTP/2 is framed
with the ``h2`` package, so what the client meets is a real HTTP/2 peer; HTTP/1.1 is
written by hand, as in the plain server, so a cut is exactly where the test puts it.
"""

from __future__ import annotations

import hashlib
import select
import socket
import ssl
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from .http_server import Events, event, events

#: how long a connection waits for its client at most (a bound for a hung test)
PATIENCE = 30


class Data(bytes):
    """Body bytes to write."""


class Wait(float):
    """Seconds of silence; ``WAIT_FOREVER`` waits until the client leaves."""


WAIT_FOREVER = Wait(PATIENCE)


class Cut(str):
    """End the response without finishing the body: ``close`` or ``reset``."""


class _Gone(Exception):
    """The client went away."""


def script(path: str, q: dict[str, str]):
    """What the response body does, as ``Data``, ``Wait`` and ``Cut`` steps."""
    if path == "/sse":
        for i in range(int(q.get("n", 3))):
            if i:
                yield Wait(float(q.get("delay", 0.01)))
            yield Data(event(i))
    elif path == "/cut":
        yield Data(events(20)[: int(q.get("after", 100))])
        yield Cut(q.get("mode", "close"))
    elif path == "/drip":
        i = 0
        while True:
            yield Data(event(i))
            yield Wait(0.01)
            i += 1
    elif path == "/stall":
        yield Data(event(0))
        yield WAIT_FOREVER
    else:
        raise KeyError(path)


def make_ca():
    import trustme

    return trustme.CA()


class TLSServer:
    def __init__(self, ca, alpn=("h2", "http/1.1"), identities=("127.0.0.1", "localhost"),
                 **cert_options) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert(*identities, **cert_options).configure_cert(self.ctx)
        self.ctx.set_alpn_protocols(list(alpn))
        self.disconnected = Events()
        self.protocols: list[str | None] = []
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.base = f"https://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.stopping.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        raw.settimeout(PATIENCE)
        try:
            conn = self.ctx.wrap_socket(raw, server_side=True)
        except OSError:  # the client refused the certificate, as some tests want
            raw.close()
            return
        protocol = conn.selected_alpn_protocol()
        self.protocols.append(protocol)
        serve = _Http2 if protocol == "h2" else _Http1
        with conn:
            try:
                serve(self, conn).run()
            except (_Gone, OSError):
                pass


class _Http1:
    def __init__(self, server: TLSServer, conn: ssl.SSLSocket) -> None:
        self.server, self.conn = server, conn

    def run(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = self.conn.recv(65536)
            if not data:
                return
            head += data
        target = head.split(b"\r\n", 1)[0].split()[1].decode()
        parts = urlsplit(target)
        q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        key = q.get("key", "default")
        # A cut is a short Content-Length body (h11 then names the bytes missing); the rest
        # is chunked.
        sized = parts.path == "/cut"
        length = f"Content-Length: {len(events(20))}" if sized else "Transfer-Encoding: chunked"
        try:
            self.conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n%s\r\n"
                              b"Connection: close\r\n\r\n" % length.encode())
            for step in script(parts.path, q):
                if isinstance(step, Data):
                    self.conn.sendall(step if sized else b"%x\r\n%s\r\n" % (len(step), step))
                elif isinstance(step, Wait):
                    self._wait(step)
                elif isinstance(step, Cut):
                    _cut(self.conn)
                    return
            self.conn.sendall(b"0\r\n\r\n")
        except (_Gone, OSError):
            self.server.disconnected[key].set()

    def _wait(self, seconds: float) -> None:
        # After the request the client sends nothing more: anything readable is its leaving.
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.conn], [], [], left)
            if readable and not self.conn.recv(1):
                raise _Gone


class _Http2:
    def __init__(self, server: TLSServer, conn: ssl.SSLSocket) -> None:
        import h2.config
        import h2.connection

        self.server, self.conn = server, conn
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        self.stream_id: int | None = None
        self.path = ""
        self.gone = False

    def run(self) -> None:
        self.h2.initiate_connection()
        self._flush()
        while self.stream_id is None:
            self._receive(PATIENCE)
        parts = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        key = q.get("key", "default")
        sid = self.stream_id
        try:
            self.h2.send_headers(sid, [(":status", "200"), ("content-type", "text/event-stream")])
            self._flush()
            for step in script(parts.path, q):
                if isinstance(step, Data):
                    self._send(sid, step)
                elif isinstance(step, Wait):
                    self._wait(step)
                elif isinstance(step, Cut):
                    import h2.errors

                    if step == "reset":
                        self.h2.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
                    elif step == "goaway":
                        self.h2.close_connection(h2.errors.ErrorCodes.INTERNAL_ERROR,
                                                 last_stream_id=sid)
                    else:
                        _cut(self.conn)
                        return
                    self._flush()
                    self._linger()
                    return
            self.h2.end_stream(sid)
            self._flush()
            self._linger()
        except (_Gone, OSError):
            self.server.disconnected[key].set()

    def _send(self, sid: int, data: bytes) -> None:
        while self.h2.local_flow_control_window(sid) < len(data):
            self._receive(PATIENCE)
        self.h2.send_data(sid, data)
        self._flush()

    def _wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._receive(left)

    def _linger(self) -> None:
        # Closing at once could reset frames the client has not read yet: wait for it to go.
        # What it sends meanwhile needs no answer (and h2 refuses frames after a GOAWAY).
        while self.conn.recv(65536):
            pass
        raise _Gone

    def _receive(self, seconds: float) -> None:
        """Read and answer what the client sends within ``seconds``; _Gone if it left."""
        import h2.events

        if not self.conn.pending():
            readable, _, _ = select.select([self.conn], [], [], seconds)
            if not readable:
                return
        data = self.conn.recv(65536)
        if not data:
            raise _Gone
        for ev in self.h2.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived) and self.stream_id is None:
                self.stream_id = ev.stream_id
                self.path = dict(ev.headers)[b":path"].decode()
            elif isinstance(ev, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                self._flush()
                raise _Gone
        self._flush()

    def _flush(self) -> None:
        out = self.h2.data_to_send()
        if out:
            self.conn.sendall(out)


def _cut(conn: ssl.SSLSocket) -> None:
    # SSLSocket.shutdown drops the TLS layer first: the peer sees the TCP connection end
    # with no close_notify, as when a server or proxy dies mid-response.
    conn.shutdown(socket.SHUT_RDWR)


def write_ca_dir(ca, directory: Path) -> Path:
    """``directory`` laid out as OpenSSL's SSL_CERT_DIR lookup wants: the CA certificate
    under its subject-name hash (what ``openssl rehash`` would name it), without openssl."""
    from cryptography import x509

    pem = ca.cert_pem.bytes()
    name = x509.load_pem_x509_certificate(pem).subject
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{subject_hash(name):08x}.0"
    path.write_bytes(pem)
    return path


def subject_hash(name) -> int:
    """OpenSSL's X509_NAME_hash: SHA-1 of the name's canonical DER (each value a UTF8String,
    trimmed, inner spaces collapsed, ASCII lower-cased; the outer SEQUENCE left out), whose
    first four bytes are read as a little-endian number."""
    canon = b""
    for rdn in name.rdns:
        atvs = []
        for attr in rdn:
            value = " ".join(attr.value.split()).lower().encode()  # values here are ASCII
            atvs.append(_der(0x30, _der(0x06, _oid(attr.oid.dotted_string)) + _der(0x0C, value)))
        canon += _der(0x31, b"".join(sorted(atvs)))
    return int.from_bytes(hashlib.sha1(canon).digest()[:4], "little")


def _der(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def _oid(dotted: str) -> bytes:
    first, second, *rest = (int(p) for p in dotted.split("."))
    out = bytearray([first * 40 + second])
    for part in rest:
        chunk = [part & 0x7F]
        part >>= 7
        while part:
            chunk.append(0x80 | (part & 0x7F))
            part >>= 7
        out += bytes(reversed(chunk))
    return bytes(out)
