"""fetch as a real process: pipe buffering, Ctrl-C, a reader that goes away, imports.

The server observes each disconnect itself, so these tests prove the upstream connection
was closed, not just that the process ended. Waits are bounds for a hung test, not timings.
"""

from __future__ import annotations

import os
import shlex
import select
import signal
import subprocess

import pytest

from ..http_server import LocalServer, event, events
from ..support import SSE_TOOL, clean_env

WAIT = 20


@pytest.fixture(scope="module")
def server():
    s = LocalServer()
    yield s
    s.close()


def start(*args):
    return subprocess.Popen([*SSE_TOOL, "fetch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())


def read_some(p) -> bytes:
    ready, _, _ = select.select([p.stdout], [], [], WAIT)
    return os.read(p.stdout.fileno(), 65536) if ready else b""


def test_bytes_reach_the_reader_while_the_server_is_still_sending(server):
    p = start(server.url("/gate?key=g1"))
    first = read_some(p)
    # The server is held at the gate: what arrived was flushed, not buffered until the end.
    assert first == event(0) and not server.gates["g1"].is_set()
    server.gates["g1"].set()
    rest, err = p.communicate(timeout=WAIT)
    assert p.returncode == 0, err
    assert first + rest == events(2)


def test_ctrl_c_mid_body_closes_the_upstream_and_exits_130(server):
    p = start(server.url("/stall?key=i1"))
    assert read_some(p) == event(0)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=WAIT)
    assert p.returncode == 130 and b"Traceback" not in err
    assert server.disconnected["i1"].wait(WAIT)


def test_ctrl_c_before_the_response_closes_the_upstream_and_exits_130(server):
    p = start(server.url("/silent?key=i2"))
    # wait until the request is in: the server counts it when it starts handling
    for _ in range(WAIT * 20):
        if any("key=i2" in r.path for r in server.requests):
            break
        select.select([], [], [], 0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=WAIT)
    assert p.returncode == 130 and b"Traceback" not in err
    assert server.disconnected["i2"].wait(WAIT)


def test_a_reader_that_stops_early_closes_the_upstream_quietly(server):
    cmd = shlex.join([*SSE_TOOL, "fetch", server.url("/drip?key=h1&delay=0.01")])
    r = subprocess.run(["bash", "-c", f"{cmd} | head -c 10; echo \" ${{PIPESTATUS[0]}}\""],
                       capture_output=True, env=clean_env(), timeout=WAIT)
    assert r.stdout == event(0)[:10] + b" 141\n"
    assert r.stderr == b""
    assert server.disconnected["h1"].wait(WAIT)


def test_fetch_imports_httpx_only_for_a_request_and_never_its_cli(server):
    # httpx._main is httpx's own command line: click, rich and pygments
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('LOADED %s' % sorted("
        "m for m in ('httpx', 'httpx._main', 'click', 'rich') if m in sys.modules)))\n"
        "sys.argv = ['sse-tool'] + sys.argv[1:]\n"
        "from sse_tool.cli import main\n"
        "main()\n"
    )
    r = subprocess.run([SSE_TOOL[0], "-c", probe, "fetch", server.url("/sse?n=1")],
                       capture_output=True, env=clean_env(), timeout=WAIT)
    assert r.returncode == 0 and b"LOADED ['httpx']" in r.stderr
    # A usage error is found before any request is built: httpx never loads.
    r = subprocess.run([SSE_TOOL[0], "-c", probe, "fetch"], stdin=subprocess.DEVNULL,
                       capture_output=True, env=clean_env(), timeout=WAIT)
    assert r.returncode == 2 and b"LOADED []" in r.stderr
    r = subprocess.run([SSE_TOOL[0], "-c", probe, "frame"], input=b"data: x\n\n",
                       capture_output=True, env=clean_env(), timeout=WAIT)
    assert r.returncode == 0 and b"LOADED []" in r.stderr


def test_hiding_httpx_cli_during_the_import_leaves_it_importable_afterwards():
    code = ("import sys\n"
            "from sse_tool.fetch.lazy import load_httpx as _httpx\n"
            "_httpx()\n"
            "assert 'httpx' in sys.modules and 'httpx._main' not in sys.modules\n"
            "try:\n"
            "    import httpx._main\n"
            "except ImportError as exc:  # click may be missing, but not the sentinel\n"
            "    assert 'halted' not in str(exc), exc\n")
    r = subprocess.run([SSE_TOOL[0], "-c", code], capture_output=True, env=clean_env(), timeout=WAIT)
    assert r.returncode == 0, r.stderr
