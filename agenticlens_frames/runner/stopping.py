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

The sequence is a function of the cases in their planned order only, so a resumed run
(same run folder) replays the journaled cases into the same sequence and continues it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, check_number
from ..formats.model import ManifestSpec, SuiteSpec
from ..stats_sequential import (
    BettingConfidenceSequence,
    applied_correction,
    candidate_alpha,
    decide,
)

__all__ = [
    "STOP_WHEN",
    "StopMonitor",
    "StopRule",
    "case_rank",
    "check_stop_request",
    "declared_rule",
    "sub_suite",
]

#: Accepted values of ``stop_when``.
STOP_WHEN = ("decided",)
METHOD = (
    "betting confidence sequence (Waudby-Smith & Ramdas 2024) on per-case paired "
    "differences of pass rates over the evaluated attempts, checked after every completed case"
)


@dataclass(frozen=True)
class StopRule:
    """When to stop: level, declared correction, optional futility margin.

    Given to :func:`~agenticlens_frames.run_experiment` with ``stop_when="decided"``: a
    candidate is decided when its anytime-valid interval against the baseline excludes 0
    (or, with ``margin``, lies within ±margin, 0 ≤ margin ≤ 1). With more than one
    candidate a correction must be declared, here or by the run's comparisons; an unset
    ``alpha`` or ``correction`` is the run's declared one (:func:`declared_rule`).

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


def check_stop_request(
    manifest: ManifestSpec, stop_when: str, rule: StopRule | None, *, cluster: str | None = None
) -> None:
    """Refuse an early-stopping request that cannot be honoured, before any call.

    Parameters
    ----------
    cluster
        The case metadata field the comparisons declare clusters by, if any.

    Raises
    ------
    InputError
        ``stop_when`` not one of :data:`STOP_WHEN`; several candidates without a declared
        multiple-comparison correction (the per-candidate level would be a guess); or
        declared case clusters: the sequence takes every case as an independent draw, so
        with correlated cases its error rate is not α (docs/statistics.md §13).

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
    >>> check_stop_request(three, "decided", StopRule(correction="holm"), cluster="topic")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: manifest.yaml: stop_when='decided' cannot honour \
the declared case clusters (topic): ...
    """
    if stop_when not in STOP_WHEN:
        raise InputError(
            f"stop_when must be one of {', '.join(STOP_WHEN)} (or None), got {stop_when!r}"
        )
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
    if cluster is not None:
        raise InputError(
            f"stop_when='decided' cannot honour the declared case clusters ({cluster}): its "
            "confidence sequence takes every case as an independent draw, and with cases "
            "correlated within a cluster it decides wrongly more often than alpha",
            file=manifest.path,
            hint="drop --stop-when, or the cluster declaration (comparisons: {cluster: …} "
            "or --cluster)",
        )
    if (rule or StopRule()).correction is None and len(manifest.variants) > 2:
        raise InputError(
            "stop_when='decided' with several candidates needs a declared "
            "multiple-comparison correction",
            file=manifest.path,
            hint="declare comparisons: {correction: holm} in the manifest, or pass "
            "--correction (none, bonferroni, holm or benjamini_hochberg)",
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


def sub_suite(suite: SuiteSpec, case_ids: set[str]) -> SuiteSpec:
    """The suite restricted to ``case_ids`` (suite order, re-indexed from 0)."""
    kept = [c for c in suite.cases if c.id in case_ids]
    return dataclasses.replace(
        suite, cases=tuple(dataclasses.replace(c, index=i) for i, c in enumerate(kept))
    )


class StopMonitor:
    """Feeds completed cases, in their planned order, to one sequence per candidate.

    ``add`` takes journal ``attempt`` records (from any thread); ``should_stop`` tells
    the scheduler to start nothing new.
    """

    def __init__(
        self,
        manifest: ManifestSpec,
        suite: SuiteSpec,
        rule: StopRule,
        *,
        trial_mode: bool = True,
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
        rank = case_rank(suite, manifest.random_seed)
        self.order = sorted(rank, key=rank.__getitem__)
        self.case_index = {c.id: c.index for c in suite.cases}
        self.trial_mode = trial_mode
        #: Per attempt: passed, or None for a failed trial's invalid payload (not data).
        self.outcome: dict[tuple[str, int, str], bool | None] = {}
        #: Per failed trial: suite index of its first invalid payload (the scheduler's rule
        #: for which cases are still run, as :meth:`Ledger.pending`).
        self.invalid_at: dict[tuple[str, int], int] = {}
        #: Per failed trial: planned position of its first invalid payload; the trial gives
        #: no data from that case on. Earlier cases keep its attempts: the sequence may
        #: have used them already, and an online sequence cannot take data back.
        self.failed_from: dict[tuple[str, int], int] = {}
        self.position = 0
        self.decisions: list[str | None] = [None] * len(self.candidates)
        self.lower = np.full(len(self.candidates), -1.0)
        self.upper = np.full(len(self.candidates), 1.0)
        self.stopped_after: int | None = None
        self.planned_attempts = len(self.variants) * self.trials * len(suite.cases)
        self._lock = threading.Lock()
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
                index = self.case_index[key[2]]
                self.invalid_at[key[:2]] = min(self.invalid_at.get(key[:2], index), index)
                rank = self.rank[key[2]]
                self.failed_from[key[:2]] = min(self.failed_from.get(key[:2], rank), rank)
            self._advance()
        if self.on_advance is not None:
            self.on_advance()

    def admits(self, concurrency: int) -> Callable[[Any], bool]:
        """The scheduler's admission rule: start a case only a few cases ahead of the
        last one the sequence has seen, so a decision stops the run promptly even when
        scoring lags behind fast targets."""
        per_case = len(self.variants) * self.trials
        ahead = max(1, -(-concurrency // per_case)) + 1

        def admit(item: Any) -> bool:
            return self.rank[item.case.id] < self.position + ahead

        return admit

    def _complete(self, case_id: str) -> bool:
        index = self.case_index[case_id]
        for v in self.variants:
            for t in range(1, self.trials + 1):
                failed_at = self.invalid_at.get((v, t))
                if (v, t, case_id) not in self.outcome and not (
                    failed_at is not None and failed_at <= index
                ):
                    return False
        return True

    def _value(self, variant: str, case_id: str) -> float:
        """The variant's pass rate on the case over its evaluated attempts (NaN: none)."""
        rank = self.rank[case_id]
        passes = evaluated = 0
        for t in range(1, self.trials + 1):
            failed_from = self.failed_from.get((variant, t))
            if failed_from is not None and failed_from <= rank:
                continue  # the trial had failed by this case: its placeholders are not data
            passed = self.outcome.get((variant, t, case_id))
            if passed is not None:
                passes += passed
                evaluated += 1
        return passes / evaluated if evaluated else float("nan")

    def _advance(self) -> None:
        while (
            self.stopped_after is None
            and self.position < len(self.order)
            and self._complete(self.order[self.position])
        ):
            case_id = self.order[self.position]
            base = self._value(self.baseline, case_id)
            # NaN (not paired: no evaluated attempt on one side) is skipped by its sequence.
            diffs = [self._value(c, case_id) - base for c in self.candidates]
            self.sequence.update(diffs or [float("nan")])
            self.position += 1
            low, high = self.sequence.interval()
            self.lower, self.upper = low[: len(self.candidates)], high[: len(self.candidates)]
            # A sequence that has seen no case keeps [-1, 1]: never decided on no data.
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
        """Per candidate: the cases its sequence has seen (paired with the baseline)."""
        return [int(n) for n in self.sequence.t[: len(self.candidates)]]

    def _skipped(self) -> int:
        """Attempts never to be run because their trial failed (not saved by stopping)."""
        return sum(
            1
            for (v, t), limit in self.invalid_at.items()
            for case_id, index in self.case_index.items()
            if index > limit and (v, t, case_id) not in self.outcome
        )

    def summary(self, attempts_done: int) -> dict[str, Any]:
        """JSON-ready: when and why the run stopped (or did not), and what it saved.

        ``correction`` is the correction the rule applied across candidates, ``bonferroni``
        or ``none`` (:func:`~agenticlens_frames.stats_sequential.applied_correction`);
        ``declared_correction`` the experiment's, which the fixed-sample verdicts use.
        ``attempts_saved`` counts the attempts the stop left unrun, not those a failed
        trial skipped (``attempts_skipped``).
        """
        stopped = self.stopped_after is not None
        skipped = self._skipped()
        paired = self.paired_cases()
        return {
            "stop_when": "decided",
            "stopped_early": stopped,
            "cases_used": self.position,
            "cases_planned": len(self.order),
            "attempts_planned": self.planned_attempts,
            "attempts_run": attempts_done,
            "attempts_saved": (
                max(self.planned_attempts - attempts_done - skipped, 0) if stopped else 0
            ),
            "attempts_skipped": skipped,
            "reason": (
                f"every candidate decided after {self.position} of {len(self.order)} cases"
                if stopped
                else "not every candidate was decided, so the run was not stopped early"
            ),
            "alpha": self.alpha,
            "correction": self.applied_correction,
            "declared_correction": self.rule.correction,
            "alpha_per_candidate": self.alpha_each,
            "margin": self.rule.margin,
            "method": METHOD,
            "candidates": [
                {
                    "candidate_variant_id": c,
                    "decision": d,
                    "lower": float(lo),
                    "upper": float(hi),
                    "paired_cases": n,
                }
                for c, d, lo, hi, n in zip(
                    self.candidates, self.decisions, self.lower, self.upper, paired, strict=True
                )
            ],
        }
