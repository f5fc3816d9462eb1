"""Common slips with the public functions are InputErrors naming the argument and the fix.

Each of these used to fail inside the function with an AttributeError or TypeError about
an attribute the caller never named (``'ExperimentAnalysis' object has no attribute
'manifest'``, ``'int' object is not iterable``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agenticlens_frames as alf
from agenticlens_frames.errors import InputError

from .conftest import EXAMPLE


@pytest.fixture(scope="module")
def run() -> alf.ExperimentRun:
    attempts = pd.DataFrame(
        {
            "variant_id": ["a"] * 6 + ["b"] * 6,
            "trial": [1, 1, 1, 2, 2, 2] * 2,
            "case_id": ["x", "y", "z"] * 4,
            "passed": [True, False, True, True, True, False, True, True, True, False, True, True],
        }
    )
    return alf.ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": ["x", "y", "z"]}),
    )


@pytest.fixture(scope="module")
def analysis(run: alf.ExperimentRun) -> alf.ExperimentAnalysis:
    return alf.analyze(run, frontier_n_resamples=0)


# Every public function whose first argument is the run, called as a user would.
RUN_FUNCTIONS: dict[str, Callable[[Any, alf.ExperimentAnalysis], object]] = {
    "trial_summary": lambda x, a: alf.trial_summary(x),
    "case_matrix": lambda x, a: alf.case_matrix(x),
    "pass_at_k": lambda x, a: alf.pass_at_k(x),
    "variant_summary": lambda x, a: alf.variant_summary(x),
    "factor_levels": lambda x, a: alf.factor_levels(x, a.variants),
    "compare_to_baseline": lambda x, a: alf.compare_to_baseline(x, a.variants, a.cases),
    "report_warnings": lambda x, a: alf.report_warnings(x, a.variants, a.comparisons),
    "case_verdicts": lambda x, a: alf.case_verdicts(x),
    "paired_comparisons": lambda x, a: alf.paired_comparisons(x, correction="holm"),
    "case_labels": lambda x, a: alf.case_labels(x),
    "case_level_summary": lambda x, a: alf.case_level_summary(x),
    "noise_floor": lambda x, a: alf.noise_floor(x),
    "variance_decomposition": lambda x, a: alf.variance_decomposition(x),
    "power_analysis": lambda x, a: alf.power_analysis(x),
    "minimum_detectable_effect": lambda x, a: alf.minimum_detectable_effect(x),
    "trials_for_precision": lambda x, a: alf.trials_for_precision(x, half_width=0.1),
    "factor_effects": lambda x, a: alf.factor_effects(x),
    "frontier_uncertainty": lambda x, a: alf.frontier_uncertainty(x, n_resamples=10),
}


@pytest.mark.parametrize("name", sorted(RUN_FUNCTIONS))
def test_an_analysis_passed_for_the_run_is_refused_with_the_fix(name, analysis):
    with pytest.raises(InputError, match=rf"{name}\(\) takes an experiment run") as error:
        RUN_FUNCTIONS[name](analysis, analysis)
    assert error.value.location == "run"
    assert f"{name}(analysis.run)" in str(error.value)


@pytest.mark.parametrize("name", sorted(RUN_FUNCTIONS))
def test_a_path_passed_for_the_run_is_refused_with_the_loader(name, analysis):
    with pytest.raises(InputError, match=r"got str 'manifest\.yaml'.*load_experiment"):
        RUN_FUNCTIONS[name]("manifest.yaml", analysis)


@pytest.mark.parametrize("name", sorted(RUN_FUNCTIONS))
def test_the_run_check_lets_a_run_through(name, run, analysis):
    RUN_FUNCTIONS[name](run, analysis)


# The functions that take a result frame besides the run, with the frame swapped for what a
# user holds instead: (call, argument it names, fix in the message).
FRAME_SLIPS: dict[
    str, tuple[Callable[[alf.ExperimentRun, alf.ExperimentAnalysis], object], str, str]
] = {
    "pareto_frontier(analysis)": (
        lambda r, a: alf.pareto_frontier(a),  # type: ignore[arg-type]
        "summary",
        "read analysis.pareto_frontier",
    ),
    "pareto_frontier(run.variants)": (
        lambda r, a: alf.pareto_frontier(r.variants),
        "summary",
        "lacks its column(s) trial_success_rate",
    ),
    "factor_levels(run, analysis)": (
        lambda r, a: alf.factor_levels(r, a),  # type: ignore[arg-type]
        "summary",
        "pass analysis.variants, or read analysis.factor_levels",
    ),
    "compare_to_baseline(cases=attempts)": (
        lambda r, a: alf.compare_to_baseline(r, a.variants, r.attempts),
        "cases",
        "lacks its column(s) pass_rate",
    ),
    "report_warnings(comparisons=analysis)": (
        lambda r, a: alf.report_warnings(r, a.variants, a),  # type: ignore[arg-type]
        "comparisons",
        "read analysis.warnings",
    ),
}


@pytest.mark.parametrize("slip", sorted(FRAME_SLIPS))
def test_a_wrong_result_frame_names_the_argument_and_the_frame_to_pass(slip, run, analysis):
    # These failed with "'ExperimentAnalysis' object is not subscriptable" or a pandas
    # KeyError: 'pass_rate_count', naming neither the argument nor the frame it takes.
    call, argument, fix = FRAME_SLIPS[slip]
    with pytest.raises(InputError) as error:
        call(run, analysis)
    assert error.value.location == argument
    assert fix in str(error.value)


REPORT_FUNCTIONS: dict[str, Callable[[Any, Path], object]] = {
    "build_report": lambda x, p: alf.build_report(x),
    "write_json_report": lambda x, p: alf.write_json_report(x, p / "r.json"),
    "write_html_report": lambda x, p: alf.write_html_report(x, p / "r.html"),
    "render_variants_csv": lambda x, p: alf.render_variants_csv(x),
    "render_cases_csv": lambda x, p: alf.render_cases_csv(x),
}


@pytest.mark.parametrize("name", sorted(REPORT_FUNCTIONS))
def test_a_run_passed_to_a_report_writer_is_refused_naming_analyze(name, run, tmp_path):
    with pytest.raises(InputError, match=rf"{name}\(\) takes an ExperimentAnalysis") as error:
        REPORT_FUNCTIONS[name](run, tmp_path)
    assert error.value.location == "analysis"
    assert "alf.analyze(run)" in str(error.value)
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.parametrize("name", sorted(REPORT_FUNCTIONS))
def test_a_report_writer_takes_the_analysis(name, analysis, tmp_path):
    REPORT_FUNCTIONS[name](analysis, tmp_path)


def test_a_path_passed_to_a_report_writer_points_to_load_report(tmp_path):
    with pytest.raises(InputError, match=r"got str 'report\.json'.*load_report"):
        alf.write_html_report("report.json", tmp_path / "r.html")


def test_noninferiority_gate_given_a_run_names_the_frame_it_takes(run):
    with pytest.raises(InputError, match="takes the paired-comparisons frame, got ExperimentRun"):
        alf.noninferiority_gate(run, margin=0.05)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call",
    [
        lambda r: alf.analyze(r, pass_k=3, frontier_n_resamples=0),
        lambda r: alf.variant_summary(r, pass_k=3),
        lambda r: alf.case_matrix(r, 3),
    ],
)
def test_one_bare_k_is_refused_with_the_list_to_pass(call, run):
    with pytest.raises(
        InputError, match=r"pass_k must be a list of k values, got 3 \(pass \[3\]\)"
    ):
        call(run)


@pytest.mark.parametrize("bad", [1.5, "x", None, float("inf")])
def test_a_k_that_is_no_whole_number_is_refused_not_truncated(bad, run):
    # pass_k=[1.5] was analysed as pass@1 without a word; "x" was a bare ValueError, inf an
    # OverflowError.
    with pytest.raises(InputError, match=r"^pass_k: pass_k values must be whole numbers, got "):
        alf.analyze(run, pass_k=[1, bad], frontier_n_resamples=0)
    assert alf.case_matrix(run, [1.0, 2])["pass_at_1"].notna().all()  # 1.0 is the k 1


def test_experiment_tags_and_metadata_of_the_wrong_shape_are_refused_when_made():
    variants = [alf.Variant("a"), alf.Variant("b")]
    # tags="nightly" was stored letter by letter (the manifest's tags "n,i,g,h,t,l,y").
    with pytest.raises(InputError, match=r"tags: tags must be a list, got str"):
        alf.Experiment("e", variants=variants, dataset=["hi"], tags="nightly")
    # metadata=[...] failed in run() with "'list' object has no attribute 'items'".
    with pytest.raises(InputError, match=r"metadata: metadata must be a mapping, got list"):
        alf.Experiment("e", variants=variants, dataset=["hi"], metadata=["owner"])
    made = alf.Experiment("e", variants=variants, dataset=["hi"], tags=("nightly",))
    assert made.tags == ["nightly"]


def test_a_misspelt_factor_effects_correction_gets_the_close_match(run):
    # as analyze() and paired_comparisons() already suggested it
    with pytest.raises(InputError, match="did you mean 'bonferroni'"):
        alf.factor_effects(run, correction="bonferoni")


def test_the_experiment_repr_is_one_line_whatever_the_dataset():
    # The dataclass repr printed every variant's fields and every input.
    experiment = alf.Experiment(
        "big", variants=[alf.Variant("a", model="m"), alf.Variant("b")], dataset=["x" * 50] * 500
    )
    assert repr(experiment) == (
        "Experiment('big@1', variants=['a', 'b'], baseline='a', inputs=500, correction=None)"
    )


def test_tracker_and_comparator_reprs_show_their_settings_not_an_address(tmp_path):
    assert repr(alf.Tracker()) == "Tracker('in memory', runs=0)"
    assert repr(alf.Tracker(tmp_path)) == f"Tracker({str(tmp_path)!r})"
    comparator = alf.Comparator(comparisons={"correction": "holm"})
    assert repr(comparator) == "Comparator(confidence_level=0.95, correction='holm')"


@pytest.mark.parametrize("method", ["register", "register_judge"])
def test_a_blank_evaluator_version_is_an_input_error_naming_version(method):
    from agenticlens_frames.evaluators import EvaluatorRegistry

    register = getattr(EvaluatorRegistry(), method)
    with pytest.raises(InputError) as error:  # still a ValueError for old callers
        register("judge", lambda output, case, trace, config: 1.0, version=" ")
    assert isinstance(error.value, ValueError)
    assert error.value.location == "version"


@pytest.mark.parametrize("wrong", ["manifest.yaml", Path("manifest.yaml"), {"name": "x"}])
def test_api_run_given_no_experiment_names_the_argument_and_run_experiment(wrong):
    # A manifest path passed to alf.api.run (whose sibling run_experiment takes one) failed
    # with "'str' object has no attribute 'to_manifest'".
    with pytest.raises(
        InputError, match=r"^experiment: run\(\) takes an Experiment, got "
    ) as error:
        alf.api.run(wrong, lambda variant: lambda text: text, progress=False)
    assert "run_experiment(" in str(error.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda run: alf.run_experiment(run, "suite.yaml"),
        lambda run: alf.load_experiment(None, "suite.yaml"),
        lambda run: alf.load_manifest(run),
        lambda run: alf.load_suite(3),
        lambda run: alf.load_report(run),
        lambda run: alf.load_recorded(run, None),
        lambda run: alf.read_parquet(run),
        lambda run: alf.Archive(None),
        lambda run: alf.Tracker(3),
        lambda run: alf.write_json_report(alf.analyze(run, frontier_n_resamples=0), None),
        lambda run: alf.write_html_report(alf.analyze(run, frontier_n_resamples=0), 3),
    ],
    ids=[
        "run_experiment",
        "load_experiment",
        "load_manifest",
        "load_suite",
        "load_report",
        "load_recorded",
        "read_parquet",
        "Archive",
        "Tracker",
        "write_json_report",
        "write_html_report",
    ],
)
def test_a_loader_given_no_path_names_what_it_got(call, run):
    # These failed with pathlib's "expected str, bytes or os.PathLike object, not ..."
    # (a run passed to run_experiment or load_report, say).
    with pytest.raises(
        InputError, match=r"expected the path of .*, got (ExperimentRun|NoneType|int)"
    ):
        call(run)


@pytest.mark.parametrize("name", [123, "", None])
def test_a_variant_name_that_is_no_text_is_refused_when_made(name):
    # Variant(123) was accepted, mixed an int into the variant_id column, and a Tracker
    # folder then failed writing parquet with pyarrow's ArrowInvalid.
    with pytest.raises(InputError, match=r"^name: a variant's name must be a non-empty str, got "):
        alf.Variant(name)


@pytest.mark.parametrize("name", [123, ""])
def test_an_experiment_name_that_is_no_text_is_refused_when_made(name):
    with pytest.raises(InputError, match=r"^name: an experiment's name must be a non-empty str"):
        alf.Experiment(name, variants=[alf.Variant("a"), alf.Variant("b")], dataset=["hi"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda r: alf.viz.case_heatmap(r, case_ordr="flaky"),
            "case_heatmap() has no keyword 'case_ordr' (did you mean 'case_order'?",
        ),
        (
            lambda r: alf.viz.case_heatmap(alf.case_matrix(r), case_ordr="flaky"),
            "case_heatmap() has no keyword 'case_ordr' (did you mean 'case_order'?",
        ),
        (
            lambda r: alf.viz.pass_k_curves(r, band="wilson"),
            "pass_k_curves() has no keyword 'band' (did you mean 'bands'?",
        ),
        (
            lambda r: alf.viz.paired_forest(r, corection="holm"),
            "paired_forest() has no keyword 'corection' (did you mean 'correction'?",
        ),
        (
            lambda r: alf.explore(r, max_case=10),
            "explore() has no keyword 'max_case' (did you mean 'max_cases'?",
        ),
    ],
)
def test_a_misspelt_figure_keyword_gets_the_figures_own_close_match(call, message, run):
    # The figures' and the explorer's own keywords were not among the suggestions: a
    # misspelt case_order was "unknown statistics option 'case_ordr' (did you mean
    # 'cluster'?)", and with a result frame "statistics option(s) case_ordr apply to a run".
    with pytest.raises(InputError) as error:
        call(run)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda r: alf.analyze(r, corection="holm"),
            "analyze() got an unexpected keyword argument 'corection'; did you mean 'correction'?",
        ),
        (
            lambda r: alf.paired_comparisons(r, corection="holm"),
            "did you mean 'correction'?",
        ),
        (
            lambda r: alf.analyze(r, alpha=0.05),
            "paired-comparison settings other than correction go in one mapping: "
            "comparisons={'alpha': ...}",
        ),
        (
            lambda r: alf.paired_comparisons(r, correction="holm", baseline="a"),
            "it takes run, correction, alpha",
        ),
    ],
)
def test_a_misspelt_or_misplaced_keyword_says_what_to_write(call, message, run):
    # Python 3.11 said only "unexpected keyword argument 'corection'"; analyze(run, alpha=)
    # did not say where alpha goes (figures and paired_comparisons take it by name).
    with pytest.raises(TypeError) as error:
        call(run)
    assert message in str(error.value)


def test_a_runs_attribute_asked_of_a_live_result_points_to_its_run():
    # run_experiment(...).to_parquet("out") and .attempts were Python's bare "object has no
    # attribute", though the tables are one attribute away.
    result = alf.run_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml", progress=False)
    for name in ("to_parquet", "attempts", "checks"):
        with pytest.raises(AttributeError, match=rf"its run's: result\.run\.{name}$"):
            getattr(result, name)
    with pytest.raises(AttributeError, match=r"no attribute 'complet'$"):
        result.complet  # noqa: B018 - not a run's attribute: Python's message alone
    assert not hasattr(result, "attempts")  # hasattr still sees the attribute as missing


def test_a_runs_method_asked_of_an_api_result_points_to_its_run():
    experiment = alf.Experiment(
        "echo", variants=[alf.Variant("echo"), alf.Variant("short")], dataset=["hi", "bye"]
    )
    result = alf.api.run(experiment, lambda v: lambda text: text, progress=False)
    with pytest.raises(AttributeError, match=r"result\.run\.to_parquet$"):
        result.to_parquet  # noqa: B018


@pytest.mark.parametrize(
    "call",
    [
        lambda r: alf.paired_comparisons(r, correction="holm", alpha=0.95),
        lambda r: alf.analyze(r, comparisons={"correction": "holm", "alpha": 0.95}),
        lambda r: alf.viz.paired_forest(r, correction="holm", alpha=0.95),
        lambda r: alf.power_analysis(r, alpha=0.95),
        lambda r: alf.minimum_detectable_effect(r, alpha=0.95),
        lambda r: alf.noninferiority_gate(
            alf.paired_comparisons(r, correction="holm"), margin=0.05, alpha=0.95
        ),
    ],
)
def test_a_confidence_level_given_for_alpha_is_refused(call, run):
    # alpha=0.95 was taken: every paired difference with p < 0.95 was called "better" or
    # "worse" (an interval across zero among them), and the power plans shrank to nothing.
    with pytest.raises(InputError, match=r"> 0 and <= 0\.5, a significance level") as error:
        call(run)
    assert "alpha" in str(error.value)


def test_the_largest_allowed_alpha_is_a_half(run):
    table = alf.paired_comparisons(run, correction="holm", alpha=0.5)
    assert set(table["alpha"]) == {0.5}


@pytest.mark.parametrize("parameters", [["retrieval"], "dense"])
def test_variant_parameters_that_are_no_mapping_are_refused_when_made(parameters):
    # A list failed inside ``factors`` with "'list' object has no attribute 'items'".
    with pytest.raises(InputError, match=r"^parameters: variant 'a': parameters must be a mapping"):
        alf.Variant("a", parameters=parameters)


def test_a_dataframe_dataset_is_refused_with_to_dict_records():
    # Iterating a frame yields its column names: two rows became one input, "input".
    frame = pd.DataFrame({"input": ["refund please", "where is my parcel"]})
    variants = [alf.Variant("a"), alf.Variant("b")]
    with pytest.raises(InputError, match=r"dataset=df\.to_dict\('records'\)") as info:
        alf.Experiment("e", variants=variants, dataset=frame)
    assert "DataFrame (2 rows" in str(info.value)
    experiment = alf.Experiment("e", variants=variants)
    with pytest.raises(InputError, match=r"add_inputs\(df\.to_dict\('records'\)\)"):
        experiment.add_inputs(frame)
    assert experiment.dataset == []
    # The fix the message gives works: one input per row.
    experiment.add_inputs(frame.to_dict("records"))
    assert [case["input"] for case in experiment.dataset] == list(frame["input"])


@pytest.mark.parametrize("folder", [False, True])
def test_tracker_record_refuses_what_is_not_a_run_result(folder, tmp_path):
    # A tracker with a folder ignored record(result.run) without a word; an in-memory one
    # failed with "'ExperimentRun' object has no attribute 'run_id'".
    experiment = alf.Experiment(
        "echo", variants=[alf.Variant("a"), alf.Variant("b")], dataset=["hi"]
    )
    result = alf.api.run(experiment, lambda variant: str.upper, progress=False)
    tracker = alf.Tracker(tmp_path if folder else None)
    for wrong in (result.run, "result"):
        with pytest.raises(InputError, match=r"^result: Tracker\.record\(\) takes what run"):
            tracker.record(wrong)
    tracker.record(result)


def test_comparator_given_a_loaded_report_says_it_holds_no_attempts(analysis, tmp_path):
    # The hint was "pass ... its analysis": what the user had just passed.
    path = alf.write_json_report(analysis, tmp_path / "report.json")
    saved = alf.load_report(path)
    with pytest.raises(InputError, match=r"^results: cannot compare ExperimentAnalysis") as info:
        alf.Comparator().compare(saved)
    assert "loaded from a saved report and holds no attempts" in str(info.value)
    assert "pass the run that made it" in str(info.value)


def test_a_repeated_variant_name_is_refused_by_the_constructor():
    # Experiment(variants=[a, a]) was accepted and refused first by run() (add_variant
    # already refused it).
    with pytest.raises(InputError, match=r"variant names must be unique: a is already") as info:
        alf.Experiment("e", variants=[alf.Variant("a"), alf.Variant("b"), alf.Variant("a")])
    assert info.value.location == "variants[2]"
    assert "(variants[0])" in str(info.value)


def test_an_unknown_baseline_is_refused_when_the_variants_are_known():
    variants = [alf.Variant("small"), alf.Variant("large")]
    # Refused by to_manifest() only, that is by run() once the agents were built.
    with pytest.raises(InputError, match=r"unknown baseline variant 'lage'") as info:
        alf.Experiment("e", variants=variants, baseline="lage", dataset=["hi"])
    assert info.value.location == "baseline"
    assert info.value.file == "experiment 'e'"
    assert "did you mean 'large'? known: small, large" in str(info.value)
    with pytest.raises(InputError, match=r"^baseline: the baseline must be a non-empty str"):
        alf.Experiment("e", variants=variants, baseline=1)


def test_a_baseline_or_variants_set_later_are_checked_as_in_the_constructor():
    experiment = alf.Experiment("e", variants=[alf.Variant("small"), alf.Variant("large")])
    with pytest.raises(InputError, match=r"unknown baseline variant 'lage'"):
        experiment.baseline = "lage"
    assert experiment.baseline is None  # left as it was
    experiment.baseline = "large"
    with pytest.raises(InputError, match=r"unknown baseline variant 'large'"):
        experiment.variants = [alf.Variant("small"), alf.Variant("medium")]
    with pytest.raises(InputError, match=r"variant names must be unique"):
        experiment.variants = [alf.Variant("large"), alf.Variant("large")]
    assert [v.name for v in experiment.variants] == ["small", "large"]
    experiment.variants = (alf.Variant("medium"), alf.Variant("large"))
    assert experiment.to_manifest().baseline_variant_id == "large"


def test_an_experiment_built_one_variant_at_a_time_names_its_baseline_first():
    # The baseline may name a variant not added yet: checked when the experiment is run.
    experiment = alf.Experiment("e", baseline="large", dataset=["hi"])
    experiment.add_variant(alf.Variant("small")).add_variant(alf.Variant("large"))
    assert experiment.to_manifest().baseline_variant_id == "large"
    late = alf.Experiment("e", baseline="lage", dataset=["hi"])
    late.add_variant(alf.Variant("small")).add_variant(alf.Variant("large"))
    with pytest.raises(InputError, match=r"unknown baseline variant 'lage'.*'large'"):
        late.to_manifest()


def test_one_variant_or_no_input_is_refused_at_the_run_naming_the_fix():
    one = alf.Experiment("e", variants=[alf.Variant("a")], dataset=["hi"])
    with pytest.raises(InputError) as info:
        one.to_manifest()
    assert str(info.value) == (
        "experiment 'e': variants: has 1 variant(s) ['a']; a comparison needs at least two "
        "(a baseline and a candidate) (add one with experiment.add_variant(Variant(name=...)), "
        "or pass Experiment(..., variants=[Variant(...), Variant(...)]))"
    )
    empty = alf.Experiment("e", variants=[alf.Variant("a"), alf.Variant("b")])
    with pytest.raises(InputError, match=r"^experiment 'e': dataset: the dataset is empty") as info:
        alf.api.run(empty, lambda variant: str.upper, progress=False)
    assert "experiment.add_inputs(" in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("temperature", "hot", "expected a number, got 'hot'"),
        ("temperature", True, "expected a number, got true"),
        ("temperature", float("nan"), "expected a number, got nan"),
        ("model", 4, "expected a string, got 4"),
        ("prompt_template", ["x"], "expected a string, got a list"),
        ("description", None, "expected a string, got null"),
    ],
)
def test_a_typed_variant_field_of_the_wrong_kind_is_refused_when_made(field, value, message):
    # Variant(temperature="hot") was accepted: "hot" became a factor level beside 0.2.
    with pytest.raises(InputError) as info:
        alf.Variant("a", **{field: value})
    assert info.value.location == field
    assert str(info.value).startswith(f"{field}: variant 'a': {message} (")
    hint = "use a finite number" if value != value else f"e.g. Variant('a', {field}="
    assert hint in info.value.hint


def test_a_typed_variant_field_takes_what_the_manifest_loader_takes():
    # The loader's rule, not a stricter one: a number as text is a number there too.
    assert alf.Variant("a", temperature=1).factors == {"temperature": "1"}
    assert alf.Variant("a", temperature="0.2").factors == {"temperature": "0.2"}
    assert alf.Variant("a", model="m", prompt_template="{input}").factors == {
        "model": "m",
        "prompt_template": "{input}",
    }


def test_a_tracker_given_a_file_says_it_needs_a_folder(tmp_path):
    # Tracker("/etc/passwd") was accepted; run() then failed writing its journal there.
    file = tmp_path / "results.json"
    file.write_text("{}")
    for path in (file, file / "inside"):
        with pytest.raises(InputError, match=r"not a folder: a Tracker needs a folder") as info:
            alf.Tracker(path)
        assert str(info.value).startswith(f"{path}: storage_path: ")
        assert info.value.message.startswith(
            "a file" if path == file else f"inside the file {file}"
        )
        assert "give a folder (created if missing)" in str(info.value)
    assert alf.Tracker(tmp_path / "new" / "folder").storage_path == tmp_path / "new" / "folder"


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda t, e: t.get_by_experiment(3), "name"),
        (lambda t, e: t.get_by_experiment(e), "name"),
        (lambda t, e: t.has_run(1), "run_id"),
        (lambda t, e: t.run_dir(e, "r1"), "experiment_name"),
        (lambda t, e: t.run_dir("e", None), "run_id"),
    ],
    ids=["get_by_experiment-int", "get_by_experiment-Experiment", "has_run", "run_dir", "run_id"],
)
def test_a_tracker_method_given_no_text_names_the_argument(call, argument, tmp_path):
    # get_by_experiment(3) and has_run(1) answered [] and False; run_dir failed in re.sub.
    experiment = alf.Experiment("e", variants=[alf.Variant("a"), alf.Variant("b")])
    for tracker in (alf.Tracker(), alf.Tracker(tmp_path)):
        with pytest.raises(InputError, match=rf"^{argument}: {argument} must be a non-empty str"):
            call(tracker, experiment)
    assert alf.Tracker().get_by_experiment("e") == []


def test_the_comparator_refuses_fewer_than_two_variant_results():
    # compare([]) (get_by_experiment of a misspelt name) gave an empty frame, and the
    # summary a title alone; one result was "compared" with nothing.
    experiment = alf.Experiment("e", variants=[alf.Variant("a"), alf.Variant("b")], dataset=["hi"])
    tracker = alf.Tracker()
    alf.api.run(experiment, lambda variant: str.upper, tracker=tracker, progress=False)
    for results, got in (([], "none"), (tracker.results[:1], "one ('a')")):
        for method in (alf.Comparator().compare, alf.Comparator().summary):
            with pytest.raises(InputError) as info:
                method(results)
            assert str(info.value).startswith(
                "results: a comparison needs the results of at least two variants (a baseline "
                f"and a candidate), got {got} ("
            )
            assert "tracker.get_by_experiment(name) gives []" in str(info.value)
    assert list(alf.Comparator().compare(tracker.results)["variant"]) == ["a", "b"]
