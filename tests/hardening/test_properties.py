"""Property-based tests: loaders and trace conversion never crash, statistics keep bounds.

Loaders fed arbitrary values either load or raise ``InputError`` (no other exception);
the estimators keep rates in [0, 1], intervals around their estimate, pass^k ≤ pass@k; the
analysis does not depend on the order of the attempt rows or on what variants are called.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import load_manifest, load_recorded, load_suite, normalize_trace
from agenticlens_frames.frames import ExperimentRun
from agenticlens_frames.stats import metric_summary, pass_at_k, pass_hat_k, wilson_interval

from ._corpus import BASE
from .make_corpus import _set as _replace  # one copy of the "edit at a path" helper

FAST = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SLOW = settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
MANIFEST = yaml.safe_load((BASE / "manifest.yaml").read_text())
SUITE = yaml.safe_load((BASE / "suite.yaml").read_text())
RECORDED = json.loads((BASE / "trials" / "baseline.json").read_text())


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += _paths(value, (*prefix, index))
    return found


def _write(folder: Path, name: str, doc: Any) -> Path:
    path = folder / name
    path.write_text(json.dumps(doc, allow_nan=True))
    return path


@pytest.fixture
def folder(tmp_path) -> Path:
    shutil.copytree(BASE, tmp_path, dirs_exist_ok=True)
    return tmp_path


# --------------------------------------------------------------------------- loaders


@FAST
@given(data=st.data())
def test_manifest_loader_loads_or_names_the_problem(folder, data):
    path = data.draw(st.sampled_from(_paths(MANIFEST)))
    doc = _replace(MANIFEST, path, data.draw(JSON))
    file = _write(folder, "m.json", doc)
    try:
        load_manifest(file)
    except InputError as exc:
        assert "m.json" in str(exc)


@FAST
@given(data=st.data())
def test_suite_loader_loads_or_names_the_problem(folder, data):
    path = data.draw(st.sampled_from(_paths(SUITE)))
    file = _write(folder, "s.json", _replace(SUITE, path, data.draw(JSON)))
    try:
        load_suite(file)
    except InputError as exc:
        assert "s.json" in str(exc)


@FAST
@given(data=st.data())
def test_recorded_loader_loads_or_names_the_problem(folder, data):
    suite = load_suite(folder / "suite.yaml")
    path = data.draw(st.sampled_from(_paths(RECORDED)))
    file = _write(folder, "r.json", _replace(RECORDED, path, data.draw(JSON)))
    try:
        load_recorded(file, suite)
    except InputError as exc:
        assert "r.json" in str(exc)


@FAST
@given(text=st.text(max_size=200))
def test_any_text_as_yaml_manifest(folder, text):
    file = folder / "t.yaml"
    file.write_text(text, encoding="utf-8")
    try:
        load_manifest(file)
    except InputError as exc:
        assert "t.yaml" in str(exc)


@FAST
@given(
    raw=st.dictionaries(
        st.sampled_from(
            [
                "trace_id",
                "spans",
                "total_latency_ms",
                "estimated_cost_usd",
                "cost_source",
                "metadata",
                "started_at",
                "completed_at",
                "run_id",
            ]
        ),
        JSON
        | st.lists(
            st.dictionaries(
                st.sampled_from(
                    ["tool_name", "attributes", "span_id", "estimated_cost_usd", "span_type"]
                ),
                JSON,
            )
        ),
    )
)
def test_trace_conversion_converts_or_refuses(raw):
    try:
        trace = normalize_trace(raw)
    except InputError:
        return
    assert isinstance(trace.total_latency_ms, float) and not math.isnan(trace.total_latency_ms)
    assert trace.estimated_cost_usd is None or not math.isnan(trace.estimated_cost_usd)


@FAST
@given(
    start=st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)),
    seconds=st.floats(-1e6, 1e6, allow_nan=False),
)
def test_run_latency_is_never_negative(start, seconds):
    end = start + __import__("datetime").timedelta(seconds=seconds) if abs(seconds) < 1e5 else start
    trace = normalize_trace(
        {"run_id": "r", "started_at": start.isoformat(), "completed_at": end.isoformat()}
    )
    assert trace.total_latency_ms >= 0.0  # reversed timestamps are clipped, as the package does


# ------------------------------------------------------------------------ statistics


COUNTS = st.integers(0, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@FAST
@given(counts=st.lists(COUNTS, min_size=1, max_size=20), level=st.floats(0.5, 0.999))
def test_wilson_interval_bounds_and_contains_the_rate(counts, level):
    c = np.array([s for _, s in counts])
    n = np.array([t for t, _ in counts])
    low, high = wilson_interval(c, n, level)
    ok = n > 0
    assert np.all((low[ok] >= 0) & (high[ok] <= 1) & (low[ok] <= high[ok]))
    rate = c[ok] / n[ok]
    assert np.all((low[ok] <= rate + 1e-12) & (rate - 1e-12 <= high[ok]))


@FAST
@given(
    counts=st.lists(COUNTS.filter(lambda t: t[0] > 0), min_size=1, max_size=20), k=st.integers(1, 8)
)
def test_pass_hat_k_at_most_pass_at_k_and_both_rates(counts, k):
    n = np.array([t for t, _ in counts])
    c = np.array([s for _, s in counts])
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    defined = n >= k  # fewer attempts than k: undefined (NaN), as in the package
    assert np.all(np.isnan(at[~defined]) & np.isnan(hat[~defined]))
    at, hat = at[defined], hat[defined]
    assert np.all((at >= 0) & (at <= 1) & (hat >= 0) & (hat <= 1))
    assert np.all(hat <= at + 1e-12)


@FAST
@given(
    values=st.lists(st.floats(0, 1), min_size=1, max_size=40),
    level=st.floats(0.5, 0.999),
    seed=st.integers(0, 2**32 - 1),
)
def test_metric_summary_interval_and_row_order(values, level, seed):
    out = metric_summary(values, level, bounded=True)
    ci = out["confidence_interval"]
    assert 0.0 <= ci["lower"] <= out["mean"] + 1e-12
    assert out["mean"] - 1e-12 <= ci["upper"] <= 1.0
    shuffled = list(np.random.default_rng(seed).permutation(values))
    again = metric_summary(shuffled, level, bounded=True)
    assert again["mean"] == pytest.approx(out["mean"], abs=1e-12)
    assert again["median"] == out["median"] and again["p95"] == out["p95"]


# ------------------------------------------------------ whole analysis: order and names


NUMERIC = ["case_pass_rate", "pass_rate_mean", "average_score_mean", "total_cost_usd_mean"]


@pytest.fixture(scope="module")
def base_run() -> ExperimentRun:
    return load_experiment(BASE / "manifest.yaml", BASE / "suite.yaml")


def _summary(run: ExperimentRun) -> pd.DataFrame:
    frame = analyze(run).variants
    columns = [c for c in frame.columns if c in NUMERIC or c.startswith(("pass_at_", "pass_hat_"))]
    return frame.set_index(frame["variant_id"].astype(str))[columns]


@SLOW
@given(seed=st.integers(0, 2**32 - 1))
def test_analysis_invariant_to_attempt_row_order(base_run, seed):
    order = np.random.default_rng(seed).permutation(len(base_run.attempts))
    shuffled = ExperimentRun(
        base_run.manifest,
        base_run.suite,
        attempts=base_run.attempts.iloc[order].reset_index(drop=True),
        checks=base_run.checks,
        trials=base_run.trials,
        variants=base_run.variants,
        cases=base_run.cases,
        evaluator_versions=base_run.evaluator_versions,
    )
    pd.testing.assert_frame_equal(_summary(shuffled), _summary(base_run))


NAMES = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_. <>&'\"é", min_size=1, max_size=12),
    min_size=3,
    max_size=3,
    unique=True,
)


@SLOW
@given(names=NAMES)
def test_analysis_invariant_to_renaming_variants(base_run, tmp_path_factory, names):
    folder = tmp_path_factory.mktemp("renamed")
    shutil.copytree(BASE, folder, dirs_exist_ok=True)
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text())
    mapping = dict(zip([v["id"] for v in manifest["variants"]], names, strict=True))
    for variant in manifest["variants"]:
        trials = folder / variant["target"]
        doc = json.loads(trials.read_text())
        doc["variant_id"] = mapping[variant["id"]]
        trials.write_text(json.dumps(doc))
        variant["id"] = mapping[variant["id"]]
    manifest["baseline_variant_id"] = mapping[manifest["baseline_variant_id"]]
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    renamed = _summary(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))
    expected = _summary(base_run).rename(index=mapping)
    pd.testing.assert_frame_equal(renamed, expected)
