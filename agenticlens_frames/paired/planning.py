"""Planning from a pilot run: power, minimum detectable effect, trials for a precision."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats_paired
from .._deprecate import keyword_hints
from ..errors import InputError, check_count, check_number, check_proportion
from ..frames import ExperimentRun, require_run
from ..stats_paired import sps  # scipy.stats, imported on first use
from .comparisons import SMALL_SAMPLE, paired_analysis, unbounded_mde_note
from .dimensions import BOUNDED_UNITS, Evaluation, evaluation
from .settings import check_alpha, parse_comparisons, resolve_comparisons

__all__ = ["minimum_detectable_effect", "power_analysis", "trials_for_precision"]


def _pair_parts(ev: Evaluation, base: int, cand: int) -> dict[str, float]:
    """Pilot estimates for one candidate: Var(d), ω², σ_A², σ_B², mean attempts."""
    both = ~np.isnan(ev.values[base]) & ~np.isnan(ev.values[cand])
    d = ev.values[cand][both] - ev.values[base][both]
    parts: dict[str, float] = {"paired_items": int(both.sum())}
    parts["sd_difference"] = float(np.std(d, ddof=1)) if len(d) > 1 else math.nan
    for label, v in (("baseline", base), ("candidate", cand)):
        values, cases = ev.attempts_of(v)
        keep = both[cases]
        vc = stats_paired.variance_components(values[keep], cases[keep])
        parts[f"within_variance_{label}"] = vc.within_variance
        parts[f"trials_{label}"] = vc.mean_attempts
    noise = 0.0
    for label, v in (("baseline", base), ("candidate", cand)):
        k = ev.counts[v][both]
        w = parts[f"within_variance_{label}"]
        noise += float(np.mean(w / k)) if len(k) and math.isfinite(w) else 0.0
    var_d = parts["sd_difference"] ** 2
    parts["between_difference_variance"] = (
        max(0.0, var_d - noise) if math.isfinite(var_d) else math.nan
    )
    return parts


def _check_on_scale(value: float, ev: Evaluation, name: str) -> None:
    """Refuse a planned difference or half-width beyond the scale of a rate or score.

    A difference of rates or scores lies in [-1, 1]: ``effect=10`` or ``half_width=5``
    (meant as percentage points) gave power 1.0 or one trial, answers to a question no run
    can pose.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> _check_on_scale(0.1, evaluation(run, "passed"), "effect")
    >>> _check_on_scale(5, evaluation(run, "passed"), "half_width")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: half_width: half_width 5 is beyond the scale of a \
proportion difference (at most 1) (give it as a share: 0.05 for 5 pp)
    """
    if ev.unit in BOUNDED_UNITS and abs(value) > 1:
        raise InputError(
            f"{name} {value:g} is beyond the scale of a {ev.unit} difference (at most 1)",
            location=name,
            hint=f"give it as a share: {value / 100:g} for {value:g} pp",
        )


@keyword_hints
def power_analysis(
    run: ExperimentRun,
    *,
    effect: float | None = None,
    alpha: float | None = None,
    power: float | None = None,
    evaluator: str = "passed",
    trials: int | None = None,
    n_cases: int | None = None,
    family_size: int | None = None,
    distribution: str = "t",
    correction: str | None = None,
) -> pd.DataFrame:
    r"""Power, cases needed and minimum detectable effect for a paired design, from a pilot.

    The pilot (this run) gives, per candidate, the variance of per-case differences and
    its parts (Miller 2024): :math:`ω^2` (between cases) and the within-case variances
    :math:`σ_A^2, σ_B^2`. With K planned attempts per case and arm,
    :math:`σ_d^2 = ω^2 + σ_A^2/K + σ_B^2/K` (the pilot's own :math:`\operatorname{Var}(d)`
    when K is the pilot's).

    Tests are planned at the per-test level the analysis will use
    (:func:`~agenticlens_frames.stats_paired.per_test_alpha`: α / family size for
    Bonferroni, Holm and Benjamini–Hochberg, α for ``none``). When the manifest declares
    ``comparisons:``, α, the correction, the family size and the power (its ``power:``,
    0.8 when it names none) default to exactly what :func:`paired_comparisons` uses for
    this run, so a planned MDE is the one the analysis reports; otherwise α = 0.05 over a
    family of the candidates (Bonferroni) at 80 % power.

    Returns
    -------
    pandas.DataFrame
        Per candidate: pilot estimates, ``planned_trials``, ``planned_cases``,
        ``planned_sd``, ``alpha_per_test``, ``mde``, and with ``effect``: ``power`` at
        the planned size and ``cases_needed`` for the target power; ``note`` says why
        ``mde`` and ``power`` are NaN when they are (no variance to plan from; for
        ``mde`` also a ``power`` not above the per-test α, which every change meets), or
        that a one-trial pilot could not shrink the planned SD for more ``trials``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> pa = power_analysis(run, effect=0.1)
    >>> bool((pa["cases_needed"] > 0).all())
    True
    """
    run = require_run(run, "power_analysis")
    if distribution not in ("t", "normal"):
        raise InputError("distribution must be 't' or 'normal'", location="distribution")
    for name, count in (("trials", trials), ("n_cases", n_cases), ("family_size", family_size)):
        if count is not None:
            check_count(count, name, location=name)
    if effect is not None:
        check_number(effect, "effect", location="effect")
    ev = evaluation(run, evaluator)
    if effect is not None:
        _check_on_scale(effect, ev, "effect")
    ids = list(run.manifest.variant_ids)
    base = ids.index(run.manifest.baseline_variant_id)
    candidates = [i for i in range(len(ids)) if i != base]
    alpha, correction, m = _planned_family(run, ev.name, alpha, correction, family_size)
    alpha = check_alpha(alpha)
    if power is None:
        # The declared power, which the analysis's MDEs use (a manifest without one: 0.8).
        declared = parse_comparisons(run.manifest.comparisons, file=run.manifest.path)
        power = 0.8 if declared is None else declared.power
    check_proportion(power, "power", location="power")
    if m < 1:
        raise InputError(f"family_size must be >= 1, got {m}", location="family_size")
    level = stats_paired.per_test_alpha(alpha, correction, m)
    rows = []
    for cand in candidates:
        parts = _pair_parts(ev, base, cand)
        pilot_k = (parts["trials_baseline"] + parts["trials_candidate"]) / 2
        k = trials if trials is not None else None
        if k is None:
            sd = parts["sd_difference"]
            planned_k = pilot_k
        else:
            wa = parts["within_variance_baseline"]
            wb = parts["within_variance_candidate"]
            wa = 0.0 if not math.isfinite(wa) else wa
            wb = 0.0 if not math.isfinite(wb) else wb
            sd = math.sqrt(parts["between_difference_variance"] + (wa + wb) / k)
            planned_k = float(k)
        n = n_cases if n_cases is not None else int(parts["paired_items"])
        row = {
            "baseline_variant_id": ids[base],
            "candidate_variant_id": ids[cand],
            "evaluator": ev.name,
            **parts,
            "planned_trials": planned_k,
            "planned_cases": n,
            "planned_sd": sd,
            "alpha": alpha,
            "correction": correction,
            "family_size": m,
            "alpha_per_test": level,
            "target_power": power,
            "distribution": distribution,
            # A power not above the per-test level is met by every change, zero included:
            # no MDE to state (NaN, as paired_comparisons reports it), not an MDE of 0.
            "mde": (
                stats_paired.paired_mde(sd, n, level, power, distribution=distribution)
                if power > level
                else math.nan
            ),
            "effect": math.nan if effect is None else float(effect),
            "power": math.nan,
            "cases_needed": pd.NA,
            "note": _planning_note(int(parts["paired_items"]), n, sd),
        }
        if not row["note"] and not power > level:
            row["note"] = unbounded_mde_note(power, level)
        unseparated = not (
            math.isfinite(parts["within_variance_baseline"])
            and math.isfinite(parts["within_variance_candidate"])
        )
        if k is not None and k > pilot_k and unseparated and not row["note"]:
            # One attempt per case: its noise is inside the between-case spread, which
            # more trials would shrink by an unknown amount. Said, as it is not shrunk.
            row["note"] = (
                "one attempt per case in the pilot: its within-case noise cannot be told "
                "from the between-case spread, so the planned SD is the pilot's, not "
                f"shrunk for {k} trials (conservative: mde too large, power too small)"
            )
        if effect is not None:
            row["power"] = stats_paired.paired_power(
                effect, sd, n, level, distribution=distribution
            )
            needed = stats_paired.paired_sample_size(
                effect, sd, level, power, distribution=distribution
            )
            row["cases_needed"] = pd.NA if needed is None else needed
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame["cases_needed"] = frame["cases_needed"].astype("Int64")
    for column in ("baseline_variant_id", "candidate_variant_id"):
        frame[column] = pd.Categorical(frame[column], categories=ids)
    return frame


def _planning_note(pilot_cases: int, planned_cases: int, sd: float) -> str:
    """Why a planning row has no power or MDE, in words ("" when it has them).

    Examples
    --------
    >>> _planning_note(10, 10, 0.0)[:45]
    "the pilot's per-case differences do not vary "
    >>> _planning_note(10, 10, 0.3)
    ''
    """
    if pilot_cases < 2 or not math.isfinite(sd):
        return "fewer than two paired cases in the pilot: no variance to plan from"
    if planned_cases < 2:
        return "fewer than two planned cases: no test to plan"
    if sd == 0:
        return (
            "the pilot's per-case differences do not vary (SD 0, every case moved alike): "
            "no power or detectable effect can be planned from it"
        )
    return ""


def _planned_family(
    run: ExperimentRun,
    evaluator: str,
    alpha: float | None,
    correction: str | None,
    family_size: int | None,
) -> tuple[float, str, int]:
    """α, correction and family size for planning: the analysis's own when declared."""
    manifest = run.manifest
    if family_size is None and parse_comparisons(manifest.comparisons, file=manifest.path):
        # an α or correction that contradicts the manifest is refused, as in the analysis
        config = resolve_comparisons(
            manifest, correction="manifest" if correction is None else correction, alpha=alpha
        )
        frame = paired_analysis(run, config).comparisons
        if config.family == "per_evaluator":
            frame = frame[frame["evaluator"] == evaluator]
        size = int(frame["family_size"].max()) if len(frame) else 1
        return config.alpha, config.correction, max(size, 1)
    candidates = len(run.manifest.variants) - 1
    return (
        0.05 if alpha is None else alpha,
        "bonferroni" if correction is None else correction,
        candidates if family_size is None else family_size,
    )


@keyword_hints
def minimum_detectable_effect(
    run: ExperimentRun,
    *,
    alpha: float | None = None,
    power: float | None = None,
    evaluator: str = "passed",
    trials: int | None = None,
    n_cases: int | None = None,
    family_size: int | None = None,
) -> pd.DataFrame:
    """Per candidate: the smallest true difference a paired design detects with ``power``.

    :func:`power_analysis` without an effect; see it for the variance model.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> mde = minimum_detectable_effect(run, n_cases=200)
    >>> bool((mde["mde"] < minimum_detectable_effect(run)["mde"]).all())
    True
    """
    run = require_run(run, "minimum_detectable_effect")
    frame = power_analysis(
        run,
        alpha=alpha,
        power=power,
        evaluator=evaluator,
        trials=trials,
        n_cases=n_cases,
        family_size=family_size,
    )
    keep = [
        "baseline_variant_id",
        "candidate_variant_id",
        "evaluator",
        "paired_items",
        "planned_trials",
        "planned_cases",
        "planned_sd",
        "alpha_per_test",
        "target_power",
        "mde",
    ]
    return frame[keep]


@keyword_hints
def trials_for_precision(
    run: ExperimentRun,
    *,
    half_width: float,
    confidence_level: float = 0.95,
    evaluator: str = "passed",
    n_cases: int | None = None,
    cost_per_case: float = 0.0,
    cost_per_trial: float | None = None,
    max_trials: int = 1000,
) -> pd.DataFrame:
    r"""Attempts per case that reach a target interval half-width, and at least cost.

    For each variant's mean (``estimand="mean"``: :math:`σ_b^2, σ_w^2`) and each
    candidate's paired difference (``estimand="difference"``: :math:`ω^2` and
    :math:`σ_A^2 + σ_B^2`, two attempts per case-trial), with target
    :math:`SE = h/z`:

    * ``trials_needed``: the fewest K on the fixed suite of ``n_cases`` (default: this
      one) with :math:`(σ_b^2 + σ_w^2/K)/n \le SE^2`; missing when no K suffices (only
      more cases help);
    * ``optimal_trials``, ``optimal_cases``, ``optimal_cost``: the cheapest (n, K) when
      cases can be added, for a cost per case and per attempt (Cochran's two-stage
      optimum :math:`K^* = \sqrt{(σ_w^2/σ_b^2)(c_{case}/c_{trial})}`). The cost per attempt
      defaults to the run's mean measured ``cost_usd``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> plan = trials_for_precision(run, half_width=0.1, cost_per_case=0.05)
    >>> sorted(set(plan["estimand"]))
    ['difference', 'mean']
    """
    run = require_run(run, "trials_for_precision")
    check_proportion(confidence_level, "confidence level", location="confidence_level")
    if not check_number(half_width, "half_width", location="half_width") > 0:
        raise InputError(f"half_width must be > 0, got {half_width!r}", location="half_width")
    if not check_number(cost_per_case, "cost_per_case", location="cost_per_case") >= 0:
        raise InputError("cost_per_case must be >= 0", location="cost_per_case")
    if cost_per_trial is not None:
        check_number(cost_per_trial, "cost_per_trial", location="cost_per_trial")
    if n_cases is not None:
        check_count(n_cases, "n_cases", location="n_cases")
    check_count(max_trials, "max_trials", location="max_trials")
    ev = evaluation(run, evaluator)
    _check_on_scale(half_width, ev, "half_width")
    unit = "usd"
    if cost_per_trial is None:
        measured = run.attempts["cost_usd"].to_numpy(np.float64)
        measured = measured[~np.isnan(measured)]
        cost_per_trial = float(np.mean(measured)) if len(measured) else 0.0
        if not cost_per_trial > 0:
            cost_per_trial, unit = 1.0, "attempts"
    elif not cost_per_trial > 0:
        raise InputError("cost_per_trial must be > 0", location="cost_per_trial")
    z = float(sps.norm.ppf(0.5 + confidence_level / 2))
    target = half_width / z
    ids = list(run.manifest.variant_ids)
    base = ids.index(run.manifest.baseline_variant_id)
    rows = []

    def plan(
        variant: str,
        estimand: str,
        between: float,
        within: float,
        k_now: float,
        n_now: int,
        trial_cost: float,
    ) -> None:
        n = n_cases if n_cases is not None else n_now
        between = 0.0 if not math.isfinite(between) else between
        within = 0.0 if not math.isfinite(within) else within
        now = z * math.sqrt((between + within / max(k_now, 1e-12)) / n_now) if n_now else math.nan
        needed = stats_paired.trials_for_standard_error(
            between, within, n, target, max_trials=max_trials
        )
        best_k, best_n, best_cost = stats_paired.cost_optimal_trials(
            between,
            within,
            target,
            cost_per_case=cost_per_case,
            cost_per_trial=trial_cost,
            max_trials=max_trials,
            min_cases=SMALL_SAMPLE,
        )
        rows.append(
            {
                "variant_id": variant,
                "estimand": estimand,
                "evaluator": ev.name,
                "between_variance": between,
                "within_variance": within,
                "current_cases": n_now,
                "current_trials": k_now,
                "current_half_width": now,
                "target_half_width": half_width,
                "confidence_level": confidence_level,
                "cases": n,
                "trials_needed": pd.NA if needed is None else needed,
                "optimal_trials": best_k,
                "optimal_cases": best_n,
                "optimal_cost": best_cost,
                "cost_per_case": cost_per_case,
                "cost_per_trial": trial_cost,
                "cost_unit": unit,
            }
        )

    for v, vid in enumerate(ids):
        values, cases = ev.attempts_of(v)
        vc = stats_paired.variance_components(values, cases)
        between = vc.between_variance
        if vc.n_attempts == vc.n_cases >= 2:
            # One attempt per case: the parts cannot be told apart (both NaN, which read
            # as 0: a half-width of 0 and one trial enough). All of the case values'
            # variance counts as between cases, as the difference rows count it, so more
            # trials are not promised to help.
            between = float(np.var(values, ddof=1))
        plan(
            vid,
            "mean",
            between,
            vc.within_variance,
            vc.mean_attempts,
            vc.n_cases,
            cost_per_trial,
        )
    for cand in range(len(ids)):
        if cand == base:
            continue
        parts = _pair_parts(ev, base, cand)
        within = sum(
            parts[f"within_variance_{s}"]
            for s in ("baseline", "candidate")
            if math.isfinite(parts[f"within_variance_{s}"])
        )
        k_now = (parts["trials_baseline"] + parts["trials_candidate"]) / 2
        plan(
            ids[cand],
            "difference",
            parts["between_difference_variance"],
            within,
            k_now,
            int(parts["paired_items"]),
            2 * cost_per_trial,
        )
    frame = pd.DataFrame(rows)
    frame["trials_needed"] = frame["trials_needed"].astype("Int64")
    frame["variant_id"] = pd.Categorical(frame["variant_id"], categories=ids)
    return frame
