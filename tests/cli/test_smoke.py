import platform
import subprocess
import sys
from importlib import metadata

import pytest

import sse_tool
from sse_tool.cli import REPORTED

from ..support import SSE_TOOL, clean_env


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, *args], capture_output=True, text=True, env=clean_env())


def test_version_runs_as_a_module():
    r = subprocess.run([sys.executable, "-m", "sse_tool", "--version"], capture_output=True)
    assert r.returncode == 0 and r.stdout.startswith(b"sse-tool ")


def test_the_version_is_the_package_version_and_the_installed_metadata():
    r = run("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"sse-tool {sse_tool.__version__}\n", "")
    assert metadata.version("sse-tool") == sse_tool.__version__


@pytest.mark.parametrize("args", [("--version", "-v"), ("-v", "--version"), ("--verbose", "--version")])
def test_version_with_v_adds_python_and_each_library_as_installed(args):
    r = run(*args)
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == f"sse-tool {sse_tool.__version__}"
    assert lines[1].startswith(f"Python {platform.python_version()} ({platform.python_implementation()}) on ")
    assert platform.system() in lines[1]
    expected = []
    for name in REPORTED:
        try:
            expected.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            expected.append(f"{name} not installed")
    assert lines[2:] == expected
    assert {"httpx", "rich", "typer"} <= {line.split()[0] for line in lines[2:]}


def test_v_before_a_command_is_a_usage_error_that_says_where_it_goes():
    r = run("-v", "frame")
    assert r.returncode == 2 and r.stdout == ""
    assert "-v/--verbose goes with --version" in r.stderr and "Traceback" not in r.stderr
