"""Result frames against naive per-row loops written from the spec (not from our code)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from math import comb

import numpy as np
import pytest

from agenticlens_frames import (
    InputError,
    analyze,
    case_matrix,
    frontier_uncertainty,
    load_experiment,
    pass_at_k,
    trial_summary,
    variant_summary,
)

from .conftest import EXAMPLE, example_without_latency


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def _rows(run):
    return run.attempts.astype({"variant_id": str, "case_id": str}).to_dict("records")


def test_case_matrix_against_a_naive_loop(run) -> None:
    outcomes: dict[tuple, list[bool]] = defaultdict(list)
    scores: dict[tuple, list[float]] = defaultdict(list)
    for r in _rows(run):
        key = (r["variant_id"], r["case_id"])
        outcomes[key].append(r["passed"])
        if r["status"] != "trial_failed":
            scores[key].append(r["score"])
    cm = case_matrix(run, [1, 2, 5]).astype({"variant_id": str, "case_id": str})
    assert len(cm) == len(outcomes)
    for row in cm.to_dict("records"):
        key = (row["variant_id"], row["case_id"])
        n, c = len(outcomes[key]), sum(outcomes[key])
        assert (row["attempts"], row["passes"]) == (n, c)
        assert row["consistent"] == (len(set(outcomes[key])) == 1)
        assert row["mean_score"] == statistics.fmean(scores[key])
        if len(scores[key]) > 1:
            assert row["score_standard_deviation"] == statistics.stdev(scores[key])
        for k in (1, 2, 5):
            at = 1.0 if n - c < k else 1 - comb(n - c, k) / comb(n, k)
            assert row[f"pass_at_{k}"] == at
            assert row[f"pass_hat_{k}"] == comb(c, k) / comb(n, k)


def test_case_matrix_is_complete_even_for_unobserved_pairs(run) -> None:
    # Drop every attempt of one variant: the matrix must still list it, with 0 attempts.
    from dataclasses import replace

    att = run.attempts[run.attempts["variant_id"] != "large-v2"].reset_index(drop=True)
    partial = replace(run, attempts=att)
    cm = case_matrix(partial)
    assert len(cm) == len(run.variants) * len(run.cases)
    missing = cm[cm["variant_id"] == "large-v2"]
    assert (missing["attempts"] == 0).all() and missing["mean_score"].isna().all()


def test_trial_summary_latency_policies(run) -> None:
    per_trial: dict[tuple, list] = defaultdict(list)
    for r in _rows(run):
        per_trial[(r["variant_id"], r["trial"])].append(r)
    excl = trial_summary(run).astype({"variant_id": str}).set_index(["variant_id", "trial"])
    zero = trial_summary(run, latency_missing="zero").astype({"variant_id": str})
    zero = zero.set_index(["variant_id", "trial"])
    for key, rows in per_trial.items():
        if rows[0]["status"] == "trial_failed":
            assert math.isnan(excl.loc[key, "average_latency_ms"])
            continue
        known = [r["latency_ms"] for r in rows if r["status"] == "ok"]
        assert excl.loc[key, "average_latency_ms"] == pytest.approx(sum(known) / len(known))
        assert zero.loc[key, "average_latency_ms"] == pytest.approx(sum(known) / len(rows))
        passed = sum(r["passed"] for r in rows)
        assert excl.loc[key, "pass_rate"] == passed / len(rows)
        costs = [r["cost_usd"] for r in rows]
        if any(math.isnan(c) for c in costs):
            assert math.isnan(excl.loc[key, "total_cost_usd"])
        else:
            assert excl.loc[key, "total_cost_usd"] == pytest.approx(sum(costs))


def test_variant_summary_pooled_rate_and_wilson(run) -> None:
    from statsmodels.stats.proportion import proportion_confint

    vs = variant_summary(run).astype({"variant_id": str}).set_index("variant_id")
    for vid, grp in run.attempts.groupby("variant_id", observed=True):
        n, s = len(grp), int(grp["passed"].sum())
        row = vs.loc[str(vid)]
        assert row["case_pass_rate"] == s / n
        low, high = proportion_confint(s, n, alpha=0.05, method="wilson")
        assert row["case_pass_rate_ci_low"] == pytest.approx(low, rel=1e-9)
        assert row["case_pass_rate_ci_high"] == pytest.approx(high, rel=1e-9)
    # the missing-trial variant: completed-trial mean differs from the pooled rate
    dense = vs.loc["retrieval-dense"]
    assert dense["completed_trials"] == 4 and dense["failed_trials"] == 1
    assert dense["pass_rate_mean"] > dense["case_pass_rate"]


def test_pass_at_k_long_form_for_any_k(run) -> None:
    pk = pass_at_k(run, [1, 2, 3, 4, 5])
    assert list(pk.columns) == ["variant_id", "k", "pass_at_k", "pass_hat_k"]
    assert (pk["pass_hat_k"] <= pk["pass_at_k"]).all()
    per_case = pass_at_k(run, [2], per="case")
    means = per_case.groupby("variant_id", observed=True)["pass_at_k"].mean()
    two = pk[pk["k"] == 2].set_index("variant_id")["pass_at_k"]
    assert two.tolist() == pytest.approx(means.reindex(two.index).tolist(), rel=1e-12)
    with pytest.raises(InputError):
        pass_at_k(run, [0])


def test_analyze_validates_its_settings(run) -> None:
    with pytest.raises(InputError, match="confidence level"):
        analyze(run, confidence_level=1.0)
    with pytest.raises(InputError, match="regression threshold"):
        analyze(run, regression_threshold=-0.1)
    # A bare correction name where the mapping belongs was an AttributeError ('str' object
    # has no attribute 'correction').
    with pytest.raises(InputError, match=r"comparisons=\{'correction': 'holm'\}"):
        analyze(run, comparisons="holm")
    # A k above the trials (5 here) gave all-NaN pass@k columns without a word; the
    # manifest refuses it, and so does every function that takes pass_k.
    assert run.manifest.trial_count == 5
    for call in (
        lambda: analyze(run, pass_k=[1, 99]),
        lambda: case_matrix(run, [6]),
        lambda: pass_at_k(run, [2, 6]),
    ):
        with pytest.raises(InputError, match=r"pass_k: .*k = (99|6), but the run has 5 trials"):
            call()
    assert not case_matrix(run, [5])["pass_at_5"].isna().all()
    # Each function names its own keyword for the resample count.
    with pytest.raises(InputError) as caught:
        analyze(run, frontier_n_resamples=-1)
    assert str(caught.value).startswith("frontier_n_resamples: frontier_n_resamples must be")
    with pytest.raises(InputError) as caught:
        frontier_uncertainty(run, n_resamples=-1)
    assert str(caught.value).startswith("n_resamples: n_resamples must be")


def test_pareto_and_comparisons_are_consistent(run) -> None:
    result = analyze(run)
    assert result.pareto_frontier == [
        str(v) for v in result.variants.loc[result.variants["pareto_optimal"], "variant_id"]
    ]
    comps = result.comparisons
    assert set(comps["candidate_variant_id"]) == set(run.manifest.variant_ids) - {"baseline"}
    vs = result.variants.astype({"variant_id": str}).set_index("variant_id")
    for c in comps.to_dict("records"):
        delta = (
            vs.loc[c["candidate_variant_id"], "case_pass_rate"]
            - vs.loc["baseline", "case_pass_rate"]
        )
        assert c["case_pass_rate_delta"] == delta
        assert c["pass_rate_delta"] == delta
    two_factor = comps.set_index("candidate_variant_id").loc["large-v2", "warnings"]
    assert any("2 factors changed at once" in w for w in two_factor)


def test_sequential_sums_are_python_sums_per_segment() -> None:
    # The per-trial sums must be what the package's plain sum() gives, to the bit:
    # checked against sum() itself on values whose pairwise and sequential sums differ,
    # with empty segments and a segment that starts with -0.0.
    import numpy as np

    from agenticlens_frames.analysis import _sequential_sums

    rng = np.random.default_rng(11)
    values = rng.normal(0, 1e6, 5000) * rng.choice([1e-9, 1.0, 1e9], 5000)
    values[100:103] = -0.0
    bounds = np.array([0, 100, 103, 103, 2000, 4999, 5000])
    starts, ends = bounds[:-1], bounds[1:]
    got = _sequential_sums(values, starts, ends)
    flat = values.tolist()
    expected = [sum(flat[s:e]) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    assert [repr(g) for g in got] == [repr(e) for e in expected]
    assert [type(g) for g in got] == [type(e) for e in expected]


@pytest.mark.parametrize("text_ids", [False, True])
def test_regressed_and_improved_cases_match_a_loop_over_cases(run, text_ids: bool) -> None:
    # Per candidate, the cases whose pass rate moved by more than the threshold, found by
    # a plain loop over (candidate, case) pairs; with the case ids as a categorical (the
    # case matrix) and as plain text.
    from agenticlens_frames.analysis import case_matrix, compare_to_baseline, variant_summary

    cases = case_matrix(run)
    if text_ids:
        cases = cases.assign(case_id=cases["case_id"].astype(str).astype(object))
    threshold = 0.2
    comps = compare_to_baseline(run, variant_summary(run), cases, regression_threshold=threshold)
    assert len(comps)
    rate = {
        (str(v), str(c)): r
        for v, c, r in zip(cases["variant_id"], cases["case_id"], cases["pass_rate"], strict=True)
    }
    base = run.manifest.baseline_variant_id
    for _, row in comps.iterrows():
        cand = row["candidate_variant_id"]
        worse, better = [], []
        for case_id in run.suite.case_ids:
            change = rate[(cand, case_id)] - rate[(base, case_id)]
            if change < -threshold:
                worse.append(case_id)
            elif change > threshold:
                better.append(case_id)
        assert row["regressed_case_ids"] == tuple(worse)
        assert row["improved_case_ids"] == tuple(better)
        assert all(type(c) is str for c in row["regressed_case_ids"] + row["improved_case_ids"])
    assert sum(len(r) for r in comps["regressed_case_ids"]) + sum(
        len(r) for r in comps["improved_case_ids"]
    )


def test_pass_rates_are_the_headline_interval_over_evaluated_attempts(run) -> None:
    """`analyze(run).pass_rates` is what the console's variant table leads with: per
    case, the passes over the evaluated attempts (a failed trial left out), and the
    beta-binomial interval of those counts with cases as the unit."""
    from agenticlens_frames.stats_paired import beta_binomial_interval

    rates = analyze(run).pass_rates.set_index("variant_id")
    att = run.attempts[run.attempts["status"].astype(str) != "trial_failed"]
    for variant, rows in att.groupby(att["variant_id"].astype(str), observed=True):
        per_case = rows.groupby(rows["case_id"].astype(str), observed=True)["passed"].agg(
            ["sum", "count"]
        )
        expected = beta_binomial_interval(per_case["sum"], per_case["count"], 0.95)
        got = rates.loc[variant]
        assert got["estimate"] == pytest.approx(per_case["sum"].sum() / per_case["count"].sum())
        assert (got["ci_low"], got["ci_high"]) == pytest.approx((expected.ci_low, expected.ci_high))
        assert got["n_cases"] == len(per_case)


def test_a_mistyped_correction_is_refused_at_load(tmp_path) -> None:
    """It was refused only by analyze(), after every trial had been scored."""
    import shutil

    from agenticlens_frames import load_experiment
    from agenticlens_frames.errors import InputError

    folder = tmp_path / "typo"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert 'correction: "holm"' in text
    manifest.write_text(text.replace('correction: "holm"', 'correction: "hlom"'), encoding="utf-8")
    with pytest.raises(InputError, match="did you mean 'holm'") as info:
        load_experiment(manifest, folder / "suite.yaml")
    assert info.value.location == "comparisons.correction"


def test_analyze_takes_a_correction_and_what_run_returns(run) -> None:
    """analyze(run, correction=...) as viz and explore take it; a path is refused naming
    what to pass (it was an AttributeError)."""
    import dataclasses

    from agenticlens_frames.errors import InputError

    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    short = analyze(undeclared, correction="bonferroni", frontier_n_resamples=0)
    long = analyze(undeclared, comparisons={"correction": "bonferroni"}, frontier_n_resamples=0)
    assert short.verdicts.attrs["correction"] == "bonferroni"
    assert short.verdicts["adjusted_p_value"].tolist() == long.verdicts["adjusted_p_value"].tolist()
    with pytest.raises(InputError, match="not both"):
        analyze(undeclared, correction="holm", comparisons={"correction": "holm"})
    with pytest.raises(InputError, match="fixed correction = 'holm'"):
        analyze(run, correction="none")
    with pytest.raises(InputError, match="analyze\\(\\) takes an experiment run, got str"):
        analyze("data/support/manifest.yaml")


def test_a_trace_that_recorded_no_latency_is_unknown_not_0_ms(run, tmp_path) -> None:
    """AgenticLens reads a trace without ``total_latency_ms`` as 0 ms, so a variant logged
    without latencies looked fastest and sat on the frontier by it. Ours: unknown, like a
    missing sample's (fix B3); ``latency_missing="zero"`` keeps the package's 0 ms."""
    folder = example_without_latency(tmp_path)
    bare = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    att, full = bare.attempts, run.attempts
    mine = (att["variant_id"] == "prompt-v2").to_numpy()
    assert att.loc[mine, "latency_ms"].isna().all()
    np.testing.assert_array_equal(
        att.loc[~mine, "latency_ms"].to_numpy(float), full.loc[~mine, "latency_ms"].to_numpy(float)
    )

    excl = trial_summary(bare).astype({"variant_id": str})
    zero = trial_summary(bare, latency_missing="zero").astype({"variant_id": str})
    for frame in (excl, zero):
        rows = frame[frame["variant_id"] == "prompt-v2"]
        assert (rows["average_latency_ms_package"] == 0.0).all()  # Σ 0 / n, the package's
    assert excl.loc[excl["variant_id"] == "prompt-v2", "average_latency_ms"].isna().all()
    assert (zero.loc[zero["variant_id"] == "prompt-v2", "average_latency_ms"] == 0.0).all()

    a, b = analyze(bare, frontier_n_resamples=0), analyze(run, frontier_n_resamples=0)
    # The comparison stays (prompt-v2 completed its trials); only its latency delta is
    # unknown, and no warning claims it was not compared.
    got = a.comparisons.astype({"candidate_variant_id": str}).set_index("candidate_variant_id")
    want = b.comparisons.astype({"candidate_variant_id": str}).set_index("candidate_variant_id")
    assert list(got.index) == list(want.index)
    assert math.isnan(got.loc["prompt-v2", "average_latency_ms_delta"])
    assert got["average_latency_ms_regressed"].isna().tolist() == [
        c == "prompt-v2" for c in got.index
    ]
    # Other candidates' deltas do not move (prompt-v2's own scores do: its latency limit
    # checks now read 0 ms, as AgenticLens's do, and pass).
    others = [c for c in got.index if c != "prompt-v2"]
    for column in ("pass_rate_delta", "average_score_delta", "average_latency_ms_delta"):
        assert got.loc[others, column].tolist() == want.loc[others, column].tolist(), column
    assert not any("prompt-v2" in w for w in a.warnings)

    # The frontier by brute force: an unknown latency or cost neither blocks nor creates
    # dominance (spec §9.4's rule for cost, extended to latency).
    vs = a.variants.astype({"variant_id": str}).set_index("variant_id")
    objectives = [
        ("trial_success_rate", 1),
        ("pass_rate_mean", 1),
        ("average_score_mean", 1),
        ("average_latency_ms_mean", -1),
        ("total_cost_usd_mean", -1),
    ]

    def dominates(p: str, q: str) -> bool:
        better = False
        for column, sign in objectives:
            x, y = vs.loc[p, column], vs.loc[q, column]
            if math.isnan(x) or math.isnan(y):
                continue
            if sign * x < sign * y:
                return False
            better = better or sign * x > sign * y
        return better

    ids = list(vs.index)
    expected = [q for q in ids if not any(dominates(p, q) for p in ids if p != q)]
    assert math.isnan(vs.loc["prompt-v2", "average_latency_ms_mean"])
    assert a.pareto_frontier == expected and "prompt-v2" in expected


def test_unanswered_shares_leave_failed_trials_out_of_the_denominator() -> None:
    """3 of variant b's 8 calls in its one running trial got no answer and its other trial
    failed whole: that is 3 of 8 calls, not 3 of 16 attempts (a failed trial's attempts
    were never called as cases, and diluted the share --max-unanswered gates on)."""
    import pandas as pd

    from agenticlens_frames import ExperimentRun
    from agenticlens_frames.analysis import target_failure_warnings, unanswered_counts

    rows = []
    for variant in ("a", "b"):
        for trial in (1, 2):
            for case in range(8):
                status = "ok"
                if variant == "b" and trial == 2:
                    status = "trial_failed"
                elif variant == "b" and case < 3:
                    status = "target_error"
                rows.append(
                    {"variant_id": variant, "trial": trial, "case_id": f"c{case}",
                     "passed": status == "ok", "status": status}
                )  # fmt: skip
    attempts = pd.DataFrame(rows)
    run = ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": [f"c{i}" for i in range(8)]}),
    )
    analysis = analyze(run, frontier_n_resamples=0)
    b = attempts[attempts["variant_id"] == "b"]
    called = int((b["status"] != "trial_failed").sum())
    unanswered = int((b["status"] == "target_error").sum())
    assert (unanswered, called) == (3, 8)
    assert unanswered_counts(analysis) == {"b": (unanswered, called)}
    [note] = target_failure_warnings(analysis)
    assert note.startswith(f"b: {unanswered} of {called} attempts got no answer")


def test_an_unknown_latency_policy_or_pass_k_grouping_names_the_argument(run) -> None:
    """``latency_missing`` said "latency_missing must be 'exclude' or 'zero'" without the
    closest policy (and, in the archive's and the frontier's copies, as a sentence, not
    the argument); ``pass_at_k(per=...)`` said "per must be ..." after computing every k."""
    from agenticlens_frames.archive.results import trial_summary as archive_trial_summary
    from agenticlens_frames.testing import example_archive

    expected = (
        "latency_missing: unknown latency-missing policy 'zer0' (did you mean 'zero'? "
        "known: exclude, zero)"
    )
    with pytest.raises(InputError) as info:
        analyze(run, latency_missing="zer0")
    assert str(info.value) == expected
    with pytest.raises(InputError) as info:
        frontier_uncertainty(run, latency_missing="zer0")
    assert str(info.value) == expected
    stats = example_archive().all().stats("numpy")
    with pytest.raises(InputError) as info:
        archive_trial_summary(stats, latency_missing="zer0")
    assert str(info.value) == expected
    with pytest.raises(InputError) as info:
        pass_at_k(run, per="cases")
    assert str(info.value) == (
        "per: unknown pass@k grouping 'cases' (did you mean 'case'? known: variant, case)"
    )
