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
