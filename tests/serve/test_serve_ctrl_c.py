"""Why serve's Ctrl-C is a flag and never an exception, shown without a race.

Python raises KeyboardInterrupt wherever the main thread is. Inside a finalizer or a
weakref callback (the event loop starting and closing runs such callbacks) it is dropped
(it goes to ``sys.unraisablehook``): serve listened on, or exited 0. Between a lock's
acquire and release it broke the lock (a RuntimeError, exit 1). A finalizer that raises
SIGINT puts the handler exactly in the first place, every time."""

from __future__ import annotations

import signal
import sys
from types import SimpleNamespace

import pytest

from sse_tool.cli.serve import _CtrlC


class Finalized:
    def __init__(self, raise_in_del) -> None:
        self.raise_in_del = raise_in_del

    def __del__(self) -> None:
        self.raise_in_del()


def ctrl_c_in_a_finalizer() -> None:
    Finalized(lambda: signal.raise_signal(signal.SIGINT))


@pytest.fixture
def dropped(monkeypatch):
    """The exceptions Python dropped, by type; SIGINT's handler put back afterwards."""
    seen: list[type] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(type(u.exc_value)))
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield seen
    signal.signal(signal.SIGINT, before)


def test_python_drops_a_keyboard_interrupt_raised_in_a_finalizer(dropped):
    ctrl_c_in_a_finalizer()  # no exception here: the interrupt is lost
    assert dropped == [KeyboardInterrupt]


def test_a_running_server_is_told_to_stop_even_from_a_finalizer(dropped):
    with _CtrlC() as ctrl_c:
        ctrl_c.server = SimpleNamespace(should_exit=False)
        ctrl_c_in_a_finalizer()
    assert ctrl_c.pressed and ctrl_c.server.should_exit and dropped == []


def test_during_set_up_ctrl_c_is_a_flag_the_server_is_not_started_on(dropped):
    with _CtrlC() as ctrl_c:
        signal.raise_signal(signal.SIGINT)  # no exception, wherever set-up is
        ctrl_c_in_a_finalizer()
        assert ctrl_c.pressed and dropped == []
        Finalized(lambda: 1 / 0)
        assert dropped == [ZeroDivisionError]  # other lost exceptions are still reported
    # the server made after it is told to stop at once (serve does not start one at all)
    with _CtrlC() as ctrl_c:
        signal.raise_signal(signal.SIGINT)
        ctrl_c.server = SimpleNamespace(should_exit=False)
        signal.raise_signal(signal.SIGINT)
    assert ctrl_c.server.should_exit


def test_afterwards_ctrl_c_raises_again(dropped):
    with _CtrlC():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)


def test_an_ignored_sigint_stays_ignored(dropped):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with _CtrlC():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
