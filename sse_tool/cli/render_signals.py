"""The signals of ``sse-tool render``, at its edge: what a terminal tells the read loop.

A signal handler runs between two bytecodes of whatever the loop is doing (in the middle
of a paint, say), and cannot end the loop's wait: PEP 475 retries ``select`` with the
timeout it had, none at all while the stream is idle. So the handlers here do nothing
but exist; ``signal.set_wakeup_fd`` writes each signal's number into a pipe that the loop
waits on with its input (``loop.pump``'s ``wake``), and ``handle`` acts on the numbers
there, between two reads:

* SIGWINCH: paint again at the new width.

Outside ``with Signals(...)`` every disposition and the wakeup descriptor are as before.
"""

from __future__ import annotations

import os
import signal

from ..render.throttle import Painter


def _ignore(signum, frame) -> None:
    pass  # the number reaches the wakeup pipe: ``handle`` does the work


class Signals:
    """The wakeup pipe and the handlers, for one painter; ``fd`` is None where signals
    cannot be caught (not the main thread)."""

    def __init__(self, painter: Painter, terminal: bool) -> None:
        self.painter = painter
        self.caught = [signal.SIGWINCH] if terminal and hasattr(signal, "SIGWINCH") else []
        self.fd: int | None = None
        self._write: int | None = None
        self._saved: dict[int, object] = {}
        self._saved_wakeup = -1

    def __enter__(self) -> Signals:
        if not self.caught:
            return self
        read, write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            self._saved_wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: no handler either
            os.close(read)
            os.close(write)
            return self
        self.fd, self._write = read, write
        for signum in self.caught:
            self._saved[signum] = signal.signal(signum, _ignore)
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is None:
            return
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._saved_wakeup)
        os.close(self.fd)
        os.close(self._write)
        self.fd = self._write = None

    def handle(self) -> None:
        """Act on the signals that arrived since the last call."""
        try:
            arrived = os.read(self.fd, 512)
        except BlockingIOError:
            return
        for signum in arrived:
            if signum == getattr(signal, "SIGWINCH", None):
                self.painter.resized()
