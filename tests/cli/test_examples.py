"""Every example in the README, the man pages and ``--help`` runs as printed.

Examples are read from the docs themselves: the README's indented and ``sh`` blocks
(``$ command`` followed by what it prints, or bare commands), the man pages' EXAMPLES,
each subcommand's ``Examples:``. Each runs in bash (pipefail) in a folder that holds
samples/ and tests/fixtures/, plus the files examples name as stand-ins (``x.sse``,
``hi.rec``, ``captures/``: real samples and recordings made here from a local server).
An example fails if it is a usage error (2), an internal error (1), a command not found
(127), prints a traceback or names a missing file, or if the lines the README shows under
it are not printed, in order (``...`` standing for any text); ``echo $?`` with a
``# N`` comment must print N.

What cannot run here is left out by a rule in NOT_HERE, each with its reason (the network
above all); an example no rule covers must run. An example that reads from the local
server (``127.0.0.1:8000``) runs against a real ``sse-tool serve`` started as the last
``sse-tool serve`` example before it in the same file says (on a free port), and its
request must succeed (an HTTP error, 6, a network failure, 7, or a timeout, 8, fail it).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import typer

from sse_tool.cli import COMMANDS, build

from ..file_server import FileServer
from ..serve_process import ServeProcess
from ..support import FIXTURES, ROOT, SAMPLES, SSE_TOOL, clean_env

class Example(NamedTuple):
    where: str  # file:line
    command: str
    shown: tuple[str, ...] = ()  # what the README prints under it
    served: tuple[str, ...] = ()  # the arguments of the serve it reads from


#: why an example cannot run here: the first rule that matches says
NOT_HERE = [
    (r"\bfetch\b[^|]*(--provider|https?://(?!127\.0\.0\.1|localhost)|\bURL\b|\$URL|\.\.\.)|(^|\|\s*)curl\b",
     "asks a provider or a host on the network"),
    (r"--upstream", "relays to a provider on the network"),
    (r"pip install|\bpytest\b|bench/", "installs, or runs a test suite or the benchmarks"),
    (r"(^|\s)sse-tool serve\b", "starts a server that runs until stopped (tests/serve/)"),
    (r"127\.0\.0\.1:8080", "reads from a server of your own"),
    (r"--install-completion|> ~/", "writes to your home directory"),
    (r"(^|;\s*)man ", "reads the installed man pages (.ci/man checks them)"),
    (r"\btts\b", "speaks the text (a text-to-speech program)"),
]


def _roff(text: str) -> str:
    for escape, char in ((r"\-", "-"), (r"\(aq", "'"), (r"\(dq", '"'), (r"\e", "\\"), (r"\&", "")):
        text = text.replace(escape, char)
    return text


#: how a command line starts (other lines of a block are what a command printed)
COMMAND = re.compile(r"(\$ )?([A-Z_]+=\S* )*(sse-tool|echo|printf|curl|cat|python3|\.venv/|case|jq)\b")


def _commands(lines: list[tuple[int, str]], where: str, script: bool = False) -> list[Example]:
    """Commands of one block: lines continued by a trailing backslash or pipe are joined;
    with ``$`` prompts, the lines up to the next prompt are what the command prints. A
    block that does not start with a command shows output only; a ``script`` block (a
    fenced ``sh`` one) runs as a whole."""
    lines = [(n, t) for n, t in lines if t.strip() and not t.lstrip().startswith("#")]
    if not lines or not COMMAND.match(lines[0][1]):
        return []
    if script and any(re.match(r"[A-Za-z_]+=\S*\s*$|case \$\?", t) for _, t in lines):
        # a variable set, or an exit status read, for the lines after: one script
        return [Example(f"{where}:{lines[0][0]}", "\n".join(t for _, t in lines))]
    prompted = lines[0][1].startswith("$ ")
    out: list[Example] = []
    pending: list[str] = []
    for number, text in lines:
        if prompted and not text.startswith("$ ") and not pending:
            if out:
                out[-1] = out[-1]._replace(shown=(*out[-1].shown, text))
            continue
        if prompted and text == "$ echo $?" and out:  # the exit status of the last
            out[-1] = out[-1]._replace(command=f"{out[-1].command}\necho $?")
            continue
        if not pending and text.lstrip().startswith("|") and out:  # continues the last
            out[-1] = out[-1]._replace(command=f"{out[-1].command}\n{text}")
            continue
        if not pending:
            start = number
            text = text[2:] if prompted else text
        pending.append(text)
        if text.endswith("\\") or text.rstrip().endswith("|"):
            continue
        out.append(Example(f"{where}:{start}", "\n".join(pending)))
        pending = []
    return out


def readme_examples() -> list[Example]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").split("\n")
    blocks: list[list[tuple[int, str]]] = []
    fence = None
    current: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
            if fence == "sh":
                current = []
                blocks.append((True, current))
            continue
        if fence is not None:
            if fence == "sh":
                current.append((number, line))
            continue
        if line.startswith("    ") and line.strip():
            # a blank line inside an indented block ends it only before a command
            if not blocks or blocks[-1][0] or not current or current[-1][0] < number - 1 and (
                    current[-1][0] < number - 2 or COMMAND.match(line[4:])):
                current = []
                blocks.append((False, current))
            current.append((number, line[4:]))
    examples = []
    for script, block in blocks:
        examples += _commands(block, "README.md", script)
    return examples


def man_examples() -> list[Example]:
    examples = []
    for page in sorted((ROOT / "man").glob("*.1")):
        lines = page.read_text(encoding="utf-8").split("\n")
        section, block = None, None
        for number, line in enumerate(lines, 1):
            if line.startswith(".SH"):
                section = line[3:].strip().strip('"')
            elif section == "EXAMPLES" and line.startswith(".EX"):
                block = []
            elif block is not None and line.startswith(".EE"):
                examples += _commands(block, f"man/{page.name}")
                block = None
            elif block is not None:
                block.append((number, _roff(line)))
    return examples


def help_examples() -> list[Example]:
    app = typer.main.get_command(build())
    examples = []
    for name in [None, *COMMANDS]:
        command = app if name is None else app.commands[name]
        epilog = command.epilog or ""
        block = epilog.split("Examples:\n", 1)[1].split("\n\n", 1)[0] if "Examples:" in epilog else ""
        where = f"sse-tool {name} --help" if name else "sse-tool --help"
        lines = [(number, line.strip()) for number, line in enumerate(block.split("\n"), 1) if line.strip()]
        examples += _commands(lines, where)
    return examples


#: the local server's address in the docs, and an example that starts it
LOCAL = "http://127.0.0.1:8000"
_SERVE = re.compile(r"(?:[A-Z_]+=\S* )*sse-tool serve (.+)")


def with_servers(examples: list[Example]) -> list[Example]:
    """Each example that reads from ``LOCAL`` with the arguments of the ``sse-tool serve``
    example last before it in the same file."""
    started: dict[str, tuple[str, ...]] = {}
    out = []
    for example in examples:
        source = example.where.split(":")[0]
        if m := _SERVE.fullmatch(example.command):
            started[source] = tuple(a for a in shlex.split(m.group(1), comments=True) if a != "&")
        elif LOCAL in example.command and source in started:
            example = example._replace(served=started[source])
        out.append(example)
    return out


EXAMPLES = with_servers(readme_examples() + man_examples() + help_examples())


def why_not(example: Example) -> str | None:
    for pattern, reason in NOT_HERE:
        if re.search(pattern, example.command, flags=re.M):
            return reason
    if LOCAL in example.command and not example.served:
        return "reads from a server no example before it starts"
    return None


RUNNABLE = [e for e in EXAMPLES if why_not(e) is None]

#: names examples use for a stream or a recording of your own, and what stands in here
STREAMS = {"x.sse": "anthropic-thinking.sse", "capture.sse": "anthropic-truncated.sse",
           "recording.sse": "openai-chat-reasoning.sse", "stream.sse": "anthropic-thinking.sse",
           "bedrock.eventstream": "bedrock-converse-tool-reasoning.eventstream"}
RECORDINGS = {"hi.rec": "anthropic-thinking.sse", "why.rec": "openai-chat-reasoning.sse",
              "chat.rec": "gemini-thinking.sse", "recording.rec": "anthropic-truncated.sse",
              "o3-mini.rec": "openai-responses-refusal.sse"}
FOLDERS = {"captures": ["anthropic-thinking.sse", "anthropic-truncated.sse"],
           "recordings": ["hi.rec", "why.rec"], "ci": ["hi.rec", "chat.rec"]}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder like a checkout's, with the stand-ins; recordings made by a real fetch."""
    work = tmp_path_factory.mktemp("examples")
    shutil.copytree(SAMPLES, work / "samples")
    shutil.copytree(FIXTURES, work / "tests" / "fixtures")
    for name, sample in STREAMS.items():
        if not (work / name).exists():
            shutil.copy(SAMPLES / sample, work / name)
    server = FileServer(SAMPLES)
    try:
        for name, sample in RECORDINGS.items():
            subprocess.run([*SSE_TOOL, "fetch", "--record", str(work / name), f"{server.url}/{sample}"],
                           stdout=subprocess.DEVNULL, check=True, timeout=60, env=clean_env())
    finally:
        server.close()
    for folder, names in FOLDERS.items():
        (work / folder).mkdir()
        for name in names:
            source = work / name if (work / name).exists() else SAMPLES / name
            shutil.copy(source, work / folder / name)
    return work



def test_examples_are_found_in_every_source():
    sources = {e.where.split(":")[0].split(" ")[0] for e in EXAMPLES}
    assert {"README.md", "sse-tool"} <= sources
    assert {f"man/{p.name}" for p in (ROOT / "man").glob("*.1")} <= sources
    assert len(RUNNABLE) >= 40
    assert sum(1 for e in RUNNABLE if e.served) >= 5


def _matches(shown: tuple[str, ...], printed: list[str]) -> bool:
    """Each line shown is printed, in that order (an excerpt: lines may be left out between);
    ``...`` inside a line stands for any text, a line of ``...`` alone for lines left out."""
    rest = iter(printed)
    for line in shown:
        if line.strip() == "...":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in line.rstrip().split("...")))
        if not any(pattern.fullmatch(p) for p in rest):
            return False
    return True


@pytest.mark.parametrize("example", RUNNABLE, ids=lambda e: e.where)
def test_the_example_runs_as_printed(example, workdir):
    env = clean_env(PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
                    COLUMNS="200", NO_COLOR="1")
    if re.search(r"(^|\|\s*)jq\b", example.command, flags=re.M) and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    command = example.command
    server = ServeProcess(*example.served, cwd=workdir) if example.served else None
    try:
        if server is not None:
            command = command.replace(LOCAL, server.base)
        done = subprocess.run(["bash", "-c", "set -o pipefail\n" + command], cwd=workdir, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    finally:
        if server is not None:
            server.stop()
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    said = f"{example.where}: {example.command}\nexit {done.returncode}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
    assert done.returncode not in (1, 2, 126, 127), said
    assert "Traceback" not in err and "No such file" not in err and "not found" not in err, said
    printed = [line.rstrip() for line in out.rstrip("\n").split("\n")]
    code = re.search(r"echo \$\?.*#\s*(?:nothing,\s*)?(\d+)", example.command)
    if code:
        assert printed[-1] == code.group(1), said
    if example.served:  # the request itself must succeed: a path the server lacks is a 404 (6)
        assert done.returncode not in (6, 7, 8), said
    assert _matches(example.shown, printed), said

