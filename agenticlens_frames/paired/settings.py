"""Paired-comparison settings: the validated configuration, its one set of rules, guard rails.

An experiment that asks for paired comparisons declares its multiple-comparison
correction up front — in the manifest or as a required keyword in Python — and there is
no default. Every setting has one rule (:func:`check_setting`), applied alike to what a
manifest declares (read by :mod:`agenticlens_frames.formats.comparisons`), to Python
arguments and to command-line options. :func:`resolve_comparisons` merges the manifest's
declaration with explicit arguments and refuses a change of a setting that decides
significance; :func:`check_guard_rails` refuses, before any scoring, a run beyond the
limits. What the settings are fixed to with the run is :mod:`.lock`'s business.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .._choices import method_names
from .._deprecate import class_keyword_hints, keyword_hints
from .._suggest import close_match
from ..errors import InputError
from ..formats._io import Invalid, describe
from ..formats.comparisons import DIMENSIONS, EvaluatorChoice, parse_evaluator, read_comparisons
from ..formats.model import ManifestSpec, SuiteSpec
from ..stats_paired import CORRECTION_CONTROLS, CORRECTIONS

__all__ = [
    "ALPHA_RULE",
    "BOUNDED_UNITS",
    "DIMENSIONS",
    "FAMILIES",
    "FIXED_FIELDS",
    "ComparisonsConfig",
    "EvaluatorChoice",
    "GuardRails",
    "as_comparisons",
    "check_alpha",
    "check_guard_rails",
    "check_pass_k",
    "check_run_guard_rails",
    "check_setting",
    "comparisons_from_cli",
    "default_evaluators",
    "effective_comparisons",
    "evaluator_plan",
    "names_setting",
    "parse_comparisons",
    "resolve_comparisons",
    "run_comparisons",
    "with_analysis_level",
]

#: Units whose values lie in [0, 1], so a paired difference lies in [-1, 1] (read by the
#: statistics, the gate and the verdicts' wording alike).
BOUNDED_UNITS = ("proportion", "score")

#: Which comparisons share one correction: every row, or the rows of one evaluator.
FAMILIES = ("all", "per_evaluator")

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
    "noninferiority",
    "resamples",
    "seed",
)


@class_keyword_hints()
@dataclass(frozen=True)
class GuardRails:
    """Limits checked before any work (the hosted platform's: 8, 8 and 20 000).

    ``max_configurations`` counts variants (the baseline included), ``max_evaluators``
    the dimensions compared, ``max_case_scores`` variants × cases × trials × dimensions;
    ``allow_large`` lifts every limit (see :func:`check_guard_rails`).

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> manifest = load_manifest("data/support/manifest.yaml")
    >>> suite = load_suite("data/support/suite.yaml")
    >>> tight = ComparisonsConfig(correction="holm", limits=GuardRails(max_case_scores=1000))
    >>> check_guard_rails(manifest, suite, tight)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    agenticlens_frames.errors.InputError: limits.max_case_scores: 1,750 case-scores exceed ...
    >>> check_guard_rails(manifest, suite, ComparisonsConfig(correction="holm"))
    {'configurations': 5, 'evaluators': 5, 'case_scores': 1750}
    """

    max_configurations: int = 8
    max_evaluators: int = 8
    max_case_scores: int = 20_000
    allow_large: bool = False


@class_keyword_hints()
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
    noninferiority
        Several gates at once, as ``(dimension, margin)`` pairs in each dimension's unit
        (a mapping ``{dimension: margin}`` is accepted); every one must pass. One gate
        given this way is stored as ``noninferiority_margin`` / ``noninferiority_dimension``
        (so it is the single gate it always was); giving both forms is refused. Read the
        gates through :attr:`gates`.
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

    Examples
    --------
    >>> config = ComparisonsConfig(correction="holm", alpha=0.01)
    >>> config.method, config.family, config.confidence_level
    ('t', 'all', 0.95)
    >>> ComparisonsConfig(correction="hom")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    agenticlens_frames.errors.InputError: correction: unknown correction 'hom' (did you mean ...)
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
    noninferiority: tuple[tuple[str, float], ...] = ()
    power: float = 0.8
    resamples: int = 9999
    seed: int = 0
    limits: GuardRails = field(default_factory=GuardRails)
    source: str = "python"
    file: str | None = None

    def __post_init__(self) -> None:
        # The one rule of each setting (check_setting) binds however the settings are
        # made: parsed from a manifest, resolved from options, or built in Python.
        for item in fields(self):
            value = getattr(self, item.name)
            try:
                if item.name == "limits":
                    if not isinstance(value, GuardRails):
                        raise Invalid(f"expected a GuardRails value, got {describe(value)}")
                    for limit in fields(GuardRails):
                        check_setting(f"limits.{limit.name}", getattr(value, limit.name))
                elif item.name in _RULES and value is not None:
                    check_setting(item.name, value)
            except Invalid as exc:
                raise _origin_error("python", item.name, exc.message, exc.hint) from None
        gates = check_setting("noninferiority", self.noninferiority)
        if gates and self.noninferiority_margin is not None:
            raise _origin_error(
                "python",
                "noninferiority",
                "give noninferiority_margin or noninferiority, not both",
                "list every gate in noninferiority, e.g. (('quality', 0.02), ('latency', 200))",
            )
        if len(gates) == 1:
            # One gate is the single gate of before, whichever form declared it: the same
            # settings, lock digest and report fields.
            ((dimension, margin),) = gates
            object.__setattr__(self, "noninferiority_dimension", dimension)
            object.__setattr__(self, "noninferiority_margin", margin)
            gates = ()
        object.__setattr__(self, "noninferiority", gates)

    @property
    def gates(self) -> tuple[tuple[str, float], ...]:
        """Every non-inferiority gate as ``(dimension, margin)``; empty when none is set.

        Examples
        --------
        >>> ComparisonsConfig(correction="holm", noninferiority_margin=0.02).gates
        (('quality', 0.02),)
        >>> ComparisonsConfig(correction="holm", noninferiority={"quality": 0.02,
        ...                                                      "latency": 200}).gates
        (('quality', 0.02), ('latency', 200.0))
        """
        if self.noninferiority_margin is not None:
            return ((self.noninferiority_dimension, self.noninferiority_margin),)
        return self.noninferiority

    @property
    def controls(self) -> str:
        """What the correction controls, in words.

        Examples
        --------
        >>> ComparisonsConfig(correction="bonferroni").controls
        'the chance of any false positive across the family (family-wise error rate)'
        """
        return CORRECTION_CONTROLS[self.correction]

    @property
    def evaluator_map(self) -> dict[str, EvaluatorChoice]:
        """:attr:`evaluators` as a dict: dimension → evaluator, as declared (the defaults
        are filled by :func:`evaluator_plan`, not here).

        Examples
        --------
        >>> config = parse_comparisons({"correction": "holm", "evaluators": {"quality": "passed"}})
        >>> config.evaluator_map
        {'quality': EvaluatorChoice(name='passed', version=None)}
        >>> ComparisonsConfig(correction="holm").evaluator_map
        {}
        """
        return dict(self.evaluators)

    def settings(self) -> dict[str, Any]:
        """JSON-ready settings (what the report and the lock store).

        Examples
        --------
        >>> import json
        >>> settings = ComparisonsConfig(correction="holm").settings()
        >>> settings["correction"], settings["limits"]["max_case_scores"], settings["source"]
        ('holm', 20000, 'python')
        >>> json.loads(json.dumps(settings))["controls"][:40]
        'the chance of any false positive across '
        """
        out = asdict(self)
        out["evaluators"] = {dim: str(choice) for dim, choice in self.evaluators}
        # Written only for several gates, so a single gate's settings read as before.
        out.pop("noninferiority")
        if self.noninferiority:
            out["noninferiority"] = [{"dimension": d, "margin": m} for d, m in self.noninferiority]
        out["controls"] = self.controls
        return out


# --------------------------------------------------------------------------- the rules


def _number(value: Any, what: str, ok: Callable[[float], bool]) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not ok(value)
    ):
        raise Invalid(f"expected {what}, got {describe(value)}")
    return float(value)


def _integer(value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Invalid(f"expected an integer >= {minimum}, got {describe(value)}")
    return value


def _one_of(options: tuple[str, ...], what: str, value: Any) -> str:
    if isinstance(value, str) and value in options:
        return value
    match = close_match(value, options) if isinstance(value, str) else None
    raise Invalid(
        f"unknown {what} {describe(value)}",
        hint=(f"did you mean {match!r}? " if match else "") + "choose one of " + ", ".join(options),
    )


def _correction(value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(
            f"expected a correction name, got {describe(value)}",
            hint="choose one of " + ", ".join(CORRECTIONS),
        )
    return _one_of(CORRECTIONS, "correction", value)


def _cluster(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid(f"expected a case metadata field name, got {describe(value)}")
    return value


def _gates(value: Any) -> tuple[tuple[str, float], ...]:
    """Several gates: ``(dimension, margin)`` pairs or a ``{dimension: margin}`` mapping."""
    pairs = list(value.items()) if isinstance(value, Mapping) else value
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise Invalid(
            f"expected (dimension, margin) pairs, got {describe(value)}",
            hint="e.g. (('quality', 0.02), ('latency', 200)) or {'quality': 0.02, 'latency': 200}",
        )
    out: list[tuple[str, float]] = []
    for index, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise Invalid(f"expected a (dimension, margin) pair, got {describe(pair)}", at=(index,))
        try:
            dimension = check_setting("noninferiority_dimension", pair[0])
            margin = check_setting("noninferiority_margin", pair[1])
        except Invalid as exc:
            raise exc.inside(index) from None
        if any(dimension == seen for seen, _ in out):
            raise Invalid(
                f"{dimension!r} already has a gate", hint="give each dimension one margin"
            )
        out.append((dimension, margin))
    return tuple(out)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {describe(value)}")
    return value


#: What alpha must be: a value past half-way is a confidence level given by mistake.
ALPHA_RULE = "a number > 0 and <= 0.5, a significance level such as 0.05 (1 - confidence)"

#: The rule of every setting (``limits.<name>`` for a guard rail). Power stops at 0.999:
#: beyond it the detectable effect is driven by the far tail of one quantile, and a
#: claim of 99.9x % power is not one a pilot can back.
_RULES: dict[str, Callable[[Any], Any]] = {
    "correction": _correction,
    # At most half-way: alpha=0.95 (the confidence level given for alpha) called every
    # difference significant, silently. The confidence level keeps (0, 1): it is also the
    # analysis' (AgenticLens's) level, which takes any.
    "alpha": lambda v: _number(v, ALPHA_RULE, lambda x: 0 < x <= 0.5),
    "confidence_level": lambda v: _number(
        v, "a number strictly between 0 and 1", lambda x: 0 < x < 1
    ),
    "method": lambda v: _one_of(method_names(), "method", v),
    "family": lambda v: _one_of(FAMILIES, "family", v),
    "cluster": _cluster,
    "noninferiority_margin": lambda v: _number(v, "a number >= 0", lambda x: x >= 0),
    "noninferiority_dimension": lambda v: _one_of(DIMENSIONS, "dimension", v),
    "noninferiority": _gates,
    "power": lambda v: _number(v, "a number > 0 and <= 0.999", lambda x: 0 < x <= 0.999),
    "resamples": lambda v: _integer(v, 99),
    "seed": lambda v: _integer(v, 0),
    "limits.max_configurations": lambda v: _integer(v, 2),
    "limits.max_evaluators": lambda v: _integer(v, 1),
    "limits.max_case_scores": lambda v: _integer(v, 1),
    "limits.allow_large": _flag,
}


def check_alpha(value: Any, location: str = "alpha") -> float:
    """``value`` as a float if it is an allowed alpha (the rule of :func:`check_setting`),
    else an InputError at ``location``: for the functions that take an alpha by itself
    (power planning, the non-inferiority gate).

    Examples
    --------
    >>> check_alpha(0.05)
    0.05
    >>> check_alpha(0.95)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: alpha: expected a number > 0 and <= 0.5, a \
significance level such as 0.05 (1 - confidence), got 0.95
    """
    try:
        return float(check_setting("alpha", value))
    except Invalid as exc:
        raise InputError(exc.message, location=location, hint=exc.hint) from None


def check_setting(key: str, value: Any) -> Any:
    """``value`` if it is allowed for the setting ``key``; the one rule for every source.

    Parameters
    ----------
    key
        A :class:`ComparisonsConfig` field, or ``limits.<name>`` for a guard rail.
    value
        Of the setting's type (a manifest's text is turned into numbers before).

    Raises
    ------
    Invalid
        What is wrong and, where it helps, the allowed values; the caller names the place.

    Examples
    --------
    >>> check_setting("power", 0.9)
    0.9
    >>> check_setting("power", 0.9995)
    Traceback (most recent call last):
    ...
    agenticlens_frames.formats._io.Invalid: expected a number > 0 and <= 0.999, got 0.9995
    """
    return _RULES[key](value)


# --------------------------------------------------------------------------- parsing


def as_comparisons(
    value: ComparisonsConfig | Mapping[str, Any] | None, *, file: str | Path = "comparisons"
) -> ComparisonsConfig | None:
    """Settings given either way: a :class:`ComparisonsConfig` as it is, a manifest-style
    mapping (``{"correction": "holm"}``) validated by :func:`parse_comparisons` (errors
    name ``file``), None as None.

    Examples
    --------
    >>> as_comparisons({"correction": "holm"}).correction
    'holm'
    >>> as_comparisons(None) is None
    True
    >>> as_comparisons("holm")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: comparisons: comparisons must be a mapping such as \
{'correction': 'holm'} or a ComparisonsConfig, got 'holm' (for a correction alone: \
comparisons={'correction': 'holm'})
    """
    if isinstance(value, Mapping):
        return parse_comparisons(dict(value), file=file)
    if value is None or isinstance(value, ComparisonsConfig):
        return value
    # A bare correction name (comparisons="holm") reached analyze() as an AttributeError.
    raise InputError(
        "comparisons must be a mapping such as {'correction': 'holm'} or a ComparisonsConfig, "
        f"got {value!r}",
        location="comparisons",
        hint=f"for a correction alone: comparisons={{'correction': {value!r}}}"
        if isinstance(value, str)
        else "e.g. comparisons={'correction': 'holm', 'alpha': 0.05}",
    )


#: Manifest keys that set more than one field.
_KEY_FIELDS = {
    "noninferiority": ("noninferiority_margin", "noninferiority_dimension", "noninferiority"),
    "evaluators": ("evaluators", "without"),
}


def effective_comparisons(
    manifest: ManifestSpec,
    given: ComparisonsConfig | Mapping[str, Any] | None,
    *,
    origin: str = "python",
) -> ComparisonsConfig | None:
    """The settings a run is judged under: its manifest's ``comparisons:``, with ``given``
    only where it agrees or where the manifest left a setting open.

    The one gate every Python entry point (``analyze``, ``case_verdicts``, ``Comparator``)
    passes settings through, so that a correction chosen after the run is refused there
    as on the command line (:func:`resolve_comparisons`). ``given`` as a mapping sets the
    keys it names; as a :class:`ComparisonsConfig`, the fields that differ from its
    defaults, and its correction.

    Parameters
    ----------
    manifest
        The run's manifest.
    given
        Settings passed by the caller, or None for the manifest's.
    origin
        ``"python"`` or ``"cli"``: how errors name the argument.

    Returns
    -------
    ComparisonsConfig or None
        None when neither the manifest nor ``given`` declares comparisons.

    Raises
    ------
    InputError
        ``given`` contradicts a setting that decides significance and the manifest fixed.

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest
    >>> m = load_manifest("data/support/manifest.yaml")  # declares correction: holm
    >>> effective_comparisons(m, {"correction": "holm", "confidence_level": 0.9}).source
    'manifest+python'
    >>> effective_comparisons(m, {"correction": "none"})
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: ...manifest.yaml: comparisons.correction: the \
experiment fixed correction = 'holm' in its manifest; 'none' was requested (...)
    """
    config = as_comparisons(given)
    if manifest.comparisons is None or config is None:
        return (
            parse_comparisons(manifest.comparisons, file=manifest.path)
            if config is None
            else config
        )
    named = _named(given, config) - {"correction", "source", "file", "without"}
    overrides: dict[str, Any] = {name: getattr(config, name) for name in named}
    if "evaluators" in overrides or config.without:
        # resolve_comparisons reads a dimension left out as evaluator None.
        overrides["evaluators"] = {**dict(config.evaluators), **dict.fromkeys(config.without)}
    return resolve_comparisons(manifest, correction=config.correction, origin=origin, **overrides)


def _named(given: ComparisonsConfig | Mapping[str, Any], config: ComparisonsConfig) -> set[str]:
    """The fields ``given`` sets: a mapping's keys (as fields), or a
    :class:`ComparisonsConfig`'s fields that differ from its defaults, and its correction."""
    if isinstance(given, Mapping):
        return {f for key in given for f in _KEY_FIELDS.get(key, (key,))}
    defaults = ComparisonsConfig(correction=config.correction, source=config.source)
    return {"correction"} | {
        f.name for f in fields(config) if getattr(config, f.name) != getattr(defaults, f.name)
    }


def names_setting(
    manifest: ManifestSpec, given: ComparisonsConfig | Mapping[str, Any] | None, key: str
) -> bool:
    """Whether the manifest's ``comparisons:`` block or ``given`` names the setting ``key``
    (a mapping's keys; a :class:`ComparisonsConfig`'s fields that differ from its defaults,
    as :func:`effective_comparisons` reads them), rather than leave it at its default.

    A setting left open is not a declaration: an early-stopping rule's α stands where no
    α was declared (:func:`~agenticlens_frames.runner.stopping.declared_rule`), as the
    run's final analysis fills it with the rule's (:func:`run_comparisons`).

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest
    >>> m = load_manifest("data/support/manifest.yaml")  # correction: holm, no alpha
    >>> names_setting(m, {"correction": "holm"}, "alpha")
    False
    >>> names_setting(m, {"correction": "holm", "alpha": 0.1}, "alpha")
    True
    """
    if key in (manifest.comparisons or {}):
        return True
    config = as_comparisons(given)
    return config is not None and key in _named(given, config)  # type: ignore[arg-type]


def run_comparisons(
    run: Any,
    given: ComparisonsConfig | Mapping[str, Any] | None,
    *,
    origin: str = "python",
) -> ComparisonsConfig | None:
    """:func:`effective_comparisons` of a run, under the settings its early-stopping rule
    decided with (``run.stopping``, a live run's with ``stop_when="decided"``): its
    declared correction, its α and its cluster.

    The rule split α by that correction, decided at that α, and with a cluster ran the
    clusters one at a time and fed its sequence once per cluster
    (:mod:`~agenticlens_frames.runner.stopping`): the final analysis declares the same
    three, even when they were given only in Python (``StopRule(correction=...,
    alpha=...)``, ``run_experiment(comparisons=...)``) and the manifest declares none, so
    that the verdicts read beside the stopping decision are at its level, by its unit and
    under its correction, whether the run stopped or ran to the end (either way the
    rule's statement leads and the verdicts are descriptive; the level and the unit
    declared before the run are still the only honest ones for them). Another value of
    any of them is refused, as one the manifest fixed is: chosen after the run, it is not
    a declaration. A rule without a declared correction
    (one candidate) leaves an analysis without one undeclared; a correction given to it
    then gets the rule's α and cluster.

    ``origin`` (``"python"`` or ``"cli"``) says how a refusal names the setting; settings
    the command line built (``source`` ending in ``cli``) are named by its options.

    Raises
    ------
    InputError
        ``given`` names another correction, α or cluster than the stopping rule's.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> run.stopping = {"correction": "bonferroni", "declared_correction": "holm", "alpha": 0.1}
    >>> config = run_comparisons(run, None)
    >>> config.correction, config.alpha
    ('holm', 0.1)
    >>> run_comparisons(run, {"correction": "none"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: correction: the run's early-stopping rule declared \
correction = 'holm' (its stopping decision split α by it); 'none' was requested...
    >>> run_comparisons(run, {"correction": "holm", "alpha": 0.05})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: alpha: the run's early-stopping rule decided at \
alpha = 0.1 ...; 0.05 was requested...
    """
    from .._stopping_block import rule_settings

    config = as_comparisons(given)
    if config is not None and config.source.endswith("cli"):
        origin = "cli"  # the command line's settings: its options name them
    stopping = getattr(run, "stopping", None)
    if not isinstance(stopping, Mapping):
        return effective_comparisons(run.manifest, given, origin=origin)
    rule = {k: v for k, v in rule_settings(stopping).items() if v is not None}
    named = set() if config is None else _named(given, config)  # type: ignore[arg-type]
    for key, value in rule.items():
        if config is not None and key in named and not _same(getattr(config, key), value):
            raise _rule_refusal(origin, key, value, getattr(config, key))
    own = effective_comparisons(run.manifest, None, origin=origin)
    for key, value in rule.items():
        # A manifest whose comparisons: block was edited after the run (a load of its
        # folder compares nothing): said as such, not as a setting someone requested.
        if (
            own is not None
            and key in (run.manifest.comparisons or {})
            and not _same(getattr(own, key), value)
        ):
            did, _ = _RULE_DID[key]
            raise InputError(
                f"the manifest declares {key} = {getattr(own, key)!r}, but the run's "
                f"early-stopping rule {did.format(value=value)}: the block was edited after "
                "the run, and the run's verdicts take the rule's",
                file=run.manifest.path,
                location=f"comparisons.{key}",
                hint=f"put back {key}: {value} in the manifest's comparisons: block (run.json's "
                "stopping records the rule's settings)",
            )
    if given is None:
        correction = rule.get("correction") or (own.correction if own is not None else None)
        if correction is None:
            return own  # nothing declared: per-comparison intervals, no verdict to level
        given = {"correction": correction}
    current = effective_comparisons(run.manifest, given, origin=origin)
    assert current is not None  # (given is not None)
    fill = {k: v for k, v in rule.items() if not _same(getattr(current, k), v)}
    if not fill:
        return current
    # The rule's settings where the given ones (or the manifest's) leave them open.
    filled = {**given, **fill} if isinstance(given, Mapping) else replace(given, **fill)
    return effective_comparisons(run.manifest, filled, origin=origin)


def _same(value: Any, rule: Any) -> bool:
    """A setting equals the rule's (α as numbers, the rest as they are)."""
    if isinstance(rule, float) and isinstance(value, (int, float)):
        return math.isclose(value, rule, rel_tol=1e-12)
    return bool(value == rule)


#: How a refusal of another setting than the early-stopping rule's says what the rule did.
_RULE_DID = {
    "correction": (
        "declared correction = {value!r} (its stopping decision split α by it)",
        "a correction",
    ),
    "alpha": ("decided at alpha = {value!r} (the level of its stopping decision)", "a level"),
    "cluster": ("ran cluster by cluster, cluster = {value!r} (its sequence's unit)", "a unit"),
}


def _rule_refusal(origin: str, key: str, value: Any, asked: Any) -> InputError:
    """The refusal of ``asked`` for the setting ``key`` of an analysis of a run whose
    early-stopping rule decided with ``value``, naming the option on the command line."""
    if origin == "cli":
        option = _CLI_OPTIONS.get(key, f"--{key.replace('_', '-')}")
        hint = f"give {option} {value}, or leave {option} out"
    else:
        hint = f"give {key}={value!r}, or leave it out"
    did, what = _RULE_DID[key]
    return _origin_error(
        origin,
        key,
        f"the run's early-stopping rule {did.format(value=value)}; {asked!r} was requested: "
        f"{what} chosen after the run is not a declared one",
        f"{hint}: the run's fixed-sample verdicts take the rule's",
    )


def with_analysis_level(
    config: ComparisonsConfig | None,
    manifest: ManifestSpec,
    given: ComparisonsConfig | Mapping[str, Any] | None,
    confidence_level: float,
) -> ComparisonsConfig | None:
    """``config`` with the analysis' confidence level, unless a level was declared.

    The level of the paired intervals is the analysis' (``analyze(confidence_level=)``,
    ``--confidence-level``) wherever neither the manifest's ``comparisons:`` nor ``given``
    names one: a declared correction must not leave the verdicts' intervals at 95 % beside
    a variant table at the level asked for. The level decides no significance (α does), so
    it is not fixed with the run.

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest
    >>> m = load_manifest("data/support/manifest.yaml")  # correction: holm, no level
    >>> config = effective_comparisons(m, None)
    >>> with_analysis_level(config, m, None, 0.9).confidence_level
    0.9
    >>> given = {"correction": "holm", "confidence_level": 0.99}
    >>> with_analysis_level(effective_comparisons(m, given), m, given, 0.9).confidence_level
    0.99
    """
    if config is None or math.isclose(config.confidence_level, confidence_level):
        return config
    declared = "confidence_level" in (manifest.comparisons or {})
    if isinstance(given, Mapping):
        declared = declared or "confidence_level" in given
    elif given is not None:
        default = ComparisonsConfig.__dataclass_fields__["confidence_level"].default
        declared = declared or not math.isclose(given.confidence_level, default)  # type: ignore[arg-type]
    return config if declared else replace(config, confidence_level=confidence_level)


@keyword_hints
def parse_comparisons(
    raw: Mapping[str, Any] | None, *, file: str | Path = "manifest.yaml"
) -> ComparisonsConfig | None:
    """Validate the manifest's ``comparisons:`` mapping (``ManifestSpec.comparisons``).

    ``raw`` and ``file`` are read by
    :func:`~agenticlens_frames.formats.comparisons.read_comparisons`, every value checked
    by :func:`check_setting`.

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
    values = read_comparisons(raw, file=file, check=check_setting)
    if values is None:
        return None
    if "limits" in values:
        values["limits"] = GuardRails(**values["limits"])
    return ComparisonsConfig(**values, source="manifest", file=str(file))


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
    if not isinstance(manifest, ManifestSpec):
        # A run or an analysis here failed with "'ExperimentRun' object has no attribute
        # 'comparisons'"; both carry the manifest this takes.
        holds = hasattr(manifest, "manifest")
        raise InputError(
            f"resolve_comparisons() takes the experiment's manifest, got {type(manifest).__name__}",
            location="manifest",
            hint="pass run.manifest"
            if holds
            else "pass load_manifest('manifest.yaml') or an experiment run's .manifest",
        )
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
        fields_ = [k for k in ComparisonsConfig.__dataclass_fields__ if k not in ("source", "file")]
        settable = list(dict.fromkeys(["correction", "origin", *fields_]))
        match = close_match(bad, settable)
        raise _origin_error(
            origin,
            bad,
            f"unknown comparison setting {bad!r}",
            (f"did you mean {match!r}? " if match else "") + f"it takes {', '.join(settable)}",
        )
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
        "noninferiority": "noninferiority",
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
        shown, requested = _show(getattr(declared, key)), _show(value)
        if written == "noninferiority" and (
            declared.noninferiority or explicit.get("noninferiority")
        ):
            # Several gates compare as a whole: one form's field alone (a margin of None
            # beside a list) would misstate what the manifest fixed.
            key = "noninferiority"
            asked = explicit.get("noninferiority") or (
                (
                    explicit.get("noninferiority_dimension", declared.noninferiority_dimension),
                    explicit.get("noninferiority_margin", declared.noninferiority_margin),
                ),
            )
            shown, requested = _show(declared.gates or None), _show(tuple(asked))
        if key == "evaluators" and declared.without:
            nulls = ", ".join(f"{d}: null" for d in declared.without)
            shown = shown[:-1] + ", " + nulls + "}" if declared.evaluators else "{" + nulls + "}"
        # An experiment built in Python (api.Experiment) has no manifest file to name.
        where = (
            "Experiment(comparisons=...)"
            if Path(manifest.path).suffix == ".experiment"
            else "its manifest"
        )
        raise InputError(
            f"the experiment fixed {key} = {shown} in {where}; {requested} was requested",
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
    for key, value in values.items():
        if key == "evaluators":
            out.update(_explicit_evaluators(value, origin))
            continue
        try:
            if key == "limits":
                if not isinstance(value, GuardRails):
                    raise Invalid("expected a GuardRails value")
                for item in fields(GuardRails):
                    check_setting(f"limits.{item.name}", getattr(value, item.name))
            else:
                out[key] = check_setting(key, value)
        except Invalid as exc:
            raise _origin_error(origin, key, exc.message, exc.hint) from None
    if len(out.get("noninferiority", ())) == 1:
        # One gate is compared with the manifest's as the single gate it is stored as.
        ((out["noninferiority_dimension"], out["noninferiority_margin"]),) = out.pop(
            "noninferiority"
        )
    return out


def _explicit_evaluators(value: Any, origin: str) -> dict[str, Any]:
    def fail(message: str, hint: str | None = None) -> InputError:
        return _origin_error(origin, "evaluators", message, hint)

    if isinstance(value, tuple):
        value = dict(value)
    if not isinstance(value, Mapping):
        raise fail("expected a mapping of dimension to evaluator name")
    chosen: dict[str, EvaluatorChoice] = {}
    dropped: list[str] = []
    for dim, choice in value.items():
        if dim not in DIMENSIONS:
            match = close_match(dim, DIMENSIONS)
            raise fail(
                f"unknown dimension {dim!r}",
                (f"did you mean {match!r}? " if match else "")
                + "dimensions are "
                + ", ".join(DIMENSIONS),
            )
        if choice is None:
            dropped.append(dim)
            continue
        try:
            chosen[dim] = choice if isinstance(choice, EvaluatorChoice) else parse_evaluator(choice)
        except Invalid as exc:
            raise fail(f"{dim}: {exc.message}", exc.hint) from None
    out: dict[str, Any] = {"evaluators": tuple((d, chosen[d]) for d in DIMENSIONS if d in chosen)}
    if dropped:
        out["without"] = tuple(d for d in DIMENSIONS if d in dropped)
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

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> manifest = load_manifest("data/support/manifest.yaml")
    >>> suite = load_suite("data/support/suite.yaml")
    >>> plan = evaluator_plan(manifest, suite, ComparisonsConfig(correction="holm"))
    >>> {dimension: choice.name for dimension, choice in plan.items()}  # the defaults
    {'quality': 'passed', 'safety': 'forbidden_tool', 'reliability': 'pass_hat_5',
     'latency': 'latency_ms', 'cost': 'cost_usd'}
    >>> no_latency = parse_comparisons({"correction": "holm", "evaluators": {"latency": None}})
    >>> list(evaluator_plan(manifest, suite, no_latency))
    ['quality', 'safety', 'reliability', 'cost']
    """
    plan = {d: c for d, c in default_evaluators(manifest, suite).items() if d not in config.without}
    plan.update(config.evaluator_map)
    return {d: plan[d] for d in DIMENSIONS if d in plan}


def check_pass_k(
    choice: EvaluatorChoice, trials: int, location: str, file: str | Path | None = None
) -> None:
    """Refuse a ``pass_hat_<k>`` / ``pass_at_<k>`` with k beyond the run's trial count.

    No case can have k attempts, so every per-case value would be NaN and the dimension
    would be dropped with a reason (failed trials) that is not the cause.

    Examples
    --------
    >>> check_pass_k(EvaluatorChoice("pass_hat_5"), 5, "evaluators.reliability")
    >>> check_pass_k(EvaluatorChoice("pass_hat_9"), 5, "evaluators.reliability")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: evaluators.reliability: evaluator 'pass_hat_9' \
needs 9 attempts per case but this run has 5 trial(s) (use k at most 5, e.g. pass_hat_5, \
or run more trials)
    """
    pass_k = choice.pass_k
    if pass_k is not None and pass_k[1] > trials:
        kind, k = pass_k
        raise InputError(
            f"evaluator {choice.name!r} needs {k} attempts per case but this run has "
            f"{trials} trial(s)",
            file=file,
            location=location,
            hint=f"use k at most {trials}, e.g. {kind}_{trials}, or run more trials",
        )


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

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> manifest = load_manifest("data/support/manifest.yaml")  # 5 variants, 5 trials
    >>> suite = load_suite("data/support/suite.yaml")  # 14 cases
    >>> check_guard_rails(manifest, suite, ComparisonsConfig(correction="holm"))
    {'configurations': 5, 'evaluators': 5, 'case_scores': 1750}
    """
    plan = evaluator_plan(manifest, suite, config)
    from_manifest = config.source == "manifest" or "evaluators" in (manifest.comparisons or {})
    for dimension, choice in plan.items():
        # before any call: a live run would otherwise learn it only at its analysis
        check_pass_k(
            choice,
            manifest.trial_count,
            f"{'comparisons.' if from_manifest else ''}evaluators.{dimension}",
            manifest.path if from_manifest else None,
        )
    counts = {"configurations": len(manifest.variants), "evaluators": len(plan)}
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


def check_run_guard_rails(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    comparisons: ComparisonsConfig | Mapping[str, Any] | None = None,
) -> dict[str, int] | None:
    """:func:`check_guard_rails` for a run about to start, with the settings it will be
    judged under (:func:`effective_comparisons`); nothing to check when it declares none.

    The runners call it before building an agent or calling a target.

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> m = load_manifest("data/support/manifest.yaml")
    >>> check_run_guard_rails(m, load_suite("data/support/suite.yaml"))["case_scores"]
    1750
    """
    config = effective_comparisons(manifest, comparisons)
    return None if config is None else check_guard_rails(manifest, suite, config)


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
    noninferiority: Sequence[tuple[str, float]] = (),
    allow_large: bool = False,
    known_evaluators: tuple[str, ...] = (),
) -> ComparisonsConfig | None:
    """The paired-comparison settings of an ``experiment run`` invocation, guard-railed.

    Paired comparisons are asked for when the manifest has ``comparisons:`` or any of the
    options is given; then a correction must be declared (``--correction`` or the
    manifest), an option that contradicts the manifest is refused, and the guard rails are
    checked here — before any trial is scored. ``noninferiority_margin`` is a quality
    gate (``--noninferiority-margin``); ``noninferiority`` adds gates on any dimension
    (``--noninferiority DIMENSION=MARGIN``), the two together being every gate asked for.

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
    from ..formats import load_manifest, load_suite

    manifest = load_manifest(manifest_file)
    options = (correction, alpha, method, cluster, noninferiority_margin)
    if (
        manifest.comparisons is None
        and all(o is None for o in options)
        and not noninferiority
        and not allow_large
    ):
        return None
    gates: tuple[tuple[str, float], ...] | None = None
    if noninferiority:
        # --noninferiority-margin is the quality gate among the others.
        quality = () if noninferiority_margin is None else (("quality", noninferiority_margin),)
        gates, noninferiority_margin = (*quality, *noninferiority), None
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
        noninferiority=gates,
        limits=GuardRails(allow_large=True) if allow_large else None,
    )
    suite = load_suite(suite_file, known_evaluators=known_evaluators)
    check_guard_rails(manifest, suite, config)
    return config
