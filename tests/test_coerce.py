"""Every figure and the explorer take a run, a result or an analysis, with statistics
options passed through; misspelt names are refused with what exists."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from agenticlens_frames import (
    ExperimentRun,
    analyze,
    explore,
    load_experiment,
    load_report,
    viz,
)
from agenticlens_frames.coerce import as_analysis
from agenticlens_frames.errors import InputError
from agenticlens_frames.report.json_report import write_json_report
from agenticlens_frames.widgets import attempt_details, select_variants

from .conftest import EXAMPLE

FIGURES = [
    viz.case_heatmap,
    viz.pass_k_curves,
    viz.pareto_chart,
    viz.delta_forest,
    viz.factor_levels_chart,
    viz.case_outcomes_chart,
    viz.factor_effects_forest,
    # It alone required (variants, effects): factor_interaction_chart(analysis) was a
    # TypeError, though the quickstart says every figure function takes the analysis.
    viz.factor_interaction_chart,
]


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


@pytest.fixture(scope="module")
def analysis(run):
    return analyze(run)


@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f.__name__)
def test_each_figure_is_the_same_from_frame_run_or_analysis(figure, run, analysis) -> None:
    frames = {
        "case_heatmap": (analysis.cases, analysis.variants),
        "pass_k_curves": (viz.pass_k_frame(analysis),),
        "pareto_chart": (analysis.variants,),
        "delta_forest": (analysis.comparisons,),
        "factor_levels_chart": (analysis.factor_levels,),
        "case_outcomes_chart": (analysis.cases,),
        "factor_effects_forest": (analysis.factor_effects,),
        "factor_interaction_chart": (analysis.variants, analysis.factor_effects),
    }[figure.__name__]
    kwargs = {}
    if figure is viz.pass_k_curves:
        vs = analysis.variants
        kwargs["variant_names"] = dict(
            zip(vs["variant_id"].astype(str), vs["variant_name"].astype(str), strict=True)
        )
    expected = figure(*frames, **kwargs).to_json()
    assert figure(analysis).to_json() == expected
    assert figure(run).to_json() == expected


def test_the_interaction_chart_needs_effects_with_a_frame_and_has_none_without_factors(
    analysis,
) -> None:
    with pytest.raises(InputError, match="needs its factor effects") as info:
        viz.factor_interaction_chart(analysis.variants)
    assert "factor_interaction_chart(analysis)" in str(info.value)
    # A run without factors has an empty factor_effects frame: no chart, not a KeyError.
    att = pd.DataFrame(
        {
            "variant_id": ["a", "a", "b", "b"],
            "trial": 1,
            "case_id": ["x", "y", "x", "y"],
            "passed": [True, False, True, True],
        }
    )
    plain = ExperimentRun.from_frames(
        att, pd.DataFrame({"variant_id": ["a", "b"]}), pd.DataFrame({"case_id": ["x", "y"]})
    )
    assert viz.factor_interaction_chart(plain) is None


def test_statistics_options_reach_the_figure(run) -> None:
    # The paired forest colours its marks only under a correction, and its adjusted
    # p-values are Holm's (checked with statsmodels).
    fig = viz.paired_forest(run, correction="holm")
    pc = as_analysis(run, correction="holm").paired_frames["paired_comparisons"]
    expected = multipletests(pc["p_value"].to_numpy(float), method="holm")[1]
    np.testing.assert_allclose(pc["adjusted_p_value"].to_numpy(float), expected)
    assert len(fig.data) == pc["dimension"].nunique()
    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    # Without one: the quality differences with per-comparison intervals, all grey.
    plain = viz.paired_forest(undeclared)
    assert [t.name for t in plain.data] == ["quality"]
    assert set(plain.data[0].marker.color) == {"#5f6470"}
    assert "no correction declared" in plain.layout.title.subtitle.text
    deltas = viz.delta_forest(run, confidence_level=0.8)
    assert (
        deltas.to_json()
        == viz.delta_forest(analyze(run, confidence_level=0.8).comparisons).to_json()
    )


def test_a_correction_of_none_is_not_given_as_in_analyze(run) -> None:
    """viz.paired_forest(run, correction=None) on a run that declares none was refused
    ("paired comparisons need a declared correction"); analyze(run, correction=None) and
    the figure without the keyword both work, and give the same figure."""
    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    none = viz.paired_forest(undeclared, correction=None, frontier_n_resamples=0)
    assert none.to_json() == viz.paired_forest(undeclared, frontier_n_resamples=0).to_json()
    assert as_analysis(undeclared, correction=None).verdicts.attrs["declared"] is False
    # The manifest's own declaration still holds when None is passed.
    assert set(as_analysis(run, correction=None).verdicts["correction"]) == {"holm"}


def test_explore_passes_a_correction_through(run) -> None:
    ex = explore(run, correction="holm", alpha=0.1)
    pc = ex.analysis.paired_frames["paired_comparisons"]
    assert set(pc["correction"]) == {"holm"} and ex.paired is not None
    # A result object of the live/API runner works too (it holds the run).
    holder = type("Result", (), {"run": run})()
    assert explore(holder).analysis.run is run


def test_options_with_a_frame_or_a_saved_report_are_refused(run, analysis, tmp_path: Path):
    with pytest.raises(InputError, match="not to a result frame"):
        viz.pareto_chart(analysis.variants, correction="holm")
    write_json_report(analysis, tmp_path / "r.json")
    saved = load_report(tmp_path / "r.json")
    viz.case_heatmap(saved)  # no options: fine
    with pytest.raises(InputError, match="saved report"):
        viz.case_heatmap(saved, correction="holm")


def test_misspelt_statistics_option_suggests_the_name(run) -> None:
    with pytest.raises(InputError) as info:
        explore(run, corection="holm")
    assert "did you mean 'correction'" in str(info.value)
    with pytest.raises(InputError, match="did you mean 'bootstrap'"):
        explore(run, correction="holm", paired_method="bootstap")


def test_misspelt_variant_factor_and_level_name_what_exists(run, analysis) -> None:
    with pytest.raises(InputError) as info:
        attempt_details(run, "promt-v2", "track-order")
    text = str(info.value)
    assert "did you mean 'prompt-v2'" in text and "baseline" in text
    with pytest.raises(InputError, match="did you mean 'track-order'"):
        attempt_details(run, "prompt-v2", "track-ordr")
    with pytest.raises(InputError, match="did you mean 'prompt'"):
        select_variants(analysis.variants, {"promt": ["v2"]})
    with pytest.raises(InputError) as info:
        select_variants(analysis.variants, {"prompt": ["V2"]})
    assert "did you mean 'v2'" in str(info.value) and "v1" in str(info.value)
    with pytest.raises(InputError, match="did you mean 'prompt-v2'"):
        viz.case_heatmap(analysis, baseline="prompt_v2")
    with pytest.raises(InputError, match="did you mean 'model'"):
        viz.case_heatmap(analysis, variant_order="factor:modle")


def test_misspelt_baseline_and_variant_limits_suggest_the_variant(tmp_path: Path) -> None:
    from agenticlens_frames import Experiment, Variant
    from agenticlens_frames.runner import run_experiment

    # Refused when the experiment is made (it was by to_manifest()).
    with pytest.raises(InputError, match="did you mean 'loud'"):
        Experiment(
            name="e",
            variants=[Variant(name="quiet"), Variant(name="loud")],
            dataset=["hi"],
            baseline="lowd",
        )
    import yaml

    from .runner.conftest import TARGETS

    manifest = {
        "name": "m", "version": "1", "baseline_variant_id": "alpha", "trial_count": 1,
        "variants": [
            {"id": v, "name": v, "target_kind": "python", "target": f"{TARGETS}:answer"}
            for v in ("alpha", "beta", "gamma")
        ],
    }  # fmt: skip
    case = {"id": "c", "name": "c", "input": "x", "expected_contains": ["x"]}
    suite = {"name": "s", "version": "1", "cases": [case]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    with pytest.raises(InputError, match="did you mean 'gamma'"):
        run_experiment(
            tmp_path / "m.yaml", tmp_path / "s.yaml", progress=False,
            variant_concurrency={"gama": 2},
        )  # fmt: skip
