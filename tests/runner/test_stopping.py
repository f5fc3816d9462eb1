"""Early stopping of live runs (stop_when="decided"): stop, journal, resume, report."""

from __future__ import annotations

import html
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from agenticlens_frames import InputError, run_experiment
from agenticlens_frames.formats import load_manifest, load_suite
from agenticlens_frames.runner.live import load_run_folder
from agenticlens_frames.runner.stopping import StopMonitor, StopRule, case_rank
from agenticlens_frames.stats_sequential import BettingConfidenceSequence

from ..test_stats_sequential import _naive_lower

HOLM = StopRule(alpha=0.05, correction="holm")
TARGETS = """
import hashlib


def _u(*parts):
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _agent(p, name):
    # A function of the case only (not of the call count), so that a resumed session
    # gets the answers an uninterrupted one would.
    def call(text, case=None):
        key = case.id if case is not None else text
        return {"output": "yes" if _u(name, key) < p else "no"}

    return call


base = _agent(0.3, "base")
better = _agent(0.9, "better")
worse = _agent(0.02, "worse")
base2 = _agent(0.3, "base2")


def broken(text, case=None):
    return "a plain string, not a payload"  # invalid: fails the whole trial
"""


def _experiment(folder, cases: int = 120, variants=("base", "better", "worse"), **manifest_extra):
    (folder / "agents.py").write_text(TARGETS)
    manifest = {
        "name": "stop",
        "version": "1",
        "baseline_variant_id": variants[0],
        "trial_count": 2,
        "random_seed": 3,
        "variants": [
            {"id": v, "name": v, "target_kind": "python", "target": f"agents.py:{v}"}
            for v in variants
        ],
        **manifest_extra,
    }
    suite = {
        "name": "s",
        "version": "1",
        "cases": [
            {"id": f"c{i}", "name": f"case {i}", "input": f"q{i}", "expected_contains": ["yes"]}
            for i in range(cases)
        ],
    }
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    return folder / "manifest.yaml", folder / "suite.yaml"


def test_a_clear_difference_stops_early_and_is_journaled(tmp_path) -> None:
    manifest, suite = _experiment(tmp_path)
    result = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
    )
    stop = result.stopping
    assert stop["stopped_early"]
    assert [c["decision"] for c in stop["candidates"]] == ["better", "worse"]
    assert stop["alpha_per_candidate"] == pytest.approx(0.025)
    used = stop["cases_used"]
    assert used < 120
    after = stop["attempts_after_decision"]
    assert stop["attempts_run"] + after + stop["attempts_saved"] == 120 * 3 * 2
    # Counted up to the decision point; attempts started while the deciding case was
    # being scored still run (a few), are counted on their own and are not saved.
    assert stop["attempts_run"] == used * 3 * 2
    assert stop["attempts_saved"] == (120 - used) * 3 * 2 - after
    assert 0 <= after <= 12
    # The tables hold exactly the cases the sequence used, all variants and trials.
    assert len(result.run.cases) == used
    assert len(result.run.attempts) == used * 3 * 2
    assert result.complete
    # Journal: a stop record saying when and why.
    records = [
        json.loads(line)
        for seg in sorted((tmp_path / "run").rglob("*.jsonl"))
        for line in seg.read_text().splitlines()
    ]
    stops = [r for r in records if r["type"] == "stop"]
    assert len(stops) == 1 and stops[0]["cases_used"] == used
    # A resumed run continues the same sequence: already decided, nothing is called.
    again = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
    )
    assert again.attempted == 0 and again.stopping["cases_used"] == used
    assert len(again.run.attempts) == len(result.run.attempts)


def test_an_early_stopped_run_folder_loads_as_the_run_returned_it(tmp_path) -> None:
    """load_experiment(run_dir=...) of a folder whose run stopped early was refused ("N
    attempt(s) of the live variants have not run yet", hint: resume), though a resume
    calls nothing. It now loads what the run analysed: the cases the sequence used, with
    the stopping block, as run_experiment returned them; so do the folder's tables/. A
    folder whose run has not decided and has attempts left is still refused."""
    from agenticlens_frames import load_experiment, read_parquet

    manifest, suite = _experiment(tmp_path)
    folder = tmp_path / "run"
    kwargs = {"progress": False, "stop_when": "decided", "stop_rule": HOLM}
    result = run_experiment(manifest, suite, run_dir=folder, **kwargs)
    assert result.stopping["stopped_early"] and result.stopping["cases_used"] < 120
    loaded = load_experiment(manifest, suite, run_dir=folder)
    for name in ("attempts", "checks", "trials", "variants", "cases"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(result.run, name))
    assert len(loaded.cases) == result.stopping["cases_used"]
    # The block as the run returned it, the declared correction (Holm, given in Python,
    # not in the manifest) included.
    assert loaded.stopping == result.stopping
    assert loaded.stopping["declared_correction"] == "holm"
    # The run's tables/ (to_parquet) keep it too.
    saved = read_parquet(folder / "tables")
    assert saved.stopping == result.stopping
    pd.testing.assert_frame_equal(saved.attempts, result.run.attempts)
    # Resumed (decided already: nothing is called), then loaded again: the same.
    again = run_experiment(manifest, suite, run_dir=folder, **kwargs)
    assert again.attempted == 0
    assert load_experiment(manifest, suite, run_dir=folder).stopping == result.stopping

    # Not decided yet, attempts left: still refused, with the resume.
    partial = tmp_path / "partial"
    run_experiment(manifest, suite, run_dir=partial, max_attempts=20, **kwargs)
    with pytest.raises(InputError, match="not run yet") as refused:
        load_experiment(manifest, suite, run_dir=partial)
    assert "resume" in str(refused.value)


def test_a_run_the_rule_watched_to_the_end_loads_with_its_block(tmp_path) -> None:
    """A run under the rule that never stopped loads whole, with its block (not stopped
    early), as the run returned it (its declared correction the manifest's: no session
    stopped it, so none journaled one)."""
    from agenticlens_frames import load_experiment

    manifest, suite = _experiment(
        tmp_path,
        cases=12,
        variants=("base", "base2", "worse"),
        comparisons={"correction": "holm"},
    )
    folder = tmp_path / "run"
    result = run_experiment(manifest, suite, progress=False, run_dir=folder, stop_when="decided")
    assert not result.stopping["stopped_early"] and len(result.run.cases) == 12
    loaded = load_experiment(manifest, suite, run_dir=folder)
    assert loaded.stopping == result.stopping
    assert loaded.stopping["declared_correction"] == "holm"
    pd.testing.assert_frame_equal(loaded.attempts, result.run.attempts)


def test_a_run_never_stopped_loads_with_the_correction_declared_in_python(tmp_path) -> None:
    """run.json recorded only the correction the rule applied (Bonferroni, for Holm), and a
    run that never stopped journals no ``stop`` record: loading one whose Holm was declared
    only in Python (``comparisons=``) named Bonferroni as the declared correction, and its
    statement left out that Holm applies to the fixed-sample verdicts. run.json now
    records both; a folder of an earlier version (the applied one only) still loads."""
    from agenticlens_frames import load_experiment
    from agenticlens_frames.early_stopping import rule_statement

    manifest, suite = _experiment(tmp_path, cases=12, variants=("base", "base2", "worse"))
    folder = tmp_path / "run"
    kwargs = {"progress": False, "stop_when": "decided", "run_dir": folder}
    result = run_experiment(manifest, suite, comparisons={"correction": "holm"}, **kwargs)
    assert not result.stopping["stopped_early"]
    assert (result.stopping["correction"], result.stopping["declared_correction"]) == (
        "bonferroni",
        "holm",
    )
    recorded = json.loads((folder / "run.json").read_text())["stopping"]
    assert (recorded["correction"], recorded["declared_correction"]) == ("bonferroni", "holm")
    loaded = load_experiment(manifest, suite, run_dir=folder)
    assert loaded.stopping == result.stopping
    assert "the declared Holm correction applies" in rule_statement(loaded.stopping)

    # A folder of an earlier version: run.json without the declared correction. Nothing
    # says Holm there, so the applied correction is named, as before.
    meta = json.loads((folder / "run.json").read_text())
    del meta["stopping"]["declared_correction"]
    (folder / "run.json").write_text(json.dumps(meta))
    older = load_experiment(manifest, suite, run_dir=folder)
    assert older.stopping["declared_correction"] == "bonferroni"
    assert len(older.cases) == 12


def test_a_resume_declaring_another_correction_is_what_the_load_names(tmp_path) -> None:
    """A resume may declare another correction when the rule applies the same one (see
    test_settings_of_the_final_analysis_only_still_resume); its block names it, and the
    load of the folder (no ``stop`` record: the run never stopped) names it too."""
    from agenticlens_frames import load_experiment

    manifest, suite = _experiment(tmp_path, cases=12, variants=("base", "base2", "worse"))
    folder = tmp_path / "run"
    kwargs = {"progress": False, "stop_when": "decided", "run_dir": folder}
    first = run_experiment(
        manifest, suite, max_attempts=8, comparisons={"correction": "holm"}, **kwargs
    )
    assert first.remaining > 0
    second = run_experiment(manifest, suite, comparisons={"correction": "bonferroni"}, **kwargs)
    assert second.complete and not second.stopping["stopped_early"]
    assert second.stopping["declared_correction"] == "bonferroni"
    meta = json.loads((folder / "run.json").read_text())
    assert meta["stopping"]["declared_correction"] == "bonferroni"
    assert load_experiment(manifest, suite, run_dir=folder).stopping == second.stopping


def test_the_final_analysis_declares_the_stopping_rules_correction(tmp_path) -> None:
    """StopRule(correction="holm") split α for the stop, yet analyze(result.run) declared
    no correction: its verdicts called nothing, with a hint to declare one, beside a
    stopping block saying Holm applies to them. The analysis of the run, of its load and
    of its saved tables now declares Holm (the verdicts of test_stats_paired's Holm, here
    the flags against the rows' own p-values); another correction is refused, as one the
    manifest fixed is."""
    from agenticlens_frames import analyze, load_experiment, read_parquet

    manifest, suite = _experiment(tmp_path)
    folder = tmp_path / "run"
    result = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=folder,
        stop_when="decided",
        stop_rule=StopRule(correction="holm"),
    )
    assert result.stopping["stopped_early"]
    for run in (
        result.run,
        load_experiment(manifest, suite, run_dir=folder),
        read_parquet(folder / "tables"),
    ):
        verdicts = analyze(run, frontier_n_resamples=0).verdicts
        assert verdicts.attrs["declared"] and verdicts.attrs["correction"] == "holm"
        # Holm over the rows of the family, computed here (_holm_flags).
        rejected, significant = _holm_flags(verdicts, 0.05)
        assert (significant == rejected).all()
    with pytest.raises(InputError, match="early-stopping rule declared correction = 'holm'"):
        analyze(result.run, correction="none")
    # The same correction given again is the declared one, not a contradiction.
    assert analyze(result.run, correction="holm").verdicts.attrs["correction"] == "holm"


def _holm_flags(verdicts, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(rejected by Holm at ``alpha``, computed here; called better or worse) over the rows
    of the verdicts with a p-value: the k-th smallest p against α / (m - k + 1), stopping
    at the first that fails."""
    p = verdicts["p_value"].to_numpy(dtype=float)
    keep = ~np.isnan(p)
    order = np.argsort(p[keep])
    m = int(keep.sum())
    rejected = np.zeros(m, dtype=bool)
    for k, i in enumerate(order):
        if p[keep][i] > alpha / (m - k):
            break
        rejected[i] = True
    return rejected, verdicts.loc[keep, "verdict"].isin(["better", "worse"]).to_numpy()


def test_the_final_analysis_declares_the_stopping_rules_alpha_and_cluster(tmp_path) -> None:
    """The rule decided at α 0.1, cluster by cluster, with both given only in Python
    (``comparisons=``), yet analyze(result.run) gave fixed-sample verdicts at α 0.05 and
    case by case. The analysis of the run, of its load and of its saved tables now
    declares the rule's α and cluster (and correction); another α or cluster is refused."""
    from agenticlens_frames import analyze, load_experiment, read_parquet

    manifest, suite = _clustered_experiment(tmp_path)
    folder = tmp_path / "run"
    declared = {"correction": "holm", "cluster": "topic", "alpha": 0.1}
    result = run_experiment(
        manifest, suite, progress=False, run_dir=folder, stop_when="decided", comparisons=declared
    )
    stop = result.stopping
    assert stop["stopped_early"] and stop["unit"] == "cluster" and stop["alpha"] == 0.1
    topic_of = {c.id: c.metadata["topic"] for c in load_suite(suite).cases}
    for run in (
        result.run,
        load_experiment(manifest, suite, run_dir=folder),
        read_parquet(folder / "tables"),
    ):
        analysis = analyze(run, frontier_n_resamples=0)
        verdicts = analysis.verdicts
        assert verdicts.attrs["declared"] and verdicts.attrs["correction"] == "holm"
        assert set(verdicts["alpha"]) == {0.1}
        rejected, significant = _holm_flags(verdicts, 0.1)
        assert (significant == rejected).all()
        # By cluster: each quality row counts the topics of the cases used (2 cases each).
        rows = analysis.paired_frames["paired_comparisons"]
        quality = rows[rows["dimension"] == "quality"]
        topics = {topic_of[c] for c in run.cases["case_id"].astype(str)}
        assert set(quality["n_clusters"]) == {len(topics)} and len(topics) < len(run.cases)
    with pytest.raises(InputError, match=r"^alpha: the run's early-stopping rule decided at "):
        analyze(result.run, comparisons={"correction": "holm", "alpha": 0.05})
    with pytest.raises(InputError, match="ran cluster by cluster, cluster = 'topic'"):
        analyze(result.run, comparisons={"correction": "holm", "cluster": "other"})
    # The rule's own settings given again are the declared ones, not a contradiction.
    again = analyze(result.run, comparisons=declared, frontier_n_resamples=0)
    assert set(again.verdicts["alpha"]) == {0.1}
    # A manifest whose comparisons: block declares another α since the run (its hash
    # leaves the block out, so the folder still loads) is named as the cause.
    edited = yaml.safe_load(manifest.read_text())
    edited["comparisons"] = {"correction": "holm", "alpha": 0.05}
    manifest.write_text(yaml.safe_dump(edited, sort_keys=False))
    with pytest.raises(InputError, match=r"manifest\.yaml: comparisons\.alpha: the manifest "):
        analyze(load_experiment(manifest, suite, run_dir=folder))


def test_a_run_never_stopped_is_analysed_at_the_rules_alpha(tmp_path) -> None:
    """A run the rule watched to the end (no candidate decided) has its fixed-sample
    verdicts lead and gate: at the level declared before the run, the rule's
    (StopRule(alpha=0.1), nothing else declaring one), not at 0.05; its load too (no
    ``stop`` record: run.json's settings)."""
    from agenticlens_frames import analyze, load_experiment

    manifest, suite = _experiment(tmp_path, cases=12, variants=("base", "base2", "worse"))
    folder = tmp_path / "run"
    rule = StopRule(alpha=0.1, correction="holm")
    result = run_experiment(
        manifest, suite, progress=False, run_dir=folder, stop_when="decided", stop_rule=rule
    )
    assert not result.stopping["stopped_early"] and len(result.run.cases) == 12
    for run in (result.run, load_experiment(manifest, suite, run_dir=folder)):
        verdicts = analyze(run, frontier_n_resamples=0).verdicts
        assert set(verdicts["alpha"]) == {0.1} and verdicts.attrs["correction"] == "holm"
        rejected, significant = _holm_flags(verdicts, 0.1)
        assert (significant == rejected).all()


@pytest.mark.parametrize("where", ["comparisons", "manifest"])
def test_settings_that_do_not_name_alpha_leave_the_rules_alpha_alone(tmp_path, where) -> None:
    """``comparisons={"correction": "holm"}`` (or a manifest's block naming no α) declares
    no α: the rule's α = 0.1 stands, as the final analysis fills an unset α with the rule's
    (``run_comparisons``). It was refused, the unset α read as a declared 0.05."""
    from agenticlens_frames import analyze

    block = {"correction": "holm"}
    extra = {"comparisons": block} if where == "manifest" else {}
    manifest, suite = _experiment(tmp_path, cases=12, variants=("base", "base2", "worse"), **extra)
    result = run_experiment(
        manifest,
        suite,
        progress=False,
        stop_when="decided",
        stop_rule=StopRule(alpha=0.1),
        comparisons=block if where == "comparisons" else None,
    )
    assert result.stopping["alpha"] == 0.1 and result.stopping["declared_correction"] == "holm"
    assert set(analyze(result.run, frontier_n_resamples=0).verdicts["alpha"]) == {0.1}
    # A block that names another α still conflicts with the rule's.
    with pytest.raises(InputError, match=r"alpha 0\.1 is not the declared alpha 0\.05"):
        run_experiment(
            manifest,
            suite,
            progress=False,
            stop_when="decided",
            stop_rule=StopRule(alpha=0.1),
            comparisons={"correction": "holm", "alpha": 0.05},
        )


def test_the_command_lines_settings_are_refused_in_its_words(tmp_path) -> None:
    """Settings the command line built (``source`` ``cli``) that contradict the stopping
    rule's are refused naming its option: the refusal said ``give correction='holm', or
    none`` at ``correction`` (and its command-line branch ``give --correctionholm``)."""
    from agenticlens_frames import analyze
    from agenticlens_frames.paired.settings import comparisons_from_cli

    manifest, suite = _experiment(tmp_path)
    result = run_experiment(
        manifest, suite, progress=False, stop_when="decided", stop_rule=StopRule(correction="holm")
    )
    given = comparisons_from_cli(manifest, suite, correction="bonferroni")
    with pytest.raises(InputError) as refused:
        analyze(result.run, comparisons=given)
    assert str(refused.value).startswith(
        "--correction: the run's early-stopping rule declared correction = 'holm'"
    )
    assert "(give --correction holm, or leave --correction out" in str(refused.value)


def test_the_guard_rails_of_the_stopping_rules_correction_are_checked_before_any_call(
    tmp_path,
) -> None:
    """The final analysis declares the correction given only by StopRule (above), and its
    paired comparisons refuse an experiment beyond their guard rails: checked before the
    first call, as for a correction the run's comparisons declare, not after the run was
    paid for (here 2000 cases × 3 variants × 2 trials × 4 evaluators = 48 000 case-scores
    against the default limit of 20 000)."""
    manifest, suite = _experiment(tmp_path, cases=2000)
    with pytest.raises(InputError, match="48,000 case-scores exceed the limit of 20,000"):
        run_experiment(
            manifest,
            suite,
            progress=False,
            run_dir=tmp_path / "run",
            stop_when="decided",
            stop_rule=StopRule(correction="holm"),
        )
    assert not list((tmp_path / "run").glob("journal/*.jsonl"))


def _naive_interval(d: list[float], alpha: float) -> tuple[float, float]:
    """The betting confidence sequence's interval after the differences ``d``, written out
    grid value by grid value (Waudby-Smith & Ramdas' hedged capital, plug-in bets), with
    no code from the package."""
    kept = []
    for value in np.linspace(-1, 1, 801):
        m = (value + 1) / 2
        plus = minus = 1.0
        sum_x = sum_sq = 0.0
        var = 0.25
        excluded = False
        for t, di in enumerate(d, start=1):
            x = (di + 1) / 2
            lam = math.sqrt(2 * math.log(2 / alpha) / (var * t * math.log(1 + t)))
            plus *= 1 + min(lam, 0.5 / m if m > 0 else math.inf) * (x - m)
            minus *= 1 - min(lam, 0.5 / (1 - m) if m < 1 else math.inf) * (x - m)
            excluded |= 0.5 * plus + 0.5 * minus >= 1 / alpha
            sum_x += x
            sum_sq += (x - (0.5 + sum_x) / (t + 1)) ** 2
            var = (0.25 + sum_sq) / (t + 1)
        if not excluded:
            kept.append(value)
    return min(kept), max(kept)


def test_failed_trials_are_not_data_and_nothing_is_decided_on_none(tmp_path) -> None:
    # The audit's repro: a candidate whose target answers a plain string fails every
    # trial. The old monitor counted its placeholders as failures, decided it "worse" and
    # stopped early on trials that never ran.
    manifest, suite = _experiment(tmp_path, variants=("base", "better", "broken"))
    result = run_experiment(
        manifest,
        suite,
        progress=False,
        stop_when="decided",
        stop_rule=StopRule(alpha=0.05, correction="holm", margin=0.15),
    )
    stop = result.stopping
    better, broken = stop["candidates"]
    assert not stop["stopped_early"] and stop["attempts_saved"] == 0
    assert broken["decision"] is None and broken["paired_cases"] == 0
    assert (broken["lower"], broken["upper"]) == (-1.0, 1.0)
    assert stop["cases_used"] == 120 and better["paired_cases"] == 120
    assert stop["attempts_run"] + stop["attempts_skipped"] == stop["attempts_planned"]
    assert stop["correction"] == "bonferroni" and stop["declared_correction"] == "holm"
    # The candidate that has data: the sequence over the evaluated attempts of the tables,
    # per case in the planned order, computed here without the monitor.
    att = result.run.attempts
    att = att[att["status"] != "trial_failed"]
    rate = att.groupby(["variant_id", "case_id"], observed=True)["passed"].mean()
    rank = case_rank(load_suite(suite), 3)
    d = [rate["better", c] - rate["base", c] for c in sorted(rank, key=rank.__getitem__)]
    assert (better["lower"], better["upper"]) == pytest.approx(_naive_interval(d, 0.025))


def test_a_trial_that_fails_midway_gives_data_only_before_it(tmp_path) -> None:
    manifest_file, suite_file = _experiment(
        tmp_path, cases=4, variants=("base", "better", "broken")
    )
    manifest, suite = load_manifest(manifest_file), load_suite(suite_file)
    monitor = StopMonitor(manifest, suite, StopRule(alpha=0.05, correction="bonferroni"))
    index = {c.id: c.index for c in suite.cases}
    o = sorted(monitor.rank, key=monitor.rank.__getitem__)  # the planned order

    def add(variant: str, trial: int, case: str, status: str, passed: bool = False) -> None:
        score = [passed, float(passed), 1, int(passed), float(passed), None, None]
        monitor.add(
            {"type": "attempt", "variant": variant, "trial": trial, "case": case,
             "status": status, "score": score if status == "ok" else None}
        )  # fmt: skip

    for case in o:
        for trial in (1, 2):
            add("base", trial, case, "ok", passed=True)
            add("broken", trial, case, "invalid_payload")
    # better, trial 1: passes the first case, then an invalid payload fails the trial;
    # cases planned after it that had started before the failure was known are not data.
    add("better", 1, o[0], "ok", passed=True)
    add("better", 1, o[1], "invalid_payload")
    for case in o[2:]:
        if index[case] < index[o[1]]:
            add("better", 1, case, "ok", passed=True)
    # better, trial 2: a target error is an evaluated attempt that failed (as in the tables).
    add("better", 2, o[0], "target_error")
    for case, passed in zip(o[1:], (True, True, False), strict=True):
        add("better", 2, case, "ok", passed=passed)
    assert monitor.position == 4
    # Per case, better's pass rate over its evaluated attempts minus the baseline's (1):
    # o0 (1 + 0)/2, o1 trial 2 only, o2 trial 2 only, o3 trial 2 only.
    expected = [0.5 - 1, 1 - 1, 1 - 1, 0 - 1]
    assert (monitor.lower[0], monitor.upper[0]) == pytest.approx(_naive_interval(expected, 0.025))
    # broken never had an evaluated attempt: no case, no decision.
    assert (monitor.lower[1], monitor.upper[1]) == (-1.0, 1.0)
    assert monitor.decisions[1] is None
    assert monitor.paired_cases() == [4, 0]


def test_interrupted_run_resumes_into_the_same_sequence(tmp_path) -> None:
    manifest, suite = _experiment(tmp_path)
    straight = run_experiment(manifest, suite, progress=False, stop_when="decided", stop_rule=HOLM)
    first = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
        max_attempts=20,
    )
    assert first.remaining > 0
    second = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
    )
    assert second.stopping["cases_used"] == straight.stopping["cases_used"]
    assert second.stopping["candidates"] == straight.stopping["candidates"]


def test_analysis_of_a_stopped_run_and_rules(tmp_path) -> None:
    manifest, suite = _experiment(tmp_path, variants=("base", "better", "base2"))
    (tmp_path / "x").mkdir()
    with pytest.raises(InputError, match="correction"):
        run_experiment(manifest, suite, progress=False, stop_when="decided")
    with pytest.raises(InputError, match="stop_when"):
        run_experiment(manifest, suite, progress=False, stop_when="soon")


def _notes(caplog, result=None) -> str:
    """The runner's notes (logging warnings: the command line's stderr outside pytest),
    after what the command printed itself (``result``'s output)."""
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Note:")]
    said = [result.output] if result is not None else []
    return " ".join(" ".join([*said, *notes]).split())


def test_command_line_stop_when_decided(tmp_path, caplog) -> None:
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    manifest, suite = _experiment(tmp_path)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "experiment",
            "run",
            str(manifest),
            str(suite),
            "--save",
            str(out),
            "--correction",
            "holm",
            "--stop-when",
            "decided",
            "--run-dir",
            str(tmp_path / "run"),
            "--html",
            str(tmp_path / "report.html"),
            "--fail-on-regression",
        ],
    )
    # "worse" is decided worse: the gate follows the stopping decision (stderr says so).
    assert result.exit_code == 4, result.output
    # No --stop-margin: said before any call that a candidate equal to the baseline is
    # never decided (an audit's run went to the end and said so only afterwards).
    said = _notes(caplog, result)
    assert "Note: without --stop-margin the run stops only once every candidate" in said
    assert "Regression against the baseline (early-stopping decision): worse" in result.output
    stop = json.loads(out.read_text())["agenticlens_frames"]["early_stopping"]
    assert stop["stopped_early"] and stop["attempts_saved"] > 0
    # What the rule applied, and what was declared (for the fixed-sample verdicts).
    assert stop["correction"] == "bonferroni" and stop["declared_correction"] == "holm"
    assert stop["alpha_per_candidate"] == pytest.approx(0.025)
    rule = (
        "Bonferroni across the 2 candidates: α/m = 0.025 each (α = 0.05); the declared "
        "Holm correction applies to the fixed-sample verdicts"
    )
    # The console leads with the stopping decision; the verdicts follow, labelled.
    text = " ".join(result.output.split())
    decided = f"Early stopping: every candidate decided after {stop['cases_used']} of 120 cases"
    assert text.index(decided) < text.index("Fixed-sample verdicts against base")
    assert "descriptive after the early stop" in text and rule in text
    for name, sign in (("better", "+"), ("worse", "-")):  # decision, anytime-valid interval
        assert re.search(rf"│ {name} +│ {name} +│ +\[\{sign}[\d.]+, [-+][\d.]+\] pp │", text)
    page = (tmp_path / "report.html").read_text()
    assert page.index("id='early-stopping'") < page.index("id='verdicts'")
    assert decided in page and rule in page and "descriptive after the early stop" in page
    assert "per candidate)" not in page  # the old "(holm; 0.025 per candidate)"
    # experiment report renders the saved block the same way.
    again = CliRunner().invoke(app, ["experiment", "report", str(out)])
    assert again.exit_code == 0, again.output
    saved = " ".join(again.output.split())
    assert saved.index(decided) < saved.index("Fixed-sample verdicts against base")
    assert rule in saved
    bad = CliRunner().invoke(
        app, ["experiment", "run", str(manifest), str(suite), "--stop-margin", "0.05"]
    )
    # a usage error (exit 2), as an option that needs another one is
    said = " ".join(bad.output.replace("│", " ").split())
    assert bad.exit_code == 2 and "add --stop-when decided" in said, bad.output


def test_command_line_refuses_before_describing_the_rule(tmp_path) -> None:
    # Several candidates and no correction: the refusal comes alone, not after a note on
    # how the refused rule would have behaved without --stop-margin (a CI audit's finding).
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    manifest, suite = _experiment(tmp_path, cases=4)
    result = CliRunner().invoke(
        app, ["experiment", "run", str(manifest), str(suite), "--stop-when", "decided"]
    )
    text = " ".join(result.output.split())
    assert result.exit_code != 0 and "needs a declared multiple-comparison correction" in text
    assert "without --stop-margin" not in text


def test_the_gate_follows_the_stopping_decision_not_the_descriptive_table(tmp_path) -> None:
    from rich.console import Console

    from agenticlens_frames import analyze
    from agenticlens_frames.cli import EXIT_OK, EXIT_REGRESSION, _exit_code
    from agenticlens_frames.paired.verdicts import regressions

    manifest, suite = _experiment(tmp_path)
    result = run_experiment(manifest, suite, progress=False, stop_when="decided", stop_rule=HOLM)
    analysis = analyze(result.run, comparisons={"correction": "holm"})
    analysis.extras["early_stopping"] = stop = result.stopping
    # The fixed-sample table calls "worse" worse; so does the stopping decision.
    assert set(regressions(analysis.verdicts)["candidate_variant_id"]) == {"worse"}
    assert stop["candidates"][1]["decision"] == "worse"
    quiet = Console(quiet=True)
    assert _exit_code(analysis, True, quiet) == EXIT_REGRESSION
    # Where they disagree, the stopping decision governs: a candidate the rule decided
    # within ±δ does not fail the gate, whatever the descriptive table says...
    stop["candidates"][1] = {**stop["candidates"][1], "decision": "within ±δ"}
    assert _exit_code(analysis, True, quiet) == EXIT_OK
    # ...and so in a run the rule watched but never stopped (the table gated there, a
    # second chance at a false claim, docs/statistics.md §13)...
    analysis.extras["early_stopping"] = {**stop, "stopped_early": False}
    assert _exit_code(analysis, True, quiet) == EXIT_OK
    # ...while without the rule the table is the verdict.
    del analysis.extras["early_stopping"]
    assert _exit_code(analysis, True, quiet) == EXIT_REGRESSION


def _with_topics(suite, topic) -> None:
    """Give every case of the suite file a ``topic`` metadata value: ``topic(i)``."""
    cases = yaml.safe_load(suite.read_text())
    for i, case in enumerate(cases["cases"]):
        value = topic(i)
        if value is not None:
            case["metadata"] = {"topic": value}
    suite.write_text(yaml.safe_dump(cases, sort_keys=False))


def _planned_clusters(labels: list[str], seed: int) -> list[str]:
    """The clusters in their planned order, written out from the documented rule: a
    permutation seeded by the manifest's seed of the clusters in sorted order of their
    labels' JSON text."""
    distinct = sorted({json.dumps(label) for label in labels})
    return [json.loads(distinct[k]) for k in np.random.default_rng(seed).permutation(len(distinct))]


def _cluster_differences(run, candidate: str, topic_of: dict[str, str], clusters) -> list[float]:
    """Per cluster (in ``clusters``' order): the mean over its cases of the candidate's
    pass rate over its evaluated attempts minus the baseline's, from the tables (pandas)."""
    att = run.attempts[run.attempts["status"] != "trial_failed"]
    rate = att.groupby(["variant_id", "case_id"], observed=True)["passed"].mean().unstack(0)
    d = (rate[candidate] - rate["base"]).dropna().to_frame("d")
    d["topic"] = [topic_of[c] for c in d.index]
    means = d.groupby("topic")["d"].mean()
    return [float(means[t]) for t in clusters if t in means.index]


def test_cluster_rank_runs_every_cluster_whole_in_a_seeded_random_order(tmp_path) -> None:
    from agenticlens_frames.runner.stopping import cluster_rank

    _, suite_file = _experiment(tmp_path, cases=12)
    _with_topics(suite_file, lambda i: f"t{i % 5}")
    suite = load_suite(suite_file)
    labels = [c.metadata["topic"] for c in suite.cases]
    rank = cluster_rank(suite, 3, [json.dumps(v) for v in labels])
    order = sorted(rank, key=rank.__getitem__)
    expected = [
        c.id
        for topic in _planned_clusters(labels, 3)
        for c in suite.cases
        if c.metadata["topic"] == topic
    ]
    assert order == expected


def test_the_cluster_level_sequence_is_fed_once_per_completed_cluster(tmp_path) -> None:
    """Three clusters: a, b (a singleton) and c; the candidate never answers validly on
    the last planned case (both its trials fail there). The sequence sees each cluster's
    mean difference over its paired cases once the cluster is complete, and nothing
    before."""
    manifest_file, suite_file = _experiment(tmp_path, cases=6, variants=("base", "better", "base2"))
    topics = ["a", "a", "b", "c", "c", "c"]
    _with_topics(suite_file, topics.__getitem__)
    manifest, suite = load_manifest(manifest_file), load_suite(suite_file)
    rule = StopRule(alpha=0.05, correction="holm")
    monitor = StopMonitor(manifest, suite, rule, cluster="topic")
    planned = _planned_clusters(topics, 3)
    order = sorted(monitor.rank, key=monitor.rank.__getitem__)
    # The candidate's outcome per (case, trial): passed, failed, or None for an invalid
    # payload (fails the trial: the last planned case, so no other case loses data).
    # The baseline (and base2) pass trial 1 only.
    better = {"c0": (1, 1), "c1": (0, 1), "c2": (1, 0), "c3": (1, 1), "c4": (0, 0), "c5": (1, 0)}
    better[order[-1]] = (None, None)

    def add(variant: str, trial: int, case: str, passed: int | None) -> None:
        status = "ok" if passed is not None else "invalid_payload"
        score = [bool(passed), float(bool(passed)), 1, int(bool(passed)), float(bool(passed))]
        monitor.add(
            {"type": "attempt", "variant": variant, "trial": trial, "case": case,
             "status": status, "score": [*score, None, None] if status == "ok" else None}
        )  # fmt: skip

    first = [c for c in order if topics[int(c[1:])] == planned[0]]
    for case in order:
        for trial in (1, 2):
            add("base", trial, case, int(trial == 1))
            add("base2", trial, case, int(trial == 1))
            add("better", trial, case, better[case][trial - 1])
        if case == first[0] and len(first) > 1:
            # The first cluster is not complete: nothing fed, but the admission mark moves.
            assert monitor.sequence.t.tolist() == [0, 0] and monitor.complete_prefix == 1
    # By hand: a case's difference is better's pass rate over its valid trials minus the
    # baseline's 0.5 (none valid: not paired); a cluster's, the mean over its paired cases.
    case_d = {
        c: np.mean([x for x in v if x is not None]) - 0.5
        for c, v in better.items()
        if any(x is not None for x in v)
    }
    expected = []
    for t in planned:
        paired = [case_d[c] for c in case_d if topics[int(c[1:])] == t]
        if paired:
            expected.append(float(np.mean(paired)))
    assert len(case_d) == 5
    # Bonferroni over the two candidates: 0.025 each.
    assert (monitor.lower[0], monitor.upper[0]) == pytest.approx(_naive_interval(expected, 0.025))
    # The same numbers through BettingConfidenceSequence fed the cluster means by hand.
    cs = BettingConfidenceSequence(0.025)
    for value in expected:
        cs.update([value])
    assert (monitor.lower[0], monitor.upper[0]) == (cs.interval()[0][0], cs.interval()[1][0])
    summary = monitor.summary(36)
    assert summary["unit"] == "cluster" and summary["cluster"] == "topic"
    assert (summary["clusters_used"], summary["clusters_planned"], summary["cases_used"]) == (
        3,
        3,
        6,
    )
    assert summary["candidates"][0]["paired_clusters"] == len(expected)
    assert summary["candidates"][0]["paired_cases"] == 5
    # The gate's bound: a one-sided sequence at the unsplit 0.05 over the same cluster means.
    assert summary["candidates"][0]["gate_lower"] == pytest.approx(_naive_lower(expected, 0.05))
    # base2 equals the baseline on every case: 3 clusters of difference 0.
    assert summary["candidates"][1]["paired_clusters"] == 3
    assert summary["candidates"][1]["paired_cases"] == 6
    assert "cluster level" in summary["method"]


def _clustered_experiment(folder, **extra):
    """120 cases in 60 topics of 2, trial count 2; base passes 30 %, better 90 %."""
    manifest, suite = _experiment(folder, variants=("base", "better", "worse"), **extra)
    _with_topics(suite, lambda i: f"t{i % 60}")
    return manifest, suite


def test_declared_clusters_stop_early_at_the_cluster_level(tmp_path) -> None:
    """Declared clusters were refused before any call (the case-level sequence decided in
    31.0 % of null runs with 10 topics × 20 cases against a 5 % budget;
    benchmarks/bench_stopping.py --clustered). Now the clusters run one after another and
    the sequence takes one observation per completed cluster (0.0 % there)."""
    manifest, suite = _clustered_experiment(
        tmp_path, comparisons={"correction": "holm", "cluster": "topic"}
    )
    result = run_experiment(
        manifest, suite, progress=False, stop_when="decided", run_dir=tmp_path / "run"
    )
    stop = result.stopping
    assert stop["stopped_early"] and stop["unit"] == "cluster" and stop["cluster"] == "topic"
    assert stop["clusters_planned"] == 60 and stop["clusters_used"] < 60
    assert stop["reason"] == (
        f"every candidate decided after {stop['clusters_used']} of 60 clusters "
        f"({stop['cases_used']} of 120 cases)"
    )
    assert [c["decision"] for c in stop["candidates"]] == ["better", "worse"]
    # The tables hold whole clusters, the first clusters_used of the planned order.
    topic_of = {c.id: c.metadata["topic"] for c in load_suite(suite).cases}
    planned = _planned_clusters(list(topic_of.values()), 3)[: stop["clusters_used"]]
    used = set(result.run.cases["case_id"])
    assert used == {c for c, t in topic_of.items() if t in planned}
    assert len(used) == stop["cases_used"] == 2 * stop["clusters_used"]
    for entry in stop["candidates"]:
        d = _cluster_differences(result.run, entry["candidate_variant_id"], topic_of, planned)
        assert (entry["lower"], entry["upper"]) == pytest.approx(_naive_interval(d, 0.025))
        assert entry["gate_lower"] == pytest.approx(_naive_lower(d, 0.05))
        assert entry["paired_clusters"] == len(d) and entry["paired_cases"] == len(used)


def test_a_clustered_run_resumes_into_the_same_cluster_sequence(tmp_path) -> None:
    manifest, suite = _clustered_experiment(tmp_path)
    declared = {"correction": "holm", "cluster": "topic"}
    kwargs = {"progress": False, "stop_when": "decided", "comparisons": declared}
    straight = run_experiment(manifest, suite, **kwargs)
    # Interrupted inside a cluster (21 attempts: 3 cases of 6 attempts, and 3 more).
    first = run_experiment(manifest, suite, run_dir=tmp_path / "run", max_attempts=21, **kwargs)
    assert first.remaining > 0 and first.stopping is None
    second = run_experiment(manifest, suite, run_dir=tmp_path / "run", **kwargs)
    assert second.attempted > 0
    for key in ("cases_used", "clusters_used", "candidates", "reason"):
        assert second.stopping[key] == straight.stopping[key], key
    assert set(second.run.cases["case_id"]) == set(straight.run.cases["case_id"])


def test_a_case_without_a_cluster_value_is_refused_before_any_call(tmp_path) -> None:
    """As the fixed-sample statistics refuse it (a missing value is no cluster)."""
    manifest, suite = _experiment(tmp_path, cases=6)
    _with_topics(suite, lambda i: None if i == 4 else f"t{i % 2}")
    with pytest.raises(
        InputError,
        match=r"suite\.yaml: cases: 1 case\(s\) have "
        r"no value of the metadata field 'topic' \(absent, null or NaN\): c4",
    ):
        run_experiment(
            manifest,
            suite,
            progress=False,
            stop_when="decided",
            stop_rule=HOLM,
            comparisons={"correction": "holm", "cluster": "topic"},
            run_dir=tmp_path / "run",
        )
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_command_line_refuses_a_case_without_a_cluster_value_before_the_note(
    tmp_path, monkeypatch
) -> None:
    """The refusal comes alone, before any call and before the note on how the rule
    behaves without --stop-margin (as the other refusals of the rule)."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    monkeypatch.chdir(tmp_path)
    manifest, suite = _experiment(tmp_path, cases=6)
    _with_topics(suite, lambda i: None if i in (1, 4) else f"t{i % 2}")
    result = CliRunner().invoke(
        app,
        ["experiment", "run", str(manifest), str(suite), "--stop-when", "decided",
         "--correction", "holm", "--cluster", "topic", "--run-dir", str(tmp_path / "run")],
    )  # fmt: skip
    text = " ".join(result.output.split())
    assert result.exit_code == 1, text
    assert "suite.yaml: cases: 2 case(s) have no value of the metadata field 'topic'" in text
    assert "c1, c4" in text and "without --stop-margin" not in text
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_command_line_stops_early_with_declared_clusters(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    monkeypatch.chdir(tmp_path)
    manifest, suite = _clustered_experiment(tmp_path)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        ["experiment", "run", str(manifest), str(suite), "--stop-when", "decided",
         "--correction", "holm", "--cluster", "topic", "--run-dir", str(tmp_path / "run"),
         "--save", str(out), "--html", str(tmp_path / "report.html")],
    )  # fmt: skip
    text = " ".join(result.output.split())
    assert result.exit_code == 0, text
    stop = json.loads(out.read_text())["agenticlens_frames"]["early_stopping"]
    assert stop["stopped_early"] and stop["unit"] == "cluster"
    said = (
        "The sequence ran at the cluster level (metadata field 'topic'): one observation per "
        "completed cluster, the mean difference over its paired cases, every cluster "
        f"weighing the same; {stop['clusters_used']} of 60 clusters used"
    )
    decided = f"every candidate decided after {stop['clusters_used']} of 60 clusters"
    assert said in text and decided in text
    assert f"{stop['cases_used']} ({stop['clusters_used']} clusters)" in text
    page = " ".join(html.unescape((tmp_path / "report.html").read_text()).split())
    assert said in page and decided in page
    again = CliRunner().invoke(app, ["experiment", "report", str(out)])
    assert again.exit_code == 0 and said in " ".join(again.output.split())


@pytest.mark.parametrize("margin", [1.5, -0.1, float("nan")])
def test_a_stop_margin_outside_0_1_is_refused(tmp_path, margin: float) -> None:
    """--stop-margin is bounded to [0, 1]; StopRule(margin=) was not. With 1.5 a candidate
    whose every trial failed (no paired case: interval [-1, 1]) was decided 'within ±δ'
    and the run stopped after one case; -0.1 or NaN could never decide."""
    manifest, suite = _experiment(tmp_path, cases=10, variants=("base", "broken", "base2"))
    with pytest.raises(InputError, match="stop margin"):
        run_experiment(
            manifest,
            suite,
            progress=False,
            stop_when="decided",
            stop_rule=StopRule(correction="holm", margin=margin),
            run_dir=tmp_path / "run",
        )


def test_the_rule_takes_the_manifests_declared_correction(tmp_path) -> None:
    """The manifest declares Holm. StopRule(correction='none') ran both candidates at
    α = 0.05 and the block said "no correction (declared none)"; StopRule() was refused
    for want of a declared correction, with a hint to declare the one the manifest has."""
    manifest, suite = _experiment(tmp_path, cases=60, comparisons={"correction": "holm"})
    with pytest.raises(InputError, match="'none' is not the declared correction 'holm'"):
        run_experiment(
            manifest,
            suite,
            progress=False,
            stop_when="decided",
            stop_rule=StopRule(correction="none"),
            run_dir=tmp_path / "refused",
        )
    result = run_experiment(
        manifest, suite, progress=False, stop_when="decided", run_dir=tmp_path / "run"
    )
    stop = result.stopping
    assert stop["declared_correction"] == "holm" and stop["correction"] == "bonferroni"
    assert stop["alpha_per_candidate"] == pytest.approx(0.05 / 2)  # Bonferroni by hand


def test_the_rule_takes_the_manifests_declared_alpha(tmp_path) -> None:
    """The manifest declares α = 0.01: StopRule() ran at its default 0.05 (0.025 per
    candidate) beside verdicts at 0.01; now it takes 0.01, and another α is refused."""
    manifest, suite = _experiment(
        tmp_path, cases=30, comparisons={"correction": "holm", "alpha": 0.01}
    )
    with pytest.raises(InputError, match=r"not the declared alpha 0\.01"):
        run_experiment(
            manifest,
            suite,
            progress=False,
            stop_when="decided",
            stop_rule=StopRule(alpha=0.05),
            run_dir=tmp_path / "refused",
        )
    result = run_experiment(
        manifest, suite, progress=False, stop_when="decided", run_dir=tmp_path / "run"
    )
    assert result.stopping["alpha"] == 0.01
    assert result.stopping["alpha_per_candidate"] == pytest.approx(0.01 / 2)


def test_a_confidence_level_given_as_the_rules_alpha_is_refused_before_any_call(
    tmp_path,
) -> None:
    """StopRule(alpha=0.95, correction="holm") in a run whose manifest declares no
    comparisons ran, deciding at α = 0.475 a candidate, where every other α (manifest,
    comparisons=, --alpha) is refused above 0.5."""
    manifest, suite = _experiment(tmp_path, cases=8)
    run_dir = tmp_path / "run"
    with pytest.raises(InputError, match=r"stop_rule\.alpha: expected a number > 0 and <= 0\.5"):
        run_experiment(
            manifest,
            suite,
            progress=False,
            stop_when="decided",
            stop_rule=StopRule(alpha=0.95, correction="holm"),
            run_dir=run_dir,
        )
    assert not (run_dir / "journal").exists()  # refused before the folder was started


def test_command_line_a_stop_margin_of_0_is_said_to_decide_no_difference(
    tmp_path, monkeypatch, caplog
) -> None:
    """--stop-margin 0 can decide no candidate 'within ±δ' (no interval lies within
    (-0, 0)), as no margin; the note said for no margin was not said for it."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    monkeypatch.chdir(tmp_path)
    manifest, suite = _experiment(tmp_path, cases=4)
    result = CliRunner().invoke(
        app,
        ["experiment", "run", str(manifest), str(suite), "--stop-when", "decided",
         "--correction", "holm", "--stop-margin", "0", "--run-dir", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code != 1, result.output
    text = _notes(caplog, result)
    assert "Note: with --stop-margin 0 the run stops only once every candidate" in text, text


def test_a_resumed_early_stopped_run_keeps_its_unavailable_judge_scores(tmp_path) -> None:
    """Resumed runs judge unavailable judge scores again, but not under early stopping:
    the decision was taken on those outcomes in their order; judging them again changed
    the sequence (318 attempts and 53 cases used became 306 and 51)."""
    from agenticlens_frames.evaluators import EvaluatorRegistry

    manifest, suite = _experiment(tmp_path)
    data = yaml.safe_load(suite.read_text())
    for case in data["cases"]:
        case["evaluators"] = [{"name": "j", "threshold": 0.5}]
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    down = {"on": True}
    calls: list[str] = []

    def registry() -> EvaluatorRegistry:
        reg = EvaluatorRegistry()

        @reg.register_judge("j")
        def j(output, case, trace, config):  # type: ignore[no-untyped-def]
            calls.append(case.id)
            if down["on"] and case.id in ("c1", "c2"):
                raise TimeoutError("judge down")
            return 1.0

        return reg

    def run():  # type: ignore[no-untyped-def]
        return run_experiment(
            manifest,
            suite,
            evaluators=registry(),
            progress=False,
            run_dir=tmp_path / "run",
            stop_when="decided",
            stop_rule=HOLM,
        )

    first = run()
    checks = first.run.checks
    unavailable = checks["metadata"].fillna("").str.contains('"judge_status": "unavailable"')
    assert unavailable.sum() > 0
    down["on"] = False
    calls.clear()
    again = run()
    assert calls == [] and again.attempted == 0
    assert again.stopping["cases_used"] == first.stopping["cases_used"]
    pd.testing.assert_frame_equal(again.run.checks, first.run.checks)


def _resumable(folder):
    """12 cases with two metadata fields to cluster by (topic: 4 of 3, region: 3 of 4)."""
    manifest, suite = _experiment(folder, cases=12)
    cases = yaml.safe_load(suite.read_text())
    for i, case in enumerate(cases["cases"]):
        case["metadata"] = {"topic": f"t{i % 4}", "region": f"r{i % 3}"}
    suite.write_text(yaml.safe_dump(cases, sort_keys=False))
    return manifest, suite


def _segments(run_dir) -> list[bytes]:
    return [p.read_bytes() for p in sorted((run_dir / "journal").glob("*.jsonl"))]


#: (started with, resumed with, the setting the refusal names, recorded, given): each
#: changes the run's order or its decisions. Keyword arguments of run_experiment.
_HOLM_TOPIC = {"correction": "holm", "cluster": "topic"}
_CHANGED = {
    # The reported bug: a case-level sequence resumed at the cluster level.
    "cluster added": (
        {"stop_when": "decided", "stop_rule": HOLM},
        {"stop_when": "decided", "stop_rule": HOLM, "comparisons": _HOLM_TOPIC},
        "--cluster (comparisons' cluster) was not set, now 'topic'",
        "without --cluster",
    ),
    "cluster dropped": (
        {"stop_when": "decided", "comparisons": _HOLM_TOPIC},
        {"stop_when": "decided", "stop_rule": HOLM},
        "--cluster (comparisons' cluster) was 'topic', now not set",
        "--cluster topic",
    ),
    "another cluster field": (
        {"stop_when": "decided", "comparisons": _HOLM_TOPIC},
        {"stop_when": "decided", "comparisons": {"correction": "holm", "cluster": "region"}},
        "was 'topic', now 'region'",
        "--cluster topic",
    ),
    "stop_when added": (
        {},
        {"stop_when": "decided", "stop_rule": HOLM},
        "--stop-when (stop_when) was not set, now 'decided'",
        "without --stop-when",
    ),
    "stop_when dropped": (
        {"stop_when": "decided", "stop_rule": HOLM},
        {},
        "--stop-when (stop_when) was 'decided', now not set",
        "--stop-when decided, --alpha 0.05, a correction other than none",
    ),
    "alpha": (
        {"stop_when": "decided", "stop_rule": HOLM},
        {"stop_when": "decided", "stop_rule": StopRule(alpha=0.1, correction="holm")},
        "the level α (--alpha; stop_rule.alpha or comparisons' alpha) was 0.05, now 0.1",
        "--alpha 0.05",
    ),
    "alpha declared by the comparisons": (
        {"stop_when": "decided", "comparisons": {"correction": "holm"}},
        {"stop_when": "decided", "comparisons": {"correction": "holm", "alpha": 0.01}},
        "was 0.05, now 0.01",
        "--alpha 0.05",
    ),
    "correction": (
        {"stop_when": "decided", "stop_rule": HOLM},
        {"stop_when": "decided", "stop_rule": StopRule(correction="none")},
        "the correction the rule applies across candidates (from --correction; "
        "stop_rule.correction or comparisons' correction) was 'bonferroni', now 'none'",
        "a correction other than none",
    ),
    "margin": (
        {"stop_when": "decided", "stop_rule": HOLM},
        {"stop_when": "decided", "stop_rule": StopRule(correction="holm", margin=0.1)},
        "--stop-margin (stop_rule.margin) was not set, now 0.1",
        "without --stop-margin",
    ),
}


@pytest.mark.parametrize("change", list(_CHANGED))
def test_resuming_with_another_order_or_rule_is_refused_before_any_call(tmp_path, change) -> None:
    """A run folder records its early-stopping settings; a resume that changes one of them
    (and so the order the work runs in, or the sequence's decisions) was not refused: the
    journaled cases were replayed into a sequence of another design and the run went on."""
    started, resumed, named, original = _CHANGED[change]
    manifest, suite = _resumable(tmp_path)
    run_dir = tmp_path / "run"
    first = run_experiment(
        manifest, suite, progress=False, run_dir=run_dir, max_attempts=8, **started
    )
    assert first.remaining > 0
    before = _segments(run_dir)
    with pytest.raises(InputError) as refused:
        run_experiment(manifest, suite, progress=False, run_dir=run_dir, **resumed)
    error = refused.value
    text = " ".join(str(error).split())
    assert error.file == str(run_dir / "run.json")
    assert "this run was started with other early-stopping settings" in text
    assert named in text
    assert original in error.hint and "a new --run-dir" in error.hint
    # Refused before any call: nothing was journaled, not even an empty segment.
    assert _segments(run_dir) == before
    # The lock was released: resumed as started, the run goes on.
    assert run_experiment(manifest, suite, progress=False, run_dir=run_dir, **started).complete


def test_command_line_refuses_a_resume_with_clusters_added(tmp_path, monkeypatch, caplog) -> None:
    """Refused alone: the note on a rule without --stop-margin was said first, about a
    run that was then refused."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    monkeypatch.chdir(tmp_path)
    manifest, suite = _resumable(tmp_path)
    common = ["experiment", "run", str(manifest), str(suite), "--stop-when", "decided",
              "--correction", "holm", "--run-dir", str(tmp_path / "run"), "-q"]  # fmt: skip
    first = CliRunner().invoke(app, [*common, "--max-attempts", "8"])
    assert first.exit_code != 1, first.output
    before = _segments(tmp_path / "run")
    assert "without --stop-margin" in _notes(caplog, first)  # said for the run that ran
    caplog.clear()
    result = CliRunner().invoke(app, [*common, "--cluster", "topic"])
    text = " ".join(result.output.split())
    assert result.exit_code == 1, text
    assert "without --stop-margin" not in _notes(caplog, result)
    assert "run.json: this run was started with other early-stopping settings: --cluster" in text
    assert "without --cluster" in text
    assert _segments(tmp_path / "run") == before


def test_settings_of_the_final_analysis_only_still_resume(tmp_path) -> None:
    """What only the fixed-sample analysis uses (recomputed over every case at the end) may
    change on resume: the paired method, the intervals' level, the declared correction
    when the rule applies the same one (Bonferroni for Holm and Bonferroni alike); and
    without early stopping, the cluster and α, which then shape no order and no sequence."""
    manifest, suite = _resumable(tmp_path)
    kwargs = {"progress": False, "stop_when": "decided"}
    straight = run_experiment(manifest, suite, comparisons={"correction": "holm"}, **kwargs)
    run_dir = tmp_path / "run"
    first = run_experiment(
        manifest, suite, run_dir=run_dir, max_attempts=8, comparisons={"correction": "holm"},
        **kwargs,
    )  # fmt: skip
    assert first.remaining > 0
    other = {"correction": "bonferroni", "method": "wilcoxon", "confidence_level": 0.9}
    second = run_experiment(manifest, suite, run_dir=run_dir, comparisons=other, **kwargs)
    assert second.attempted > 0
    for key in ("cases_used", "candidates", "alpha_per_candidate", "correction"):
        assert second.stopping[key] == straight.stopping[key], key
    assert second.stopping["declared_correction"] == "bonferroni"

    plain = tmp_path / "plain"
    run_experiment(manifest, suite, progress=False, run_dir=plain, max_attempts=8)
    again = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=plain,
        comparisons={"correction": "holm", "cluster": "region", "alpha": 0.1},
    )
    assert again.complete and again.stopping is None and again.from_journal == 8


def test_a_folder_of_an_earlier_version_resumes_with_its_settings_unknown(tmp_path) -> None:
    """run.json without ``stopping`` (written before it was recorded): nothing to compare
    against, so the resume is not refused, whatever its settings, and run.json stays as
    it was (written once)."""
    manifest, suite = _resumable(tmp_path)
    run_dir = tmp_path / "run"
    run_experiment(
        manifest, suite, progress=False, run_dir=run_dir, max_attempts=8,
        stop_when="decided", stop_rule=HOLM,
    )  # fmt: skip
    meta = run_dir / "run.json"
    stored = json.loads(meta.read_text())
    assert stored["stopping"] == {
        "stop_when": "decided",
        "cluster": None,
        "alpha": 0.05,
        "correction": "bonferroni",
        "declared_correction": "holm",
        "margin": None,
    }
    del stored["stopping"]
    meta.write_text(json.dumps(stored, indent=2))
    old = meta.read_bytes()
    resumed = run_experiment(
        manifest, suite, progress=False, run_dir=run_dir, stop_when="decided",
        comparisons=_HOLM_TOPIC,
    )  # fmt: skip
    assert resumed.complete and resumed.from_journal == 8
    assert resumed.stopping["unit"] == "cluster"
    assert meta.read_bytes() == old


def test_attempt_counts_stop_at_the_decision_point(tmp_path) -> None:
    """Attempts of later cases started before the stop took effect still run; counted in
    ``attempts_run`` they made it differ by a few between identical runs (scoring-thread
    timing). Now it counts up to the decision point, and the overrun is reported on its
    own, and not as saved (it ran)."""
    manifest_file, suite_file = _experiment(tmp_path, cases=40)
    manifest, suite = load_manifest(manifest_file), load_suite(suite_file)

    def feed(overrun: int, invalid: bool) -> dict:
        monitor = StopMonitor(manifest, suite, HOLM)
        order = sorted(monitor.rank, key=monitor.rank.__getitem__)
        records = 0

        def add(variant: str, trial: int, case: str, status: str = "ok") -> None:
            nonlocal records
            # Against a baseline at 50 %: better always passes, worse never.
            passed = variant == "better" or (variant == "base" and trial == 1)
            score = [passed, float(passed), 1, int(passed), float(passed), None, None]
            monitor.add(
                {"type": "attempt", "variant": variant, "trial": trial, "case": case,
                 "status": status, "score": score if status == "ok" else None}
            )  # fmt: skip
            records += 1

        for case in order:
            for variant in ("base", "better", "worse"):
                for trial in (1, 2):
                    add(variant, trial, case)
            if monitor.should_stop:
                break
        used = monitor.position
        assert monitor.should_stop and used < 40
        # In flight when the stop took effect: attempts of the next cases, one of them an
        # invalid payload that fails base's first trial.
        late = [
            (v, t, c)
            for c in order[used : used + 2]
            for v in ("base", "better", "worse")
            for t in (1, 2)
        ]
        for k, (v, t, c) in enumerate(late[:overrun]):
            add(v, t, c, "invalid_payload" if invalid and k == 0 else "ok")
        return {**monitor.summary(records), "used": used}

    calm = feed(0, False)
    for busy in (feed(1, False), feed(3, False), feed(5, True)):
        # By hand: every attempt of the cases used (3 variants, 2 trials), none skipped.
        assert busy["attempts_run"] == calm["attempts_run"] == calm["used"] * 6
        assert busy["attempts_skipped"] == calm["attempts_skipped"] == 0
        # The late attempts ran: not saved.
        late = busy["attempts_after_decision"]
        assert busy["attempts_saved"] == (40 - calm["used"]) * 6 - late
    assert calm["attempts_after_decision"] == 0
    assert calm["attempts_saved"] == (40 - calm["used"]) * 6
    assert [feed(n, n == 5)["attempts_after_decision"] for n in (1, 3, 5)] == [1, 3, 5]


# Self-contained (another test's agents.py may be the one imported as ``agents``).
FLAKY = (
    TARGETS
    + """
import time

_base = _agent(0.5, "flaky")


def flaky(text, case=None):
    # c4 (planned 7th, seed 3) answers an invalid payload, failing the trial; c10
    # (planned 4th, after c4 in suite order) answers late, so that with several attempts
    # in flight c4's failure is journaled before it.
    if case.id == "c4":
        return "a plain string, not a payload"
    if case.id == "c10":
        time.sleep(0.3)
    return _base(text, case)
"""
)


def _flaky_experiment(folder):
    manifest, suite = _experiment(folder, cases=12, variants=("base", "worse", "flaky"))
    (folder / "flaky.py").write_text(FLAKY)
    data = yaml.safe_load(manifest.read_text())
    data["trial_count"] = 1
    data["max_workers"] = 8
    data["variants"][2]["target"] = "flaky.py:flaky"
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    return manifest, suite


def _tables(run) -> dict[str, str]:
    """The run's tables less what depends on timing by design (as JSON: NaN equals NaN)."""
    tables = {}
    for name in ("attempts", "cases", "trials"):
        frame = getattr(run, name)
        keep = [c for c in frame.columns if not re.search("elapsed|started|duration|_at$", c)]
        tables[name] = frame[keep].to_json(orient="split", default_handler=str)
    return tables


def _timeless(result) -> tuple[dict, dict[str, str]]:
    """The result's stopping block and tables less what depends on timing by design."""
    stop = {
        k: v
        for k, v in result.stopping.items()
        if k not in ("attempts_after_decision", "attempts_saved")
    }
    return stop, _tables(result.run)


@pytest.mark.parametrize("mode", ["trial", "case"])
def test_a_failed_trial_gives_the_same_result_at_any_concurrency_and_resumed(
    tmp_path, mode
) -> None:
    """Which cases of a failed trial count is decided in the planned order, by the
    scheduler (what it still calls) and the sequence alike. The scheduler skipped by suite
    position and the sequence took a case complete by suite position too: a case planned
    before the failing one but after it in the suite (c10) was fed without the failed
    trial's attempt when the failure was journaled first (several attempts in flight), and
    with it at concurrency 1 — another sequence, other paired cases. Resumed after a crash
    that lost that attempt, it was never called again."""
    manifest, suite = _flaky_experiment(tmp_path)
    rank = case_rank(load_suite(suite), 3)
    assert rank["c10"] < rank["c4"] and rank["c4"] == 6
    run = {"progress": False, "stop_when": "decided", "stop_rule": HOLM, "invalid_payload": mode}
    one = run_experiment(manifest, suite, concurrency=1, **run)
    expected = _timeless(one)
    # By hand: in trial mode flaky's only trial gives data on the 6 cases planned before
    # its invalid payload, and none after (12 cases, none decided on so few).
    flaky = one.stopping["candidates"][1]
    assert not one.stopping["stopped_early"] and one.stopping["cases_used"] == 12
    assert flaky["paired_cases"] == (6 if mode == "trial" else 12)
    for _ in range(3):
        assert _timeless(run_experiment(manifest, suite, concurrency=8, **run)) == expected
    # Trial mode: flaky's 5 cases planned after c4 are placeholders, left unrun (c3, before
    # c4 in the suite, was called too when the rule went by suite order).
    assert one.stopping["attempts_run"] == 36 - (5 if mode == "trial" else 0)
    assert one.stopping["attempts_skipped"] == (5 if mode == "trial" else 0)
    assert len(one.calls) == 36 - (5 if mode == "trial" else 0)
    # Crashed while c10 of flaky was in flight, after c4's failure was journaled: the
    # attempt is lost from the journal, and the resumed run calls it again.
    folder = tmp_path / "run"
    run_experiment(manifest, suite, concurrency=8, run_dir=folder, **run)
    for segment in sorted(folder.rglob("*.jsonl")):
        lines = segment.read_text().splitlines(keepends=True)
        segment.write_text(
            "".join(
                line
                for line in lines
                if not (
                    json.loads(line).get("variant") == "flaky"
                    and json.loads(line).get("case") == "c10"
                )
            )
        )
    resumed = run_experiment(manifest, suite, concurrency=8, run_dir=folder, **run)
    assert resumed.attempted == 1
    assert _timeless(resumed) == expected
    # Loaded from the folder: the same tables (its failed trial's cases not called in the
    # planned order are not attempts still to run).
    loaded = load_run_folder(
        load_manifest(manifest), load_suite(suite), folder, invalid_payload=mode
    )
    assert _tables(loaded) == expected[1]


def _edit_comparisons(manifest, block) -> None:
    """Rewrite the manifest file's ``comparisons:`` block (None: drop it)."""
    doc = yaml.safe_load(manifest.read_text())
    doc.pop("comparisons", None)
    if block is not None:
        doc["comparisons"] = block
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_an_edit_of_the_comparisons_block_that_only_the_analysis_reads_resumes(tmp_path) -> None:
    """The manifest's hash covered its ``comparisons:`` block: an edit of a key only the
    final analysis reads (the method, the intervals' level, Holm for Bonferroni) was
    refused on resume as "a different manifest". Now the early-stopping rule's own record
    decides: the run resumes into the same sequence, and the analysis takes the new block."""
    from agenticlens_frames import analyze

    manifest, suite = _resumable(tmp_path)
    _edit_comparisons(manifest, {"correction": "holm"})
    kwargs = {"progress": False, "stop_when": "decided"}
    straight = run_experiment(manifest, suite, **kwargs)
    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, run_dir=run_dir, max_attempts=8, **kwargs)
    assert first.remaining > 0
    edited = {"correction": "bonferroni", "method": "wilcoxon", "confidence_level": 0.9}
    _edit_comparisons(manifest, edited)
    second = run_experiment(manifest, suite, run_dir=run_dir, **kwargs)
    assert second.from_journal == 8 and second.attempted > 0
    for key in ("cases_used", "candidates", "alpha_per_candidate", "correction"):
        assert second.stopping[key] == straight.stopping[key], key
    assert second.stopping["declared_correction"] == "bonferroni"
    config = analyze(second.run).paired.config
    assert (config.correction, config.method, config.confidence_level) == (
        "bonferroni",
        "wilcoxon",
        0.9,
    )


@pytest.mark.parametrize(
    ("block", "named", "original"),
    [
        (
            {"correction": "holm", "alpha": 0.1},
            "the level α (--alpha; stop_rule.alpha or comparisons' alpha) was 0.05, now 0.1",
            "--alpha 0.05",
        ),
        (
            {"correction": "holm", "cluster": "topic"},
            "--cluster (comparisons' cluster) was not set, now 'topic'",
            "without --cluster",
        ),
        (
            {"correction": "none"},
            "the correction the rule applies across candidates (from --correction; "
            "stop_rule.correction or comparisons' correction) was 'bonferroni', now 'none'",
            "a correction other than none",
        ),
    ],
    ids=["alpha", "cluster", "split"],
)
def test_an_edit_of_the_comparisons_block_the_rule_reads_is_refused_by_name(
    tmp_path, block, named, original
) -> None:
    """What the early-stopping rule reads of the block (the cluster, α, whether the
    correction splits α) stays refused on resume, now by name with the recorded and the
    given value (it was "a different manifest", naming two hashes)."""
    manifest, suite = _resumable(tmp_path)
    _edit_comparisons(manifest, {"correction": "holm"})
    run_dir = tmp_path / "run"
    kwargs = {"progress": False, "stop_when": "decided", "run_dir": run_dir}
    assert run_experiment(manifest, suite, max_attempts=8, **kwargs).remaining > 0
    before = _segments(run_dir)
    _edit_comparisons(manifest, block)
    with pytest.raises(InputError) as refused:
        run_experiment(manifest, suite, **kwargs)
    text = " ".join(str(refused.value).split())
    assert "this run was started with other early-stopping settings" in text
    assert named in text and "different manifest" not in text
    assert original in refused.value.hint and "comparisons: block" in refused.value.hint
    assert _segments(run_dir) == before
    _edit_comparisons(manifest, {"correction": "holm"})  # as it was: the run goes on
    assert run_experiment(manifest, suite, **kwargs).complete


def test_without_early_stopping_an_edit_of_the_comparisons_block_resumes(tmp_path) -> None:
    """Without early stopping nothing in the block shapes the work (order, stop): an edit
    of any of it resumes, and the final analysis uses the block as it now is."""
    from agenticlens_frames import analyze

    manifest, suite = _resumable(tmp_path)
    _edit_comparisons(manifest, {"correction": "holm"})
    run_dir = tmp_path / "run"
    run_experiment(manifest, suite, progress=False, run_dir=run_dir, max_attempts=8)
    _edit_comparisons(manifest, {"correction": "bonferroni", "alpha": 0.1, "cluster": "region"})
    again = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    assert again.complete and again.stopping is None and again.from_journal == 8
    config = analyze(again.run).paired.config
    assert (config.correction, config.alpha, config.cluster) == ("bonferroni", 0.1, "region")
    # The analysis of the resumed run is that of an uninterrupted one under the new block.
    fresh = run_experiment(manifest, suite, progress=False)
    pd.testing.assert_frame_equal(
        analyze(again.run).paired.comparisons, analyze(fresh.run).paired.comparisons
    )


def _whole_manifest_sha256(manifest) -> str:
    """An earlier version's manifest hash, computed as it did (dataclasses.asdict, the
    paths and speed knobs left out, ``comparisons:`` kept), not by the code under test."""
    from .test_journal import reference_manifest, reference_sha256

    return reference_sha256(reference_manifest(load_manifest(manifest)))


@pytest.mark.parametrize("stopping", [True, False], ids=["with-stopping", "without-it"])
def test_a_folder_whose_hash_covers_the_whole_manifest_resumes_unchanged(
    tmp_path, stopping
) -> None:
    """A folder of an earlier version (its hash over the whole manifest, comparisons
    included; perhaps no ``stopping`` record) resumes when nothing changed; its hash cannot
    tell an edit of the block from any other, so that stays refused, as it was."""
    manifest, suite = _resumable(tmp_path)
    _edit_comparisons(manifest, {"correction": "holm"})
    run_dir = tmp_path / "run"
    run_experiment(
        manifest, suite, progress=False, run_dir=run_dir, max_attempts=8,
        stop_when="decided",
    )  # fmt: skip
    meta = run_dir / "run.json"
    stored = json.loads(meta.read_text())
    assert stored["manifest_sha256_excludes"] == ["comparisons"]
    assert stored["manifest_sha256"] != _whole_manifest_sha256(manifest)
    del stored["manifest_sha256_excludes"]
    stored["manifest_sha256"] = _whole_manifest_sha256(manifest)
    if not stopping:
        del stored["stopping"]
    meta.write_text(json.dumps(stored, indent=2))
    _edit_comparisons(manifest, {"correction": "holm", "method": "wilcoxon"})
    with pytest.raises(InputError, match=r"different manifest .*covers the manifest's compar"):
        run_experiment(manifest, suite, progress=False, run_dir=run_dir, stop_when="decided")
    _edit_comparisons(manifest, {"correction": "holm"})
    resumed = run_experiment(manifest, suite, progress=False, run_dir=run_dir, stop_when="decided")
    assert resumed.complete and resumed.from_journal == 8
    assert json.loads(meta.read_text()) == stored  # written once


def test_recorded_rank_is_the_planned_order_only_for_a_folder_with_early_stopping():
    # A load needs the order the cases ran in: suite order (None) for a folder without
    # early stopping (``stopping`` absent or null, or no ``stop_when``); else the seeded
    # permutation of the cases, computed here with numpy as the docs state it.
    from agenticlens_frames.runner.stopping import recorded_rank

    from ..conftest import EXAMPLE

    manifest = load_manifest(EXAMPLE / "manifest.yaml")
    suite = load_suite(EXAMPLE / "suite.yaml")
    for stopping in (None, "decided", {}, {"stop_when": None, "cluster": None}):
        assert recorded_rank(manifest, suite, stopping) is None, stopping
    permutation = np.random.default_rng(manifest.random_seed).permutation(len(suite.cases))
    expected = {suite.case_ids[int(i)]: position for position, i in enumerate(permutation)}
    rank = recorded_rank(manifest, suite, {"stop_when": "decided", "cluster": None})
    assert rank == expected


def test_declared_in_folder_takes_a_declared_none_and_skips_a_value_of_no_correction():
    # The stop record's declaration wins even when it declared none; a value that names
    # no correction (a hand edit) is passed over for the next source.
    from agenticlens_frames.runner.stopping import declared_in_folder

    recorded = {"correction": "bonferroni", "declared_correction": "holm"}
    assert declared_in_folder(recorded, {"declared_correction": None}, "by") is None
    assert declared_in_folder(recorded, {"declared_correction": 7}, "by") == "holm"
    assert declared_in_folder({"declared_correction": ["holm"]}, None, "by") == "by"
