"""Whether a later sse-tool stage reads this process's standard output.

A stage's notices for a person (fetch's "retry 1/2 in 1s", a failure passed on) travel
in-band to a later stage, which shows them in its own view: written to the shared
terminal as well, they would land in the middle of ``render``'s live view. But when what
reads the output is not one of ours (a file, ``jq``, a terminal), nothing would ever show
them, so they go to stderr as before. Only a stage that carries notes on to a person
counts (``frame``, ``normalize``, ``render``, and ``inspect``, whose report says them and
whose ``--tee`` passes them on).

The reader of a pipe is found in ``/proc`` (Linux): the process whose standard input is
the other end of our stdout, and its command line. Elsewhere, or when ``/proc`` cannot
tell, the answer is False: notices are printed, as every stage did before. The shell
starts both ends of a pipe at once, so the reader is nearly always there to be found; a
wait of up to 2 s covers one that a loaded machine is still starting (it is asked only
when a stage has a notice to give, so a pipe that goes well never waits, and a reader
that cannot be seen, another user's, delays a failure's one line by at most that).
"""

from __future__ import annotations

import os
import time

#: the stages that pass a note on, or show it
CARRIERS = frozenset({"frame", "normalize", "render", "inspect"})
#: how the program shows in a command line (the script, the package run with -m)
_PROGRAM = (b"sse-tool", b"sse_tool")


def read_by_a_stage(fd: int = 1, wait: float = 2.0, clock=time.monotonic, sleep=time.sleep) -> bool:
    """True if ``fd`` is a pipe whose reader is a running ``frame``, ``normalize``,
    ``render`` or ``inspect`` of sse-tool. On a loaded machine a stage may fail before the
    shell has started the next one, so while no reader is found, or the one found is still
    the shell (forked, its program not yet run: its command line is our parent's),
    ``/proc`` is asked again for up to ``wait`` seconds."""
    try:
        link = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    if not link.startswith("pipe:"):
        return False
    me = str(os.getpid())
    parent = _parent_argv()
    deadline = clock() + wait
    while True:
        settled = False  # a reader running a program of its own was found
        try:
            pids = os.listdir("/proc")
        except OSError:
            return False
        for pid in pids:
            if not pid.isdigit() or pid == me:
                continue
            argv = _reader_argv(pid, link)
            if argv is None:
                continue
            if stage_of(argv) in CARRIERS:
                return True
            # (a command line read while the reader runs execve is empty: ask again)
            settled = settled or argv not in (parent, [b""])
        if settled or clock() > deadline:
            return False
        sleep(0.01)


def _reader_argv(pid: str, link: str) -> list[bytes] | None:
    """The command line of process ``pid`` if its standard input is ``link``, else None."""
    try:
        if os.readlink(f"/proc/{pid}/fd/0") != link:
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:  # gone, or another user's
        return None


def _parent_argv() -> list[bytes] | None:
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def stage_of(argv: list[bytes]) -> str | None:
    """The sse-tool subcommand a command line runs (``python -m sse_tool render``,
    ``/venv/bin/sse-tool --debug frame``), or None if it is not sse-tool."""
    for i, arg in enumerate(argv):
        name = os.path.basename(arg)
        if name.startswith(_PROGRAM) or (arg == b"-m" and argv[i + 1:i + 2] == [b"sse_tool"]):
            rest = argv[i + (2 if arg == b"-m" else 1):]
            word = next((a for a in rest if a and not a.startswith(b"-")), b"")
            return word.decode("utf-8", "replace")
    return None
