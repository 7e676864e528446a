"""Atomic file writes: a reader sees the old file or the whole new one, never half of one.

``write_atomic(path, data)`` writes a temporary file in the same directory (so the rename
stays on one file system), flushes it to disk and renames it over ``path``. Called only
once a stream completed; on truncation, error or Ctrl-C nothing calls it, so the file is
neither created nor touched. ``check_writable`` fails early, before any streaming.
"""

from __future__ import annotations

import os

from ..errors import ExitCode, SseToolError


class OutputUnwritable(SseToolError):
    exit_code = ExitCode.USAGE


def check_writable(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OutputUnwritable(f"{path}: no such directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputUnwritable(f"{path}: directory not writable")
    if os.path.isdir(path):
        raise OutputUnwritable(f"{path}: is a directory")


def _mode_for(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777  # replacing a file keeps its permissions
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    import tempfile  # only when there is something to write: start-up time counts

    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
