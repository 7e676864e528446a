"""One request in, the response body out as chunks, as they arrive (``stream``).

Retries follow a ``retry.RetryPolicy``; the deadlines after the connection are the
watchdog's (``watchdog.py``); failures are raised as the typed errors of ``failures.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import TYPE_CHECKING, NamedTuple

from ..marker import reset_after
from ..retry import Failure, RetryPolicy, Wait
from .failures import (TIMEOUT_TEXT, BodyCut, ConnectionFailed, FetchError, HttpError, TimedOut,
                       UsageError, ca_text, detail, network_text, refused_certificate, seconds,
                       status_error)
from .lazy import load_httpx
from .request import USER_AGENT, Request, Timeouts, strip_secrets_across_origins, with_defaults
from .watchdog import Watchdog, socket_of, socket_of_stream

if TYPE_CHECKING:
    import socket

    import httpx

#: how much of an error body is read for the message, and for how long between reads
ERROR_BODY_LIMIT = 64 * 1024
ERROR_BODY_WAIT = 5.0


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
    httpx = load_httpx()
    policy = policy or RetryPolicy(0)
    headers = with_defaults(request.headers)
    run = Run(clock, timeouts)
    try:
        client = httpx.Client(
            http2=http2, transport=transport, trust_env=trust_env, max_redirects=max_redirects,
            headers={"User-Agent": USER_AGENT},
            event_hooks={"request": [strip_secrets_across_origins(request.url)]},
        )
    except ImportError as exc:  # an optional package httpx needs for what was asked
        if "socksio" in str(exc):
            raise UsageError("a SOCKS proxy (from ALL_PROXY, HTTPS_PROXY, ...) needs the socksio package: "
                             "pip install socksio") from None
        raise UsageError("--http2 needs the h2 package: pip install 'sse-tool[http2]'") from None
    except httpx.InvalidURL as exc:  # a URL that reads as one, but not to httpx
        raise UsageError(f"bad URL: {exc}") from None
    except ValueError as exc:
        # a proxy from the environment that httpx cannot use; its URL is not said (httpx
        # puts it in its message): it may hold a password
        raise UsageError(f"a proxy variable: {str(exc).split(' URL(')[0]}") from None
    except OSError as exc:  # httpx loads SSL_CERT_FILE / SSL_CERT_DIR here
        raise UsageError(ca_text(exc, trust_env)) from None
    removed = {n.lower() for n, v in request.headers if not v.strip()}
    for name in [n for n in client.headers if n.lower() in removed]:
        del client.headers[name]  # -H 'Accept-Encoding:' sends none, not httpx's, as with curl
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
                            # the earlier attempt's bytes were passed on: the later stages
                            # must discard that draft
                            yield reset_after(last_byte)
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


class Run:
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
            self.sock = socket_of_stream(info.get("return_value"))

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
        return TimedOut(TIMEOUT_TEXT[which].format(s=seconds(value)),
                        Failure("timeout", timeout=which, partial=partial))


def _both(first: Callable[[str, dict], None], second: Callable[[str, dict], None]):
    """One httpcore trace hook calling two: the watchdog's, then the caller's."""
    def trace(event: str, info: dict) -> None:
        first(event, info)
        second(event, info)
    return trace


def _attempt(client, request, headers, attempt, run, follow_redirects, trace=None):
    httpx = load_httpx()
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
    yield Sending(req.method, str(req.url), _sent_headers(req), request.body, attempt)
    req.extensions["trace"] = run.trace if trace is None else _both(run.trace, trace)
    dog = Watchdog(run, run.clock())  # the head is under the first-byte and total deadlines
    sent = req  # the request of the hop under way: a failure is said of its host
    # An Authorization header given (-H) is sent as given, as curl does: httpx would put
    # the URL's user:password over it as Basic auth (a no-op Auth keeps it from that).
    given = any(name.lower() == "authorization" for name, _ in request.headers)
    auth = httpx.Auth() if given else httpx.USE_CLIENT_DEFAULT
    try:
        try:
            response = client.send(req, stream=True, auth=auth)
            # Redirects are followed here, not by httpx, so that each hop's head is said as
            # it comes and one past --max-redirs is the final head, as curl reports it.
            hops = 0
            while follow_redirects and response.next_request is not None:
                if hops == client.max_redirects:
                    with closing(response):
                        yield _head(response, run)
                    raise HttpError(f"more than {hops} redirects", Failure("status"))
                with closing(response):  # its body is never read: a hostile one may not end
                    yield _head(response, run, final=False)
                hops += 1
                sent = response.next_request
                response = client.send(sent, stream=True, auth=auth)
        except httpx.ConnectTimeout:
            raise run.timed_out(connect_which) from None
        except httpx.PoolTimeout:
            raise run.timed_out(connect_which) from None
        except (httpx.ReadTimeout, httpx.WriteTimeout):
            raise run.timed_out(dog.fired or first_which) from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            # The URL asked for is http(s): only a redirect can lead elsewhere (javascript:, data:)
            raise HttpError(f"redirect to a URL that is not http or https: {detail(exc)}",
                            Failure("status")) from None
        except httpx.LocalProtocolError as exc:
            # what was asked cannot be sent (a CR or LF in a header, a method with a space)
            raise UsageError(f"bad request: {detail(exc)}") from None
        except httpx.TransportError as exc:
            if dog.fired:  # the watchdog shut the socket while the head was coming
                raise run.timed_out(dog.fired) from None
            # A refused certificate is refused again: it is not worth a retry.
            kind = "certificate" if refused_certificate(exc) else "network"
            raise ConnectionFailed(network_text(sent, exc), Failure(kind)) from None
        with closing(response):
            head = _head(response, run)
            yield head
            if response.status_code >= 300:
                raise status_error(response, head, _error_body(response, run, dog), follow_redirects)
            yield from _body(response, run, dog)
    finally:
        dog.stop()


def _error_body(response, run, dog) -> bytes:
    """What arrives of an error status's body for its message: the status is the failure
    whatever becomes of the body (cut, or stalled: each read waits ``ERROR_BODY_WAIT``)."""
    got = []
    try:
        got += _body(response, run, dog, limit=ERROR_BODY_LIMIT, wait=ERROR_BODY_WAIT)
    except FetchError:
        pass
    return b"".join(got)


def _body(response, run, dog, limit=None, wait=None):
    """The body's chunks, under the watchdog's deadlines (and ``wait`` seconds at most per
    read); at most about ``limit`` bytes."""
    httpx = load_httpx()
    sock = socket_of(response)
    if sock is not None:
        # The watchdog owns the body's deadlines now; without this the head's read timeout
        # would also bound every gap between chunks (httpcore reads it when the body starts).
        response.request.extensions.get("timeout", {})["read"] = wait
        run.sock = sock
    got = 0
    # (a transport that read the body already, as httpx.MockTransport does, left it decoded)
    gzip = (response.headers.get("content-encoding", "").strip().lower() in ("gzip", "x-gzip")
            and not response.is_stream_consumed)
    try:
        for chunk in (_gunzipped(response.iter_raw()) if gzip else response.iter_bytes()):
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
            raise BodyCut(f"body cut short after {got} bytes: {detail(exc)}",
                          Failure("cut", partial=True)) from None
        if isinstance(exc, httpx.DecodingError):  # the connection is fine, what it carried is not
            raise ConnectionFailed(f"the body could not be decoded: {detail(exc)}",
                                   Failure("network")) from None
        raise ConnectionFailed(f"connection closed before the first byte: {detail(exc)}",
                               Failure("network")) from None
    if dog.fired:  # a body without a length just ends when the socket is shut
        raise run.timed_out(dog.fired, got > 0)


def _gunzipped(raw: Iterator[bytes]) -> Iterator[bytes]:
    """A gzip body decoded as it arrives, member after member (a gzip file may hold several:
    httpx's decoder stops after the first), and a cut (``httpx.DecodingError``) where the
    body ends inside a member: its last bytes, the CRC and length, prove it whole. Bytes
    that are not gzip are an ``httpx.DecodingError``."""
    import zlib

    httpx = load_httpx()
    inflate, begun = zlib.decompressobj(16 + zlib.MAX_WBITS), False
    try:
        for data in raw:
            while data:
                begun = True
                out = inflate.decompress(data)
                if out:
                    yield out
                if not inflate.eof:
                    break
                data = inflate.unused_data  # the next member, if any
                inflate, begun = zlib.decompressobj(16 + zlib.MAX_WBITS), False
    except zlib.error as exc:
        raise httpx.DecodingError(f"bad gzip data: {exc}") from None
    if begun:
        raise httpx.RemoteProtocolError("the gzip data ended inside a member")


def _head(response: httpx.Response, run: Run, final: bool = True) -> Head:
    return Head(
        http_version=response.http_version,
        status=response.status_code,
        reason=response.reason_phrase,
        headers=_raw(response.headers),
        url=str(response.url),
        time=run.elapsed(),
        final=final,
    )


def _sent_headers(req) -> tuple[tuple[str, str], ...]:
    """The request's headers as they go out: with the Basic credentials httpx adds as it
    sends a URL's user:password (shown masked, as every secret)."""
    headers = _raw(req.headers)
    url = req.url
    if (url.username or url.password) and "authorization" not in req.headers:
        from ..redact import basic_token

        headers += (("Authorization", f"Basic {basic_token(url.username, url.password)}"),)
    return headers


def _raw(headers: httpx.Headers) -> tuple[tuple[str, str], ...]:
    # As sent and received: httpx's other views lower-case the names.
    return tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers.raw)
