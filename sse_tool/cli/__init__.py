"""The ``sse-tool`` command: one Typer app, one module per subcommand.

Subcommand modules import only what their stage needs, so a pipe stage starts fast:
``frame`` and ``normalize`` never import httpx or rich.
"""

from __future__ import annotations

from typing import Optional

import typer

from .. import __version__
from . import _edge
from . import frame
from . import render
from . import normalize
from . import fetch
from . import replay
from . import serve

app = typer.Typer(
    name="sse-tool",
    help="Streamed LLM responses (Server-Sent Events) as a Unix pipe:\n\n"
    "fetch URL | frame | normalize | render",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sse-tool {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of internal errors."),
) -> None:
    if debug:
        _edge.debug = True


app.command("frame", epilog=frame.EPILOG)(frame.frame)
app.command("render", epilog=render.EPILOG)(render.render)
app.command("normalize", epilog=normalize.EPILOG)(normalize.normalize)
app.command("fetch", epilog=fetch.EPILOG)(fetch.fetch)
app.command("replay", epilog=replay.EPILOG)(replay.replay)
app.command("serve", epilog=serve.EPILOG)(serve.serve)


def main() -> None:
    app(prog_name="sse-tool")
