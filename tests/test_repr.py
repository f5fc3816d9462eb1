"""The notebook display of an analysis states AgenticLens's pass-rate change in percentage
points, as the tables and the page do (it wrote "+30.0%", which reads as relative)."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

from agenticlens_frames import ExperimentRun, analyze


def test_the_compatible_pass_rate_change_is_in_points() -> None:
    rows = pd.DataFrame(
        [
            {"variant_id": v, "trial": t, "case_id": f"c{c}", "passed": c < limit}
            for v, limit in (("base", 5), ("cand", 8), ("other", 3))
            for t in (1, 2)
            for c in range(10)
        ]
    )
    run = ExperimentRun.from_frames(
        rows,
        pd.DataFrame({"variant_id": ["base", "cand", "other"]}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(10)]}),
    )
    shown = analyze(run, frontier_n_resamples=0)._repr_html_()
    rate = rows.groupby("variant_id")["passed"].mean()
    (row,) = re.findall(r"<tr><td>cand</td><td>([^<]*?)</td><td>[0-9.]+</td>", shown)
    assert row == f"{100 * (rate['cand'] - rate['base']):+.1f} pp"


def _gated(margin: float) -> str:
    """The plain display of a run whose candidate passes 3 of 10 cases a trial against the
    baseline's 5 of 10 (other cases in each trial), under a non-inferiority gate on
    quality of ``margin``."""
    rows = pd.DataFrame(
        [
            {
                "variant_id": v,
                "trial": t,
                "case_id": f"c{c}",
                "passed": (7 * c + 3 * t + len(v)) % 10 < limit,
            }
            for v, limit in (("base", 5), ("cand", 3))
            for t in (1, 2)
            for c in range(10)
        ]
    )
    rate = rows.groupby("variant_id")["passed"].mean()
    assert rate["cand"] - rate["base"] == pytest.approx(-0.2)
    run = ExperimentRun.from_frames(
        rows,
        pd.DataFrame({"variant_id": ["base", "cand"]}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(10)]}),
    )
    comparisons = {"correction": "holm", "noninferiority": [{"margin": margin}]}
    return repr(analyze(run, frontier_n_resamples=0, comparisons=comparisons))


def test_the_plain_display_leads_with_a_failed_gate() -> None:
    """The one-line display did not mention the non-inferiority gate, while the HTML display
    and every other surface lead with a failed one (docs/statistics.md, "Where a gate is
    said"): a failed gate before the verdicts, a passed one after them."""
    # The mean paired difference is -0.2, so its lower bound lies below -0.2: a margin of
    # 0.05 fails; one of 0.9 passes (10 cases cannot put the bound that far down).
    failed = _gated(0.05)
    gate = "gate='Non-inferiority gate failed: cand'"
    assert gate in failed and failed.index(gate) < failed.index("verdicts="), failed
    passed = _gated(0.9)
    gate = "gate='Non-inferiority gate passed'"
    assert gate in passed and passed.index("verdicts=") < passed.index(gate), passed


def test_the_display_of_an_analysed_live_run_leads_with_its_early_stop(tmp_path) -> None:
    """``analyze(run_experiment(..., stop_when="decided"))`` had no stopping block (only
    the command line set it): the notebook display showed the fixed-sample verdicts as the
    run's verdicts, with no word of the stop. The run carries its block now, and the
    analysis of it leads with the stopping decision as every other surface does."""
    from agenticlens_frames import run_experiment
    from agenticlens_frames.runner.stopping import StopRule

    from .runner.test_stopping import _experiment

    manifest, suite = _experiment(tmp_path, comparisons={"correction": "holm"})
    result = run_experiment(
        manifest, suite, progress=False, stop_when="decided", stop_rule=StopRule()
    )
    stop = result.stopping
    assert stop["stopped_early"]
    analysis = analyze(result, frontier_n_resamples=0)
    assert analysis.extras["early_stopping"] == stop
    # The reason in the block's own words, written here from its counts.
    reason = f"every candidate decided after {stop['cases_used']} of 120 cases"
    line = repr(analysis)
    assert line.index(f"early_stop='{reason}'") < line.index("verdicts="), line
    shown = html.unescape(analysis._repr_html_())
    title = "descriptive after the early stop"
    assert shown.index(f"Early stopping: {reason}") < shown.index(title), shown
    # The same from the run's tables (what analyze(result) takes).
    assert analyze(result.run, frontier_n_resamples=0).extras["early_stopping"] == stop


def _echo_result() -> object:
    """A live run through the Python API: ``short`` answers the first three letters, so it
    fails every input (each expects a longer word) while ``echo`` passes every one (10
    inputs, 2 trials)."""
    from agenticlens_frames.api import Experiment, Variant, run

    words = ["refund", "parcel", "invoice", "tracking", "password"]
    experiment = Experiment(
        "echo",
        variants=[Variant("echo"), Variant("short")],
        dataset=[{"input": f"{w} {i}", "expected_contains": [w]} for i in range(2) for w in words],
    )

    def agent_factory(variant: Variant) -> object:
        return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])

    return run(experiment, agent_factory, trials=2, progress=False)


def test_an_experiment_result_leads_with_its_verdicts_or_says_how_to_get_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ExperimentResult``'s display led with counts (variants, inputs, attempts) and said
    nothing of the verdicts. Before any analysis it says how to get them, without running
    one (an analysis is 0.15-0.4 s on the 350 attempts of data/support); after
    ``.analyze()`` it leads with that analysis's correction and verdicts."""
    import agenticlens_frames.analysis as analysis_module

    result = _echo_result()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the display ran an analysis")

    with monkeypatch.context() as patch:
        patch.setattr(analysis_module, "analyze", refuse)
        before = repr(result)
    assert "verdicts='not computed: call .analyze()'" in before, before
    assert before.index("verdicts=") < before.index("variants="), before

    analysis = result.analyze(correction="holm", frontier_n_resamples=0)
    after = repr(result)
    # The tally, counted here from the verdict frame's words.
    words = analysis.verdicts["verdict"].astype(str).tolist()
    assert "worse" in words, words  # short fails every input
    order = [w for w in ("better", "worse", "no detectable difference") if w in words]
    tally = ", ".join(f"{words.count(w)} {w}" for w in order)
    lead = f"correction='holm', verdicts='{tally}', "
    assert after.startswith(f"ExperimentResult(experiment='echo', {lead}run_id="), after
    # A failed non-inferiority gate leads the verdicts, as in the analysis's own display.
    result.analyze(
        comparisons={"correction": "holm", "noninferiority": [{"margin": 0.05}]},
        frontier_n_resamples=0,
    )
    gated = repr(result)
    assert "gate='Non-inferiority gate failed: short'" in gated, gated
    assert gated.index("gate=") < gated.index("verdicts=") < gated.index("variants="), gated
