"""Whether a later sse-tool stage reads this process's standard output.

A stage's notices for a person (fetch's "retry 1/2 in 1s", a failure passed on) travel
in-band to a later stage, which shows them in its own view: written to the shared
terminal as well, they would land in the middle of ``render``'s live view. But when what
reads the output is not one of ours (a file, ``jq``, a terminal), nothing would ever show
them, so they go to stderr as before. Only a stage that carries notes on to a person
counts (``frame``, ``normalize``, ``render``).

The reader of a pipe is found in ``/proc`` (Linux): the process whose standard input is
the other end of our stdout, and its command line. Elsewhere, or when ``/proc`` cannot
tell, the answer is False: notices are printed, as every stage did before. The shell
starts both ends of a pipe at once and each runs its program at once, long before the
first notice of a request, so the reader is there to be found.
"""

from __future__ import annotations

import os

#: the stages that pass a note on, or show it
CARRIERS = frozenset({"frame", "normalize", "render"})
#: how the program shows in a command line (the script, the package run with -m)
_PROGRAM = (b"sse-tool", b"sse_tool")


def read_by_a_stage(fd: int = 1) -> bool:
    """True if ``fd`` is a pipe whose reader is a running ``frame``, ``normalize`` or
    ``render`` of sse-tool."""
    try:
        link = os.readlink(f"/proc/self/fd/{fd}")
        pids = os.listdir("/proc")
    except OSError:
        return False
    if not link.startswith("pipe:"):
        return False
    me = str(os.getpid())
    for pid in pids:
        if not pid.isdigit() or pid == me:
            continue
        try:
            if os.readlink(f"/proc/{pid}/fd/0") != link:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:  # gone, or another user's
            continue
        if stage_of(argv) in CARRIERS:
            return True
    return False


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
