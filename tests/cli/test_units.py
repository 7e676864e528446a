"""Durations and sizes: one reading for the options, serve's faults and inspect's --fail-on."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sse_tool.serve.faults import FaultError, parse_faults
from sse_tool.units import MAX_SECONDS, parse_duration, parse_size

from ..support import SAMPLES, SSE_TOOL, clean_env


@pytest.mark.parametrize(("text", "seconds"), [
    ("40ms", 0.04), ("2s", 2.0), ("1.5", 1.5), ("1m", 60.0), ("2h", 7200.0), (" 3 S ", 3.0), ("0", 0.0),
])
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "size"), [
    ("65536", 65536), ("64k", 65536), ("16MiB", 16 * 2**20), ("1G", 2**30), ("2 kb", 2048),
])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "xx", "-1s", "1d", "1e3", "s"])
def test_not_a_duration_is_a_value_error_that_names_the_value(text):
    with pytest.raises(ValueError, match=f"^not a duration: {text!r} \\(try 40ms, 2s or 1m\\)$"):
        parse_duration(text)


def test_a_duration_past_the_clocks_is_refused():
    assert parse_duration(f"{MAX_SECONDS:.0f}") == MAX_SECONDS
    with pytest.raises(ValueError, match="^duration too long: '100000001'"):
        parse_duration("100000001")


@pytest.mark.parametrize("text", ["", "12q", "1.5M", "-1", "MiB"])
def test_not_a_size(text):
    with pytest.raises(ValueError, match=f"^not a size: {text!r} \\(try 16MiB\\)$"):
        parse_size(text)


def test_faults_read_durations_the_same_way():
    assert parse_faults([("first_byte_delay", "250ms")]).first_byte_delay == pytest.approx(0.25)
    with pytest.raises(FaultError, match="^chunk_delay=soon: not a duration: 'soon'"):
        parse_faults([("chunk_delay", "soon")])
    with pytest.raises(FaultError, match="^keepalive=99999999999: duration too long"):
        parse_faults([("keepalive", "99999999999")])


def test_the_serve_core_does_not_load_the_command_line():
    code = "import sys, sse_tool.serve.faults; print(sorted(m for m in ('typer', 'click', 'sse_tool.cli') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=clean_env())
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("args", "message"), [
    (["render", "--interval", "xx"],
     "sse-tool render: invalid value for '--interval': not a duration: 'xx' (try 40ms, 2s or 1m)"),
    (["frame", "--max-event-size", "12q"],
     "sse-tool frame: invalid value for '--max-event-size': not a size: '12q' (try 16MiB)"),
    (["inspect", "--fail-on", "stall=xx", str(SAMPLES / "anthropic-thinking.sse")],
     "sse-tool inspect: --fail-on stall=xx: not a duration"),
])
def test_a_bad_value_is_a_usage_error_in_one_line(args, message):
    run = subprocess.run(SSE_TOOL + args, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=clean_env())
    assert run.returncode == 2
    assert len(run.stderr.splitlines()) == 1 and message in run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
