"""The retry policy of ``fetch --retry``: which failures to retry, and how long to wait.

Consumes a description of each failure (``Failure``); produces a ``Wait`` (retry after so
many seconds, and why) or ``None`` (give up, with ``declined`` saying why when it is not
obvious). Exponential backoff with jitter, or the server's ``Retry-After`` when it sent one.
It does not sleep, read a clock or know HTTP libraries: the wall clock (for a
``Retry-After`` date) and the random source are parameters, so tests pass fixed ones.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from typing import NamedTuple

#: statuses worth retrying: request timeout, rate limit, and server trouble other than
#: "not implemented" and "HTTP version not supported", which a retry cannot fix
RETRY_STATUSES = frozenset({408, 429} | set(range(500, 600)) - {501, 505})


class Failure(NamedTuple):
    """One failed attempt, as the policy needs to see it."""

    #: "network" (connect, DNS, TLS, reset), "certificate" (the server's was refused: never
    #: retried), "status", "timeout" or "cut" (body cut short)
    kind: str
    #: the HTTP status, for kind "status"
    status: int | None = None
    #: the raw Retry-After header, if the response had one
    retry_after: str | None = None
    #: which timeout, for kind "timeout": "connect", "first-byte", "idle" or "total"
    timeout: str | None = None
    #: body bytes of this attempt were already passed downstream
    partial: bool = False


class Wait(NamedTuple):
    seconds: float
    #: this retry's number (1 for the first retry) and the number allowed
    attempt: int
    retries: int
    #: "Retry-After" when the server chose the delay, else "backoff"
    basis: str


def _uniform() -> float:
    import random  # on first use: most fetches never retry

    return random.random()


class RetryPolicy:
    """Decides, failure by failure, whether to try again; counts the retries it grants."""

    def __init__(
        self,
        retries: int = 0,
        *,
        partial: bool = False,
        base: float = 0.5,
        cap: float = 30.0,
        max_retry_after: float = 600.0,
        random: Callable[[], float] = _uniform,
        now: Callable[[], float] = _time.time,
    ) -> None:
        self.retries = retries
        self.partial = partial
        self.base = base
        self.cap = cap
        self.max_retry_after = max_retry_after
        self._random = random
        self._now = now
        self.used = 0
        #: why the last ``after`` declined a retry that was otherwise allowed ("" if it did not)
        self.declined = ""

    def is_retryable(self, failure: Failure) -> bool:
        if failure.partial and not self.partial:
            return False
        if failure.kind == "status":
            return failure.status in RETRY_STATUSES
        if failure.kind == "timeout":
            # The total budget is spent, so no retry can finish in time.
            return failure.timeout != "total"
        return failure.kind in ("network", "cut")

    def after(self, failure: Failure, remaining: float | None = None) -> Wait | None:
        """The wait before the next attempt, or None to give up.

        ``remaining`` is what is left of an overall time limit, if there is one: a retry
        that could not even start within it is not granted.
        """
        self.declined = ""
        if self.used >= self.retries or not self.is_retryable(failure):
            return None
        seconds, basis = self.backoff(self.used + 1), "backoff"
        asked = parse_retry_after(failure.retry_after, self._now()) if failure.retry_after else None
        if asked is not None:
            if asked > self.max_retry_after:
                self.declined = (f"the server asks to retry after {asked:g}s, "
                                 f"longer than the {self.max_retry_after:g}s fetch waits")
                return None
            seconds, basis = asked, "Retry-After"
        if remaining is not None and seconds >= remaining:
            self.declined = f"waiting {seconds:.3g}s would pass --max-time"
            return None
        self.used += 1
        return Wait(seconds, self.used, self.retries, basis)

    def backoff(self, attempt: int) -> float:
        return backoff(self.base, self.cap, attempt, self._random())


def backoff(base: float, cap: float, attempt: int, uniform: float) -> float:
    """The wait before retry number ``attempt`` (1 for the first): exponential, capped, with
    "equal jitter" (``uniform`` in [0, 1]): between half and all of the step, so clients
    that failed together do not retry together, yet never at once."""
    step = min(cap, base * 2.0 ** min(attempt - 1, 1000))  # (a float power past 1024 overflows)
    return step / 2 + uniform * step / 2


def parse_retry_after(value: str, now: float) -> float | None:
    """Seconds to wait from a Retry-After value: delay-seconds or an HTTP date (RFC 9110).

    ``now`` is the current wall-clock time (a Unix timestamp), for the date form.
    Unparseable values give None; dates in the past give 0.
    """
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime  # on first use: the rare date form

        try:
            seconds = parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError, IndexError):
            return None
    if seconds != seconds or seconds == float("inf"):  # NaN, inf
        return None
    return max(0.0, seconds)
