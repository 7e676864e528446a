"""The deadlines of one request, held by a thread that shuts its socket down.

Deadlines. httpx's connect timeout bounds the connection. After that, a per-read timeout
cannot express "first byte within F, then no gap over I, all within T" (a server that
sends one header line every half second, or ``100 Continue`` forever, never lets one read
time out), so a watchdog thread holds those deadlines from the moment the request is
sent, the response head included, and when one passes it shuts the connection's socket
down: the blocked read returns, and the error says which deadline it was. The socket is
learnt from httpcore's trace of the connection. Time spent handing a chunk downstream (a
slow reader) does not count as idle time.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket

    import httpx

    from .transfer import Run


class Watchdog:
    """Shuts the connection's socket down when the first-byte, idle or total deadline
    passes, from the request on (``run.sock``: the socket, once connected)."""

    def __init__(self, run: Run, began: float) -> None:
        self._run = run
        self._cond = threading.Condition()
        self._last: float | None = None  # when the last chunk was handed on; None before one
        self._paused = False
        self._stopped = False
        self._began = began
        #: the deadline that passed, if one did
        self.fired: str | None = None
        t = run.timeouts
        if any(v is not None for v in (t.first_byte, t.idle, t.total)):
            threading.Thread(target=self._watch, name="sse-tool-deadlines", daemon=True).start()

    def pause(self) -> None:
        # A chunk is on its way downstream: a slow reader is not an idle server.
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._last = self._run.clock()
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _next(self) -> tuple[float | None, str]:
        t = self._run.timeouts
        candidates = []
        if self._run.deadline is not None:
            candidates.append((self._run.deadline, "total"))
        if not self._paused:
            if self._last is None and t.first_byte is not None:
                candidates.append((self._began + t.first_byte, "first-byte"))
            elif self._last is not None and t.idle is not None:
                candidates.append((self._last + t.idle, "idle"))
        return min(candidates) if candidates else (None, "")

    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                deadline, which = self._next()
                left = None if deadline is None else deadline - self._run.clock()
                if left is not None and left <= 0:
                    self.fired = which
                    if self._run.sock is not None:
                        shut(self._run.sock)
                    return
                self._cond.wait(left)


def shut(sock: socket.socket) -> None:
    # Shut a duplicate of the descriptor: shutdown acts on the connection, and touching
    # the socket object itself (an SSL one, say) from this thread would not be safe.
    import socket

    try:
        dup = socket.fromfd(sock.fileno(), sock.family, sock.type)
    except OSError:
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()


def socket_of(response: httpx.Response) -> socket.socket | None:
    return socket_of_stream(response.extensions.get("network_stream"))


def socket_of_stream(stream) -> socket.socket | None:
    import socket  # loaded by httpx already: a request is on its way

    try:
        sock = stream.get_extra_info("socket") if stream is not None else None
    except Exception:  # a custom transport's stream may not know the question
        return None
    return sock if isinstance(sock, socket.socket) else None
