"""The ``sse-tool`` command: one Typer app, one module per subcommand.

A pipe stage's start-up time counts, so ``main`` imports only the subcommand being run
(``frame`` then loads neither httpx, rich, nor the other stages); the full app, with every
subcommand, is built for the top-level help, shell completion and ``sse_tool.cli.app``.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from inspect import Parameter, signature as signature_of
from typing import Optional

import typer

from .. import __version__
from . import _edge

#: subcommands in the order of the pipe; each is the function of that name in the module
#: of that name, with the module's ``EPILOG`` (examples, exit status) under its help
COMMANDS = ("fetch", "frame", "normalize", "render", "inspect", "check", "replay", "serve")


#: the libraries whose versions a bug report needs (``--version -v``), by distribution name
REPORTED = ("httpx", "rich", "typer", "click", "orjson", "uvicorn", "h2")


def versions() -> list[str]:
    """The lines of ``sse-tool --version -v``: this tool, Python and the platform, then each
    library in ``REPORTED`` as installed (read from the installed metadata, not imported)."""
    import platform
    from importlib import metadata

    lines = [f"sse-tool {__version__}",
             f"Python {platform.python_version()} ({platform.python_implementation()})"
             f" on {platform.platform()}"]
    for name in REPORTED:
        try:
            lines.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{name} not installed")
    return lines


def _version(ctx: typer.Context, value: bool) -> None:
    # not eager, so that -v (eager) has been read by now wherever it stands
    if value:
        typer.echo("\n".join(versions()) if ctx.params.get("verbose") else f"sse-tool {__version__}")
        raise typer.Exit()


def _main(
    ctx: typer.Context,
    version: Optional[bool] = typer.Option(
        None, "--version", "-V", callback=_version, help="Print the version and exit."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", is_eager=True,
        help="With --version: also the versions of Python and the libraries, for bug reports.",
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of internal errors."),
) -> None:
    if verbose:  # a command's own -v comes after its name
        ctx.fail("-v/--verbose goes with --version (a command's own -v comes after its name)")
    if debug:
        _edge.debug = True


def _with_debug(command):
    """``command`` with a ``--debug`` option of its own, so that it may follow the
    subcommand's name as well as precede it."""
    signature = signature_of(command)
    option = Parameter(
        "debug_", Parameter.KEYWORD_ONLY, annotation=bool,
        default=typer.Option(False, "--debug", help="Show tracebacks of internal errors (as SSE_TOOL_DEBUG=1)."),
    )

    @functools.wraps(command)
    def run(*args, debug_: bool = False, **kwargs):
        if debug_:
            _edge.debug = True
        return command(*args, **kwargs)

    run.__signature__ = signature.replace(parameters=[*signature.parameters.values(), option])
    return run


def help_(ctx: typer.Context, command: Optional[str] = typer.Argument(None, help="A subcommand.")) -> None:
    """Show the help of COMMAND (as COMMAND --help), or of sse-tool."""
    group, top = ctx.parent.command, ctx.parent
    if command is None:
        typer.echo(group.get_help(top))
        return
    sub = group.get_command(top, command)
    if sub is None:
        raise typer.BadParameter(f"no such command: {command} (one of {', '.join(COMMANDS)})",
                                 param_hint="COMMAND")
    typer.echo(sub.get_help(type(ctx)(sub, info_name=command, parent=top)))


EPILOG = """\b
Examples:
  sse-tool fetch --provider anthropic --model claude-sonnet-4-5 --prompt 'Hi' | sse-tool render
  sse-tool frame stream.sse | sse-tool normalize | jq -c .
  sse-tool help COMMAND;  man sse-tool;  man sse-tool-COMMAND

\b
Exit status (every command):
  0 success   1 internal error   2 usage error   3 truncated
  4 provider error   5 bad input   6 HTTP error   7 network failure   8 timeout
  9 stopped early (only with --strict)   10 findings (check, inspect --fail-on)
  11 output failed   130 interrupted   141 the reader closed the pipe
  129, 143 render ended by SIGHUP, SIGTERM

\b
Environment:
  NO_COLOR, FORCE_COLOR, TERM=dumb   colour of render's terminal view (--color)
  SSE_TOOL_DEBUG=1                   as --debug
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY   API keys for fetch --provider
  HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY        proxies for fetch
Output is UTF-8 whatever the locale. Completion: sse-tool --install-completion.
"""


def build(names=COMMANDS) -> typer.Typer:
    """The app with the subcommands ``names``."""
    app = typer.Typer(
        name="sse-tool",
        help="Streamed LLM responses (Server-Sent Events) as a Unix pipe:\n\n"
        "fetch URL | frame | normalize | render",
        epilog=EPILOG,
        add_completion=True,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_main)
    for name in names:
        module = importlib.import_module(f"{__name__}.{name}")
        app.command(name, epilog=module.EPILOG)(_with_debug(getattr(module, name)))
    app.command("help")(help_)
    return app


def _needed(argv: list[str]) -> tuple[str, ...]:
    """The subcommand named on the command line, or all of them (help, completion, typos)."""
    if any(key.endswith("_COMPLETE") for key in os.environ):
        return COMMANDS
    for arg in argv:
        if arg in COMMANDS:
            return (arg,)
        if not arg.startswith("-"):
            break
    return COMMANDS


def __getattr__(name: str):
    if name == "app":  # the whole app, for CliRunner and library users
        return build()
    raise AttributeError(name)


def main() -> None:
    # click's exceptions, wherever typer takes click from (its own copy since typer 0.28)
    click = sys.modules[typer.BadParameter.__module__]
    command = typer.main.get_command(build(_needed(sys.argv[1:])))
    try:
        code = command.main(sys.argv[1:], prog_name="sse-tool", standalone_mode=False)
    except click.ClickException as exc:
        sys.exit(_usage_error(exc))
    except typer.Abort:  # (click's answer to an EOFError while it reads a prompt)
        _edge.warn("", "aborted")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def _usage_error(exc) -> int:
    """A usage error as every diagnostic is said: one line, ``sse-tool STAGE: message``,
    with where to look (click would print its usage block and an ``Error:`` line)."""
    click = sys.modules[typer.BadParameter.__module__]
    if isinstance(exc, getattr(click, "NoArgsIsHelpError", ())):  # "sse-tool" alone: the help
        exc.show()
        return exc.exit_code
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        path = ctx.command_path
    else:  # (click's parser leaves some errors without their context)
        named = _needed(sys.argv[1:])
        path = f"sse-tool {named[0]}" if len(named) == 1 else "sse-tool"
    message = exc.format_message().strip().rstrip(".")
    if message[1:2].islower():  # "No such option" but "URL ..."
        message = message[0].lower() + message[1:]
    stage = path.partition(" ")[2]
    try:
        _edge.warn(stage, f"{message} (see {path} --help)")
    except Exception:  # stderr closed: the exit code says it
        pass
    _edge.pass_on_usage_error(stage, exc.exit_code, message)
    return exc.exit_code
