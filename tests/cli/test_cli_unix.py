"""What a Unix user expects of every command, checked on real processes.

``--help`` is plain text with examples, exit status and environment; shell completion
works for bash, zsh and fish; diagnostics carry no colour and render's colour follows
``--color``, ``NO_COLOR``, ``FORCE_COLOR`` and ``TERM``; output is the same UTF-8 bytes
whatever the locale; an internal error is one line, with the traceback only under
``--debug``. (render's colour on a terminal is covered by test_pty_render.py.)
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sse_tool.cli import COMMANDS, _edge

from ..serve_process import ServeProcess
from ..support import SAMPLES, SAMPLES_EXPECTED, SSE_TOOL, clean_env, failed_output

ESC = b"\x1b"
SAMPLE = SAMPLES / "anthropic-thinking.sse"  # accents, guillemets and a rocket
#: what render writes for it into a pipe: the answer, ending with a newline
SAMPLE_ANSWER = next(e["answer_text"] for e in SAMPLES_EXPECTED if e["file"] == SAMPLE.name).encode() + b"\n"
#: the sse-tool script next to this interpreter: what a shell's completion calls
SCRIPT = Path(sys.executable).with_name("sse-tool")


def run(*args: str, env: dict | None = None, input: bytes = b"", timeout: float = 20):
    return subprocess.run([*SSE_TOOL, *args], input=input, capture_output=True,
                          env=env or clean_env(), timeout=timeout)


def locale_env(kind: str) -> dict:
    """``utf8``: a UTF-8 locale. ``c``: LC_ALL=C LANG=C (Python then switches to UTF-8
    itself). ``ascii``: the C locale with that switch turned off, so Python's own text
    streams really are ASCII: only bytes written as bytes get through."""
    env = {k: v for k, v in clean_env().items()
           if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE", "PYTHONIOENCODING", "PYTHONUTF8")}
    if kind == "utf8":
        env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8")
    else:
        env.update(LC_ALL="C", LANG="C")
    if kind == "ascii":
        env.update(PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    return env


def one_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8")  # whatever was written must be valid UTF-8 (or ASCII)
    assert "Traceback" not in text
    assert text.count("\n") == 1 and text.endswith("\n"), text
    return text


# --- help ------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_into_a_pipe_is_plain_text_with_examples_exit_status_and_environment(command):
    env = clean_env(FORCE_COLOR="1", TERM="xterm-256color")  # even when colour is forced
    done = run(*command.split(), "--help", env=env)
    assert done.returncode == 0 and done.stderr == b""
    assert ESC not in done.stdout
    text = done.stdout.decode()
    for heading in ("Examples:", "Exit status", "Environment"):
        assert heading in text, heading
    assert "SSE_TOOL_DEBUG" in text


def test_a_usage_error_is_plain_text_and_exits_2_even_with_colour_forced():
    done = run("frame", "--no-such-option", env=clean_env(FORCE_COLOR="1", TERM="xterm-256color"))
    assert done.returncode == 2
    assert ESC not in done.stderr
    assert done.stderr == b"sse-tool frame: no such option: --no-such-option (see sse-tool frame --help)\n"


@pytest.mark.parametrize("argv, line", [
    (["bogus"], "sse-tool: no such command 'bogus' (see sse-tool --help)"),
    (["--bogus"], "sse-tool: no such option: --bogus"),
    (["fetch", "--max-time", "soon", "http://127.0.0.1:9/"], "sse-tool fetch: invalid value for '--max-time'"),
    (["render", "--color", "pink"], "sse-tool render: invalid value for '--color'"),
    (["normalize", "a", "--from", "x"], "sse-tool normalize: invalid value for '--from'"),
    (["inspect", "--sort"], "sse-tool inspect: option '--sort' requires an argument"),
    (["help", "fram"], "sse-tool help: invalid value for COMMAND: no such command: fram"),
])
def test_every_usage_error_is_one_line_naming_the_stage_and_where_to_look(argv, line):
    done = run(*argv)
    assert done.returncode == 2, done.stderr
    err = done.stderr.decode()
    assert err.count("\n") == 1 and err.startswith(line) and "(see sse-tool" in err, err
    assert done.stdout == b""


def test_the_command_alone_shows_its_help_and_exits_2():
    done = run()
    assert done.returncode == 2 and done.stderr.startswith(b"Usage: sse-tool [OPTIONS] COMMAND")


# --- shell completion ------------------------------------------------------------------

def complete(shell: str, **variables: str) -> subprocess.CompletedProcess:
    env = clean_env(_SSE_TOOL_COMPLETE=f"complete_{shell}", **variables)
    return subprocess.run([*SSE_TOOL], capture_output=True, text=True, env=env, timeout=20)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_completion_script_of_each_shell_calls_back_into_sse_tool(shell):
    done = subprocess.run([*SSE_TOOL], capture_output=True, text=True, timeout=20,
                          env=clean_env(_SSE_TOOL_COMPLETE=f"source_{shell}"))
    assert done.returncode == 0
    assert f"_SSE_TOOL_COMPLETE=complete_{shell}" in done.stdout and "sse-tool" in done.stdout


def test_bash_completes_commands_options_and_option_values():
    def words(line: str) -> list[str]:
        parts = line.split(" ")
        return complete("bash", COMP_WORDS=line, COMP_CWORD=str(len(parts) - 1)).stdout.split()

    assert words("sse-tool fr") == ["frame"]
    assert set(COMMANDS) <= set(words("sse-tool "))
    assert "--max-event-size" in words("sse-tool normalize --max")
    assert words("sse-tool render --color ") == ["auto", "always", "never"]


def test_zsh_completes_the_values_of_an_option():
    out = complete("zsh", _TYPER_COMPLETE_ARGS="sse-tool normalize --provider ").stdout
    assert out.startswith("_arguments")
    for provider in ("anthropic", "openai", "gemini", "ollama"):
        assert f'"{provider}"' in out


def test_fish_completes_commands_with_their_description():
    done = complete("fish", _TYPER_COMPLETE_ARGS="sse-tool norm", _TYPER_COMPLETE_FISH_ACTION="get-args")
    assert done.stdout.startswith("normalize\t")
    is_args = complete("fish", _TYPER_COMPLETE_ARGS="sse-tool norm", _TYPER_COMPLETE_FISH_ACTION="is-args")
    assert is_args.returncode == 0


def _real_shell(shell: str) -> str:
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    if not SCRIPT.exists():
        pytest.skip("no sse-tool script next to the interpreter")
    return shell


def _shell_env() -> dict:
    return clean_env(PATH=f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}")


def test_bash_itself_completes_with_the_installed_script():
    _real_shell("bash")
    script = ('eval "$(_SSE_TOOL_COMPLETE=source_bash sse-tool)"; '
              'COMP_WORDS=(sse-tool render --rel); COMP_CWORD=2; _sse_tool_completion sse-tool; '
              'echo "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=_shell_env(), timeout=20)
    assert done.stdout.split() == ["--release"]


def test_show_completion_detects_bash_as_the_shell_it_runs_in():
    _real_shell("bash")
    # A lone command would be exec'd by bash in its own place, leaving the shell to be found
    # among the test runner's ancestors (none when it runs detached): keep bash the parent.
    done = subprocess.run(["bash", "-c", "sse-tool --show-completion; exit $?"], capture_output=True,
                          text=True, env=_shell_env(), timeout=20)
    assert done.returncode == 0 and "complete -o default -F _sse_tool_completion sse-tool" in done.stdout


def test_zsh_itself_loads_the_completion_function():
    _real_shell("zsh")
    script = ('autoload -U compinit && compinit -u -D; '
              'eval "$(_SSE_TOOL_COMPLETE=source_zsh sse-tool)"; whence -w _sse_tool_completion')
    done = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, env=_shell_env(), timeout=20)
    assert "_sse_tool_completion: function" in done.stdout, done.stderr


def test_fish_itself_completes_with_the_installed_script():
    _real_shell("fish")
    script = '_SSE_TOOL_COMPLETE=source_fish sse-tool | source; complete -C "sse-tool norm"'
    done = subprocess.run(["fish", "--no-config", "-c", script], capture_output=True, text=True,
                          env=_shell_env(), timeout=20)
    assert done.stdout.startswith("normalize\t"), done.stderr


# --- colour ----------------------------------------------------------------------------

def on_a_terminal(*args: str, input: bytes = b"", **variables: str) -> tuple[int, bytes]:
    """Run with stdout and stderr on a pty; stdin a pipe. Returns (exit status, all output)."""
    master, slave = os.openpty()
    env = {k: v for k, v in clean_env(TERM="xterm-256color").items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(variables)
    proc = subprocess.Popen([*SSE_TOOL, *args], stdin=subprocess.PIPE, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    proc.stdin.write(input)
    proc.stdin.close()
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(20), out


COLOUR = re.compile(rb"\x1b\[[0-9;]*(?:3[0-9]|9[0-7])[;m]")
CUT = SAMPLES / "anthropic-truncated.sse"


@pytest.mark.parametrize("args, expected", [
    (["frame"], 5), (["normalize"], 5), (["replay", "/no/such/file"], 2),
    (["fetch", "http://127.0.0.1:9/"], 7), (["serve", "--host", "192.0.2.1"], 2),
])
def test_diagnostics_on_a_terminal_are_one_plain_line_even_with_colour_forced(args, expected):
    # (render on a terminal draws its own view, in colour: test_pty_render.py)
    code, out = on_a_terminal(*args, input=b"\x00\x01binary", FORCE_COLOR="1")
    assert code == expected
    assert ESC not in out
    # the one diagnostic line; frame and normalize also end their records with their failure
    lines = out.splitlines()
    assert lines[0].startswith(b"sse-tool " + args[0].encode() + b": ")
    assert lines[1:] == [] or args[0] in ("frame", "normalize") and len(lines) == 2, lines
    assert lines[1:] == [] or b'"exit":5' in lines[1] or b"sse-tool exit 5 frame" in lines[1]


def test_render_colour_forced_or_always_does_not_reach_a_pipe():
    for env, args in ((clean_env(FORCE_COLOR="1", TERM="xterm-256color"), []),
                      (clean_env(TERM="xterm-256color"), ["--color", "always"])):
        done = run("render", *args, str(SAMPLE), env=env)
        assert done.returncode == 0 and ESC not in done.stdout + done.stderr


def test_render_no_color_and_color_never_win_over_force_color_on_a_terminal():
    assert COLOUR.search(on_a_terminal("render", str(CUT), FORCE_COLOR="1")[1])
    assert not COLOUR.search(on_a_terminal("render", str(CUT), FORCE_COLOR="1", NO_COLOR="1")[1])
    assert not COLOUR.search(on_a_terminal("render", "--color", "never", str(CUT), FORCE_COLOR="1")[1])


def test_a_terminal_that_does_not_say_its_size_gets_the_live_view_at_80_by_24(monkeypatch):
    # a pseudo-terminal never sized is 0x0, which Python 3.10 passes on: read as 0 columns,
    # too narrow for the live view, it got the plain one (no colour: the test above failed)
    import shutil

    from sse_tool.cli import render as render_cli

    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a, **k: os.terminal_size((0, 0)))
    assert render_cli._measured() == (80, 24) and render_cli._size() == (80, 24)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a, **k: os.terminal_size((1, 5)))
    assert render_cli._measured() == (1, 5) and render_cli._size() == (render_cli.MIN_COLUMNS, 5)


def test_render_on_a_dumb_terminal_has_no_escape_even_with_color_always():
    code, out = on_a_terminal("render", "--color", "always", str(CUT), TERM="dumb", FORCE_COLOR="1")
    assert code == 3 and ESC not in out


# --- encoding: UTF-8 bytes whatever the locale -----------------------------------------

STAGES = [
    ["frame"], ["frame", "--json", "--offsets"], ["normalize"], ["normalize", "--aggregate"],
    ["render"], ["render", "--release", "sentence"], ["replay", "--speed", "0"],
]


@pytest.mark.parametrize("kind", ["c", "ascii"])
@pytest.mark.parametrize("stage", STAGES, ids=" ".join)
def test_every_stage_writes_the_same_utf8_bytes_under_the_c_locale(stage, kind):
    done = run(*stage, str(SAMPLE), env=locale_env(kind))
    assert done.returncode == 0, done.stderr
    assert "🚀".encode() in done.stdout
    done.stdout.decode("utf-8")  # valid
    assert done.stdout == in_utf8(tuple(stage))


@functools.cache
def in_utf8(stage: tuple[str, ...]) -> bytes:
    done = run(*stage, str(SAMPLE), env=locale_env("utf8"))
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("kind", ["c", "ascii"])
def test_the_whole_pipe_of_real_processes_is_the_same_under_the_c_locale(kind):
    def pipe(env):
        data = SAMPLE.read_bytes()
        for stage in (["frame"], ["normalize"], ["render"]):
            done = run(*stage, input=data, env=env)
            assert done.returncode == 0, done.stderr
            data = done.stdout
        return data

    assert pipe(locale_env(kind)) == pipe(locale_env("utf8")) == SAMPLE_ANSWER


@pytest.mark.parametrize("kind", ["c", "ascii"])
def test_reasoning_on_stderr_is_the_same_utf8_under_the_c_locale(kind):
    # (the reasoning went through Python's text stderr: under an ASCII or Latin-1 locale,
    # "cómo" came out as "c\\xf3mo" or a Latin-1 byte)
    done = run("render", "--reasoning", "show", str(SAMPLE), env=locale_env(kind))
    assert done.returncode == 0 and done.stdout == SAMPLE_ANSWER
    reasoning = next(e["reasoning_text"] for e in SAMPLES_EXPECTED if e["file"] == SAMPLE.name)
    assert reasoning.encode() in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("kind", ["c", "ascii"])
def test_non_ascii_messages_on_stderr_do_not_crash_under_the_c_locale(kind, tmp_path):
    env = locale_env(kind)
    error = (b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
             b'"message":"Sobrecargado: int\xc3\xa9ntalo m\xc3\xa1s tarde \xf0\x9f\x9a\x80"}}\n\n')
    done = run("normalize", env=env, input=SAMPLE.read_bytes().split(b"event: content_block_stop")[0] + error)
    assert done.returncode == 4
    assert "overloaded_error" in one_line(done.stderr)
    missing = str(tmp_path / "caf\u00e9-\U0001f680.sse")
    done = run("frame", missing, env=env)
    assert done.returncode == 2 and "No such file" in one_line(done.stderr)


@pytest.mark.parametrize("kind", ["c", "ascii"])
def test_serve_and_fetch_pass_the_bytes_unchanged_under_the_c_locale(kind, monkeypatch):
    for name in [k for k in os.environ if k.startswith("LC_")] + ["LANG", "PYTHONIOENCODING", "PYTHONUTF8"]:
        monkeypatch.delenv(name, raising=False)
    env = locale_env(kind)
    for name in ("LC_ALL", "LANG", "PYTHONUTF8", "PYTHONCOERCECLOCALE"):
        if name in env:
            monkeypatch.setenv(name, env[name])
    server = ServeProcess("--speed", "0", str(SAMPLE))  # started under the C locale too
    try:
        done = run("fetch", server.url("/anthropic-thinking"), env=env)
        assert done.returncode == 0 and done.stdout == SAMPLE.read_bytes()
        message = "Sobrecargado: int%C3%A9ntalo%20%F0%9F%9A%80"
        done = run("fetch", server.url(f"/anthropic-thinking?status=529&provider=anthropic&message={message}"),
                   env=env)
        assert done.returncode == 6 and failed_output(done.stdout, b"", 6)
        assert "529" in one_line(done.stderr)
    finally:
        assert server.stop() in (0, 130)
    assert "Traceback" not in server.log()


# --- internal errors: one line, the traceback with --debug -----------------------------

def _crash() -> None:
    raise RuntimeError("boom: \u00e9\U0001f680")


@pytest.mark.parametrize("debug", [False, True])
def test_run_stage_turns_a_bug_into_exit_1_with_one_line_or_the_traceback(debug, capsys, monkeypatch):
    import typer

    monkeypatch.setattr(_edge, "debug", debug)
    with pytest.raises(typer.Exit) as exit_:
        _edge.run_stage("frame", _crash)
    assert exit_.value.exit_code == 1
    err = capsys.readouterr().err
    last = "sse-tool frame: internal error: RuntimeError: boom: \u00e9\U0001f680 (rerun with --debug for details)\n"
    assert err.endswith(last)
    assert ("Traceback (most recent call last)" in err) is debug
    if not debug:
        assert err == last


#: a real ``sse-tool`` process whose framer has a bug (the one way to make it crash)
BUGGY = ("import sys; import sse_tool.framing as f\n"
         "def feed(self, data): raise RuntimeError('boom')\n"
         "f.AutoFramer.feed = feed\n"
         "sys.argv = ['sse-tool', *sys.argv[1:]]\n"
         "from sse_tool.cli import main; main()\n")


@pytest.mark.parametrize("how", ["plain", "--debug", "--debug after", "SSE_TOOL_DEBUG"])
def test_a_bug_in_a_real_process_is_one_line_unless_debugging_is_asked(how):
    args = {"--debug": ["--debug", "frame"], "--debug after": ["frame", "--debug"]}.get(how, ["frame"])
    env = {k: v for k, v in clean_env().items() if k != "SSE_TOOL_DEBUG"}
    if how == "SSE_TOOL_DEBUG":
        env["SSE_TOOL_DEBUG"] = "1"
    done = subprocess.run([sys.executable, "-c", BUGGY, *args], input=b"data: x\n\n",
                          capture_output=True, env=env, timeout=20)
    assert done.returncode == 1
    # the failure marker for later stages; it holds no traceback
    assert done.stdout.startswith(b'{"comment":"sse-tool exit 1 frame: internal error: RuntimeError: boom')
    err = done.stderr.decode()
    assert err.endswith("sse-tool frame: internal error: RuntimeError: boom (rerun with --debug for details)\n")
    if how == "plain":
        assert err.count("\n") == 1
    else:
        assert err.startswith("Traceback (most recent call last)") and 'in feed' in err


@pytest.mark.skipif(not hasattr(fcntl, "F_SETPIPE_SZ"), reason="pipe sizes are set on Linux only")
@pytest.mark.parametrize("stage", [["frame"], ["normalize"], ["replay", "--speed", "0"]], ids=" ".join)
def test_a_stage_widens_the_pipe_it_writes_into_and_writes_the_same_through_it(stage):
    read_end, write_end = os.pipe()
    try:
        before = fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ)
        process = subprocess.Popen([*SSE_TOOL, *stage, str(SAMPLE)], stdout=write_end,
                                   stderr=subprocess.DEVNULL, env=clean_env())
        os.close(write_end)
        out = b"".join(iter(lambda: os.read(read_end, 65536), b""))
        assert process.wait(20) == 0
        assert fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ) == max(before, _edge.PIPE_SIZE) > 65536
    finally:
        os.close(read_end)
    assert out == in_utf8(tuple(stage))


@pytest.mark.parametrize("variables", [{}, {"FORCE_COLOR": "1"}, {"FORCE_COLOR": "1", "NO_COLOR": "1"}],
                         ids=["plain", "force", "force-and-no"])
def test_check_colours_its_table_on_a_terminal_only(variables):
    code, out = on_a_terminal("check", str(CUT), **variables)
    assert code == 10 and b"stream.no-terminal-event" in out
    assert bool(COLOUR.search(out)) is ("NO_COLOR" not in variables), out[:300]
    env = {k: v for k, v in clean_env().items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    for args in (["check", str(CUT)], ["check", "--rules"]):  # into a pipe: never
        done = subprocess.run([*SSE_TOOL, *args], capture_output=True, env={**env, **variables}, timeout=20)
        assert b"stream.no-terminal-event" in done.stdout and b"\x1b" not in done.stdout
