"""Differential tests: our reports against the real agenticlens 0.10.0 on the same inputs.

Every JSON number must equal the package's within 1e-12 relative (keys and order the
same), and both CSVs must be byte-identical. The one deliberate difference that changes
numbers here is fix B3 (missing samples have unknown latency, not 0 ms): the tests run
with ``latency_missing="zero"`` for exact equality, and a separate test states which
fields B3 changes and that nothing else moves.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.report.csv_report import render_cases_csv, render_variants_csv
from agenticlens_frames.report.json_report import build_report

from .conftest import EXAMPLE, Reference
from .jsondiff import json_differences

pytestmark = pytest.mark.differential

SYNTHETIC = [
    dict(variants=3, trials=1, cases=6, seed=11),
    dict(variants=4, trials=5, cases=40, seed=2),
    dict(variants=5, trials=3, cases=15, seed=3, shape="run", pass_k="1,2,3"),
    dict(variants=3, trials=4, cases=25, seed=4, shape="eval", pass_k="2,4"),
    dict(variants=4, trials=2, cases=200, seed=5),
    dict(variants=4, trials=3, cases=30, seed=6, missing_samples=9),
]


def _ours(folder: Path, **options: object) -> tuple[dict, bytes, bytes]:
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    analysis = analyze(run, **options)  # type: ignore[arg-type]
    report = json.loads(json.dumps(build_report(analysis)))
    return (
        report,
        render_variants_csv(analysis).encode(),
        render_cases_csv(analysis).encode(),
    )


def _assert_same(folder: Path, ref: Reference, **options: object) -> None:
    assert ref.returncode == 0, ref.stdout + ref.stderr
    report, variants_csv, cases_csv = _ours(folder, latency_missing="zero", **options)
    assert json_differences(report, ref.report) == []
    assert variants_csv == ref.variants_csv
    assert cases_csv == ref.cases_csv


@pytest.mark.parametrize("params", SYNTHETIC, ids=lambda p: "-".join(map(str, p.values())))
def test_synthetic_experiments_match(
    params: dict, make_synthetic: Callable[..., Path], reference: Callable[..., Reference]
) -> None:
    folder = make_synthetic(**params)
    _assert_same(folder, reference(folder))


def test_bundled_example_matches(reference: Callable[..., Reference]) -> None:
    _assert_same(EXAMPLE, reference(EXAMPLE))


def test_confidence_level_and_threshold_options_match(
    make_synthetic: Callable[..., Path], reference: Callable[..., Reference]
) -> None:
    folder = make_synthetic(variants=4, trials=5, cases=30, seed=8)
    ref = reference(
        folder,
        "manifest.yaml",
        "suite.yaml",
        "--confidence-level",
        "0.9",
        "--regression-threshold",
        "0.2",
    )
    _assert_same(folder, ref, confidence_level=0.9, regression_threshold=0.2)


def test_fix_b3_changes_only_latency_fields(reference: Callable[..., Reference]) -> None:
    """Deliberate fix B3: the example's missing sample (prompt-v2, trial 3) has unknown
    latency. With the default policy only latency-derived numbers differ from the
    package, and the difference is exactly the 0 ms the package counted."""
    ref = reference(EXAMPLE)
    report, _, _ = _ours(EXAMPLE)
    diffs = json_differences(report, ref.report)
    assert diffs, "the example has a missing sample, so B3 must change something"
    latency_paths = ("average_latency_ms", "mean_latency_ms")
    assert all(any(key in d for key in latency_paths) for d in diffs), diffs
    ours = {v["variant_id"]: v for v in report["variants"]}["prompt-v2"]
    theirs = {v["variant_id"]: v for v in ref.report["variants"]}["prompt-v2"]
    trial3 = next(t for t in ours["trials"] if t["trial_index"] == 3)["report"]
    ref_trial3 = next(t for t in theirs["trials"] if t["trial_index"] == 3)["report"]
    n = ref_trial3["summary"]["total_cases"]
    # package: sum/n with a 0 for the missing case; ours: the same sum over n − 1 cases
    assert trial3["summary"]["average_latency_ms"] == pytest.approx(
        ref_trial3["summary"]["average_latency_ms"] * n / (n - 1), rel=1e-12
    )


# --------------------------------------------------------------------------- crafted


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "exp"
    shutil.copytree(folder, target)
    return target


def _edit_trials(folder: Path, variant_file: str, edit: Callable[[dict], None]) -> None:
    path = folder / "trials" / variant_file
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


CRAFTS: dict[str, Callable[[Path], None]] = {}


def craft(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    CRAFTS[fn.__name__] = fn
    return fn


@craft
def missing_trials(folder: Path) -> None:
    _edit_trials(folder, "v01.json", lambda d: d.update(trials=d["trials"][:2]))


@craft
def baseline_with_one_trial_only(folder: Path) -> None:
    _edit_trials(folder, "v00.json", lambda d: d.update(trials=d["trials"][:1]))


@craft
def missing_samples(folder: Path) -> None:
    def edit(d: dict) -> None:
        d["trials"][0]["samples"] = d["trials"][0]["samples"][3:]
        d["trials"][2]["samples"].pop(5)

    _edit_trials(folder, "v02.json", edit)


@craft
def zero_latency_and_cost_baseline(folder: Path) -> None:
    def edit(d: dict) -> None:
        for trial in d["trials"]:
            for s in trial["samples"]:
                s["trace"]["total_latency_ms"] = 0.0
                s["trace"]["estimated_cost_usd"] = 0.0

    _edit_trials(folder, "v00.json", edit)


@craft
def traces_without_latency(folder: Path) -> None:
    # Read as 0 ms by the package; unknown for us, 0 ms again under latency_missing="zero".
    # v00 (eval-shaped): no total_latency_ms, some samples no trace at all; v01 (Run): no
    # completed_at on some, reversed timestamps on one.
    def eval_shaped(d: dict) -> None:
        for trial in d["trials"]:
            for i, s in enumerate(trial["samples"]):
                if i % 3 == 0:
                    del s["trace"]
                else:
                    del s["trace"]["total_latency_ms"]

    def run_shaped(d: dict) -> None:
        samples = d["trials"][1]["samples"]
        for s in samples[:5]:
            del s["trace"]["completed_at"]
        trace = samples[5]["trace"]
        trace["started_at"], trace["completed_at"] = trace["completed_at"], trace["started_at"]

    _edit_trials(folder, "v00.json", eval_shaped)
    _edit_trials(folder, "v01.json", run_shaped)


@craft
def unpriced_spans(folder: Path) -> None:
    def edit(d: dict) -> None:
        for trial in d["trials"][:2]:
            for s in trial["samples"][:4]:
                s["trace"]["spans"][-1].pop("estimated_cost_usd", None)

    _edit_trials(folder, "v01.json", edit)


@craft
def frontier_tie(folder: Path) -> None:
    # Two variants with identical trials tie on every objective: both stay on the front.
    shutil.copy(folder / "trials" / "v02.json", folder / "trials" / "v03.json")


@pytest.mark.parametrize("name", sorted(CRAFTS))
def test_crafted_edge_cases_match(
    name: str,
    tmp_path: Path,
    make_synthetic: Callable[..., Path],
    reference: Callable[..., Reference],
) -> None:
    # Run-shaped variants (odd ids) have span costs; eval-shaped ones trace-level costs.
    folder = _copy(make_synthetic(variants=4, trials=5, cases=12, seed=21), tmp_path)
    CRAFTS[name](folder)
    _assert_same(folder, reference(folder))


def test_saved_report_loads_in_the_package_and_rerenders_identically(
    tmp_path: Path, reference: Callable[..., Reference]
) -> None:
    """Our JSON is loadable by `agenticlens experiment report`, and its CSVs from our
    report equal its CSVs from its own report."""
    import subprocess
    import sys

    from agenticlens_frames.report.json_report import write_json_report

    ref = reference(EXAMPLE)
    analysis = analyze(
        load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"), latency_missing="zero"
    )
    ours = write_json_report(analysis, tmp_path / "ours.json")
    exe = Path(sys.executable).parent / "agenticlens"
    done = subprocess.run(
        [
            str(exe),
            "experiment",
            "report",
            str(ours),
            "--csv",
            str(tmp_path / "v.csv"),
            "--cases-csv",
            str(tmp_path / "c.csv"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "v.csv").read_bytes() == ref.variants_csv
    assert (tmp_path / "c.csv").read_bytes() == ref.cases_csv


def test_we_implement_the_installed_reference_versions() -> None:
    """The built-in checks' version is read from the release we implement, and that release
    is the one installed for these tests."""
    import agentic_evals
    import agenticlens

    from agenticlens_frames._compat import IMPLEMENTS
    from agenticlens_frames.frames import BUILTIN_VERSION

    assert {
        "agenticlens": agenticlens.__version__,
        "agentic-evals": agentic_evals.__version__,
    } == IMPLEMENTS
    assert agentic_evals.__version__ == BUILTIN_VERSION


# --------------------------------------------------------------------------- hand-written


def _write_experiment(
    folder: Path, cases: list[dict], outputs: dict[str, list[dict[str, str]]]
) -> Path:
    """A small recorded experiment: ``outputs[variant]`` is one ``{case id: output}`` per
    trial (each sample's trace: one ``search`` call, 100 ms, $0.001); the first variant
    is the baseline."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trials").mkdir(exist_ok=True)
    trial_count = len(next(iter(outputs.values())))
    manifest = {
        "name": "hand",
        "version": "1",
        "baseline_variant_id": next(iter(outputs)),
        "trial_count": trial_count,
        "variants": [
            {"id": v, "name": v, "target_kind": "recorded", "target": f"trials/{v}.json"}
            for v in outputs
        ],
    }
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    suite = {"name": "hand", "version": "1", "cases": cases}
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    trace = {
        "spans": [{"tool_name": "search", "attributes": {"tool_args": {"q": "x"}}}],
        "total_latency_ms": 100.0,
        "estimated_cost_usd": 0.001,
    }
    for variant, trials in outputs.items():
        data = {
            "trials": [
                {"samples": [{"case_id": c, "output": o, "trace": trace} for c, o in t.items()]}
                for t in trials
            ]
        }
        (folder / "trials" / f"{variant}.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_fix_b14_a_path_segment_int_cannot_read_is_no_list_index(
    tmp_path: Path, reference: Callable[..., Reference]
) -> None:
    """Deliberate fix B14: `required_output_fields: [items.²]` on an output whose `items`
    is a list. The package takes "²" for an index (isdigit), int() raises, and every
    trial of that variant fails; here the field is missing, as for any other absent key.
    Our report of it equals the package's of the same files where that output's `items`
    is an object without the key — except the recorded output itself."""
    cases = [
        {"id": "c1", "name": "fields", "required_output_fields": ["items.²", "items.0"]},
        {"id": "c2", "name": "word", "expected_contains": ["ok"]},
    ]

    def outputs(listed: str) -> dict[str, list[dict[str, str]]]:
        return {
            "base": [{"c1": '{"items": {"²": 1, "0": 2}}', "c2": "ok"}] * 2,
            "cand": [{"c1": '{"items": {"0": 1}}', "c2": "OK"}, {"c1": "{}", "c2": "no"}],
            "listed": [{"c1": listed, "c2": "ok"}] * 2,
        }

    folder = _write_experiment(tmp_path / "list", cases, outputs('{"items": [5]}'))
    ref = reference(folder)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    listed = ref.report["variants"][2]
    assert [t["status"] for t in listed["trials"]] == ["failed", "failed"]
    assert {t["error_message"] for t in listed["trials"]} == {
        "invalid literal for int() with base 10: '²'"
    }

    same = _write_experiment(tmp_path / "object", cases, outputs('{"items": {"0": 5}}'))
    ref_same = reference(same)
    report, variants_csv, cases_csv = _ours(folder, latency_missing="zero")
    diffs = json_differences(report, ref_same.report)
    assert diffs == [
        f"$.variants[2].trials[{t}].report.cases[0].output: "
        '\'{"items": [5]}\' != \'{"items": {"0": 5}}\''
        for t in (0, 1)
    ]
    assert (variants_csv, cases_csv) == (ref_same.variants_csv, ref_same.cases_csv)
    scores = report["variants"][2]["trials"][0]["report"]["cases"][0]["scores"]
    assert [(s["name"], s["passed"]) for s in scores] == [
        ("required_field:items.²", False),
        ("required_field:items.0", True),
    ]


# --------------------------------------------------------------------------- fuzzed

#: Seeds of tests/fuzz_experiments.py replayed here; the audit behind
#: docs/compatibility.md ran thousands of them (with the fuzzer's refusals too).
FUZZ_SEEDS = (0, 3, 5, 7, 9, 11)  # between them, every built-in check and both shapes


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_fuzzed_experiments_match(
    seed: int, tmp_path: Path, reference: Callable[..., Reference]
) -> None:
    from .fuzz_experiments import fuzz_experiment

    folder = fuzz_experiment(tmp_path / "exp", seed)
    _assert_same(folder, reference(folder))


# ------------------------------------------------- what the package reads and we refuse


def _edit_yaml(path: Path, edit: Callable[[dict], None]) -> None:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


@pytest.mark.parametrize(
    ("file", "place", "edit"),
    [
        ("suite.yaml", "cases[0].max_turns", lambda d: d["cases"][0].update(max_turns=True)),
        (
            "suite.yaml",
            "cases[0].max_latency_ms",
            lambda d: d["cases"][0].update(max_latency_ms=True),
        ),
        ("manifest.yaml", "random_seed", lambda d: d.update(random_seed=True)),
        ("manifest.yaml", "pass_k[0]", lambda d: d.update(pass_k=[True])),
    ],
    ids=["max_turns", "max_latency_ms", "random_seed", "pass_k"],
)
def test_a_boolean_for_a_number_is_read_as_1_by_the_package_and_refused_here(
    file: str,
    place: str,
    edit: Callable[[dict], None],
    tmp_path: Path,
    make_synthetic: Callable[..., Path],
) -> None:
    """docs/compatibility.md, "Input the package reads and we refuse": pydantic's lax
    mode reads `true` as 1; here it is refused, naming the file and the key."""
    package = pytest.importorskip("agenticlens.experiments", reason="needs agenticlens 0.10")
    from agenticlens_frames.errors import InputError

    folder = _copy(make_synthetic(variants=3, trials=2, cases=3, seed=31), tmp_path)
    _edit_yaml(folder / file, edit)
    manifest = package.load_manifest(folder / "manifest.yaml")
    suite = package.load_experiment_suite(folder / "suite.yaml")
    assert (
        suite.cases[0].max_turns,
        suite.cases[0].max_latency_ms,
        manifest.random_seed,
        manifest.pass_k,
    ) == {
        "cases[0].max_turns": (1, 3000, 31, [1, 2]),
        "cases[0].max_latency_ms": (None, 1.0, 31, [1, 2]),
        "random_seed": (None, 3000, 1, [1, 2]),
        "pass_k[0]": (None, 3000, 31, [1]),
    }[place]
    with pytest.raises(InputError) as caught:
        load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    assert f"{file}: {place}: " in str(caught.value)
    assert "got true" in str(caught.value)


def _sample_edits() -> dict[str, Callable[[dict], None]]:
    def unknown_case(d: dict) -> None:
        d["trials"][0]["samples"][1]["case_id"] = "no-such-case"

    def mixed_offsets(d: dict) -> None:  # v01 is Run-shaped: a naive start, a UTC end
        trace = d["trials"][0]["samples"][1]["trace"]
        trace["started_at"] = trace["started_at"].rstrip("Z")

    return {"unknown_case": unknown_case, "mixed_offsets": mixed_offsets}


@pytest.mark.parametrize(
    ("name", "place", "failed"),
    [
        # checked as the trial is scored: that trial fails
        ("unknown_case", "case_id", [("failed", "Unknown sample case ID: 'no-such-case'")]),
        # raised as the file is read, again at each trial: every trial fails
        (
            "mixed_offsets",
            "trace.completed_at",
            [("failed", "can't subtract offset-naive and offset-aware datetimes")] * 2,
        ),
    ],
)
def test_a_bad_recorded_sample_fails_the_variant_in_the_package_and_is_refused_here(
    name: str,
    place: str,
    failed: list[tuple[str, str]],
    tmp_path: Path,
    make_synthetic: Callable[..., Path],
    reference: Callable[..., Reference],
) -> None:
    """The package fails the trial (a case it does not know), or every trial of the
    variant (a file it cannot read), with the exception's text, and exits 0 (B2); here
    the run is refused before anything is scored, naming the sample."""
    from agenticlens_frames.errors import InputError

    folder = _copy(make_synthetic(variants=3, trials=2, cases=3, seed=32), tmp_path)
    _edit_trials(folder, "v01.json", _sample_edits()[name])
    ref = reference(folder)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    trials = ref.report["variants"][1]["trials"]
    statuses = [(t["status"], t["error_message"]) for t in trials]
    assert statuses == failed + [("succeeded", None)] * (2 - len(failed))
    with pytest.raises(InputError) as caught:
        load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    assert f"v01.json: trials[0].samples[1].{place}: " in str(caught.value)


@pytest.mark.parametrize(
    ("value", "got"),
    [
        # the package: a traceback from statistics.stdev
        ("NaN", "got nan"),
        # the package: reads it; here beyond ±1e15, where sums stop being exact
        # (docs/reliability.md, limits)
        ("1e300", "between -1e+15 and 1e+15, got 1e+300"),
    ],
)
def test_a_nan_or_huge_latency_is_refused_here(
    value: str,
    got: str,
    tmp_path: Path,
    make_synthetic: Callable[..., Path],
    reference: Callable[..., Reference],
) -> None:
    from agenticlens_frames.errors import InputError

    folder = _copy(make_synthetic(variants=3, trials=2, cases=3, seed=33), tmp_path)
    text = (folder / "trials" / "v00.json").read_text()
    (folder / "trials" / "v00.json").write_text(
        text.replace('"total_latency_ms":', f'"total_latency_ms":{value},"_was":', 1)
    )
    ref = reference(folder)
    if value == "1e300":
        assert ref.returncode == 0, ref.stderr
        assert ref.report["variants"][0]["trials"][0]["report"]["cases"][0]["latency_ms"] == 1e300
    else:
        assert ref.returncode != 0
        assert "AttributeError: 'float' object has no attribute 'numerator'" in ref.stderr
    with pytest.raises(InputError) as caught:
        load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    assert "v00.json: trials[0].samples[0].trace.total_latency_ms: " in str(caught.value)
    assert got in str(caught.value)


def _package_latency_mean(variant: dict) -> float:
    """The package's mean latency of a variant, by hand from our report's case records
    (which hold its 0.0 for an unknown latency): the mean over completed trials of each
    trial's mean over its records."""
    import statistics

    return statistics.fmean(
        statistics.fmean(case["latency_ms"] for case in trial["report"]["cases"])
        for trial in variant["trials"]
        if trial["report"]
    )


@pytest.mark.parametrize("unknown", ["prompt-v2", "baseline"])
def test_the_package_loads_our_report_when_a_latency_delta_is_unknown(
    unknown: str, tmp_path: Path, reference: Callable[..., Reference]
) -> None:
    """docs/compatibility.md: with B3 (the default), a variant without any known latency
    leaves our latency delta unknown. The package's model requires an object there, so
    the block holds the package's own delta (an unknown latency counted as 0 ms), labelled
    as the package's; the package loads the report and renders our CSVs from it. Here the
    candidate (prompt-v2) or the baseline (every comparison) has no known latency."""
    import subprocess
    import sys

    package = pytest.importorskip("agenticlens.experiments", reason="needs agenticlens 0.10")

    from agenticlens_frames.report.json_report import write_json_report

    from .conftest import example_without_latency

    folder = example_without_latency(tmp_path, unknown)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    analysis = analyze(run)
    path = write_json_report(analysis, tmp_path / "ours.json")
    ours = json.loads(path.read_text())
    variants = {v["variant_id"]: v for v in ours["variants"]}
    theirs = {
        c["candidate_variant_id"]: c["average_latency_ms_delta"]
        for c in reference(folder).report["comparisons"]
    }
    labelled = 0
    for comparison in ours["comparisons"]:
        candidate = comparison["candidate_variant_id"]
        block = comparison["average_latency_ms_delta"]
        if unknown not in (candidate, comparison["baseline_variant_id"]):
            assert set(block) == {"absolute", "relative", "regressed"}  # ours, unlabelled
            continue
        labelled += 1
        assert block["basis"] == "agenticlens"
        assert "unknown latency counted as 0 ms" in block["note"]
        assert f"{unknown!r} has no known latency" in block["note"]
        # By hand, the package's rule: a variant without any known latency is 0 ms.
        base = _package_latency_mean(variants[comparison["baseline_variant_id"]])
        cand = _package_latency_mean(variants[candidate])
        assert 0.0 in (base, cand)
        assert block["absolute"] == pytest.approx(cand - base, rel=1e-12)
        # a change from 0 ms is infinite, which JSON (and the package) writes as null
        assert block["relative"] == (None if base == 0 else pytest.approx(-1.0, rel=1e-12))
        assert block["regressed"] is (base == 0)  # lower latency is better
        # ... and what the package itself writes for the same files, key for key.
        package_block = theirs[candidate]
        assert block["absolute"] == pytest.approx(package_block["absolute"], rel=1e-12)
        assert block["relative"] == package_block["relative"]
        assert block["regressed"] is package_block["regressed"]
    assert labelled == (len(ours["comparisons"]) if unknown == "baseline" else 1)

    assert package.load_experiment_report(path).baseline_variant_id == "baseline"
    exe = Path(sys.executable).parent / "agenticlens"
    csvs = ["--csv", str(tmp_path / "v.csv"), "--cases-csv", str(tmp_path / "c.csv")]
    done = subprocess.run(
        [str(exe), "experiment", "report", str(path), *csvs],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "v.csv").read_text() == render_variants_csv(analysis)
    assert (tmp_path / "c.csv").read_text() == render_cases_csv(analysis)


def test_under_latency_missing_zero_the_latency_delta_is_ours_and_unlabelled(
    tmp_path: Path,
) -> None:
    """Under `latency_missing="zero"` every latency delta is our own (the package's rule
    chosen), so no block is labelled, and the package loads the report."""
    package = pytest.importorskip("agenticlens.experiments", reason="needs agenticlens 0.10")

    from agenticlens_frames.report.json_report import write_json_report

    from .conftest import example_without_latency

    folder = example_without_latency(tmp_path)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    path = write_json_report(analyze(run, latency_missing="zero"), tmp_path / "ours.json")
    blocks = [c["average_latency_ms_delta"] for c in json.loads(path.read_text())["comparisons"]]
    assert all(set(b) == {"absolute", "relative", "regressed"} for b in blocks)
    assert package.load_experiment_report(path).baseline_variant_id == "baseline"
