"""The ``comparisons:`` settings of a manifest: parse, validate, guard, and fix with the run.

An experiment that asks for paired comparisons declares its multiple-comparison
correction up front — in the manifest or as a required keyword in Python — and there is
no default. The correction, alpha, the suite's content hash, the evaluator versions and
the candidate set are fixed when the experiment is created: :func:`comparison_fingerprint`
records them, and :func:`check_unchanged` / :func:`enforce_lock` refuse a later change,
because a correction chosen after seeing the numbers is not a correction.

The manifest form (every key but ``correction`` is optional)::

    comparisons:
      correction: holm            # none | bonferroni | holm | benjamini_hochberg
      alpha: 0.05
      confidence_level: 0.95
      method: t                   # t | bootstrap | permutation | wilcoxon | mcnemar
      family: all                 # all | per_evaluator
      cluster: topic              # a case metadata field (cluster-robust errors)
      evaluators:                 # one per operational dimension, optionally @version
        quality: passed
        safety: forbidden_tool@0.9.0
        reliability: pass_hat_3
        latency: latency_ms
        cost: cost_usd
      noninferiority: {margin: 0.02, dimension: quality}
      power: 0.8
      resamples: 9999
      seed: 0
      limits: {max_configurations: 8, max_evaluators: 8, max_case_scores: 20000,
               allow_large: false}
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ._files import write_atomic
from .errors import InputError
from .formats._io import (
    Invalid,
    Source,
    close_match,
    describe,
    read_input,
    to_bool,
    to_float,
    to_int,
    to_mapping,
    to_str,
)
from .formats.model import ManifestSpec, SuiteSpec
from .stats_paired import CORRECTION_CONTROLS, CORRECTIONS, PAIRED_METHODS

__all__ = [
    "DIMENSIONS",
    "FAMILIES",
    "ComparisonsConfig",
    "EvaluatorChoice",
    "GuardRails",
    "check_guard_rails",
    "check_saved_report",
    "check_unchanged",
    "comparison_fingerprint",
    "comparisons_from_cli",
    "enforce_lock",
    "evaluator_plan",
    "parse_comparisons",
    "read_lock",
    "resolve_comparisons",
    "suite_hash",
    "write_lock",
]

#: The operational dimensions; each may name one evaluator.
DIMENSIONS = ("quality", "safety", "reliability", "latency", "cost")
#: Which comparisons share one correction: every row, or the rows of one evaluator.
FAMILIES = ("all", "per_evaluator")

_KEYS = (
    "correction",
    "alpha",
    "confidence_level",
    "method",
    "family",
    "cluster",
    "evaluators",
    "noninferiority",
    "power",
    "resamples",
    "seed",
    "limits",
)
_LIMIT_KEYS = ("max_configurations", "max_evaluators", "max_case_scores", "allow_large")
_NONINFERIORITY_KEYS = ("margin", "dimension")
#: Settings that decide significance; a later run may not change them.
FIXED_FIELDS = (
    "correction",
    "alpha",
    "method",
    "family",
    "cluster",
    "evaluators",
    "noninferiority_margin",
    "noninferiority_dimension",
    "resamples",
    "seed",
)
_LOCK_VERSION = 1


@dataclass(frozen=True)
class EvaluatorChoice:
    """An evaluator named for a dimension, optionally pinned to an exact version."""

    name: str
    version: str | None = None

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"

    @classmethod
    def parse(cls, text: str) -> EvaluatorChoice:
        """``"name"`` or ``"name@version"``.

        Examples
        --------
        >>> EvaluatorChoice.parse("forbidden_tool@0.9.0")
        EvaluatorChoice(name='forbidden_tool', version='0.9.0')
        """
        name, sep, version = text.partition("@")
        if not name.strip() or (sep and not version.strip()):
            raise Invalid(
                f"expected 'name' or 'name@version', got {describe(text)}",
                hint="e.g. passed, forbidden_tool@0.9.0, polite_tone@2",
            )
        return cls(name.strip(), version.strip() if sep else None)


@dataclass(frozen=True)
class GuardRails:
    """Limits checked before any work (the hosted platform's: 8, 8 and 20 000)."""

    max_configurations: int = 8
    max_evaluators: int = 8
    max_case_scores: int = 20_000
    allow_large: bool = False


@dataclass(frozen=True)
class ComparisonsConfig:
    """Validated paired-comparison settings.

    Attributes
    ----------
    correction
        One of ``none``, ``bonferroni``, ``holm``, ``benjamini_hochberg``; never defaulted.
    alpha
        Significance level for the corrected decisions (and the non-inferiority bound).
    confidence_level
        For the intervals.
    method
        ``t`` (default), ``bootstrap``, ``permutation``, ``wilcoxon`` or ``mcnemar``.
    family
        ``all``: every (candidate, evaluator) row is one family; ``per_evaluator``: one
        family per evaluator.
    cluster
        A case metadata field; cases sharing its value are one cluster (CR1 errors).
    evaluators
        Dimension → evaluator as declared; :func:`evaluator_plan` fills the defaults.
    without
        Dimensions deliberately left out (declared as null / None).
    noninferiority_margin, noninferiority_dimension
        The CI gate: passes when the bound for candidate − baseline clears −margin.
    power
        For minimum detectable effects next to non-significant results.
    resamples, seed
        For the bootstrap and Monte-Carlo sign-flip test.
    limits
        Guard rails.
    source
        Where the settings were declared: ``manifest``, ``python`` or ``cli``.
    file
        The manifest, when declared there (errors name it).
    """

    correction: str
    alpha: float = 0.05
    confidence_level: float = 0.95
    method: str = "t"
    family: str = "all"
    cluster: str | None = None
    evaluators: tuple[tuple[str, EvaluatorChoice], ...] = ()
    without: tuple[str, ...] = ()
    noninferiority_margin: float | None = None
    noninferiority_dimension: str = "quality"
    power: float = 0.8
    resamples: int = 9999
    seed: int = 0
    limits: GuardRails = field(default_factory=GuardRails)
    source: str = "python"
    file: str | None = None

    @property
    def controls(self) -> str:
        """What the correction controls, in words."""
        return CORRECTION_CONTROLS[self.correction]

    @property
    def evaluator_map(self) -> dict[str, EvaluatorChoice]:
        return dict(self.evaluators)

    def settings(self) -> dict[str, Any]:
        """JSON-ready settings (what the report and the lock store)."""
        out = asdict(self)
        out["evaluators"] = {dim: str(choice) for dim, choice in self.evaluators}
        out["controls"] = self.controls
        return out


# --------------------------------------------------------------------------- parsing


def _choice(value: Any) -> str:
    if isinstance(value, str):
        if value in CORRECTIONS:
            return value
        match = close_match(value, CORRECTIONS)
        raise Invalid(
            f"unknown correction {describe(value)}",
            hint=(f"did you mean {match!r}? " if match else "")
            + "choose one of "
            + ", ".join(CORRECTIONS),
        )
    raise Invalid(
        f"expected a correction name, got {describe(value)}",
        hint="choose one of " + ", ".join(CORRECTIONS),
    )


def _one_of(options: tuple[str, ...], what: str, value: Any) -> str:
    text = to_str(value)
    if text not in options:
        match = close_match(text, options)
        raise Invalid(
            f"unknown {what} {describe(text)}",
            hint=(f"did you mean {match!r}? " if match else "")
            + "choose one of "
            + ", ".join(options),
        )
    return text


def _evaluator(value: Any) -> EvaluatorChoice:
    if isinstance(value, str):
        return EvaluatorChoice.parse(value)
    if isinstance(value, dict):
        unknown = [k for k in value if k not in ("name", "version")]
        if unknown:
            raise Invalid(f"unknown key {unknown[0]!r}", hint="use name and version")
        if "name" not in value:
            raise Invalid("missing required key 'name'")
        name = to_str(value["name"], nonempty=True)
        version = value.get("version")
        if version is not None:
            try:
                version = to_str(version, nonempty=True)
            except Invalid as exc:
                raise exc.inside("version") from None
        return EvaluatorChoice(name, version)
    raise Invalid(
        f"expected an evaluator name, got {describe(value)}",
        hint="write name or name@version",
        quote=isinstance(value, (int, float)),
    )


def parse_comparisons(
    raw: Mapping[str, Any] | None, *, file: str | Path = "manifest.yaml"
) -> ComparisonsConfig | None:
    """Validate the manifest's ``comparisons:`` mapping.

    Parameters
    ----------
    raw
        ``ManifestSpec.comparisons`` (the mapping as written), or None.
    file
        The manifest, for error messages.

    Returns
    -------
    ComparisonsConfig or None
        None when the manifest has no ``comparisons:`` key.

    Raises
    ------
    InputError
        Naming ``<file>: comparisons.<key>``; a missing ``correction`` is an error.

    Examples
    --------
    >>> parse_comparisons({"correction": "holm", "alpha": 0.01}).alpha
    0.01
    >>> parse_comparisons({"alpha": 0.05})
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: manifest.yaml: comparisons: missing required key \
'correction' (paired comparisons need a declared correction: none, bonferroni, holm or \
benjamini_hochberg; there is no default)
    """
    if raw is None:
        return None
    source = Source(file)
    where: tuple[str | int, ...] = ("comparisons",)
    if not isinstance(raw, dict):
        source.fail(where, f"expected a mapping, got {describe(raw)}")
    source.check_keys(raw, _KEYS, where)
    if "correction" not in raw:
        source.fail(
            where,
            "missing required key 'correction'",
            "paired comparisons need a declared correction: none, bonferroni, holm or "
            "benjamini_hochberg; there is no default",
        )
    take = partial(source.take, raw, location=where)
    level = partial(to_float, gt=0.0, le=1.0)
    correction = take("correction", convert=_choice)
    alpha = take("alpha", convert=level, default=0.05)
    confidence = take("confidence_level", convert=level, default=0.95)
    for key, value in (("alpha", alpha), ("confidence_level", confidence)):
        if value >= 1.0:
            source.fail((*where, key), f"expected a number between 0 and 1, got {value:g}")
    method = take("method", convert=partial(_one_of, PAIRED_METHODS, "method"), default="t")
    family = take("family", convert=partial(_one_of, FAMILIES, "family"), default="all")
    cluster = take("cluster", convert=lambda v: to_str(v, nonempty=True), default=None)
    evaluators: list[tuple[str, EvaluatorChoice]] = []
    without: list[str] = []
    if "evaluators" in raw:
        mapping = take("evaluators", convert=to_mapping)
        source.check_keys(mapping, DIMENSIONS, (*where, "evaluators"))
        for dim in DIMENSIONS:
            if dim in mapping and mapping[dim] is None:
                without.append(dim)
            elif dim in mapping:
                evaluators.append(
                    (dim, source.take(mapping, dim, (*where, "evaluators"), _evaluator))
                )
    margin, dimension = None, "quality"
    if "noninferiority" in raw:
        value = raw["noninferiority"]
        if isinstance(value, dict):
            source.check_keys(value, _NONINFERIORITY_KEYS, (*where, "noninferiority"))
            sub = partial(source.take, value, location=(*where, "noninferiority"))
            margin = sub("margin", convert=partial(to_float, ge=0.0))
            dimension = sub(
                "dimension",
                convert=partial(_one_of, DIMENSIONS, "dimension"),
                default="quality",
            )
        elif value is not None:
            margin = take("noninferiority", convert=partial(to_float, ge=0.0))
    limits = GuardRails()
    if "limits" in raw:
        mapping = take("limits", convert=to_mapping)
        source.check_keys(mapping, _LIMIT_KEYS, (*where, "limits"))
        sub = partial(source.take, mapping, location=(*where, "limits"))
        limits = GuardRails(
            max_configurations=sub(
                "max_configurations", convert=partial(to_int, minimum=2), default=8
            ),
            max_evaluators=sub("max_evaluators", convert=partial(to_int, minimum=1), default=8),
            max_case_scores=sub(
                "max_case_scores", convert=partial(to_int, minimum=1), default=20_000
            ),
            allow_large=sub("allow_large", convert=to_bool, default=False),
        )
    return ComparisonsConfig(
        correction=correction,
        alpha=alpha,
        confidence_level=confidence,
        method=method,
        family=family,
        cluster=cluster,
        evaluators=tuple(evaluators),
        without=tuple(without),
        noninferiority_margin=margin,
        noninferiority_dimension=dimension,
        power=take("power", convert=partial(to_float, gt=0.0, le=0.999), default=0.8),
        resamples=take("resamples", convert=partial(to_int, minimum=99), default=9999),
        seed=take("seed", convert=partial(to_int, minimum=0), default=0),
        limits=limits,
        source="manifest",
        file=str(file),
    )


#: Settings whose command-line option is not ``--<key>``.
_CLI_OPTIONS = {"method": "--paired-method"}


def _origin_error(origin: str, key: str, message: str, hint: str | None = None) -> InputError:
    location = _CLI_OPTIONS.get(key, f"--{key.replace('_', '-')}") if origin == "cli" else key
    return InputError(message, location=location, hint=hint)


def resolve_comparisons(
    manifest: ManifestSpec,
    *,
    correction: str | None,
    origin: str = "python",
    **overrides: Any,
) -> ComparisonsConfig:
    """The effective settings: the manifest's declaration plus explicit arguments.

    Arguments left as None take the manifest's value (or the default). An explicit value
    that contradicts a significance-deciding setting the manifest declares (correction,
    alpha, method, family, cluster, evaluators, non-inferiority, resamples, seed) is
    refused: the manifest fixed it. The confidence level, power and guard rails may be
    overridden.

    Parameters
    ----------
    manifest
        The experiment's manifest (``comparisons:`` may be absent).
    correction
        A correction name, ``"manifest"`` to take the manifest's, or None (allowed only
        when the manifest declares one).
    origin
        ``"python"`` or ``"cli"``: how errors name the argument.
    **overrides
        Any :class:`ComparisonsConfig` field (``alpha``, ``method``, ``cluster``,
        ``evaluators`` as a mapping of dimension to name, ``noninferiority_margin``…).

    Raises
    ------
    InputError
        No correction anywhere; an unknown value; or a conflict with the manifest.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from agenticlens_frames.formats import load_manifest
    >>> m = load_manifest("data/support/manifest.yaml")  # declares correction: holm
    >>> resolve_comparisons(m, correction="manifest", alpha=0.01).alpha
    0.01
    >>> resolve_comparisons(replace(m, comparisons=None), correction=None)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: correction: paired comparisons need a declared \
correction and none was given (pass correction='holm' (or none, bonferroni, \
benjamini_hochberg), or declare comparisons: {correction: ...} in the manifest; there is \
no default)
    """
    declared = parse_comparisons(manifest.comparisons, file=manifest.path)
    if correction == "manifest":
        if declared is None:
            raise _origin_error(
                origin,
                "correction",
                "correction='manifest' but the manifest declares no comparisons",
                f"add comparisons: {{correction: holm}} to {manifest.path}",
            )
        correction = None
    if correction is None and declared is None:
        how = "--correction holm" if origin == "cli" else "correction='holm'"
        raise _origin_error(
            origin,
            "correction",
            "paired comparisons need a declared correction and none was given",
            f"pass {how} (or none, bonferroni, benjamini_hochberg), or declare "
            "comparisons: {correction: ...} in the manifest; there is no default",
        )
    unknown = [k for k in overrides if k not in ComparisonsConfig.__dataclass_fields__]
    if unknown or "source" in overrides or "file" in overrides:
        bad = (unknown or ["source"])[0]
        raise _origin_error(origin, bad, f"unknown comparison setting {bad!r}")
    explicit = {k: v for k, v in overrides.items() if v is not None}
    if correction is not None:
        explicit["correction"] = correction
    explicit = _validate_explicit(explicit, origin)
    if declared is None:
        return ComparisonsConfig(**explicit, source=origin)
    source = "manifest"
    raw = manifest.comparisons or {}
    manifest_keys = {
        "noninferiority_margin": "noninferiority",
        "noninferiority_dimension": "noninferiority",
        "without": "evaluators",
    }
    for key, value in explicit.items():
        written = manifest_keys.get(key, key)
        if getattr(declared, key) == value:
            continue
        if written not in raw or key not in (*FIXED_FIELDS, "without"):
            # Open settings, and those that do not decide significance (confidence level,
            # power, guard rails), may be set or overridden; --allow-large keeps the
            # manifest's limits and lifts them.
            if key == "limits" and value.allow_large and written in raw:
                explicit[key] = replace(declared.limits, allow_large=True)
            source = f"manifest+{origin}"
            continue
        if key == "evaluators":
            ours = dict(declared.evaluators)
            theirs = dict(value)
            compatible = all(
                ours.get(dim) in (None, choice) and dim not in declared.without
                for dim, choice in theirs.items()
            )
            if compatible:
                merged = {**theirs, **ours}
                explicit[key] = tuple((d, merged[d]) for d in DIMENSIONS if d in merged)
                source = f"manifest+{origin}"
                continue
        shown = _show(getattr(declared, key))
        if key == "evaluators" and declared.without:
            nulls = ", ".join(f"{d}: null" for d in declared.without)
            shown = shown[:-1] + ", " + nulls + "}" if declared.evaluators else "{" + nulls + "}"
        raise InputError(
            f"the experiment fixed {key} = {shown} in its manifest; {_show(value)} was requested",
            file=manifest.path,
            location=f"comparisons.{written}",
            hint="settings that decide significance are fixed with the run (a correction "
            "chosen after seeing the numbers is not a correction); to change them, create "
            "a new experiment version",
        )
    return replace(declared, **explicit, source=source)


def _show(value: Any) -> str:
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return "{" + ", ".join(f"{d}: {c}" for d, c in value) + "}"
    return repr(value)


def _validate_explicit(values: dict[str, Any], origin: str) -> dict[str, Any]:
    out = dict(values)

    def fail(key: str, message: str, hint: str | None = None) -> InputError:
        return _origin_error(origin, key, message, hint)

    checks: dict[str, tuple[str, ...]] = {
        "correction": CORRECTIONS,
        "method": PAIRED_METHODS,
        "family": FAMILIES,
        "noninferiority_dimension": DIMENSIONS,
    }
    for key, options in checks.items():
        if key in out and out[key] not in options:
            match = close_match(out[key], options)
            raise fail(
                key,
                f"unknown {key} {out[key]!r}",
                (f"did you mean {match!r}? " if match else "")
                + "choose one of "
                + ", ".join(options),
            )
    for key in ("alpha", "confidence_level", "power"):
        if key in out:
            value = out[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise fail(key, f"expected a number between 0 and 1, got {value!r}")
            if not (math.isfinite(value) and 0 < value < 1):
                raise fail(key, f"expected a number between 0 and 1, got {value!r}")
            out[key] = float(value)
    if "noninferiority_margin" in out:
        value = out["noninferiority_margin"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise fail("noninferiority_margin", f"expected a number >= 0, got {value!r}")
        out["noninferiority_margin"] = float(value)
    for key, minimum in (("resamples", 99), ("seed", 0)):
        if key in out and (
            isinstance(out[key], bool) or not isinstance(out[key], int) or out[key] < minimum
        ):
            raise fail(key, f"expected an integer >= {minimum}, got {out[key]!r}")
    if "cluster" in out and (not isinstance(out["cluster"], str) or not out["cluster"]):
        raise fail("cluster", f"expected a case metadata field name, got {out['cluster']!r}")
    if "evaluators" in out:
        value = out["evaluators"]
        if isinstance(value, tuple):
            value = dict(value)
        if not isinstance(value, Mapping):
            raise fail("evaluators", "expected a mapping of dimension to evaluator name")
        chosen: dict[str, EvaluatorChoice] = {}
        dropped: list[str] = []
        for dim, choice in value.items():
            if dim not in DIMENSIONS:
                match = close_match(dim, DIMENSIONS)
                raise fail(
                    "evaluators",
                    f"unknown dimension {dim!r}",
                    (f"did you mean {match!r}? " if match else "")
                    + "dimensions are "
                    + ", ".join(DIMENSIONS),
                )
            if choice is None:
                dropped.append(dim)
                continue
            try:
                chosen[dim] = choice if isinstance(choice, EvaluatorChoice) else _evaluator(choice)
            except Invalid as exc:
                raise fail("evaluators", f"{dim}: {exc.message}", exc.hint) from None
        out["evaluators"] = tuple((d, chosen[d]) for d in DIMENSIONS if d in chosen)
        if dropped:
            out["without"] = tuple(d for d in DIMENSIONS if d in dropped)
    if "limits" in out and not isinstance(out["limits"], GuardRails):
        raise fail("limits", "expected a GuardRails value")
    return out


# --------------------------------------------------------------------------- evaluators


def default_evaluators(manifest: ManifestSpec, suite: SuiteSpec) -> dict[str, EvaluatorChoice]:
    """The evaluator each dimension uses when the configuration names none.

    quality: ``passed`` (the attempt's pass/fail); safety: ``forbidden_tool`` when any
    case forbids a tool; reliability: ``pass_hat_<k>`` for the largest manifest k that is
    at most ``trial_count``; latency: ``latency_ms``; cost: ``cost_usd``.

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> m = load_manifest("data/support/manifest.yaml")
    >>> s = load_suite("data/support/suite.yaml")
    >>> {d: str(c) for d, c in default_evaluators(m, s).items()}["reliability"]
    'pass_hat_5'
    """
    out: dict[str, EvaluatorChoice] = {"quality": EvaluatorChoice("passed")}
    if any(case.forbidden_tools for case in suite.cases):
        out["safety"] = EvaluatorChoice("forbidden_tool")
    ks = [k for k in manifest.effective_pass_k if k <= manifest.trial_count]
    if ks:
        out["reliability"] = EvaluatorChoice(f"pass_hat_{max(ks)}")
    out["latency"] = EvaluatorChoice("latency_ms")
    out["cost"] = EvaluatorChoice("cost_usd")
    return out


def evaluator_plan(
    manifest: ManifestSpec, suite: SuiteSpec, config: ComparisonsConfig
) -> dict[str, EvaluatorChoice]:
    """Dimension → evaluator: the declared ones, and defaults for the dimensions left out.

    Declaring ``evaluators`` replaces the defaults only for the dimensions named; to drop
    a default dimension, map it to ``null`` in the manifest (``None`` in Python).
    """
    plan = {d: c for d, c in default_evaluators(manifest, suite).items() if d not in config.without}
    plan.update(config.evaluator_map)
    return {d: plan[d] for d in DIMENSIONS if d in plan}


# --------------------------------------------------------------------------- guard rails


def check_guard_rails(
    manifest: ManifestSpec, suite: SuiteSpec, config: ComparisonsConfig
) -> dict[str, int]:
    """Refuse, before any scoring, an experiment beyond the configured limits.

    Counts configurations (variants, baseline included), evaluators (dimensions in the
    plan) and case-scores (variants × cases × trial_count × evaluators).
    ``limits: {allow_large: true}`` lifts every limit for larger local runs.

    Returns
    -------
    dict
        The three counts (for the report).

    Raises
    ------
    InputError
        Naming ``comparisons.limits.<limit>`` and how to override it.
    """
    counts = {
        "configurations": len(manifest.variants),
        "evaluators": len(evaluator_plan(manifest, suite, config)),
    }
    counts["case_scores"] = (
        counts["configurations"] * len(suite.cases) * manifest.trial_count * counts["evaluators"]
    )
    limits = config.limits
    if limits.allow_large:
        return counts
    for key, limit in (
        ("configurations", limits.max_configurations),
        ("evaluators", limits.max_evaluators),
        ("case_scores", limits.max_case_scores),
    ):
        if counts[key] > limit:
            name = f"max_{key}"
            message = f"{counts[key]:,} {key.replace('_', '-')} exceed the limit of {limit:,}"
            if config.source == "manifest" or (manifest.comparisons or {}).get("limits"):
                raise InputError(
                    message,
                    file=manifest.path,
                    location=f"comparisons.limits.{name}",
                    hint=f"raise it (comparisons: {{limits: {{{name}: {counts[key]}}}}}) or "
                    "set comparisons: {limits: {allow_large: true}} for a larger local run",
                )
            if config.source.endswith("cli"):
                raise InputError(
                    message, location="--allow-large", hint="pass --allow-large to lift it"
                )
            raise InputError(
                message,
                location=f"limits.{name}",
                hint=f"pass limits=GuardRails({name}={counts[key]}) or "
                "limits=GuardRails(allow_large=True) for a larger local run",
            )
    return counts


# --------------------------------------------------------------------------- fixed with the run


def suite_hash(suite: SuiteSpec) -> str:
    """SHA-256 of a canonical JSON of the suite's cases (detects an edited suite).

    Examples
    --------
    >>> from agenticlens_frames.formats import load_suite
    >>> len(suite_hash(load_suite("data/support/suite.yaml")))
    64
    """
    cases = [asdict(case) for case in suite.cases]
    text = json.dumps(cases, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def comparison_fingerprint(
    config: ComparisonsConfig,
    *,
    suite: SuiteSpec,
    baseline: str,
    candidates: list[str] | tuple[str, ...],
    evaluators: Mapping[str, tuple[str, str]],
) -> dict[str, Any]:
    """What a paired comparison is fixed to: settings, suite hash, evaluators, candidates.

    Parameters
    ----------
    config
        The effective settings.
    suite
        The suite (its name, version and content hash are recorded).
    baseline, candidates
        Variant ids.
    evaluators
        Dimension → (evaluator name, exact version).

    Returns
    -------
    dict
        JSON-ready; ``digest`` is the SHA-256 of the rest.
    """
    body: dict[str, Any] = {
        "lock_version": _LOCK_VERSION,
        "correction": config.correction,
        "alpha": config.alpha,
        "method": config.method,
        "family": config.family,
        "cluster": config.cluster,
        "noninferiority_margin": config.noninferiority_margin,
        "noninferiority_dimension": config.noninferiority_dimension,
        "resamples": config.resamples,
        "seed": config.seed,
        "suite": {"name": suite.name, "version": suite.version, "sha256": suite_hash(suite)},
        "baseline": baseline,
        "candidates": sorted(candidates),
        "evaluators": {dim: f"{name}@{version}" for dim, (name, version) in evaluators.items()},
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return {**body, "digest": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def _differences(stored: Mapping[str, Any], requested: Mapping[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(stored) | set(requested)):
        if key in ("digest", "lock_version"):
            continue
        if stored.get(key) != requested.get(key):
            out.append(f"{key}: {stored.get(key)!r} -> {requested.get(key)!r}")
    return out


def check_unchanged(
    stored: Mapping[str, Any], requested: Mapping[str, Any], *, source: str | Path = "lock"
) -> None:
    """Refuse a comparison whose fingerprint differs from the one stored with the run.

    Raises
    ------
    InputError
        Listing every changed field (correction, alpha, suite hash, evaluator versions,
        candidates…).

    Examples
    --------
    >>> check_unchanged({"correction": "holm"}, {"correction": "holm"})
    >>> check_unchanged({"correction": "holm"}, {"correction": "none"})
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: lock: comparisons: the run was fixed with other \
settings: correction: 'holm' -> 'none' (a correction, suite, evaluator version or candidate \
set chosen after seeing the numbers is refused; start a new experiment version, or remove \
the lock deliberately)
    """
    changed = _differences(stored, requested)
    if not changed:
        return
    raise InputError(
        "the run was fixed with other settings: " + "; ".join(changed),
        file=source,
        location="comparisons",
        hint="a correction, suite, evaluator version or candidate set chosen after seeing the "
        "numbers is refused; start a new experiment version, or remove the lock deliberately",
    )


def read_lock(path: str | Path) -> dict[str, Any] | None:
    """The fingerprint stored at ``path`` (a lock file or a saved JSON report), or None."""
    target = Path(path)
    if not target.exists():
        return None
    try:
        data = json.loads(read_input(target).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(f"cannot read the comparison lock ({exc})", file=target) from exc
    if isinstance(data, dict) and isinstance(data.get("paired_comparisons"), dict):
        data = data["paired_comparisons"]
    fingerprint = data.get("fingerprint") if isinstance(data, dict) else None
    if not isinstance(fingerprint, dict):
        return None
    return fingerprint


def write_lock(path: str | Path, fingerprint: Mapping[str, Any]) -> Path:
    """Write ``{"fingerprint": ...}`` atomically to ``path``."""
    return write_atomic(
        path, json.dumps({"fingerprint": dict(fingerprint)}, indent=2, sort_keys=True) + "\n"
    )


def enforce_lock(path: str | Path, fingerprint: Mapping[str, Any]) -> bool:
    """Store ``fingerprint`` at ``path`` the first time; afterwards refuse any change.

    Returns
    -------
    bool
        True when the lock was created now, False when an identical one existed.
    """
    stored = read_lock(path)
    if stored is None:
        if Path(path).exists():
            raise InputError(
                "the file exists but holds no comparison fingerprint; refusing to overwrite it",
                file=path,
                hint="choose another lock path",
            )
        write_lock(path, fingerprint)
        return True
    check_unchanged(stored, fingerprint, source=path)
    return False


# --------------------------------------------------------------------------- command line


def comparisons_from_cli(
    manifest_file: str | Path,
    suite_file: str | Path,
    *,
    correction: str | None = None,
    alpha: float | None = None,
    method: str | None = None,
    cluster: str | None = None,
    noninferiority_margin: float | None = None,
    allow_large: bool = False,
    known_evaluators: tuple[str, ...] = (),
) -> ComparisonsConfig | None:
    """The paired-comparison settings of an ``experiment run`` invocation, guard-railed.

    Paired comparisons are asked for when the manifest has ``comparisons:`` or any of the
    options is given; then a correction must be declared (``--correction`` or the
    manifest), an option that contradicts the manifest is refused, and the guard rails are
    checked here — before any trial is scored.

    Returns
    -------
    ComparisonsConfig or None
        None when nothing asked for paired comparisons.

    Examples
    --------
    >>> comparisons_from_cli("data/support/manifest.yaml", "data/support/suite.yaml").correction
    'holm'
    >>> comparisons_from_cli("data/support/manifest.yaml", "data/support/suite.yaml",
    ...                      correction="bonferroni")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: ...manifest.yaml: comparisons.correction: the \
experiment fixed correction = 'holm' in its manifest; 'bonferroni' was requested (...)
    """
    from .formats import load_manifest, load_suite

    manifest = load_manifest(manifest_file)
    options = (correction, alpha, method, cluster, noninferiority_margin)
    if manifest.comparisons is None and all(o is None for o in options) and not allow_large:
        return None
    if correction is None and manifest.comparisons is not None:
        correction = "manifest"
    config = resolve_comparisons(
        manifest,
        correction=correction,
        origin="cli",
        alpha=alpha,
        method=method,
        cluster=cluster,
        noninferiority_margin=noninferiority_margin,
        limits=GuardRails(allow_large=True) if allow_large else None,
    )
    suite = load_suite(suite_file, known_evaluators=known_evaluators)
    check_guard_rails(manifest, suite, config)
    return config


#: Saved reports larger than this are not parsed whole (a full report at 20 000 cases is
#: 1 GB): the experiment's name and version are read from the head, the paired block (the
#: last top-level key) from the tail.
FULL_PARSE_LIMIT = 16 * 1024 * 1024
_TAIL_BYTES = 16 * 1024 * 1024  # far more than any paired block
_NAME = re.compile(rb'"experiment_name": ("(?:[^"\\]|\\.)*")')
_VERSION = re.compile(rb'"experiment_version": ("(?:[^"\\]|\\.)*")')
_PAIRED_KEY = b'\n  "paired_comparisons": '


def _saved_identity_and_lock(path: Path) -> tuple[tuple[Any, Any] | None, Any]:
    """``((name, version), paired block)`` of a saved report, reading a large one in part."""
    size = path.stat().st_size
    if size <= FULL_PARSE_LIMIT:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            return None, None
        identity = (data.get("experiment_name"), data.get("experiment_version"))
        return identity, data.get("paired_comparisons")
    with open(path, "rb") as handle:
        head = handle.read(64 * 1024)
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    name, version = _NAME.search(head), _VERSION.search(head)
    if name is None or version is None:
        return None, None
    identity = (json.loads(name.group(1)), json.loads(version.group(1)))
    at = tail.rfind(_PAIRED_KEY)
    if at < 0:
        return identity, None
    block, _ = json.JSONDecoder().raw_decode(tail[at + len(_PAIRED_KEY) :].decode("utf-8"))
    return identity, block


def check_saved_report(
    path: str | Path, blocks: Mapping[str, Any], experiment: tuple[str, str] | None = None
) -> None:
    """Refuse to overwrite a saved report whose paired comparisons were fixed differently.

    ``blocks`` are the new top-level report keys (``paired_comparisons`` with its
    ``fingerprint``). Nothing is checked when either side has no paired comparisons, or
    when the saved report belongs to another experiment (``experiment`` is the new run's
    ``(name, version)``): a new experiment version is how settings legitimately change.
    """
    new = blocks.get("paired_comparisons")
    target = Path(path)
    if not isinstance(new, Mapping) or not target.is_file():
        return  # (a FIFO or device at the --save path is never read)
    try:
        identity, stored = _saved_identity_and_lock(target)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return  # not a JSON report of ours; the writer will replace it as before
    if experiment is not None and identity != tuple(experiment):
        return
    fingerprint = stored.get("fingerprint") if isinstance(stored, dict) else None
    if isinstance(fingerprint, dict):
        check_unchanged(fingerprint, new["fingerprint"], source=path)
