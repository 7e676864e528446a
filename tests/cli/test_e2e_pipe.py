"""The whole pipe, ``sse-tool fetch URL | frame | normalize | render``, as a user runs it.

Real processes joined by real pipes (bash with ``set -o pipefail``, or a Popen chain in
one process group for Ctrl-C), fetching recorded streams from a real HTTP server on
127.0.0.1. Every test checks each stage's exit code, what each said on stderr (one line at
most, never a traceback) and what reached the end of the pipe.
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import socket
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from ..support import EXPECTED, FIXTURES, SSE_TOOL, clean_env

WAIT = 60
TOOL = shlex.join(SSE_TOOL)
BY_FILE = {e["file"]: e for e in EXPECTED}
THINKING = "anthropic/thinking-signature.sse"


# -- a server of recordings -----------------------------------------------------------------

#: an Anthropic stream that never ends: one answer line per event, 20 ms apart
DRIP_HEAD = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
    b'"role":"assistant","model":"claude-test","content":[],"stop_reason":null,'
    b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
)


def drip_event(i: int) -> bytes:
    return (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"line %d\\n"}}\n\n' % i)


class _Handler(BaseHTTPRequestHandler):
    """``/rec/PATH?cut=N&mode=length|chunked``: a recording, maybe cut after N bytes
    (``length``: a Content-Length promising all of it, then the connection closes;
    ``chunked``: the body ends cleanly at the cut, as a proxy ending early would);
    ``/status/CODE``: an API error; ``/drip``: an endless stream."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            if url.path.startswith("/rec/"):
                self.recording(url.path[len("/rec/"):], query)
            elif url.path.startswith("/status/"):
                self.error(int(url.path.rsplit("/", 1)[1]))
            elif url.path == "/drip":
                self.drip()
        except OSError:  # the client went away
            pass

    def head(self, status: int = 200, length: int | None = None, kind: str = "text/event-stream") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def recording(self, path: str, query: dict) -> None:
        body = (FIXTURES / path).read_bytes()
        cut = int(query.get("cut", len(body)))
        if query.get("mode", "length") == "length":
            self.head(length=len(body))
            for i in range(0, cut, 1024):
                self.wfile.write(body[i:min(cut, i + 1024)])
                self.wfile.flush()
            if cut < len(body):
                self.connection.shutdown(socket.SHUT_WR)
        else:
            self.head()
            for i in range(0, cut, 1024):
                self.chunk(body[i:min(cut, i + 1024)])
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def error(self, status: int) -> None:
        body = b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}'
        self.head(status, length=len(body), kind="application/json")
        self.wfile.write(body)
        self.wfile.flush()

    def drip(self) -> None:
        self.head()
        self.chunk(DRIP_HEAD)
        i = 0
        while not self.server.stopping.is_set():
            self.chunk(drip_event(i))
            i += 1
            time.sleep(0.02)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.stopping = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.stopping.set()
    httpd.shutdown()
    httpd.server_close()


# -- running pipes --------------------------------------------------------------------------

@dataclass
class Run:
    status: int  # what ``set -o pipefail`` makes of the pipe
    codes: list[int]  # each stage's own exit code
    out: bytes  # what reached the end
    errs: list[str]  # each stage's stderr


def sh(*stages: str, stdin: Path | None = None, pipefail: bool = True) -> Run:
    """``stages`` (each an ``sse-tool`` command line, or a plain one after ``!``) joined
    by pipes in bash with pipefail (unless told not to); stdin from ``stdin`` when given."""
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for i, stage in enumerate(stages):
            command = stage[1:] if stage.startswith("!") else f"{TOOL} {stage}"
            parts.append(f"{command} 2>{tmp}/err{i}")
        script = ("set -o pipefail\n" if pipefail else "") + " | ".join(parts)
        if stdin is not None:
            script = script.replace(" 2>", f" <{shlex.quote(str(stdin))} 2>", 1)
        script += f'\necho "$? ${{PIPESTATUS[*]}}" > {tmp}/status\n'
        result = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=clean_env(), timeout=WAIT)
        status, *codes = map(int, Path(tmp, "status").read_text().split())
        errs = [Path(tmp, f"err{i}").read_text(errors="replace") for i in range(len(stages))]
    return Run(status, codes, result.stdout, errs)


@cache  # the same pipe on the same recording is asked for by more than one test
def four(url: str, frame: str = "", normalize: str = "", render: str = "") -> Run:
    return sh(f"fetch {shlex.quote(url)}", f"frame {frame}", f"normalize {normalize}", f"render {render}")


def assert_diagnostics_are_lines(run: Run) -> None:
    for err in run.errs:
        assert "Traceback" not in err
        lines = err.splitlines()
        assert len(lines) <= 1, err
        assert all(line.startswith("sse-tool ") for line in lines), err


def answer(path: str) -> bytes:
    text = BY_FILE[path]["answer_text"].encode()
    return text + b"\n" if text and not text.endswith(b"\n") else text


# -- complete, cut, error, HTTP error -------------------------------------------------------

COMPLETE = [THINKING, "openai-chat/openai-text-usage.sse", "openai-responses/responses-text.sse",
            "gemini/thought-summaries.sse", "gemini/json-array-no-alt-sse.json"]


@pytest.mark.parametrize("path", COMPLETE)
def test_a_complete_stream_of_each_provider_reaches_the_end_as_its_answer_and_exits_0(server, path):
    run = four(f"{server}/rec/{path}")
    assert run.codes == [0, 0, 0, 0] and run.status == 0
    assert run.out == answer(path)
    assert run.errs == ["", "", "", ""]


def _cut_inside_an_event() -> int:
    data = (FIXTURES / THINKING).read_bytes()
    return data.index(b"text_delta", data.index(b"text_delta") + 1) + 30


def _cut_between_events() -> int:
    data = (FIXTURES / THINKING).read_bytes()
    return data.index(b"\n\n", data.index(b"text_delta", data.index(b"text_delta") + 1)) + 2


CUTS = {
    # name: (cut, server mode, codes of fetch, frame, normalize, render)
    "inside-an-event": (_cut_inside_an_event(), "length", [3, 3, 3, 3]),
    "between-events": (_cut_between_events(), "length", [3, 3, 3, 3]),
    "between-events-body-ended-cleanly": (_cut_between_events(), "chunked", [0, 0, 3, 3]),
    # the connection closed before a body byte: a network failure, fetch's 7, which its
    # marker carries to the later stages (a file or another program would get nothing)
    "before-the-first-byte": (0, "length", [7, 7, 7, 7]),
}


@pytest.mark.parametrize("name", CUTS)
def test_a_cut_stream_gives_each_stage_its_code_and_pipefail_the_last_failure(server, name, tmp_path):
    cut, mode, codes = CUTS[name]
    run = four(f"{server}/rec/{THINKING}?cut={cut}&mode={mode}")
    assert run.codes == codes and run.status == [c for c in codes if c][-1]  # pipefail: the last failure
    assert_diagnostics_are_lines(run)
    full = answer(THINKING)
    if cut:
        assert run.out and full.startswith(run.out) and run.out != full
        # said once, by the last stage: the ones before pass it on in-band, quietly, so
        # that nothing is written over render's view
        assert run.errs[:3] == ["", "", ""] and "truncated" in run.errs[3]
        # what reached the end is what render makes of the same bytes read from a file
        part = tmp_path / "part.sse"
        part.write_bytes((FIXTURES / THINKING).read_bytes()[:cut])
        direct = sh("render", stdin=part)
        assert (direct.out, direct.status) == (run.out, run.status)
    else:
        assert run.out == b"" and run.errs[:3] == ["", "", ""]
        assert "failed (exit 7): fetch: connection closed before the first byte" in run.errs[3]


@pytest.mark.parametrize("path", ["openai-chat/groq-error-event.sse",
                                  "openai-responses/responses-error-insufficient-quota.sse"])
def test_an_error_event_makes_normalize_and_render_exit_4(server, path):
    run = four(f"{server}/rec/{path}")
    assert run.codes == [0, 0, 4, 4] and run.status == 4
    assert_diagnostics_are_lines(run)
    assert run.errs[:3] == ["", "", ""] and "provider error" in run.errs[3]
    assert run.out == answer(path)


def test_an_http_429_is_carried_to_the_last_stage_which_exits_6_with_fetch_s_message(server):
    # fetch's marker carries the failure before the body to the later stages: they pass its
    # code on, the last one says it; nothing reaches the screen.
    run = four(f"{server}/status/429")
    assert run.codes == [6, 6, 6, 6] and run.status == 6
    assert run.out == b""
    assert_diagnostics_are_lines(run)
    assert run.errs[:3] == ["", "", ""]
    assert "failed (exit 6): fetch: HTTP 429" in run.errs[3]
    without = sh(f"fetch {server}/status/429", "frame", "normalize", "render", pipefail=False)
    assert without.status == 6


def test_an_http_429_leaves_a_file_empty_as_curl_does(server, tmp_path):
    # Only a later stage of ours reads the marker: a file (or jq) gets nothing.
    target = tmp_path / "out.sse"
    run = sh(f"fetch {server}/status/429 >{target}")
    assert run.status == 6 and target.read_bytes() == b""
    assert "429" in run.errs[0]
    piped = sh(f"fetch {server}/status/429", "!cat")
    assert piped.out == b"" and piped.codes == [6, 0]


@pytest.mark.parametrize("stage", ["fetch", "replay", "frame", "normalize"])
def test_a_usage_error_early_in_a_pipe_ends_it_with_2_and_says_why_once(stage):
    # A typo must not read as a cut stream (3) to a script deciding whether to retry.
    run = sh(f"{stage} --bogus-option", "render")
    assert run.codes == [2, 2] and run.status == 2 and run.out == b""
    assert "no such option: --bogus-option" in run.errs[0]
    assert f"failed (exit 2): {stage}: no such option: --bogus-option" in run.errs[1]
    plain = sh(f"{stage} --bogus-option", "!cat")  # another program gets nothing
    assert plain.codes == [2, 0] and plain.out == b""


# -- the same answer whichever way the input comes -----------------------------------------

SAME = [THINKING, "gemini/json-array-no-alt-sse.json", "anthropic/thinking-signature.cut-mid-frame.sse"]


def _ways(url: str, path: Path, kind: str) -> dict[str, Run]:
    f = f"--from {kind}"
    ways = {
        "render": lambda: sh("render", stdin=path),
        "frame|render": lambda: sh("frame", "render", stdin=path),
        "normalize|render": lambda: sh("normalize", "render", stdin=path),
        "fetch|frame|normalize|render": lambda: four(url),
        "render --from": lambda: sh(f"render {f}", stdin=path),
        "frame --from|render --from": lambda: sh(f"frame {f}", "render --from events", stdin=path),
        "normalize --from|render --from": lambda: sh(f"normalize {f}", "render --from records", stdin=path),
        "four --from": lambda: four(url, f, "--from events", "--from records"),
    }
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(way) for name, way in ways.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("path", SAME)
def test_render_on_the_file_and_every_shorter_pipe_give_the_same_output_and_code(server, path):
    runs = _ways(f"{server}/rec/{path}", FIXTURES / path, BY_FILE[path]["framing"])
    first = runs["render"]
    assert first.out == answer(path) or BY_FILE[path]["status"] != "complete"
    for name, run in runs.items():
        assert (run.out, run.status, run.codes[-1]) == (first.out, first.status, first.codes[-1]), name
        assert_diagnostics_are_lines(run)


def test_a_cut_after_the_terminal_event_is_truncated_whichever_stages_read_it(tmp_path):
    # frame knows the input ended inside an event; its cut marker tells the later stages.
    path = tmp_path / "cut-after-stop.sse"
    path.write_bytes((FIXTURES / THINKING).read_bytes() + b'event: ping\ndata: {"type": "pi')
    runs = {" | ".join(stages): sh(*stages, stdin=path) for stages in [
        ("render",), ("frame", "render"), ("normalize", "render"), ("frame", "normalize", "render"),
        ("frame", "normalize"), ("normalize",)]}
    for name, run in runs.items():
        assert run.status == 3 and run.codes[-1] == 3, name
        assert_diagnostics_are_lines(run)
    assert runs["frame | render"].out == runs["render"].out == runs["frame | normalize | render"].out
    assert runs["frame | normalize"].out == runs["normalize"].out


# -- Ctrl-C and a reader that leaves ---------------------------------------------------------

STAGES = ["fetch", "frame", "normalize", "render"]


def chain(url: str, stages: int) -> tuple[list[subprocess.Popen], list]:
    """The first ``stages`` stages of the pipe on the endless stream, in one new process
    group (as a shell puts a pipeline); each stage's stderr in its own file."""
    procs, errs = [], []
    upstream = None
    for name in STAGES[:stages]:
        args = [*SSE_TOOL, name] + ([url] if name == "fetch" else []) + (
            ["--interval", "0"] if name == "render" else [])
        err = tempfile.TemporaryFile()
        group = procs[0].pid if procs else 0
        # setpgid in the child, as Popen(process_group=) does from Python 3.11 on
        proc = subprocess.Popen(args, stdin=upstream or subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err, env=clean_env(), preexec_fn=partial(os.setpgid, 0, group))
        if upstream is not None:
            upstream.close()
        upstream = proc.stdout
        procs.append(proc)
        errs.append(err)
    return procs, errs


def wait_for_output(stream) -> bytes:
    ready, _, _ = select.select([stream], [], [], WAIT)
    assert ready, "nothing reached the end of the pipe"
    return os.read(stream.fileno(), 65536)


def finish(procs, errs) -> tuple[list[int], list[str]]:
    tail = procs[-1].stdout
    while True:  # drain what is left, so no stage blocks on a full pipe
        ready, _, _ = select.select([tail], [], [], WAIT)
        if not ready or not os.read(tail.fileno(), 65536):
            break
    codes = [p.wait(WAIT) for p in procs]
    texts = []
    for err in errs:
        err.seek(0)
        texts.append(err.read().decode(errors="replace"))
        err.close()
    tail.close()
    return codes, texts


def _kill(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("stages", [1, 2, 3, 4], ids=lambda n: "|".join(STAGES[:n]))
def test_ctrl_c_to_the_process_group_while_streaming_exits_130_quietly(server, stages):
    procs, errs = chain(f"{server}/drip", stages)
    try:
        wait_for_output(procs[-1].stdout)  # every stage is in its read loop
        os.killpg(procs[0].pid, signal.SIGINT)
        codes, texts = finish(procs, errs)
    finally:
        _kill(procs)
    assert codes[-1] == 130
    # a stage upstream may find its reader gone before its own SIGINT is handled
    assert all(code in (130, 141) for code in codes), codes
    assert texts == [""] * stages


#: what makes each stage write at once: an event; for normalize and render an answer's delta
FIRST_OUTPUT = {
    "frame": b"data: x\n\n",
    "normalize": b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                 b'"delta":{"type":"text_delta","text":"Hi"}}\n\n',
    "render": b'{"type":"delta","channel":"answer","text":"Hi. "}\n',
}


@pytest.mark.parametrize("stage", sorted(FIRST_OUTPUT))
def test_ctrl_c_after_the_reader_has_gone_exits_130_quietly(stage):
    # The stage is interrupted in its read loop; its failure marker then meets a closed
    # pipe, and what stays in stdout's buffer must not fail the interpreter's last flush
    # (Python then exits 120).
    proc = subprocess.Popen([*SSE_TOOL, stage], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    try:
        proc.stdin.write(FIRST_OUTPUT[stage])
        proc.stdin.flush()
        assert wait_for_output(proc.stdout)  # past start-up, back in its read loop
        proc.stdout.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(WAIT) == 130
        assert proc.stderr.read() == b""
    finally:
        _kill([proc])
        proc.stdin.close()
        proc.stderr.close()


@pytest.mark.parametrize("stage", range(4), ids=STAGES)
def test_ctrl_c_to_one_stage_of_the_four_ends_it_130_and_the_others_follow(server, stage):
    procs, errs = chain(f"{server}/drip", 4)
    try:
        seen = wait_for_output(procs[-1].stdout)
        procs[stage].send_signal(signal.SIGINT)
        codes, texts = finish(procs, errs)
    finally:
        _kill(procs)
    assert seen.startswith(b"line 0\n")
    assert codes[stage] == 130 and texts[stage] == ""
    # upstream stages find their reader gone; downstream ones read its failure marker and
    # exit with its code, quietly as it did
    assert all(code == 141 for code in codes[:stage]), codes
    assert codes[stage + 1:] == [130] * (3 - stage), codes
    assert texts[stage + 1:] == [""] * (3 - stage), texts
    for text in texts:
        assert "Traceback" not in text and len(text.splitlines()) <= 1, text


@pytest.mark.parametrize("stages", [1, 2, 3, 4], ids=lambda n: "|".join(STAGES[:n]))
def test_head_1_after_each_stage_ends_every_stage_quietly(server, stages):
    commands = [f"fetch {server}/drip", "frame", "normalize", "render --interval 0"][:stages]
    run = sh(*commands, "!head -1")
    assert run.codes[-1] == 0
    assert all(code in (0, 141) for code in run.codes[:-1]), run.codes
    assert run.errs == [""] * (stages + 1)
    first = {1: b"event: message_start\n", 2: b'{"event":"message_start"', 3: b'{"type":"meta"',
             4: b"line 0\n"}[stages]
    assert run.out.startswith(first) and run.out.count(b"\n") == 1
