"""The ``sse-tool`` command as the benches run it: as an installed copy would run.

pip compiles a package's modules to bytecode when it installs it. An editable install
run with PYTHONDONTWRITEBYTECODE set (as some machines and containers set it) would
instead compile every module of sse_tool from source in every process, which no
installed copy does; so the sources are compiled once here, before anything is timed.
"""

from __future__ import annotations

import compileall
import sys
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sse_tool"


@cache
def sse_tool_command() -> tuple[str, ...]:
    compileall.compile_dir(PACKAGE, quiet=1)
    script = Path(sys.executable).parent / "sse-tool"
    return (str(script),) if script.exists() else (sys.executable, "-m", "sse_tool")
