"""``fetch -w/--write-out FORMAT``: curl's report of a transfer, with this tool's own times.

Sans-I/O: ``parse_format`` reads a format (curl's syntax: ``%{name}``, ``%header{name}``,
``%output{FILE}``, ``%{stdout}``/``%{stderr}``, ``%%``, and the escapes ``\\n``, ``\\r``,
``\\t``, ``\\\\``) and rejects unknown variables before any request is made; ``Transfer``
is told what happened and when (the edge gives the times, in seconds after the first
request was sent) and gives the values; ``render`` turns format and values into text for
each destination. It does no I/O and reads no clock.

Variables that mean what they mean to curl keep curl's names. Times are seconds after the
first request was sent, so retries and redirects are included, and a moment that never
came is ``0.000000`` (as curl prints it; ``%{json}`` has null). This tool adds
``time_first_byte`` (the first byte of the body, after the head), ``time_first_event``
(the chunk that completed the first event), ``time_first_token`` (the first reasoning,
answer or tool-call token, as ``inspect`` defines it) and ``exit_code``; the last two
read the body with the stages' own reader, only while they are still unknown.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from .errors import ExitCode, SseToolError

#: variables of curl's, with the same meaning
CURL = (
    "content_type", "errormsg", "http_code", "http_version", "method", "num_redirects",
    "num_retries", "remote_ip", "remote_port", "response_code", "scheme", "size_download",
    "speed_download", "time_appconnect", "time_connect", "time_pretransfer",
    "time_starttransfer", "time_total", "url", "url_effective",
)
#: this tool's own
OWN = ("exit_code", "time_first_byte", "time_first_event", "time_first_token")
VARIABLES = CURL + OWN
#: variables whose value needs the body read as a stream
_STREAM = ("time_first_event", "time_first_token")

_TOKEN = re.compile(r"%(?:\{([a-z_]+)\}|(header|output)\{([^}]*)\}|(%))|\\([nrt\\])|([^%\\]+|[%\\])")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}


class WriteOutError(SseToolError):
    exit_code = ExitCode.USAGE


class Piece(NamedTuple):
    #: "text", "var", "header", "json", or "to" (a destination: "stderr", "stdout", or
    #: a file name, ">>" first to append)
    kind: str
    value: str


def parse_format(text: str) -> list[Piece]:
    """The pieces of a format; ``WriteOutError`` names an unknown variable."""
    pieces: list[Piece] = []
    for m in _TOKEN.finditer(text):
        name, func, arg, percent, escape, plain = m.groups()
        if name is not None:
            if name in ("stdout", "stderr"):
                pieces.append(Piece("to", name))
            elif name == "json":
                pieces.append(Piece("json", ""))
            elif name in VARIABLES:
                pieces.append(Piece("var", name))
            else:
                hint = " (this tool's exit status is %{exit_code})" if name == "exitcode" else ""
                raise WriteOutError(f"-w: unknown variable %{{{name}}}{hint}")
        elif func == "header":
            pieces.append(Piece("header", arg))
        elif func == "output":
            if not arg.lstrip(">").strip():
                raise WriteOutError("-w: %output{} needs a file name")
            pieces.append(Piece("to", arg))
        elif percent or escape:
            pieces.append(Piece("text", "%" if percent else _ESCAPES[escape]))
        else:
            pieces.append(Piece("text", plain))
    return pieces


def reads_stream(pieces: list[Piece]) -> bool:
    """Whether the format needs the body read as a stream (first event, first token)."""
    return any(p.kind == "json" or p.kind == "var" and p.value in _STREAM for p in pieces)


class Transfer:
    """What ``-w`` reports, told as it happens. Times: seconds after the first request."""

    def __init__(self, *, read_stream: bool = False) -> None:
        self.url = ""  # the first request's (redacted by the edge)
        self.method = ""
        #: when the first request was sent, on the edge's clock (the times' origin)
        self.started: float | None = None
        self.attempts = 0
        self.redirects = 0
        self.status: int | None = None
        self.http_version = ""
        self.url_effective = ""
        self.headers: tuple = ()
        self.size = 0
        self.times: dict[str, float | None] = dict.fromkeys(
            ("connect", "appconnect", "pretransfer", "starttransfer", "total", "first_byte",
             "first_event", "first_token"))
        self.remote: tuple | None = None
        self.exit_code: int | None = None
        self.error = ""
        self._reader = None
        if read_stream:
            from .pipeline import RecordReader

            self._reader = RecordReader()

    # -- what happened --------------------------------------------------------------------

    def sending(self, method: str, url: str, attempt: int) -> None:
        self.method, self.url_effective = method, url
        self.url = self.url or url
        self.attempts = max(self.attempts, attempt)

    def trace(self, t: float, event: str, info: dict) -> None:
        """httpcore's trace events: the connection's moments, and where it goes."""
        if event == "connection.connect_tcp.complete":
            self.times["connect"] = t
            stream = info.get("return_value")
            try:
                self.remote = stream.get_extra_info("server_addr")
            except Exception:  # a custom transport's stream may not know the question
                self.remote = None
        elif event == "connection.start_tls.complete":
            self.times["appconnect"] = t
        elif event.endswith("send_request_headers.started"):
            self.times["pretransfer"] = t

    def head(self, t: float, status: int, http_version: str, url: str, headers, final: bool) -> None:
        if not final:
            self.redirects += 1
            return
        self.times["starttransfer"] = t
        self.status, self.url_effective, self.headers = status, url, tuple(headers)
        self.http_version = http_version.removeprefix("HTTP/")

    def chunk(self, t: float, data: bytes) -> None:
        if not self.size:
            self.times["first_byte"] = t
        self.size += len(data)
        reader = self._reader
        if reader is None:
            return
        try:
            records = reader.feed(data)
        except SseToolError:  # not a stream: its first event and token stay unknown
            self._reader = None
            return
        if self.times["first_event"] is None and any(
                type(item).__name__ != "SseComment" for item in reader.items):
            self.times["first_event"] = t
        if self.times["first_token"] is None and any(_is_token(r) for r in records):
            self.times["first_token"] = t
        if self.times["first_event"] is not None and self.times["first_token"] is not None:
            self._reader = None  # both known: the rest of the body is not read

    def finish(self, t: float, exit_code: int, error: str = "") -> None:
        self.times["total"] = t
        self.exit_code, self.error = int(exit_code), error

    # -- what it says ---------------------------------------------------------------------

    def values(self) -> dict:
        """Every variable's value: None for a moment that never came (or unknown)."""
        t = self.times
        remote = self.remote if isinstance(self.remote, tuple) and len(self.remote) >= 2 else (None, None)
        content_type = next((v for n, v in self.headers if n.lower() == "content-type"), None)
        total = t["total"]
        return {
            "content_type": content_type, "errormsg": self.error,
            "exit_code": self.exit_code, "http_code": self.status, "response_code": self.status,
            "http_version": self.http_version or None, "method": self.method or None,
            "num_redirects": self.redirects, "num_retries": max(0, self.attempts - 1),
            "remote_ip": remote[0], "remote_port": remote[1],
            "scheme": self.url_effective.partition(":")[0] or None,
            "size_download": self.size,
            "speed_download": self.size / total if total else 0.0,
            "time_appconnect": t["appconnect"], "time_connect": t["connect"],
            "time_pretransfer": t["pretransfer"], "time_starttransfer": t["starttransfer"],
            "time_total": total, "time_first_byte": t["first_byte"],
            "time_first_event": t["first_event"], "time_first_token": t["first_token"],
            "url": self.url or None, "url_effective": self.url_effective or None,
        }


def _is_token(record) -> bool:
    kind = type(record).__name__
    return kind == "ToolCall" or kind == "Delta" and bool(record.text)


def render(pieces: list[Piece], transfer: Transfer) -> list[tuple[str, str]]:
    """(destination, text) pairs in order: "stderr", "stdout", or a file (">>" to append)."""
    values = transfer.values()
    out: list[tuple[str, str]] = []
    to = "stderr"
    for kind, value in pieces:
        if kind == "to":
            to = value
            continue
        if kind == "text":
            text = value
        elif kind == "header":
            text = next((v for n, v in transfer.headers if n.lower() == value.lower()), "")
        elif kind == "json":
            text = json.dumps(values, ensure_ascii=False)
        else:
            text = _shown(value, values[value])
        if out and out[-1][0] == to:
            out[-1] = (to, out[-1][1] + text)
        else:
            out.append((to, text))
    return out


def _shown(name: str, value) -> str:
    """A value as curl writes it: times with six decimals (0 for never), codes padded."""
    if name.startswith("time_"):
        return f"{value or 0.0:.6f}"
    if name == "speed_download":
        return f"{value:.0f}"
    if name in ("http_code", "response_code"):
        return f"{value or 0:03d}"
    if value is None:
        return "0" if name in ("remote_port", "exit_code") else ""
    return str(value)
