"""Live runs against a local HTTP agent (127.0.0.1, a separate process).

Every failure mode is classified per attempt, the run always completes, nothing leaks
(sockets, threads, header secrets), and a later session finishes or re-runs the rest.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
from collections import Counter
from pathlib import Path

import pytest

from agenticlens_frames import analyze
from agenticlens_frames.errors import InputError
from agenticlens_frames.report.csv_report import render_cases_csv, render_variants_csv
from agenticlens_frames.report.json_report import build_report
from agenticlens_frames.runner import RetryPolicy, run_experiment

from .conftest import open_sockets, simple_cases, variant

SECRET = "s3cr3t-token-4f9a1c"


def _http(variant_id: str, url: str, **extra) -> dict:
    return variant(variant_id, url, kind="http", **extra)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(result, variant_id):
    att = result.run.attempts
    return att[att["variant_id"] == variant_id]


def test_every_failure_is_classified_and_the_run_completes(agent_server, write_experiment):
    url = agent_server.url
    variants = [
        _http("ok", url("/ok")),
        _http("slow", url("/slow?s=2"), timeout_seconds=0.2),
        _http("e500", url("/error500")),
        _http("busy", url("/busy")),
        _http("notjson", url("/notjson")),
        _http("big", url("/big")),
        _http("bigstream", url("/big-stream")),
        _http("refused", f"http://127.0.0.1:{_free_port()}/agent"),
    ]
    cases = simple_cases(["where is my parcel", "parcel 2"])
    manifest, suite = write_experiment(variants, cases=cases, trial_count=1)
    result = run_experiment(manifest, suite, progress=False, concurrency=8)
    assert result.complete
    statuses = {v["id"]: set(_status(result, v["id"])["status"].astype(str)) for v in variants}
    assert statuses == {
        "ok": {"ok"},
        "slow": {"timed_out"},
        "e500": {"target_error"},
        "busy": {"target_error"},
        "notjson": {"trial_failed"},
        "big": {"target_error"},
        "bigstream": {"target_error"},
        "refused": {"target_error"},
    }
    outcomes = result.calls.groupby("variant_id")["outcome"].agg(lambda s: set(s)).to_dict()
    assert outcomes["slow"] == {"timeout"}
    assert outcomes["e500"] == {"http_5xx"}
    assert outcomes["busy"] == {"http_429"}
    assert outcomes["notjson"] == {"invalid_payload"}
    assert outcomes["refused"] == {"connection"}
    errors = {v: _status(result, v)["error"].iloc[0] for v in ("slow", "busy", "big", "bigstream")}
    assert errors["slow"] == "TimeoutError: HTTP target timed out after 0.2 s for case 'c1'"
    # AgenticLens' (urllib's) wording; the reply's first bytes go in the calls' detail
    assert errors["busy"] == (
        "ValueError: HTTP target request failed for case 'c1': HTTP Error 429: Too Many Requests"
    )
    refused = _status(result, "refused")["error"].iloc[0]
    assert refused.startswith(
        "ValueError: HTTP target request failed for case 'c1': <urlopen error "
    )
    assert "exceeds the limit of 16777216 bytes (Content-Length 52428800)" in errors["big"]
    assert errors["bigstream"].endswith("reply body exceeds the limit of 16777216 bytes")
    (message,) = result.run.trials.query("variant_id == 'notjson'")["error_message"]
    assert message.startswith("HTTP target returned a body that is not JSON for case 'c1'")
    # The good variant's numbers come from the server's payloads.
    ok = _status(result, "ok")
    assert ok["output"].tolist() == [
        "HTTP answer about where is my parcel: refund parcel ok",
        "HTTP answer about parcel 2: refund parcel ok",
    ]
    assert ok["latency_ms"].tolist() == [50.0 + 18, 50.0 + 8]


def test_timeouts_leave_no_socket_or_thread_behind(agent_server, write_experiment):
    url = agent_server.url
    variants = [
        _http("slow", url("/slow?s=1"), timeout_seconds=0.1),
        _http("ok", url("/ok")),
        _http("stream", url("/big-stream")),
    ]
    cases = simple_cases([f"parcel {i}" for i in range(6)])
    manifest, suite = write_experiment(variants, cases=cases, trial_count=2)
    sockets, threads = open_sockets(), threading.active_count()
    result = run_experiment(
        manifest, suite, progress=False, concurrency=6, variant_concurrency={"slow": 4}
    )
    assert (_status(result, "slow")["status"] == "timed_out").all()
    assert (_status(result, "ok")["status"] == "ok").all()
    if sockets is not None:
        assert open_sockets() == sockets
    assert threading.active_count() <= threads


def test_retry_policy_retries_only_the_kinds_it_names(agent_server, write_experiment):
    url = agent_server.url
    variants = [
        _http("twice", url("/flaky?fail=2&v=twice")),
        _http("short", url("/flaky?fail=2&v=short")),
        _http("never", url("/flaky?fail=2&v=never")),
    ]
    cases = simple_cases(["parcel a", "parcel b"])
    manifest, suite = write_experiment(variants, cases=cases, trial_count=1)
    retry = {
        "twice": RetryPolicy(attempts=3, retry_on=frozenset({"http_5xx"})),
        "short": RetryPolicy(attempts=2),
        "never": RetryPolicy(attempts=5, retry_on=frozenset({"timeout"})),
    }
    result = run_experiment(manifest, suite, progress=False, retry=retry, concurrency=1)
    twice, short, never = (_status(result, v) for v in ("twice", "short", "never"))
    assert (twice["status"] == "ok").all() and (twice["target_attempts"] == 3).all()
    assert (short["status"] == "target_error").all() and (short["target_attempts"] == 2).all()
    assert (never["status"] == "target_error").all() and (never["target_attempts"] == 1).all()
    assert short["error"].str.endswith("HTTP Error 503: Service Unavailable").all()
    # Every call is recorded, and matches what the server received.
    calls = result.calls.groupby("variant_id").size().to_dict()
    assert calls == {"twice": 6, "short": 4, "never": 2}
    assert len(agent_server.requests("/flaky")) == 12
    seen = result.calls[result.calls["variant_id"] == "twice"]
    assert seen[seen["case_id"] == "c1"]["outcome"].tolist() == ["http_5xx", "http_5xx", "ok"]


def test_a_429_is_retried_after_the_wait_its_retry_after_asks_for(
    agent_server, write_experiment, monkeypatch
):
    """The retry policy waited its own backoff (0.1 s) and ignored the server's
    ``Retry-After: 1``: a rate-limited endpoint was called again before it said to."""
    from agenticlens_frames.runner import scheduler

    waits: list[float] = []
    sleep = asyncio.sleep

    async def recorded(delay: float, *args: object) -> object:
        waits.append(delay)
        return await sleep(delay, *args)

    monkeypatch.setattr(scheduler.asyncio, "sleep", recorded)
    variants = [_http("limited", agent_server.url("/limited?after=1&fail=1"))]
    manifest, suite = write_experiment(variants, cases=simple_cases(["parcel"]), trial_count=1)
    policy = RetryPolicy(attempts=3, backoff_seconds=0.1, retry_on=frozenset({"http_429"}))
    result = run_experiment(manifest, suite, progress=False, retry={"limited": policy})
    assert agent_server.requests("/limited") == [("/limited", "c1")] * 2  # 429, then ok
    assert _status(result, "limited")["status"].tolist() == ["ok"]
    assert 1.0 in waits and 0.1 not in waits  # the server's wait, not the policy's


def test_headers_are_expanded_at_send_time_and_never_recorded(
    agent_server, write_experiment, tmp_path
):
    url = agent_server.url
    headers = {"Authorization": "Bearer ${AGENT_TOKEN}", "X-Team": "evals"}
    variants = [
        _http("ok", url("/ok"), headers=headers),
        _http("e500", url("/error500"), headers=headers),
        _http("slow", url("/slow?s=1"), headers=headers, timeout_seconds=0.1),
    ]
    manifest, suite = write_experiment(variants, cases=simple_cases(["parcel"]), trial_count=1)
    run_dir = tmp_path / "run"
    result = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=run_dir,
        environ={"AGENT_TOKEN": SECRET},
    )
    assert set(agent_server.stats()["authorization"]) == {f"Bearer {SECRET}"}
    (error,) = _status(result, "e500")["error"]
    assert error == (
        "ValueError: HTTP target request failed for case 'c1': HTTP Error 500: Internal "
        "Server Error"
    )
    (detail,) = result.calls.loc[result.calls["variant_id"] == "e500", "detail"]
    assert detail == "HTTP 500 Internal Server Error: internal error; you sent ***"
    analysis = analyze(result.run)
    rendered = [
        json.dumps(build_report(analysis)),
        render_variants_csv(analysis),
        render_cases_csv(analysis),
        result.calls.to_csv(),
        repr(result.run.manifest),
        *(frame.to_csv() for frame in result.run.tables.values()),
    ]
    for text in rendered:
        assert SECRET not in text
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_password_in_the_url_is_sent_as_basic_auth_and_never_recorded(
    agent_server, write_experiment, tmp_path
):
    """The variant's target was written into the variants table, its parquet metadata and
    the JSON report with the password of its user information."""
    url = agent_server.url
    variants = [
        _http("ok", url("/ok").replace("http://", f"http://bot:{SECRET}@")),
        _http("e500", url("/error500").replace("http://", f"http://bot:{SECRET}@")),
    ]
    manifest, suite = write_experiment(variants, cases=simple_cases(["parcel"]), trial_count=1)
    run_dir = tmp_path / "run"
    result = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    basic = "Basic " + base64.b64encode(f"bot:{SECRET}".encode()).decode()
    assert agent_server.stats()["authorization"] == [basic, basic]  # what the server got
    targets = result.run.variants.set_index("variant_id")["target"]
    assert targets["ok"] == url("/ok").replace("http://", "http://bot:***@")
    (detail,) = result.calls.loc[result.calls["variant_id"] == "e500", "detail"]
    # the echoed header masked (the base64 padding left)
    assert detail.startswith("HTTP 500 Internal Server Error: internal error; you sent Basic ***")
    analysis = analyze(result.run)
    rendered = [
        json.dumps(build_report(analysis)),
        render_variants_csv(analysis),
        render_cases_csv(analysis),
        result.calls.to_csv(),
        *(frame.to_csv() for frame in result.run.tables.values()),
    ]
    for text in rendered:
        assert SECRET not in text and basic[6:20] not in text
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
            assert basic[6:20].encode() not in path.read_bytes(), path


def test_unset_header_variable_is_refused_before_any_request(agent_server, write_experiment):
    headers = {"Authorization": "Bearer ${NOT_SET_TOKEN}"}
    manifest, suite = write_experiment([_http("ok", agent_server.url("/ok"), headers=headers)])
    with pytest.raises(InputError) as info:
        run_experiment(manifest, suite, progress=False, environ={"OTHER": SECRET})
    message = str(info.value)
    assert "'Authorization'" in message and "${NOT_SET_TOKEN}" in message
    assert SECRET not in message
    assert agent_server.requests() == []


def test_server_dying_mid_run_then_rerunning_the_failures(start_server, write_experiment, tmp_path):
    dying = start_server(die_after=5)
    port = dying.port
    cases = simple_cases([f"parcel {i}" for i in range(6)])
    manifest, suite = write_experiment(
        [_http("h", f"http://127.0.0.1:{port}/ok")], cases=cases, trial_count=2
    )
    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    dying.wait_dead()
    rows = _status(first, "h")
    counts = Counter(rows["status"].astype(str))
    assert first.complete and counts["ok"] == 5 and counts["target_error"] == 7
    assert set(first.calls.query("outcome != 'ok'")["outcome"]) == {"connection"}

    # A plain resume has nothing left to do; --rerun-failed calls the 7 failures again.
    revived = start_server(port=port)
    again = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    assert again.attempted == 0 and revived.requests() == []
    fixed = run_experiment(manifest, suite, progress=False, run_dir=run_dir, rerun_failed=True)
    assert fixed.attempted == 7 and len(revived.requests()) == 7
    assert (_status(fixed, "h")["status"] == "ok").all()
    assert (_status(fixed, "h")["output"].str.startswith("HTTP answer about parcel")).all()


def test_rerun_failed_leaves_the_failures_of_a_trial_an_invalid_payload_failed(
    agent_server, write_experiment, tmp_path
):
    """c1 fails with a 500, then c2's reply is not JSON: the trial failed. --rerun-failed
    cannot save that trial (invalid payloads are not re-run), so it must not call c1 again;
    the other trial's failure is called again."""
    cases = simple_cases(["parcel 1", "parcel 2", "parcel 3"])
    routes = {
        "broken": "/case?c1=error500&c2=notjson",  # trial failed at c2, after c1's 500
        "down": "/case?c1=error500",  # c1 failed, trial completed
    }
    variants = [_http(v, agent_server.url(path)) for v, path in routes.items()]
    manifest, suite = write_experiment(variants, cases=cases, trial_count=1)
    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    assert first.run.trials.set_index("variant_id").loc["broken", "status"] == "failed"

    fixed = run_experiment(manifest, suite, progress=False, run_dir=run_dir, rerun_failed=True)
    # what the server received, per case, over both runs (each variant's query differs)
    received = Counter((full.split("?")[1], case) for _, case, full in _requests(agent_server))
    assert received == {
        ("c1=error500&c2=notjson", "c1"): 1,  # not called again: its trial stays failed
        ("c1=error500&c2=notjson", "c2"): 1,
        ("c1=error500", "c1"): 2,  # called again by --rerun-failed
        ("c1=error500", "c2"): 1,
        ("c1=error500", "c3"): 1,
    }
    assert fixed.attempted == 1
    assert fixed.run.trials.set_index("variant_id").loc["broken", "status"] == "failed"
    down = _status(fixed, "down").set_index("case_id")["status"].astype(str)
    assert down.to_dict() == {"c1": "target_error", "c2": "ok", "c3": "ok"}  # c1: a 500 again


def _requests(server) -> list[tuple[str, str, str]]:
    """Every request the agent server received: (route, case id, path with its query)."""
    return [tuple(r) for r in server.stats()["requests"]]


def test_a_reply_that_is_not_json_keeps_what_the_server_sent_in_the_detail(
    agent_server, write_experiment, tmp_path
):
    """The call's detail was empty: only "Expecting value: line 1 column 1 (char 0)" said
    what came back (a proxy's HTML error page, say)."""
    manifest, suite = write_experiment(
        [_http("notjson", agent_server.url("/notjson"))], cases=simple_cases(["parcel"])
    )
    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    calls = first.calls[first.calls["variant_id"] == "notjson"]
    assert len(calls) == len(agent_server.requests("/notjson")) == 2  # one per trial
    assert set(calls["outcome"]) == {"invalid_payload"}
    assert set(calls["detail"]) == {"HTTP 200 OK: <html>not json</html>"}  # the route's body
    # the journal's records read back as they were written
    again = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    assert again.attempted == 0 and again.calls.equals(first.calls)


def test_the_progress_line_counts_the_attempts_left_unanswered(
    agent_server, write_experiment, capsys, monkeypatch
):
    """During an outage the progress line read as a healthy run's ("6/6 attempts (100%)"):
    the unanswered attempts were said only in the summary at the end."""
    from agenticlens_frames.runner import live

    monkeypatch.setattr(live, "wants_log_lines", lambda: True)  # a CI log: plain lines
    variants = [_http("down", agent_server.url("/error500")), _http("up", agent_server.url("/ok"))]
    cases = simple_cases(["parcel 1", "parcel 2", "parcel 3"])
    manifest, suite = write_experiment(variants, cases=cases, trial_count=1)
    run_experiment(manifest, suite, progress=True, concurrency=2)
    failed = len(agent_server.requests("/error500"))  # each a 500: an attempt unanswered
    assert failed == 3
    line = capsys.readouterr().err.splitlines()[-1]
    assert line.startswith("live-test · 2 in flight: 9/9 attempts (100%)")
    assert line.endswith(f" · {failed} unanswered")


def test_http_concurrency_limits_hold_on_the_server(agent_server, write_experiment):
    url = agent_server.url
    variants = [
        _http("a", url("/track/a")),
        _http("b", url("/track/b")),
        _http("c", url("/track/c")),
    ]
    manifest, suite = write_experiment(variants, trial_count=2)
    run_experiment(
        manifest, suite, progress=False, concurrency=8, variant_concurrency={"a": 1, "b": 3, "c": 6}
    )
    peak = agent_server.stats()["peak"]
    assert peak["a"] == 1 and peak["b"] <= 3 and peak["c"] <= 6
    assert peak["b"] + peak["c"] >= 4  # calls really overlapped


@pytest.mark.parametrize("path", ["/ok"])
def test_run_folder_holds_journal_and_tables(agent_server, write_experiment, tmp_path, path):
    manifest, suite = write_experiment([_http("h", agent_server.url(path))], trial_count=1)
    run_dir = tmp_path / "run"
    result = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    names = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    assert "run.json" in names and "journal/000001.jsonl" in names
    assert {f"tables/{t}.parquet" for t in result.run.tables} <= set(names)
    lines = Path(run_dir / "journal" / "000001.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    attempts = [r for r in records if r["type"] == "attempt"]
    assert len(attempts) == 3 * 8  # three variants (two fillers), eight cases


@pytest.mark.differential
def test_error_wording_matches_the_package(agent_server, write_experiment):
    """The errors our HTTP targets record read as AgenticLens 0.10's (urllib's) do."""
    live = pytest.importorskip("agentic_evals.live", reason="the real agentic-evals is needed")
    from agentic_evals.models import HTTPTarget, TestCase
    from agentic_evals.reliability import describe_error

    url = agent_server.url
    refused = f"http://127.0.0.1:{_free_port()}/agent"
    paths = {"e500": url("/error500"), "busy": url("/busy"), "refused": refused}
    manifest, suite = write_experiment(
        [_http(v, u) for v, u in paths.items()], cases=simple_cases(["parcel"]), trial_count=1
    )
    result = run_experiment(manifest, suite, progress=False, concurrency=3)
    for variant_id, target_url in paths.items():
        case = TestCase(id="c1", name="c1", input="parcel", expected_contains=["x"])
        with pytest.raises(ValueError) as caught:
            live.http_payload(HTTPTarget(url=target_url, timeout_seconds=5), case)
        (ours,) = _status(result, variant_id)["error"]
        assert ours == describe_error(caught.value), variant_id
