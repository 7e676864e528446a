"""httpx, imported when a request is made: a usage error or ``--help`` does not pay for it."""

from __future__ import annotations

import sys


def load_httpx():
    """httpx, imported on first use.

    httpx's ``__init__`` also imports its own command line (``httpx._main``: click, rich,
    pygments), most of its import time and none of it needed here; hidden during the
    import, it makes httpx fall back to its stub ``main``, and stays importable after.
    """
    httpx = sys.modules.get("httpx")
    if httpx is None:
        hide = "httpx._main" not in sys.modules
        if hide:
            sys.modules["httpx._main"] = None  # type: ignore[assignment]  # import now fails
        try:
            import httpx
        finally:
            if hide and sys.modules.get("httpx._main", False) is None:
                del sys.modules["httpx._main"]
    return httpx
