"""agenticlens_frames.testing: the synthetic experiments every test and benchmark uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agenticlens_frames import load_experiment
from agenticlens_frames.testing import make_synthetic


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.*"))}


def test_same_arguments_give_the_same_bytes(tmp_path: Path) -> None:
    one = make_synthetic(tmp_path / "a", variants=3, trials=2, cases=15, seed=9)
    two = make_synthetic(tmp_path / "b", variants=3, trials=2, cases=15, seed=9)
    other = make_synthetic(tmp_path / "c", variants=3, trials=2, cases=15, seed=10)
    assert _files(one) == _files(two)
    assert _files(one)["trials/v01.json"] != _files(other)["trials/v01.json"]


def test_a_variant_file_does_not_depend_on_how_many_variants_follow(tmp_path: Path) -> None:
    three = make_synthetic(tmp_path / "a", variants=3, trials=2, cases=8, seed=2)
    five = make_synthetic(tmp_path / "b", variants=5, trials=2, cases=8, seed=2)
    assert _files(three)["trials/v02.json"] == _files(five)["trials/v02.json"]


@pytest.mark.parametrize("shape", ["mixed", "eval", "run"])
def test_layout_and_trace_shapes(tmp_path: Path, shape: str) -> None:
    folder = make_synthetic(tmp_path, variants=4, trials=3, cases=7, seed=1, shape=shape)
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text())
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    assert manifest["baseline_variant_id"] == "v00"
    assert (manifest["trial_count"], manifest["random_seed"], manifest["pass_k"]) == (
        3,
        1,
        [1, 3],
    )
    assert [v["target"] for v in manifest["variants"]] == [
        f"trials/v{i:02d}.json" for i in range(4)
    ]
    assert [c["id"] for c in suite["cases"]] == [f"case-{i:05d}" for i in range(7)]
    for index in range(4):
        data = json.loads((folder / "trials" / f"v{index:02d}.json").read_text())
        assert len(data["trials"]) == 3
        assert all(len(t["samples"]) == 7 for t in data["trials"])
        trace = data["trials"][0]["samples"][0]["trace"]
        expected = shape if shape != "mixed" else ("eval" if index % 2 == 0 else "run")
        assert ("total_latency_ms" in trace) == (expected == "eval")
        assert ("started_at" in trace) == (expected == "run")


def test_missing_samples_are_left_out_of_non_baseline_variants(tmp_path: Path) -> None:
    folder = make_synthetic(tmp_path, variants=3, trials=2, cases=10, seed=3, missing_samples=4)
    counts = {
        p.stem: sum(len(t["samples"]) for t in json.loads(p.read_text())["trials"])
        for p in (folder / "trials").iterdir()
    }
    assert counts["v00"] == 20
    assert counts["v01"] + counts["v02"] == 40 - 4
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    checks = run.checks
    missing = checks[checks["name"].astype(str) == "sample_available"]
    assert len(missing) == 4 and not missing["passed"].any()


def test_scoring_follows_the_recorded_outputs(tmp_path: Path) -> None:
    """Independent recount: a case passes exactly when the keyword is in the output, the
    required tool is in the trace and the latency is within 3000 ms."""
    folder = make_synthetic(tmp_path, variants=3, trials=2, cases=30, seed=5, shape="eval")
    suite = {c["id"]: c for c in yaml.safe_load((folder / "suite.yaml").read_text())["cases"]}
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    attempts = run.attempts.set_index(["variant_id", "trial", "case_id"])["passed"]
    expected = {}
    for path in sorted((folder / "trials").iterdir()):
        for trial, recorded in enumerate(json.loads(path.read_text())["trials"], start=1):
            for sample in recorded["samples"]:
                case = suite[sample["case_id"]]
                trace = sample["trace"]
                expected[(path.stem, trial, sample["case_id"])] = (
                    case["expected_contains"][0].casefold() in sample["output"].casefold()
                    and case["required_tools"][0] in {s["tool_name"] for s in trace["spans"]}
                    and trace["total_latency_ms"] <= case["max_latency_ms"]
                )
    got = {(str(v), int(t), str(c)): bool(p) for (v, t, c), p in attempts.items()}
    assert got == expected
    assert 0 < sum(expected.values()) < len(expected)  # variants neither all pass nor all fail


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"variants": 2}, "at least three variants"),
        ({"trials": 0}, "must be at least 1"),
        ({"shape": "span"}, "expected one of mixed, eval, run"),
        ({"trials": 3, "pass_k": "1,4"}, "between 1 and trials=3"),
        ({"missing_samples": 10**6}, "missing_samples"),
    ],
)
def test_bad_arguments_are_refused(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_synthetic(tmp_path, **options)
