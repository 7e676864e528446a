"""Atomic writes for --output: the whole new file or the old one, never half, no leftovers."""

from __future__ import annotations

import os

import pytest

import resource
import signal
import subprocess
import sys

from sse_tool.render.persist import OutputUnwritable, WriteFailed, check_writable, write_atomic

from ..support import SAMPLES, SSE_TOOL, clean_env


def test_write_atomic_creates_the_file_with_the_usual_permissions(tmp_path):
    path = tmp_path / "answer.txt"
    write_atomic(str(path), b"hello\n")
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_bytes() == b"hello\n"
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    assert os.listdir(tmp_path) == ["answer.txt"]


def test_replacing_a_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "answer.txt"
    path.write_bytes(b"old")
    os.chmod(path, 0o600)
    write_atomic(str(path), b"new")
    assert path.read_bytes() == b"new" and os.stat(path).st_mode & 0o777 == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "answer.txt"
    path.write_bytes(b"old")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(WriteFailed, match="disk full"):
        write_atomic(str(path), b"new")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["answer.txt"]


def test_check_writable_rejects_a_missing_directory_and_a_directory(tmp_path):
    with pytest.raises(OutputUnwritable):
        check_writable(str(tmp_path / "missing" / "a.txt"))
    with pytest.raises(OutputUnwritable):
        check_writable(str(tmp_path))
    check_writable(str(tmp_path / "a.txt"))


def test_check_writable_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputUnwritable, match="not a regular file"):
        check_writable(str(fifo))
    with pytest.raises(OutputUnwritable, match="not a regular file"):
        check_writable("/dev/null")


def render_to(output, *more: str, **popen) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, "render", "--output", str(output), *more, str(SAMPLES / "anthropic-thinking.sse")],
                          capture_output=True, env=clean_env(), timeout=60, **popen)


def test_render_output_to_a_fifo_is_a_usage_error_and_the_fifo_stays(tmp_path):
    fifo = tmp_path / "answer"
    os.mkfifo(fifo)
    done = render_to(fifo)
    assert done.returncode == 2 and b"not a regular file" in done.stderr
    assert os.path.exists(fifo) and not os.path.isfile(fifo)


def test_a_full_disk_is_a_clean_error_exit_10_leaving_no_temporary(tmp_path):
    # a file size limit fails the write as a full disk does (Python ignores SIGXFSZ)
    path = tmp_path / "answer.txt"
    done = render_to(path, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64)))
    assert done.returncode == 11, done.stderr
    assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
    assert os.listdir(tmp_path) == []


def test_a_temporary_file_left_by_a_killed_run_is_removed_by_the_next_run(tmp_path):
    path = tmp_path / "answer.txt"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no process has now
    stale = tmp_path / f".answer.txt.sse-tool-{gone.pid}.tmp"
    stale.write_bytes(b"half an answ")
    live = tmp_path / f".answer.txt.sse-tool-{os.getpid()}.tmp"  # a run still writing
    live.write_bytes(b"")
    assert render_to(path).returncode == 0
    assert sorted(os.listdir(tmp_path)) == sorted(["answer.txt", live.name])


def test_sigkill_at_any_moment_leaves_no_temporary_that_the_next_run_keeps(tmp_path):
    path = tmp_path / "answer.txt"
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3):
        proc = subprocess.Popen([*SSE_TOOL, "render", "--output", str(path), str(SAMPLES / "anthropic-thinking.sse")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env())
        try:
            proc.wait(delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert render_to(path).returncode == 0
    assert os.listdir(tmp_path) == ["answer.txt"]
