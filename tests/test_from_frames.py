"""A run from DataFrames a user already has, and results as polars frames."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest

from agenticlens_frames import ExperimentRun, analyze, load_experiment
from agenticlens_frames.errors import InputError

from .conftest import EXAMPLE


@pytest.fixture(scope="module")
def user_frames():
    """The example experiment as plain frames (strings, no categoricals), as a user has."""
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    att = run.attempts[
        ["variant_id", "trial", "case_id", "passed", "score", "latency_ms", "cost_usd", "status"]
    ].astype({"variant_id": str, "case_id": str, "status": str})
    att = att.sample(frac=1.0, random_state=3).reset_index(drop=True)  # any row order
    factor_cols = [c for c in run.variants.columns if c.startswith("factor_")]
    variants = run.variants[["variant_id", "variant_name", *factor_cols]].astype(
        {"variant_id": str}
    )
    cases = run.cases[["case_id", "case_name"]].astype({"case_id": str})
    return run, att, variants, cases


def test_from_frames_gives_the_numbers_of_a_naive_computation(user_frames) -> None:
    original, att, variants, cases = user_frames
    run = ExperimentRun.from_frames(att, variants, cases, name="mine", baseline="baseline")
    a = analyze(run)
    # Pooled case pass rate per variant: a plain mean of `passed` over the variant's rows.
    naive = att.groupby("variant_id")["passed"].mean()
    got = a.variants.set_index(a.variants["variant_id"].astype(str))["case_pass_rate"]
    for vid, rate in naive.items():
        assert got[vid] == pytest.approx(rate)
    # Per (variant, case): passes counted by a loop over the rows.
    counts: dict[tuple[str, str], int] = {}
    for row in att.itertuples():
        counts[(row.variant_id, row.case_id)] = counts.get((row.variant_id, row.case_id), 0) + bool(
            row.passed
        )
    cm = a.cases
    for row in cm.itertuples():
        assert row.passes == counts[(str(row.variant_id), str(row.case_id))]
    assert a.info["baseline_variant_id"] == "baseline"
    assert run.factor_names == original.factor_names
    # Same cases and variants in the declared order.
    assert list(run.suite.case_ids) == list(cases["case_id"])
    assert list(run.manifest.variant_ids) == list(variants["variant_id"])


def test_every_row_carries_its_trials_execution_position(user_frames) -> None:
    """docs/data-model.md: an attempt's ``run_order`` is the 0-based position of its
    (variant, trial) in the execution order, the trials table's ``execution_position``
    (it numbered the rows 0, 1, 2, … before, so archives read another position)."""
    _, att, variants, cases = user_frames
    run = ExperimentRun.from_frames(att, variants, cases, name="mine", baseline="baseline")
    rows = run.attempts
    positions = run.trials.set_index(["variant_id", "trial"])["execution_position"]
    keys = pd.MultiIndex.from_arrays([rows["variant_id"].astype(str), rows["trial"]])
    positions.index = positions.index.set_levels(positions.index.levels[0].astype(str), level=0)
    assert rows["run_order"].tolist() == positions.reindex(keys).tolist()
    assert sorted(positions) == list(range(len(variants) * int(att["trial"].max())))
    assert analyze(run).trials["execution_position"].tolist() == list(range(len(positions)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a, v, c: (a.drop(columns="passed"), v, c), "attempts frame: column(s) 'passed'"),
        (lambda a, v, c: (a, v.drop(columns="variant_id"), c), "variants frame: column(s)"),
        (
            lambda a, v, c: (
                a.assign(variant_id=a["variant_id"].replace("prompt-v2", "promt-v2")),
                v,
                c,
            ),
            "did you mean 'prompt-v2'",
        ),
        (lambda a, v, c: (pd.concat([a, a.head(1)]), v, c), "appears more than once"),
        (lambda a, v, c: (a.iloc[1:], v, c), "no attempt for"),
        (
            lambda a, v, c: (a.assign(passed=a["passed"].astype(object).where(a.index > 0)), v, c),
            "'passed' is empty at row 0",
        ),
        # Counted from 0: the message says how to renumber.
        (
            lambda a, v, c: (a.assign(trial=a["trial"] - 1), v, c),
            "expected ≥ 1 (trials are numbered from 1: if yours count from 0, pass "
            "attempts.assign(trial=attempts['trial'] + 1))",
        ),
        (lambda a, v, c: (a.assign(score=a["score"] * 5), v, c), "'score' must lie in [0, 1]"),
        (lambda a, v, c: (a.to_dict(), v, c), "expected a pandas DataFrame"),
        (lambda a, v, c: (a.assign(status="okay"), v, c), "did you mean 'ok'"),
        # Found by the bad-input audit: tracebacks deeper in, or a wrong baseline silently.
        (lambda a, v, c: (a.head(0), v, c), "the attempts frame has no rows"),
        (
            lambda a, v, c: (a.assign(trial=a["trial"].astype("int64") + 2**31), v, c),
            "up to 2147483647",
        ),
        (
            lambda a, v, c: (a.assign(latency_ms=a["latency_ms"].where(a.index > 0, np.inf)), v, c),
            "'latency_ms' is inf at row 0; expected a finite number",
        ),
        (
            lambda a, v, c: (a.assign(variant_id=a["variant_id"].where(a.index > 0)), v, c),
            "'variant_id' is empty at row 0",
        ),
        (
            lambda a, v, c: (
                a,
                v.assign(is_baseline=["False", "True", "False", "False", "False"]),
                c,
            ),
            "must hold True/False, got 'False' at row 0",
        ),
        (
            lambda a, v, c: (a, v.assign(is_baseline=[True, True, False, False, False]), c),
            "2 variants are flagged is_baseline",
        ),
        (
            lambda a, v, c: (a.assign(status="trial_failed", passed=True), v, c),
            "has status 'trial_failed' and passed True",
        ),
        # The offending row and value, and the fix (it named the first row's value, whatever
        # it held, and an empty status as the unknown status 'nan').
        (
            lambda a, v, c: (
                a.assign(passed=a["passed"].astype(object).where(a.index != 3, "yes")),
                v,
                c,
            ),
            "'passed' must be boolean, got 'yes' at row 3 (True/False or 1/0; convert text",
        ),
        (
            lambda a, v, c: (a.assign(score=a["score"].where(a.index != 4, 1.5)), v, c),
            "'score' must lie in [0, 1], got 1.5 at row 4 (rescale it",
        ),
        (
            lambda a, v, c: (a.assign(status=a["status"].where(a.index != 2)), v, c),
            "column 'status' is empty at row 2",
        ),
        # Any status but ok: a failed call counted as a pass by the pass rates.
        (
            lambda a, v, c: (a.assign(status="target_error", passed=True), v, c),
            "has status 'target_error' and passed True: only an answered attempt",
        ),
        (
            lambda a, v, c: (a.assign(status="missing_sample", passed=True), v, c),
            "has status 'missing_sample' and passed True",
        ),
    ],
)
def test_bad_frames_are_refused_naming_frame_and_column(user_frames, change, message) -> None:
    _, att, variants, cases = user_frames
    with pytest.raises(InputError) as info:
        ExperimentRun.from_frames(*change(att, variants, cases))
    assert message in str(info.value)


def test_a_bad_row_is_named_by_its_index_label_too(user_frames) -> None:
    """A frame with its own index (filtered, or indexed by attempt id): the error names
    the position and the label ``.loc`` finds it by; it named the position only."""
    _, att, variants, cases = user_frames
    att = att.set_axis([f"attempt-{i}" for i in range(len(att))])
    bad = att.assign(score=att["score"].where(np.arange(len(att)) != 4, 1.5))
    with pytest.raises(InputError, match=r"got 1\.5 at row 4 \(index 'attempt-4'\)"):
        ExperimentRun.from_frames(bad, variants, cases)
    assert bad.loc["attempt-4", "score"] == 1.5


def test_to_polars_keeps_every_value(user_frames) -> None:
    pl = pytest.importorskip("polars", reason="polars is the optional [polars] extra")
    original = user_frames[0]
    frame = original.to_polars("attempts")
    assert isinstance(frame, pl.DataFrame) and frame.height == len(original.attempts)
    np.testing.assert_array_equal(
        frame["score"].to_numpy(), original.attempts["score"].to_numpy(float)
    )
    assert (
        frame["variant_id"].cast(pl.String).to_list()
        == original.attempts["variant_id"].astype(str).tolist()
    )
    a = analyze(original)
    vs = a.to_polars("variant_summary")
    np.testing.assert_allclose(vs["case_pass_rate"].to_numpy(), a.variants["case_pass_rate"])
    with pytest.raises(InputError, match="did you mean 'variant_summary'"):
        a.to_polars("variants_summary")


def test_to_polars_without_polars_names_the_extra(user_frames, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "polars", None)  # import polars -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'agenticlens-frames\[polars\]'"):
        user_frames[0].to_polars("attempts")


def test_a_baseline_flag_left_empty_is_no_flag_and_an_integer_id_is_its_text(user_frames) -> None:
    # NaN in is_baseline counted as a flag (NaN is truthy): the first variant became the
    # baseline whichever was flagged.
    _, att, variants, cases = user_frames
    flags = [np.nan, np.nan, True, np.nan, np.nan]
    run = ExperimentRun.from_frames(att, variants.assign(is_baseline=flags), cases)
    assert run.manifest.baseline_variant_id == variants["variant_id"].iloc[2]
    # Integer ids and an integer baseline: compare_to_baseline raised KeyError: 2.
    ids = {v: i + 1 for i, v in enumerate(variants["variant_id"])}
    numbered = ExperimentRun.from_frames(
        att.assign(variant_id=att["variant_id"].map(ids)),
        variants.assign(variant_id=variants["variant_id"].map(ids)),
        cases,
        baseline=2,
    )
    assert numbered.manifest.baseline_variant_id == "2"
    assert set(analyze(numbered).comparisons["candidate_variant_id"].astype(str)) == {
        "1",
        "3",
        "4",
        "5",
    }


def test_a_run_from_frames_has_its_scores_in_the_trial_and_variant_summaries(
    user_frames,
) -> None:
    # No checks table: every trial's average_score read 0.0, and the variants' score
    # summary, the score deltas and the frontier with it.
    _, att, variants, cases = user_frames
    run = ExperimentRun.from_frames(att, variants, cases)
    a = analyze(run, frontier_n_resamples=0)
    done = att[att["status"] != "trial_failed"]
    per_trial = done.groupby(["variant_id", "trial"])["score"].mean()
    expected = per_trial.groupby(level=0).mean()
    got = a.variants.set_index(a.variants["variant_id"].astype(str))["average_score_mean"]
    np.testing.assert_allclose(got[expected.index], expected, rtol=1e-12)


def test_a_run_from_frames_writes_its_json_report_and_reads_it_back(user_frames, tmp_path) -> None:
    # Its attempts count the user's `passed` as one check each but it has no check rows:
    # the case records sliced past the empty checks table (a numpy shape mismatch).
    from agenticlens_frames import load_report, write_json_report

    _, att, variants, cases = user_frames
    a = analyze(ExperimentRun.from_frames(att, variants, cases), frontier_n_resamples=0)
    path = write_json_report(a, tmp_path / "report.json")
    saved = load_report(path)
    first = json.loads(path.read_text())["variants"][0]["trials"][0]["report"]["cases"][0]
    assert first["scores"] == [] and first["passed"] in (True, False)
    np.testing.assert_allclose(
        saved.variants["case_pass_rate"], a.variants["case_pass_rate"], rtol=1e-12
    )


def test_comparator_reads_a_run_from_frames_without_outputs(user_frames) -> None:
    # Its cases declare no expectations (the user's `passed` judged them): the summary
    # said "No input has expectations", gave no pass rate and no verdict, and a run
    # without an `output` column crashed on len(NaN).
    from agenticlens_frames import Comparator

    _, att, variants, cases = user_frames
    run = ExperimentRun.from_frames(att, variants, cases)
    comparator = Comparator(comparisons={"correction": "holm"})
    frame = comparator.compare(run)
    assert frame["n_cases"].tolist() == [len(cases)] * len(variants)
    assert frame["mean_output_length"].isna().all()
    expected = analyze(run, correction="holm", frontier_n_resamples=0).verdicts
    got = comparator.verdicts(run)
    assert got["verdict"].tolist() == expected["verdict"].tolist()
    text = comparator.summary(run)
    assert "No input has expectations" not in text and "Verdicts" in text


def test_a_column_from_frames_does_not_read_is_named_not_dropped_silently(user_frames) -> None:
    # Latency in seconds and a bare `cost` vanished without a word: the run had no
    # latency or cost, and the verdicts quietly left those dimensions out.
    _, att, variants, cases = user_frames
    mine = att.rename(columns={"latency_ms": "latency_s", "cost_usd": "cost"})
    with pytest.warns(UserWarning, match=r"column\(s\) 'latency_s', 'cost' not read.*latency_ms"):
        run = ExperimentRun.from_frames(mine, variants, cases)
    assert run.attempts["latency_ms"].isna().all()


def test_unread_variant_and_case_columns_are_named_and_the_runs_own_tables_are_not(
    user_frames,
) -> None:
    """A variants frame with a ``model`` column (not ``factor_model``) gave a run without
    factors, and a ``topic`` column of the cases frame vanished, both without a word."""
    import warnings

    original, att, variants, cases = user_frames
    plain = variants.rename(columns={"factor_model": "model"})
    with pytest.warns(UserWarning, match=r"variants frame: column\(s\) 'model' not read.*"):
        run = ExperimentRun.from_frames(att, plain, cases)
    assert "model" not in run.factor_names
    with pytest.warns(UserWarning, match=r"cases frame: column\(s\) 'topic' not read.*metadata"):
        ExperimentRun.from_frames(att, variants, cases.assign(topic="refunds"))
    # The run's own variants and cases tables (their derived columns included) pass back
    # without a warning (warnings are errors here).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = ExperimentRun.from_frames(att, original.variants, original.cases)
    assert back.factor_names == original.factor_names


def _same_attempts(original: ExperimentRun, att, variants, cases) -> ExperimentRun:
    """The attempts of ``original`` fed through from_frames, named as it is."""
    m = original.manifest
    return ExperimentRun.from_frames(
        att, variants, cases, name=m.name, version=m.version, baseline=m.baseline_variant_id
    )


def test_a_run_from_frames_declares_one_expectation_per_judged_case(user_frames) -> None:
    # Its `passed` column judged every case, yet its cases table said none was declared
    # (n_expectations 0): the Comparator and the paired quality needed a special case.
    original, att, variants, cases = user_frames
    run = _same_attempts(original, att, variants, cases)
    # Independently: one expectation for every case with `passed` values in the frame.
    given = att.groupby("case_id")["passed"].count().reindex(cases["case_id"])
    expected = (given > 0).astype(int).tolist()
    assert run.cases["n_expectations"].tolist() == expected == [1] * len(cases)
    # Judged exactly where the real run of the same attempts is (its suite declares them).
    real = original.cases["n_expectations"].to_numpy() > 0
    assert (run.cases["n_expectations"].to_numpy() > 0).tolist() == real.tolist()


def test_a_run_from_frames_gives_the_judged_numbers_of_the_real_run(user_frames, tmp_path) -> None:
    """What reads n_expectations — the Comparator's pass rates and notes, the verdicts'
    quality row, the JSON report's case-level pass rates — is the same for the example run
    and for its attempts fed through from_frames."""
    from agenticlens_frames import Comparator, write_json_report

    original, att, variants, cases = user_frames
    run = _same_attempts(original, att, variants, cases)
    comparator = Comparator(comparisons={"correction": "holm"})
    judged = ["pass_rate", "pass_rate_ci_low", "pass_rate_ci_high", "n_cases", "ci_method"]
    pd.testing.assert_frame_equal(
        comparator.compare(run)[judged], comparator.compare(original)[judged]
    )
    # Pass rates by hand: the mean over cases of each case's share of evaluated passes.
    done = att[att["status"] != "trial_failed"]
    by_hand = done.groupby(["variant_id", "case_id"])["passed"].mean().groupby(level=0).mean()
    got = comparator.compare(run).set_index("variant")["pass_rate"]
    np.testing.assert_allclose(got[by_hand.index], by_hand, rtol=1e-12)
    # The summary's note on inputs nothing judged: the same (none) for both.
    notes = [
        [
            line
            for line in comparator.summary(r).splitlines()
            if "expectations" in line or "no checks" in line
        ]
        for r in (run, original)
    ]
    assert notes == [[], []]
    # The verdict rows of the dimensions both runs have (the frames carry no tool calls,
    # so no safety row) agree in every number.
    mine, theirs = comparator.verdicts(run), comparator.verdicts(original)
    theirs = theirs[theirs["dimension"].astype(str) != "safety"].reset_index(drop=True)
    assert mine["dimension"].astype(str).tolist() == theirs["dimension"].astype(str).tolist()
    columns = ["candidate_variant_id", "verdict", "mean_difference", "ci_low", "ci_high"]
    pd.testing.assert_frame_equal(
        mine[columns].astype({"candidate_variant_id": str}),
        theirs[columns].astype({"candidate_variant_id": str}),
    )
    # The JSON report's case-level pass rates (cases as the unit).
    rows = []
    for i, r in enumerate((run, original)):
        path = write_json_report(
            analyze(r, correction="holm", frontier_n_resamples=0), tmp_path / f"{i}.json"
        )
        summary = json.loads(path.read_text())["case_level"]["summary"]
        # (pass@k rows follow the manifest's pass_k, which the frames do not carry)
        rows.append([s for s in summary if (s["evaluator"], s["estimand"]) == ("passed", "mean")])
    assert rows[0] == rows[1] and rows[0]


def test_a_run_from_frames_keeps_its_expectations_in_every_copy(user_frames, tmp_path) -> None:
    # The archive builds a run's cases table from its suite: the count is the suite's.
    from agenticlens_frames import Comparator, read_parquet
    from agenticlens_frames.archive import Archive

    original, att, variants, cases = user_frames
    run = _same_attempts(original, att, variants, cases)
    archive = Archive(tmp_path / "arc", durable=False)
    archive.add(run, run_at="2026-12-01")
    copies = [read_parquet(run.to_parquet(tmp_path / "tables")), archive.all().to_run()]
    comparator = Comparator()
    for copy in copies:
        assert copy.cases["n_expectations"].tolist() == [1] * len(cases)
        pd.testing.assert_frame_equal(comparator.compare(copy), comparator.compare(run))


def test_a_case_whose_every_attempt_failed_still_had_its_expectation(user_frames) -> None:
    # As a suite case whose trials failed: it was not evaluated, but nothing says it had
    # no checks ("1 of 14 input(s) have no checks" before).
    from agenticlens_frames import Comparator

    original, att, variants, cases = user_frames
    first = cases["case_id"].iloc[0]
    mine = att.copy()
    hit = mine["case_id"] == first
    mine.loc[hit, "status"] = "trial_failed"
    mine.loc[hit, "passed"] = False
    run = _same_attempts(original, mine, variants, cases)
    assert run.cases["n_expectations"].tolist() == [1] * len(cases)
    text = Comparator().summary(run)
    assert "have no checks" not in text and "No input has expectations" not in text


def test_a_failed_trial_s_error_message_is_its_attempts_error() -> None:
    """from_frames read no trials frame and left every error_message null, though the
    attempts' error held it (load_experiment gives a failed trial's error to each)."""
    rows = []
    for variant in ("a", "b"):
        for trial in (1, 2, 3):
            for case in ("x", "y"):
                failed = variant == "b" and trial > 1
                error = None
                if failed and trial == 2:
                    error = {"x": None, "y": "trial 2 lost"}[case]  # the first set one
                elif variant == "a" and trial == 1:
                    error = "timeout"  # an attempt's error, in a trial that did not fail
                rows.append(
                    {
                        "variant_id": variant,
                        "trial": trial,
                        "case_id": case,
                        "passed": not failed,
                        "status": "trial_failed" if failed else "ok",
                        "error": error,
                    }
                )
    attempts = pd.DataFrame(rows).sample(frac=1.0, random_state=1)  # any row order
    run = ExperimentRun.from_frames(
        attempts, pd.DataFrame({"variant_id": ["a", "b"]}), pd.DataFrame({"case_id": ["x", "y"]})
    )
    trials = run.trials.set_index(["variant_id", "trial"])["error_message"]
    assert trials.loc[("b", 2)] == "trial 2 lost"
    assert trials.drop(("b", 2)).isna().all()
    assert (
        run.trials["error_message"].dtype
        == load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
        .trials["error_message"]
        .dtype
    )


def test_case_tags_as_a_list_and_metadata_as_json_text_are_kept(user_frames) -> None:
    """A list of tags, and metadata as the ``cases`` table holds it (JSON text), were both
    dropped without a word: no tags to slice an archive by, no metadata field to cluster on."""
    original, att, variants, cases = user_frames
    texts = original.cases["metadata"].astype(str).tolist()
    tag_lists = [tags.split(",") for tags in original.cases["tags"].astype(str)]
    mine = cases.assign(tags=tag_lists, metadata=texts)
    run = ExperimentRun.from_frames(att, variants, mine, baseline="baseline")
    assert [list(c.tags) for c in run.suite.cases] == tag_lists
    assert [c.metadata for c in run.suite.cases] == [json.loads(t) for t in texts]
    assert run.cases["tags"].tolist() == original.cases["tags"].astype(str).tolist()
    # The metadata is there to cluster on (the example's cases have a "topic").
    clustered = analyze(run, comparisons={"correction": "holm", "cluster": "topic"})
    assert clustered.verdicts.attrs["correction"] == "holm" and len(clustered.verdicts)
    with pytest.raises(InputError, match=r"column 'metadata' must hold a dict .* at row 0"):
        ExperimentRun.from_frames(att, variants, cases.assign(metadata="refunds"))
    with pytest.raises(InputError, match="column 'tags' must hold comma-joined text or a list"):
        ExperimentRun.from_frames(att, variants, cases.assign(tags=3))


def test_the_nullable_integer_columns_are_int32_as_in_a_loaded_run():
    # turns / target_attempts are pandas Int32 in every run (frames.NULLABLE_INTEGERS);
    # a run from frames had them as numpy int32, so concat / merge with a loaded run's
    # attempts changed their dtype.
    loaded = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    att = pd.DataFrame(
        {"variant_id": ["a", "b"], "trial": [1, 1], "case_id": ["x", "x"], "passed": [True, False]}
    )
    run = ExperimentRun.from_frames(
        att, pd.DataFrame({"variant_id": ["a", "b"]}), pd.DataFrame({"case_id": ["x"]})
    )
    for column in ("turns", "target_attempts"):
        assert run.attempts[column].dtype == loaded.attempts[column].dtype == "Int32"
    # No trace gave a turn count (null, not 0, as for a trace without one); each
    # attempt is one answer (docs/data-model.md).
    assert run.attempts["turns"].isna().all()
    assert run.attempts["target_attempts"].tolist() == [1, 1]


def test_cost_source_is_null_where_no_cost_is_given():
    # docs/data-model.md: cost_source is null without a cost. A run from frames marked
    # every attempt 'measured' once the frame had a cost_usd column, its nulls too.
    att = pd.DataFrame(
        {
            "variant_id": ["a", "b"],
            "trial": [1, 1],
            "case_id": ["x", "x"],
            "passed": [True, False],
            "cost_usd": [0.25, None],
        }
    )
    run = ExperimentRun.from_frames(
        att, pd.DataFrame({"variant_id": ["a", "b"]}), pd.DataFrame({"case_id": ["x"]})
    )
    assert run.attempts["cost_source"].tolist()[0] == "measured"
    assert run.attempts["cost_source"].isna().tolist() == [False, True]


def _two_attempts(**columns: object) -> pd.DataFrame:
    base = {"variant_id": ["a", "b"], "trial": [1, 1], "case_id": ["x", "x"]}
    return pd.DataFrame({**base, "passed": [True, False], **columns})


def _run_of(att: pd.DataFrame, cases: pd.DataFrame | None = None) -> ExperimentRun:
    cases = pd.DataFrame({"case_id": ["x"]}) if cases is None else cases
    return ExperimentRun.from_frames(att, pd.DataFrame({"variant_id": ["a", "b"]}), cases)


def test_an_input_given_as_json_text_is_not_encoded_twice() -> None:
    """``run.cases["input"]`` holds each input as JSON text; passed back, an object's text
    was encoded again (a JSON string of JSON). Text of an object, array or string is now
    read as that JSON; other inputs are taken as they are, dicts as before."""
    inputs = [
        '{"message": "Where is B-20817?", "order_id": "B-20817"}',  # run.cases' own form
        {"message": "Where is B-20817?"},  # a dict, as before
        "Where is my order?",  # plain text, as before
        "42",  # a number's text stays text
        '["a", 1]',
        '"quoted"',  # a JSON string: its text
        json.dumps('{"kept": "as text"}'),  # the way to give JSON-looking text as text
        "{not json",
    ]
    ids = [f"c{i}" for i in range(len(inputs))]
    att = pd.DataFrame(
        {"variant_id": ["a", "b"] * len(ids), "trial": 1, "case_id": np.repeat(ids, 2)}
    ).assign(passed=True)
    run = _run_of(att, pd.DataFrame({"case_id": ids, "input": inputs}))
    assert [c.input for c in run.suite.cases] == [
        {"message": "Where is B-20817?", "order_id": "B-20817"},
        {"message": "Where is B-20817?"},
        "Where is my order?",
        "42",
        ["a", 1],
        "quoted",
        '{"kept": "as text"}',
        "{not json",
    ]
    # The table's text is json.dumps of each input (ensure_ascii off), checked by hand.
    assert run.cases["input"].tolist()[:4] == [
        '{"message": "Where is B-20817?", "order_id": "B-20817"}',
        '{"message": "Where is B-20817?"}',
        '"Where is my order?"',
        '"42"',
    ]
    # And the run's own cases come back with the same inputs.
    again = _run_of(att, run.cases)
    assert again.cases["input"].tolist() == run.cases["input"].tolist()


def test_the_run_s_own_cases_give_back_every_input_exactly(tmp_path) -> None:
    """An input that was a number, a boolean or null came back as text ("42") when
    run.cases was passed back: the heuristic cannot tell the run's JSON text from a
    user's. run.cases marks its input column (attrs, with the column's digest), and that
    column is decoded exactly; any other column keeps the heuristic."""
    from agenticlens_frames import read_parquet

    inputs = [42, 2.5, True, None, "42", "plain text", {"q": [1, None]}, ["a", False]]
    ids = [f"c{i}" for i in range(len(inputs))]
    att = pd.DataFrame(
        {"variant_id": ["a", "b"] * len(ids), "trial": 1, "case_id": np.repeat(ids, 2)}
    ).assign(passed=True)
    cases = pd.DataFrame({"case_id": ids, "input": pd.Series(inputs, dtype=object)})
    run = _run_of(att, cases)
    assert [c.input for c in run.suite.cases] == inputs
    # The JSON text of each input, by hand: the number, the text "42" quoted.
    assert run.cases["input"].tolist()[:5] == ["42", "2.5", "true", "null", '"42"']

    def got(cases: pd.DataFrame) -> list:
        return [c.input for c in _run_of(att, cases).suite.cases]

    parquet = read_parquet(run.to_parquet(tmp_path / "tables")).cases
    for own in (run.cases, run.cases[["case_id", "input"]], parquet):
        back = got(own)
        assert back == inputs
        assert [type(v) for v in back] == [type(v) for v in inputs]  # 42 an int, True a bool
    # The same text in a column of the user's (no mark, or one changed since): the
    # heuristic, as documented — a number's text stays text.
    texts = run.cases["input"].tolist()
    assert got(pd.DataFrame({"case_id": ids, "input": texts}))[:5] == [
        "42",
        "2.5",
        "true",
        "null",
        "42",
    ]
    changed = run.cases.assign(input=["7", *texts[1:]])
    assert got(changed)[:2] == ["7", "2.5"]
    # A run built by hand with plain text where its JSON text belongs: marked as every
    # run's, the text that is no JSON is read by the rule, not refused with a traceback.
    plain = run.cases.assign(input=["Where is my order?", *texts[1:]]).copy()
    plain.attrs.clear()
    by_hand = dataclasses.replace(run, cases=plain)
    assert got(by_hand.cases)[:2] == ["Where is my order?", 2.5]


def test_a_given_cost_source_is_read_and_checked() -> None:
    att = _two_attempts(cost_usd=[0.25, 0.5], cost_source=["estimated", None])
    assert _run_of(att).attempts["cost_source"].tolist() == ["estimated", "measured"]
    # The source of a cost not given is null, as in every run (docs/data-model.md).
    no_cost = _two_attempts(cost_usd=[0.25, None], cost_source=["estimated", "estimated"])
    assert _run_of(no_cost).attempts["cost_source"].isna().tolist() == [False, True]
    bad = _two_attempts(cost_usd=[0.25, 0.5], cost_source=["estimated", "guessed"])
    with pytest.raises(InputError) as info:
        _run_of(bad)
    assert info.value.file == "attempts frame"
    assert "column 'cost_source' must be one of 'measured', 'estimated' or empty, got " in str(
        info.value
    )
    assert "'guessed' at row 1" in str(info.value)


def test_given_target_attempts_are_read_and_checked() -> None:
    run = _run_of(_two_attempts(target_attempts=[3, None]))
    assert run.attempts["target_attempts"].dtype == "Int32"
    assert run.attempts["target_attempts"].tolist() == [3, pd.NA]
    assert _run_of(_two_attempts()).attempts["target_attempts"].tolist() == [1, 1]  # default
    for values, message in (
        ([1, 0], "'target_attempts' is 0 at row 1; expected ≥ 1"),
        ([1.5, 1], "'target_attempts' must hold whole numbers 1, 2, …, got 1.5 at row 0"),
        (["one", 1], "column 'target_attempts' is not numeric"),
    ):
        with pytest.raises(InputError, match=re.escape(message)):
            _run_of(_two_attempts(target_attempts=values))


@pytest.mark.parametrize(
    ("frame", "column", "other"),
    [("variants", "variant_id", "variants"), ("cases", "case_id", "cases")],
)
def test_an_attempt_of_an_unlisted_variant_or_case_names_the_attempts_frame_and_the_fix(
    user_frames, frame: str, column: str, other: str
) -> None:
    """It said "column 'variant_id': unknown variant id ..." without the frame, nor that the
    known ids are the other frame's."""
    _, att, variants, cases = user_frames
    frames = {"variants": variants, "cases": cases}
    dropped = str(frames[frame][column].iloc[-1])
    frames[frame] = frames[frame].iloc[:-1]
    with pytest.raises(InputError) as info:
        ExperimentRun.from_frames(att, frames["variants"], frames["cases"])
    text = str(info.value)
    assert text.startswith(f"attempts frame: column '{column}': unknown ")
    assert f"{dropped!r}, not in the {other} frame" in text
    assert f"add a row for it to the {other} frame, or drop its attempts" in text


def test_one_listed_variant_names_the_variants_the_attempts_have(user_frames) -> None:
    """A variants frame of the baseline alone beside attempts of five variants said only
    "a comparison needs at least two variants"."""
    _, att, variants, cases = user_frames
    named = list(dict.fromkeys(att["variant_id"]))  # independently: in order of appearance
    with pytest.raises(InputError) as caught:
        ExperimentRun.from_frames(att, variants.head(1), cases)
    message = str(caught.value)
    listed = repr(variants["variant_id"].iloc[0])
    assert message.startswith(
        f"variants frame: a comparison needs at least two variants; the variants frame lists "
        f"{listed}, the attempts name {len(named)}: {', '.join(map(repr, named))} ("
    ), message
    assert "variants=pd.DataFrame({'variant_id': attempts['variant_id'].unique()})" in message


def test_one_variant_in_both_frames_says_a_second_is_needed(user_frames) -> None:
    _, att, variants, cases = user_frames
    first = variants["variant_id"].iloc[0]
    with pytest.raises(InputError) as caught:
        ExperimentRun.from_frames(att[att["variant_id"] == first], variants.head(1), cases)
    assert "the attempts name no other (add the attempts of a second variant" in str(caught.value)
