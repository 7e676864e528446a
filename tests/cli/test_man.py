"""The man pages in man/: lint-clean roff, the usual sections, and in step with the code.

Every option of every subcommand (read from the click command objects ``--help`` is built
from) must have its entry in that command's page, and every entry must name a real option;
every choice of an option, every exit status of ``--help`` and every option used in an
example must be real too. The pages are installed as data files: pyproject must name them all.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import typer

from sse_tool.cli import COMMANDS, build
from sse_tool.errors import ExitCode

from ..support import ROOT

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

MAN = ROOT / "man"
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT",
            "EXAMPLES", "SEE ALSO"]
PAGES = {"sse-tool": None, **{f"sse-tool-{name}": name for name in COMMANDS}}

APP = typer.main.get_command(build())


def command(name: str | None):
    return APP if name is None else APP.commands[name]


def options(cmd) -> set[str]:
    names = {"-h", "--help"}
    for param in cmd.params:
        if param.param_type_name == "option":
            names.update(param.opts + param.secondary_opts)
    return names


def plain(roff: str) -> str:
    """Roff source as the words a reader sees (font and character escapes resolved)."""
    text = re.sub(r"\\f[BIRP]", "", roff)
    for escape, char in ((r"\-", "-"), (r"\(aq", "'"), (r"\(dq", '"'), (r"\(lq", '"'),
                         (r"\(rq", '"'), (r"\e", "\\"), (r"\&", "")):
        text = text.replace(escape, char)
    return text


def sections(page: str) -> dict[str, str]:
    """Section title -> its source, in order."""
    parts = re.split(r"^\.SH +(.*)$", (MAN / f"{page}.1").read_text(), flags=re.M)
    return {title.strip('"'): body for title, body in zip(parts[1::2], parts[2::2])}


def tags(body: str) -> list[str]:
    """The tag lines of the .TP entries of a section, as plain text."""
    lines = body.split("\n")
    found = []
    for i, line in enumerate(lines[:-1]):
        if line.startswith(".TP"):
            tag = lines[i + 1]
            # ".BR \-p ", " \-\-provider" -> the words, without the macro and its quotes
            found.append(plain(re.sub(r"^\.\w+ ?", "", tag)).replace('"', ""))
    return found


OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def test_there_is_a_page_for_the_tool_and_one_for_each_subcommand():
    assert sorted(p.stem for p in MAN.glob("*.1")) == sorted(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_each_page_has_the_sections_of_a_man_page_in_order(page):
    titles = list(sections(page))
    assert [t for t in titles if t in SECTIONS] == SECTIONS


@pytest.mark.parametrize("page", PAGES)
def test_each_page_is_named_for_its_command_in_section_1(page):
    source = (MAN / f"{page}.1").read_text()
    assert source.startswith(f".TH {page.upper()} 1 ")
    name = sections(page)["NAME"].strip()
    assert name.startswith(page.replace("-", r"\-") + r" \- ") or name.startswith(page + r" \- ")


@pytest.mark.parametrize("page", PAGES)
def test_every_option_of_the_command_has_an_entry_and_every_entry_is_an_option(page):
    documented = {opt for tag in tags(sections(page)["OPTIONS"]) for opt in OPTION.findall(tag)}
    assert documented == options(command(PAGES[page]))


@pytest.mark.parametrize("page", PAGES)
def test_every_choice_of_an_option_is_named_in_the_options(page):
    text = plain(sections(page)["OPTIONS"])
    for param in command(PAGES[page]).params:
        for choice in getattr(param.type, "choices", None) or []:
            if param.param_type_name == "option":
                assert re.search(rf"(?<![\w-]){re.escape(str(choice))}(?![\w-])", text), (param.name, choice)


@pytest.mark.parametrize("page", PAGES)
def test_variables_an_option_reads_are_in_the_environment_section(page):
    text = plain(sections(page)["ENVIRONMENT"])
    for param in command(PAGES[page]).params:
        for variable in [param.envvar] if isinstance(param.envvar, str) else param.envvar or []:
            assert variable in text


@pytest.mark.parametrize("page", PAGES)
def test_every_page_names_the_debug_variable(page):
    assert "SSE_TOOL_DEBUG" in sections(page)["ENVIRONMENT"]


def test_the_tool_page_documents_every_exit_code_and_the_environment():
    page = sections("sse-tool")
    codes = {int(t) for t in tags(page["EXIT STATUS"])}
    assert codes == {int(code) for code in ExitCode}
    environment = plain(page["ENVIRONMENT"])
    for variable in ("NO_COLOR", "FORCE_COLOR", "TERM", "SSE_TOOL_DEBUG", "OPENAI_API_KEY",
                     "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY",
                     "NO_PROXY", "SSE_TOOL_SERVE_TOKEN"):
        assert variable in environment
    description = plain(page["DESCRIPTION"])
    assert ": sse-tool reset" in description and '{"type":"reset"}' in description


def _epilog_codes(epilog: str) -> set[int]:
    block = epilog[epilog.index("Exit status"):]
    return {int(n) for n in re.findall(r"(?:^|[;:\n])\s*(\d{1,3})\s+(?=[a-zA-Z(])", block)}


@pytest.mark.parametrize("name", COMMANDS)
def test_each_exit_status_in_help_is_in_the_page(name):
    in_help = _epilog_codes(command(name).epilog)
    in_page = {int(t) for t in tags(sections(f"sse-tool-{name}")["EXIT STATUS"])}
    assert in_help and in_help <= in_page
    assert in_page <= {int(code) for code in ExitCode}


def _example_commands(page: str):
    """(subcommand, its arguments) for each ``sse-tool CMD ...`` in the EXAMPLES."""
    examples = "\n".join(re.findall(r"^\.EX\n(.*?)^\.EE", sections(page)["EXAMPLES"], re.M | re.S))
    text = plain(examples).replace("\\\n", " ")
    for segment in re.split(r"[|\n]", text):
        words = segment.split()
        for i, word in enumerate(words[:-1]):
            if word == "sse-tool" and words[i + 1] in COMMANDS:
                yield words[i + 1], words[i + 2:]


@pytest.mark.parametrize("page", PAGES)
def test_the_examples_use_only_real_options(page):
    used = 0
    for name, args in _example_commands(page):
        known = options(command(name))
        for arg in args:
            if arg.startswith("#"):
                break
            if arg.startswith("-") and arg != "-":
                assert arg.split("=")[0] in known, (name, arg)
        used += 1
    assert used


@pytest.mark.skipif(not shutil.which("groff"), reason="groff is not installed")
@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("device", [[], ["-Tutf8", "-rLL=80n"]], ids=["ps", "utf8-80"])
def test_groff_reads_each_page_without_a_warning(page, device):
    done = subprocess.run(["groff", "-man", "-ww", "-z", "-t", *device, str(MAN / f"{page}.1")],
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


@pytest.mark.skipif(not shutil.which("mandoc"), reason="mandoc is not installed")
@pytest.mark.parametrize("page", PAGES)
def test_mandoc_lints_each_page_clean(page):
    done = subprocess.run(["mandoc", "-T", "lint", str(MAN / f"{page}.1")],
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_the_package_installs_every_page_into_share_man_man1():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data_files = config["tool"]["setuptools"]["data-files"]
    installed = {f.relative_to(ROOT) for pattern in data_files["share/man/man1"] for f in ROOT.glob(pattern)}
    assert installed == {p.relative_to(ROOT) for p in MAN.glob("*.1")}
    # setuptools puts data files in the sdist as well: nothing may exclude them
    manifest = ROOT / "MANIFEST.in"
    assert not manifest.exists() or "man" not in manifest.read_text()
