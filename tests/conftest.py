"""Suite-wide settings: time limits per test, and SIGINT as a terminal would give it.

Every test has a limit (``timeout`` in pyproject.toml, generous: a hang fails one test
instead of holding CI until its own limit); a test in a module that starts processes
(it uses subprocess, pty or pexpect, itself or through a helper module of the tests) gets
PROCESS_TIMEOUT, tighter, unless it is marked with a limit of its own or marked slow.
"""

from __future__ import annotations

import signal
import sys
from types import ModuleType

import pytest

#: seconds for a test that starts processes: the slowest take ~10 s on 2 busy cores
PROCESS_TIMEOUT = 120
_PROCESS_MODULES = {"subprocess", "pty", "pexpect"}

# A shell without job control starts a background job (`pytest &`, a CI script's `nohup`)
# with SIGINT ignored, and every process inherits that: the Ctrl-C tests' stages would
# then never stop, and the test would drain their endless stream forever. A handler, unlike
# an ignored signal, is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _uses_processes(module: ModuleType) -> bool:
    for value in vars(module).values():
        home = value if isinstance(value, ModuleType) else sys.modules.get(getattr(value, "__module__", "") or "")
        if home is None:
            continue
        if home.__name__ in _PROCESS_MODULES:
            return True
        if home.__name__.startswith(f"{__package__}.") and home is not module and any(
                isinstance(v, ModuleType) and v.__name__ in _PROCESS_MODULES for v in vars(home).values()):
            return True
    return False


def pytest_collection_modifyitems(items) -> None:
    seen: dict[str, bool] = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None or item.get_closest_marker("timeout") is not None:
            continue
        if item.get_closest_marker("slow") is not None:  # exhaustive: the generous default
            continue
        if seen.setdefault(module.__name__, _uses_processes(module)):
            item.add_marker(pytest.mark.timeout(PROCESS_TIMEOUT))
