"""The command line as a newcomer meets it: one meaning per short option across the
subcommands, -V, ``sse-tool help COMMAND``, --debug on either side of the subcommand,
counts in grammar."""

from __future__ import annotations

import subprocess
from collections import defaultdict

import pytest
import typer
from typer.testing import CliRunner

from sse_tool import __version__
from sse_tool.cli import COMMANDS, app, build
from sse_tool.model import Channel, Delta
from sse_tool.plural import count
from sse_tool.render.draft import Draft
from sse_tool.render.view_plain import summary

from ..support import SSE_TOOL, clean_env

CLICK = typer.main.get_command(build())

#: letters whose meaning users bring from curl (fetch), llm (-m) and jq/Unix habit
KNOWN = {"-X": "--method", "-H": "--header", "-d": "--data", "-L": "--location", "-w": "--write-out",
         "-v": "--verbose", "-o": "--output", "-m": "--model", "-p": "--provider", "-h": "--help",
         "-V": "--version"}


def short_options() -> dict[str, set[str]]:
    """Each short option -> the long options it stands for, over the tool and its subcommands."""
    meanings = defaultdict(set)
    for cmd in [CLICK, *CLICK.commands.values()]:
        for param in cmd.params:
            opts = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
            longs = [o for o in opts if o.startswith("--")]
            for short in (o for o in opts if len(o) == 2 and o[0] == "-"):
                meanings[short].update(longs)
        meanings["-h"].add("--help")
    return meanings


def test_each_short_option_means_one_thing_across_the_subcommands():
    clashes = {short: longs for short, longs in short_options().items() if len(longs) != 1}
    assert not clashes


def test_short_options_keep_the_letters_users_know():
    meanings = short_options()
    for short, long in KNOWN.items():
        assert meanings[short] == {long}, short


def test_dash_capital_v_prints_the_version():
    r = subprocess.run([*SSE_TOOL, "-V"], capture_output=True, timeout=30, env=clean_env())
    assert (r.returncode, r.stdout.decode()) == (0, f"sse-tool {__version__}\n")


@pytest.mark.parametrize("name", COMMANDS)
def test_help_command_shows_the_commands_own_help(name):
    runner = CliRunner()
    shown = runner.invoke(app, ["help", name], prog_name="sse-tool")
    assert shown.exit_code == 0
    assert shown.stdout == runner.invoke(app, [name, "--help"], prog_name="sse-tool").stdout


def test_help_alone_is_the_tools_help_and_an_unknown_command_a_usage_error():
    runner = CliRunner()
    assert runner.invoke(app, ["help"]).stdout == runner.invoke(app, ["--help"]).stdout
    wrong = subprocess.run([*SSE_TOOL, "help", "fram"], capture_output=True, timeout=30, env=clean_env())
    assert wrong.returncode == 2 and b"no such command: fram" in wrong.stderr


@pytest.mark.parametrize("name", COMMANDS)
def test_every_subcommand_takes_debug_after_its_name(name):
    assert "--debug" in {o for p in CLICK.commands[name].params for o in getattr(p, "opts", [])}


@pytest.mark.parametrize("n, text", [(0, "0 words"), (1, "1 word"), (2, "2 words")])
def test_counts_agree_with_their_noun(n, text):
    assert count(n, "word") == text


def test_irregular_plurals_and_grouped_thousands():
    assert (count(1, "retry", "retries"), count(3, "retry", "retries")) == ("1 retry", "3 retries")
    assert count(1204, "event", grouped=True) == "1,204 events"


def test_a_one_word_thought_is_one_word():
    draft = Draft()
    draft.add(Delta(Channel.REASONING, "Hmm"), 0.0)
    assert summary(draft, 1.0).endswith("(1 word)") or summary(draft, 1.0) == "thought: 1 word"
