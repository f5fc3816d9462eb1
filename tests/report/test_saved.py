"""Saved reports read back (report/saved.py): values the page uses after loading are
checked when the report is loaded, so a damaged one is refused naming its place."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.errors import InputError
from agenticlens_frames.report.json_report import build_report, write_json_report
from agenticlens_frames.report.saved import load_report

from ..conftest import EXAMPLE, example_without_latency

if TYPE_CHECKING:
    from agenticlens_frames import ExperimentAnalysis, ExperimentRun


@pytest.fixture(scope="module")
def saved() -> dict:
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    return json.loads(json.dumps(build_report(analyze(run), lean=True)))


@pytest.mark.parametrize(("index", "value"), [(12, {"a": 1}), (0, ["baseline"]), (3, "x")])
def test_an_execution_order_entry_that_is_not_a_pair_is_refused(
    tmp_path: Path, saved: dict, index: int, value: object
) -> None:
    """Found by a mutation run: such an entry loaded, then crashed the HTML page's
    rendering with ``ValueError: not enough values to unpack``."""
    report = json.loads(json.dumps(saved))
    report["randomization"]["execution_order"][index] = value
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.file == str(path)
    assert info.value.location == f"randomization.execution_order[{index}]"
    assert f"expected a [variant_id, trial] pair, got {value!r}" in info.value.message


def test_the_execution_order_reads_back_as_pairs(tmp_path: Path, saved: dict) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(saved), encoding="utf-8")
    order = load_report(path).info["execution_order"]
    assert order == [(v, t) for v, t in saved["randomization"]["execution_order"]]
    assert len(order) == 25


def test_a_trial_the_execution_order_does_not_list_has_no_position(
    tmp_path: Path, saved: dict
) -> None:
    """A hand edit that drops a trial from ``randomization.execution_order``: the report
    loads as before, and that trial's ``execution_position`` is missing (``<NA>``), not
    made up; the others keep their place in the list."""
    report = json.loads(json.dumps(saved))
    dropped = report["randomization"]["execution_order"].pop(0)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    trials = load_report(path).trials
    assert str(trials["execution_position"].dtype) == "Int64"
    where = {
        (str(v), int(t)): p
        for v, t, p in trials[["variant_id", "trial", "execution_position"]].itertuples(index=False)
    }
    assert where.pop(tuple(dropped)) is pd.NA
    listed = report["randomization"]["execution_order"]
    assert where == {tuple(pair): n for n, pair in enumerate(listed)}


def _set(path: tuple, value: object):
    def edit(report: dict) -> None:
        holder = report
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = value

    return edit


#: Edits a random-edit run found crashing a renderer after the report had loaded (a
#: traceback and "this is a bug"): each is refused at load, naming its place.
DAMAGED = {
    "case name NaN": (
        _set(("variants", 0, "cases", 0, "case_name"), float("nan")),
        "variants[0].cases[0].case_name",
        "expected a string or null",
    ),
    "negative passes": (
        _set(("variants", 3, "cases", 1, "passes"), -1),
        "variants[3].cases[1].passes",
        "whole number ≥ 0",
    ),
    "more passes than attempts": (
        _set(("variants", 3, "cases", 1, "passes"), 99),
        "variants[3].cases[1].passes",
        "99 passes of 5 attempts",
    ),
    "attempts as text": (
        _set(("variants", 0, "cases", 0, "attempts"), "5"),
        "variants[0].cases[0].attempts",
        "whole number ≥ 0",
    ),
    "pass_k repeated": (_set(("pass_k",), [1, 3, 3, 5]), "pass_k", "distinct"),
    "no trials": (_set(("trial_count",), 0), "trial_count", "≥ 1"),
    "nested through": (
        _set(("factor_effects", "terms", 4, "through"), [[]]),
        "factor_effects",
        "terms[4].through",
    ),
    "level as text": (
        _set(("factor_effects", "confidence_level"), "95%"),
        "factor_effects",
        "between 0 and 1",
    ),
    # Factor effects the console, summary and page render: a null term was shown as
    # "nan", "no" as estimable, design notes of text one letter a line, an unknown
    # correction named in the correction statement.
    "term null": (
        _set(("factor_effects", "terms", 0, "term"), None),
        "factor_effects",
        "terms[0].term: expected a string, got None",
    ),
    "estimable as text": (
        _set(("factor_effects", "terms", 1, "estimable"), "no"),
        "factor_effects",
        "terms[1].estimable: expected true or false",
    ),
    "estimate as text": (
        _set(("factor_effects", "terms", 0, "estimate"), "0.1"),
        "factor_effects",
        "terms[0].estimate: expected a number or null, got '0.1'",
    ),
    "design notes as text": (
        _set(("factor_effects", "design_notes"), "see the JSON"),
        "factor_effects",
        "design_notes: expected a list of strings",
    ),
    "factor correction unknown": (
        _set(("factor_effects", "correction"), "Holm"),
        "factor_effects",
        "correction: expected one of none, bonferroni, holm, benjamini_hochberg or null, got "
        "'Holm'",
    ),
    # A label other than the package's was read as ours: its numbers shown as our delta.
    "delta basis unknown": (
        _set(("comparisons", 0, "average_latency_ms_delta", "basis"), "AgenticLens"),
        "comparisons[0].average_latency_ms_delta.basis",
        "basis 'AgenticLens' is not one this version reads (only 'agenticlens'",
    ),
    "delta basis not text": (
        _set(("comparisons", 1, "total_cost_usd_delta", "basis"), 3),
        "comparisons[1].total_cost_usd_delta.basis",
        "basis 3 is not one this version reads",
    ),
    # Any value but "exclude" read as "zero": a trial's 0.0 (no latency known) shown as 0 ms.
    "latency policy misspelt": (
        _set(("agenticlens_frames", "latency_missing"), "excluded"),
        "agenticlens_frames.latency_missing",
        "expected 'exclude' or 'zero' (the latency policy the run was analysed with), got "
        "'excluded'",
    ),
    "latency policy not text": (
        _set(("agenticlens_frames", "latency_missing"), ["exclude"]),
        "agenticlens_frames.latency_missing",
        "got ['exclude']",
    ),
    # Shown beside each Pareto flag as a percentage: 59 read as "yes · 5900%".
    "frontier share as a percentage": (
        _set(("pareto_uncertainty", "variants", 1, "p_frontier"), 59),
        "pareto_uncertainty",
        "variants[1].p_frontier: expected a share between 0 and 1 or null, got 59",
    ),
    "frontier share as text": (
        _set(("pareto_uncertainty", "variants", 0, "p_frontier"), "0.5"),
        "pareto_uncertainty",
        "variants[0].p_frontier: expected a share between 0 and 1 or null, got '0.5'",
    ),
    "best share a boolean": (
        _set(("pareto_uncertainty", "variants", 2, "p_best", "cost"), True),
        "pareto_uncertainty",
        "variants[2].p_best.cost: expected a share between 0 and 1 or null, got True",
    ),
    # Said in the Pareto note: "the share of many case-bootstrap resamples".
    "resample count as text": (
        _set(("pareto_uncertainty", "n_resamples"), "many"),
        "pareto_uncertainty",
        "n_resamples: expected a whole number ≥ 1 or null, got 'many'",
    ),
    "frontier notes as text": (
        _set(("pareto_uncertainty", "notes"), "clustered"),
        "pareto_uncertainty",
        "notes: expected a list of strings",
    ),
    # The bootstrap's intervals, drawn as the frontier plot's error bars: text was read as
    # NaN with no word said, a reversed interval drawn as it stood.
    "frontier interval end as text": (
        _set(("pareto_uncertainty", "variants", 0, "intervals", "pass_rate_mean", "lower"), "0.5"),
        "pareto_uncertainty",
        "variants[0].intervals.pass_rate_mean.lower: expected a number or null, got '0.5'",
    ),
    "frontier interval end a boolean": (
        _set(
            ("pareto_uncertainty", "variants", 2, "intervals", "total_cost_usd_mean", "upper"), True
        ),
        "pareto_uncertainty",
        "variants[2].intervals.total_cost_usd_mean.upper: expected a number or null, got True",
    ),
    "frontier interval reversed": (
        _set(("pareto_uncertainty", "variants", 1, "intervals", "case_pass_rate", "lower"), 1.5),
        "pareto_uncertainty",
        "variants[1].intervals.case_pass_rate.lower: the interval's low end is above its high "
        "end (lower 1.5 > upper ",
    ),
    "frontier interval not an object": (
        _set(("pareto_uncertainty", "variants", 0, "intervals", "case_pass_rate"), [0.1, 0.2]),
        "pareto_uncertainty",
        "variants[0].intervals.case_pass_rate: expected an object or null, got [0.1, 0.2]",
    ),
    # The bootstrap's settings, kept with the summary and said in the frontier section
    # (a level of 7, a seed as text, clusters with no field were read as they stood).
    "frontier level of 7": (
        _set(("pareto_uncertainty", "confidence_level"), 7),
        "pareto_uncertainty",
        "confidence_level: expected a number between 0 and 1 or null, got 7",
    ),
    "frontier level as text": (
        _set(("pareto_uncertainty", "confidence_level"), "95%"),
        "pareto_uncertainty",
        "confidence_level: expected a number between 0 and 1 or null, got '95%'",
    ),
    "frontier seed as text": (
        _set(("pareto_uncertainty", "seed"), "0"),
        "pareto_uncertainty",
        "seed: expected a whole number ≥ 0 or null, got '0'",
    ),
    "frontier method not text": (
        _set(("pareto_uncertainty", "method"), 3),
        "pareto_uncertainty",
        "method: expected the bootstrap's method in words or null, got 3",
    ),
    "frontier unit unknown": (
        _set(("pareto_uncertainty", "resampled"), "strata"),
        "pareto_uncertainty",
        "resampled: expected 'cases', 'clusters' or null, got 'strata'",
    ),
    "frontier clusters without their field": (
        _set(("pareto_uncertainty", "resampled"), "clusters"),
        "pareto_uncertainty",
        "cluster: expected the metadata field the clusters were drawn by, got None",
    ),
    # A case bootstrap draws no clusters (we write both null): the section named a field
    # and a count that were never drawn.
    "frontier cluster beside a case bootstrap": (
        _set(("pareto_uncertainty", "cluster"), "topic"),
        "pareto_uncertainty",
        "cluster: expected null beside a case bootstrap (resampled 'cases'), got 'topic'",
    ),
    "frontier cluster count beside a case bootstrap": (
        _set(("pareto_uncertainty", "n_clusters"), 13),
        "pareto_uncertainty",
        "n_clusters: expected null beside a case bootstrap (resampled 'cases'), got 13",
    ),
    "frontier cluster beside a bootstrap of no stated unit": (
        lambda report: report["pareto_uncertainty"].update(resampled=None, cluster="topic"),
        "pareto_uncertainty",
        "cluster: expected null beside a case bootstrap (resampled None), got 'topic'",
    ),
    # Factor-effect numbers no analysis gives, said as they stood ("p 1.5", a reversed
    # interval drawn on the forest plot).
    "factor se negative": (
        _set(("factor_effects", "terms", 0, "se"), -0.1),
        "factor_effects",
        "terms[0].se: expected a number ≥ 0 or null, got -0.1",
    ),
    "factor p above 1": (
        _set(("factor_effects", "terms", 1, "p_value"), 1.5),
        "factor_effects",
        "terms[1].p_value: expected a p-value between 0 and 1 or null, got 1.5",
    ),
    "factor adjusted p below 0": (
        _set(("factor_effects", "terms", 2, "p_adjusted"), -0.01),
        "factor_effects",
        "terms[2].p_adjusted: expected a p-value between 0 and 1 or null, got -0.01",
    ),
    "factor anova p above 1": (
        _set(("factor_effects", "terms", 6, "anova_p"), 2),
        "factor_effects",
        "terms[6].anova_p: expected a p-value between 0 and 1 or null, got 2",
    ),
    "factor interval reversed": (
        _set(("factor_effects", "terms", 3, "ci_low"), 0.5),
        "factor_effects",
        "terms[3].ci_low: the interval's low end is above its high end (ci_low 0.5 > ci_high ",
    ),
    # Numbers no analysis writes (stats_factorial): an epsilon outside (0, 1] (its least
    # is 1/d), a negative or infinite df (cases − 1 or clusters − 1), a negative F (sums
    # of squares over df), a case count that is not a whole number ≥ 0.
    "factor epsilon above 1": (
        _set(("factor_effects", "terms", 0, "anova_eps"), 1.5),
        "factor_effects",
        "terms[0].anova_eps: expected a Greenhouse–Geisser epsilon in (0, 1] or null, got 1.5",
    ),
    "factor epsilon 0": (
        _set(("factor_effects", "terms", 2, "anova_eps"), 0),
        "factor_effects",
        "terms[2].anova_eps: expected a Greenhouse–Geisser epsilon in (0, 1] or null, got 0",
    ),
    "factor df negative": (
        _set(("factor_effects", "terms", 1, "df"), -13.0),
        "factor_effects",
        "terms[1].df: expected a finite number ≥ 0 or null, got -13.0",
    ),
    "factor df infinite": (
        _set(("factor_effects", "terms", 3, "df"), float("inf")),
        "factor_effects",
        "terms[3].df: expected a finite number ≥ 0 or null, got inf",
    ),
    "factor F negative": (
        _set(("factor_effects", "terms", 0, "anova_f"), -2.5),
        "factor_effects",
        "terms[0].anova_f: expected an F ≥ 0 or null, got -2.5",
    ),
    "factor case count fractional": (
        _set(("factor_effects", "terms", 5, "n_cases"), 13.5),
        "factor_effects",
        "terms[5].n_cases: expected a whole number ≥ 0 or null, got 13.5",
    ),
    "factor case count negative": (
        _set(("factor_effects", "terms", 1, "n_cases"), -14),
        "factor_effects",
        "terms[1].n_cases: expected a whole number ≥ 0 or null, got -14",
    ),
    "factor case count as text": (
        _set(("factor_effects", "terms", 0, "n_cases"), "14"),
        "factor_effects",
        "terms[0].n_cases: expected a whole number ≥ 0 or null, got '14'",
    ),
    "tool's block not an object": (
        _set(("agenticlens_frames",), "exclude"),
        "agenticlens_frames",
        "expected an object, got str",
    ),
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_damaged_value_a_renderer_would_meet_is_refused_at_load(
    name: str, tmp_path: Path, saved: dict
) -> None:
    edit, place, message = DAMAGED[name]
    report = json.loads(json.dumps(saved))
    edit(report)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")  # NaN as the token the fuzzer used
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.location == place and message in info.value.message


#: The entries of :data:`DAMAGED` `experiment report` is also run on.
_NEW_CHECKS = sorted(n for n in DAMAGED if n.startswith(("frontier ", "factor ")))


@pytest.mark.parametrize("name", _NEW_CHECKS)
def test_experiment_report_refuses_a_damaged_setting_or_number_naming_it(
    name: str, tmp_path: Path, saved: dict
) -> None:
    """`experiment report` on such a file exits 1, naming the file, the block and the key."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    edit, place, message = DAMAGED[name]
    report = json.loads(json.dumps(saved))
    edit(report)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    done = CliRunner().invoke(app, ["experiment", "report", str(path)], env={"COLUMNS": "400"})
    said = " ".join(done.output.split())
    assert done.exit_code == 1 and "Unable to read experiment report" in said
    assert f"report.json: {place}:" in said and message.split(" (")[0] in said


def test_what_the_writer_leaves_null_still_loads(tmp_path: Path, saved: dict) -> None:
    """A term that cannot be estimated holds null for its se, interval and p-values (NaN
    as the standard encoder writes it), the ANOVA's p is null outside a balanced full
    factorial, and a report written before the bootstrap's settings were kept has none:
    each still loads."""
    report = json.loads(json.dumps(saved))
    terms = report["factor_effects"]["terms"]
    blank = [t for t in terms if not t["estimable"]]
    assert blank and all(t[k] is None for t in blank for k in ("se", "ci_low", "p_value"))
    terms[0].update(p_value=float("nan"), ci_low=float("nan"), anova_p=None)
    for key in ("method", "seed", "confidence_level", "resampled", "cluster", "n_clusters"):
        report["pareto_uncertainty"].pop(key)
    # A bootstrap interval that could not be estimated: null ends, or no interval at all.
    intervals = report["pareto_uncertainty"]["variants"][0]["intervals"]
    intervals["pass_rate_mean"] = {"lower": None, "upper": float("nan")}
    intervals["case_pass_rate"] = None
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")  # NaN as the token
    loaded = load_report(path)
    effects = loaded.factor_effects
    assert effects["se"].isna().sum() == len(blank)
    first = loaded.variants.iloc[0]
    assert math.isnan(first["pass_rate_mean_boot_ci_low"])
    assert math.isnan(first["case_pass_rate_boot_ci_high"])


def _factor_run(
    levels: dict[str, dict[str, str]], passed: dict[str, list[int]], topics: int = 0
) -> ExperimentRun:
    """A run of one trial per variant: variant ``v`` (factors ``levels[v]``, the first the
    baseline) passes case ``c{i}`` when ``passed[v][i]``; with ``topics``, case i's
    metadata topic is ``t{i % topics}``."""
    from agenticlens_frames import ExperimentRun

    rows = [
        (v, 1, f"c{i}", bool(p)) for v, outcome in passed.items() for i, p in enumerate(outcome)
    ]
    attempts = pd.DataFrame(rows, columns=["variant_id", "trial", "case_id", "passed"])
    variants = pd.DataFrame(
        [{"variant_id": v, **{f"factor_{k}": x for k, x in f.items()}} for v, f in levels.items()]
    )
    n = len(next(iter(passed.values())))
    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(n)]})
    if topics:
        cases["metadata"] = [{"topic": f"t{i % topics}"} for i in range(n)]
    return ExperimentRun.from_frames(attempts, variants, cases)


_THREE = {v: {"model": v} for v in "abc"}
_TWO_BY_TWO = {
    "a": {"model": "s", "prompt": "1"},
    "b": {"model": "l", "prompt": "1"},
    "c": {"model": "s", "prompt": "2"},
    "d": {"model": "l", "prompt": "2"},
}
#: Designs at the edges of what the factor effects write, and what each must carry.
_ODD = {
    # One case: df 0, t and the ANOVA null.
    "one case": (_THREE, {"a": [0], "b": [1], "c": [1]}, 0),
    # Two cases, three levels: the contrasts' covariance has rank one, so
    # tr(S)² = tr(S²) and epsilon is its least, 1/d = 1/2; t negative.
    "two cases, three levels": (_THREE, {"a": [1, 1], "b": [0, 1], "c": [0, 0]}, 0),
    # Every case moved alike: no error variance, F infinite (restored from
    # infinite_values), t ±inf.
    "constant shift": ({v: _THREE[v] for v in "ab"}, {"a": [1] * 4, "b": [0] * 4}, 0),
    # 2 × 2 with clusters: CR1 on clusters − 1 = 1 df, the ANOVA left out.
    "clustered 2 × 2": (_TWO_BY_TWO, {v: [i % 2, 1, 0, 1, i // 2, 0] for i, v in
                                      enumerate(_TWO_BY_TWO)}, 2),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_ODD))
def test_factor_effects_of_odd_designs_load_as_written(name: str, tmp_path: Path) -> None:
    """Whatever the writer gives for one case, the least epsilon, an infinite F or
    clusters loads: the range checks refuse only numbers no analysis writes."""
    levels, passed, topics = _ODD[name]
    comparisons = {"cluster": "topic", "correction": "holm"} if topics else None
    analysis = analyze(
        _factor_run(levels, passed, topics), frontier_n_resamples=0, comparisons=comparisons
    )
    written = analysis.factor_effects
    loaded = load_report(write_json_report(analysis, tmp_path / "r.json", lean=True))
    effects = loaded.factor_effects
    for column in ("df", "statistic", "anova_f", "anova_eps", "n_cases"):
        pd.testing.assert_series_equal(
            effects[column], written[column], check_names=False, check_dtype=False
        )
    rate = effects[effects["metric"] == "pass_rate"]
    n = len(passed["a"])
    assert (rate["n_cases"] == n).all()
    if name == "one case":
        assert (rate["df"] == 0).all() and rate["statistic"].isna().all()
    elif name == "two cases, three levels":
        assert rate["anova_eps"].tolist() == pytest.approx([0.5, 0.5])
        assert (rate["statistic"] < 0).all() and (rate["df"] == 1).all()
    elif name == "constant shift":
        assert rate["anova_f"].tolist() == [math.inf]
        assert rate["statistic"].tolist() == [-math.inf]
    else:
        assert (rate["df"] == 1).all() and rate["anova_eps"].isna().all()


def test_a_cluster_bootstraps_settings_are_read_with_its_clusters(
    tmp_path: Path, saved: dict
) -> None:
    """A cluster bootstrap's settings load with their field and count, its method in any
    words (another version's wording); without the count it is refused."""
    from agenticlens_frames.frontier import cluster_method

    report = json.loads(json.dumps(saved))
    report["pareto_uncertainty"].update(
        resampled="clusters", cluster="topic", n_clusters=13, method=cluster_method("topic", 13)
    )
    path = tmp_path / "report.json"
    for method in (cluster_method("topic", 13), "cluster bootstrap, worded otherwise"):
        report["pareto_uncertainty"]["method"] = method
        path.write_text(json.dumps(report), encoding="utf-8")
        frontier = load_report(path).variants.attrs["frontier"]
        assert (frontier["n_clusters"], frontier["method"]) == (13, method)
    report["pareto_uncertainty"]["n_clusters"] = 0
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.location == "pareto_uncertainty"
    assert "n_clusters: expected a whole number ≥ 1, got 0" in info.value.message


def _baseline_down(folder: Path, trace: str = "{'spans': []}") -> ExperimentRun:
    """A live run of 3 cases, 2 trials, whose baseline ``a`` never answers; ``b`` errs on
    case ``c1`` only and ``c`` answers every case, each answer with ``trace``."""
    from agenticlens_frames.runner import run_experiment

    (folder / "bot.py").write_text(
        f"def answer(text):\n    return {{'output': 'ok', 'trace': {trace}}}\n"
        "def down(text):\n    raise ConnectionError('unavailable')\n"
        "def flaky(text):\n    return down(text) if text == 'q1' else answer(text)\n"
    )
    variants = [
        {"id": v, "name": v, "target_kind": "python", "target": f"bot.py:{t}"}
        for v, t in (("a", "down"), ("b", "flaky"), ("c", "answer"))
    ]
    (folder / "m.json").write_text(
        json.dumps({"name": "m", "version": "1", "baseline_variant_id": "a",
                    "trial_count": 2, "variants": variants})
    )  # fmt: skip
    cases = [{"id": f"c{i}", "name": f"c{i}", "input": f"q{i}", "expected_contains": ["ok"]}
             for i in range(3)]  # fmt: skip
    (folder / "s.json").write_text(json.dumps({"name": "s", "version": "1", "cases": cases}))
    return run_experiment(folder / "m.json", folder / "s.json", progress=False).run


def test_a_saved_report_keeps_the_attempts_no_target_answered(tmp_path: Path) -> None:
    """`experiment report` on a run whose baseline never answered showed every candidate
    better with no word of the outage: the notes were computed from the run alone."""
    from agenticlens_frames.analysis import target_failure_warnings
    from agenticlens_frames.report.json_report import write_json_report
    from agenticlens_frames.report.summary import summary_markdown

    run = _baseline_down(tmp_path)
    # Independently: every attempt of the baseline ended in its target's error.
    attempts = run.attempts
    assert (attempts.loc[attempts["variant_id"] == "a", "status"] == "target_error").sum() == 6
    analysis = analyze(run)
    notes = target_failure_warnings(analysis)
    assert len(notes) == 2 and notes[0].startswith("a: 6 of 6 attempts got no answer")
    write_json_report(analysis, tmp_path / "r.json")
    loaded = load_report(tmp_path / "r.json")
    assert target_failure_warnings(loaded) == notes
    assert f"> - {notes[0][:40]}" in summary_markdown(loaded)
    # A report without failures has no such key (the JSON of a clean run is unchanged).
    example = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    assert "target_failures" not in build_report(analyze(example))["agenticlens_frames"]


def _latency_columns(frame: pd.DataFrame) -> pd.DataFrame:
    columns = ["average_latency_ms_delta", "average_latency_ms_delta_relative"]
    out = frame.astype({"candidate_variant_id": str}).set_index("candidate_variant_id")
    return out[[*columns, "average_latency_ms_regressed"]]


@pytest.mark.parametrize("unknown", ["prompt-v2", "baseline"])
def test_the_package_s_latency_delta_in_the_json_still_reads_unknown_here(
    unknown: str, tmp_path: Path
) -> None:
    """Where a side has no known latency our latency delta is unknown (fix B3); the JSON's
    block holds the package's delta (unknown latency counted as 0 ms), labelled, so the
    package loads the file. Loaded here it is unknown again: the comparisons equal the
    run's, and `experiment report` (console, summary, compat regression gate) says exactly
    what it says of the report written before the block was filled (null)."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    folder = example_without_latency(tmp_path, unknown)
    analysis = analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))
    path = write_json_report(analysis, tmp_path / "r.json")
    data = json.loads(path.read_text())
    filled = [
        c for c in data["comparisons"] if c["average_latency_ms_delta"].get("basis") is not None
    ]
    assert len(filled) == (4 if unknown == "baseline" else 1)
    want = _latency_columns(analysis.comparisons)
    got = _latency_columns(load_report(path).comparisons)
    pd.testing.assert_frame_equal(got, want)
    for c in filled:
        assert want.loc[c["candidate_variant_id"]].isna().all()
    # The report as this tool wrote it before the package's delta filled the block.
    package_numbers = [f"{c['average_latency_ms_delta']['absolute']:+.1f} ms" for c in filled]
    for c in filled:
        c["average_latency_ms_delta"] = None
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(data), encoding="utf-8")
    pd.testing.assert_frame_equal(_latency_columns(load_report(earlier).comparisons), want)

    said = {}
    for name, report in (("now", path), ("earlier", earlier)):
        summary = tmp_path / f"{name}.md"
        args = ["experiment", "report", str(report), "--summary", str(summary)]
        args += ["--fail-on-regression", "--regression-rule", "compat"]
        done = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        output = done.output.replace(str(report), "REPORT").replace(str(summary), "SUMMARY")
        said[name] = (done.exit_code, output, summary.read_text().replace(str(report), "REPORT"))
        assert not any(number in output for number in package_numbers)
    assert said["now"] == said["earlier"]


def _trial_latency_by_hand(run: ExperimentRun, policy: str) -> dict[tuple[str, int], float]:
    """Each completed trial's mean latency from the attempts, in plain Python: the known
    latencies of the answered attempts (``exclude``: their mean, NaN with none; ``zero``:
    their sum over every case of the trial). A failed trial has none."""
    status = {
        (str(v), int(t)): str(s)
        for v, t, s in run.trials[["variant_id", "trial", "status"]].itertuples(index=False)
    }
    known: dict[tuple[str, int], list[float]] = {key: [] for key in status}
    count = dict.fromkeys(status, 0)
    for v, t, s, latency in run.attempts[
        ["variant_id", "trial", "status", "latency_ms"]
    ].itertuples(index=False):
        key = (str(v), int(t))
        count[key] += 1
        if s == "ok" and latency == latency:  # NaN: unknown
            known[key].append(float(latency))
    out = {}
    for key, values in known.items():
        if status[key] != "succeeded":
            out[key] = math.nan
        elif policy == "zero":
            out[key] = sum(values) / count[key]
        else:
            out[key] = sum(values) / len(values) if values else math.nan
    return out


@pytest.mark.parametrize("policy", ["exclude", "zero"])
@pytest.mark.parametrize("unknown", [None, "prompt-v2", "baseline"])
def test_a_loaded_report_s_trial_latencies_are_the_run_s(
    unknown: str | None, policy: str, tmp_path: Path
) -> None:
    """Fix B3: a trial without a known latency has none in the run's trial table; its
    report's summary holds the package's mean, 0.0 (the package-format field, unchanged).
    Loaded, the trial's latency is unknown again, not 0 ms, under the default policy, and
    the 0-counted mean the run had under ``--latency-missing zero``: the loaded trial table
    equals the run's, and both equal the means computed from the attempts by hand."""
    folder = EXAMPLE if unknown is None else example_without_latency(tmp_path, unknown)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    analysis = analyze(run, latency_missing=policy)  # type: ignore[arg-type]
    path = write_json_report(analysis, tmp_path / "r.json")
    loaded = load_report(path)
    by_hand = _trial_latency_by_hand(run, policy)

    def latencies(frame: pd.DataFrame) -> dict[tuple[str, int], float]:
        rows = frame[["variant_id", "trial", "average_latency_ms"]].itertuples(index=False)
        return {(str(v), int(t)): float(x) for v, t, x in rows}

    ours, back = latencies(analysis.trials), latencies(loaded.trials)
    assert ours.keys() == back.keys() == by_hand.keys()
    for key, want in by_hand.items():
        assert ours[key] == pytest.approx(want, rel=1e-12, nan_ok=True), key
        assert back[key] == pytest.approx(ours[key], rel=0, abs=0, nan_ok=True), key
    written = {
        v["variant_id"]: [
            t["report"]["summary"]["average_latency_ms"] for t in v["trials"] if t["report"]
        ]
        for v in json.loads(path.read_text())["variants"]
    }
    if unknown is not None:
        # The package-format field keeps the package's 0-counted mean ...
        assert written[unknown] == [0.0] * 5
        # ... which is what the run has only under the package's rule.
        expected = 0.0 if policy == "zero" else math.nan
        assert [back[(unknown, t)] for t in range(1, 6)] == pytest.approx(
            [expected] * 5, nan_ok=True
        )


#: The trials frame's columns without a JSON key of their own, which a loaded report
#: rebuilds from what it holds (docs/data-model.md).
_REBUILT = ["execution_position", "average_latency_ms_package", "successful"]


@pytest.mark.parametrize("policy", ["exclude", "zero"])
@pytest.mark.parametrize("parse", ["verdicts", "no verdicts", "whole"])
def test_a_loaded_report_s_trials_frame_has_the_run_s_columns(
    policy: str, parse: str, tmp_path: Path
) -> None:
    """The loaded ``trials`` frame has every column of the run's, in its order and
    dtypes: the execution position (from ``randomization.execution_order``), whether
    every case passed, and the package's 0-counted mean latency (from the trial's per-case
    records: ``summary.average_latency_ms`` is ours where a latency is known). Each equals
    the run's, and a computation from the attempts and the seeded order by hand, whichever
    way the report is parsed: its records skipped for all but their latencies (a report
    with verdicts), parsed a trial at a time (one without: they give the verdicts), or
    parsed whole (a NaN, which the fast parser refuses)."""
    from agenticlens_frames.runner.order import execution_order

    folder = example_without_latency(tmp_path, "prompt-v2")  # trials with none known
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    analysis = analyze(run, latency_missing=policy, frontier_n_resamples=0)  # type: ignore[arg-type]
    path = write_json_report(analysis, tmp_path / "r.json")
    if parse != "verdicts":
        data = json.loads(path.read_text(encoding="utf-8"))
        if parse == "no verdicts":
            del data["verdicts"]
        else:  # a NaN, which only json.loads reads: the report is parsed whole
            data["variants"][0]["trials"][0]["report"]["cases"][0]["metadata"] = {"x": math.nan}
        path.write_text(json.dumps(data), encoding="utf-8")
    loaded = load_report(path).trials
    ours = analysis.trials
    assert list(loaded.columns) == [*ours.columns, "error_message"]
    pd.testing.assert_frame_equal(loaded[ours.columns], ours, check_exact=True)

    # By hand: the seeded order's positions, every case passed, the 0-counted mean.
    m = run.manifest
    order = execution_order(m.variant_ids, m.trial_count, m.random_seed)
    package = _trial_latency_by_hand(run, "zero")
    passed: dict[tuple[str, int], bool] = {}
    for v, t, ok in run.attempts[["variant_id", "trial", "passed"]].itertuples(index=False):
        passed[(str(v), int(t))] = passed.get((str(v), int(t)), True) and bool(ok)
    rows = loaded[["variant_id", "trial", "status", *_REBUILT]].itertuples(index=False)
    failed = 0
    for v, t, status, position, latency, successful in rows:
        key = (str(v), int(t))
        assert position == order.index(key), key
        assert latency == pytest.approx(package[key], rel=1e-12, nan_ok=True), key
        assert successful == (status == "succeeded" and passed[key]), key
        failed += status == "failed"
    assert failed and (loaded["average_latency_ms_package"] == 0.0).sum() == 5  # prompt-v2
    if policy == "exclude":
        # Ours and the package's differ where a trial has some unknown latencies.
        assert (loaded["average_latency_ms"] != loaded["average_latency_ms_package"]).any()


def test_a_lean_report_s_trials_have_the_package_s_latency_only_where_it_is_written(
    tmp_path: Path,
) -> None:
    """A lean report has no per-case records: where a trial has a known latency, its
    written mean is ours, and the 0-counted one cannot be told from it; it is missing
    there (NaN). Where none is known the written 0.0 is the package's mean."""
    folder = example_without_latency(tmp_path, "prompt-v2")
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    analysis = analyze(run, frontier_n_resamples=0)
    loaded = load_report(write_json_report(analysis, tmp_path / "r.json", lean=True)).trials
    package = _trial_latency_by_hand(run, "zero")
    for v, t, latency in loaded[["variant_id", "trial", "average_latency_ms_package"]].itertuples(
        index=False
    ):
        want = package[(str(v), int(t))] if str(v) == "prompt-v2" else math.nan
        assert latency == pytest.approx(want, nan_ok=True), (v, t)
    kept = [c for c in analysis.trials.columns if c != "average_latency_ms_package"]
    pd.testing.assert_frame_equal(loaded[kept], analysis.trials[kept], check_exact=True)


def test_a_live_baseline_whose_every_call_failed_writes_a_report_the_package_loads(
    tmp_path: Path,
) -> None:
    """The baseline never answered, so no latency of it is known and every latency delta
    is unknown here; each block holds the package's (its 0 ms against the candidate's
    mean), labelled, and the package's model loads the file."""
    package = pytest.importorskip("agenticlens.experiments", reason="needs agenticlens 0.10")

    # The answers' traces record 120 ms (b's failed call on c1 is unknown: 0 ms to the
    # package).
    run = _baseline_down(tmp_path, "{'spans': [], 'total_latency_ms': 120.0}")
    analysis = analyze(run)
    path = write_json_report(analysis, tmp_path / "r.json")
    data = json.loads(path.read_text())
    trials = {v["variant_id"]: v["trials"] for v in data["variants"]}
    assert [t["report"]["cases"][1]["latency_ms"] for t in trials["b"]] == [0.0, 0.0]
    for c in data["comparisons"]:
        block = c["average_latency_ms_delta"]
        assert block["basis"] == "agenticlens"
        assert "'a' has no known latency" in block["note"]
        # By hand: the package's mean of the candidate's trial means (its rule: the
        # failed calls' latencies count 0 ms), against the baseline's 0 ms.
        means = [
            sum(case["latency_ms"] for case in t["report"]["cases"]) / len(t["report"]["cases"])
            for t in trials[c["candidate_variant_id"]]
        ]
        assert block["absolute"] == pytest.approx(sum(means) / len(means), rel=1e-12)
        assert block["relative"] is None and block["regressed"] is True  # +inf from 0 ms
    assert package.load_experiment_report(path).baseline_variant_id == "a"
    assert load_report(path).comparisons["average_latency_ms_delta"].isna().all()


def test_damaged_target_failure_notes_are_refused(tmp_path: Path, saved: dict) -> None:
    data = json.loads(json.dumps(saved))
    data["agenticlens_frames"]["target_failures"] = [3]
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="target_failures"):
        load_report(tmp_path / "r.json")


@pytest.mark.parametrize("lean", [False, True])
def test_a_saved_report_gives_the_unanswered_counts_of_its_run(tmp_path: Path, lean: bool) -> None:
    """A loaded report's counts were empty (it was thought to keep only the notes), so
    ``--max-unanswered`` could not gate it: each completed trial's ``summary.live`` block
    (lean reports too) gives them, failed trials out of the denominator as in the run."""
    from agenticlens_frames.analysis import unanswered_counts
    from agenticlens_frames.report.json_report import write_json_report

    run = _baseline_down(tmp_path)
    # Independently, from the attempts table.
    attempts = run.attempts
    called = attempts[attempts["status"] != "trial_failed"]
    missing = called["status"].isin(["target_error", "timed_out"])
    counts = missing.groupby(called["variant_id"].astype(str), observed=True).agg(["sum", "size"])
    expected = {v: (int(k), int(n)) for v, (k, n) in counts.iterrows() if k}
    assert expected == {"a": (6, 6), "b": (2, 6)}
    analysis = analyze(run, frontier_n_resamples=0)
    assert unanswered_counts(analysis) == expected
    write_json_report(analysis, tmp_path / "r.json", lean=lean)
    assert unanswered_counts(load_report(tmp_path / "r.json")) == expected


@pytest.mark.parametrize(
    ("live", "place", "message"),
    [
        ({"error_cases": -1}, "live.error_cases", "expected a whole number ≥ 0, got -1"),
        ({"timed_out_cases": "2"}, "live.timed_out_cases", "expected a whole number ≥ 0"),
        ([], "live", "expected an object or null, got list"),
        ({"error_cases": 3, "timed_out_cases": 1}, "live.timed_out_cases", "4 unanswered of 3"),
    ],
)
def test_a_damaged_live_block_is_refused_naming_its_place(
    tmp_path: Path, live: object, place: str, message: str
) -> None:
    """The counts --max-unanswered gates on are read from the live blocks: one that holds
    no count (or more unanswered cases than the trial has) is refused, not gated on."""
    from agenticlens_frames.report.json_report import write_json_report

    write_json_report(
        analyze(_baseline_down(tmp_path), frontier_n_resamples=0), tmp_path / "r.json"
    )
    report = json.loads((tmp_path / "r.json").read_text())
    report["variants"][1]["trials"][1]["report"]["summary"]["live"] = live
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.file == str(path)
    assert info.value.location == f"variants[1].trials[1].report.summary.{place}"
    assert message in info.value.message


@pytest.mark.parametrize("lean", [False, True])
def test_a_loaded_report_gives_the_variance_decomposition_of_its_analysis(
    tmp_path: Path, lean: bool
) -> None:
    """`load_report(...).frames()` had no variance_decomposition, though every row of it
    is in the report's case_level block: the same frame, values and column types."""
    import pandas as pd

    analysis = analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(build_report(analysis, lean=lean)))
    loaded = load_report(path)
    assert "variance_decomposition" in loaded.frames()
    pd.testing.assert_frame_equal(
        loaded.paired_frames["variance_decomposition"],
        analysis.paired_frames["variance_decomposition"],
        check_exact=True,
    )
    report = json.loads(path.read_text())
    report["case_level"]["variance"][1]["icc"] = "high"
    path.write_text(json.dumps(report))
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.location == "case_level.variance" and "r.json" in str(info.value)


def test_a_case_outside_the_report_s_case_ids_is_named(tmp_path):
    # The loaded frames' case_id is a categorical over the report's case_ids (as the
    # analysis'); an edited case id was read silently as a case of its own.
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    path = write_json_report(analyze(run, frontier_n_resamples=0), tmp_path / "r.json", lean=True)
    data = json.loads(path.read_text())
    data["variants"][1]["cases"][2]["case_id"] = "nope"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"variants\.cases: .*case_id 'nope' is not one of"):
        load_report(path)


#: A gate row as a run watched by an early-stopping rule saves it (its bound the rule's).
_GATE_ROW = {
    "candidate_variant_id": "prompt-v2",
    "dimension": "quality",
    "evaluator": "passed",
    "mean_difference": 0.157,
    "bound": -0.01,
    "bound_side": "lower",
    "threshold": -0.05,
    "margin": 0.05,
    "alpha": 0.0125,
    "bound_method": "confidence sequence (anytime-valid) of the early-stopping rule",
    "passed": True,
    "reason": "lower 98.75% bound -0.01 > -0.05",
}


def _with_gate(tmp_path: Path, saved: dict, row: dict, passed: object = True) -> Path:
    report = json.loads(json.dumps(saved))
    report["paired_comparisons"]["noninferiority"] = {
        "passed": passed,
        "margin": 0.05,
        "dimension": "quality",
        "alpha": 0.05,
        "candidates": [row],
    }
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("passed", "false", "true or false, got 'false'"),
        ("alpha", None, "a level between 0 and 1, got None"),
        ("alpha", 7, "a level between 0 and 1, got 7"),
        ("alpha", "0.05", "a level between 0 and 1, got '0.05'"),
        ("bound_method", ["x"], "a string or null, got ['x']"),
        ("bound_side", "below", "'lower' or 'upper', got 'below'"),
        ("bound", "-0.01", "a number or null, got '-0.01'"),
        ("threshold", None, "a finite number, got None"),
    ],
)
def test_a_damaged_saved_gate_row_is_refused_naming_it(
    tmp_path: Path, saved: dict, key: str, value: object, expected: str
) -> None:
    """The saved gate rows were read unchecked: ``passed: "false"`` passed the gate
    (`experiment report --fail-on-regression` exited 0), an α of null or 7 was said as a
    "nan%" or "-600%" bound, a bound side or bound of another type crashed the rendering
    with a bare KeyError or ValueError. Each is refused naming the row and key."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app
    from agenticlens_frames.paired.gate import gate_details

    # The intact row loads and is said as saved (so each refusal below is its key's).
    gate = load_report(_with_gate(tmp_path, saved, _GATE_ROW)).paired_frames["noninferiority"]
    assert gate_details(gate, {"quality": "proportion"}) == [
        "prompt-v2 (quality): lower 98.75% bound -1 pp > margin -5 pp — confidence sequence "
        "(anytime-valid) of the early-stopping rule"
    ]
    path = _with_gate(tmp_path, saved, {**_GATE_ROW, key: value})
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.file == str(path) and info.value.location == "paired_comparisons"
    assert f"noninferiority.candidates[0].{key}: expected {expected}" in info.value.message
    args = ["experiment", "report", str(path), "--fail-on-regression"]
    done = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert done.exit_code == 1 and "Unable to read experiment report" in done.output
    assert f"noninferiority.candidates[0].{key}" in done.output


def test_a_saved_gate_s_overall_passed_must_be_a_boolean(tmp_path: Path, saved: dict) -> None:
    with pytest.raises(InputError) as info:
        load_report(_with_gate(tmp_path, saved, _GATE_ROW, passed="true"))
    assert "noninferiority.passed: expected true or false, got 'true'" in info.value.message


@pytest.mark.parametrize("value", ["c1c2", ["refund-damaged-item", "refund-damaged-item"]])
def test_case_ids_that_are_text_or_repeat_are_refused(tmp_path: Path, saved: dict, value) -> None:
    """Text was read letter by letter, and a repeated id made a category twice: pandas'
    InvalidIndexError as a traceback, since the keys became categoricals."""
    data = json.loads(json.dumps(saved))
    data["case_ids"] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.location == "case_ids" and "r.json" in str(info.value)


def test_an_infinite_df_and_mde_read_back_and_an_earlier_report_reads_nan(
    tmp_path: Path, saved: dict
) -> None:
    """JSON has no infinity: the example's zero-variance paired t (df) and its change no
    sample size detects (mde) are null in the blocks and listed in our block."""
    listed = saved["agenticlens_frames"]["infinite_values"]
    assert {"path": ["verdicts", "rows", 5, "mde"], "value": "Infinity"} in listed
    assert saved["verdicts"]["rows"][5]["mde"] is None  # the block itself: JSON's null
    path = tmp_path / "report.json"
    path.write_text(json.dumps(saved), encoding="utf-8")
    loaded = load_report(path)
    assert loaded.verdicts["mde"].iloc[5] == float("inf")
    assert loaded.paired_frames["case_level_summary"]["df"].iloc[4] == float("inf")
    # A report written before the list: null is NaN, as it always read.
    earlier = json.loads(json.dumps(saved))
    del earlier["agenticlens_frames"]["infinite_values"]
    path.write_text(json.dumps(earlier), encoding="utf-8")
    old = load_report(path)
    assert pd.isna(old.verdicts["mde"].iloc[5])
    assert pd.isna(old.paired_frames["case_level_summary"]["df"].iloc[4])


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"path": ["variants", 0, "summary"], "value": "Infinity"}, "a path into one of"),
        ({"path": ["verdicts", "rows", 5, "mde"], "value": 1e999}, '"-Infinity"'),
        ("Infinity", '"-Infinity"'),
    ],
)
def test_a_damaged_list_of_infinite_values_is_refused_naming_the_entry(
    tmp_path: Path, saved: dict, entry: object, message: str
) -> None:
    report = json.loads(json.dumps(saved))
    report["agenticlens_frames"]["infinite_values"].append(entry)
    at = len(report["agenticlens_frames"]["infinite_values"]) - 1
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.location == f"agenticlens_frames.infinite_values[{at}]"
    assert message in info.value.message


def test_an_infinite_value_listed_where_an_edit_left_a_number_or_nothing_is_passed_over(
    tmp_path: Path, saved: dict
) -> None:
    report = json.loads(json.dumps(saved))
    report["verdicts"]["rows"][5]["mde"] = 0.25  # typed in by hand
    del report["case_level"]["summary"][4:]  # rows removed by hand
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    loaded = load_report(path)
    assert loaded.verdicts["mde"].iloc[5] == 0.25
    assert loaded.verdicts["mde"].iloc[10] == float("inf")  # still listed, still null
    assert len(loaded.paired_frames["case_level_summary"]) == 4


def test_case_labels_read_back_and_an_earlier_report_says_they_are_unavailable(
    tmp_path: Path, saved: dict
) -> None:
    """A report held only label counts and flaky ids: case_labels was missing with no
    word. It is rebuilt from the case matrix and case_level.label_counts; a report
    without the list says why the frame is not there, rather than give a partial one."""
    assert saved["case_level"]["label_counts"] == []  # every case has expectations
    path = tmp_path / "report.json"
    path.write_text(json.dumps(saved), encoding="utf-8")
    labels = load_report(path).to_pandas("case_labels")
    # The block's own counts and flaky ids, from the rebuilt frame.
    for vid, counts in saved["case_level"]["labels"].items():
        mine = labels[labels["variant_id"] == vid]
        assert mine["label"].value_counts().to_dict() == counts
        flaky = mine.loc[mine["label"] == "flaky", "case_id"].astype(str).tolist()
        assert flaky == saved["case_level"]["flaky_case_ids"][vid]
    earlier = json.loads(json.dumps(saved))
    del earlier["case_level"]["label_counts"]
    path.write_text(json.dumps(earlier), encoding="utf-8")
    loaded = load_report(path)
    assert "case_labels" not in loaded.frames()
    with pytest.raises(InputError) as info:
        loaded.to_pandas("case_labels")
    assert "result frame 'case_labels' is not available: this report holds" in info.value.message
    assert "case_level.label_counts" in info.value.message


@pytest.mark.parametrize(
    "entry",
    [["baseline", "nope", 1, 0], ["baseline", "track-order", 1, 2], "x", ["baseline", 1, 1, 1]],
)
def test_a_damaged_label_count_is_refused_naming_it(
    tmp_path: Path, saved: dict, entry: object
) -> None:
    report = json.loads(json.dumps(saved))
    report["case_level"]["label_counts"] = [entry]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.location == "case_level.label_counts[0]"
    assert "expected [variant_id, case_id, attempts, passes]" in info.value.message


@pytest.fixture(scope="module")
def full_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A report with verdicts and every trial's per-case records, as `--save` writes it."""
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    path = tmp_path_factory.mktemp("full") / "report.json"
    write_json_report(analyze(run, frontier_n_resamples=0), path)
    return path.read_text(encoding="utf-8")


def _in_a_record(text: str, value: str, *, key: str = "output", verdicts: bool = True) -> str:
    """``text`` with the first trial record's ``key`` replaced by the JSON ``value``
    (and without the report's verdicts: then they are rebuilt from the records)."""
    data = json.loads(text)
    if not verdicts:
        del data["verdicts"]
    record = data["variants"][0]["trials"][0]["report"]["cases"][0]
    record[key] = "\x00marker"
    return json.dumps(data, indent=2).replace('"\\u0000marker"', value, 1)


@pytest.mark.parametrize("verdicts", [True, False])
@pytest.mark.parametrize(
    ("key", "value", "same_as", "error"),
    [
        ("output", '"caf\xe9"', '"x"', None),  # valid, non-ASCII
        ("cost_usd", "NaN", "null", None),  # json.loads reads it; the fast parser does not
        ("output", '"x\\ud800"', '"x"', None),  # a lone surrogate: read, and scrubbed
        ("output", '"caf\udce9"', None, "not UTF-8 text"),  # written as the byte 0xE9
        ("output", '"x\\q"', None, "not valid JSON"),
        ("output", "[1,]", None, "not valid JSON"),
    ],
)
def test_trial_records_are_checked_and_read_as_before(
    tmp_path: Path,
    full_report: str,
    key: str,
    value: str,
    same_as: str | None,
    error: str | None,
    verdicts: bool,
) -> None:
    """The per-case records of a report with verdicts are skipped and those of one without
    are parsed a trial at a time (see saved._read_json): a report is still refused for
    what json.loads refused in them, and read as before whatever json.loads reads (as the
    report with ``same_as`` there, which reads the same to every output)."""
    path = tmp_path / "report.json"
    text = _in_a_record(full_report, value, key=key, verdicts=verdicts)
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    if same_as is None:
        with pytest.raises(InputError, match=error):
            load_report(path)
        return
    clean = tmp_path / "clean.json"
    clean.write_text(_in_a_record(full_report, same_as, key=key, verdicts=verdicts))
    _same_frames(load_report(path), load_report(clean))


def test_a_number_beyond_a_float_in_a_record_reads_as_infinity(
    tmp_path: Path, full_report: str
) -> None:
    """json.loads reads 1e999 as inf (msgspec refuses it): a trial's records are then
    parsed as before, as the token Infinity (which json.loads alone reads) gives them."""
    paths = []
    for token in ("1e999", "Infinity"):
        paths.append(tmp_path / f"{token}.json")
        text = _in_a_record(full_report, f'{{"x": {token}}}', key="metadata", verdicts=False)
        paths[-1].write_text(text, encoding="utf-8")
    fast, reference = (load_report(path) for path in paths)
    _same_frames(fast, reference)
    assert str(fast.verdicts.attrs.get("source", "")).startswith("This report has no")


def _same_frames(loaded: ExperimentAnalysis, expected: ExperimentAnalysis) -> None:
    for name in ("variants", "cases", "trials", "comparisons", "verdicts"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(expected, name))


def _not_reports(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Files a user may give ``load_report`` by mistake → (path, a fix the message names)."""
    (tmp_path / "run" / "journal").mkdir(parents=True)
    (tmp_path / "run" / "run.json").write_text('{"format": 1, "manifest_sha256": "0"}')
    (tmp_path / "v.csv").write_text("variant_id,variant_name,target_kind\nbaseline,B,recorded\n")
    (tmp_path / "t.parquet").write_bytes(b"PAR1" + bytes(range(256)) + b"PAR1")
    # the page write_html_report renders starts so; said "not valid JSON: Expecting value"
    (tmp_path / "r.html").write_text("<!DOCTYPE html><html lang='en'><head></head></html>")
    return {
        "manifest": (EXAMPLE / "manifest.yaml", "load_experiment(manifest_path, suite_path)"),
        "suite": (EXAMPLE / "suite.yaml", "load_experiment(manifest_path, suite_path)"),
        "experiment folder": (EXAMPLE, "load_experiment(manifest_path, suite_path)"),
        "recorded trials": (EXAMPLE / "trials" / "baseline.json", "name it in a manifest"),
        "run folder": (tmp_path / "run", "load_experiment(manifest_path, suite_path, run_dir="),
        "run.json": (tmp_path / "run" / "run.json", "read_parquet(folder)"),
        "csv": (tmp_path / "v.csv", "outputs only"),
        "parquet": (tmp_path / "t.parquet", "read_parquet("),
        "html": (tmp_path / "r.html", "re-read from the JSON `experiment run --save` wrote"),
    }


@pytest.mark.parametrize(
    ("kind", "what"),
    [
        ("manifest", "an experiment manifest"),
        ("suite", "an evaluation suite"),
        ("experiment folder", "a folder of experiment files"),
        ("recorded trials", "a recorded-trials file"),
        ("run folder", "a run folder"),
        ("run.json", "a run folder's run.json"),
        ("csv", "a CSV file"),
        ("parquet", "a parquet file"),
        ("html", "an HTML page"),
    ],
)
def test_a_file_that_is_not_a_report_is_named_with_the_function_that_reads_it(
    tmp_path: Path, kind: str, what: str
) -> None:
    """``load_report("manifest.yaml")`` said "not valid JSON: Expecting value" (a run
    folder "is a directory"): neither the mix-up nor the function to use instead."""
    path, fix = _not_reports(tmp_path)[kind]
    with pytest.raises(InputError) as caught:
        load_report(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: this is {what}")
    assert ", not a saved experiment report (" in message
    assert fix in message
    assert "not valid JSON" not in message


def test_a_damaged_report_is_still_said_to_be_invalid_json(tmp_path: Path, saved: dict) -> None:
    """The mix-ups above are told apart from a report cut short, which keeps its place."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(saved)[:200])
    with pytest.raises(InputError, match=r"r\.json: line 1, column \d+: not valid JSON"):
        load_report(path)
