"""``sse-tool frame`` as a real process between real pipes, PYTHONUNBUFFERED unset."""

from __future__ import annotations

import json
import select
import signal
import subprocess

from ..support import FIXTURES, SSE_TOOL, clean_env

WAIT = 60


def start(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [*SSE_TOOL, "frame", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=clean_env(), **popen,
    )


def read_line(stream) -> bytes:
    """One line from a pipe, failing (not hanging) if it does not come."""
    ready, _, _ = select.select([stream], [], [], WAIT)
    assert ready, "no record arrived while the input was still open"
    return stream.readline()


def test_a_record_reaches_the_reader_before_the_next_input_byte():
    proc = start()
    try:
        for i in range(3):
            proc.stdin.write(b"data: %d\n\n" % i)
            proc.stdin.flush()
            assert json.loads(read_line(proc.stdout)) == {"event": "message", "data": str(i)}
        proc.stdin.write(b"data: cut")
        proc.stdin.close()
        assert proc.wait(WAIT) == 3
    finally:
        proc.kill()


def test_a_closed_reader_ends_frame_quietly(tmp_path):
    many = tmp_path / "many.sse"
    many.write_bytes(b"data: %s\n\n" % (b"x" * 100) * 200_000)
    proc = subprocess.Popen(
        [*SSE_TOOL, "frame", str(many)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env()
    )
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(WAIT) == 141
    assert proc.stderr.read() == b""


def test_head_dash_1_in_a_shell_pipe_is_quiet():
    path = FIXTURES / "openai-responses" / "responses-reasoning-summary.sse"
    result = subprocess.run(
        ["sh", "-c", f'"$@" frame {path} | head -1', "sh", *SSE_TOOL],
        capture_output=True, env=clean_env(), timeout=WAIT,
    )
    assert result.returncode == 0 and result.stderr == b""
    assert json.loads(result.stdout)["event"] == "response.created"


def test_sigint_exits_130_quietly():
    proc = start()
    try:
        proc.stdin.write(b"data: a\n\n")
        proc.stdin.flush()
        read_line(proc.stdout)  # frame is now waiting in its read loop
        proc.send_signal(signal.SIGINT)
        assert proc.wait(WAIT) == 130
        assert proc.stderr.read() == b""
    finally:
        proc.kill()


def test_truncated_input_exits_3_with_one_line_on_stderr():
    path = FIXTURES / "openai-chat" / "openai-text-usage.sse"
    cut = path.read_bytes()[:-30]
    result = subprocess.run([*SSE_TOOL, "frame"], input=cut, capture_output=True, env=clean_env(), timeout=WAIT)
    assert result.returncode == 3 and result.stderr.count(b"\n") == 1
    assert result.stdout.count(b"\n") >= 1


def test_a_complete_stream_exits_0():
    path = FIXTURES / "anthropic" / "text-short.sse"
    result = subprocess.run([*SSE_TOOL, "frame", str(path)], capture_output=True, env=clean_env(), timeout=WAIT)
    assert result.returncode == 0 and result.stderr == b""


def test_frame_imports_neither_httpx_nor_rich():
    # Run the real entry point, then list what it had imported when it exited.
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(' '.join(sorted(sys.modules))))\n"
        "sys.argv = ['sse-tool', 'frame']\n"
        "from sse_tool.cli import main\n"
        "main()\n"
    )
    result = subprocess.run([SSE_TOOL[0], "-c", script], input=b"data: a\n\n",
                            capture_output=True, env=clean_env(), timeout=WAIT)
    assert result.returncode == 0
    imported = set(result.stderr.decode().split())
    assert "sse_tool.cli.frame" in imported
    assert not {m for m in imported if m.split(".")[0] in ("httpx", "rich")}
