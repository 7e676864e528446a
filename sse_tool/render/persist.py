"""Atomic file writes: a reader sees the old file or the whole new one, never half of one.

``write_atomic(path, data)`` writes a temporary file in the same directory (so the rename
stays on one file system), flushes it to disk and renames it over ``path``. Called only
once a stream completed; on truncation, error or Ctrl-C nothing calls it, so the file is
neither created nor touched. ``check_writable`` fails early, before any streaming: the
directory must be writable and ``path`` absent or a regular file (a FIFO or a device is
never replaced by a file).

The temporary file is named ``.NAME.sse-tool-PID.tmp``: a run killed before its rename
(SIGKILL) leaves it behind, and the next run writing NAME removes those whose process is
gone. A write that fails (a full disk) removes its temporary file and is exit 11.
"""

from __future__ import annotations

import os
import stat

from ..errors import ExitCode, SseToolError


class OutputUnwritable(SseToolError):
    exit_code = ExitCode.USAGE


class WriteFailed(SseToolError):
    exit_code = ExitCode.OUTPUT


def check_writable(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OutputUnwritable(f"{path}: no such directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputUnwritable(f"{path}: directory not writable")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputUnwritable(f"{path}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise OutputUnwritable(f"{path}: is a directory")
    if not stat.S_ISREG(mode):
        raise OutputUnwritable(f"{path}: not a regular file (a FIFO or a device is not replaced)")


def _mode_for(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777  # replacing a file keeps its permissions
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _temporary(path: str, pid: int) -> str:
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.sse-tool-{pid}.tmp")


def remove_stale(path: str) -> None:
    """Remove the temporary files that runs killed before their rename left for ``path``."""
    directory, name = os.path.split(os.path.abspath(path))
    prefix, suffix = f".{name}.sse-tool-", ".tmp"
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for entry in names:
        pid = entry[len(prefix):-len(suffix)]
        if not (entry.startswith(prefix) and entry.endswith(suffix) and pid.isascii() and pid.isdigit()):
            continue
        if int(pid) != os.getpid() and not _alive(int(pid)):
            try:
                os.unlink(os.path.join(directory, entry))
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def write_atomic(path: str, data: bytes) -> None:
    remove_stale(path)
    tmp = _temporary(path, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteFailed(f"{path}: {exc.strerror or exc}") from None
        raise
