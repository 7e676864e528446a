"""A real HTTP server on 127.0.0.1 that serves a folder's files (the samples, for the
examples of the docs), ``.sse`` as text/event-stream."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Files(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".sse": "text/event-stream",
                      ".ndjson": "application/x-ndjson", ".eventstream": "application/vnd.amazon.eventstream"}

    def log_message(self, *args) -> None:
        pass


class FileServer:
    def __init__(self, folder: Path) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Files, directory=str(folder)))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
