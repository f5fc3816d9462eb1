"""Retry policies: validation, backoff schedule, which failures are retried."""

from __future__ import annotations

import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.runner.retry import FAILURE_KINDS, RetryPolicy, parse_retry
from agenticlens_frames.runner.scheduler import final_status


def test_backoff_is_exponential_and_capped():
    policy = RetryPolicy(
        attempts=6, backoff_seconds=0.5, backoff_multiplier=3, max_backoff_seconds=10
    )
    # 0.5, 0.5*3, 0.5*9, 0.5*27 = 13.5 -> capped at 10
    assert [policy.delay(n) for n in range(1, 5)] == [0.5, 1.5, 4.5, 10.0]


def test_retries_stop_at_the_attempt_limit_and_outside_retry_on():
    policy = RetryPolicy(attempts=3, retry_on=frozenset({"timeout", "http_5xx"}))
    assert [policy.retries("timeout", n) for n in (1, 2, 3)] == [True, True, False]
    assert not policy.retries("connection", 1)
    assert all(RetryPolicy(attempts=2).retries(kind, 1) for kind in FAILURE_KINDS)
    assert not any(RetryPolicy().retries(kind, 1) for kind in FAILURE_KINDS)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"attempts": 0}, "at least 1"),
        ({"attempts": True}, "must be a number"),
        ({"attempts": 2, "retry_on": ["timeout", "gremlins"]}, "unknown failure kind"),
        ({"attempts": 2, "retry_on": "timeout"}, "must be a list"),
        ({"tries": 2}, "unknown retry key"),
        ({"backoff_seconds": -1}, "must not be negative"),
        (["attempts"], "expected a mapping"),
    ],
)
def test_bad_retry_settings_are_refused_with_their_place(raw, message):
    with pytest.raises(InputError, match=message) as info:
        parse_retry(raw, file="m.yaml", location=("variants", 2, "retry"))
    assert info.value.file == "m.yaml" and info.value.location == "variants[2].retry"


def test_a_case_times_out_only_if_every_call_did():
    assert final_status([("timeout", "a")] * 3) == "timed_out"
    assert final_status([("timeout", "a"), ("connection", "b")]) == "target_error"


@pytest.mark.parametrize("attempts", [True, 2.5, "3"])
def test_attempts_that_are_not_an_integer_are_refused_in_python_too(attempts):
    # parse_retry refuses a bool before it builds the policy; RetryPolicy(...) in Python
    # must refuse it (and a fractional count) itself.
    with pytest.raises(InputError, match="must be an integer"):
        RetryPolicy(attempts=attempts)
    if not isinstance(attempts, str):  # parse_retry's own check names a non-number
        with pytest.raises(InputError, match=r"must be an integer|must be a number"):
            parse_retry({"attempts": attempts})


def test_the_boundary_settings_are_accepted():
    # multiplier 1 (a constant wait), a fractional multiplier above 1, and a cap below
    # one second or of zero are all allowed (only a multiplier below 1 and negative
    # seconds are refused); the schedules by hand: 0.5*1**k, min(0.2*1.5**k, 0.25), 0.
    assert [
        RetryPolicy(attempts=4, backoff_seconds=0.5, backoff_multiplier=1).delay(n)
        for n in (1, 2, 3)
    ] == [0.5, 0.5, 0.5]
    policy = RetryPolicy(
        attempts=4, backoff_seconds=0.2, backoff_multiplier=1.5, max_backoff_seconds=0.25
    )
    assert [policy.delay(n) for n in (1, 2, 3)] == pytest.approx([0.2, 0.25, 0.25])
    zero = RetryPolicy(attempts=2, backoff_seconds=1, max_backoff_seconds=0)
    assert zero.delay(1) == 0.0 and zero.wait(1, retry_after=5) == 0.0
    with pytest.raises(InputError, match="at least 1"):
        RetryPolicy(backoff_multiplier=0.99)
    with pytest.raises(InputError, match="must not be negative"):
        RetryPolicy(max_backoff_seconds=-0.1)
