"""``sse-tool fetch``: one HTTP request, the response body's bytes to stdout as they arrive.

The edge around ``sse_tool.fetch``: options to a request, items to stdout, stderr and the
recording, failures to exit codes. httpx is imported only when a request is made (see
``sse_tool.fetch``); every line shown or recorded goes through the redactor.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time
from contextlib import closing
from datetime import datetime, timezone
from enum import Enum
from typing import List, Optional

import typer

from ..errors import ExitCode, OutputFailed, SseToolError
from ..fetch import FetchError, Head, Request, Retrying, Sending, Timeouts, shorten, stream, with_scheme
from ..fetch_writeout import Transfer, parse_format, reads_stream, render
from ..marker import exit_marker
from ..presets import PROVIDERS, Generation, build, parse_param
from ..redact import Redactor, is_secret_header
from ..retry import RetryPolicy
from . import _edge
from ._edge import Output, parse_duration, run_stage, warn

ProviderName = Enum("ProviderName", {name: name for name in PROVIDERS}, type=str)

#: the longest failure message shown on stderr
SHOWN_LIMIT = 240
#: where httpx finds proxies (and their credentials, which a 407 may echo)
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
#: ``_run``'s ``reconnect`` when ``--reconnect`` is not given (None: no limit)
_NO_RECONNECT = -1

EPILOG = """\b
Examples:
  sse-tool fetch https://example.com/events | sse-tool frame
  sse-tool fetch --provider anthropic --model claude-sonnet-4-5 --prompt 'Hi' | sse-tool render
  echo 'Why?' | sse-tool fetch --provider openai --model gpt-4o-mini --prompt - --record why.rec
  sse-tool fetch --json @req.json -H "Authorization: Bearer $KEY" https://api.example.com/v1/chat
  sse-tool fetch -w 'ttft %{time_first_token}s http %{http_code} exit %{exit_code}\\n' URL > /dev/null

\b
Redirects are not followed unless -L is given (as with curl); proxies come from
HTTP_PROXY/HTTPS_PROXY/ALL_PROXY/NO_PROXY. Content encodings (gzip) are decoded.

\b
Exit status (a failure also ends stdout with ': sse-tool exit CODE fetch: WHY', so that
the later stages of a pipe exit with the same code, with or without pipefail):
  0  the body arrived complete
  2  usage error (including a missing API key, a duration too long, --max-redirs < 0)
  3  the body was cut short (reset, incomplete chunked body, short Content-Length)
  6  HTTP status >= 400, a redirect not followed, or one to a non-HTTP URL: the message
     on stderr; nothing on stdout (as curl -f) unless a later stage reads it (the marker)
  7  network failure before the first byte (connect, DNS, TLS, reset)
  8  timeout: connect, first byte (the response head included), idle or total
  11 the output could not be written (stdout closed or full; quietly)
  130 interrupted (the connection is closed at once); 141 the reader closed the pipe

\b
Environment (see man sse-tool-fetch):
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY),
  AZURE_OPENAI_API_KEY, OLLAMA_API_KEY  for --provider (needed only on the provider's own
  hosts); AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION, OLLAMA_HOST  for the base
  HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY; SSL_CERT_FILE, SSL_CERT_DIR
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""

_OUTCOME = {
    ExitCode.OK: "complete", ExitCode.TRUNCATED: "truncated", ExitCode.TIMEOUT: "timeout",
    ExitCode.NETWORK: "network", ExitCode.HTTP_ERROR: "http-error",
}


class FetchUsage(SseToolError):
    exit_code = ExitCode.USAGE


def fetch(
    url: Optional[str] = typer.Argument(None, help="The URL (or use --provider); https:// if it names no scheme, http:// on localhost."),
    method: Optional[str] = typer.Option(None, "--method", "-X", help="Request method (default GET, or POST with a body)."),
    header: Optional[List[str]] = typer.Option(None, "--header", "-H", metavar="'NAME: VALUE'",
                                               help="Add a header; 'NAME:' removes one. Repeatable."),
    data: Optional[str] = typer.Option(None, "--data", "-d", metavar="DATA",
                                       help="Request body: a string, @FILE, or @- for stdin (sent as is)."),
    json_data: Optional[str] = typer.Option(None, "--json", metavar="DATA",
                                            help="Like --data, with Content-Type: application/json."),
    http2: bool = typer.Option(False, "--http2", help="Try HTTP/2 (needs the h2 package)."),
    location: bool = typer.Option(False, "--location", "-L", help="Follow redirects."),
    max_redirs: int = typer.Option(20, "--max-redirs", min=0, metavar="N", help="At most N redirects with -L."),
    provider: Optional[ProviderName] = typer.Option(None, "--provider", "-p", help="Build the request for this API."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model name (with --provider)."),
    prompt: Optional[str] = typer.Option(None, "--prompt", help="The user prompt; - reads it from stdin. Text piped in goes before it."),
    system: Optional[str] = typer.Option(None, "--system", help="A system prompt."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="Maximum output tokens."),
    temperature: Optional[float] = typer.Option(None, "--temperature", help="Sampling temperature."),
    reasoning: Optional[str] = typer.Option(None, "--reasoning", metavar="LEVEL",
                                            help="Reasoning/thinking: off, low, medium, high, or a token budget."),
    param: Optional[List[str]] = typer.Option(None, "--param", metavar="PATH=JSON",
                                              help="Set a body field (dotted path; null removes). Repeatable."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="The API base for a compatible server, as the SDKs take it "
                                           "(a key is then sent only if its variable is set)."),
    connect_timeout: str = typer.Option("30s", "--connect-timeout", metavar="DURATION", help="Limit for connecting."),
    first_byte_timeout: Optional[str] = typer.Option(None, "--first-byte-timeout", metavar="DURATION",
                                                     help="Limit from sending to the first body byte."),
    idle_timeout: Optional[str] = typer.Option(None, "--idle-timeout", metavar="DURATION",
                                               help="Limit on any silence once the body flows."),
    max_time: Optional[str] = typer.Option(None, "--max-time", metavar="DURATION",
                                           help="Limit for everything, retries included."),
    retry: int = typer.Option(0, "--retry", min=0, metavar="N",
                              help="Retry up to N times on connect errors, timeouts, 408/429/5xx before the first body byte."),
    retry_delay: str = typer.Option("500ms", "--retry-delay", metavar="DURATION",
                                    help="First backoff step; it doubles each retry (max 30s), with jitter."),
    retry_partial: bool = typer.Option(False, "--retry-partial",
                                       help="Also retry after body bytes went out; writes ': sse-tool reset' first."),
    reconnect: bool = typer.Option(
        False, "--reconnect",
        help="Follow the SSE reconnection rules: after a cut or a clean end, reconnect with "
             "Last-Event-ID and continue the stream, events neither lost nor repeated."),
    reconnect_limit: Optional[int] = typer.Option(
        None, "--reconnect-limit", min=0, metavar="N",
        help="At most N reconnections (implies --reconnect; default: no limit)."),
    reconnect_delay: Optional[str] = typer.Option(
        None, "--reconnect-delay", metavar="DURATION",
        help="Wait before reconnecting until the stream sets retry: (backoff on repeated failures; "
             "implies --reconnect; default: 3s)."),
    record: Optional[str] = typer.Option(None, "--record", metavar="FILE", help="Save the exchange: request, response head, every body chunk with its arrival time, secrets masked (replay, serve, inspect and check read it)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show request and response headers on stderr (secrets redacted)."),
    write_out: Optional[str] = typer.Option(None, "--write-out", "-w", metavar="FORMAT",
                                            help="After the transfer, write FORMAT to stderr: %{time_total}, "
                                                 "%{time_first_token}, ... (as curl; @FILE reads it)."),
) -> None:
    """Send one HTTP request and write the response body to stdout as it arrives, unchanged.

    Each chunk is flushed at once. Accept: text/event-stream, Cache-Control: no-cache and
    User-Agent: sse-tool/VERSION are sent unless -H sets them. Secrets (Authorization,
    x-api-key, api-key, x-goog-api-key, cookies, key= parameters) are redacted in every
    message and recording.
    """
    timeouts = Timeouts(
        connect=_duration(connect_timeout, "--connect-timeout"),
        first_byte=_duration(first_byte_timeout, "--first-byte-timeout"),
        idle=_duration(idle_timeout, "--idle-timeout"), total=_duration(max_time, "--max-time"),
    )
    delay = parse_duration(retry_delay, "--retry-delay")
    reconnect_wait = parse_duration(reconnect_delay or "3s", "--reconnect-delay")
    redactor = Redactor(os.environ.get(v, "") for p in PROVIDERS.values() for v in p.key_variables)
    for variable in PROXY_VARIABLES:
        if proxy := os.environ.get(variable, "").strip():
            try:
                redactor.learn_url(proxy if "://" in proxy else "http://" + proxy)
            except ValueError as exc:  # (the value itself not said: it may hold a password)
                raise typer.BadParameter(f"not a proxy URL: {exc}", param_hint=variable) from None

    said: list[str] = []  # for -w's %{errormsg}: the last thing said

    def say(message: str, notice: bool = False, marked: bool = False) -> None:
        """Tell a person: a ``notice`` goes in-band when a later stage shows it in its own
        view; a failure that ``mark`` writes in-band is left to that stage to say."""
        said.append(shorten(redactor.text(message), SHOWN_LIMIT))  # redacted, then cut
        if out is not None and notice:
            out.notice("fetch", said[-1])
        elif not (marked and out is not None and out.read_by_a_stage()):
            warn("fetch", said[-1])

    out = None

    def mark(code: int, reason: str, error=None) -> None:
        """End the output with the failure marker, for the later stages to exit with. Before
        the body began, only when a later stage reads it: a file or another program gets
        nothing, as from curl."""
        if out is not None and (out.began or out.read_by_a_stage()):
            out.marker(exit_marker(code, "fetch", redactor.text(reason)))

    def body(transfer: Optional[Transfer] = None) -> int:
        nonlocal out
        out = Output()
        try:
            reconnections = _reconnect_option(reconnect or reconnect_delay is not None, reconnect_limit,
                                              retry_partial)
            request = _request(url, method, header or [], data, json_data, provider, Generation(
                model=model or "", prompt=prompt or "", system=system, max_tokens=max_tokens,
                temperature=temperature, reasoning=reasoning,
                params=dict(parse_param(p) for p in param or []),
            ), base_url, redactor)
            return _run(out, request, timeouts, redactor, say, http2=http2, location=location,
                        max_redirs=max_redirs, retry=retry, retry_partial=retry_partial,
                        retry_delay=delay, reconnect=reconnections, reconnect_delay=reconnect_wait,
                        record=record, verbose=verbose, transfer=transfer)
        except (BrokenPipeError, OutputFailed, KeyboardInterrupt, typer.Exit):
            raise  # run_stage ends these (the last two quietly)
        except SseToolError as exc:
            say(str(exc), marked=True)
            mark(exc.exit_code, str(exc))
            return exc.exit_code
        except Exception as exc:  # a bug; its text may hold a URL, so redact it too
            if _edge.debug:
                raise
            say(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)", marked=True)
            mark(ExitCode.INTERNAL, f"internal error: {type(exc).__name__}")
            return ExitCode.INTERNAL

    def body_and_write_out() -> int:
        if write_out is None:
            return body()
        if write_out == "@-" and (prompt == "-" or "@-" in (data, json_data)):
            raise FetchUsage("-w @- and the request cannot both read stdin")
        pieces = _write_out_format(write_out)  # a bad format is a usage error before any request
        transfer = Transfer(read_stream=reads_stream(pieces))
        code, error = ExitCode.INTERNAL, ""
        try:
            code = body(transfer)
            error = said[-1] if said and code else ""
            return code
        except BrokenPipeError:
            code, error = ExitCode.BROKEN_PIPE, "the reader closed the pipe"
            raise
        except KeyboardInterrupt:
            code, error = ExitCode.INTERRUPTED, "interrupted"
            raise
        except OutputFailed:
            code, error = ExitCode.OUTPUT, "the output could not be written"
            raise
        finally:
            _write_out(pieces, transfer, code, error, say)

    run_stage("fetch", body_and_write_out, mark)


def _duration(text: Optional[str], option: str) -> Optional[float]:
    if text is None or text.strip().lower() in ("", "0", "none", "off"):
        return None
    return parse_duration(text, option)


def _request(url, method, headers, data, json_data, provider, gen, base_url, redactor):
    pairs = [_header(h) for h in headers]
    redactor.learn_headers(pairs)
    if data is not None and json_data is not None:
        raise FetchUsage("give --data or --json, not both")
    content = _read_data(data if data is not None else json_data)
    if provider is None:
        if url is None:
            raise FetchUsage("give a URL, or --provider with --model and --prompt")
        given = [name for name, value in (("--model", gen.model), ("--prompt", gen.prompt), ("--system", gen.system),
                                          ("--max-tokens", gen.max_tokens), ("--temperature", gen.temperature),
                                          ("--reasoning", gen.reasoning), ("--param", gen.params), ("--base-url", base_url))
                 if value not in (None, "", {})]
        if given:  # they build a provider's body: with a URL they would be silently left out
            raise FetchUsage(f"{', '.join(given)} {'goes' if len(given) == 1 else 'go'} with --provider "
                             "(a URL's body is --data or --json)")
        url = _checked(with_scheme(url))
        if data is not None:
            pairs = _defaults([("Content-Type", "application/x-www-form-urlencoded")], pairs)
        elif json_data is not None:
            pairs = _defaults([("Content-Type", "application/json")], pairs)
        redactor.learn_url(url)
        return Request((method or ("POST" if content is not None else "GET")).upper(), url,
                       tuple(pairs), content)
    if url is not None:
        raise FetchUsage("give a URL or --provider, not both (--base-url points a preset elsewhere)")
    if content is not None:
        raise FetchUsage("--provider builds the body; use --param to change a field")
    if not gen.model:
        raise FetchUsage(f"--provider {provider.value} needs --model")
    if gen.prompt == "-":
        gen = gen._replace(prompt=sys.stdin.read())
    elif not gen.prompt:
        raise FetchUsage(f"--provider {provider.value} needs --prompt (- reads it from stdin)")
    elif piped := _piped():
        gen = gen._replace(prompt=f"{piped}\n\n{gen.prompt}")
    have_credential = any(is_secret_header(n) and v.strip() for n, v in pairs)
    preset = build(provider.value, gen, os.environ, base_url=base_url and _checked(with_scheme(base_url)),
                   have_credential=have_credential)
    redactor.learn_headers(preset.headers)
    redactor.learn_url(preset.url)
    return Request((method or preset.method).upper(), preset.url,
                   tuple(_defaults(preset.headers, pairs)), preset.body)


def _checked(url: str) -> str:
    """``url``, if it can be read as a URL (a bracketed host that is an IP address, a port
    that is a number below 65536); else a usage error, before any connection."""
    from ipaddress import ip_address
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # (reads the host and the port, and checks both)
        if "[" in parts.netloc:  # (Python before 3.11.4 does not check a bracketed host)
            ip_address(parts.hostname or "")
    except ValueError as exc:
        raise FetchUsage(f"bad URL: {exc}") from None  # (not the URL itself: it may hold a key)
    return url


def _piped() -> str:
    """Text piped to fetch beside a --prompt, which goes before the prompt (as ``llm``
    does): ``git diff | sse-tool fetch ... --prompt 'Review this'``. Only a pipe or a file
    is read: not a terminal, nor a socket a service manager left open, which may never end."""
    if sys.stdin is None:
        return ""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return sys.stdin.read().rstrip("\n")  # an in-memory stdin (a library caller's)
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return ""
    return sys.stdin.read().rstrip("\n")


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
        raise FetchUsage(f"-H: expected 'Name: value', got {text!r}")
    return name.strip(), value.strip()


def _defaults(defaults: list[tuple[str, str]], given: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``given`` headers override same-named ``defaults`` (names compare without case)."""
    names = {n.lower() for n, _ in given}
    return [(n, v) for n, v in defaults if n.lower() not in names] + given


def _read_data(value: Optional[str]) -> Optional[bytes]:
    if value is None:
        return None
    if value == "@-":
        return sys.stdin.buffer.read()
    if value.startswith("@"):
        try:
            with open(value[1:], "rb") as f:
                return f.read()
        except OSError as exc:
            raise FetchUsage(f"{value[1:]}: {exc.strerror}") from None
    return value.encode("utf-8")


def _run(out, request, timeouts, redactor, say, *, http2, location, max_redirs, retry, retry_partial,
         retry_delay, record, verbose, transfer=None, reconnect=_NO_RECONNECT, reconnect_delay=3.0) -> int:
    recorder = _Recorder(record, redactor)
    start = time.monotonic()

    def trace(event, info):  # for -w: when the connection was made, and so on
        transfer.trace(time.monotonic() - start, event, info)
    options = dict(http2=http2, follow_redirects=location, max_redirects=max_redirs,
                   trace=trace if transfer is not None else None, sleep=_edge.wait)
    if reconnect is _NO_RECONNECT:
        items = stream(request, timeouts=timeouts, policy=RetryPolicy(retry, partial=retry_partial, base=retry_delay),
                       **options)
    else:
        items = _reconnecting(request, timeouts, reconnect, reconnect_delay, retry, retry_delay, options)
    try:
        with closing(items):
            for item in items:
                if isinstance(item, bytes):
                    recorder.chunk(time.monotonic() - start, item)
                    out.send(item)
                    if transfer is not None:
                        transfer.chunk(time.monotonic() - start, item)
                elif isinstance(item, Sending):
                    if item.attempt == 1:  # the times count from here: the request, not the imports
                        start = time.monotonic()
                        if transfer is not None:
                            transfer.started = start
                    if transfer is not None:
                        transfer.sending(item.method, redactor.url(item.url), item.attempt)
                    if verbose:
                        _show(redactor, "> ", f"{item.method} {redactor.url(item.url)}", item.headers)
                    recorder.request(item)
                elif isinstance(item, Head):
                    if transfer is not None:
                        transfer.head(time.monotonic() - start, item.status, item.http_version,
                                      redactor.url(item.url), redactor.headers(item.headers), item.final)
                    if verbose:
                        _show(redactor, "< ", f"{item.http_version} {item.status} {item.reason}",
                              item.headers)
                    if item.final:
                        recorder.head(item)
                elif isinstance(item, Retrying):
                    w = item.wait
                    text = (f"{item.reason}; retry {w.attempt}/{w.retries} in "
                            f"{w.seconds:.3g}s ({w.basis})")
                    say(text, notice=True)
                    recorder.note(text)
                elif _is_notice(item):  # fetch --reconnect's, said as the retry notices are
                    say(item.text)
                    recorder.note(item.text)
    except FetchError as exc:
        body = getattr(exc, "body", b"")
        recorder.fail(time.monotonic() - start, exc, body)
        if transfer is not None:
            transfer.size += len(body)  # the error body was downloaded too, as curl counts it
        raise
    except BrokenPipeError:
        recorder.end(time.monotonic() - start, "broken-pipe")
        raise
    except KeyboardInterrupt:
        recorder.end(time.monotonic() - start, "interrupted")
        raise
    recorder.end(time.monotonic() - start, "complete")
    return ExitCode.OK


def _reconnect_option(reconnect: bool, limit: Optional[int], retry_partial: bool):
    """The reconnections allowed: ``_NO_RECONNECT`` without ``--reconnect``, None for no limit."""
    if not reconnect and limit is None:
        return _NO_RECONNECT
    if retry_partial:
        raise FetchUsage("--reconnect resumes the stream, --retry-partial starts it again: give one")
    return limit


def _reconnecting(request, timeouts, limit, delay, retry, retry_delay, options):
    from ..fetch.reconnecting import reconnecting  # only with --reconnect

    return reconnecting(request, limit=limit, delay=delay, timeouts=timeouts, retry=retry,
                        retry_delay=retry_delay, **options)


def _is_notice(item) -> bool:
    module = sys.modules.get("sse_tool.fetch.reconnecting")
    return module is not None and isinstance(item, module.Notice)


def _write_out_format(value: str):
    """-w's pieces: the format itself, or read from @FILE (@- for stdin), as curl does."""
    if value.startswith("@"):
        value = _read_data(value).decode("utf-8", "replace")
    return parse_format(value)


def _write_out(pieces, transfer: Transfer, code: int, error: str, say) -> None:
    """Write -w's text, after the transfer, where the format sends it."""
    started = transfer.started
    transfer.finish(0.0 if started is None else time.monotonic() - started, code, error)
    for where, text in render(pieces, transfer):
        data = text.encode("utf-8")
        if where == "stdout":
            try:
                Output().send(data)
            except BrokenPipeError:
                pass
        elif where == "stderr":
            _edge.write_stderr(text)
        else:
            path = where.lstrip(">").strip()
            try:
                with open(path, "ab" if where.startswith(">>") else "wb") as f:
                    f.write(data)
            except OSError as exc:
                say(f"-w: %output{{{path}}}: {exc.strerror}")


def _show(redactor: Redactor, mark: str, first: str, headers) -> None:
    lines = [mark + first] + [f"{mark}{n}: {v}" for n, v in redactor.headers(headers)]
    _edge.write_stderr("\n".join(redactor.text(line) for line in lines) + "\n" + mark.strip() + "\n")


class _Recorder:
    """What ``--record`` keeps: the first request, the head whose body went out, chunks, the end."""

    def __init__(self, path: Optional[str], redactor: Redactor) -> None:
        self._path = path
        self._redactor = redactor
        self._writer = None  # a RecordingWriter once the request goes out
        self._file = None
        self._head = None  # the latest final head, recorded once its body starts
        self._head_written = False

    def request(self, sending) -> None:
        if self._path is None or self._writer is not None:
            return
        from ..recording import RecordingWriter  # only with --record

        try:
            self._file = open(self._path, "w", encoding="utf-8", newline="\n")
        except OSError as exc:
            raise FetchUsage(f"--record {self._path}: {exc.strerror}") from None
        self._writer = RecordingWriter(self._file, self._redactor)
        self._writer.start(datetime.now(timezone.utc).isoformat(timespec="microseconds")
                           .replace("+00:00", "Z"))
        self._writer.request(sending.method, sending.url, sending.headers, sending.body)

    def head(self, head) -> None:
        self._head = head

    def _write_head(self) -> None:
        if self._writer and self._head is not None and not self._head_written:
            h = self._head
            self._writer.response(h.http_version, h.status, h.reason, h.headers)
            self._head_written = True

    def chunk(self, t: float, data: bytes) -> None:
        if self._writer:
            self._write_head()
            self._writer.chunk(t, data)

    def note(self, text: str) -> None:
        if self._writer:
            self._writer.note(text)

    def fail(self, t: float, exc, body: bytes) -> None:
        if not self._writer:
            return
        if self._head_written and exc.exit_code == ExitCode.HTTP_ERROR:
            # A retry answered with an error after a body went out: the chunks are that
            # body, as on stdout, so the error's head and body are a note, not more chunks.
            h = self._head
            self.note(f"the retry was answered {h.http_version} {h.status} {h.reason}: "
                      + body.decode("utf-8", "replace"))
        elif body or exc.exit_code == ExitCode.HTTP_ERROR:
            self._write_head()
            if body:
                self._writer.chunk(t, body)
        self.end(t, _OUTCOME.get(exc.exit_code, "network"), str(exc))

    def end(self, t: float, outcome: str, detail: str = "") -> None:
        if self._writer:
            if outcome == "complete":
                self._write_head()
            self._writer.end(t, outcome, detail)
            self._file.close()
            self._writer = None
