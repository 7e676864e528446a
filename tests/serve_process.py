"""A real ``sse-tool serve`` process on 127.0.0.1 (a free port), and ``sse-tool fetch`` runs.

``ServeProcess`` starts the command, waits for its "listening on" line, keeps reading its
stderr (the access log) so the pipe never fills, and stops it with SIGINT.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

from .support import SSE_TOOL, clean_env

_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)/")


class ServeProcess:
    def __init__(self, *args: str, env: dict | None = None, ready: bool = True, cwd=None) -> None:
        self.proc = subprocess.Popen(
            [*SSE_TOOL, "serve", "--port", "0", *args], stdin=subprocess.DEVNULL, cwd=cwd,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            # (a serve that will not stop dumps its threads' stacks on SIGABRT: see stop)
            env=clean_env(PYTHONFAULTHANDLER="1", **(env or {})),
        )
        self.lines: list[str] = []
        self._seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.base = ""
        if ready:
            self.base = self.wait_for(_LISTENING).group(1)

    def _read(self) -> None:
        for raw in self.proc.stderr:
            with self._seen:
                self.lines.append(raw.decode("utf-8", "replace"))
                self._seen.notify_all()
        with self._seen:
            self.lines.append("")  # end of stderr
            self._seen.notify_all()

    def wait_for(self, pattern: re.Pattern, timeout: float = 10.0) -> re.Match:
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for line in self.lines:
                    if m := pattern.search(line):
                        return m
                if "" in self.lines or time.monotonic() > deadline:
                    raise AssertionError(f"serve never printed {pattern.pattern!r}: {self.log()}")
                self._seen.wait(0.1)

    def url(self, path: str) -> str:
        return self.base + path

    def log(self) -> str:
        with self._seen:
            return "".join(self.lines)

    def stop(self) -> int:
        """SIGINT, and the exit status; a serve still running 10 s later is a failure that
        shows where each of its threads was (faulthandler's dump on SIGABRT)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            deadline = time.monotonic() + 5
            with self._seen:
                while "" not in self.lines and time.monotonic() < deadline:
                    self._seen.wait(0.1)
            raise AssertionError(f"serve did not stop within 10 s of SIGINT: {self.log()}")
        finally:
            self.proc.stdout.close()


def fetch(url: str, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """``sse-tool fetch [args] URL`` as a process; stdout as bytes, stderr as text."""
    done = subprocess.run([*SSE_TOOL, "fetch", *args, url], capture_output=True,
                          env=clean_env(), timeout=timeout)
    done.stderr = done.stderr.decode("utf-8", "replace")
    return done


def run(*args: str, input: bytes = b"", timeout: float = 20) -> subprocess.CompletedProcess:
    """Any ``sse-tool`` subcommand as a process."""
    return subprocess.run([*SSE_TOOL, *args], input=input, capture_output=True,
                          env=clean_env(), timeout=timeout)
