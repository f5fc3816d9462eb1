"""The declared dimensions evaluated on a run: per-case values of each evaluator.

Evaluators (what "value" means), by name:

``passed``            the attempt passed (1/0)                       quality default
``score``             the attempt's score in [0, 1]
``pass_hat_<k>``      unbiased per-case pass^k (k attempts all pass) reliability default
``pass_at_<k>``       unbiased per-case pass@k
``latency_ms``        measured latency (lower is better)             latency default
``cost_usd``          measured cost (lower is better)                cost default
a check metric        e.g. ``forbidden_tool`` (safety default), ``contains``, or a
                      registered evaluator's name: the mean of that metric's check values
                      within the attempt

The case is the unit throughout: a per-case value is the mean over that case's evaluated
attempts of an evaluator's per-attempt value.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import stats
from .._suggest import close_match
from ..errors import InputError
from ..formats._io import Invalid
from ..formats.comparisons import parse_evaluator
from ..frames import BUILTIN_EVALUATOR, UNAVAILABLE_METRICS, ExperimentRun
from ..per_case import category_codes
from .settings import BOUNDED_UNITS, EvaluatorChoice, check_pass_k

__all__ = [
    "BOUNDED_UNITS",
    "Evaluation",
    "cluster_labels",
    "evaluate",
    "evaluation",
    "metadata_cluster_labels",
    "unevaluated_attempts",
    "unevaluated_per_variant",
    "unjudged_failures",
]

_ATTEMPT_EVALUATORS: dict[str, tuple[str, bool, bool, str]] = {
    # name: (attempts column, higher is better, binary, unit)
    "passed": ("passed", True, True, "proportion"),
    "score": ("score", True, False, "score"),
    "latency_ms": ("latency_ms", False, False, "ms"),
    "cost_usd": ("cost_usd", False, False, "usd"),
}

_MEASURED = "measured"


@dataclass(frozen=True)
class Evaluation:
    """An evaluator resolved against a run, with its per-case values.

    ``values``, ``counts`` and ``sums`` have shape (variants, cases); ``values`` is NaN
    where a case has no value. ``groups`` / ``attempt_values`` hold the per-attempt values
    (group = variant × cases + case) for variance decompositions.
    """

    dimension: str
    name: str
    kind: str
    higher_is_better: bool
    binary: bool
    unit: str
    k: int | None
    versions: tuple[str | None, ...]
    values: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    groups: np.ndarray
    attempt_values: np.ndarray

    def version(self, variant: int) -> str | None:
        return self.versions[variant]

    def attempts_of(self, variant: int) -> tuple[np.ndarray, np.ndarray]:
        """One variant's per-attempt values and the case index of each attempt.

        The summaries, the variance decomposition and the planners all split the attempts
        this way, so the group arithmetic lives here once.
        """
        order, starts = self._by_variant
        rows = order[starts[variant] : starts[variant + 1]]
        return self.attempt_values[rows], self.groups[rows] % self.values.shape[1]

    @functools.cached_property
    def _by_variant(self) -> tuple[np.ndarray, np.ndarray]:
        """The attempts' positions grouped by variant, and where each variant's begin.

        Sorted once (stably: a variant's attempts keep their order, as a mask would select
        them), so that :meth:`attempts_of` for every variant reads all the attempts once
        in total rather than once per variant (quadratic in the number of variants).
        """
        variant = self.groups // self.values.shape[1]
        order = np.argsort(variant, kind="stable")
        starts = np.searchsorted(variant[order], np.arange(self.values.shape[0] + 1))
        return order, starts

    def attempt_means(self, variant: int) -> tuple[np.ndarray, np.ndarray]:
        """Which cases of one variant have attempts, and the mean attempt value of each.

        ``sums / counts`` over the attempts: the case-level intervals and the variance
        decomposition take it this one way.
        """
        present = self.counts[variant] > 0
        return present, (self.sums[variant] / np.maximum(self.counts[variant], 1))[present]


def _available(run: ExperimentRun) -> list[str]:
    metrics = sorted({str(m) for m in run.checks["metric"].dropna().unique()})
    ks = run.manifest.effective_pass_k
    return [
        *_ATTEMPT_EVALUATORS,
        *(f"pass_hat_{k}" for k in ks),
        *(f"pass_at_{k}" for k in ks),
        *metrics,
    ]


def _check_versions(run: ExperimentRun, mask: np.ndarray | None) -> list[str | None]:
    """Per variant: the evaluator@version set of the checks behind ``mask`` (all if None)."""
    chk = run.checks
    n_var = len(run.manifest.variants)
    codes = chk["variant_id"].cat.codes.to_numpy()
    # Work on category codes: the distinct (evaluator, version) pairs are few, the rows many.
    ev_codes = chk["evaluator"].cat.codes.to_numpy().astype(np.int64)
    ver_codes = chk["evaluator_version"].cat.codes.to_numpy().astype(np.int64)
    ev_names = [str(x) for x in chk["evaluator"].cat.categories]
    ver_names = [str(x) for x in chk["evaluator_version"].cat.categories]
    width = len(ver_names) + 1
    # The (variant, evaluator, version) keys of every variant at once;
    # ``inner`` is the per-variant key (evaluator × width + version + 1), shifted by
    # ``width`` so that it is never negative and the variant is ``key // span``.
    inner = ev_codes * width + (ver_codes + 1)
    span = (len(ev_names) + 1) * width + 1
    key = codes.astype(np.int64) * span + (inner + width)
    if mask is not None:
        key = key[mask]
    # The keys are few (variants × span): which occur is a bincount, not a sort of every row.
    all_keys = np.flatnonzero(np.bincount(key[key >= 0], minlength=n_var * span))
    key_variant = all_keys // span
    out: list[str | None] = []
    for v in range(n_var):
        keys = all_keys[key_variant == v] - v * span - width
        pairs = sorted(
            (ev_names[int(k) // width], "nan" if k % width == 0 else ver_names[int(k) % width - 1])
            for k in keys
        )
        if not pairs:
            out.append(None)
            continue
        parts = [ver for ev, ver in pairs if ev == BUILTIN_EVALUATOR]
        parts += [f"{ev}@{ver}" for ev, ver in pairs if ev != BUILTIN_EVALUATOR]
        out.append("+".join(parts))
    return out


def evaluate(
    run: ExperimentRun,
    dimension: str,
    choice: EvaluatorChoice | str,
    *,
    declared: bool = True,
    location: str | None = None,
) -> Evaluation | None:
    """Resolve ``choice`` against ``run`` and compute its per-case values.

    Returns None for an undeclared (default) evaluator the run has no data for. An unknown
    evaluator is refused naming ``location`` (default: the manifest's
    ``comparisons.evaluators.<dimension>``).
    """
    if not isinstance(choice, EvaluatorChoice):
        try:
            choice = parse_evaluator(choice)
        except Invalid as exc:  # (an internal exception: the caller sees an InputError)
            raise InputError(exc.message, location="evaluator", hint=exc.hint) from None
    name = choice.name
    att = run.attempts
    n_var, n_case = len(run.manifest.variants), len(run.suite.cases)
    size = n_var * n_case
    evaluated = (att["status"] != "trial_failed").to_numpy()
    group = att["variant_id"].cat.codes.to_numpy(np.int64) * n_case + att["case_index"].to_numpy(
        np.int64
    )
    pass_k = choice.pass_k
    k = None
    if name in _ATTEMPT_EVALUATORS or pass_k is not None:
        if pass_k is not None:
            column, higher, binary, unit = "passed", True, False, "proportion"
            kind, k = pass_k[0], pass_k[1]
            check_pass_k(
                choice, run.manifest.trial_count, location or f"comparisons.evaluators.{dimension}"
            )
        else:
            column, higher, binary, unit = _ATTEMPT_EVALUATORS[name]
            kind = "attempt"
        y = att[column].to_numpy(np.float64)
        ok = evaluated & ~np.isnan(y)
        if column == "passed":
            # An attempt no check judged (a plain input of the Python API) "passes" only
            # by AgenticLens's vacuous rule: it says nothing about quality, so it is not a
            # value here, as its score (null) is not.
            ok &= att["n_checks"].to_numpy(np.int64) > 0
        if column in ("passed", "score"):
            # A failed call on such an input gets the package's one failing check: that
            # is an error (counted as one), not a quality judgement of an unchecked input.
            ok &= ~unjudged_failures(run)
        g, y = group[ok], y[ok]
        versions = (
            [_MEASURED] * n_var
            if column in ("latency_ms", "cost_usd")
            else _check_versions(run, None)
        )
    else:
        chk = run.checks
        mask = (category_codes(chk["metric"], [name]) == 0) & ~chk["skipped"].to_numpy(bool)
        if not mask.any():
            if not declared:
                return None
            available = _available(run)
            match = close_match(name, available)
            raise InputError(
                f"unknown evaluator {name!r} for this run",
                location=location or f"comparisons.evaluators.{dimension}",
                hint=(f"did you mean {match!r}? " if match else "")
                + "available: "
                + ", ".join(available),
            )
        sub = chk.loc[mask]
        values = sub["value"].to_numpy(np.float64)
        kind, higher, unit = "check", True, "score"
        binary = bool(np.all(np.isin(values, (0.0, 1.0))))
        if binary:
            unit = "proportion"
        width = int(run.attempts["trial"].max()) + 1 if len(run.attempts) else 1
        key = (
            sub["variant_id"].cat.codes.to_numpy(np.int64) * n_case
            + sub["case_id"].cat.codes.to_numpy(np.int64)
        ) * width + sub["trial"].to_numpy(np.int64)
        keys, inverse = np.unique(key, return_inverse=True)
        per_attempt = np.bincount(inverse, weights=values) / np.bincount(inverse)
        g, y = keys // width, per_attempt
        versions = _check_versions(run, mask)
    counts = np.bincount(g, minlength=size)
    sums = np.bincount(g, weights=y, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        values_flat = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    if kind == "pass_hat":
        values_flat = stats.pass_hat_k(counts, np.rint(sums).astype(np.int64), k)
    elif kind == "pass_at":
        values_flat = stats.pass_at_k(counts, np.rint(sums).astype(np.int64), k)
    if choice.version is not None:
        wrong = sorted(
            {v for v, c in zip(versions, counts.reshape(n_var, n_case).sum(1), strict=True) if c}
            - {choice.version}
        )
        if wrong:
            raise InputError(
                f"evaluator {name!r} is pinned to version {choice.version!r} but the run "
                f"scored it with {', '.join(repr(w) for w in wrong if w)}",
                location=location or f"comparisons.evaluators.{dimension}",
                hint="re-score with the pinned version, or update the pin in a new "
                "experiment version",
            )
    return Evaluation(
        dimension=dimension,
        name=name,
        kind=kind,
        higher_is_better=higher,
        binary=binary,
        unit=unit,
        k=k,
        versions=tuple(versions),
        values=values_flat.reshape(n_var, n_case),
        counts=counts.reshape(n_var, n_case),
        sums=sums.reshape(n_var, n_case),
        groups=g,
        attempt_values=y,
    )


def evaluation(run: ExperimentRun, evaluator: str) -> Evaluation:
    """``evaluator`` on ``run``, for the single-evaluator summaries (their ``evaluator=``
    argument is what an unknown name is reported as, not the manifest's
    ``comparisons.evaluators.quality``).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> evaluation(run, "pased")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: evaluator: unknown evaluator 'pased' for this run \
(did you mean 'passed'? ...)
    """
    ev = evaluate(run, "quality", evaluator, location="evaluator")
    assert ev is not None
    return ev


def unjudged_failures(run: ExperimentRun) -> np.ndarray:
    """Per attempt: a failed call (or missing sample) on a case that has no expectations.

    Such an attempt carries one failing ``target_call`` / ``sample_available`` check, so
    it would read as a quality failure of an input nothing was to judge; the Python API's
    plain inputs are the usual case. A run built from frames declares one expectation per
    case (its ``passed`` column), so its ``passed`` values (the user's own) are never masked.

    Returns
    -------
    numpy.ndarray
        Boolean, one per row of ``run.attempts``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> bool(unjudged_failures(run).any())  # every bundled case has expectations
    False
    """
    att, chk = run.attempts, run.checks
    out = np.zeros(len(att), dtype=bool)
    plain = run.cases["n_expectations"].to_numpy(np.int64) == 0
    if not plain.any() or chk.empty:
        return out
    synthetic = category_codes(chk["metric"], list(UNAVAILABLE_METRICS)) >= 0
    if not synthetic.any():
        return out
    ids, case_ids = list(run.manifest.variant_ids), list(run.suite.case_ids)
    width = int(max(att["trial"].max(), chk["trial"].max())) + 1

    def keys(variant: np.ndarray, case: np.ndarray, trial: np.ndarray) -> np.ndarray:
        return (variant * len(case_ids) + case) * width + trial

    sub = chk.loc[synthetic]
    failed = keys(
        category_codes(sub["variant_id"], ids),
        category_codes(sub["case_id"], case_ids),
        sub["trial"].to_numpy(np.int64),
    )
    case = att["case_index"].to_numpy(np.int64)
    mine = keys(category_codes(att["variant_id"], ids), case, att["trial"].to_numpy(np.int64))
    return plain[case] & np.isin(mine, failed)


def cluster_labels(run: ExperimentRun, field_name: str | None) -> np.ndarray | None:
    """Per case: its value of the metadata field ``field_name`` (None: no clusters).

    A case without the field, or whose value is null or NaN, is refused (InputError
    naming the cases): a missing value is no cluster (:func:`metadata_cluster_labels`).
    """
    if field_name is None:
        return None
    metadata = [
        json.loads(text) if isinstance(text, str) and text else {}
        for text in run.cases["metadata"].tolist()
    ]
    return metadata_cluster_labels(run.suite.case_ids, metadata, field_name)


def metadata_cluster_labels(
    case_ids: Sequence[str],
    metadata: Sequence[Mapping[str, Any]],
    field_name: str,
    *,
    file: str | Path | None = None,
    location: str = "comparisons.cluster",
) -> np.ndarray:
    """Per case: its value of the metadata field ``field_name`` as JSON text (the cluster
    label), from each case's metadata mapping.

    One rule for the fixed-sample statistics (:func:`cluster_labels`) and for early
    stopping, which needs the clusters before any call. ``file`` and ``location`` say
    where the error is (the suite's ``cases`` when the suite file is known).

    Raises
    ------
    InputError
        A case without the field, or whose value is null or NaN (naming the cases): a
        missing value is no cluster.

    Examples
    --------
    >>> metadata_cluster_labels(["a", "b"], [{"topic": "x"}, {"topic": 2}], "topic").tolist()
    ['"x"', '2']
    """
    labels: list[str] = []
    missing: list[str] = []
    for case_id, meta in zip(case_ids, metadata, strict=True):
        value = meta.get(field_name)
        # A NaN is a missing value (a data frame's empty cell), not a label: read as one,
        # every case without a value became a single cluster of its own, silently.
        if value is None or (isinstance(value, float) and math.isnan(value)):
            missing.append(case_id)
            labels.append("")
        else:
            labels.append(json.dumps(value, sort_keys=True, default=str))
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        raise InputError(
            f"{len(missing)} case(s) have no value of the metadata field {field_name!r} "
            f"(absent, null or NaN): {shown}",
            file=file,
            location=location,
            hint="add the field to every case's metadata in the suite, or cluster by another field",
        )
    return np.asarray(labels, dtype=object)


def unevaluated_attempts(run: ExperimentRun) -> int:
    """Declared attempts without a score (their trial failed)."""
    return int(unevaluated_per_variant(run).sum())


def unevaluated_per_variant(run: ExperimentRun) -> np.ndarray:
    """Per variant: declared attempts (trials × cases) without a score (failed trials)."""
    declared = run.manifest.trial_count * len(run.suite.cases)
    att = run.attempts
    codes = att["variant_id"].cat.codes.to_numpy(np.int64)
    evaluated = np.bincount(
        codes[(att["status"] != "trial_failed").to_numpy()], minlength=len(run.manifest.variants)
    )
    return np.maximum(0, declared - evaluated)
