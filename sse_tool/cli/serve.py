"""``sse-tool serve``: recordings and stream files as live HTTP streams, faults on demand, or a relay.

The edge around ``sse_tool.serve``: options to a fault plan, streams or a relay, the
listening socket (loopback unless ``--allow-remote``), uvicorn, and the access log on
stderr. uvicorn (and, for the relay, httpx) is imported only when the command runs.
"""

from __future__ import annotations

import os
import signal
from enum import Enum
from typing import List, Optional
from urllib.parse import urlsplit

import typer

from ..errors import ExitCode, SseToolError
from ..plural import count
from ..presets import PROVIDERS
from ..redact import Redactor
from ..serve import ServeUsage
from ._edge import parse_size, run_stage, warn

# the providers whose key the relay knows how to send (not every fetch preset)
RelayProvider = Enum("RelayProvider", {n: n for n in ["openai", "openai-responses", "anthropic", "gemini", "none"]},
                     type=str)
AsProvider = Enum("AsProvider", {n: n for n in ("openai", "anthropic", "gemini", "ollama", "cohere")},
                  type=str)
Mode = Enum("Mode", {n: n for n in ("replay", "record", "hybrid")}, type=str)

EPILOG = """\b
Examples:
  sse-tool serve why.rec tests/fixtures/        # GET / lists the paths
  sse-tool fetch 'http://127.0.0.1:8000/why?cut_after_events=3' | sse-tool render
  sse-tool fetch 'http://127.0.0.1:8000/why?status=429&retry_after=1&times=1' --retry 2
  sse-tool serve --fault chunk=1 --fault chunk_delay=20ms --speed 0 stream.sse
  sse-tool serve --as openai --as anthropic recordings/   # SDK base URL: http://127.0.0.1:8000/v1
  OPENAI_API_KEY=sk-... sse-tool serve --upstream https://api.openai.com \\
      --record-dir recordings/ --mode hybrid    # record once, then replay
  OPENAI_API_KEY=sk-... sse-tool serve --upstream https://api.openai.com \\
      --allow-origin http://localhost:5173

\b
Provider mode (--as): the provider's endpoints (/v1/chat/completions, /v1/responses,
/v1/messages, /v1beta/models/M:streamGenerateContent, /api/chat, /v2/chat), after any base
path; a base path that names a stream or folder chooses it. A recording is chosen by the
request's JSON body, then its model, then as the only one; a miss is a 422 in the
provider's error shape naming the nearest recordings. "stream": false gets the
provider's non-streaming answer, assembled from the stream.

\b
Faults (query parameters per request, or --fault NAME=VALUE for every request):
  cut_after_bytes=N, cut_after_events=N  then cut the connection (incomplete body)
  stall=1            hang instead (alone: right after the headers), forever
  chunk=N            writes of at most N bytes;  chunk_delay=D  more wait between writes
  first_byte_delay=D wait before the first body byte (headers go at once)
  keepalive=D        ': keep-alive' comment lines in every silence of D or more
  status=N           an error answer (retry_after=S, message=M, body=TEXT,
                     provider=openai|anthropic|gemini|ollama|cohere for the JSON shape)
  quirk=A,B          wire quirks that broke real clients: comments, ping-after-id,
                     id-only, retry-only, event-keepalive, data-keepalive, empty-choices,
                     error-after-200, long-line, huge-line, no-space, cr, split-crlf,
                     split-utf8, one-byte, hold-open
  times=N            faults for the first N requests to that URL only, counted per
                     X-Sse-Tool-Test header; POST /_sse-tool/reset starts again
  speed=X, rate=R    as --speed and --rate
  The X-Sse-Tool-Fault header takes the same, as a query string (for SDKs).

\b
Relay (--upstream URL): the upstream's scheme, host and port never come from a request:
only a plain path (no '..', '@', '\\', encoded '/') under an --allow-path prefix goes,
appended to URL's path. The key comes from the server's environment (OPENAI_API_KEY,
ANTHROPIC_API_KEY, GEMINI_API_KEY, by --provider or the upstream's host) and is masked in
every answer; credentials the client sends are dropped, never forwarded or echoed.
Without --token only requests whose Host names this server and that come from no browser
page (an Origin not allowed by --allow-origin) are served.

\b
Exit status: 2 usage error (a non-loopback --host without --allow-remote, a missing
key, a port in use); 5 a recording that cannot be read; 130 stopped with Ctrl-C.

\b
Environment (see man sse-tool-serve):
  SSE_TOOL_SERVE_TOKEN  the default of --token (keeps it out of ps)
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY)  for the relay
  SSE_TOOL_DEBUG=1  show the traceback of an internal error (as sse-tool --debug)
"""


def serve(
    paths: Optional[List[str]] = typer.Argument(
        None, help="Recordings (fetch --record) or stream files (.sse, .json, .ndjson, .eventstream), "
             "or directories of them."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free port)."),
    allow_remote: bool = typer.Option(False, "--allow-remote",
                                      help="Allow a --host other than loopback (reachable from the network)."),
    speed: float = typer.Option(1.0, "--speed", min=0, help="Timing factor: 2 twice as fast, 0 no delays."),
    rate: Optional[str] = typer.Option(None, "--rate", metavar="RATE",
                                       help="Pace of plain files: events (20ev) or bytes (4kB) a second [default: 20ev]."),
    fault: Optional[List[str]] = typer.Option(None, "--fault", metavar="NAME=VALUE",
                                              help="A fault for every request (see below). Repeatable."),
    upstream: Optional[str] = typer.Option(None, "--upstream", metavar="URL",
                                           help="Relay every request to this API base instead."),
    provider: Optional[RelayProvider] = typer.Option(
        None, "--provider", help="Whose key the relay injects (default: from the upstream host)."),
    allow_path: Optional[List[str]] = typer.Option(
        None, "--allow-path", metavar="PREFIX",
        help="Relay only paths under PREFIX (default: the provider's API, e.g. /v1/). Repeatable."),
    token: Optional[str] = typer.Option(None, "--token", envvar="SSE_TOOL_SERVE_TOKEN",
                                        help="Require Authorization: Bearer TOKEN from clients."),
    allow_host: Optional[List[str]] = typer.Option(
        None, "--allow-host", metavar="NAME", help="Accept Host NAME too (without --token). Repeatable."),
    allow_origin: Optional[List[str]] = typer.Option(
        None, "--allow-origin", "--cors-origin", metavar="ORIGIN",
        help="Allow browser pages from ORIGIN, with CORS (* for any). Repeatable."),
    max_request_size: str = typer.Option(
        "8MiB", "--max-request-size", metavar="SIZE", help="Largest request body (413 past it)."),
    as_: Optional[List[AsProvider]] = typer.Option(
        None, "--as", help="Answer this provider's API endpoints, choosing a recording by the request. Repeatable."),
    route: Optional[List[str]] = typer.Option(
        None, "--route", metavar="'METHOD /PATH=FILE'",
        help="Answer METHOD /PATH (method optional) with FILE. Repeatable."),
    record_dir: Optional[str] = typer.Option(
        None, "--record-dir", metavar="DIR",
        help="With --upstream: write each exchange as a recording in DIR (made if missing)."),
    mode: Optional[Mode] = typer.Option(
        None, "--mode",
        help="replay (files only), record (relay and record), hybrid (replay an exact match, "
             "else relay and record) [default: record with --upstream and --record-dir, a plain "
             "relay with --upstream alone, else replay]."),
    resumable: bool = typer.Option(
        False, "--resumable",
        help="With --upstream: give each relayed event an id and buffer the stream, so that a "
             "client back with Last-Event-ID gets the rest without a second upstream request."),
    resume_buffer: str = typer.Option(
        "64MiB", "--resume-buffer", metavar="SIZE",
        help="With --resumable: the most all streams keep together (the oldest bytes of the largest go first)."),
    resume_ttl: str = typer.Option(
        "5m", "--resume-ttl", metavar="DURATION",
        help="With --resumable: how long a stream is kept after it ended or its last client left."),
    head_timeout: str = typer.Option(
        "20s", "--head-timeout", metavar="DURATION",
        help="A request's head must arrive whole within this (408 and closed past it)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No access log."),
) -> None:
    """Serve recordings and stream files over HTTP with their recorded timing, faults on
    demand, or relay requests to a provider with the server's API key.

    Listens on 127.0.0.1 unless told otherwise. One access-log line per request on
    stderr, secrets redacted.
    """
    redactor = Redactor(os.environ.get(v, "") for p in PROVIDERS.values() for v in p.key_variables)
    if token:
        redactor.learn(token)

    def log(line: str) -> None:
        warn("serve", redactor.text(line))

    def body() -> int:
        import logging

        from ..replay import DEFAULT_RATE, parse_rate
        from ._edge import parse_duration

        if not _is_loopback(host) and not allow_remote:
            raise ServeUsage(f"refusing to listen on {host} without --allow-remote "
                             "(anyone who can reach it could use it)")
        try:
            parse_rate(rate or DEFAULT_RATE)
            limit = parse_size(max_request_size, "--max-request-size")
            head_seconds = parse_duration(head_timeout, "--head-timeout")
            if head_seconds <= 0:
                raise ServeUsage("--head-timeout must be more than 0")
            resume = _resume_store(resumable, resume_buffer, resume_ttl, upstream, mode, record_dir)
        except (SseToolError, typer.BadParameter) as exc:
            raise ServeUsage(str(exc)) from None
        providers = tuple(p.value for p in as_ or ())
        how = mode.value if mode else (("record" if record_dir else "relay") if upstream else "replay")
        if how in ("record", "hybrid") and not (upstream and record_dir):
            raise ServeUsage(f"--mode {how} relays and records: give --upstream URL and --record-dir DIR")
        if upstream:
            if paths or fault:
                raise ServeUsage("--upstream relays every request: give no files and no --fault with it")
            if how == "replay":
                raise ServeUsage("--mode replay answers from files only: drop --upstream "
                                 "(give --record-dir DIR to replay what was recorded there)")
            if how in ("record", "relay") and (providers or route):
                raise ServeUsage("--as and --route choose recordings to answer with: "
                                 "give them with --mode replay or hybrid")
            if allow_remote and not token:
                raise ServeUsage("--allow-remote with --upstream needs --token (or SSE_TOOL_SERVE_TOKEN): "
                                 "otherwise anyone who can reach it spends your API key")
            folder = _record_folder(record_dir) if record_dir else None
            app, what = _relay(upstream, provider, redactor, tuple(allow_path or ()), limit, folder,
                               resume)
            if how == "hybrid":
                app, what = _hybrid(app, folder, providers, route or [], speed,
                                    rate or DEFAULT_RATE, limit, what)
        else:
            files = list(paths or []) + ([record_dir] if record_dir else [])
            if not files and not route:
                raise ServeUsage("give recordings or stream files to serve, or --upstream URL")
            if allow_path:
                raise ServeUsage("--allow-path limits what the relay forwards: give it with --upstream")
            app, what = _streams(files, fault or [], speed, rate or DEFAULT_RATE, limit,
                                 providers, route or [])
        try:
            import uvicorn
        except ImportError:
            raise ServeUsage("sse-tool serve needs uvicorn: pip install uvicorn") from None
        from ..serve.app import QuietCuts
        from ..serve.deadline import with_head_deadline
        from ..serve.gate import Gate

        with _CtrlC() as ctrl_c:
            sock = _bind(host, port)
            bound = sock.getsockname()
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            hosts = _host_names(bound[0], shown, tuple(allow_host or ()))
            origins = tuple(allow_origin or ())
            gated = Gate(app, redactor=redactor, token=token, hosts=hosts, origins=origins,
                         log=None if quiet else log)
            log(f"listening on http://{shown}:{bound[1]}/ ({what}); Ctrl-C stops")
            log(_who(token, hosts, origins))
            protocol = with_head_deadline(head_seconds, None if quiet else log)
            config = uvicorn.Config(gated, log_level="warning", access_log=False, lifespan="off",
                                    http=protocol, ws="none", loop="asyncio", server_header=False,
                                    timeout_graceful_shutdown=1, use_colors=False)
            logging.getLogger("uvicorn.error").addFilter(QuietCuts())
            server = ctrl_c.server = uvicorn.Server(config)
            if not ctrl_c.pressed:  # (pressed later: the server is told to stop)
                server.run(sockets=[sock])
        if ctrl_c.pressed:
            raise KeyboardInterrupt
        return ExitCode.OK

    run_stage("serve", body)


class _CtrlC:
    """Ctrl-C for serve, while it holds: a flag, never an exception.

    Python raises KeyboardInterrupt wherever the main thread is: inside a weakref callback
    or a ``__del__`` (the event loop starting or closing) it is printed and dropped (serve
    listened on, or exited 0), and between a lock's acquire and its release it leaves the
    lock to fail later (a RuntimeError, exit 1). So Ctrl-C only sets ``pressed`` and, once
    the server exists, asks it to stop; the caller starts no server once it is pressed,
    and exits 130 when the server has stopped.
    """

    def __init__(self) -> None:
        self.pressed = False
        self.server = None
        self._taken = False

    def __enter__(self) -> "_CtrlC":
        # only in place of KeyboardInterrupt: an ignored SIGINT stays ignored, and outside
        # the main thread (where handlers cannot be set) the caller keeps its own handling
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            try:
                signal.signal(signal.SIGINT, self)
                self._taken = True
            except ValueError:
                pass
        return self

    def __exit__(self, *exc) -> None:
        if self._taken:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._taken = False

    def __call__(self, signum, frame) -> None:
        self.pressed = True
        if self.server is not None:
            self.server.should_exit = True


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_names(address: str, shown: str, extra: tuple[str, ...]) -> tuple[str, ...] | None:
    """The Host names accepted without a token: the loopback names on loopback, the
    address itself on another one, any on a wildcard address; plus ``--allow-host``."""
    import ipaddress

    from ..serve.gate import LOOPBACK_NAMES

    ip = ipaddress.ip_address(address)
    if ip.is_unspecified:
        if not extra:
            return None
        names = ()
    else:
        names = LOOPBACK_NAMES if ip.is_loopback else (shown,)
    return names + tuple(n.lower() for n in extra)


def _who(token, hosts, origins) -> str:
    """One line: who may use this server."""
    if token:
        who = "clients that send the token (any Host)"
    elif hosts is None:
        who = "anyone who can reach it (no --token)"
    else:
        who = f"clients that call it {' or '.join(hosts)}, no token"
    pages = ("no browser page" if not origins else
             "pages from any origin" if "*" in origins else "pages from " + ", ".join(origins))
    return f"open to {who}; {pages}"


def _bind(host: str, port: int):
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)  # before "listening on" is printed: a client may connect at once
    except OSError as exc:
        raise ServeUsage(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _streams(paths, faults, speed, rate, limit, providers=(), routes=(), fallback=None):
    from ..serve.app import StreamApp
    from ..serve.faults import FaultError, parse_fault_option, parse_faults
    from ..serve.routes import RouteError, parse_route
    from ..serve.streams import load_streams

    try:
        base = parse_faults(parse_fault_option(f) for f in faults)
    except FaultError as exc:
        raise ServeUsage(f"--fault {exc}") from None
    try:
        parsed = [parse_route(r) for r in routes]
    except RouteError as exc:
        raise ServeUsage(f"--route: {exc}") from None
    streams = load_streams(paths, parsed)
    if not streams and not parsed and fallback is None:
        raise ServeUsage("no recordings or stream files found in " + ", ".join(paths))
    app = StreamApp(streams, base=base, speed=speed, rate=rate, max_request_size=limit,
                    providers=providers, fallback=fallback)
    shown = f", as {' and '.join(providers)}" if providers else ""
    return app, f"{count(len(streams), 'stream')}{shown}, GET / lists them"


def _record_folder(name: str):
    from pathlib import Path

    folder = Path(name)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ServeUsage(f"--record-dir {name}: {exc.strerror}") from None
    return folder


def _hybrid(relay, folder, providers, routes, speed, rate, limit, what):
    """Recordings in ``folder`` answer what they match exactly; the rest is relayed and
    recorded, and answers the same request from then on."""
    from ..serve.streams import Catalogue, load_streams

    app, _ = _streams([str(folder)], [], speed, rate, limit, providers, routes, fallback=relay)

    def saved(path) -> None:
        found: Catalogue = load_streams([str(path)])
        for stream in found.streams:
            if stream.name not in app.streams.paths:
                app.streams.add(stream)

    relay.recorder.saved = saved
    return app, f"replaying {count(len(app.streams), 'recording')} from {folder}, else {what}"


def _resume_store(resumable, size, ttl, upstream, mode, record_dir):
    """The buffer of ``--resumable`` (None without it); a usage error where it cannot be."""
    from ._edge import parse_duration

    if not resumable:
        if size != "64MiB" or ttl != "5m":
            raise ServeUsage("--resume-buffer and --resume-ttl go with --resumable")
        return None
    if not upstream or record_dir or mode is not None:
        raise ServeUsage("--resumable works with the plain relay: give --upstream URL, "
                         "without --record-dir and --mode")
    from ..serve.resume import Store

    return Store(parse_size(size, "--resume-buffer"), parse_duration(ttl, "--resume-ttl"))


def _relay(upstream, provider, redactor, allow_path, limit, folder=None, resume=None):
    from ..serve.faults import provider_for_host

    try:
        parts = urlsplit(upstream)
        parts.port  # (reads the host and the port, and checks both)
    except ValueError:
        parts = None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query
            or parts.fragment or "@" in parts.netloc):
        # (the URL as given may hold the very credentials it must not: said redacted)
        raise ServeUsage("--upstream: expected an http(s) base URL without credentials, "
                         f"query or fragment, got {redactor.text(upstream)!r}")
    name = provider.value if provider else provider_for_host(parts.hostname)
    if name is None:
        raise ServeUsage(f"--upstream: cannot tell whose key {parts.hostname} takes: "
                         "give --provider (openai, anthropic, gemini, or none for no key)")
    key, variable = None, ""
    if name != "none":
        names = PROVIDERS[name].key_variables
        variable = next((v for v in names if os.environ.get(v, "").strip()), "")
        if not variable:
            raise ServeUsage(f"--upstream: set {' or '.join(names)} in the server's environment")
        key = os.environ[variable].strip()
        if "\n" in key or "\r" in key:
            raise ServeUsage(f"--upstream: {variable} holds a line break; it cannot be a key")
        redactor.learn(key)
    from ..serve.relay import Relay

    recorder = None
    if folder is not None:
        from ..serve.record import Recorder

        recorder = Recorder(folder, redactor)
    resumable = None
    if resume is not None:
        from ..serve.resumable import Resumable

        resumable = Resumable(resume, key=key, provider=name)
    relay = Relay(upstream, provider=name if name != "none" else None, key=key,
                  paths=allow_path or None, max_request_size=limit, recorder=recorder,
                  resumable=resumable)
    what = (f"relaying {relay.paths.describe()} to {upstream}"
            + (f" with the key from {variable}" if variable else " (no key)")
            + (f", recording into {folder}" if folder is not None else "")
            + (", resumable" if resume is not None else ""))
    return relay, what
