"""``sse-tool serve``: recorded streams served as live ones, faults on demand, and a relay.

- ``faults``: the fault plan (from ``--fault`` options and query parameters) and the
  writes, waits and ending it makes of a replay schedule. Sans-I/O.
- ``streams``: recordings and stream files loaded by URL path, each with its head,
  schedule and ending.
- ``app``: the ASGI app that plays a stream under a fault plan; ``relay``: the ASGI app
  that forwards to a provider with the server's key (the only httpx importer here).
- ``gate``: token, CORS and access log around either; ``asgi``: shared small helpers.

The server itself is uvicorn, started by ``sse_tool.cli.serve``.
"""

from ..errors import ExitCode, SseToolError


class ServeUsage(SseToolError):
    """A server that cannot start as asked (options, files, a port)."""

    exit_code = ExitCode.USAGE
