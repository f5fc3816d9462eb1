"""The programmatic API: Experiment, Variant, run / arun, Tracker, Comparator."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from agenticlens_frames import analyze, read_parquet
from agenticlens_frames.api import (
    AgentContext,
    Comparator,
    Experiment,
    Tracker,
    Variant,
    arun,
    run,
)
from agenticlens_frames.errors import InputError
from agenticlens_frames.runner import RetryPolicy

from .conftest import EXAMPLE

DATASET = [
    "Where is my parcel?",
    {"input": "Refund order 17", "id": "refund", "expected_contains": ["refund"]},
    {"input": {"order": 17, "plan": "pro"}, "expected_output": "PLAN PRO"},
]


def _experiment(**kwargs) -> Experiment:
    return Experiment(
        name="api-demo",
        hypothesis="Shouting helps nobody.",
        variants=[
            Variant(name="quiet", model="small", temperature=0.0),
            Variant(name="loud", model="small", temperature=0.7, parameters={"style": "upper"}),
        ],
        dataset=list(DATASET),
        **kwargs,
    )


class Agent:
    """Sync agent whose run takes a context; remembers what it was given."""

    calls: ClassVar[list[tuple[str, object]]] = []
    lock = threading.Lock()

    def __init__(self, variant: Variant) -> None:
        self.upper = variant.parameters.get("style") == "upper"

    def run(self, text, context=None):
        with self.lock:
            Agent.calls.append((json.dumps(text, sort_keys=True, default=str), context))
        if isinstance(text, dict):
            return f"plan {text['plan']}".upper() if self.upper else f"plan {text['plan']}"
        return text.upper() if self.upper else text.lower()


@pytest.fixture(autouse=True)
def _clear_calls():
    Agent.calls.clear()


def test_variants_become_factors_and_the_dataset_a_suite():
    experiment = _experiment()
    suite = experiment.to_suite()
    assert [c.id for c in suite.cases] == ["input-01", "refund", "input-03"]
    assert suite.cases[0].expected_contains == () and suite.cases[0].input == DATASET[0]
    assert suite.cases[1].expected_contains == ("refund",)
    assert suite.cases[2].input == {"order": 17, "plan": "pro"}
    manifest = experiment.to_manifest(trials=2)
    assert manifest.variant("loud").factors == {
        "model": "small",
        "temperature": "0.7",
        "style": "upper",
    }
    assert manifest.baseline_variant_id == "quiet"
    assert manifest.metadata["hypothesis"] == "Shouting helps nobody."


def test_incremental_building_and_validation():
    experiment = Experiment(name="inc")
    experiment.add_variant(Variant(name="a")).add_inputs(["x", "y"])
    with pytest.raises(InputError, match="at least two"):
        experiment.to_manifest()
    with pytest.raises(InputError, match="must be unique"):
        experiment.add_variant(Variant(name="a"))
    experiment.variants.append(Variant(name="a"))  # behind add_variant's back
    with pytest.raises(InputError, match="must be unique"):
        experiment.to_manifest()
    bad = Experiment(name="bad", dataset=[{"input": "x", "max_turns": 0}])
    with pytest.raises(InputError) as info:
        bad.to_suite()
    assert info.value.location.startswith("dataset[0].max_turns")
    twice = Experiment(name="twice", dataset=[{"input": 1, "id": "a"}, {"input": 2, "id": "a"}])
    with pytest.raises(InputError, match="used twice"):
        twice.to_suite()


def test_every_problem_of_a_dataset_case_is_named_in_the_dataset():
    bad = Experiment(name="bad", dataset=[{"input": "x", "max_turns": 0, "tags": [1]}])
    with pytest.raises(InputError) as info:
        bad.to_suite()
    assert str(info.value).splitlines() == [
        "experiment 'bad': 2 problems:",
        "  experiment 'bad': dataset[0].max_turns: expected an integer >= 1, got 0",
        "  experiment 'bad': dataset[0].tags[0]: expected a string, got 1 (write it as a JSON "
        'string: "1")',
    ]


@pytest.mark.parametrize(
    ("entry", "location", "message"),
    [
        ({"input": "x", "metadata": None}, "dataset[0].metadata", "expected a mapping"),
        ({"input": "x", "metadata": [1]}, "dataset[0].metadata", "expected a mapping"),
        ({"input": "x", "tags": [1]}, "dataset[0].tags[0]", "expected a string"),
        ({"input": "x", "tags": ["t"], "metadata": {2: "x"}}, "dataset[0].metadata", "keys"),
    ],
)
def test_a_case_without_expectations_is_checked_as_the_suite_loader_checks(
    entry, location, message
):
    """Cases without expectations skip the suite loader: their tags and metadata went
    unchecked, then failed as TypeError in to_suite (metadata) or in the tables (tags)."""
    with pytest.raises(InputError) as info:
        Experiment(name="cases", dataset=[entry]).to_suite()
    assert info.value.location == location and message in info.value.message


@pytest.mark.parametrize(
    ("options", "location"),
    [
        ({"timeout_seconds": "30"}, "timeout_seconds"),
        ({"timeout_seconds": float("nan")}, "timeout_seconds"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"concurrency": -1}, "concurrency"),
        ({"random_seed": 1.5}, "random_seed"),
    ],
)
def test_run_options_of_the_wrong_kind_are_named(options, location):
    with pytest.raises(InputError) as info:
        run(_experiment(), Agent, progress=False, **options)
    assert info.value.location == location


def test_run_calls_every_agent_on_every_input_with_the_context():
    context = AgentContext(metadata={"team": "evals"})
    result = run(_experiment(), Agent, trials=2, context=context, progress=False)
    assert result.complete and context.experiment_id == "api-demo"
    att = result.attempts
    assert len(att) == 2 * 2 * 3 and (att["status"] == "ok").all()
    assert len(Agent.calls) == 12 and all(ctx is context for _, ctx in Agent.calls)
    loud = att[(att["variant_id"] == "loud") & (att["trial"] == 1)]
    assert loud["output"].tolist() == ["WHERE IS MY PARCEL?", "REFUND ORDER 17", "PLAN PRO"]
    # No trace: the latency is the measured call time, so it is known and positive.
    assert (att["latency_ms"] > 0).all()
    # Cases without expectations have no checks; the others are scored.
    assert att.groupby("case_id", observed=True)["n_checks"].max().to_dict() == {
        "input-01": 0,
        "refund": 1,
        "input-03": 1,
    }
    analysis = result.analyze()
    assert list(analysis.variants["variant_id"].astype(str)) == ["quiet", "loud"]


def test_async_agents_callables_payloads_and_async_factories():
    class AsyncAgent:
        async def run(self, text):
            await asyncio.sleep(0.001)
            return {"output": str(text), "trace": {"total_latency_ms": 12.5, "spans": []}}

    class Result:
        output = "from an object"

    async def factory(variant):
        if variant.name == "quiet":
            return AsyncAgent()
        return lambda text: Result()

    result = run(_experiment(), factory, progress=False, concurrency=3)
    att = result.attempts
    quiet = att[att["variant_id"] == "quiet"]
    assert (quiet["latency_ms"] == 12.5).all()
    assert quiet["output"].iloc[2] == str({"order": 17, "plan": "pro"})
    assert (att[att["variant_id"] == "loud"]["output"] == "from an object").all()


def test_timeouts_and_retries_apply_to_agents():
    tries: list[str] = []

    class Slow:
        def run(self, text):
            tries.append(text)
            if "parcel" in str(text):
                time.sleep(0.3)
            return "done"

    experiment = _experiment()
    result = run(
        experiment,
        lambda v: Slow(),
        timeout_seconds=0.05,
        retry=RetryPolicy(attempts=2, retry_on=frozenset({"timeout"})),
        progress=False,
    )
    att = result.attempts
    slow = att[att["case_id"] == "input-01"]
    assert (slow["status"] == "timed_out").all() and (slow["target_attempts"] == 2).all()
    assert (att[att["case_id"] != "input-01"]["status"] == "ok").all()
    assert tries.count("Where is my parcel?") == 4  # two variants, two calls each


def test_run_inside_a_running_event_loop_and_arun():
    async def notebook_cell():
        sync_result = run(_experiment(), Agent, progress=False)  # a loop is running here
        async_result = await arun(_experiment(), Agent, progress=False)
        return sync_result, async_result

    first, second = asyncio.run(notebook_cell())
    assert first.attempts["output"].tolist() == second.attempts["output"].tolist()


def test_tracker_persists_runs_as_parquet_and_resumes_by_run_id(tmp_path):
    tracker = Tracker(tmp_path / "results")
    partial = run(
        _experiment(),
        Agent,
        trials=2,
        tracker=tracker,
        run_id="r1",
        max_attempts=5,
        progress=False,
    )
    assert partial.remaining == 12 - 5 and len(Agent.calls) == 5
    done = run(_experiment(), Agent, trials=2, tracker=tracker, run_id="r1", progress=False)
    assert done.complete and len(Agent.calls) == 12  # nothing called twice
    run(_experiment(), Agent, tracker=tracker, run_id="r2", progress=False)

    reopened = Tracker(tmp_path / "results")
    assert len(reopened) == 4  # two runs x two variants
    folder = tmp_path / "results" / "api-demo" / "r1" / "tables"
    assert read_parquet(folder).attempts["output"].tolist() == done.attempts["output"].tolist()
    mine = reopened.get_by_experiment("api-demo")
    assert {r.metadata["run_id"] for r in mine} == {"r1", "r2"}
    assert reopened.get_by_experiment("other") == []
    exported = json.loads(reopened.export_json())
    assert {e["variant_name"] for e in exported} == {"quiet", "loud"}
    assert set(reopened.attempts.groupby("run_id").size().to_dict().items()) == {
        ("r1", 12),
        ("r2", 6),
    }
    reopened.clear()
    assert len(Tracker(tmp_path / "results")) == 0


def test_in_memory_tracker():
    tracker = Tracker()
    run(_experiment(), Agent, tracker=tracker, progress=False)
    assert len(tracker) == 2
    assert [r.total_runs for r in tracker.results] == [3, 3]


def test_comparator_frame_and_summary():
    result = run(_experiment(), Agent, trials=3, progress=False)
    frame = Comparator().compare(result)
    # quiet: "refund order 17" contains "refund" (passes), "plan pro" != "PLAN PRO" (fails)
    # loud:  "REFUND ORDER 17" contains "refund" (casefold), "PLAN PRO" matches: passes both
    expected_len = np.mean([len(s) for s in ("where is my parcel?", "refund order 17", "plan pro")])
    quiet = frame.set_index("variant").loc["quiet"]
    assert quiet["runs"] == 9 and quiet["errors"] == 0
    assert quiet["mean_output_length"] == pytest.approx(expected_len)
    # over the inputs with expectations: the one without checks has no pass/fail (it used
    # to count as passed, AgenticLens's rule, giving 6/9)
    assert quiet["pass_rate"] == pytest.approx(3 / 6)
    assert quiet["n_cases"] == 2 and quiet["ci_method"] == "beta_binomial (cases as the unit)"
    # Cases are the unit: two cases, each passing or failing in all three trials, are
    # far less evidence than six independent attempts (the pooled Wilson interval).
    low, high = proportion_confint(3, 6, alpha=0.05, method="wilson")
    assert quiet["pass_rate_ci_low"] < low and quiet["pass_rate_ci_high"] > high
    assert frame.set_index("variant").loc["loud", "pass_rate"] == 1.0
    text = Comparator().summary(result)
    assert "quiet (baseline)" in text and "Hypothesis: Shouting helps nobody." in text
    assert "pass rate: 50.0% (95% CI" in text and "cases as the unit: 2 cases)" in text
    assert f"{low:.1%}–{high:.1%}" not in text
    assert "1 of 3 input(s) have no checks" in text
    # The same pass rates from the per-variant results alone, without an interval: they
    # carry no case ids.
    again = Comparator().compare(result.variant_results)
    assert again["pass_rate"].tolist() == frame["pass_rate"].tolist()
    assert again["pass_rate_ci_low"].isna().all() and again["n_cases"].tolist() == [0, 0]
    assert "no interval: no per-case results" in Comparator().summary(result.variant_results)


def test_quality_verdicts_leave_out_inputs_no_check_judged():
    """An input without expectations "passed" in every attempt (AgenticLens's vacuous
    rule), so it entered the quality verdict as a difference of 0, diluting it; the
    verdict is now over the inputs with checks, as the pass rates are."""
    experiment = Experiment(
        name="e",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[
            "plain one",
            "plain two",
            {"input": "refund 1", "expected_contains": ["refund"]},
            {"input": "refund 2", "expected_contains": ["refund"]},
            {"input": "refund 3", "expected_contains": ["refund"]},
        ],
        comparisons={"correction": "holm"},
    )

    def build(variant):  # b drops the word on refund 2 and 3
        keep = {"a": {1, 2, 3}, "b": {1}}[variant.name]
        return lambda text: text if text.startswith("plain") or int(text[-1]) in keep else "no"

    result = run(experiment, build, trials=2, progress=False)
    verdicts = result.analyze().verdicts
    quality = verdicts[verdicts["dimension"].astype(str) == "quality"].iloc[0]
    # By hand over the three checked inputs: a passes 1, 1, 1; b passes 1, 0, 0.
    assert quality["paired_items"] == 3
    assert quality["mean_difference"] == pytest.approx((0 - 1 - 1) / 3)
    assert "have no checks: the pass rates and the quality verdicts leave them out" in (
        Comparator().summary(result)
    )


class CaseBound:
    """Passes a case when its number is below the variant's cut: every trial alike."""

    def __init__(self, variant: Variant) -> None:
        self.cut = int(variant.parameters["cut"])

    def run(self, text):
        number = int(text.split()[-1])
        return f"refund {number}" if number < self.cut else f"sorry {number}"


def _case_bound(**kwargs) -> Experiment:
    return Experiment(
        name="cut",
        variants=[
            Variant(name="base", parameters={"cut": 2}),
            Variant(name="wide", parameters={"cut": 7}),
        ],
        dataset=[{"input": f"order {i}", "expected_contains": ["refund"]} for i in range(8)],
        **kwargs,
    )


def test_comparator_interval_is_the_case_level_one():
    from agenticlens_frames.stats_paired import beta_binomial_interval

    result = run(_case_bound(), CaseBound, trials=3, progress=False)
    frame = Comparator(confidence_level=0.9).compare(result).set_index("variant")
    att = result.run.attempts
    for variant, passing in (("base", 2), ("wide", 7)):
        rows = att[att["variant_id"].astype(str) == variant]
        # per-case counts by a plain groupby of the attempts, not through the package
        per_case = rows.groupby(rows["case_id"].astype(str))["passed"].agg(["sum", "count"])
        assert per_case["sum"].tolist() == [3] * passing + [0] * (8 - passing)
        expected = beta_binomial_interval(per_case["sum"], per_case["count"], 0.9)
        got = frame.loc[variant]
        assert got["pass_rate"] == pytest.approx(passing / 8)
        assert (got["pass_rate_ci_low"], got["pass_rate_ci_high"]) == pytest.approx(
            (expected.ci_low, expected.ci_high)
        )
        assert got["n_cases"] == 8
        # wider than the pooled interval over 24 "independent" attempts
        low, high = proportion_confint(3 * passing, 24, alpha=0.1, method="wilson")
        assert got["pass_rate_ci_high"] - got["pass_rate_ci_low"] > high - low


def test_comparator_summary_leads_with_the_declared_verdicts():
    from scipy import stats

    result = run(
        _case_bound(comparisons={"correction": "holm"}), CaseBound, trials=3, progress=False
    )
    text = Comparator().summary(result)
    # per case, wide − base: cases 2..6 gain a pass, the rest are equal
    differences = np.array([0, 0, 1, 1, 1, 1, 1, 0], dtype=float)
    p = stats.ttest_1samp(differences, 0.0).pvalue
    assert p < 0.05 / 3  # better even after Holm over every dimension of the family
    verdicts = text.index("Verdicts (each candidate against the baseline, case by case):")
    assert verdicts < text.index("base (baseline)")
    quality = next(line for line in text.splitlines() if "quality (passed)" in line)
    assert quality.strip().startswith(
        f"wide vs base, quality (passed): +{differences.mean():.1%}".replace("%", " pp")
    )
    assert "Holm-adjusted p" in quality and quality.endswith(": better")
    assert "no correction is declared" not in text
    # A correction chosen afterwards is refused (it used to win over the experiment's); one
    # for an experiment that declared none applies.
    with pytest.raises(
        InputError,
        match=r"fixed correction = 'holm' in Experiment\(comparisons=\.\.\.\); 'bonferroni' was",
    ):
        Comparator(comparisons={"correction": "bonferroni"}).summary(result)
    assert Comparator(comparisons={"correction": "holm"}).summary(result) == text
    undeclared = run(_case_bound(), CaseBound, trials=3, progress=False)
    bonferroni = Comparator(comparisons={"correction": "bonferroni"}).summary(undeclared)
    assert "Bonferroni-adjusted p" in bonferroni


def test_comparator_summary_without_a_declared_correction_judges_nothing():
    result = run(_case_bound(), CaseBound, trials=2, progress=False)
    comparator = Comparator()
    text = comparator.summary(result)
    assert "(95% per-comparison interval); not judged: no correction declared" in text
    # with the smallest change the run could have detected, as a declared verdict has it
    assert "not judged: no correction declared; this run could not detect changes smaller" in (text)
    assert "comparisons={'correction': 'holm'}" in text
    assert ": better" not in text and "significant." in text
    verdicts = comparator.verdicts(result)
    assert verdicts["verdict"].tolist() == ["not judged"]
    assert verdicts["significant"].isna().all()


def test_comparator_and_experiment_refuse_bad_comparisons_before_any_call():
    calls = []

    def factory(variant):
        calls.append(variant.name)
        return str.upper

    with pytest.raises(InputError, match=r"comparisons.*correction") as info:
        run(_case_bound(comparisons={"correction": "holmes"}), factory, progress=False)
    assert "holm" in str(info.value) and calls == []
    with pytest.raises(InputError, match="comparisons must be a mapping"):
        run(_case_bound(comparisons="holm"), factory, progress=False)
    with pytest.raises(InputError, match="comparisons must be a mapping"):
        Comparator(comparisons="holm")
    with pytest.raises(InputError, match="correction"):
        Comparator(comparisons={"alpha": 0.05})
    with pytest.raises(InputError, match="confidence level"):
        Comparator(confidence_level=95)


def test_guard_rails_refuse_a_run_before_any_agent_call():
    """The limits of paired comparisons are checked before anything is paid for (they
    used to be checked only by analyze(), after every agent had run)."""
    calls = []

    def factory(variant):
        calls.append(variant.name)
        return str.upper

    nine = Experiment(
        name="big",
        variants=[Variant(name=f"v{i}") for i in range(9)],
        dataset=[{"input": "refund", "expected_contains": ["refund"]}],
        comparisons={"correction": "holm"},
    )
    with pytest.raises(InputError, match="9 configurations exceed the limit of 8"):
        run(nine, factory, progress=False)
    assert calls == []
    scores = Experiment(
        name="scores",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[{"input": f"refund {i}", "expected_contains": ["refund"]} for i in range(30)],
        comparisons={"correction": "holm", "limits": {"max_case_scores": 100}},
    )
    with pytest.raises(InputError, match="case-scores exceed the limit of 100"):
        run(scores, factory, trials=2, progress=False)
    assert calls == []
    # lifted as declared, the same run goes ahead
    nine.comparisons["limits"] = {"allow_large": True}
    assert run(nine, factory, progress=False).complete and len(calls) == 9


def test_comparator_without_expectations_says_what_its_pass_rate_counts():
    experiment = Experiment(
        name="plain", variants=[Variant(name="a"), Variant(name="b")], dataset=["x", "yy"]
    )
    result = run(experiment, lambda v: lambda text: text * 2, progress=False)
    frame = Comparator().compare(result)
    # No expectations, no pass/fail (it was 100% by AgenticLens's vacuous rule): the
    # comparison is about latency, cost and output shape.
    assert frame["pass_rate"].isna().all() and frame["n_cases"].tolist() == [0, 0]
    assert frame["mean_output_length"].tolist() == [3.0, 3.0]
    text = Comparator().summary(result)
    assert "No input has expectations, so there is no pass/fail" in text
    assert "pass rate" not in text


def test_comparator_reports_mean_cost_per_variant():
    """Cost is one of the three things a comparison without pass/fail is about."""
    prices = {"a": 0.01, "b": 0.025}

    def factory(variant):
        def agent(text):
            trace = {"total_latency_ms": 5.0, "estimated_cost_usd": prices[variant.name]}
            return {"output": text, "trace": trace}

        return agent

    experiment = Experiment(
        name="priced", variants=[Variant(name="a"), Variant(name="b")], dataset=["x", "yy"]
    )
    result = run(experiment, factory, trials=2, progress=False)
    frame = Comparator().compare(result).set_index("variant")
    att = result.run.attempts
    for name, price in prices.items():
        assert frame.loc[name, "mean_cost_usd"] == pytest.approx(price)
        assert att.loc[att["variant_id"] == name, "cost_usd"].mean() == pytest.approx(price)
    assert "mean cost: 0.025 USD" in Comparator().summary(result)


def test_comparator_and_analyze_agree_on_the_same_data():
    result = run(_experiment(), Agent, trials=2, progress=False)
    frame = Comparator().compare(result).set_index("variant")
    att = result.run.attempts
    summary = analyze(result.run).variants.set_index("variant_id")
    checked = set(result.run.cases.loc[result.run.cases["n_expectations"] > 0, "case_id"])
    for variant in ("quiet", "loud"):
        mine = att[(att["variant_id"] == variant) & (att["status"].astype(str) != "trial_failed")]
        naive = sum(bool(x) for x in mine["passed"]) / len(mine)  # a plain count
        # analyze() keeps AgenticLens's rule (an input without checks passes) ...
        assert summary.loc[variant, "case_pass_rate"] == pytest.approx(naive)
        # ... the Comparator counts only the inputs that have expectations
        with_checks = mine[mine["case_id"].astype(str).isin(checked)]
        expected = sum(bool(x) for x in with_checks["passed"]) / len(with_checks)
        assert frame.loc[variant, "pass_rate"] == pytest.approx(expected)


def test_analysis_of_an_api_run_uses_the_same_tables():
    result = run(_experiment(), Agent, trials=2, progress=False)
    analysis = analyze(result.run)
    summary = analysis.variants.set_index(analysis.variants["variant_id"].astype(str))
    # Pooled case pass rate over all attempts (expectation-free cases pass by definition).
    assert summary.loc["loud", "case_pass_rate"] == 1.0
    assert summary.loc["quiet", "case_pass_rate"] == pytest.approx(4 / 6)


def test_inputs_that_would_silently_go_wrong_are_refused_by_name():
    """A string dataset used to become one input per character, a case without 'input'
    lost its expectations, a typo in a case key sent the whole mapping to the agent, and
    variants="a,b" failed at run() with an AttributeError."""
    two = [Variant(name="a"), Variant(name="b")]
    with pytest.raises(InputError, match="dataset must be a list, got str"):
        Experiment(name="e", variants=two, dataset="Where is my parcel?")
    with pytest.raises(InputError, match="variants must be a list, got str"):
        Experiment(name="e", variants="a,b", dataset=["x"])
    with pytest.raises(InputError, match=r"variants\[1\] is a str, not a Variant"):
        Experiment(name="e", variants=[Variant(name="a"), "b"], dataset=["x"])
    with pytest.raises(InputError, match=r"add_inputs\(\[\.\.\.\]\)"):
        Experiment(name="e", variants=two).add_inputs("hello there")
    calls = []

    def factory(variant):
        calls.append(variant.name)
        return str.upper

    lost = Experiment(
        name="e", variants=two, dataset=[{"question": "q", "expected_contains": ["x"]}]
    )
    with pytest.raises(InputError, match=r"dataset\[0\]: a case with expectations"):
        run(lost, factory, progress=False)
    typo = Experiment(name="e", variants=two, dataset=[{"input": "q", "expected_contain": ["Q"]}])
    with pytest.raises(InputError, match="did you mean 'expected_contains'"):
        run(typo, factory, progress=False)
    assert calls == []
    # a mapping as the agent's input still works, under 'input'
    nested = Experiment(name="e", variants=two, dataset=[{"input": {"question": "q"}}])
    assert run(nested, lambda v: lambda x: x["question"], progress=False).complete


def test_an_agent_returning_none_fails_its_attempt_and_a_trace_keeps_measured_latency():
    import time as _time

    experiment = Experiment(
        name="e",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[{"input": "refund", "expected_contains": ["refund"]}],
    )
    nothing = run(experiment, lambda v: lambda text: None, progress=False)
    assert nothing.attempts["status"].astype(str).eq("target_error").all()
    assert nothing.attempts["error"].str.contains("returned None").all()

    def slow(variant):
        def agent(text):
            _time.sleep(0.05)
            return {"output": text, "trace": {"spans": []}}  # no latency of its own

        return agent

    timed = run(experiment, slow, progress=False)
    # measured, not read as 0 ms from a trace that has none
    assert (timed.attempts["latency_ms"] >= 45).all()


def test_two_runs_in_the_same_second_do_not_share_a_folder(tmp_path):
    """The default run id was the time to the second: a second run started within it
    resumed the first and returned its results without calling its own agent."""
    tracker = Tracker(tmp_path / "runs")
    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=["x", "y"]
    )
    first = run(experiment, lambda v: str.upper, tracker=tracker, progress=False)
    second = run(experiment, lambda v: str.lower, tracker=tracker, progress=False)
    assert first.run_id != second.run_id
    assert set(first.attempts["output"]) == {"X", "Y"}
    assert set(second.attempts["output"]) == {"x", "y"}
    # an explicit run id still resumes: nothing is called again
    again = run(experiment, lambda v: str.title, tracker=tracker, run_id=second.run_id)
    assert set(again.attempts["output"]) == {"x", "y"}


def test_an_agent_factory_error_names_the_variant():
    def factory(variant):
        if variant.name == "b":
            raise ValueError("missing API key")
        return str.upper

    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=["x"]
    )
    with pytest.raises(InputError, match="raised for variant 'b': ValueError: missing API key"):
        run(experiment, factory, progress=False)


def test_comparator_runs_leave_out_a_failed_trials_placeholders():
    """retrieval-dense lost a whole trial: its 14 placeholders never ran, so they are
    neither runs nor errors (they were counted as 14 errors of 70 runs)."""
    from agenticlens_frames import load_experiment

    bundled = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    frame = Comparator().compare(bundled).set_index("variant")
    att = bundled.attempts
    for variant in frame.index:
        rows = att[att["variant_id"].astype(str) == variant]
        made = rows[rows["status"].astype(str) != "trial_failed"]
        assert frame.loc[variant, "runs"] == len(made)
        assert frame.loc[variant, "errors"] == int((made["status"].astype(str) != "ok").sum())
    assert frame.loc["retrieval-dense", "runs"] == 56
    assert frame.loc["retrieval-dense", "errors"] == 0


@pytest.mark.parametrize(
    "returned",
    [{"output": None}, type("Result", (), {"output": None})()],
    ids=["payload", "result-object"],
)
def test_an_output_of_none_fails_the_attempt_rather_than_scoring_the_text_none(returned):
    # Scored as the text "None" before: an agent that produced nothing is a bug to see.
    experiment = Experiment(
        name="e",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[{"input": "q", "expected_contains": ["None"]}],
    )
    result = run(experiment, lambda v: lambda text: returned, progress=False)
    att = result.attempts
    assert att["status"].astype(str).eq("target_error").all()
    assert att["error"].str.contains("output None").all()
    assert not att["passed"].any()


def test_a_turn_count_beyond_the_table_is_kept_out_of_it_not_a_crash():
    # A trace claiming 2**40 turns raised ArrowInvalid from run(): the int32 column.
    experiment = Experiment(
        name="e",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[{"input": "q", "expected_contains": ["q"], "max_turns": 3}],
    )

    def build(variant):
        turns = 2**40 if variant.name == "a" else 2
        return lambda text: {"output": text, "trace": {"metadata": {"turn_count": turns}}}

    result = run(experiment, build, progress=False)
    att = result.attempts.astype({"variant_id": str}).set_index("variant_id")
    assert att["status"].astype(str).eq("ok").all()
    assert att.loc["b", "turns"] == 2 and pd.isna(att.loc["a", "turns"])
    # The max_turns check reads the real count: 2**40 > 3 fails, 2 passes.
    assert not att.loc["a", "passed"] and att.loc["b", "passed"]


def test_a_failed_call_on_an_input_without_checks_is_an_error_not_a_failed_case():
    """b's call failed on the plain input: that input got the package's failing
    target_call check, so it counted as a quality failure of b (pass rate over two cases
    where a had one, and a candidate-only case in the paired comparison)."""
    from agenticlens_frames.paired import paired_comparisons

    experiment = Experiment(
        name="e",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[
            "plain",
            *({"input": f"refund {i}", "expected_contains": ["refund"]} for i in range(3)),
        ],
    )

    def build(variant):
        def agent(text):
            if variant.name == "b" and text == "plain":
                raise RuntimeError("down")
            return text

        return agent

    result = run(experiment, build, trials=2, progress=False)
    frame = Comparator().compare(result).set_index("variant")
    assert frame["n_cases"].tolist() == [3, 3] and frame["pass_rate"].tolist() == [1.0, 1.0]
    assert frame.loc["b", "errors"] == 2  # the failure is still counted, as an error
    assert [r.pass_rate for r in result.variant_results] == [1.0, 1.0]
    pc = paired_comparisons(result.run, correction="holm")
    quality = pc[pc["evaluator"] == "passed"].iloc[0]
    assert quality["paired_items"] == 3 and quality["candidate_only_items"] == 0


def test_tracker_clear_deletes_its_run_folders_and_nothing_else(tmp_path):
    # clear() removed every folder in the storage folder, a user's own included.
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    (tmp_path / "data.csv").write_text("x")
    tracker = Tracker(tmp_path)
    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=["x"]
    )
    run(experiment, lambda v: str.upper, tracker=tracker, run_id="r1", progress=False)
    assert len(tracker) == 2
    tracker.clear()
    assert len(Tracker(tmp_path)) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "notes"]
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


def test_an_in_memory_tracker_refuses_to_resume_a_run_it_cannot_resume():
    # Nothing is journaled in memory: the second call ran every agent again and the
    # tracker held the run twice (a partial and a whole copy).
    calls = []

    def factory(variant):
        def agent(text):
            calls.append(text)
            return text

        return agent

    tracker = Tracker()
    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=["x", "y"]
    )
    run(experiment, factory, tracker=tracker, run_id="r1", max_attempts=2, progress=False)
    with pytest.raises(InputError, match="cannot resume it") as info:
        run(experiment, factory, tracker=tracker, run_id="r1", progress=False)
    assert info.value.location == "run_id"
    assert len(calls) == 2 and len(tracker) == 2
    run(experiment, factory, tracker=tracker, run_id="r2", progress=False)
    assert len(tracker) == 4


def test_an_experiment_without_a_correction_is_refused_when_it_is_made():
    # The spec: an experiment that asks for paired comparisons cannot be created without a
    # declared correction (it was refused only by run()).
    with pytest.raises(InputError, match="missing required key 'correction'"):
        Experiment(name="e", comparisons={"alpha": 0.05})
    with pytest.raises(InputError, match="comparisons must be a mapping"):
        Experiment(name="e", comparisons="holm")
    assert Experiment(name="e", comparisons={"correction": "holm"}).comparisons


def test_the_summary_of_a_bounded_run_says_it_is_incomplete(tmp_path):
    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=["x", "y"]
    )
    tracker = Tracker(tmp_path)
    partial = run(
        experiment, lambda v: str.upper, tracker=tracker, run_id="r", max_attempts=3,
        progress=False,
    )  # fmt: skip
    assert "Incomplete: 1 attempt still to call; 1 input unfinished" in Comparator().summary(
        partial
    )
    # The spec's "how many cases remain": 2 variants x 2 inputs, 3 done, so one input open.
    assert (partial.remaining, partial.remaining_cases) == (1, 1)
    assert "1 attempt(s) of 1 input(s) remaining" in repr(partial)
    done = run(experiment, lambda v: str.upper, tracker=tracker, run_id="r", progress=False)
    assert "Incomplete" not in Comparator().summary(done)


def test_an_input_whose_text_names_a_memory_address_is_refused_before_any_call():
    """An object without a repr of its own made the case name and the suite's digest
    change from process to process: a resumed run was refused as 'a different suite'."""

    class Query:
        def __init__(self, text):
            self.text = text

    @dataclasses.dataclass
    class Stable:
        text: str

    calls = []
    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=[Query("x")]
    )
    with pytest.raises(InputError, match="changes from process to process") as info:
        run(experiment, lambda v: calls.append, progress=False)
    assert info.value.location == "dataset[0]" and not calls
    nested = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=[{"input": [Query("y")]}]
    )
    with pytest.raises(InputError, match="changes from process to process"):
        nested.to_suite()
    fine = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=[Stable("x")]
    )
    assert fine.to_suite().cases[0].name == '{"text": "x"}'


def test_the_api_refuses_what_it_would_otherwise_mix_up_or_fail_on_later():
    # A parameter repeating a field: one of the two values was silently the factor.
    with pytest.raises(InputError, match="sets 'model' twice"):
        Variant(name="a", model="small", parameters={"model": "large"})
    # A repeated name: refused by add_variant, not first by run().
    experiment = Experiment(name="e", variants=[Variant(name="a")])
    with pytest.raises(InputError, match="a is already in the experiment"):
        experiment.add_variant(Variant(name="a"))
    # Not a result: a bare AttributeError on a string's characters.
    for wrong in ("abc", None, [1, 2]):
        with pytest.raises(InputError, match="cannot compare"):
            Comparator().compare(wrong)


def test_the_comparator_takes_an_analysis_as_its_run():
    from agenticlens_frames import analyze

    experiment = Experiment(
        name="e",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[{"input": f"refund {i}", "expected_contains": ["refund"]} for i in range(4)],
    )
    result = run(experiment, lambda v: str, trials=2, progress=False)
    pd.testing.assert_frame_equal(
        Comparator().compare(analyze(result.run)), Comparator().compare(result.run)
    )
    assert Comparator().summary(analyze(result.run)) == Comparator().summary(result.run)


def test_a_tracker_names_the_runs_it_holds_unfinished(tmp_path):
    """A run stopped before its tables were written (a crash, Ctrl-C, max_attempts) was
    invisible: len 0, no result, though its attempts were journaled."""
    tracker = Tracker(tmp_path)
    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=["x", "y"]
    )
    partial = run(experiment, lambda v: str.upper, tracker=tracker, run_id="r1", max_attempts=1,
                  progress=False)  # fmt: skip
    for table in (tmp_path / "e" / "r1" / "tables").glob("*.parquet"):
        table.unlink()  # as after a crash: the journal alone
    assert partial.remaining == 3 and len(tracker) == 0
    assert tracker.unfinished() == [("e", "r1")]
    run(experiment, lambda v: str.upper, tracker=tracker, run_id="r1", progress=False)
    assert tracker.unfinished() == [] and len(tracker) == 2


def test_a_retry_block_is_one_policy_for_every_variant():
    """run(..., retry={"attempts": 2}) was read as a mapping of variant ids: "unknown live
    variant id 'attempts'". As a manifest's retry block, it is one policy for all."""
    calls: dict[str, int] = {}

    def factory(variant):
        def agent(text):
            calls[variant.name] = calls.get(variant.name, 0) + 1
            if calls[variant.name] == 1:
                raise ConnectionError("first call of each variant fails")
            return text

        return agent

    experiment = Experiment(
        name="e", variants=[Variant(name="a"), Variant(name="b")], dataset=["x"]
    )
    result = run(experiment, factory, retry={"attempts": 2, "backoff_seconds": 0}, progress=False)
    assert calls == {"a": 2, "b": 2}  # each retried once, as the policy says
    assert (result.attempts["status"].astype(str) == "ok").all()
