"""The command's first code: Ctrl-C during start-up ends the process at once, quietly.

Python turns SIGINT into KeyboardInterrupt wherever the main thread is, including inside
the imports of typer, click, orjson or rich, where it prints a traceback (or, inside a C
extension's module start-up, leaves it half made). So before any of those is imported,
SIGINT exits 130 at once: nothing has been read or written yet. ``_edge.run_stage`` puts
KeyboardInterrupt back just before a subcommand's body runs, which then ends cleanly
(closing connections, writing its end record). Only this module and the package's own
small ``__init__`` come first.
"""

from __future__ import annotations

import gc
import os

# _signal, not signal: the C module is loaded already, while importing signal builds its
# enums, which takes long enough for a Ctrl-C to land inside it
import _signal as signal


def _interrupted(signum, frame) -> None:
    os._exit(130)


def main() -> None:
    # Only where Python installed its own handler: an ignored SIGINT (a background job
    # of a shell without job control) stays ignored.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted)
    from .cli import main as run

    # A stage makes a few tuples per event, which die young. The cyclic collector would
    # walk the objects of start-up (modules, the CLI) again at each full collection, and
    # run a young collection every 700 allocations: frozen, and every 5,000, a stage's CPU
    # on 20 MB falls by 3% (frame) to 15% (render). Only the command does this: a library
    # user's process keeps its own settings.
    gc.freeze()
    gc.set_threshold(5000)
    run()
