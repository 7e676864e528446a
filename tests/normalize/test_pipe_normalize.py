"""``sse-tool frame | sse-tool normalize`` as real processes joined by real pipes."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..support import FIXTURES, SSE_TOOL, clean_env, stream_files

#: the recorded streams (the samples have their own tests; process start-up is the cost here)
FILES = [p for p in stream_files() if p.is_relative_to(FIXTURES)]
#: a generous bound so that a stage which holds its output back fails instead of hanging
WAIT = 60
EXIT = {"complete": 0, "truncated": 3, "error": 4}


def run_direct(paths) -> dict:
    """``sse-tool normalize`` on every raw file in one process: each stream ends at its end record."""
    p = subprocess.run([*SSE_TOOL, "normalize", *map(str, paths)], capture_output=True, env=clean_env(),
                       timeout=WAIT)
    streams, current = [], []
    for line in p.stdout.splitlines(keepends=True):
        current.append(line)
        if json.loads(line)["type"] == "end":
            streams.append(b"".join(current))
            current = []
    assert len(streams) == len(paths)
    return {path: (out, EXIT[json.loads(out.splitlines()[-1])["status"]]) for path, out in zip(paths, streams)}


def run_pipe(path):
    frame = subprocess.Popen([*SSE_TOOL, "frame", str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=clean_env())
    normalize = subprocess.Popen([*SSE_TOOL, "normalize"], stdin=frame.stdout, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=clean_env())
    frame.stdout.close()
    out, _ = normalize.communicate(timeout=WAIT)
    return out, frame.wait(timeout=WAIT), normalize.returncode


@pytest.fixture(scope="module")
def results():
    """Both ways for every stream; the pipes run two at a time (process start-up dominates)."""
    with ThreadPoolExecutor(2) as pool:
        piped = pool.map(run_pipe, FILES)
        direct = run_direct(FILES)
        return direct, dict(zip(FILES, piped))


def without_detail(out: bytes) -> list[dict]:
    records = [json.loads(line) for line in out.splitlines()]
    # frame drops an event cut short and says so in its exit status; the end record that
    # normalize then writes cannot know the framing's words for it.
    if records and records[-1]["type"] == "end":
        records[-1].pop("detail", None)
    return records


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(p.parent.parent)) for p in FILES])
def test_frame_piped_into_normalize_equals_normalize_on_the_raw_bytes(results, path):
    direct, piped = results
    out, code = direct[path]
    piped_out, frame_code, normalize_code = piped[path]
    assert without_detail(piped_out) == without_detail(out)
    # with `set -o pipefail` the pipe reports the last failing stage
    assert (normalize_code or frame_code) == code


def _read_line_or_fail(stream) -> bytes:
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(WAIT)
    assert line, "no record arrived while the input was still open"
    return line[0]


def _first_events(path, count: int) -> tuple[bytes, bytes]:
    data = path.read_bytes()
    cut = 0
    for _ in range(count):
        cut = data.index(b"\n\n", cut) + 2
    return data[:cut], data[cut:]


def test_a_record_reaches_the_reader_before_the_input_ends():
    head, rest = _first_events(FIXTURES / "openai-chat/deepseek-reasoning-content.sse", 3)
    proc = subprocess.Popen([*SSE_TOOL, "normalize"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    try:
        proc.stdin.write(head)
        proc.stdin.flush()
        first = json.loads(_read_line_or_fail(proc.stdout))
        assert first["type"] in ("meta", "delta")
        proc.stdin.write(rest)
        proc.stdin.close()
        out = proc.stdout.read()
        assert json.loads(out.splitlines()[-1])["status"] == "complete"
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode in (0, -9)


def test_a_record_crosses_frame_and_normalize_before_the_input_ends():
    head, rest = _first_events(FIXTURES / "openai-responses/responses-text.sse", 6)
    frame = subprocess.Popen([*SSE_TOOL, "frame"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=clean_env())
    normalize = subprocess.Popen([*SSE_TOOL, "normalize"], stdin=frame.stdout, stdout=subprocess.PIPE,
                                 env=clean_env())
    frame.stdout.close()
    try:
        frame.stdin.write(head)
        frame.stdin.flush()
        first = json.loads(_read_line_or_fail(normalize.stdout))
        assert first == {"type": "meta", "key": "model", "value": "gpt-4o-2024-08-06"}
        frame.stdin.write(rest)
        frame.stdin.close()
        assert json.loads(normalize.stdout.read().splitlines()[-1])["status"] == "complete"
        assert normalize.wait(WAIT) == 0 and frame.wait(WAIT) == 0
    finally:
        for proc in (frame, normalize):
            proc.kill()
            proc.wait()


def test_an_interrupt_ends_the_records_with_a_truncated_end_and_exits_130():
    head, _ = _first_events(FIXTURES / "openai-chat/deepseek-reasoning-content.sse", 3)
    proc = subprocess.Popen([*SSE_TOOL, "normalize"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    try:
        proc.stdin.write(head)
        proc.stdin.flush()
        _read_line_or_fail(proc.stdout)  # it is reading now
        proc.send_signal(signal.SIGINT)
        rest = proc.stdout.read()
        assert proc.wait(WAIT) == 130
    finally:
        proc.kill()
        proc.wait()
    assert json.loads(rest.splitlines()[-1]) == {
        "type": "end", "status": "truncated", "stop_reason": None, "detail": "normalize: interrupted", "exit": 130}
    assert proc.stderr.read() == b""


def test_stdin_and_dash_are_the_same_input():
    data = (FIXTURES / "openai-chat/openai-text-usage.sse").read_bytes()
    a = subprocess.run([*SSE_TOOL, "normalize"], input=data, capture_output=True, env=clean_env(), timeout=WAIT)
    b = subprocess.run([*SSE_TOOL, "normalize", "-"], input=data, capture_output=True, env=clean_env(),
                       timeout=WAIT)
    assert a.stdout == b.stdout and a.returncode == b.returncode == 0


def test_a_reader_that_closes_the_pipe_early_ends_normalize_quietly(tmp_path):
    # far more output than a pipe holds, so normalize is still writing when the reader leaves
    piece = b'data: {"choices":[{"index":0,"delta":{"content":"una palabra m\xc3\xa1s "}}]}\n\n'
    path = tmp_path / "long.sse"
    path.write_bytes(piece * 20000 + b"data: [DONE]\n\n")
    proc = subprocess.Popen([*SSE_TOOL, "normalize", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(WAIT) == 141
    assert proc.stderr.read() == b""


def test_normalize_imports_neither_httpx_nor_rich():
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('LOADED %s' % sorted("
        "m for m in ('httpx', 'rich') if m in sys.modules)))\n"
        f"sys.argv = ['sse-tool', 'normalize', {str(FIXTURES / 'openai-chat/openai-text-usage.sse')!r}]\n"
        "from sse_tool.cli import main\n"
        "main()\n"
    )
    p = subprocess.run([SSE_TOOL[0], "-c", probe], capture_output=True, env=clean_env(), timeout=WAIT)
    assert p.returncode == 0 and b"LOADED []" in p.stderr
