"""Atomic writes for --output: the whole new file or the old one, never half, no leftovers."""

from __future__ import annotations

import os

import pytest

from sse_tool.render.persist import OutputUnwritable, check_writable, write_atomic


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
    with pytest.raises(OSError):
        write_atomic(str(path), b"new")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["answer.txt"]


def test_check_writable_rejects_a_missing_directory_and_a_directory(tmp_path):
    with pytest.raises(OutputUnwritable):
        check_writable(str(tmp_path / "missing" / "a.txt"))
    with pytest.raises(OutputUnwritable):
        check_writable(str(tmp_path))
    check_writable(str(tmp_path / "a.txt"))
