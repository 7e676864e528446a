"""uvicorn's HTTP/1.1 protocol with a deadline for every request head.

uvicorn bounds the idle time between two requests (keep-alive) but not the time a request
head takes to arrive: a client that sends half a request line and waits (slowloris) keeps
its socket for ever, and enough of them hold every file descriptor the server has. Here
the head must be whole within ``head_timeout`` seconds of the connection, or of the end of
the previous response on a kept-alive one; past it the connection is closed, after a 408
when part of a head had come (a connection on which nothing came is closed as uvicorn
closes an idle kept-alive one). The body that follows a head is the application's to
read, and not bounded here.
"""

from __future__ import annotations

from collections.abc import Callable

from uvicorn.protocols.http.h11_impl import H11Protocol

from .asgi import json_error

#: the default of ``serve --head-timeout``, as Apache's first bound for a request head
HEAD_TIMEOUT = 20.0


def with_head_deadline(seconds: float, log: Callable[[str], None] | None = None) -> type:
    """The protocol class to give ``uvicorn.Config(http=...)``."""
    return type("HeadDeadline", (HeadDeadline,), {"head_timeout": seconds, "log": staticmethod(log)})


class HeadDeadline(H11Protocol):
    head_timeout = HEAD_TIMEOUT
    log: Callable[[str], None] | None = None
    _due = None
    _waiting = None  # the request cycle that was current when the wait began
    _begun = False  # whether bytes came since then

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc) -> None:
        self._stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._begun = True
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self._due is not None and self.cycle is not self._waiting:  # a head arrived
            self._stop()

    def on_response_complete(self) -> None:
        # Armed first: the super call reads any pipelined request at once, and its head
        # then stops this wait in handle_events.
        if not self.transport.is_closing():
            self._await_head()
        super().on_response_complete()

    def _await_head(self) -> None:
        self._stop()
        # (bytes of the next head may have come during the response, unread so far)
        self._waiting, self._begun = self.cycle, bool(self.conn.trailing_data[0])
        self._due = self.loop.call_later(self.head_timeout, self._late)

    def _stop(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None

    def _late(self) -> None:
        self._due = None
        if self.transport.is_closing():
            return
        if not self._begun:
            self.transport.close()
            return
        why = f"no whole request head within {self.head_timeout:g}s"
        body = json_error(why, "request_timeout")
        self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        self.transport.close()
        if self.log is not None:
            client = self.client or ("-", 0)
            self.log(f"{client[0]}:{client[1]} 408 {why}")
