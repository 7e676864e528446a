"""The signals of ``sse-tool render``, at its edge: what a terminal tells the read loop.

A signal handler runs between two bytecodes of whatever the loop is doing (in the middle
of a paint, say), and cannot end the loop's wait: PEP 475 retries ``select`` with the
timeout it had, none at all while the stream is idle. So the handlers of the signals
that change the view do nothing but exist; ``signal.set_wakeup_fd`` writes each
signal's number into a pipe that the loop waits on with its input (``loop.pump``'s
``wake``), and ``handle`` acts on the numbers there, between two reads:

* SIGWINCH: paint again at the new width.
* SIGTSTP (Ctrl-Z): the view erases its tail and shows the cursor, then the process
  stops itself as SIGTSTP would have stopped it (its default action, for a moment).
* SIGCONT (``fg``, ``bg``, after any stop): paint the tail again, where the cursor is.

SIGTERM and SIGHUP end the stage wherever it is, as Ctrl-C does: their handler raises
``Terminated`` (render's edge ends the view, marking the answer incomplete, and exits
128 + the signal's number). They are caught whatever the output; the others only on a
terminal. Outside ``with Signals(...)`` every disposition and the wakeup descriptor are
as before.
"""

from __future__ import annotations

import os

# _signal, as in entry.py: plain numbers are all this needs, not signal's enums (whose
# look-ups cost more than the rest of setting the handlers)
import _signal as signal

from ..errors import Terminated
from ..render.throttle import Painter

#: acted on in ``handle``, on a terminal
_TERMINAL = ("SIGWINCH", "SIGTSTP", "SIGCONT")
#: end the stage at once
_ENDING = ("SIGTERM", "SIGHUP")
_NAMES = {getattr(signal, name): name for name in _TERMINAL + _ENDING if hasattr(signal, name)}


def _ignore(signum, frame) -> None:
    pass  # the number reaches the wakeup pipe: ``handle`` does the work


def _end(signum, frame) -> None:
    raise Terminated(signum, _NAMES[signum])


class Signals:
    """The wakeup pipe and the handlers, for one painter; ``fd`` is None where signals
    cannot be caught (not the main thread)."""

    def __init__(self, painter: Painter, terminal: bool) -> None:
        self.painter = painter
        names = (_TERMINAL if terminal else ()) + _ENDING
        self.caught = [getattr(signal, name) for name in names if hasattr(signal, name)]
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
            if signal.getsignal(signum) == signal.SIG_IGN:
                continue  # ignored by whoever started us (nohup): it stays ignored
            self._saved[signum] = signal.signal(signum, _end if _NAMES[signum] in _ENDING else _ignore)
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
            if signum in (getattr(signal, "SIGWINCH", None), getattr(signal, "SIGCONT", None)):
                self.painter.resized()
            elif signum == getattr(signal, "SIGTSTP", None):
                self._stop()

    def _stop(self) -> None:
        self.painter.suspend()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        try:
            os.kill(os.getpid(), signal.SIGTSTP)  # stopped here until SIGCONT
        finally:
            signal.signal(signal.SIGTSTP, _ignore)
        # the tail again, also where the kernel did not stop us (an orphaned process
        # group: no shell to continue it) and no SIGCONT comes
        self.painter.resized()
