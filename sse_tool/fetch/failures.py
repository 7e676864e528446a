"""How ``fetch`` fails: typed errors carrying their exit code, and their wording.

Messages say what failed in this tool's words (httpx's and the ssl module's own texts name
internals), and the provider's message from an error body, on one line.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..errors import ExitCode, SseToolError
from ..retry import Failure
from .lazy import load_httpx

if TYPE_CHECKING:
    import httpx

    from .transfer import Head

#: the longest message a failure carries; the edge shortens it for a person once it has
#: redacted it (shortened first, a secret at the cut would be printed half-masked)
MESSAGE_LIMIT = 4096


class FetchError(SseToolError):
    """A failed attempt; ``failure`` is what the retry policy sees."""

    def __init__(self, message: str, failure: Failure) -> None:
        super().__init__(message)
        self.failure = failure


class HttpError(FetchError):
    exit_code = ExitCode.HTTP_ERROR

    def __init__(self, message: str, failure: Failure, body: bytes = b"") -> None:
        super().__init__(message, failure)
        self.status = failure.status
        self.body = body


class ConnectionFailed(FetchError):
    exit_code = ExitCode.NETWORK


class BodyCut(FetchError):
    exit_code = ExitCode.TRUNCATED


class TimedOut(FetchError):
    exit_code = ExitCode.TIMEOUT

    @property
    def which(self) -> str:
        return self.failure.timeout or ""


class UsageError(SseToolError):
    exit_code = ExitCode.USAGE


TIMEOUT_TEXT = {
    "connect": "connect timeout: no connection within {s} (--connect-timeout)",
    "first-byte": "first-byte timeout: no response data within {s} (--first-byte-timeout)",
    "idle": "idle timeout: nothing received for {s} (--idle-timeout)",
    "total": "total timeout: --max-time {s} reached",
}


#: the statuses a client follows to their Location (with -L)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def status_error(response: httpx.Response, head: Head, body: bytes, followed: bool = False) -> HttpError:
    """The failure a final status of 300 or more stands for (``followed``: -L was given)."""
    status = f"HTTP {head.status} {head.reason}".rstrip()
    where = response.headers.get("location", "").strip()
    redirect = head.status in _REDIRECTS
    if redirect and where and not followed:
        message = f"{status}: redirect to {where} not followed (use -L)"
    elif head.status < 400:  # nothing to follow: a 304, a 300, or a redirect without its Location
        message = f"{status}: no body" + (" and no Location to follow" if redirect and not where else "")
    else:
        detail = error_message(body)
        message = f"{status}: {detail}" if detail else status
    failure = Failure("status", status=head.status, retry_after=response.headers.get("retry-after"))
    return HttpError(message, failure, body)


def error_message(body: bytes, limit: int = MESSAGE_LIMIT) -> str:
    """The provider's error message from an error body, on one line.

    OpenAI, Anthropic and Gemini all send ``{"error": {"message": ..., "type"|"status": ...}}``
    (Gemini sometimes inside a one-element array); other servers send ``{"message": ...}``,
    ``{"detail": ...}``, ``{"error": "..."}`` or plain text.
    """
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    message, kind = None, None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, str):
            message = err
        elif isinstance(err, dict):
            message = err.get("message") or err.get("detail") or err.get("error")
            kind = err.get("type") or err.get("status") or err.get("code")
        if message is None and isinstance(data.get("detail"), str):
            message = data["detail"]
    if not isinstance(message, str):
        message = text if data is None else json.dumps(data, ensure_ascii=False)
    if kind is not None and str(kind) not in message:
        message = f"{message} ({kind})"
    return shorten(message, limit)


def shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def ca_text(exc: OSError, trust_env: bool) -> str:
    import os

    name = next((n for n in ("SSL_CERT_FILE", "SSL_CERT_DIR")
                 if trust_env and os.environ.get(n)), "")
    where = f"{name}={os.environ[name]}" if name else "the default CA certificates"
    return f"cannot load {where}: {exc.strerror or getattr(exc, 'reason', None) or detail(exc)}"


def refused_certificate(exc: BaseException):
    """The ``ssl.SSLCertVerificationError`` behind a connection failure, if there is one."""
    import ssl  # loaded by httpx already

    while exc is not None and not isinstance(exc, ssl.SSLCertVerificationError):
        exc = exc.__cause__ or exc.__context__
    return exc


def network_text(req: httpx.Request, exc: Exception) -> str:
    httpx = load_httpx()
    where = req.url.host + (f":{req.url.port}" if req.url.port else "")
    cause = refused_certificate(exc)
    if cause is not None:
        # The ssl module's own text names a C source line; say what failed, and for an
        # issuer not trusted (X509_V_ERR_* 2, 18-21), the cure.
        hint = " (SSL_CERT_FILE or SSL_CERT_DIR name the CAs to trust)" if cause.verify_code in (
            2, 18, 19, 20, 21) else ""
        return (f"cannot connect to {where}: the server's TLS certificate could not be verified: "
                f"{cause.verify_message.rstrip('.')}{hint}")
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {where}: {detail(exc)}"
    if isinstance(exc, httpx.ProxyError):
        return f"proxy failed for {where}: {detail(exc)}"
    return f"connection to {where} failed before the first byte: {detail(exc)}"


def detail(exc: Exception) -> str:
    # httpcore raises an HTTP/2 reset or GOAWAY with the h2 event as its text (a repr)
    event = exc.__cause__.args[0] if exc.__cause__ is not None and exc.__cause__.args else None
    code = getattr(event, "error_code", None)
    if code is not None:
        what = "reset the HTTP/2 stream" if hasattr(event, "stream_id") else \
            "ended the HTTP/2 connection"
        return f"the server {what} (error {getattr(code, 'name', code)})"
    return shorten(str(exc) or type(exc).__name__, MESSAGE_LIMIT)


def seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1000:g}ms" if value < 1 else f"{value:g}s"
