"""The suite's own guards: every test has a time limit, tighter where processes run, and
the processes it starts get SIGINT as a terminal would give it (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys

from .. import conftest
from ..support import ROOT

try:
    import tomllib
except ImportError:  # Python 3.10
    import pytest

    tomllib = pytest.importorskip("tomli")


def test_every_test_has_a_generous_limit_and_slow_ones_are_left_out_by_default():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert 300 <= options["timeout"] <= 900
    assert "-m 'not slow'" in options["addopts"]
    assert any(m.startswith("slow:") for m in options["markers"])


def test_a_test_that_starts_processes_gets_the_tighter_limit(request):
    # this module uses subprocess
    assert request.node.get_closest_marker("timeout").args == (conftest.PROCESS_TIMEOUT,)
    assert conftest.PROCESS_TIMEOUT < tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["pytest"]["ini_options"]["timeout"]


def test_a_module_of_pure_tests_keeps_the_default():
    from ..framing import test_sse

    assert not conftest._uses_processes(test_sse)


def test_a_child_process_gets_the_default_sigint_even_when_the_suite_was_started_ignoring_it():
    # a suite started as a background job (SIGINT ignored) loads conftest, then starts a process
    script = ("import signal, subprocess, sys\n"
              "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
              "import tests.conftest\n"
              "probe = 'import signal; print(signal.getsignal(signal.SIGINT))'\n"
              "print(subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True).stdout)\n")
    got = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert got.stdout.strip() == "<built-in function default_int_handler>", got.stderr
