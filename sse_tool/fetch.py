"""HTTP for ``sse-tool fetch``: one request in, the response body out as chunks, as they arrive.

Consumes a ``Request`` and its limits (``Timeouts``, a ``retry.RetryPolicy``); produces a
stream of items: ``Sending`` (the request as it goes out), ``Head`` (a response status
line and headers), ``bytes`` (body chunks, one network read each, after content
decoding), ``Retrying`` (a failed attempt is about to be retried). Failures are typed
errors carrying their exit code. This is the only module that imports httpx (when a
request is made, so that a usage error or ``--help`` does not pay for it); it prints
nothing, and knows nothing of stdout, recordings or redaction (the edge does those).

Deadlines. httpx's connect timeout bounds the connection. After that, a per-read timeout
cannot express "first byte within F, then no gap over I, all within T" (a server that
sends one header line every half second, or ``100 Continue`` forever, never lets one read
time out), so a watchdog thread holds those deadlines from the moment the request is
sent, the response head included, and when one passes it shuts the connection's socket
down: the blocked read returns, and the error says which deadline it was. The socket is
learnt from httpcore's trace of the connection. Time spent handing a chunk downstream (a
slow reader) does not count as idle time.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import TYPE_CHECKING, NamedTuple

from . import __version__
from .errors import ExitCode, SseToolError
from .redact import SECRET_HEADERS
from .retry import Failure, RetryPolicy, Wait

if TYPE_CHECKING:
    import socket

    import httpx

#: sent unless the request sets these headers itself
DEFAULT_HEADERS = (("Accept", "text/event-stream"), ("Cache-Control", "no-cache"))
#: written before a retried attempt's bytes when an earlier attempt's bytes were already
#: passed on: an SSE comment (ignored by every SSE parser) that tells sse-tool's own
#: stages to discard the draft, followed by a blank line
RESET_MARKER = b": sse-tool reset\n\n"
#: how much of an error body is read for the message
ERROR_BODY_LIMIT = 64 * 1024
#: the longest message a failure carries; the edge shortens it for a person once it has
#: redacted it (shortened first, a secret at the cut would be printed half-masked)
MESSAGE_LIMIT = 4096


#: sent in httpx's place (-H 'User-Agent: ...' replaces it)
USER_AGENT = f"sse-tool/{__version__}"
#: a URL that names its scheme ("http://", "ftp://"); "localhost:8000/x" does not
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: hosts reached over plain http when a URL names no scheme
_LOOPBACK = re.compile(r"(localhost|127(\.\d+){3}|\[::1\])(:\d*)?([/?#]|$)", re.I)


def with_scheme(url: str) -> str:
    """``url`` with a scheme: as given if it names one, else https://, or http:// for a
    loopback host ("localhost:8000/x"), where a local server seldom has a certificate."""
    if _SCHEME.match(url):
        return url
    return ("http://" if _LOOPBACK.match(url) else "https://") + url


class Request(NamedTuple):
    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None


class Timeouts(NamedTuple):
    """Seconds, None for no limit. ``total`` covers every attempt and every wait."""

    connect: float | None = None
    first_byte: float | None = None
    idle: float | None = None
    total: float | None = None


class Sending(NamedTuple):
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    #: 1 for the first attempt
    attempt: int


class Head(NamedTuple):
    http_version: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    url: str
    #: seconds after the first request was sent
    time: float
    #: False for a redirect that is being followed
    final: bool = True


class Retrying(NamedTuple):
    wait: Wait
    #: the failure being retried, one line
    reason: str


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


_TIMEOUT_TEXT = {
    "connect": "connect timeout: no connection within {s} (--connect-timeout)",
    "first-byte": "first-byte timeout: no response data within {s} (--first-byte-timeout)",
    "idle": "idle timeout: nothing received for {s} (--idle-timeout)",
    "total": "total timeout: --max-time {s} reached",
}


def _httpx():
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


def stream(
    request: Request,
    *,
    timeouts: Timeouts = Timeouts(),
    policy: RetryPolicy | None = None,
    transport: httpx.BaseTransport | None = None,
    http2: bool = False,
    follow_redirects: bool = False,
    max_redirects: int = 20,
    trust_env: bool = True,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    trace: Callable[[str, dict], None] | None = None,
) -> Iterator[Sending | Head | bytes | Retrying]:
    """Send ``request`` (again, as ``policy`` allows) and yield what happens, as it happens.

    Closing the generator (or an exception while it is suspended, such as Ctrl-C)
    closes the connection at once. ``trace`` is given httpcore's trace events (connection
    made, TLS done, request sent: ``fetch -w`` times them).
    """
    httpx = _httpx()
    policy = policy or RetryPolicy(0)
    headers = _with_defaults(request.headers)
    run = _Run(clock, timeouts)
    try:
        client = httpx.Client(
            http2=http2, transport=transport, trust_env=trust_env, max_redirects=max_redirects,
            headers={"User-Agent": USER_AGENT},
            event_hooks={"request": [_strip_secrets_across_origins(request.url)]},
        )
    except ImportError:
        raise UsageError("--http2 needs the h2 package: pip install 'sse-tool[http2]'") from None
    except OSError as exc:  # httpx loads SSL_CERT_FILE / SSL_CERT_DIR here
        raise UsageError(_ca_text(exc, trust_env)) from None
    with client:
        attempt = 0
        passed_on = False  # body bytes of some attempt went downstream
        last_byte = b"\n"
        while True:
            attempt += 1
            try:
                fresh = True
                for item in _attempt(client, request, headers, attempt, run, follow_redirects, trace):
                    if isinstance(item, bytes):
                        if fresh and passed_on:
                            # A partial line would swallow the marker: end it first.
                            yield (b"" if last_byte in b"\r\n" else b"\n") + RESET_MARKER
                        fresh = False
                        passed_on = True
                        last_byte = item[-1:]
                    yield item
                return
            except FetchError as err:
                wait = policy.after(err.failure, run.remaining())
                if wait is None:
                    if policy.declined:
                        err.args = (f"{err}; not retried: {policy.declined}",)
                    raise
                yield Retrying(wait, str(err))
                sleep(wait.seconds)


class _Run:
    """The time limits of one ``stream`` call."""

    def __init__(self, clock: Callable[[], float], timeouts: Timeouts) -> None:
        self.clock = clock
        self.timeouts = timeouts
        self.start = clock()
        self.deadline = None if timeouts.total is None else self.start + timeouts.total
        #: the socket of the latest connection (kept: a retry may reuse the connection)
        self.sock: socket.socket | None = None

    def trace(self, event: str, info: dict) -> None:
        """httpcore's trace hook: learn each new connection's socket for the watchdog."""
        if event in ("connection.connect_tcp.complete", "connection.connect_unix_socket.complete"):
            self.sock = _socket_of_stream(info.get("return_value"))

    def elapsed(self) -> float:
        return self.clock() - self.start

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - self.clock()

    def bound(self, limit: float | None, which: str) -> tuple[float | None, str]:
        """The tighter of ``limit`` and what is left of the total, and which one it is."""
        left = self.remaining()
        if left is not None and (limit is None or left <= limit):
            return max(left, 0.001), "total"
        return limit, which

    def timed_out(self, which: str, partial: bool = False) -> TimedOut:
        value = self.timeouts.total if which == "total" else getattr(
            self.timeouts, which.replace("-", "_"))
        return TimedOut(_TIMEOUT_TEXT[which].format(s=_seconds(value)),
                        Failure("timeout", timeout=which, partial=partial))


def _both(first: Callable[[str, dict], None], second: Callable[[str, dict], None]):
    """One httpcore trace hook calling two: the watchdog's, then the caller's."""
    def trace(event: str, info: dict) -> None:
        first(event, info)
        second(event, info)
    return trace


def _attempt(client, request, headers, attempt, run, follow_redirects, trace=None):
    httpx = _httpx()
    connect, connect_which = run.bound(run.timeouts.connect, "connect")
    first, first_which = run.bound(run.timeouts.first_byte, "first-byte")
    write, _ = run.bound(None, "total")
    try:
        req = client.build_request(
            request.method, request.url, headers=list(headers), content=request.body,
            timeout=httpx.Timeout(connect=connect, read=first, write=write, pool=connect),
        )
    except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError, TypeError) as exc:
        raise UsageError(f"bad request: {exc}") from None
    if req.url.scheme not in ("http", "https"):
        raise UsageError(f"bad URL: {request.url!r} is not an http or https URL")
    yield Sending(req.method, str(req.url), _raw(req.headers), request.body, attempt)
    req.extensions["trace"] = run.trace if trace is None else _both(run.trace, trace)
    dog = _Watchdog(run, run.clock())  # the head is under the first-byte and total deadlines
    try:
        try:
            response = client.send(req, stream=True, follow_redirects=follow_redirects)
        except httpx.ConnectTimeout:
            raise run.timed_out(connect_which) from None
        except httpx.PoolTimeout:
            raise run.timed_out(connect_which) from None
        except (httpx.ReadTimeout, httpx.WriteTimeout):
            raise run.timed_out(dog.fired or first_which) from None
        except httpx.TooManyRedirects:
            raise HttpError(f"more than {client.max_redirects} redirects", Failure("status")) from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            # The URL asked for is http(s): only a redirect can lead elsewhere (javascript:, data:)
            raise HttpError(f"redirect to a URL that is not http or https: {_detail(exc)}",
                            Failure("status")) from None
        except httpx.TransportError as exc:
            if dog.fired:  # the watchdog shut the socket while the head was coming
                raise run.timed_out(dog.fired) from None
            # A refused certificate is refused again: it is not worth a retry.
            kind = "certificate" if _refused_certificate(exc) else "network"
            raise ConnectionFailed(_network_text(req, exc), Failure(kind)) from None
        with closing(response):
            for hop in response.history:
                yield _head(hop, run, final=False)
            head = _head(response, run)
            yield head
            if response.status_code >= 300:
                body = b"".join(_body(response, run, dog, limit=ERROR_BODY_LIMIT))
                raise _status_error(response, head, body)
            yield from _body(response, run, dog)
    finally:
        dog.stop()


def _body(response, run, dog, limit=None):
    """The body's chunks, under the watchdog's deadlines; at most about ``limit`` bytes."""
    httpx = _httpx()
    sock = _socket_of(response)
    if sock is not None:
        # The watchdog owns the body's deadlines now; without this the head's read timeout
        # would also bound every gap between chunks (httpcore reads it when the body starts).
        response.request.extensions.get("timeout", {})["read"] = None
        run.sock = sock
    got = 0
    try:
        for chunk in response.iter_bytes():
            got += len(chunk)
            dog.pause()
            yield chunk
            dog.resume()
            if limit is not None and got >= limit:
                return
    except httpx.TimeoutException:
        raise run.timed_out(dog.fired or ("idle" if got else "first-byte"), got > 0) from None
    except (httpx.TransportError, httpx.DecodingError) as exc:
        if dog.fired:
            raise run.timed_out(dog.fired, got > 0) from None
        if got:
            raise BodyCut(f"body cut short after {got} bytes: {_detail(exc)}",
                          Failure("cut", partial=True)) from None
        raise ConnectionFailed(f"connection closed before the first byte: {_detail(exc)}",
                               Failure("network")) from None
    if dog.fired:  # a body without a length just ends when the socket is shut
        raise run.timed_out(dog.fired, got > 0)


class _Watchdog:
    """Shuts the connection's socket down when the first-byte, idle or total deadline
    passes, from the request on (``run.sock``: the socket, once connected)."""

    def __init__(self, run: _Run, began: float) -> None:
        self._run = run
        self._cond = threading.Condition()
        self._last: float | None = None  # when the last chunk was handed on; None before one
        self._paused = False
        self._stopped = False
        self._began = began
        #: the deadline that passed, if one did
        self.fired: str | None = None
        t = run.timeouts
        if any(v is not None for v in (t.first_byte, t.idle, t.total)):
            threading.Thread(target=self._watch, name="sse-tool-deadlines", daemon=True).start()

    def pause(self) -> None:
        # A chunk is on its way downstream: a slow reader is not an idle server.
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._last = self._run.clock()
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _next(self) -> tuple[float | None, str]:
        t = self._run.timeouts
        candidates = []
        if self._run.deadline is not None:
            candidates.append((self._run.deadline, "total"))
        if not self._paused:
            if self._last is None and t.first_byte is not None:
                candidates.append((self._began + t.first_byte, "first-byte"))
            elif self._last is not None and t.idle is not None:
                candidates.append((self._last + t.idle, "idle"))
        return min(candidates) if candidates else (None, "")

    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                deadline, which = self._next()
                left = None if deadline is None else deadline - self._run.clock()
                if left is not None and left <= 0:
                    self.fired = which
                    if self._run.sock is not None:
                        _shut(self._run.sock)
                    return
                self._cond.wait(left)


def _shut(sock: socket.socket) -> None:
    # Shut a duplicate of the descriptor: shutdown acts on the connection, and touching
    # the socket object itself (an SSL one, say) from this thread would not be safe.
    import socket

    try:
        dup = socket.fromfd(sock.fileno(), sock.family, sock.type)
    except OSError:
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()


def _socket_of(response: httpx.Response) -> socket.socket | None:
    return _socket_of_stream(response.extensions.get("network_stream"))


def _socket_of_stream(stream) -> socket.socket | None:
    import socket  # loaded by httpx already: a request is on its way

    try:
        sock = stream.get_extra_info("socket") if stream is not None else None
    except Exception:  # a custom transport's stream may not know the question
        return None
    return sock if isinstance(sock, socket.socket) else None


def _head(response: httpx.Response, run: _Run, final: bool = True) -> Head:
    return Head(
        http_version=response.http_version,
        status=response.status_code,
        reason=response.reason_phrase,
        headers=_raw(response.headers),
        url=str(response.url),
        time=run.elapsed(),
        final=final,
    )


def _raw(headers: httpx.Headers) -> tuple[tuple[str, str], ...]:
    # As sent and received: httpx's other views lower-case the names.
    return tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers.raw)


def _status_error(response: httpx.Response, head: Head, body: bytes) -> HttpError:
    status = f"HTTP {head.status} {head.reason}".rstrip()
    if head.status < 400:
        where = response.headers.get("location", "")
        message = f"{status}: redirect to {where} not followed (use -L)"
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


def _with_defaults(headers) -> tuple[tuple[str, str], ...]:
    """The request's headers plus the SSE defaults it does not set itself.

    As with curl, ``Name:`` with an empty value removes a header (a default included).
    """
    given = list(headers)
    names = {name.lower() for name, _ in given}
    out = [(n, v) for n, v in DEFAULT_HEADERS if n.lower() not in names]
    out += [(n, v) for n, v in given if v.strip()]
    return tuple(out)


def _strip_secrets_across_origins(url: str):
    origin = _httpx().URL(url)

    def hook(request: httpx.Request) -> None:
        # httpx drops Authorization on a cross-origin redirect; the API-key headers go too.
        same = (request.url.scheme, request.url.host, request.url.port) == (
            origin.scheme, origin.host, origin.port)
        if not same:
            for name in SECRET_HEADERS:
                request.headers.pop(name, None)

    return hook


def _ca_text(exc: OSError, trust_env: bool) -> str:
    import os

    name = next((n for n in ("SSL_CERT_FILE", "SSL_CERT_DIR")
                 if trust_env and os.environ.get(n)), "")
    where = f"{name}={os.environ[name]}" if name else "the default CA certificates"
    return f"cannot load {where}: {exc.strerror or getattr(exc, 'reason', None) or _detail(exc)}"


def _refused_certificate(exc: BaseException):
    """The ``ssl.SSLCertVerificationError`` behind a connection failure, if there is one."""
    import ssl  # loaded by httpx already

    while exc is not None and not isinstance(exc, ssl.SSLCertVerificationError):
        exc = exc.__cause__ or exc.__context__
    return exc


def _network_text(req: httpx.Request, exc: Exception) -> str:
    httpx = _httpx()
    where = req.url.host + (f":{req.url.port}" if req.url.port else "")
    cause = _refused_certificate(exc)
    if cause is not None:
        # The ssl module's own text names a C source line; say what failed, and for an
        # issuer not trusted (X509_V_ERR_* 2, 18-21), the cure.
        hint = " (SSL_CERT_FILE or SSL_CERT_DIR name the CAs to trust)" if cause.verify_code in (
            2, 18, 19, 20, 21) else ""
        return (f"cannot connect to {where}: the server's TLS certificate could not be verified: "
                f"{cause.verify_message.rstrip('.')}{hint}")
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {where}: {_detail(exc)}"
    if isinstance(exc, httpx.ProxyError):
        return f"proxy failed for {where}: {_detail(exc)}"
    return f"connection to {where} failed before the first byte: {_detail(exc)}"


def _detail(exc: Exception) -> str:
    # httpcore raises an HTTP/2 reset or GOAWAY with the h2 event as its text (a repr)
    event = exc.__cause__.args[0] if exc.__cause__ is not None and exc.__cause__.args else None
    code = getattr(event, "error_code", None)
    if code is not None:
        what = "reset the HTTP/2 stream" if hasattr(event, "stream_id") else \
            "ended the HTTP/2 connection"
        return f"the server {what} (error {getattr(code, 'name', code)})"
    return shorten(str(exc) or type(exc).__name__, MESSAGE_LIMIT)


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1000:g}ms" if value < 1 else f"{value:g}s"
