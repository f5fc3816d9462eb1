"""How sure is the Pareto frontier: per-variant frontier and best-value probabilities.

:func:`frontier_uncertainty` resamples the suite's cases (jointly across variants, so the
pairing is kept; or the declared clusters of cases, each with all its cases), recomputes
every objective of the frontier of :func:`~agenticlens_frames.analysis.pareto_frontier`
from the resampled cases exactly as the variant summary computes it, and counts how often
each variant is on the frontier and best on each objective. The estimators live in
:mod:`agenticlens_frames.stats_frontier`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import stats_frontier as sf
from ._choices import check_latency_missing
from ._deprecate import keyword_hints
from .errors import InputError, check_count, check_proportion
from .frames import ExperimentRun, require_run

__all__ = [
    "FEW_CLUSTERS",
    "FRONTIER_OBJECTIVES",
    "SETTINGS_KEYS",
    "cluster_method",
    "cluster_notes",
    "frontier_columns",
    "frontier_uncertainty",
    "interval_columns",
    "membership_note",
    "merge_frontier_columns",
]

#: The frontier's objectives (spec §9.4): short name → (variant-summary column, higher is
#: better). The order is the order of :func:`~agenticlens_frames.analysis.pareto_frontier`.
FRONTIER_OBJECTIVES: dict[str, tuple[str, bool]] = {
    "reliability": ("trial_success_rate", True),
    "pass_rate": ("pass_rate_mean", True),
    "score": ("average_score_mean", True),
    "latency": ("average_latency_ms_mean", False),
    "cost": ("total_cost_usd_mean", False),
}
#: Shown with a bootstrap interval too (the chart can put it on an axis), not an objective.
_EXTRA_INTERVALS = {"case_pass_rate": "case_pass_rate"}

METHOD = (
    "case bootstrap: cases resampled with replacement jointly across variants (pairing "
    "kept); every frontier objective and the frontier recomputed per resample"
)
#: The keys of :func:`frontier_uncertainty`'s ``attrs`` (the JSON block's settings).
SETTINGS_KEYS = (
    "method",
    "n_resamples",
    "seed",
    "confidence_level",
    "resampled",
    "cluster",
    "n_clusters",
    "notes",
)
#: Below this many clusters the cluster bootstrap is rough, and a note says so: with few
#: clusters it understates the spread (Cameron, Gelbach & Miller 2008 find it over-rejects
#: with 5–10 clusters; benchmarks/coverage_frontier.py measured 95% whiskers covering
#: about 82% with 5 clusters, 90% with 10), as few cases make the case bootstrap's short.
FEW_CLUSTERS = 10


#: What a bootstrap over one unit (one case, or one cluster) says instead of probabilities.
ONE_UNIT = (
    "One {unit}: every resample draws the whole suite, so the bootstrap cannot say how sure "
    "the frontier is (no probability or interval)."
)


def cluster_method(cluster: str, n_clusters: int) -> str:
    """The ``method`` of a cluster bootstrap, in words.

    Examples
    --------
    >>> cluster_method("topic", 3)[:67]
    'cluster bootstrap: the 3 clusters of cases (metadata field "topic")'
    """
    return (
        f"cluster bootstrap: the {n_clusters} clusters of cases (metadata field "
        f'"{cluster}") resampled with replacement jointly across variants, each drawn '
        "cluster with all its cases (pairing kept); every frontier objective and the "
        "frontier recomputed per resample"
    )


def cluster_notes(n_clusters: int) -> list[str]:
    """What a cluster bootstrap over ``n_clusters`` clusters cannot do, in words.

    Examples
    --------
    >>> cluster_notes(12)
    []
    >>> cluster_notes(4)[0][:51]
    'Only 4 clusters: a cluster bootstrap with few clust'
    """
    if n_clusters < 2:
        return [ONE_UNIT.format(unit="cluster")]
    if n_clusters < FEW_CLUSTERS:
        return [
            f"Only {n_clusters} clusters: a cluster bootstrap with few clusters is rough — "
            "its resamples hold few distinct suites, so the probabilities are too sure and "
            "the intervals too narrow (in simulation a 95% interval covered about 82% with "
            "5 clusters, 90% with 10)."
        ]
    return []


def membership_note(variants: pd.DataFrame) -> str | None:
    """What :func:`membership_cell`'s share is, in words; None when ``variants`` has no
    ``p_frontier`` (an AgenticLens report, or a bootstrap that could not say).

    Examples
    --------
    >>> vs = pd.DataFrame({"p_frontier": [0.9, 0.2]})
    >>> vs.attrs["frontier"] = {"n_resamples": 2000, "resampled": "cases"}
    >>> print(membership_note(vs))  # doctest: +NORMALIZE_WHITESPACE
    Pareto: on the frontier of the point estimates (AgenticLens's flag), then the share of
    2000 case-bootstrap resamples that put the variant on it (p_frontier): well below 100%,
    or well above 0%, the membership is uncertain.
    """
    if "p_frontier" not in variants:
        return None
    if not pd.to_numeric(variants["p_frontier"], errors="coerce").notna().any():
        return None  # the bootstrap could not say (one case or one cluster)
    settings = variants.attrs.get("frontier") or {}
    kind = "cluster-bootstrap" if settings.get("resampled") == "clusters" else "case-bootstrap"
    n = settings.get("n_resamples")
    count = f"{n} " if n else ""
    return (
        "Pareto: on the frontier of the point estimates (AgenticLens's flag), then the share "
        f"of {count}{kind} resamples that put the variant on it (p_frontier): well below "
        "100%, or well above 0%, the membership is uncertain."
    )


def _cube(
    run: ExperimentRun, values: np.ndarray, shape: tuple[int, int, int], fill: float = 0.0
) -> np.ndarray:
    att = run.attempts
    out = np.full(shape, fill, dtype=np.float64)
    out[
        att["variant_id"].cat.codes.to_numpy(np.int64),
        att["trial"].to_numpy(np.int64) - 1,
        att["case_index"].to_numpy(np.int64),
    ] = values
    return out


def _chunks(n: int) -> list[tuple[int, int]]:
    step = 256
    return [(s, min(s + step, n)) for s in range(0, n, step)]


@dataclass(frozen=True)
class FrontierCubes:
    """Per (variant, trial, case) arrays the frontier objectives are sums of.

    ``attempted`` and ``completed`` are (variants, trials) masks; the rest are
    (variants, trials, cases): ``present`` 1 where the attempt exists, ``passed``,
    check-value sums and counts (``score_num``, ``score_den``), latency sums and counts,
    cost sums (``cost_den`` = 1/cases, so that the ratio is a sum) and unpriced flags.
    """

    attempted: np.ndarray
    completed: np.ndarray
    present: np.ndarray
    passed: np.ndarray
    score_num: np.ndarray
    score_den: np.ndarray
    lat_num: np.ndarray
    lat_den: np.ndarray
    cost_num: np.ndarray
    cost_den: np.ndarray
    cost_unknown: np.ndarray

    @property
    def n_var(self) -> int:
        return int(self.present.shape[0])

    @property
    def n_case(self) -> int:
        return int(self.present.shape[2])


def bootstrap_cubes(
    cubes: FrontierCubes,
    n_resamples: int,
    seed: int | None,
    confidence_level: float = 0.95,
    *,
    clusters: np.ndarray | None = None,
) -> tuple[sf.FrontierBootstrap, np.ndarray]:
    """The joint case bootstrap of the frontier from :class:`FrontierCubes`.

    Returns the :class:`~agenticlens_frames.stats_frontier.FrontierBootstrap` over the
    objectives of :data:`FRONTIER_OBJECTIVES` and the (resamples, variants) pooled case
    pass rates (for the chart's whiskers only). With ``clusters`` (a cluster code per
    case) it is the cluster bootstrap: clusters are drawn, each with all its cases.
    """
    # Pooled case pass rate (interval only): passes / attempts over every attempt.
    case_passes = cubes.passed.sum(axis=1)  # (variants, cases)
    case_attempts = cubes.present.sum(axis=1)

    names = list(FRONTIER_OBJECTIVES)
    maximize = [FRONTIER_OBJECTIVES[n][1] for n in names]
    objectives = np.empty((n_resamples, cubes.n_var, len(names)))
    counts_ok = np.empty((n_resamples, cubes.n_var, 2), dtype=bool)
    latency_known = np.empty((n_resamples, cubes.n_var), dtype=bool)
    cost_known = np.empty((n_resamples, cubes.n_var), dtype=bool)
    pooled = np.empty((n_resamples, cubes.n_var))
    # Every per-case quantity as one (rows, cases) matrix: one matrix product per chunk.
    blocks = [
        cubes.present - cubes.passed,
        cubes.passed,
        cubes.present,
        cubes.score_num,
        cubes.score_den,
        cubes.lat_num,
        cubes.lat_den,
        cubes.cost_num,
        cubes.cost_den,
        cubes.cost_unknown,
    ]
    n_blocks = len(blocks)
    # One concatenation, and the rows let go once their distinct ones are taken: at
    # 20 000 cases each copy is 33 MB in the run's process, beside the JSON report's
    # worker (issue 19).
    rows = np.concatenate(
        [*(blk.reshape(-1, cubes.n_case) for blk in blocks), case_passes, case_attempts]
    )
    del blocks
    # Identical rows (every "present" row, say) are multiplied once.
    unique, inverse = sf.unique_rows(rows)
    del rows
    width = cubes.n_var * cubes.attempted.shape[1]
    done = cubes.completed
    for start, stop in _chunks(n_resamples):
        w = sf.bootstrap_case_counts(
            cubes.n_case, n_resamples, seed, start=start, stop=stop, clusters=clusters
        )
        sums = sf.case_sums(w, unique)[:, inverse]
        fail, pas, pre, s_num, s_den, l_num, l_den, c_num, c_den, c_unk = (
            sums[:, i * width : (i + 1) * width] for i in range(n_blocks)
        )
        rel = sf.all_pass_rate(fail, done, cubes.attempted)
        pr, n_pr = sf.trial_ratio_means(pas, pre, done)
        sc, n_sc = sf.trial_ratio_means(s_num, s_den, done)
        la, n_la = sf.trial_ratio_means(l_num, l_den, done)
        co, n_co = sf.trial_ratio_means(c_num, c_den, done, blocked=c_unk > 0)
        objectives[start:stop] = np.stack([rel, pr, sc, la, co], axis=2)
        counts_ok[start:stop] = np.stack([n_pr > 0, n_sc > 0], axis=2)
        latency_known[start:stop] = n_la > 0
        cost_known[start:stop] = n_co > 0
        tail_sums = sums[:, n_blocks * width :]
        with np.errstate(invalid="ignore", divide="ignore"):
            pooled[start:stop] = tail_sums[:, : cubes.n_var] / tail_sums[:, cubes.n_var :]

    # As analysis.pareto_frontier: a completed trial makes a variant eligible, and an
    # unknown latency or cost (no known value in the drawn cases) is neutral.
    eligible = counts_ok.all(axis=2)
    unknown = np.zeros_like(objectives, dtype=bool)
    unknown[:, :, names.index("latency")] = ~latency_known
    unknown[:, :, names.index("cost")] = ~cost_known
    result = sf.frontier_probabilities(
        objectives,
        maximize,
        unknown=unknown,
        eligible=eligible,
        confidence_level=confidence_level,
    )
    return result, pooled


def _case_positions(case_ids: pd.Series, case_of: dict[str, int]) -> np.ndarray:
    """Suite position of each row's case. A categorical is looked up once per category,
    not once per row (a check table has millions of rows)."""
    if isinstance(case_ids.dtype, pd.CategoricalDtype):
        codes = case_ids.cat.codes.to_numpy()
        if len(codes) == 0 or codes.min() >= 0:
            categories = pd.Series(case_ids.cat.categories.astype(str))
            positions = categories.map(case_of).to_numpy(np.float64)[codes]
            if not np.isnan(positions).any():
                return positions.astype(np.int64)
    return case_ids.astype(str).map(case_of).to_numpy(np.int64)


def _score_cubes(run: ExperimentRun, shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per (variant, trial, case): the sum and the count of the check values whose ratio
    is the pooled score (``average_score``), pooled as the trial summary pools them.

    A run made from frames has no checks table: each attempt's score is then its one
    check (``score_sum`` over ``n_checks``, an unscored attempt left out), as in the trial
    summary. Read from the empty checks table instead, every trial had no score, so every
    variant was ineligible and every probability NaN.

    Examples
    --------
    >>> import pandas as pd
    >>> from agenticlens_frames import ExperimentRun
    >>> att = pd.DataFrame({"variant_id": ["a", "b"], "trial": [1, 1], "case_id": ["x", "x"],
    ...                     "passed": [True, False], "score": [0.5, None]})
    >>> run = ExperimentRun.from_frames(att, pd.DataFrame({"variant_id": ["a", "b"]}),
    ...                                 pd.DataFrame({"case_id": ["x"]}))
    >>> num, den = _score_cubes(run, (2, 1, 1))
    >>> num.ravel().tolist(), den.ravel().tolist()
    ([0.5, 0.0], [1.0, 0.0])
    """
    chk = run.checks
    if chk.empty and len(run.attempts):
        att = run.attempts
        sums = att["score_sum"].to_numpy(float)
        counts = att["n_checks"].to_numpy(float)
        scored = ~np.isnan(sums) & (counts > 0)
        return (
            _cube(run, np.where(scored, sums, 0.0), shape),
            _cube(run, np.where(scored, counts, 0.0), shape),
        )
    case_of = dict(zip(run.suite.case_ids, range(shape[2]), strict=True))
    live = ~chk["skipped"].to_numpy(bool)
    c_key = np.ravel_multi_index(
        (
            chk["variant_id"].cat.codes.to_numpy(np.int64)[live],
            chk["trial"].to_numpy(np.int64)[live] - 1,
            _case_positions(chk["case_id"], case_of)[live],
        ),
        shape,
    )
    size = int(np.prod(shape))
    score_num = np.bincount(
        c_key, weights=chk["value"].to_numpy(float)[live], minlength=size
    ).reshape(shape)
    score_den = np.bincount(c_key, minlength=size).reshape(shape).astype(float)
    return score_num, score_den


@keyword_hints
def frontier_uncertainty(
    run: ExperimentRun,
    *,
    n_resamples: int = 2000,
    seed: int | None = 0,
    confidence_level: float = 0.95,
    latency_missing: str = "exclude",
    cluster: str | None = None,
) -> pd.DataFrame:
    """Per variant: probability of being on the Pareto frontier and of being best.

    Parameters
    ----------
    run
        The experiment.
    n_resamples
        Bootstrap resamples (default 2000).
    seed
        Seed of the case draws (default 0, so a report is reproducible).
    confidence_level
        For the percentile intervals of each objective.
    latency_missing
        As in :func:`~agenticlens_frames.analysis.trial_summary`.
    cluster
        A case metadata field whose equal values make one cluster of cases (the paired
        comparisons' ``cluster``; :func:`~agenticlens_frames.analyze` passes the declared
        one). The bootstrap then draws clusters, each with all its cases, instead of cases.

    Returns
    -------
    pandas.DataFrame
        One row per variant (manifest order): ``variant_id, p_frontier``,
        ``p_best_<objective>`` for ``reliability, pass_rate, score, latency, cost``, and
        ``<column>_boot_ci_low`` / ``_boot_ci_high`` for each objective's summary column
        (``trial_success_rate``, ``pass_rate_mean``, … and ``case_pass_rate``).
        ``attrs`` hold ``n_resamples``, ``seed``, ``confidence_level``, ``method``,
        ``resampled`` (``"cases"`` or ``"clusters"``), ``cluster`` (the field, or None),
        ``n_clusters`` (None without clusters) and ``notes`` (in words: a cluster
        bootstrap with fewer than :data:`FEW_CLUSTERS` clusters is rough; with one cluster,
        or one case, every probability and interval is NaN).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> fu = frontier_uncertainty(run, n_resamples=200)
    >>> bool(fu["p_frontier"].between(0, 1).all()), round(float(fu["p_best_score"].sum()), 6)
    (True, 1.0)
    >>> by_level = frontier_uncertainty(run, n_resamples=200, cluster="difficulty")
    >>> by_level.attrs["resampled"], by_level.attrs["n_clusters"]
    ('clusters', 3)
    """
    run = require_run(run, "frontier_uncertainty")
    check_count(n_resamples, "n_resamples", location="n_resamples")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0
    ):
        raise InputError(
            f"seed must be None or a whole number ≥ 0, got {seed!r}", location="frontier_seed"
        )
    check_proportion(confidence_level, "confidence level", location="confidence_level")
    check_latency_missing(latency_missing)
    codes = None
    if cluster is not None:
        # The cases' clusters as the paired comparisons find them (same field, same error
        # when a case lacks it), coded 0 … G−1.
        from .paired.dimensions import cluster_labels
        from .stats_paired import cluster_codes

        labels = cluster_labels(run, cluster)
        codes = cluster_codes(labels, len(labels))
    variant_ids = list(run.manifest.variant_ids)
    case_ids = run.suite.case_ids
    n_case = len(case_ids)
    att = run.attempts
    n_var = len(variant_ids)
    n_trial = int(att["trial"].max()) if len(att) else 1
    shape = (n_var, n_trial, n_case)

    tri = run.trials
    t_var = tri["variant_id"].cat.codes.to_numpy(np.int64)
    t_idx = tri["trial"].to_numpy(np.int64) - 1
    attempted = np.zeros(shape[:2], dtype=bool)
    completed = np.zeros(shape[:2], dtype=bool)
    attempted[t_var, t_idx] = True
    completed[t_var, t_idx] = (tri["status"] == "succeeded").to_numpy()

    present = _cube(run, np.ones(len(att)), shape)
    passed = _cube(run, att["passed"].to_numpy(float), shape)
    ok = (att["status"] == "ok").to_numpy()
    latency = att["latency_ms"].to_numpy(float)
    measured = ok & ~np.isnan(latency)  # as trial_summary counts a known latency
    lat_num = _cube(run, np.where(measured, latency, 0.0), shape)
    lat_den = present if latency_missing == "zero" else _cube(run, measured.astype(float), shape)
    cost = att["cost_usd"].to_numpy(float)
    cost_num = _cube(run, np.where(np.isnan(cost), 0.0, cost), shape)
    cost_unknown = _cube(run, np.isnan(cost).astype(float), shape)
    # A trial's total cost is a sum over its cases: weights of 1/n make the ratio a sum
    # whatever the draw (the counts of one resample add up to n). A cluster draw can hold
    # more or fewer cases than n: the ratio is then n × the mean cost of a drawn case, the
    # cost of a suite of the suite's size, not a total that grows with the draw's size.
    cost_den = present / n_case

    score_num, score_den = _score_cubes(run, shape)

    cubes = FrontierCubes(
        attempted=attempted,
        completed=completed,
        present=present,
        passed=passed,
        score_num=score_num,
        score_den=score_den,
        lat_num=lat_num,
        lat_den=lat_den,
        cost_num=cost_num,
        cost_den=cost_den,
        cost_unknown=cost_unknown,
    )
    result, pooled = bootstrap_cubes(cubes, n_resamples, seed, confidence_level, clusters=codes)
    names = list(FRONTIER_OBJECTIVES)
    out: dict[str, Any] = {
        "variant_id": pd.Categorical(variant_ids, categories=variant_ids),
        "p_frontier": result.p_frontier,
    }
    for k, name in enumerate(names):
        out[f"p_best_{name}"] = result.p_best[:, k]
    for k, name in enumerate(names):
        column = FRONTIER_OBJECTIVES[name][0]
        out[f"{column}_boot_ci_low"] = result.ci_low[:, k]
        out[f"{column}_boot_ci_high"] = result.ci_high[:, k]
    tail = (1 - confidence_level) / 2
    with np.errstate(invalid="ignore"):
        out["case_pass_rate_boot_ci_low"] = np.nanquantile(pooled, tail, axis=0)
        out["case_pass_rate_boot_ci_high"] = np.nanquantile(pooled, 1 - tail, axis=0)
    frame = pd.DataFrame(out)
    settings: dict[str, Any] = {
        "n_resamples": n_resamples,
        "seed": seed,
        "confidence_level": confidence_level,
        "method": METHOD,
        "resampled": "cases",
        "cluster": None,
        "n_clusters": None,
        "notes": [],
    }
    units = n_case
    if codes is not None and cluster is not None:
        units = int(codes.max()) + 1
        settings.update(
            method=cluster_method(cluster, units),
            resampled="clusters",
            cluster=cluster,
            n_clusters=units,
            notes=cluster_notes(units),
        )
    elif n_case < 2:
        settings["notes"] = [ONE_UNIT.format(unit="case")]
    if units < 2:
        # Every resample is the whole suite: 100 % and zero-width intervals would read as
        # certainty, so nothing is said instead.
        frame.iloc[:, 1:] = np.nan
    frame.attrs.update(settings)
    return frame


def interval_columns() -> list[str]:
    """The variant-summary columns given a bootstrap interval: every objective's, then the
    extra ones (``case_pass_rate``)."""
    return [*(c for c, _ in FRONTIER_OBJECTIVES.values()), *_EXTRA_INTERVALS.values()]


def frontier_columns() -> list[str]:
    """The columns :func:`frontier_uncertainty` returns besides ``variant_id``."""
    cols = ["p_frontier", *(f"p_best_{n}" for n in FRONTIER_OBJECTIVES)]
    for column in interval_columns():
        cols += [f"{column}_boot_ci_low", f"{column}_boot_ci_high"]
    return cols


def merge_frontier_columns(
    variants: pd.DataFrame, frontier: pd.DataFrame, settings: dict[str, Any]
) -> pd.DataFrame:
    """Append the frontier columns to a variant summary, matched on ``variant_id``."""
    by_id = frontier.set_index(frontier["variant_id"].astype(str))
    keys = variants["variant_id"].astype(str)
    out = variants.copy()
    for column in frontier_columns():
        if column in by_id:
            out[column] = by_id[column].reindex(keys).to_numpy(float)
    out.attrs = {**variants.attrs, "frontier": settings}
    return out
