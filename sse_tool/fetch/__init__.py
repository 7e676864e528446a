"""HTTP for ``sse-tool fetch``: one request in, the response body out as chunks, as they arrive.

Consumes a ``Request`` and its limits (``Timeouts``, a ``retry.RetryPolicy``); produces a
stream of items: ``Sending`` (the request as it goes out), ``Head`` (a response status
line and headers), ``bytes`` (body chunks, one network read each, after content
decoding), ``Retrying`` (a failed attempt is about to be retried). Failures are typed
errors carrying their exit code. httpx is imported only when a request is made, so that
a usage error or ``--help`` does not pay for it (serve's relay is its only other user).
It prints nothing, and knows nothing of stdout, recordings or redaction (the edge does
those).

The modules: ``request`` (what is sent), ``transfer`` (``stream``: attempts, retries,
the body), ``watchdog`` (deadlines), ``failures`` (typed errors and their wording),
``reconnecting`` (``fetch --reconnect``: one event stream over many connections).
"""

from .failures import (MESSAGE_LIMIT, BodyCut, ConnectionFailed, FetchError, HttpError, TimedOut,
                       UsageError, error_message, shorten)
from .request import DEFAULT_HEADERS, USER_AGENT, Request, Timeouts, with_scheme
from .transfer import ERROR_BODY_LIMIT, Head, Retrying, Sending, stream

__all__ = ["DEFAULT_HEADERS", "ERROR_BODY_LIMIT", "MESSAGE_LIMIT", "BodyCut", "ConnectionFailed",
           "FetchError", "Head", "HttpError", "Request", "Retrying", "Sending", "TimedOut",
           "Timeouts", "USER_AGENT", "UsageError", "error_message", "shorten", "stream", "with_scheme"]
