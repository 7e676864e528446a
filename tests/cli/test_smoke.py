import subprocess
import sys


def test_version_runs_as_a_module():
    r = subprocess.run([sys.executable, "-m", "sse_tool", "--version"], capture_output=True)
    assert r.returncode == 0 and r.stdout.startswith(b"sse-tool ")
