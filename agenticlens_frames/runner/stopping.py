"""Stop a live run when every candidate is decided (``stop_when="decided"``).

With early stopping, cases are run one after another in a seeded random order (every
variant and trial of a case before the next case). After each case is complete — its
planned trials done for every variant, in that order — each candidate's paired difference
against the baseline updates an anytime-valid confidence sequence
(:mod:`agenticlens_frames.stats_sequential`); when every candidate's interval excludes 0
(or, with a margin δ, lies within ±δ), no new attempt is started. Attempts already in
flight finish and are kept.

A variant's value on a case is its pass rate over the case's **evaluated** attempts, as in
the case-level statistics: a failed trial's placeholders (its invalid payload, and every
case of the trial after it in the planned order) are not data, while a target error or a
timeout is an evaluated, failed attempt. A case is paired for a candidate only when both
it and the baseline have an evaluated attempt on it; a case paired for no candidate adds
nothing to the sequences, so nothing is decided on no data.

With declared case clusters (``comparisons: {cluster: <field>}`` or ``--cluster``) the
unit of the sequence is the cluster: the clusters are run one after another in a seeded
random order (every case of a cluster before the next cluster), and each completed
cluster gives each candidate one observation, the mean of its paired cases' differences
(:func:`cluster_rank`). Cases correlated within a cluster are then inside one draw, and
exchangeable clusters are independent draws, so the sequence keeps its level; its
estimand is the mean over clusters of the cluster mean difference (every cluster weighs
the same), docs/statistics.md §13.

The sequence is a function of the cases in their planned order only, so a resumed run
(same run folder) replays the journaled cases into the same sequence and continues it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._choices import CORRECTIONS
from .._deprecate import class_keyword_hints
from ..errors import InputError, check_number
from ..formats.model import ManifestSpec, SuiteSpec
from ..paired.settings import check_alpha
from ..stats_sequential import (
    BettingConfidenceSequence,
    applied_correction,
    candidate_alpha,
    decide,
)
from .order import FailedTrials

__all__ = [
    "STOP_WHEN",
    "StopMonitor",
    "StopRule",
    "case_rank",
    "check_resumed_stopping",
    "check_stop_request",
    "cluster_rank",
    "declared_in_folder",
    "declared_rule",
    "judge_spend_after_decision",
    "no_margin_note",
    "planned_rank",
    "recorded_monitor",
    "recorded_rank",
    "sub_suite",
]

#: Accepted values of ``stop_when``.
STOP_WHEN = ("decided",)
METHOD = (
    "betting confidence sequence (Waudby-Smith & Ramdas 2024) on per-case paired "
    "differences of pass rates over the evaluated attempts, checked after every completed case"
)
#: The method with declared clusters ({field}: the metadata field).
CLUSTER_METHOD = (
    "betting confidence sequence (Waudby-Smith & Ramdas 2024) at the cluster level: one "
    "observation per completed cluster of the case metadata field {field}, the mean of its "
    "paired cases' differences of pass rates over the evaluated attempts (every cluster "
    "weighs the same), checked after every completed cluster"
)


@class_keyword_hints()
@dataclass(frozen=True)
class StopRule:
    """When to stop: level, declared correction, optional futility margin.

    Given to :func:`~agenticlens_frames.run_experiment` with ``stop_when="decided"``: a
    candidate is decided when its anytime-valid interval against the baseline excludes 0
    (or, with ``margin``, lies within ±margin, 0 ≤ margin ≤ 1). With more than one
    candidate a correction must be declared, here or by the run's comparisons; an unset
    ``alpha`` or ``correction`` is the run's declared one (:func:`declared_rule`). The
    run's final analysis declares the rule's correction and α, and the cluster its
    sequence ran by, even when they were given only here or by ``comparisons=``
    (:func:`~agenticlens_frames.paired.settings.run_comparisons`).

    Examples
    --------
    Two candidates that always pass against a baseline that never does are decided long
    before the 40 cases are used:

    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "agents.py").write_text(
    ...     "def base(text):\\n    return {'output': 'no'}\\n"
    ...     "def good(text):\\n    return {'output': 'yes'}\\n"
    ...     "best = good\\n")
    >>> _ = (folder / "manifest.json").write_text(json.dumps({
    ...     "name": "stop", "version": "1", "baseline_variant_id": "base", "trial_count": 1,
    ...     "variants": [{"id": v, "name": v, "target_kind": "python", "target": f"agents.py:{v}"}
    ...                  for v in ("base", "good", "best")]}))
    >>> _ = (folder / "suite.json").write_text(json.dumps({"name": "s", "version": "1", "cases": [
    ...     {"id": f"c{i}", "name": f"case {i}", "input": f"q{i}", "expected_contains": ["yes"]}
    ...     for i in range(40)]}))
    >>> from agenticlens_frames import run_experiment
    >>> result = run_experiment(folder / "manifest.json", folder / "suite.json",
    ...                         stop_when="decided", stop_rule=StopRule(correction="holm"),
    ...                         progress=False)
    >>> stop = result.stopping
    >>> stop["stopped_early"], stop["cases_used"], len(result.run.cases)
    (True, 11, 11)
    >>> [(c["candidate_variant_id"], c["decision"]) for c in stop["candidates"]]
    [('good', 'better'), ('best', 'better')]
    """

    #: None: the α the run's comparisons declare, else 0.05 (:func:`declared_rule`).
    alpha: float | None = None
    #: The declared correction; None (nothing declared) is allowed with one candidate.
    correction: str | None = None
    margin: float | None = None


def declared_rule(
    rule: StopRule | None, declared: str | None = None, alpha: float | None = None
) -> StopRule:
    """The rule under the run's declared correction and α (its comparisons').

    A rule without a correction or α takes the declared ones (α 0.05 when none is
    declared); a rule with others is refused, since the stopping statement names the
    declared correction and the verdicts use the declared α.

    Raises
    ------
    InputError
        The rule's correction or α is not the declared one.

    Examples
    --------
    >>> declared_rule(StopRule(), "holm", 0.01)
    StopRule(alpha=0.01, correction='holm', margin=None)
    >>> declared_rule(StopRule(correction="none"), "holm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: stop_rule.correction: 'none' is not the declared ...
    """
    rule = rule or StopRule()
    if rule.alpha is None:
        rule = dataclasses.replace(rule, alpha=0.05 if alpha is None else alpha)
    elif alpha is not None and rule.alpha != alpha:
        raise InputError(
            f"alpha {rule.alpha!r} is not the declared alpha {alpha!r} of the run's "
            "comparisons, which its verdicts use",
            location="stop_rule.alpha",
            hint=f"pass StopRule(alpha={alpha!r}) or leave its alpha unset",
        )
    if declared is None or rule.correction == declared:
        return rule
    if rule.correction is None:
        return dataclasses.replace(rule, correction=declared)
    raise InputError(
        f"{rule.correction!r} is not the declared correction {declared!r} of the run's "
        "comparisons: the stopping statement would name a correction the run did not declare",
        location="stop_rule.correction",
        hint=f"pass StopRule(correction={declared!r}) or leave its correction unset",
    )


def no_margin_note(margin: float | None) -> str:
    """The note said before a run whose rule has no margin (or a margin of 0) calls
    anything: it never decides a candidate no different from the baseline.

    A margin of 0 is none: no interval lies within (-0, 0).

    Examples
    --------
    >>> no_margin_note(None)[:62]
    'without --stop-margin the run stops only once every candidate '
    >>> no_margin_note(0.0)[:24]
    'with --stop-margin 0 the'
    """
    how = "with --stop-margin 0" if margin == 0 else "without --stop-margin"
    return (
        f"{how} the run stops only once every candidate is decided better or worse; a "
        "candidate no different from the baseline is never decided, so such a run goes to "
        "the end (--stop-margin 0.05, in Python StopRule(margin=0.05), also stops when a "
        "candidate is shown within ±5 pp)."
    )


def check_stop_request(
    manifest: ManifestSpec,
    stop_when: str,
    rule: StopRule | None,
    *,
    suite: SuiteSpec | None = None,
    cluster: str | None = None,
) -> None:
    """Refuse an early-stopping request that cannot be honoured, before any call.

    Declared case clusters are honoured (the sequence runs at the cluster level,
    :class:`StopMonitor`).

    Parameters
    ----------
    suite, cluster
        The suite and the case metadata field the comparisons declare clusters by: with
        both, a case without a value of the field is refused here, as the fixed-sample
        statistics refuse it (:class:`StopMonitor` refuses it too, when built).

    Raises
    ------
    InputError
        ``stop_when`` not one of :data:`STOP_WHEN`, a margin outside [0, 1], several
        candidates without a declared multiple-comparison correction (the per-candidate
        level would be a guess), or a case without a cluster value.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> three = SimpleNamespace(variants=("a", "b", "c"), path="manifest.yaml")
    >>> check_stop_request(three, "decided", StopRule(correction="holm"))
    >>> check_stop_request(three, "decided", StopRule())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: manifest.yaml: stop_when='decided' with several \
candidates needs a declared multiple-comparison correction (...)
    """
    if stop_when not in STOP_WHEN:
        raise InputError(
            f"stop_when must be one of {', '.join(STOP_WHEN)} (or None), got {stop_when!r}"
        )
    if rule is not None and rule.alpha is not None:
        # The one rule for an α (<= 0.5): StopRule(alpha=0.95), a confidence level given
        # for α, stopped a run on differences no test would call.
        check_alpha(rule.alpha, location="stop_rule.alpha")
    margin = (rule or StopRule()).margin
    if margin is not None:
        check_number(margin, "the stop margin", location="stop_rule.margin")
        # As --stop-margin's bounds. Past 1 the interval of a candidate with no paired
        # case, [-1, 1], already lies within ±margin: it was decided on no data.
        if not 0 <= margin <= 1:
            raise InputError(
                f"the stop margin must lie in [0, 1] (a difference in pass rate), got {margin!r}",
                location="stop_rule.margin",
            )
    if suite is not None and cluster is not None:
        _cluster_labels(suite, cluster)
    if (rule or StopRule()).correction is None and len(manifest.variants) > 2:
        raise InputError(
            "stop_when='decided' with several candidates needs a declared "
            "multiple-comparison correction",
            file=manifest.path,
            hint="declare comparisons: {correction: holm} in the manifest, or pass "
            "--correction (none, bonferroni, holm or benjamini_hochberg)",
        )


def _cluster_labels(suite: SuiteSpec, cluster: str) -> Any:
    """Each case's cluster label, suite order; a case without one is refused (naming the
    suite and the cases)."""
    from ..paired.dimensions import metadata_cluster_labels

    return metadata_cluster_labels(
        suite.case_ids,
        [c.metadata for c in suite.cases],
        cluster,
        file=suite.path,
        location="cases",
    )


def case_rank(suite: SuiteSpec, seed: int | None) -> dict[str, int]:
    """Planned position of each case: a permutation seeded by the manifest's seed (0 if
    unset), so the cases seen first are a random sample of the suite.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> suite = S(cases=[S(id="a"), S(id="b"), S(id="c")])
    >>> sorted(case_rank(suite, 1).values())
    [0, 1, 2]
    """
    order = np.random.default_rng(0 if seed is None else seed).permutation(len(suite.cases))
    return {suite.cases[int(i)].id: pos for pos, i in enumerate(order)}


def cluster_rank(suite: SuiteSpec, seed: int | None, labels: Sequence[Any]) -> dict[str, int]:
    """Planned position of each case when the cases are clustered: the clusters in a
    permutation seeded by the manifest's seed (0 if unset), every case of a cluster (in
    suite order) before the next cluster starts.

    ``labels`` holds each case's cluster label, in suite order. The permutation is of the
    clusters in the sorted order of their labels' text (as
    :func:`~agenticlens_frames.stats_paired.cluster_codes` numbers them), so each cluster
    is equally likely at every place: the clusters seen first are a random sample of the
    suite's clusters. (Ordering clusters by their first case in a random case order would
    bring large clusters first.)

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> suite = S(cases=[S(id="a"), S(id="b"), S(id="c"), S(id="d")])
    >>> rank = cluster_rank(suite, 1, ["x", "y", "x", "z"])
    >>> order = sorted(rank, key=rank.__getitem__)
    >>> abs(order.index("a") - order.index("c"))  # a cluster's cases run together
    1
    """
    from ..stats_paired import cluster_codes

    if not suite.cases:
        return {}
    codes = cluster_codes(list(labels), len(suite.cases))
    order = np.random.default_rng(0 if seed is None else seed).permutation(int(codes.max()) + 1)
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    planned = sorted(range(len(suite.cases)), key=lambda i: (int(place[codes[i]]), i))
    return {suite.cases[i].id: pos for pos, i in enumerate(planned)}


def planned_rank(
    suite: SuiteSpec, seed: int | None, labels: Sequence[Any] | None = None
) -> dict[str, int]:
    """Planned position of each case under early stopping: :func:`case_rank`, or with
    each case's cluster label (suite order) :func:`cluster_rank`."""
    return case_rank(suite, seed) if labels is None else cluster_rank(suite, seed, labels)


def recorded_rank(manifest: ManifestSpec, suite: SuiteSpec, stopping: Any) -> dict[str, int] | None:
    """The planned order a run folder's cases ran in, from its recorded early-stopping
    settings (``run.json``'s ``stopping``; None: suite order, without early stopping).

    A load of the folder needs it: a failed trial's cases past its failure in that order
    were not called (:class:`~.order.FailedTrials`).
    """
    if not isinstance(stopping, dict) or stopping.get("stop_when") is None:
        return None
    cluster = stopping.get("cluster")
    labels = None if cluster is None else _cluster_labels(suite, str(cluster))
    return planned_rank(suite, manifest.random_seed, labels)


def recorded_monitor(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    stopping: Any,
    *,
    trial_mode: bool,
    declared: str | None,
    file: Any,
) -> StopMonitor | None:
    """The monitor of a run folder's recorded early-stopping settings (``run.json``'s
    ``stopping``; None without early stopping), for a load of the folder to replay its
    journal into the run's sequence and give the run's tables and stopping block.

    The settings hold the rule's α, margin, cluster and the correction it applied (and,
    since it is recorded, the declared one); ``declared`` is the run's declared correction
    (:func:`declared_in_folder`), which the block names. One that would not give the
    recorded applied correction is taken as unknown: the applied one is named.

    Raises
    ------
    InputError
        Damaged settings, naming ``file`` (``run.json``).

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> manifest = load_manifest("data/support/manifest.yaml")
    >>> suite = load_suite("data/support/suite.yaml")
    >>> recorded_monitor(manifest, suite, None, trial_mode=True, declared=None, file="run.json")
    >>> recorded_monitor(manifest, suite, {"stop_when": "decided", "alpha": "x"},
    ...                  trial_mode=True, declared=None, file="run.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: run.json: stopping: damaged early-stopping settings...
    """
    if not isinstance(stopping, dict) or stopping.get("stop_when") is None:
        return None
    alpha, margin = stopping.get("alpha"), stopping.get("margin")
    applied, cluster = stopping.get("correction"), stopping.get("cluster")
    number = (int, float)
    if (
        not isinstance(alpha, number)
        or not (margin is None or isinstance(margin, number))
        or applied not in CORRECTIONS
        or not (cluster is None or isinstance(cluster, str))
    ):
        raise InputError(
            f"damaged early-stopping settings {stopping!r}",
            file=file,
            location="stopping",
            hint="restore run.json from the run that wrote it",
        )
    candidates = len(manifest.variant_ids) - 1
    # (None: nothing declared, which a single candidate allows; it applies none.)
    if not (declared is None or declared in CORRECTIONS) or (
        applied_correction(candidates, declared or "none") != applied
    ):
        declared = applied
    rule = StopRule(alpha=float(alpha), correction=declared, margin=margin)
    return StopMonitor(manifest, suite, rule, trial_mode=trial_mode, cluster=cluster)


def declared_in_folder(
    stopping: Any, stop_record: dict[str, Any] | None, manifest_declared: str | None
) -> str | None:
    """The declared correction of a run folder with early stopping, for its load: the
    ``stop`` record's (the session that stopped the run), else ``run.json``'s recorded
    ``declared_correction`` (folders written before it record only the applied correction),
    else the manifest's ``comparisons:`` (``manifest_declared``).

    Examples
    --------
    >>> recorded = {"correction": "bonferroni", "declared_correction": "holm"}
    >>> declared_in_folder(recorded, None, None)
    'holm'
    >>> declared_in_folder({"correction": "bonferroni"}, None, "bonferroni")  # earlier folder
    'bonferroni'
    >>> declared_in_folder(recorded, {"declared_correction": "benjamini_hochberg"}, None)
    'benjamini_hochberg'
    """
    for source in (stop_record, stopping):
        if isinstance(source, dict) and "declared_correction" in source:
            value = source["declared_correction"]
            if value is None or isinstance(value, str):
                return value
    return manifest_declared


def sub_suite(suite: SuiteSpec, case_ids: set[str]) -> SuiteSpec:
    """The suite restricted to ``case_ids`` (suite order, re-indexed from 0)."""
    kept = [c for c in suite.cases if c.id in case_ids]
    return dataclasses.replace(
        suite, cases=tuple(dataclasses.replace(c, index=i) for i, c in enumerate(kept))
    )


class StopMonitor:
    """Feeds completed cases, in their planned order, to one sequence per candidate.

    ``add`` takes journal ``attempt`` records (from any thread); ``should_stop`` tells
    the scheduler to start nothing new. With ``cluster`` (a case metadata field) the
    sequence's unit is the cluster (:func:`cluster_rank`): it is fed once per completed
    cluster, each candidate's value being the mean difference over the cluster's paired
    cases (a cluster with none is skipped by that candidate's sequence, as an unpaired
    case is without clusters).

    Raises
    ------
    InputError
        A recorded variant; with ``cluster``, a case without a value of the field (as the
        fixed-sample statistics refuse it).
    """

    def __init__(
        self,
        manifest: ManifestSpec,
        suite: SuiteSpec,
        rule: StopRule,
        *,
        trial_mode: bool = True,
        cluster: str | None = None,
    ) -> None:
        kinds = {v.id: v.target_kind for v in manifest.variants}
        recorded = [v for v, k in kinds.items() if k == "recorded"]
        if recorded:
            raise InputError(
                "stop_when='decided' needs every variant to be live; "
                f"{', '.join(recorded)} {'is' if len(recorded) == 1 else 'are'} recorded",
                file=manifest.path,
                hint="drop --stop-when, or make every variant a python or http target",
            )
        self.baseline = manifest.baseline_variant_id
        self.variants = list(manifest.variant_ids)
        self.candidates = [v for v in self.variants if v != self.baseline]
        self.trials = manifest.trial_count
        rule = declared_rule(rule)  # its α, when unset (run_experiment sets the declared one)
        self.rule = rule
        #: The rule's α (set by declared_rule).
        self.alpha = 0.05 if rule.alpha is None else rule.alpha
        self.applied_correction = applied_correction(
            len(self.candidates), rule.correction or "none"
        )
        self.alpha_each = candidate_alpha(
            self.alpha, len(self.candidates), rule.correction or "none"
        )
        self.sequence = BettingConfidenceSequence(self.alpha_each, n=max(len(self.candidates), 1))
        #: The non-inferiority gate's own anytime-valid bound: a one-sided lower sequence at
        #: the unsplit α over the same units in the same order (the gate asks one side, and
        #: requiring every candidate to pass is an intersection-union test: no split). A
        #: confidence sequence holds at any stopping time, the rule's included.
        self.gate_sequence = BettingConfidenceSequence(
            self.alpha, n=max(len(self.candidates), 1), one_sided=True
        )
        #: The case metadata field the sequence clusters by (None: every case a unit).
        self.cluster = cluster
        labels = None if cluster is None else _cluster_labels(suite, cluster)
        rank = planned_rank(suite, manifest.random_seed, labels)
        self.order = sorted(rank, key=rank.__getitem__)
        # Each case's unit: itself, or its cluster (whose cases are consecutive in order).
        unit = (
            {c.id: c.id for c in suite.cases}
            if labels is None
            else {c.id: label for c, label in zip(suite.cases, labels, strict=True)}
        )
        #: Planned position just past each unit (a case, or a cluster's last case).
        self.unit_ends: list[int] = [
            pos + 1
            for pos in range(len(self.order))
            if pos + 1 == len(self.order) or unit[self.order[pos]] != unit[self.order[pos + 1]]
        ]
        #: Units fed to the sequence (cases, or clusters).
        self.units_used = 0
        #: Planned cases complete in a row from the first (the admission rule's mark; with
        #: clusters it runs ahead of ``position`` inside the cluster being completed).
        self.complete_prefix = 0
        #: Per candidate: paired cases in the units fed (with clusters; else ``sequence.t``).
        self._paired_cases = np.zeros(len(self.candidates), dtype=np.int64)
        self.trial_mode = trial_mode
        #: Per attempt: passed, or None for a failed trial's invalid payload (not data).
        self.outcome: dict[tuple[str, int, str], bool | None] = {}
        #: The failed trials, in the planned order: the scheduler's rule for which cases
        #: are still run, and this one's for which are data. A trial gives no data from its
        #: failing case on; earlier cases keep its attempts: the sequence may have used
        #: them already, and an online sequence cannot take data back.
        self.failed = FailedTrials(rank)
        #: Cases fed to the sequence, whole units in planned order: the cases used.
        self.position = 0
        self.decisions: list[str | None] = [None] * len(self.candidates)
        self.lower = np.full(len(self.candidates), -1.0)
        self.upper = np.full(len(self.candidates), 1.0)
        self.stopped_after: int | None = None
        self.planned_attempts = len(self.variants) * self.trials * len(suite.cases)
        self._lock = threading.Lock()
        #: Planned position of each case: the scheduler's order (case by case, or cluster
        #: by cluster).
        self.rank = rank
        #: Called after every journaled attempt (the scheduler's wake-up).
        self.on_advance: Callable[[], None] | None = None

    @property
    def should_stop(self) -> bool:
        """Every candidate is decided."""
        return self.stopped_after is not None

    def add(self, record: dict[str, Any]) -> None:
        """Take one journal record; ``attempt`` records complete cases."""
        if record.get("type") != "attempt":
            return
        key = (record["variant"], int(record["trial"]), record["case"])
        score = record.get("score")
        failed_trial = record["status"] == "invalid_payload" and self.trial_mode
        # A target error or timeout (or, in "case" mode, an invalid payload) is an evaluated
        # attempt that failed, as in the tables; a failed trial's is a placeholder.
        passed = None if failed_trial else record["status"] == "ok" and bool(score and score[0])
        with self._lock:
            self.outcome[key] = passed
            if failed_trial:
                self.failed.fail(*key)
            self._advance()
        if self.on_advance is not None:
            self.on_advance()

    def admits(self, concurrency: int) -> Callable[[Any], bool]:
        """The scheduler's admission rule: start a case only a few cases ahead of the
        last complete one, so a decision stops the run promptly even when scoring lags
        behind fast targets. (With clusters the mark is the last complete case, not the
        last cluster fed: the cluster being run must be let complete.)"""
        per_case = len(self.variants) * self.trials
        ahead = max(1, -(-concurrency // per_case)) + 1

        def admit(item: Any) -> bool:
            return self.rank[item.case.id] < self.complete_prefix + ahead

        return admit

    def _complete(self, case_id: str) -> bool:
        # (A case planned before a trial's failing case waits for that trial's attempt,
        # even if the failure is journaled first: it is data, and always run.)
        for v in self.variants:
            for t in range(1, self.trials + 1):
                if (v, t, case_id) not in self.outcome and not self.failed.past(v, t, case_id):
                    return False
        return True

    def _value(self, variant: str, case_id: str) -> float:
        """The variant's pass rate on the case over its evaluated attempts (NaN: none)."""
        passes = evaluated = 0
        for t in range(1, self.trials + 1):
            if self.failed.past(variant, t, case_id):
                continue  # the trial had failed before this case: its placeholders are not data
            # (None: the failing case's invalid payload, not data either)
            passed = self.outcome.get((variant, t, case_id))
            if passed is not None:
                passes += passed
                evaluated += 1
        return passes / evaluated if evaluated else float("nan")

    def _advance(self) -> None:
        while (
            self.stopped_after is None
            and self.complete_prefix < len(self.order)
            and self._complete(self.order[self.complete_prefix])
        ):
            self.complete_prefix += 1
            if self.complete_prefix == self.unit_ends[self.units_used]:
                self._feed(self.order[self.position : self.complete_prefix])

    def _feed(self, case_ids: list[str]) -> None:
        """Give the sequence one unit: a case, or a completed cluster's cases."""
        per_case = []
        for case_id in case_ids:
            base = self._value(self.baseline, case_id)
            # NaN (not paired: no evaluated attempt on one side) is skipped by its sequence.
            per_case.append([self._value(c, case_id) - base for c in self.candidates])
        if self.cluster is None:
            diffs = per_case[0]
        else:
            # The cluster's value: the mean over its paired cases (NaN: none paired).
            diffs = []
            for j in range(len(self.candidates)):
                paired = [d[j] for d in per_case if not np.isnan(d[j])]
                self._paired_cases[j] += len(paired)
                diffs.append(sum(paired) / len(paired) if paired else float("nan"))
        self.sequence.update(diffs or [float("nan")])
        self.gate_sequence.update(diffs or [float("nan")])
        self.position = self.complete_prefix
        self.units_used += 1
        low, high = self.sequence.interval()
        self.lower, self.upper = low[: len(self.candidates)], high[: len(self.candidates)]
        # A sequence that has seen no unit keeps [-1, 1]: never decided on no data.
        self.decisions = [
            decide(float(lo), float(hi), self.rule.margin)
            for lo, hi in zip(self.lower, self.upper, strict=True)
        ]
        if self.candidates and all(d is not None for d in self.decisions):
            self.stopped_after = self.position

    def used_cases(self) -> list[str]:
        """The cases the sequence has seen, planned order."""
        return self.order[: self.position]

    def paired_cases(self) -> list[int]:
        """Per candidate: the cases its sequence has seen (paired with the baseline); with
        clusters, the paired cases of the clusters fed."""
        if self.cluster is not None:
            return [int(n) for n in self._paired_cases]
        return [int(n) for n in self.sequence.t[: len(self.candidates)]]

    def paired_clusters(self) -> list[int]:
        """Per candidate: the clusters its sequence has seen (with a paired case)."""
        return [int(n) for n in self.sequence.t[: len(self.candidates)]]

    def _counts(self) -> tuple[int, int, int]:
        """Attempts run and attempts a failed trial left unrun (not saved by stopping),
        counted up to the decision point: over the cases used, in planned order; and how
        many of the latter ran all the same.

        After a stop, attempts of later cases that were already started still run and
        are journaled (how many depends on when the scoring thread saw the deciding case,
        not on the data); counting them made ``attempts_run`` differ by a few between
        identical runs. Up to the decision point the counts are a function of the cases
        in their planned order only, as the sequence is. Without a stop every case is
        used. For the same reason a failed trial's cases past its failure (planned
        order, :class:`~.order.FailedTrials`) are counted as left unrun even when they had
        been started before the failure was known: whether they had is timing, and they
        are not data either way. Those are the third number.
        """
        used = set(self.order[: self.position]) if self.stopped_after is not None else None
        # A trial's failure is counted where the sequence saw it: an invalid payload in a
        # case past the decision point does not fail the trial for these counts.
        failed = FailedTrials(self.rank)
        for (v, t, case_id), passed in self.outcome.items():
            if passed is None and (used is None or case_id in used):
                failed.fail(v, t, case_id)
        run = ran_past = 0
        for v, t, case_id in self.outcome:
            if failed.past(v, t, case_id):
                ran_past += 1
            elif used is None or case_id in used:
                run += 1
        skipped = sum(
            1 for v, t in failed.first for case_id in self.order if failed.past(v, t, case_id)
        )
        return run, skipped, ran_past

    def settings(self) -> dict[str, Any]:
        """What decides this run's work order and its decisions, JSON-ready: recorded in
        the run folder (``run.json``'s ``stopping``) and compared on resume
        (:func:`check_resumed_stopping`).

        ``cluster`` decides the order the cases run in and the sequence's unit; ``alpha``,
        the correction the rule applies (``correction``: ``bonferroni`` or ``none``, not
        the declared one, which only the fixed-sample verdicts use beyond that) and
        ``margin`` decide when a candidate is decided. Of the run's comparisons (the
        manifest's ``comparisons:`` block, which the manifest's hash leaves out, with
        ``comparisons=`` or the command line's options) the rule reads these three alone:
        ``cluster``, ``alpha`` and whether ``correction`` splits α; ``margin`` is the
        rule's own. The family it monitors (every candidate against the baseline), the
        planned order's seed and the trial count are the manifest's top-level variants,
        ``baseline_variant_id``, ``random_seed`` and ``trial_count``, which the manifest's
        hash covers; the comparisons' ``family``, method, evaluators, gates and bootstrap
        settings are the final analysis's. ``invalid_payload`` is recorded on its own.

        ``declared_correction`` is the declared correction (``correction`` is the applied
        one): recorded so that a load of the folder names it, and declares it in the final
        analysis, even when it was given only in Python (``comparisons=``, ``stop_rule``)
        and no session journaled a ``stop`` record; it is not compared on resume
        (:data:`_RESUMED`), since beyond the split of α it decides no stop. A resume that
        declares another one records it (:class:`~.journal.RunFolder`).
        """
        return {
            "stop_when": "decided",
            "cluster": self.cluster,
            "alpha": self.alpha,
            "correction": self.applied_correction,
            "declared_correction": self.rule.correction,
            "margin": self.rule.margin,
        }

    def summary(self, attempts_done: int) -> dict[str, Any]:
        """JSON-ready: when and why the run stopped (or did not), and what it saved.

        ``correction`` is the correction the rule applied across candidates, ``bonferroni``
        or ``none`` (:func:`~agenticlens_frames.stats_sequential.applied_correction`);
        ``declared_correction`` the experiment's, which the fixed-sample verdicts use.
        ``attempts_run`` and ``attempts_skipped`` are counted up to the decision point
        (the cases used, :meth:`_counts`), so identical runs give identical counts;
        ``attempts_after_decision`` (of ``attempts_done``, the attempts journaled) had
        already been started when the stop took effect, and ran; ``attempts_saved`` is
        the rest of the plan, the attempts never called (not those a failed trial left
        unrun, ``attempts_skipped``: a failed trial's cases planned after its failure,
        counted there even when one had been started before the failure was known, since
        whether it had is timing). The four add up to ``attempts_planned``. With
        clusters the block adds ``unit`` (``"cluster"``), ``cluster`` (the metadata
        field), ``clusters_used`` of ``clusters_planned`` and per candidate
        ``paired_clusters``; ``cases_used`` and ``paired_cases`` still count cases.
        Per candidate ``gate_lower`` is the non-inferiority gate's anytime-valid bound:
        the lower end of a one-sided confidence sequence at ``alpha`` (not split across
        candidates) over the same units in the same order, at the same decision point
        (:attr:`gate_sequence`; :func:`~agenticlens_frames.paired.gate.noninferiority_gate`).
        """
        stopped = self.stopped_after is not None
        run, skipped, ran_past = self._counts()
        # (A failed trial's attempts past its failure that ran are counted as skipped.)
        after = max(attempts_done - run - ran_past, 0) if stopped else 0
        paired = self.paired_cases()
        clustered = self.cluster is not None
        used = f"{self.position} of {len(self.order)} cases"
        if clustered:
            used = f"{self.units_used} of {len(self.unit_ends)} clusters ({used})"
        block: dict[str, Any] = {
            "stop_when": "decided",
            "stopped_early": stopped,
            "cases_used": self.position,
            "cases_planned": len(self.order),
            "attempts_planned": self.planned_attempts,
            "attempts_run": run,
            # The attempts never called: the plan past the decision point less those that
            # were already started when the stop took effect (they ran, and cost).
            "attempts_saved": (
                max(self.planned_attempts - run - skipped - after, 0) if stopped else 0
            ),
            "attempts_skipped": skipped,
            # Started before the stop took effect: journaled, not in the tables; how many
            # depends on timing (with attempts_saved, the numbers of the block that do).
            "attempts_after_decision": after,
            "reason": (
                f"every candidate decided after {used}"
                if stopped
                else "not every candidate was decided, so the run was not stopped early"
            ),
            "alpha": self.alpha,
            "correction": self.applied_correction,
            "declared_correction": self.rule.correction,
            "alpha_per_candidate": self.alpha_each,
            "margin": self.rule.margin,
            "method": CLUSTER_METHOD.format(field=repr(self.cluster)) if clustered else METHOD,
            "candidates": [
                {
                    "candidate_variant_id": c,
                    "decision": d,
                    "lower": float(lo),
                    "upper": float(hi),
                    "paired_cases": n,
                    # The gate's bound (one-sided, at ``alpha``), at the same decision point.
                    "gate_lower": float(gate),
                }
                for c, d, lo, hi, n, gate in zip(
                    self.candidates,
                    self.decisions,
                    self.lower,
                    self.upper,
                    paired,
                    # (one row even without candidates, as the rule's sequence)
                    self.gate_sequence.interval()[0][: len(self.candidates)],
                    strict=True,
                )
            ],
        }
        if clustered:
            # Keys added only with clusters: an unclustered block stays as it was.
            block.update(
                unit="cluster",
                cluster=self.cluster,
                clusters_used=self.units_used,
                clusters_planned=len(self.unit_ends),
            )
            for entry, n in zip(block["candidates"], self.paired_clusters(), strict=True):
                entry["paired_clusters"] = n
        return block


#: The fields of each row of the stopping block's ``judge_spend_after_decision``.
JUDGE_SPEND_FIELDS = (
    "variant_id",
    "attempts",
    "judge_scores",
    "unavailable_scores",
    "priced_scores",
    "spent_cost_usd",
    "input_tokens",
    "output_tokens",
)


def judge_spend_after_decision(
    variant_ids: Sequence[str],
    attempts: Iterable[tuple[str, list[tuple[str, bool, dict[str, Any]]]]],
) -> list[dict[str, Any]]:
    """Per variant (manifest order, those with judge scores): what the judges of the
    attempts past the decision point did and cost, JSON-ready.

    After an early stop the tables hold the cases the sequence used, but the attempts
    already started when the stop took effect ran and, when their cases name an LLM
    judge, were judged and billed: counted in the judges' lines beside the analysed
    cases' figures (:func:`~agenticlens_frames.analysis.judge_cost_lines`), as those are
    (:func:`~agenticlens_frames.judge_noise.variant_judge_totals`: every answered call
    once), or the spend read low. The same rows count the judges of a run's failed trials
    (:attr:`~agenticlens_frames.frames.ExperimentRun.judge_spend_failed_trials`), which
    are not in the tables either.

    Parameters
    ----------
    variant_ids
        The manifest's variants, in its order.
    attempts
        ``(variant_id, judge scores)`` of each journaled attempt of the cases the sequence
        did not use, its scores as
        :func:`~agenticlens_frames.runner.journal.journaled_judge_scores` reads them
        (``(case_id, skipped, metadata)``; the journal is read by the caller, so this module
        does not import the journal, which imports it).

    Returns
    -------
    list of dict
        :data:`JUDGE_SPEND_FIELDS` per variant: its attempts there, judge scores,
        unavailable and priced scores, ``spent_cost_usd`` (None: unpriced) and tokens.

    Examples
    --------
    >>> rows = judge_spend_after_decision(
    ...     ["base", "new"], [("new", [("c9", False, {"judge_spent_cost_usd": 0.002})])]
    ... )
    >>> [(r["variant_id"], r["attempts"], r["judge_scores"], r["spent_cost_usd"]) for r in rows]
    [('new', 1, 1, 0.002)]
    """
    from ..judge_noise import variant_judge_totals

    scores: dict[str, list[tuple[str, bool, dict[str, Any]]]] = {}
    counts: dict[str, int] = {}
    for variant, judged in attempts:
        counts[variant] = counts.get(variant, 0) + 1
        scores.setdefault(variant, []).extend(judged)
    rows = []
    for variant in variant_ids:
        if not scores.get(variant):
            continue
        totals = variant_judge_totals(variant, scores[variant])
        rows.append({**totals, "attempts": counts[variant]})
    return [{key: row[key] for key in JUDGE_SPEND_FIELDS} for row in rows]


#: Each recorded early-stopping setting: its command-line option, how the error names it
#: (with its Python names), and what it decides in a run that is resumed.
_RESUMED = {
    "stop_when": (
        "--stop-when",
        "--stop-when (stop_when)",
        "the order the cases run in and when the run stops",
    ),
    "cluster": (
        "--cluster",
        "--cluster (comparisons' cluster)",
        "the order the cases run in, cluster by cluster, and the sequence's unit",
    ),
    "alpha": (
        "--alpha",
        "the level α (--alpha; stop_rule.alpha or comparisons' alpha)",
        "when a candidate is decided",
    ),
    "correction": (
        "--correction",
        "the correction the rule applies across candidates (from --correction; "
        "stop_rule.correction or comparisons' correction)",
        "each candidate's level: α split or not",
    ),
    "margin": (
        "--stop-margin",
        "--stop-margin (stop_rule.margin)",
        "when a candidate is decided within ±δ",
    ),
}


def _resumed_option(key: str, value: Any) -> str:
    """The command-line words that give the recorded ``value`` of setting ``key`` again.

    Examples
    --------
    >>> _resumed_option("cluster", None), _resumed_option("alpha", 0.1)
    ('without --cluster', '--alpha 0.1')
    """
    option = _RESUMED[key][0]
    if key == "correction" and value == "bonferroni":
        # What the rule applied: any declared correction but none splits α.
        return "a correction other than none (e.g. --correction holm)"
    if value is None:
        return f"without {option}"
    return f"{option} {value}"


def _resumed_options(settings: dict[str, Any] | None, keys: list[str]) -> str:
    """How to give the recorded ``settings`` again: those of ``keys``, or all of them when
    early stopping itself was dropped."""
    if settings is None:
        return "without --stop-when"
    if "stop_when" in keys:
        # (An applied correction of none is also what one candidate gets: not worth saying.)
        keys = [k for k in _RESUMED if settings.get(k) not in (None, "none")]
    return ", ".join(_resumed_option(k, settings.get(k)) for k in keys)


def check_resumed_stopping(
    recorded: dict[str, Any] | None, given: dict[str, Any] | None, *, file: Any
) -> None:
    """Refuse to resume a run under early-stopping settings other than its own.

    A resumed run replays its journal into the sequence and continues it (the sequence is
    a function of the cases in their planned order): under another order (``--stop-when``
    added or dropped, another ``--cluster``) the journaled cases are not the planned
    prefix of the new order, and under another level, correction or margin the cases
    already run were checked under one rule and the rest would be under another. Either
    way the run's statement would hold for neither design.

    Parameters
    ----------
    recorded
        ``run.json``'s ``stopping`` (None: started without early stopping).
    given
        This session's :meth:`StopMonitor.settings` (None: no early stopping).
    file
        The folder's ``run.json`` (the error names it).

    Raises
    ------
    InputError
        A setting differs: it names each one, with the recorded and the given value, and
        the options that resume the run.

    Examples
    --------
    >>> started = {"stop_when": "decided", "cluster": None, "alpha": 0.05,
    ...            "correction": "bonferroni", "margin": None}
    >>> check_resumed_stopping(started, dict(started), file="run/run.json")
    >>> check_resumed_stopping(started, {**started, "cluster": "topic"},
    ...                        file="run/run.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: run/run.json: this run was started with other \
early-stopping settings: --cluster (comparisons' cluster) was not set, now 'topic' (it ...
    """
    if recorded == given:
        return
    if recorded is not None and not isinstance(recorded, dict):
        raise InputError(
            f"stopping: expected the recorded early-stopping settings, got {recorded!r}",
            file=file,
            hint="restore run.json, or start a new --run-dir",
        )
    if recorded is None or given is None:
        keys = ["stop_when"]
    else:
        # A key this version does not record (a newer one's) is not compared.
        keys = [k for k in _RESUMED if k in recorded and recorded.get(k) != given.get(k)]
        if not keys:
            return
    changes = []
    for key in keys:
        _, label, effect = _RESUMED[key]
        was = _setting((recorded or {}).get(key))
        now = _setting((given or {}).get(key))
        changes.append(f"{label} was {was}, now {now} (it decides {effect})")
    raise InputError(
        "this run was started with other early-stopping settings: "
        + "; ".join(changes)
        + ". Resuming would mix the attempts run under one design with those of another",
        file=file,
        hint=f"resume with the settings it was started with ({_resumed_options(recorded, keys)}; "
        "where the manifest's comparisons: block was edited, as it was), or start a new run: "
        "a new --run-dir (in Python, a new run_dir or run_id)",
    )


def _setting(value: Any) -> str:
    return "not set" if value is None else repr(value)
