"""Finding whether a later sse-tool stage reads a pipe, with real processes as readers."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sse_tool.downstream import read_by_a_stage, stage_of

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")

#: a real process whose command line names a stage and which only waits on its stdin
SLEEPER = "import sys; sys.stdin.buffer.read()"


def reader(read_fd: int, *argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SLEEPER, *argv], stdin=read_fd)


@pytest.fixture
def pipe():
    r, w = os.pipe()
    procs: list[subprocess.Popen] = []
    yield r, w, procs
    os.close(w)
    for proc in procs:
        proc.wait(10)
    os.close(r)


class Clock:
    """Time that moves only when slept through: the wait is counted, never spent."""

    def __init__(self):
        self.now = 0.0
        self.slept = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += 1


@pytest.mark.parametrize("argv", [("sse-tool", "render"), ("/venv/bin/sse-tool", "--debug", "normalize"),
                                  ("-m", "sse_tool", "frame")])
def test_a_stage_reading_the_pipe_is_found(pipe, argv):
    r, w, procs = pipe
    procs.append(reader(r, *argv))
    _wait_ready(procs[0].pid, w)
    assert read_by_a_stage(w, wait=5)


@pytest.mark.parametrize("argv", [(), ("sse-tool", "fetch"), ("jq",)])
def test_a_reader_that_is_no_carrier_is_told_at_once(pipe, argv):
    r, w, procs = pipe
    procs.append(reader(r, *argv))
    _wait_ready(procs[0].pid, w)
    clock = Clock()
    assert not read_by_a_stage(w, wait=5, clock=clock, sleep=clock.sleep)
    assert clock.slept == 0


def test_with_no_reader_yet_proc_is_asked_again_until_the_wait_is_over(pipe):
    _, w, _ = pipe
    clock = Clock()
    assert not read_by_a_stage(w, wait=0.5, clock=clock, sleep=clock.sleep)
    assert 40 <= clock.slept <= 60  # asked every 10 ms of the (counted) half second


def test_a_reader_started_after_the_question_is_still_found(pipe):
    """The CI failure this guards: a stage failing before the shell had started the next
    one printed its failure as well as handing it on. The question is asked by a child
    of this process, as a stage is by a child of the shell, so that the reader (forked
    here) first shows its parent's command line, as the shell's fork does."""
    r, w, procs = pipe
    ask = ("import sys; from sse_tool.downstream import read_by_a_stage;"
           "sys.stderr.write('?'); sys.stderr.flush(); sys.stderr.write(str(read_by_a_stage(1, wait=30)))")
    asker = subprocess.Popen([sys.executable, "-c", ask], stdout=w, stderr=subprocess.PIPE)
    assert asker.stderr.read(1) == b"?"
    time.sleep(0.1)  # it is asking /proc, and finding no reader
    procs.append(reader(r, "sse-tool", "render"))
    assert asker.communicate(timeout=60)[1] == b"True"


def test_not_a_pipe_is_not_read_by_a_stage(tmp_path):
    with open(tmp_path / "out", "wb") as f:
        assert not read_by_a_stage(f.fileno())


@pytest.mark.parametrize("argv, stage", [
    ([b"/usr/bin/python3", b"/v/bin/sse-tool", b"render", b"--interval", b"0"], "render"),
    ([b"python", b"-m", b"sse_tool", b"--debug", b"normalize"], "normalize"),
    ([b"sse-tool"], ""),
    ([b"python", b"-m", b"http.server"], None),
    ([b"jq", b"."], None),
])
def test_stage_of_a_command_line(argv, stage):
    assert stage_of(argv) == stage


def _wait_ready(pid: int, fd: int) -> None:
    deadline = time.monotonic() + 10
    while not _ready(pid, fd):
        assert time.monotonic() < deadline, "the reader did not start"
        time.sleep(0.005)


def _ready(pid: int, fd: int) -> bool:
    """Whether process ``pid`` runs its own program yet (not still a fork of this one)
    with the pipe of our ``fd`` as its stdin."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            own = SLEEPER.encode() in f.read()
        return own and os.readlink(f"/proc/{pid}/fd/0") == os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False


# A reader may end as soon as it has a failure (render ends at the end record): a failing
# stage must ask whether a stage reads its output before that record goes out, or the
# reader may be gone (then the stage waits for it, and says the failure twice). Whether it
# asked in time is told by what it had written when it asked (a real reader races).


@pytest.mark.parametrize("stage, stream, last", [
    ("normalize", "openai-chat/groq-error-event.sse", b'"type":"end"'),
    ("normalize", "openai-chat/openai-text-usage.cut-before-finish.sse", b'"type":"end"'),
    ("frame", "anthropic/thinking-signature.cut-mid-frame.sse", b'"comment":"sse-tool exit'),
])
def test_a_failing_stage_asks_before_its_failure_record_goes_out(monkeypatch, stage, stream, last):
    from typer.testing import CliRunner

    from sse_tool.cli import _edge, app

    from ..support import FIXTURES

    written_when_asked = []

    def asked(self):
        written_when_asked.append(self._out.getvalue())
        return True

    monkeypatch.setattr(_edge.Output, "read_by_a_stage", asked)
    result = CliRunner().invoke(app, [stage, str(FIXTURES / stream)])
    assert result.exit_code in (3, 4) and last in result.stdout_bytes
    assert written_when_asked and last not in written_when_asked[0]
