"""The retry policy alone: fixed random source and wall clock, no sleeping, no network."""

import pytest

from sse_tool.retry import Failure, RetryPolicy, parse_retry_after

NETWORK = Failure("network")


def policy(retries=5, **kw):
    kw.setdefault("random", lambda: 1.0)
    kw.setdefault("now", lambda: 1_000_000.0)
    return RetryPolicy(retries, **kw)


def test_backoff_doubles_each_time_up_to_the_cap():
    p = policy(6, base=0.5, cap=4.0)
    waits = [p.after(NETWORK).seconds for _ in range(6)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_jitter_stays_between_half_and_all_of_the_step():
    low = policy(1, random=lambda: 0.0).after(NETWORK).seconds
    high = policy(1, random=lambda: 1.0).after(NETWORK).seconds
    assert (low, high) == (0.25, 0.5)


def test_the_number_of_retries_is_bounded():
    p = policy(2)
    assert p.after(NETWORK) and p.after(NETWORK)
    assert p.after(NETWORK) is None
    assert p.used == 2


def test_no_retries_by_default():
    assert RetryPolicy().after(NETWORK) is None


@pytest.mark.parametrize("status, retried", [(429, True), (500, True), (502, True), (503, True),
                                             (504, True), (408, True), (501, False), (400, False),
                                             (401, False), (404, False)])
def test_only_transient_statuses_are_retried(status, retried):
    assert (policy().after(Failure("status", status=status)) is not None) == retried


def test_retry_after_seconds_replace_the_backoff():
    w = policy().after(Failure("status", status=429, retry_after="7"))
    assert (w.seconds, w.basis) == (7.0, "Retry-After")


def test_retry_after_as_an_http_date_uses_the_injected_clock():
    now = 1_445_412_470.0  # Wed, 21 Oct 2015 07:27:50 GMT
    w = policy(now=lambda: now).after(
        Failure("status", status=503, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"))
    assert w.seconds == 10.0


def test_a_retry_after_longer_than_the_limit_is_declined_with_a_reason():
    p = policy(max_retry_after=60)
    assert p.after(Failure("status", status=429, retry_after="3600")) is None
    assert "3600" in p.declined


def test_garbage_retry_after_falls_back_to_backoff():
    w = policy().after(Failure("status", status=429, retry_after="soon"))
    assert w.basis == "backoff"
    assert parse_retry_after("-5", 0) == 0.0 and parse_retry_after("nan", 0) is None


def test_a_wait_past_the_total_time_limit_is_declined():
    p = policy(base=2.0)
    assert p.after(NETWORK, remaining=1.0) is None and "--max-time" in p.declined
    assert p.used == 0


def test_failures_after_body_bytes_need_the_partial_switch():
    cut = Failure("cut", partial=True)
    assert policy().after(cut) is None
    assert policy(partial=True).after(cut) is not None
    idle = Failure("timeout", timeout="idle", partial=True)
    assert policy(partial=True).after(idle) is not None


def test_timeouts_are_retried_except_the_total_one():
    assert policy().after(Failure("timeout", timeout="connect")) is not None
    assert policy().after(Failure("timeout", timeout="first-byte")) is not None
    assert policy().after(Failure("timeout", timeout="total")) is None
