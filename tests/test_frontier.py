"""Frontier probabilities on the bundled experiment, against a naive per-resample loop."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from agenticlens_frames import (
    ExperimentRun,
    InputError,
    analyze,
    frontier_uncertainty,
    load_experiment,
    load_report,
    stats,
    viz,
    write_json_report,
)
from agenticlens_frames import stats_frontier as sf
from agenticlens_frames.frontier import FrontierCubes, bootstrap_cubes

from .conftest import EXAMPLE, example_without_latency


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def _naive(run, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per resample: the five objectives per variant and the frontier, by row selection."""
    att = run.attempts.astype({"variant_id": str})
    live = run.checks[~run.checks["skipped"]].astype({"variant_id": str, "case_id": str})
    if run.checks.empty:  # a run from frames: each scored attempt is its one check
        live = att[att["score"].notna()].astype({"case_id": str}).rename(columns={"score": "value"})
    checks = live.groupby(["variant_id", "trial", "case_id"])["value"].agg(["sum", "count"])
    tri = run.trials.astype({"variant_id": str})
    ids = list(run.manifest.variant_ids)
    case_ids = list(run.suite.case_ids)
    objectives = np.full((len(counts), len(ids), 5), np.nan)
    fronts = np.zeros((len(counts), len(ids)), dtype=bool)
    for b, w in enumerate(counts):
        drawn = np.repeat(np.arange(len(case_ids)), w.astype(int))
        unknown = np.zeros((len(ids), 5), dtype=bool)
        eligible = np.ones(len(ids), dtype=bool)
        for v, vid in enumerate(ids):
            trials = tri[tri["variant_id"] == vid]
            rates, scores, lats, costs, wins = [], [], [], [], 0
            for t, status in zip(trials["trial"], trials["status"], strict=True):
                if status != "succeeded":
                    continue
                rows = att[(att["variant_id"] == vid) & (att["trial"] == t)].set_index("case_index")
                sample = rows.loc[drawn]
                rates.append(sample["passed"].mean())
                wins += bool(sample["passed"].all())
                # a known latency: answered, and recorded (0 ms is unknown, fix B3)
                ok = sample[(sample["status"] == "ok") & sample["latency_ms"].notna()]
                if len(ok):
                    lats.append(ok["latency_ms"].sum() / len(ok))
                if sample["cost_usd"].notna().all():
                    # a drawn suite of clusters may hold more or fewer cases than the
                    # suite: its cost is scaled to the suite's size (1 for a case draw)
                    costs.append(sample["cost_usd"].sum() * (len(case_ids) / len(drawn)))
                keys = [(vid, t, case_ids[c]) for c in drawn]
                s = checks.reindex(keys).fillna(0)
                scores.append(s["sum"].sum() / s["count"].sum())
            eligible[v] = bool(rates)  # unknown latency or cost: neutral, not ineligible
            objectives[b, v] = [
                wins / len(trials),
                np.mean(rates) if rates else np.nan,
                np.mean(scores) if scores else np.nan,
                np.mean(lats) if lats else np.nan,
                np.mean(costs) if costs else np.nan,
            ]
            unknown[v, 3] = not lats
            unknown[v, 4] = not costs
        sub = np.flatnonzero(eligible)
        front = stats.pareto_front(
            objectives[b, sub], [True, True, True, False, False], unknown[sub]
        )
        fronts[b, sub[front]] = True
    return objectives, fronts


@pytest.fixture(scope="module")
def no_latency(tmp_path_factory):
    """The example with prompt-v2's traces recording no latency."""
    folder = example_without_latency(tmp_path_factory.mktemp("frontier"))
    return load_experiment(folder / "manifest.yaml", folder / "suite.yaml")


@pytest.fixture(scope="module")
def frames():
    """A run built from frames (no checks table): scores, some unscored, costs, latencies
    and a failed trial."""
    rng = np.random.default_rng(7)
    n_case, ids = 10, ["a", "b", "c", "d"]
    difficulty = rng.normal(0, 1.2, n_case)
    rows = []
    for v, vid in enumerate(ids):
        for t in (1, 2, 3):
            p = 1 / (1 + np.exp(-(difficulty + 0.4 * v - 0.6)))
            for c in range(n_case):
                score = float(rng.random()) if rng.random() > 0.15 else np.nan
                rows.append(
                    (
                        vid,
                        t,
                        f"c{c}",
                        bool(rng.random() < p[c]),
                        score,
                        float(rng.gamma(2, 200 * (1 + v))),
                        0.01 * (4 - v) * (1 + c % 3),
                    )
                )
    att = pd.DataFrame(rows, columns=["variant_id", "trial", "case_id", "passed", "score",
                                      "latency_ms", "cost_usd"])  # fmt: skip
    att["status"] = "ok"
    lost = (att["variant_id"] == "c") & (att["trial"] == 2)
    att.loc[lost, ["status", "passed"]] = ["trial_failed", False]
    case_ids = sorted(set(att["case_id"]))
    # Clusters of unequal sizes (4, 3, 2, 1 cases) for the cluster bootstrap.
    groups = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3]
    return ExperimentRun.from_frames(
        att,
        pd.DataFrame({"variant_id": ids}),
        pd.DataFrame({"case_id": case_ids, "metadata": [{"group": f"g{g}"} for g in groups]}),
    )


def test_a_run_from_frames_has_frontier_probabilities(frames) -> None:
    """Its scores live on the attempts (no checks table): read from the empty table, every
    trial had no score, every variant was ineligible and every probability NaN."""
    fu = frontier_uncertainty(frames, n_resamples=200, seed=1)
    assert fu["p_frontier"].notna().all()
    assert fu["average_score_mean_boot_ci_low"].notna().all()
    for name in ("reliability", "pass_rate", "score", "latency", "cost"):
        assert fu[f"p_best_{name}"].sum() == pytest.approx(1.0)


def _cluster_draw_counts(run, field: str, n: int, seed: int) -> np.ndarray:
    """Per resample, how often each case is drawn when clusters are drawn: the clusters
    (in sorted order of their labels) drawn as the case bootstrap draws G units, then,
    by a loop, every case of a drawn cluster once per draw of its cluster."""
    labels = [json.dumps(c.metadata[field]) for c in run.suite.cases]
    clusters = sorted(set(labels))
    per_cluster = sf.bootstrap_case_counts(len(clusters), n, seed)
    counts = np.zeros((n, len(labels)))
    for b in range(n):
        for g, label in enumerate(clusters):
            for _ in range(int(per_cluster[b, g])):
                for c, own in enumerate(labels):
                    if own == label:
                        counts[b, c] += 1
    return counts


@pytest.mark.parametrize(
    ("which", "cluster"),
    [
        ("run", None),
        ("no_latency", None),
        ("frames", None),
        ("run", "difficulty"),
        ("run", "topic"),
        ("frames", "group"),
    ],
)
def test_bootstrap_objectives_and_frontier_match_a_naive_loop(which, cluster, request) -> None:
    """With a cluster the naive loop draws clusters, each with all its cases."""
    run = request.getfixturevalue(which)
    n = 60
    clustered = {} if cluster is None else {"cluster": cluster}
    fu = frontier_uncertainty(run, n_resamples=n, seed=5, confidence_level=0.9, **clustered)
    if cluster is None:
        counts = sf.bootstrap_case_counts(len(run.suite.case_ids), n, 5)
    else:
        counts = _cluster_draw_counts(run, cluster, n, 5)
        assert fu.attrs["resampled"] == "clusters" and fu.attrs["cluster"] == cluster
    objectives, fronts = _naive(run, counts)
    np.testing.assert_allclose(fu["p_frontier"], fronts.mean(axis=0))
    columns = [
        "trial_success_rate",
        "pass_rate_mean",
        "average_score_mean",
        "average_latency_ms_mean",
        "total_cost_usd_mean",
    ]
    for k, column in enumerate(columns):
        values = objectives[:, :, k]
        if np.isnan(values).all(axis=0).any():  # an all-unknown column: no interval
            unknown = np.isnan(values).all(axis=0)
            assert fu.loc[unknown, f"{column}_boot_ci_low"].isna().all()
            values = np.where(unknown[None, :], 0.0, values)  # compared where known
            fu.loc[unknown, [f"{column}_boot_ci_low", f"{column}_boot_ci_high"]] = 0.0
        np.testing.assert_allclose(
            fu[f"{column}_boot_ci_low"], np.nanquantile(values, 0.05, axis=0), rtol=1e-5
        )
        np.testing.assert_allclose(
            fu[f"{column}_boot_ci_high"], np.nanquantile(values, 0.95, axis=0), rtol=1e-5
        )
    # p_best for latency: the lowest mean latency wins (no ties among real latencies).
    best = np.nanargmin(objectives[:, :, 3], axis=1)
    np.testing.assert_allclose(fu["p_best_latency"], np.bincount(best, minlength=len(fu)) / n)
    if which == "no_latency":  # on the frontier by its other objectives, never fastest
        p = fu.set_index(fu["variant_id"].astype(str)).loc["prompt-v2"]
        assert p["p_frontier"] > 0.5 and p["p_best_latency"] == 0.0


@pytest.mark.parametrize("which", ["run", "no_latency", "frames"])
def test_unit_weights_reproduce_the_point_estimate(which, request) -> None:
    run = request.getfixturevalue(which)
    a = analyze(run, frontier_n_resamples=0)
    objectives, fronts = _naive(run, np.ones((1, len(run.suite.case_ids))))
    vs = a.variants
    np.testing.assert_allclose(objectives[0, :, 1], vs["pass_rate_mean"], rtol=1e-12)
    np.testing.assert_allclose(objectives[0, :, 2], vs["average_score_mean"], rtol=1e-12)
    np.testing.assert_allclose(objectives[0, :, 3], vs["average_latency_ms_mean"], rtol=1e-12)
    np.testing.assert_allclose(objectives[0, :, 4], vs["total_cost_usd_mean"], rtol=1e-12)
    assert list(np.array(vs["variant_id"].astype(str))[fronts[0]]) == a.pareto_frontier


def test_analysis_variants_json_page_and_saved_report(run, tmp_path) -> None:
    a = analyze(run)
    vs = a.variants
    assert vs["p_frontier"].between(0, 1).all()
    for name in ("reliability", "pass_rate", "score", "latency", "cost"):
        assert vs[f"p_best_{name}"].sum() == pytest.approx(1.0)
    # Reproducible: the default seed is fixed.
    again = analyze(run).variants
    pd.testing.assert_series_equal(vs["p_frontier"], again["p_frontier"])
    path = write_json_report(a, tmp_path / "r.json", lean=True)
    block = json.loads(path.read_text())["pareto_uncertainty"]
    assert block["n_resamples"] == 2000 and block["seed"] == 0
    got = {v["variant_id"]: v["p_frontier"] for v in block["variants"]}
    assert got == dict(zip(vs["variant_id"].astype(str), vs["p_frontier"], strict=True))
    saved = load_report(path)
    np.testing.assert_allclose(saved.variants["p_frontier"], vs["p_frontier"])
    np.testing.assert_allclose(
        saved.variants["pass_rate_mean_boot_ci_low"], vs["pass_rate_mean_boot_ci_low"]
    )


def test_chart_whiskers_and_labels(run) -> None:
    vs = analyze(run).variants
    fig = viz.pareto_chart(vs, x="latency", y="pass_rate")
    for trace in fig.data:
        ids = list(trace.text)
        sub = vs.set_index(vs["variant_id"].astype(str)).loc[ids]
        np.testing.assert_allclose(
            np.asarray(trace.error_y.arrayminus),
            sub["pass_rate_mean"] - sub["pass_rate_mean_boot_ci_low"],
        )
        np.testing.assert_allclose(
            np.asarray(trace.error_x.array),
            sub["average_latency_ms_mean_boot_ci_high"] - sub["average_latency_ms_mean"],
        )
        for label, p in zip(trace.customdata, sub["p_frontier"], strict=True):
            assert label.endswith(f"{p:.0%}")


def test_bad_resample_count_is_a_clear_error(run) -> None:
    with pytest.raises(InputError, match="n_resamples"):
        frontier_uncertainty(run, n_resamples=0)


def test_explorer_shows_p_frontier_only_for_all_variants(run) -> None:
    from agenticlens_frames.widgets import Explorer

    explorer = Explorer(analyze(run, frontier_n_resamples=50))
    labels = [c for t in explorer.frontier.data if t.customdata is not None for c in t.customdata]
    assert labels and all(" · " in c for c in labels)
    # Filtered: the probabilities were computed among all variants, so they are dropped.
    explorer.factor_filters["model"].value = ("gpt-small",)
    labels = [c for t in explorer.frontier.data if t.customdata is not None for c in t.customdata]
    assert labels and not any(" · " in c for c in labels)


def test_case_positions_equal_a_lookup_per_row() -> None:
    from agenticlens_frames.frontier import _case_positions

    case_of = {"a": 0, "b": 1, "c": 2}
    rows = ["c", "a", "c", "b"]
    naive = [case_of[r] for r in rows]
    # categories in another order, one of them unused and unknown to the suite
    cat = pd.Series(pd.Categorical(rows, categories=["zz", "c", "b", "a"]))
    assert _case_positions(cat, case_of).tolist() == naive
    assert _case_positions(pd.Series(rows), case_of).tolist() == naive


def _doubled(run: ExperimentRun) -> ExperimentRun:
    """The run from frames with every case twice (the copy answered exactly as the case),
    each case and its copy one cluster ``pair``."""
    att = run.attempts.astype({"variant_id": str, "case_id": str})
    cols = ["variant_id", "trial", "case_id", "passed", "score", "latency_ms", "cost_usd"]
    copy = att[[*cols, "status"]].assign(case_id=att["case_id"] + "-copy")
    both = pd.concat([att[[*cols, "status"]], copy], ignore_index=True)
    case_ids = sorted(set(both["case_id"]))
    return ExperimentRun.from_frames(
        both,
        pd.DataFrame({"variant_id": list(run.manifest.variant_ids)}),
        pd.DataFrame(
            {"case_id": case_ids, "metadata": [{"pair": c.split("-")[0]} for c in case_ids]}
        ),
    )


def test_a_duplicated_suite_clustered_by_pair_is_the_original_case_bootstrap(frames) -> None:
    """Every case twice, each pair a cluster: the cluster bootstrap draws the pairs as the
    case bootstrap draws the original cases, so it gives the original's probabilities and
    intervals (cost: the total of a suite twice the size). Ignoring the clusters, the
    bootstrap of the doubled suite is far too sure: its intervals shrink by about √2."""
    original = frontier_uncertainty(frames, n_resamples=300, seed=3)
    doubled = _doubled(frames)
    clustered = frontier_uncertainty(doubled, n_resamples=300, seed=3, cluster="pair")
    naive = frontier_uncertainty(doubled, n_resamples=300, seed=3)
    assert clustered.attrs["n_clusters"] == 10 and clustered.attrs["notes"] == []
    for column in original.columns[1:]:
        scale = 2.0 if column.startswith("total_cost_usd") else 1.0
        np.testing.assert_allclose(
            clustered[column], scale * original[column], rtol=1e-5, err_msg=column
        )
    width = original["pass_rate_mean_boot_ci_high"] - original["pass_rate_mean_boot_ci_low"]
    too_sure = naive["pass_rate_mean_boot_ci_high"] - naive["pass_rate_mean_boot_ci_low"]
    assert (too_sure / width).mean() < 0.85


def test_clusters_in_attrs_json_page_and_saved_report(run, tmp_path) -> None:
    """The unit resampled, the field and the number of clusters travel with the frame, the
    JSON block and a saved report; 3 clusters get the few-clusters note on the page."""
    a = analyze(run, comparisons={"correction": "holm", "cluster": "difficulty"})
    settings = a.variants.attrs["frontier"]
    assert settings["resampled"] == "clusters" and settings["cluster"] == "difficulty"
    assert settings["n_clusters"] == 3 and settings["method"].startswith("cluster bootstrap")
    assert settings["notes"][0].startswith("Only 3 clusters: a cluster bootstrap")
    path = write_json_report(a, tmp_path / "r.json", lean=True)
    block = json.loads(path.read_text())["pareto_uncertainty"]
    assert {k: block[k] for k in ("resampled", "cluster", "n_clusters")} == {
        "resampled": "clusters",
        "cluster": "difficulty",
        "n_clusters": 3,
    }
    assert block["notes"] == settings["notes"]
    from agenticlens_frames.report.beyond_html import frontier_table

    page = frontier_table(a)
    assert "cluster-bootstrap resamples" in page and "Only 3 clusters" in page
    saved = load_report(path)
    assert saved.variants.attrs["frontier"]["n_clusters"] == 3
    assert "Only 3 clusters" in frontier_table(saved)
    plain = analyze(run, comparisons={"correction": "holm"}).variants.attrs["frontier"]
    assert plain["resampled"] == "cases" and plain["cluster"] is None and not plain["notes"]
    assert "case-bootstrap resamples" in frontier_table(analyze(run))


def test_one_cluster_says_nothing_rather_than_certainty(frames) -> None:
    """Every resample of one cluster is the whole suite: no probability, no interval."""
    one = _doubled(frames)
    one.cases["metadata"] = json.dumps({"all": 1})
    fu = frontier_uncertainty(one, n_resamples=50, seed=1, cluster="all")
    assert fu.attrs["n_clusters"] == 1 and fu.attrs["notes"][0].startswith("One cluster")
    assert fu.drop(columns="variant_id").isna().all().all()


def test_one_case_says_nothing_rather_than_certainty(frames) -> None:
    """A one-case suite: every case resample is that case, so the bootstrap's spread is
    none by construction (it said p_frontier 1.0 and 0.0 and zero-width intervals, read as
    certainty from one case); as with one cluster, no probability and no interval."""
    att = frames.attempts.astype({"variant_id": str, "case_id": str})
    first = att[att["case_id"] == att["case_id"].iloc[0]]
    cols = ["variant_id", "trial", "case_id", "passed", "score", "latency_ms", "cost_usd"]
    one = ExperimentRun.from_frames(
        first[[*cols, "status"]],
        pd.DataFrame({"variant_id": list(frames.manifest.variant_ids)}),
        pd.DataFrame({"case_id": [first["case_id"].iloc[0]]}),
    )
    fu = frontier_uncertainty(one, n_resamples=50, seed=1)
    assert fu.attrs["resampled"] == "cases"
    assert fu.attrs["notes"] == [
        "One case: every resample draws the whole suite, so the bootstrap cannot say how "
        "sure the frontier is (no probability or interval)."
    ]
    assert fu.drop(columns="variant_id").isna().all().all()


def test_a_nan_cluster_value_is_missing_not_a_cluster() -> None:
    """A case whose cluster field is NaN (a data frame's empty cell) has no cluster: the
    frontier bootstrap, the factor effects and the paired verdicts refuse it by name. They
    read NaN as a label, so every such case silently became one more cluster ('NaN')."""
    from agenticlens_frames import factor_effects, paired_comparisons

    rng = np.random.default_rng(0)
    cases = [f"c{i}" for i in range(6)]
    attempts = pd.DataFrame(
        [
            {"variant_id": v, "trial": t, "case_id": c, "passed": bool(rng.random() < 0.6)}
            for v in "ab"
            for t in (1, 2)
            for c in cases
        ]
    )
    topics = ["x", "x", float("nan"), float("nan"), "y", "z"]
    run = ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": ["a", "b"], "factor_m": ["s", "l"]}),
        pd.DataFrame({"case_id": cases, "metadata": [{"topic": t} for t in topics]}),
    )
    said = (
        r"2 case\(s\) have no value of the metadata field 'topic' \(absent, null or NaN\): c2, c3"
    )
    with pytest.raises(InputError, match=said):
        frontier_uncertainty(run, n_resamples=20, cluster="topic")
    with pytest.raises(InputError, match=said):
        paired_comparisons(run, correction="holm", cluster="topic")
    with pytest.raises(InputError, match=said):
        factor_effects(run, cluster="topic")


def test_the_bootstrap_holds_one_draw_and_about_two_copies_of_the_case_rows() -> None:
    """At 20 000 cases the frontier bootstrap ran in ``experiment run``'s process beside
    the JSON report's worker at the run's memory peak (issue 19): each copy of its
    (rows, cases) matrix is 33 MB and each block of 256 resamples' draws 20 MB. Traced
    numpy memory beyond the cubes, with one block of resamples: at most its draws and
    counts and two copies of the rows (the rows themselves and their distinct ones, or
    those and the float32 operand of the product); it was about 4.7 copies beyond them
    (the rows concatenated twice, the distinct rows copied twice, the draws copied)."""
    import tracemalloc

    rng = np.random.default_rng(1)
    shape = (n_var, n_trial, n_case) = (2, 2, 5000)
    present = np.ones(shape)
    cubes = FrontierCubes(
        attempted=np.ones((n_var, n_trial), bool),
        completed=np.ones((n_var, n_trial), bool),
        present=present,
        passed=(rng.random(shape) < 0.6).astype(float),
        score_num=rng.random(shape),
        score_den=present,
        lat_num=rng.random(shape) * 100,
        lat_den=present,
        cost_num=rng.random(shape),
        cost_den=present / n_case,
        cost_unknown=np.zeros(shape),
    )
    tracemalloc.start()
    try:
        bootstrap_cubes(cubes, 256, 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rows = (10 * n_var * n_trial + 2 * n_var) * n_case * 8  # float64 (rows, cases)
    draws = 256 * n_case * 4  # int32 draws, then float32 counts
    assert peak <= 2 * draws + 2 * rows
