"""Experiments in code: ``Experiment``, ``Variant``, a runner, a tracker and a comparator.

The workflow of spec/experiment-api.md (an agent framework's A/B module), on the same
tidy tables as the manifest path: an :class:`Experiment` becomes a manifest and a suite,
each agent becomes a live python target, and :func:`run` goes through the live runner —
so calls are concurrent, timed out for real, retried by policy, journaled and resumable,
and the result is an :class:`~agenticlens_frames.ExperimentRun` that
:func:`~agenticlens_frames.analyze` and every report accept.

Examples
--------
>>> experiment = Experiment(
...     name="shouting",
...     variants=[Variant(name="quiet", parameters={"style": "lower"}),
...               Variant(name="loud", parameters={"style": "upper"})],
...     dataset=["hello there", {"input": "refund please", "expected_output": "REFUND PLEASE"}],
... )
>>> class Agent:
...     def __init__(self, variant):
...         self.style = variant.parameters["style"]
...     def run(self, text):
...         return text.upper() if self.style == "upper" else text.lower()
>>> result = run(experiment, Agent, progress=False)
>>> result.attempts[["variant_id", "case_id", "output", "passed"]]
  variant_id   case_id         output  passed
0      quiet  input-01    hello there    True
1      quiet  input-02  refund please   False
2       loud  input-01    HELLO THERE    True
3       loud  input-02  REFUND PLEASE    True
>>> Comparator().compare(result)[["variant", "runs", "mean_output_length", "pass_rate"]]
  variant  runs  mean_output_length  pass_rate
0   quiet     2                12.0        0.0
1    loud     2                12.0        1.0

The pass rate is over the inputs with expectations only (here ``input-02``): an input
without checks has no pass/fail.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import numbers
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd

from ._deprecate import class_keyword_hints
from ._plain import plain
from ._suggest import close_match, require_known
from ._values import clip, count_noun
from .errors import (
    InputError,
    check_count,
    check_list,
    check_number,
    check_path,
    check_proportion,
    format_location,
)
from .evaluators import EvaluatorRegistry, as_registry
from .formats import load_suite
from .formats._io import Invalid, to_float, to_mapping, to_str, to_str_list
from .formats.model import CaseSpec, ManifestSpec, SuiteSpec, VariantSpec
from .formats.suite import EXPECTATION_KEYS as _EXPECTATIONS
from .frames import ExperimentRun, read_parquet, run_attribute_error
from .paired.case_level import case_level_summary
from .paired.settings import (
    ComparisonsConfig,
    as_comparisons,
    check_run_guard_rails,
    parse_comparisons,
)
from .paired.verdicts import headline_pass_rates
from .runner.live import LiveRunResult, arun_live, run_coroutine
from .runner.python_target import SPARE_THREADS, PythonTarget, accepts_keyword
from .runner.retry import RetryPolicy

if TYPE_CHECKING:
    from .analysis import ExperimentAnalysis

__all__ = [
    "AgentContext",
    "Comparator",
    "Experiment",
    "ExperimentResult",
    "Tracker",
    "Variant",
    "VariantResult",
    "arun",
    "run",
]

# Keys of a dataset entry that make it a suite case rather than a plain input.
_CASE_KEYS = ("id", "name", "input", "tags", "metadata", *_EXPECTATIONS)


def _as_items(value: Any, what: str, experiment: str) -> list[Any]:
    """A list of ``value``'s items; a string, bytes, a single mapping or a DataFrame refused
    by name."""
    if isinstance(value, pd.DataFrame):
        # Iterating a frame gives its column names: a 500-row dataset became one input
        # per column ("input", "expected_contains"), silently.
        records = "df.to_dict('records')"
        call = f"add_inputs({records})" if what == "inputs" else f"{what}={records}"
        raise InputError(
            f"{what} must be a list, got a DataFrame ({len(value)} rows; iterating it "
            "gives its column names, not its rows)",
            file=f"experiment {experiment!r}",
            location=what,
            hint=f"pass one case per row: {call}",
        )
    return check_list(
        value,
        what,
        file=f"experiment {experiment!r}",
        hint="wrap one item in a list: "
        + ("add_inputs([...])" if what == "inputs" else f"{what}=[...]"),
    )


def _check_name(
    name: Any, what: str, *, location: str = "name", example: str | None = None
) -> None:
    """A variant's or an experiment's name is its id in every table and report: text.

    ``location`` names the argument, ``example`` the call to write (by default a
    Variant's or an Experiment's, after ``what``).

    Examples
    --------
    >>> _check_name(123, "a variant's name")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: name: a variant's name must be a non-empty str, \
got int 123 (e.g. Variant(name='baseline'))
    """
    if not isinstance(name, str) or not name:
        if example is None:
            example = (
                "Variant(name='baseline')" if "variant" in what else "Experiment('tone-test', ...)"
            )
        raise InputError(
            f"{what} must be a non-empty str, got {type(name).__name__} {name!r}",
            location=location,
            hint=f"e.g. {example}",
        )


def _check_variant(variant: Any, experiment: str, index: int) -> None:
    if not isinstance(variant, Variant):
        raise InputError(
            f"variants[{index}] is a {type(variant).__name__}, not a Variant",
            file=f"experiment {experiment!r}",
            location=f"variants[{index}]",
            hint="e.g. Variant(name='baseline', model='gpt-4o-mini')",
        )


def _check_variants(variants: list[Any], baseline: Any, experiment: str) -> None:
    """Refuse what makes ``variants`` with ``baseline`` no comparison, as soon as both are
    known: an item that is no Variant, a name given twice, a baseline that names none of
    them. With no variant yet (an experiment built with ``add_variant``) the baseline is
    checked when the experiment becomes a manifest.

    Examples
    --------
    >>> _check_variants([Variant("small"), Variant("large")], "lage", "demo")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: experiment 'demo': baseline: unknown baseline variant \
'lage' (did you mean 'large'? known: small, large)
    """
    first: dict[str, int] = {}
    for index, variant in enumerate(variants):
        _check_variant(variant, experiment, index)
        if variant.name in first:
            # Two variants of one name are one id in every table: their attempts would mix.
            raise InputError(
                f"variant names must be unique: {variant.name} is already in the experiment "
                f"(variants[{first[variant.name]}])",
                file=f"experiment {experiment!r}",
                location=f"variants[{index}]",
                hint="give the new variant another name",
            )
        first[variant.name] = index
    if baseline is None:
        return
    _check_name(
        baseline, "the baseline", location="baseline", example="baseline='<a variant's name>'"
    )
    if variants:
        try:
            require_known("baseline variant", [baseline], first, location="baseline")
        except InputError as exc:
            raise exc.with_file(f"experiment {experiment!r}") from None


def _checked_comparisons(comparisons: Any, experiment: str) -> dict[str, Any] | None:
    """The declared comparison settings as a plain dict, checked as a manifest's are.

    Examples
    --------
    >>> _checked_comparisons({"correction": "holm"}, "demo")
    {'correction': 'holm'}
    >>> _checked_comparisons({"alpha": 0.05}, "demo")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: experiment 'demo': comparisons: missing required key 'correction' ...
    """  # noqa: E501
    if comparisons is None:
        return None
    if not isinstance(comparisons, Mapping):
        raise InputError(
            f"comparisons must be a mapping such as {{'correction': 'holm'}}, got {comparisons!r}",
            location="comparisons",
        )
    # As a manifest's is when it is loaded: a misspelt correction found only by analyze()
    # would come after every call was paid for.
    parse_comparisons(dict(comparisons), file=f"experiment {experiment!r}")
    return dict(comparisons)


# --------------------------------------------------------------------------- definitions


@class_keyword_hints()
@dataclass
class Variant:
    """One configuration of the agent under test.

    ``model``, ``temperature`` and ``prompt_template`` are top-level fields (as in the
    guide), ``parameters`` holds anything else; all of them become the variant's factors
    (``factor_model``, ``factor_temperature`` ... in the ``variants`` table).

    Examples
    --------
    >>> Variant(name="gpt", model="openai:gpt-4o", temperature=0.2,
    ...         parameters={"retrieval": "dense"}).factors
    {'model': 'openai:gpt-4o', 'temperature': '0.2', 'retrieval': 'dense'}
    """

    name: str
    model: str | None = None
    temperature: float | None = None
    prompt_template: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name, "a variant's name")
        if not isinstance(self.parameters, Mapping):
            # A list or a string failed later, in ``factors``, as "'list' object has no
            # attribute 'items'".
            raise InputError(
                f"variant {self.name!r}: parameters must be a mapping of name to value, "
                f"got {type(self.parameters).__name__} {self.parameters!r}",
                location="parameters",
                hint="e.g. Variant(name='baseline', parameters={'retrieval': 'dense'})",
            )
        # The typed fields by the manifest loader's own converters (its words): a
        # temperature="hot" became the factor "hot", compared as a level with 0.2.
        for key, convert, example in (
            ("model", to_str, "'gpt-4o-mini'"),
            ("temperature", to_float, "0.2"),
            ("prompt_template", to_str, "'Answer briefly: {input}'"),
            ("description", to_str, "'the small model'"),
        ):
            value = getattr(self, key)
            if value is None and key != "description":
                continue
            try:
                convert(value)
            except Invalid as exc:
                raise InputError(
                    f"variant {self.name!r}: {exc.message}",
                    location=key,
                    hint=exc.hint or f"e.g. Variant({self.name!r}, {key}={example})",
                ) from None
        self.factors  # noqa: B018 - a parameter that repeats a field is refused when made

    @property
    def factors(self) -> dict[str, str]:
        """Configuration as factor name → string value (unset fields left out; a
        parameter that is not a string is written as JSON).

        Examples
        --------
        >>> Variant("a", model="gpt-4o-mini", parameters={"k": 3, "tools": ["search"]}).factors
        {'model': 'gpt-4o-mini', 'k': '3', 'tools': '["search"]'}
        >>> Variant("b").factors
        {}
        """
        out = {
            name: str(value)
            for name, value in (
                ("model", self.model),
                ("temperature", self.temperature),
                ("prompt_template", self.prompt_template),
            )
            if value is not None
        }
        for name, value in self.parameters.items():
            if str(name) in out:
                # Silently one of the two would be the factor, the other lost.
                raise InputError(
                    f"variant {self.name!r} sets {name!r} twice: as a field "
                    f"({out[str(name)]!r}) and in parameters ({value!r})",
                    location=f"parameters[{name!r}]",
                    hint=f"keep one of them (Variant({name}=...) or parameters={{{name!r}: ...}})",
                )
            out[str(name)] = value if isinstance(value, str) else json.dumps(value, default=str)
        return out


@class_keyword_hints()
@dataclass
class Experiment:
    """Variants to compare on a dataset.

    Parameters
    ----------
    name
        The experiment's name (its id is ``<name>@<version>``).
    hypothesis
        What the experiment should show, in words (kept in the manifest metadata).
    variants
        At least two, with unique names; the first is the baseline unless ``baseline``
        names another.
    dataset
        Plain inputs (anything an agent accepts), or suite cases: mappings with an
        ``input`` and expectations in the suite format (``expected_contains``,
        ``required_tools``, ``max_latency_ms`` ...; optional ``id``, ``name``, ``tags``,
        ``metadata``), or :class:`~agenticlens_frames.formats.CaseSpec` objects. Only
        cases with expectations have a pass/fail; the others compare latency, cost and
        output shape.
    metadata, tags
        Kept with the experiment (manifest metadata).
    version
        The experiment's version (its id is ``<name>@<version>``).
    baseline
        The name of the variant the others are compared with (default: the first).
    comparisons
        The paired-comparison settings, declared before the run as a manifest's
        ``comparisons:`` is (``{"correction": "holm"}``; ``alpha``, ``method`` ...,
        docs/statistics.md). With one, :meth:`Comparator.summary`, ``analyze`` and every
        report call a candidate better or worse after that correction; without one they
        show per-comparison intervals and call nothing significant.

    Examples
    --------
    >>> Experiment("support", variants=[Variant("small"), Variant("large")],
    ...            dataset=["Where is my parcel?", "Cancel my order"],
    ...            comparisons={"correction": "holm"})
    Experiment('support@1', variants=['small', 'large'], baseline='small', inputs=2,
    correction='holm')
    """

    name: str
    hypothesis: str | None = None
    variants: list[Variant] = field(default_factory=list)
    dataset: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    version: str = "1"
    baseline: str | None = None
    comparisons: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        _check_name(self.name, "an experiment's name")
        # A string or a single mapping is iterable too: taken as a list, "Where is my
        # parcel?" would become 19 one-character inputs and a case its keys.
        self.dataset = _as_items(self.dataset, "dataset", self.name)
        self.variants = _as_items(self.variants, "variants", self.name)
        # tags="nightly" became the tags n, i, g, h, t, l, y (written "n,i,g,h,t,l,y").
        self.tags = _as_items(self.tags, "tags", self.name)
        if not isinstance(self.metadata, Mapping):
            # A list failed first in run(), as "'list' object has no attribute 'items'".
            raise InputError(
                f"metadata must be a mapping, got {type(self.metadata).__name__}",
                file=f"experiment {self.name!r}",
                location="metadata",
                hint="e.g. metadata={'owner': 'support-team'}",
            )
        # A repeated name or an unknown baseline is refused here, where both are known, not
        # first by run().
        _check_variants(self.variants, self.baseline, self.name)
        # An experiment that asks for paired comparisons cannot be made without a
        # correction (spec): refused here, not first when it is run.
        _checked_comparisons(self.comparisons, self.name)
        # From here on, a baseline or a variants list set on the experiment is checked as
        # one given to the constructor (see __setattr__).
        self._made = True

    def __setattr__(self, key: str, value: Any) -> None:
        # Setting the baseline or the variants later is refused as in the constructor,
        # before the experiment holds them: `experiment.baseline = "lage"` was first
        # refused by run().
        if getattr(self, "_made", False):
            if key == "variants":
                value = _as_items(value, "variants", self.name)
                _check_variants(value, self.baseline, self.name)
            elif key == "baseline":
                _check_variants(self.variants, value, self.name)
        super().__setattr__(key, value)

    @property
    def experiment_id(self) -> str:
        """``<name>@<version>``: the id its runs, reports and archive rows carry.

        Examples
        --------
        >>> Experiment("support", version="2", variants=[Variant("a"), Variant("b")]).experiment_id
        'support@2'
        """
        return f"{self.name}@{self.version}"

    def __repr__(self) -> str:
        # The dataclass repr printed every variant's fields and the whole dataset: a
        # notebook cell showing an experiment of 500 inputs filled the screen. One line:
        # what is compared, on how much, and whether verdicts were declared.
        baseline = self.baseline or (self.variants[0].name if self.variants else None)
        comparisons = self.comparisons
        correction = (
            getattr(comparisons, "correction", None)
            if not isinstance(comparisons, Mapping)
            else comparisons.get("correction")
        )
        return (
            f"Experiment({self.experiment_id!r}, variants={[v.name for v in self.variants]!r}, "
            f"baseline={baseline!r}, inputs={len(self.dataset)}, correction={correction!r})"
        )

    def add_variant(self, variant: Variant) -> Experiment:
        """Append a variant (returns the experiment, for chaining).

        Examples
        --------
        >>> experiment = Experiment("support", variants=[Variant("small")], dataset=["hi"])
        >>> experiment.add_variant(Variant("large", model="gpt-large"))
        Experiment('support@1', variants=['small', 'large'], baseline='small', inputs=1,
        correction=None)
        >>> experiment.add_variant(Variant("large"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        agenticlens_frames.errors.InputError: ...: variant names must be unique: large is ...
        """
        # Refused here, where it is added, rather than first by run(); the baseline is
        # not checked, since the variant it names may be added next.
        _check_variants([*self.variants, variant], None, self.name)
        self.variants.append(variant)
        return self

    def add_inputs(self, inputs: Iterable[Any]) -> Experiment:
        """Append inputs or cases to the dataset (returns the experiment).

        Examples
        --------
        >>> experiment = Experiment("support", variants=[Variant("a"), Variant("b")])
        >>> experiment.add_inputs(["Where is my parcel?",
        ...                        {"input": "Refund please", "expected_contains": ["refund"]}])
        Experiment('support@1', variants=['a', 'b'], baseline='a', inputs=2, correction=None)
        """
        self.dataset.extend(_as_items(inputs, "inputs", self.name))
        return self

    @classmethod
    def from_suite(cls, name: str, suite: str | Path | SuiteSpec, **kwargs: Any) -> Experiment:
        """An experiment whose dataset is a suite file's cases (with their expectations).

        ``kwargs`` are the other fields of :class:`Experiment` (``variants``, ...).

        Examples
        --------
        >>> experiment = Experiment.from_suite("support", "data/support/suite.yaml",
        ...                                    variants=[Variant("a"), Variant("b")])
        >>> experiment
        Experiment('support@1', variants=['a', 'b'], baseline='a', inputs=14, correction=None)
        >>> experiment.dataset[0].id
        'refund-damaged-item'
        """
        spec = suite if isinstance(suite, SuiteSpec) else load_suite(suite)
        return cls(name=name, dataset=list(spec.cases), **kwargs)

    # ------------------------------------------------------------------ as specs

    def to_suite(self, *, known_evaluators: Iterable[str] = ()) -> SuiteSpec:
        """The dataset as a validated suite (plain inputs become cases without checks).

        Examples
        --------
        >>> experiment = Experiment("support", variants=[Variant("a"), Variant("b")],
        ...     dataset=["hi", {"input": "refund please", "expected_contains": ["refund"]}])
        >>> [(case.id, case.input, case.expected_contains) for case in experiment.to_suite().cases]
        [('input-01', 'hi', ()), ('input-02', 'refund please', ('refund',))]
        """
        if not self.dataset:
            # Known only now: an experiment may be given its inputs one add_inputs at a time.
            raise InputError(
                "the dataset is empty: there is nothing to run the variants on",
                file=f"experiment {self.name!r}",
                location="dataset",
                hint="add inputs with experiment.add_inputs(['...', ...]), or pass "
                "Experiment(..., dataset=[...])",
            )
        width = max(2, len(str(len(self.dataset))))
        cases = []
        for index, item in enumerate(self.dataset):
            if isinstance(item, CaseSpec):
                cases.append(dataclasses.replace(item, index=index))
            elif isinstance(item, Mapping) and "input" in item and set(item) <= set(_CASE_KEYS):
                cases.append(self._case(item, index, width, tuple(known_evaluators)))
            elif isinstance(item, Mapping) and ("input" in item or set(item) & set(_EXPECTATIONS)):
                self._refuse_entry(item, index)
            else:
                cases.append(
                    CaseSpec(
                        id=f"input-{index + 1:0{width}d}",
                        name=_label(item),
                        index=index,
                        input=item,
                    )
                )
        seen: dict[str, int] = {}
        for case in cases:
            _refuse_unstable_input(case.input, self.name, case.index)
            if case.id in seen:
                raise InputError(
                    f"case id {case.id!r} is used twice (dataset[{seen[case.id]}] and "
                    f"dataset[{case.index}])",
                    file=f"experiment {self.name!r}",
                    hint="give every case a unique id",
                )
            seen[case.id] = case.index
        return SuiteSpec(
            path=Path(f"{self.name}.dataset"),
            name=self.name,
            version=self.version,
            cases=tuple(cases),
        )

    def _refuse_entry(self, item: Mapping[str, Any], index: int) -> None:
        """A mapping that looks like a case but is not one: its expectations would be
        dropped (no ``input``) or the whole mapping sent to the agent (an unknown key)."""
        where = {"file": f"experiment {self.name!r}", "location": f"dataset[{index}]"}
        if "input" not in item:
            expectations = ", ".join(sorted(set(item) & set(_EXPECTATIONS)))
            raise InputError(
                f"a case with expectations ({expectations}) but no 'input'",
                hint="add the agent's input as 'input': {'input': ..., "
                f"'{expectations.split(', ')[0]}': ...}}",
                **where,
            )
        unknown = sorted(str(k) for k in set(item) - set(_CASE_KEYS))
        suggestions = [close_match(k, _CASE_KEYS) for k in unknown]
        guess = next((f"did you mean {m!r}? " for m in suggestions if m), "")
        raise InputError(
            f"unknown case key(s) {', '.join(map(repr, unknown))}",
            hint=f"{guess}case keys are input, id, name, tags, metadata and the suite's "
            "expectations; to give the agent a mapping, put it under 'input'",
            **where,
        )

    def _in_dataset(self, problem: InputError, index: int) -> InputError:
        """A problem of the one-case suite :meth:`_case` validates, as one of the dataset."""
        location = (problem.location or "").replace("cases[0]", f"dataset[{index}]", 1)
        return InputError(
            problem.message,
            file=f"experiment {self.name!r}",
            location=location or f"dataset[{index}]",
            hint=problem.hint,
        )

    def _case(
        self, item: Mapping[str, Any], index: int, width: int, evaluators: tuple[str, ...]
    ) -> CaseSpec:
        entry = {k: v for k, v in item.items() if k != "input"}
        entry.setdefault("id", f"input-{index + 1:0{width}d}")
        entry.setdefault("name", _label(item["input"]))
        if not any(k in entry for k in _EXPECTATIONS):
            # No suite file to validate: the suite loader's own converters, same messages.
            fields: dict[str, Any] = {}
            for key, convert in (("tags", to_str_list), ("metadata", to_mapping)):
                if key in entry:
                    try:
                        fields[key] = convert(entry[key])
                    except Invalid as exc:
                        raise InputError(
                            exc.message,
                            file=f"experiment {self.name!r}",
                            location=format_location(("dataset", index, key, *exc.at)),
                            hint=exc.hint,
                        ) from None
            return CaseSpec(
                id=str(entry["id"]),
                name=str(entry["name"]),
                index=index,
                input=item["input"],
                tags=fields.get("tags", ()),
                metadata=dict(fields.get("metadata", {})),
            )
        # The suite loader is the one validator of case fields: give it a one-case suite.
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "dataset.json"
            document = {"name": self.name, "version": self.version, "cases": [entry]}
            path.write_text(json.dumps(document, default=str), encoding="utf-8")
            try:
                suite = load_suite(path, known_evaluators=evaluators)
            except InputError as exc:
                # Every problem the loader found, each placed in the dataset.
                problems = [self._in_dataset(problem, index) for problem in exc.problems or [exc]]
                raise InputError.of_all(problems, exc.unlisted) from None
        return dataclasses.replace(suite.cases[0], index=index, input=item["input"])

    def to_manifest(
        self,
        *,
        trials: int = 1,
        random_seed: int | None = None,
        timeout_seconds: float = 30.0,
        concurrency: int = 1,
        target: str = "agent",
    ) -> ManifestSpec:
        """The experiment as a manifest of python targets (one per variant).

        Examples
        --------
        >>> experiment = Experiment("support", variants=[Variant("a"), Variant("b")],
        ...                         dataset=["hi"], baseline="b")
        >>> manifest = experiment.to_manifest(trials=3, random_seed=7)
        >>> manifest.variant_ids, manifest.baseline_variant_id, manifest.trial_count
        (('a', 'b'), 'b', 3)
        """
        names = [v.name for v in self.variants]
        if len(self.variants) < 2:
            # Known only now: an experiment may be built one add_variant at a time.
            raise InputError(
                f"has {len(names)} variant(s) {names!r}; a comparison needs at least two "
                "(a baseline and a candidate)",
                file=f"experiment {self.name!r}",
                location="variants",
                hint="add one with experiment.add_variant(Variant(name=...)), or pass "
                "Experiment(..., variants=[Variant(...), Variant(...)])",
            )
        # Checked again: the variants list may have been changed in place since.
        _check_variants(self.variants, self.baseline, self.name)
        baseline = self.baseline or names[0]
        check_count(trials, "trials", location="trials")
        if not check_number(timeout_seconds, "timeout_seconds", location="timeout_seconds") > 0:
            raise InputError(
                f"timeout_seconds must be > 0, got {timeout_seconds!r}",
                location="timeout_seconds",
            )
        check_count(concurrency, "concurrency", location="concurrency")
        if random_seed is not None:
            if isinstance(random_seed, bool) or not isinstance(random_seed, numbers.Integral):
                raise InputError(
                    f"random_seed must be a whole number or None, got {random_seed!r}",
                    location="random_seed",
                )
            random_seed = int(random_seed)  # (a numpy integer is one too)
        # Checked again: the field may have been changed since the experiment was made.
        comparisons = _checked_comparisons(self.comparisons, self.name)
        metadata = {str(k): str(v) for k, v in self.metadata.items()}
        if self.hypothesis:
            metadata["hypothesis"] = self.hypothesis
        if self.tags:
            metadata["tags"] = ",".join(self.tags)
        variants = tuple(
            VariantSpec(
                id=v.name,
                name=v.name,
                target_kind="python",
                target=f"{target}({v.name})",
                resolved_target=f"{target}({v.name})",
                timeout_seconds=float(timeout_seconds),
                description=v.description,
                factors=v.factors,
            )
            for v in self.variants
        )
        return ManifestSpec(
            path=Path(f"{self.name}.experiment"),
            name=self.name,
            version=self.version,
            baseline_variant_id=baseline,
            variants=variants,
            trial_count=trials,
            random_seed=random_seed,
            max_workers=concurrency,
            metadata=metadata,
            comparisons=comparisons,
        )


#: Python's default repr of an object: it names the object's address, which changes from
#: process to process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _refuse_unstable_input(value: Any, experiment: str, index: int) -> None:
    """Refuse an input whose text form names a memory address (an object without a
    ``__repr__`` of its own): the case's name and the suite's digest would change from
    process to process, so a run with it could never be resumed, nor its comparisons
    locked.

    Examples
    --------
    >>> _refuse_unstable_input({"q": [1, "x"]}, "demo", 0)
    >>> _refuse_unstable_input(object(), "demo", 2)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: experiment 'demo': dataset[2]: an object ...
    """
    found: list[str] = []

    def text(obj: Any) -> str:
        found.append(shown := repr(obj))
        return shown

    json.dumps(plain(value), default=text)
    unstable = next((t for t in found if _ADDRESS.search(t)), None)
    if unstable is not None:
        raise InputError(
            f"an object whose text form changes from process to process ({unstable}): the "
            "run's cases could not be named, resumed or locked with it",
            file=f"experiment {experiment!r}",
            location=f"dataset[{index}]",
            hint="give a str, a dict, a list or a dataclass, or give its class a __repr__ "
            "that states its content",
        )


def _short_repr(value: Any, width: int = 40) -> str:
    """``repr(value)``, cut to ``width`` characters (for messages).

    Examples
    --------
    >>> _short_repr("abc"), _short_repr("x" * 50)[-3:]
    ("'abc'", 'xx…')
    """
    return clip(repr(value), width)


def _label(value: Any, width: int = 60) -> str:
    # A dataclass by its fields: its repr leads with the class's qualified name.
    text = value if isinstance(value, str) else json.dumps(plain(value), default=str)
    return clip(" ".join(text.split()), width)


@class_keyword_hints()
@dataclass
class AgentContext:
    """The context handed to agents whose ``run`` accepts ``context`` (when none is given).

    The runner sets ``experiment_id`` on it, whichever context object is used, so an
    agent's telemetry can be correlated with the experiment.

    Examples
    --------
    >>> class Agent:
    ...     def run(self, text, context):
    ...         return f"{context.experiment_id}/{context.metadata['user']}: {text}"
    >>> experiment = Experiment("ctx", variants=[Variant("a"), Variant("b")], dataset=["hi"])
    >>> result = run(experiment, lambda variant: Agent(),
    ...              context=AgentContext(metadata={"user": "ana"}), progress=False)
    >>> result.attempts["output"].tolist()
    ['ctx/ana: hi', 'ctx/ana: hi']
    """

    experiment_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- agents


def _as_payload(result: Any, elapsed_ms: float) -> dict[str, Any]:
    """An agent's return value as a live payload; the measured time is its latency.

    A trace without a latency of its own gets the measured one (else it would be read as
    0 ms); ``None`` — returned, as a payload's ``output`` or as a result object's — is
    refused, as the attempt's error: an agent that returns nothing has a bug, not an
    answer to score.
    """
    if result is None:
        raise ValueError("the agent returned None (no output)")
    if isinstance(result, Mapping) and "output" in result:
        payload = dict(result)
        if payload["output"] is None:  # not the text "None" to score
            raise ValueError("the agent returned a payload with output None (no output)")
        if not isinstance(payload["output"], str):
            payload["output"] = _as_text(payload["output"])
        trace = payload.setdefault("trace", {"total_latency_ms": elapsed_ms})
        if (
            isinstance(trace, Mapping)
            and "total_latency_ms" not in trace
            and not _run_shaped(trace)
        ):
            payload["trace"] = {**trace, "total_latency_ms": elapsed_ms}
        return payload
    if not isinstance(result, (str, Mapping, list)) and hasattr(result, "output"):
        result = result.output  # e.g. an agent framework's run result object
        if result is None:
            raise ValueError("the agent's result has output None (no output)")
    return {"output": _as_text(result), "trace": {"total_latency_ms": elapsed_ms}}


def _run_shaped(trace: Mapping[str, Any]) -> bool:
    """A Run-shaped trace (spans with ids) has its latency from its timestamps."""
    spans = trace.get("spans")
    return isinstance(spans, list) and any(
        isinstance(span, Mapping) and "span_id" in span for span in spans
    )


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _agent_function(agent: Any, context: Any) -> Callable[[Any], Any]:
    """``input -> payload`` for an agent with ``run`` (sync or async), or a callable."""
    method = getattr(agent, "run", None)
    if method is None:
        if not callable(agent):
            raise InputError(
                f"the agent factory returned a {type(agent).__name__}, which has no run() "
                "method and is not callable"
            )
        method = agent
    pass_context = accepts_keyword(method, "context") and not isinstance(method, type)

    def invoke(value: Any) -> Any:
        start = time.perf_counter()
        result = method(value, context=context) if pass_context else method(value)
        if inspect.isawaitable(result):
            return _finish(result, start)
        return _as_payload(result, (time.perf_counter() - start) * 1000.0)

    async def ainvoke(value: Any) -> Any:
        start = time.perf_counter()
        result = method(value, context=context) if pass_context else method(value)
        result = await result
        return _as_payload(result, (time.perf_counter() - start) * 1000.0)

    is_async = inspect.iscoroutinefunction(method) or inspect.iscoroutinefunction(
        getattr(method, "__call__", None)  # noqa: B004
    )
    return ainvoke if is_async else invoke


async def _finish(awaitable: Any, start: float) -> dict[str, Any]:
    result = await awaitable
    return _as_payload(result, (time.perf_counter() - start) * 1000.0)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class VariantResult:
    """One variant's outcome in one run (the guide's ``VariantResult``, plus pass rate).

    ``outputs`` are the agent's outputs of the calls that succeeded, in (trial, case)
    order; ``avg_latency_ms`` is their mean latency; ``total_runs`` counts the (trial,
    case) attempts that were made, failed ones included (``errors``) — not the
    placeholders of a trial that failed as a whole, whose cases never ran.

    Examples
    --------
    >>> experiment = Experiment(
    ...     "echo", variants=[Variant("echo"), Variant("short")],
    ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
    ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
    >>> def agent_factory(variant):
    ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
    >>> short = run(experiment, agent_factory, progress=False).variant_results[1]
    >>> short.variant_name, short.outputs, short.total_runs, short.pass_rate
    ('short', ['ref', 'whe', 'hi'], 3, 0.0)
    """

    experiment_name: str
    variant_name: str
    outputs: list[str]
    avg_latency_ms: float | None
    total_runs: int
    timestamp: str
    metadata: dict[str, Any] = field(default_factory=dict)
    errors: int = 0
    #: Over the evaluated attempts of the inputs that have expectations (an input without
    #: checks has no pass/fail); None when there are none.
    pass_rate: float | None = None
    passes: int = 0
    scored_runs: int = 0
    #: Mean cost of the calls that succeeded and reported one; None when none did.
    avg_cost_usd: float | None = None


def variant_results(run: ExperimentRun, *, timestamp: str | None = None) -> list[VariantResult]:
    """The per-variant results of a run, in variant order (:class:`VariantResult`).

    ``timestamp`` is stamped on each (default: now, UTC).

    Examples
    --------
    >>> experiment = Experiment(
    ...     "echo", variants=[Variant("echo"), Variant("short")],
    ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
    ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
    >>> def agent_factory(variant):
    ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
    >>> result = run(experiment, agent_factory, trials=2, progress=False)
    >>> [(r.variant_name, r.total_runs, r.passes, r.scored_runs)
    ...  for r in variant_results(result.run, timestamp="2026-01-05T08:00:00Z")]
    [('echo', 6, 4, 4), ('short', 6, 0, 4)]
    """
    from .paired.dimensions import evaluation

    stamp = timestamp or _now()
    att = run.attempts
    # Pass counts over the evaluated attempts some check judged (an input without
    # expectations has none), from the evaluation the case-level summaries and the
    # verdicts use, so Comparator's paths never disagree.
    ev = evaluation(run, "passed")
    out = []
    for index, v in enumerate(run.manifest.variants):
        rows = att[(att["variant_id"] == v.id) & (att["status"] != "trial_failed")]
        ok = rows["status"] == "ok"
        latency = rows.loc[ok, "latency_ms"].dropna()
        cost = rows.loc[ok, "cost_usd"].dropna()
        passes = round(float(ev.sums[index].sum()))
        scored = int(ev.counts[index].sum())
        out.append(
            VariantResult(
                experiment_name=run.manifest.name,
                variant_name=v.id,
                # A call may succeed with no output (a run built from frames without an
                # `output` column): it has no length, and astype(str) keeps its NaN.
                outputs=rows.loc[ok, "output"].dropna().astype(str).tolist(),
                avg_latency_ms=float(latency.mean()) if len(latency) else None,
                total_runs=len(rows),
                timestamp=stamp,
                metadata={"factors": dict(v.factors), "experiment_id": run.experiment_id},
                errors=int((~ok).sum()),
                pass_rate=passes / scored if scored else None,
                passes=passes,
                scored_runs=scored,
                avg_cost_usd=float(cost.mean()) if len(cost) else None,
            )
        )
    return out


def judged_cases(run: ExperimentRun) -> np.ndarray:
    """Per case of ``run``: whether anything judged it pass or fail (it declares expectations).

    A run built from frames (:meth:`ExperimentRun.from_frames`) declares one per case: the
    user's ``passed`` column judged it.

    Examples
    --------
    >>> import pandas as pd
    >>> att = pd.DataFrame({"variant_id": ["a", "b"], "trial": [1, 1], "case_id": ["x", "x"],
    ...                     "passed": [True, False]})
    >>> run = ExperimentRun.from_frames(att, pd.DataFrame({"variant_id": ["a", "b"]}),
    ...                                 pd.DataFrame({"case_id": ["x"]}))
    >>> judged_cases(run).tolist()
    [True]
    """
    return run.cases["n_expectations"].to_numpy() > 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@class_keyword_hints()
@dataclass(frozen=True)
class ExperimentResult:
    """What :func:`run` returns: the tidy tables, per-variant results, and run state.

    Examples
    --------
    >>> experiment = Experiment(
    ...     "echo", variants=[Variant("echo"), Variant("short")],
    ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
    ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
    >>> def agent_factory(variant):
    ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
    >>> result = run(experiment, agent_factory, trials=2, progress=False)
    >>> result  # no analysis yet: the display says how to get the verdicts
    ExperimentResult(experiment='echo', verdicts='not computed: call .analyze()',
    run_id=None, variants=2, inputs=3, trials=2, attempts=12, complete)
    >>> _ = result.analyze(correction="holm")
    >>> result  # then it leads with the last analysis's verdicts
    ExperimentResult(experiment='echo', correction='holm',
    verdicts='3 no detectable difference', run_id=None, variants=2, inputs=3, trials=2,
    attempts=12, complete)
    """

    experiment: Experiment
    live: LiveRunResult
    run_id: str | None = None
    timestamp: str = field(default_factory=_now)
    #: The analysis :meth:`analyze` returned last, which the display leads with (the run
    #: is analysed only on request: 0.15–0.4 s for the 350 attempts of data/support, too
    #: long for a repr, and it grows with the run).
    _analysis: Any = field(default=None, init=False, repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        # Only for a missing attribute: a run's (``to_parquet``, ``checks``) is on ``.run``.
        if name.startswith("__"):
            raise AttributeError(name)
        raise run_attribute_error(self, name)

    @property
    def run(self) -> ExperimentRun:
        """The tidy tables (an :class:`~agenticlens_frames.ExperimentRun`).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> run(experiment, agent_factory, progress=False).run
        ExperimentRun('echo@1', variants=2, cases=3, trials=1, attempts=6, checks=4)
        """
        return self.live.run

    @property
    def attempts(self) -> pd.DataFrame:
        """One row per (variant, trial, input): the run's ``attempts`` table.

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> result = run(experiment, agent_factory, progress=False)
        >>> result.attempts[["variant_id", "case_id", "output", "passed"]]
          variant_id   case_id              output  passed
        0       echo  input-01       refund please    True
        1       echo  input-02  where is my parcel    True
        2       echo  input-03                  hi    True
        3      short  input-01                 ref   False
        4      short  input-02                 whe   False
        5      short  input-03                  hi    True
        """
        return self.live.run.attempts

    @property
    def variant_results(self) -> list[VariantResult]:
        """One :class:`VariantResult` per variant, in variant order, stamped with the
        run's ``timestamp``.

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> result = run(experiment, agent_factory, progress=False)
        >>> [(r.variant_name, r.pass_rate) for r in result.variant_results]
        [('echo', 1.0), ('short', 0.0)]
        """
        return variant_results(self.live.run, timestamp=self.timestamp)

    @property
    def remaining(self) -> int:
        """Attempts (variant, trial, input) still to run.

        Examples
        --------
        >>> import tempfile
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> folder = tempfile.mkdtemp()
        >>> first = run(experiment, agent_factory, max_attempts=2, run_dir=folder, progress=False)
        >>> first.remaining, first.remaining_cases, first.complete
        (4, 3, False)
        >>> run(experiment, agent_factory, run_dir=folder, progress=False).remaining  # resumed
        0
        """
        return self.live.remaining

    @property
    def remaining_cases(self) -> int:
        """Inputs with an attempt still to run.

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> run(experiment, agent_factory, max_attempts=1, progress=False).remaining_cases
        3
        """
        return self.live.remaining_cases

    @property
    def complete(self) -> bool:
        """Whether every attempt has run (False after a run stopped by ``max_attempts``).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> run(experiment, agent_factory, progress=False).complete
        True
        """
        return self.live.complete

    def analyze(self, **options: Any) -> Any:
        """:func:`~agenticlens_frames.analyze` on the run (every statistic and report);
        ``options`` are :func:`~agenticlens_frames.analyze`'s.

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> analysis = run(experiment, agent_factory, progress=False).analyze()
        >>> analysis.variants[["variant_id", "case_pass_rate"]].round(3)
          variant_id  case_pass_rate
        0       echo           1.000
        1      short           0.333
        """
        from .analysis import analyze

        analysis = analyze(self.live.run, **options)
        # Kept for the display (a frozen dataclass: set as dataclasses' __init__ does).
        object.__setattr__(self, "_analysis", analysis)
        return analysis

    def __repr__(self) -> str:
        # The dataclass repr printed the experiment, its dataset and the whole live result
        # (the call table included): one line that says what the run is. It led with the
        # counts; the verdicts lead every surface, so they come first: those of the last
        # analysis (as its own repr says them), or how to get them. Analysing here would
        # make printing a result cost a whole analysis.
        from ._repr import verdict_lead

        run_ = self.live.run
        state = (
            "complete"
            if self.complete
            else f"{self.remaining} attempt(s) of {self.remaining_cases} input(s) remaining"
        )
        analysis = self._analysis
        lead = (
            "verdicts='not computed: call .analyze()', "
            if analysis is None
            else verdict_lead(analysis.verdicts, *analysis._lead_said())
        )
        return (
            f"ExperimentResult(experiment={self.experiment.name!r}, {lead}run_id={self.run_id!r}, "
            f"variants={len(run_.manifest.variants)}, inputs={len(run_.suite.cases)}, "
            f"trials={run_.manifest.trial_count}, attempts={len(run_.attempts)}, {state})"
        )


# --------------------------------------------------------------------------- runner


def run(
    experiment: Experiment,
    agent_factory: Callable[[Variant], Any],
    *,
    trials: int = 1,
    context: Any = None,
    concurrency: int | None = None,
    timeout_seconds: float = 30.0,
    retry: RetryPolicy | Mapping[str, Any] | None = None,
    random_seed: int | None = None,
    evaluators: EvaluatorRegistry | str | None = None,
    tracker: Tracker | None = None,
    run_dir: str | Path | None = None,
    run_id: str | None = None,
    max_attempts: int | None = None,
    progress: bool = True,
) -> ExperimentResult:
    """Run every variant's agent on every dataset entry, ``trials`` times.

    Parameters
    ----------
    experiment
        What to run.
    agent_factory
        ``agent_factory(variant) -> agent``, called once per variant (it may be async).
        The agent is called as ``agent.run(input, context=context)`` when ``run`` takes a
        ``context`` keyword, else ``agent.run(input)``; sync and ``async`` ``run`` both
        work, and an agent without ``run`` is called directly. It may return a string,
        any object (``str()``-ed; mappings and lists as JSON; an object with an ``output``
        attribute gives that), or a payload ``{"output": ..., "trace": {...}}``. Without
        a trace, the measured call time is the latency.
    trials
        Times each (variant, input) is run.
    context
        Passed to agents that accept it; ``experiment_id`` is set on it. Default: a new
        :class:`AgentContext`.
    concurrency
        Most agent calls in flight (overall and per variant). Default 1.
    timeout_seconds, retry
        Per call; a :class:`~agenticlens_frames.runner.RetryPolicy`, or the same as a
        manifest's ``retry:`` block (``{"attempts": 2}``), for every variant (default one
        call).
    random_seed
        Shuffles the (variant, trial) order as AgenticLens does.
    evaluators
        Registered evaluators the dataset's cases may name.
    tracker
        Persists the run (and lets a crashed run resume under the same ``run_id``).
    run_dir
        Journal folder when there is no tracker (resumable, as for manifests).
    run_id
        The run's id in the tracker (default: a timestamp). Reuse it to resume.
    max_attempts
        Do at most this many attempts now; ``result.remaining`` says what is left.
    progress
        tqdm bars (terminal or notebook).

    Returns
    -------
    ExperimentResult

    Examples
    --------
    >>> experiment = Experiment(
    ...     "echo", variants=[Variant("echo"), Variant("short")],
    ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
    ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
    >>> def agent_factory(variant):
    ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
    >>> tracker = Tracker()
    >>> result = run(experiment, agent_factory, trials=2, tracker=tracker, run_id="first",
    ...              progress=False)
    >>> result
    ExperimentResult(experiment='echo', verdicts='not computed: call .analyze()',
    run_id='first', variants=2, inputs=3, trials=2, attempts=12, complete)
    >>> result.attempts.groupby("variant_id", observed=True)["output"].first().to_dict()
    {'echo': 'refund please', 'short': 'ref'}
    >>> tracker
    Tracker('in memory', runs=1)
    """
    return run_coroutine(
        lambda: arun(
            experiment,
            agent_factory,
            trials=trials,
            context=context,
            concurrency=concurrency,
            timeout_seconds=timeout_seconds,
            retry=retry,
            random_seed=random_seed,
            evaluators=evaluators,
            tracker=tracker,
            run_dir=run_dir,
            run_id=run_id,
            max_attempts=max_attempts,
            progress=progress,
        )
    )


async def arun(
    experiment: Experiment,
    agent_factory: Callable[[Variant], Any],
    *,
    trials: int = 1,
    context: Any = None,
    concurrency: int | None = None,
    timeout_seconds: float = 30.0,
    retry: RetryPolicy | Mapping[str, Any] | None = None,
    random_seed: int | None = None,
    evaluators: EvaluatorRegistry | str | None = None,
    tracker: Tracker | None = None,
    run_dir: str | Path | None = None,
    run_id: str | None = None,
    max_attempts: int | None = None,
    progress: bool = True,
) -> ExperimentResult:
    """:func:`run` as a coroutine (for code already inside an event loop).

    The agents may be ``async`` too: their calls are awaited.

    Examples
    --------
    >>> import asyncio
    >>> experiment = Experiment("async", variants=[Variant("a"), Variant("b")],
    ...                         dataset=["ping", "pong"])
    >>> class Agent:
    ...     def __init__(self, variant):
    ...         self.name = variant.name
    ...     async def run(self, text):
    ...         return f"{self.name}:{text}"
    >>> result = asyncio.run(arun(experiment, Agent, progress=False))
    >>> result.attempts["output"].tolist()
    ['a:ping', 'a:pong', 'b:ping', 'b:pong']
    """
    if not isinstance(experiment, Experiment):
        # A manifest path is the likely slip (run_experiment takes one): without this it
        # failed with "'str' object has no attribute 'to_manifest'".
        got = type(experiment).__name__
        if isinstance(experiment, (str, Path)):
            got += f" {str(experiment)!r}"
        raise InputError(
            f"run() takes an Experiment, got {got}",
            location="experiment",
            hint="build one with alf.Experiment(name, variants=[...], dataset=[...]); for a "
            "manifest and a suite, call alf.run_experiment(manifest, suite)",
        )
    limit = concurrency or 1
    registry = as_registry(evaluators)
    factory_name = getattr(agent_factory, "__qualname__", type(agent_factory).__name__)
    manifest = experiment.to_manifest(
        trials=trials,
        random_seed=random_seed,
        timeout_seconds=timeout_seconds,
        concurrency=limit,
        target=str(factory_name),
    )
    suite = experiment.to_suite(known_evaluators=tuple(registry))
    # Before any agent is built: a run beyond the guard rails is refused up front.
    check_run_guard_rails(manifest, suite)
    if context is None:
        context = AgentContext()
    try:
        context.experiment_id = experiment.name
    except (AttributeError, TypeError) as exc:
        raise InputError(
            f"cannot set experiment_id on the context ({exc})",
            hint="pass a context object with a writable experiment_id attribute",
        ) from None
    if tracker is not None:
        if run_dir is not None:
            raise InputError("give either a tracker or a run_dir, not both")
        # A second run in the same second must not resume the first: unique by default
        # (a run is resumed only under the run_id given again).
        if run_id is not None and tracker.storage_path is None and tracker.has_run(run_id):
            # Nothing of it was journaled: "resuming" would call every agent again and
            # record the run twice.
            raise InputError(
                f"run {run_id!r} is already in this in-memory tracker, which cannot resume it",
                location="run_id",
                hint="give a new run_id, or use Tracker(folder) for runs that resume",
            )
        run_id = run_id or f"{_now().replace(':', '').replace('-', '')}-{secrets.token_hex(3)}"
        folder: Path | None = tracker.run_dir(experiment.name, run_id)
    else:
        folder = Path(run_dir) if run_dir is not None else None

    targets = {}
    for variant in experiment.variants:
        try:
            agent = agent_factory(variant)
            if inspect.isawaitable(agent):
                agent = await agent
        except Exception as exc:
            raise InputError(
                f"the agent factory raised for variant {variant.name!r}: "
                f"{type(exc).__name__}: {exc}",
                location=f"agent_factory({variant.name!r})",
                hint="nothing was called; fix the factory (the traceback is chained below)",
            ) from exc
        targets[variant.name] = PythonTarget(
            _agent_function(agent, context),
            timeout_seconds=timeout_seconds,
            threads=limit + SPARE_THREADS,
            pass_case=False,
            name=f"agent-{variant.name}",
        )
    live = await arun_live(
        manifest,
        suite,
        registry=registry,
        targets=targets,
        run_dir=folder,
        concurrency=limit,
        max_attempts=max_attempts,
        progress=progress,
        retry=retry,
    )
    result = ExperimentResult(experiment=experiment, live=live, run_id=run_id)
    if tracker is not None:
        tracker.record(result)
    return result


# --------------------------------------------------------------------------- tracker


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "experiment"


def _check_text(value: Any, argument: str, call: str) -> None:
    """A Tracker method's experiment name or run id: refused unless it is text (a number
    or an Experiment matched nothing, silently).

    Examples
    --------
    >>> _check_text(3, "run_id", "has_run('r1')")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: run_id: run_id must be a non-empty str, got int 3 \
(e.g. tracker.has_run('r1'))
    """
    _check_name(value, argument, location=argument, example=f"tracker.{call}")


@class_keyword_hints()
class Tracker:
    """Keeps every run's results; with a folder, as parquet run folders on disk.

    Each run lives in ``<storage_path>/<experiment>/<run_id>/``: the live journal (written
    as each call finishes, so a crashed run resumes with the same ``run_id``) and the
    tidy tables under ``tables/`` (readable with
    :func:`~agenticlens_frames.read_parquet`). Nothing is one rewritten JSON file. Without
    a folder, results are kept in memory.

    Examples
    --------
    >>> tracker = Tracker()
    >>> len(tracker), tracker.results
    (0, [])
    >>> tracker
    Tracker('in memory', runs=0)
    """

    def __init__(self, storage_path: str | Path | None = None) -> None:
        self.storage_path = (
            check_path(storage_path, "a tracker's folder") if storage_path is not None else None
        )
        if self.storage_path is not None:
            # A file given as the folder (or on its way) was accepted, and the run failed
            # after the agents were built, writing its journal there.
            path = self.storage_path
            existing = next((p for p in (path, *path.parents) if p.exists()), None)
            if existing is not None and not existing.is_dir():
                where = "a file" if existing == path else f"inside the file {existing}"
                raise InputError(
                    f"{where}, not a folder: a Tracker needs a folder to keep its runs in",
                    file=str(path),
                    location="storage_path",
                    hint="give a folder (created if missing), e.g. Tracker('experiment-results'),"
                    " or Tracker() to keep the results in memory",
                )
        self._memory: list[tuple[str | None, ExperimentRun, str]] = []

    def __repr__(self) -> str:
        # Where the runs are kept is what tells two trackers apart (the default repr
        # showed a memory address); counting the runs on disk would read every folder.
        where = "in memory" if self.storage_path is None else str(self.storage_path)
        held = f", runs={len(self._memory)}" if self.storage_path is None else ""
        return f"Tracker({where!r}{held})"

    def run_dir(self, experiment_name: str, run_id: str) -> Path | None:
        """Where a run is persisted (None for an in-memory tracker).

        Names are made path-safe (characters other than letters, digits, ``.``, ``_`` and
        ``-`` become ``-``).

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> folder = tempfile.mkdtemp()
        >>> Tracker(folder).run_dir("support bot", "run 1").relative_to(folder).as_posix()
        'support-bot/run-1'
        >>> Tracker().run_dir("support bot", "run 1") is None
        True
        """
        _check_text(experiment_name, "experiment_name", "run_dir('support', 'r1')")
        _check_text(run_id, "run_id", "run_dir('support', 'r1')")
        if self.storage_path is None:
            return None
        return self.storage_path / _slug(experiment_name) / _slug(run_id)

    def has_run(self, run_id: str) -> bool:
        """Whether an in-memory tracker already holds the run ``run_id`` (always False
        for a tracker with a folder).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> tracker = Tracker()
        >>> _ = run(experiment, agent_factory, tracker=tracker, run_id="r1", progress=False)
        >>> tracker.has_run("r1"), tracker.has_run("r2")
        (True, False)
        """
        _check_text(run_id, "run_id", "has_run('r1')")
        return any(recorded == run_id for recorded, _, _ in self._memory)

    def record(self, result: ExperimentResult) -> None:
        """Keep a run's results (the runner calls this; on disk it is already there).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> tracker = Tracker()
        >>> tracker.record(run(experiment, agent_factory, progress=False))
        >>> tracker
        Tracker('in memory', runs=1)
        """
        if not isinstance(result, ExperimentResult):
            # A tracker with a folder ignored anything given here (the runner has already
            # written the run), so record(result.run) or record(analysis) kept nothing and
            # said nothing; an in-memory one failed on a missing attribute.
            raise InputError(
                f"Tracker.record() takes what run() returned (an ExperimentResult), "
                f"got {type(result).__name__}",
                location="result",
                hint="pass run(...)'s result, or give the tracker to run(..., tracker=tracker)",
            )
        if self.storage_path is None:
            self._memory.append((result.run_id, result.run, result.timestamp))

    def _runs(self) -> list[tuple[str | None, ExperimentRun, str]]:
        if self.storage_path is None:
            return list(self._memory)
        out = []
        for tables in sorted(self.storage_path.glob("*/*/tables")):
            if not (tables / "attempts.parquet").exists():
                continue
            stamp = datetime.fromtimestamp((tables / "attempts.parquet").stat().st_mtime, UTC)
            iso = stamp.isoformat(timespec="seconds").replace("+00:00", "Z")
            out.append((tables.parent.name, read_parquet(tables), iso))
        return out

    def runs(self) -> list[ExperimentRun]:
        """Every recorded run's tidy tables.

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> tracker = Tracker()
        >>> _ = run(experiment, agent_factory, tracker=tracker, run_id="r1", progress=False)
        >>> tracker.runs()
        [ExperimentRun('echo@1', variants=2, cases=3, trials=1, attempts=6, checks=4)]
        """
        return [r for _, r, _ in self._runs()]

    def unfinished(self) -> list[tuple[str, str]]:
        """(experiment folder, run id) of each run journaled here without tables yet: one
        that crashed or was stopped before its tables were written. Its finished attempts
        are kept; ``run(..., tracker=tracker, run_id=...)`` resumes it. The results,
        ``len`` and the exports count finished runs only.

        Examples
        --------
        >>> Tracker().unfinished()
        []
        """
        if self.storage_path is None:
            return []
        return [
            (meta.parent.parent.name, meta.parent.name)
            for meta in sorted(self.storage_path.glob("*/*/run.json"))
            if not (meta.parent / "tables" / "attempts.parquet").exists()
        ]

    @property
    def results(self) -> list[VariantResult]:
        """Every recorded variant result, run by run (``metadata["run_id"]`` names the run).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> tracker = Tracker()
        >>> _ = run(experiment, agent_factory, tracker=tracker, run_id="r1", progress=False)
        >>> [(r.variant_name, r.pass_rate, r.metadata["run_id"]) for r in tracker.results]
        [('echo', 1.0, 'r1'), ('short', 0.0, 'r1')]
        """
        out = []
        for run_id, experiment_run, stamp in self._runs():
            for result in variant_results(experiment_run, timestamp=stamp):
                result.metadata["run_id"] = run_id
                out.append(result)
        return out

    def get_by_experiment(self, name: str) -> list[VariantResult]:
        """The variant results of one experiment (by name).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> tracker = Tracker()
        >>> _ = run(experiment, agent_factory, tracker=tracker, run_id="r1", progress=False)
        >>> [r.variant_name for r in tracker.get_by_experiment("echo")]
        ['echo', 'short']
        >>> tracker.get_by_experiment("other")
        []
        """
        # get_by_experiment(3), or the Experiment itself, matched nothing: an empty list,
        # as for a name with no run.
        _check_text(name, "name", "get_by_experiment('support') (an Experiment's is .name)")
        return [r for r in self.results if r.experiment_name == name]

    @property
    def attempts(self) -> pd.DataFrame:
        """Every recorded attempt, with ``run_id`` (keys as plain strings).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> tracker = Tracker()
        >>> _ = run(experiment, agent_factory, tracker=tracker, run_id="r1", progress=False)
        >>> tracker.attempts[["run_id", "variant_id", "case_id", "passed"]].head(3)
          run_id variant_id   case_id  passed
        0     r1       echo  input-01    True
        1     r1       echo  input-02    True
        2     r1       echo  input-03    True
        """
        frames = []
        for run_id, experiment_run, _ in self._runs():
            frame = experiment_run.attempts.copy()
            for column in frame.columns:
                if isinstance(frame[column].dtype, pd.CategoricalDtype):
                    frame[column] = frame[column].astype("str")
            frame.insert(0, "run_id", run_id)
            frames.append(frame)
        if not frames:
            return pd.DataFrame(columns=["run_id"])
        return pd.concat(frames, ignore_index=True)

    def export_json(self) -> str:
        """Every variant result as a JSON array (the fields of :class:`VariantResult`).

        Examples
        --------
        >>> import json
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> tracker = Tracker()
        >>> _ = run(experiment, agent_factory, tracker=tracker, run_id="r1", progress=False)
        >>> [(r["variant_name"], r["outputs"]) for r in json.loads(tracker.export_json())]
        [('echo', ['refund please', 'where is my parcel', 'hi']), ('short', ['ref', 'whe', 'hi'])]
        """
        return json.dumps([dataclasses.asdict(r) for r in self.results], indent=2, default=str)

    def clear(self) -> None:
        """Forget every result (and delete the run folders of a folder tracker).

        Only run folders (``<experiment>/<run_id>/`` with a ``run.json``) are deleted, and
        the experiment folders they leave empty: anything else kept beside them in the
        storage folder stays.

        Examples
        --------
        >>> tracker = Tracker()
        >>> tracker.clear(); len(tracker)
        0
        """
        self._memory.clear()
        if self.storage_path is None or not self.storage_path.is_dir():
            return
        for marker in sorted(self.storage_path.glob("*/*/run.json")):
            shutil.rmtree(marker.parent)
            experiment = marker.parent.parent
            if not any(experiment.iterdir()):
                experiment.rmdir()

    def __len__(self) -> int:
        """The number of recorded variant results (one per variant of each run), not of
        runs: see :meth:`runs`."""
        return len(self.results)


# --------------------------------------------------------------------------- comparator


if TYPE_CHECKING:  # (annotations are not evaluated at run time)
    #: What a :class:`Comparator` reads: a run in any of its forms, or per-variant results.
    Compared: TypeAlias = (
        ExperimentResult
        | ExperimentRun
        | ExperimentAnalysis
        | LiveRunResult
        | Iterable[VariantResult]
    )


@class_keyword_hints()
class Comparator:
    """Per-variant metrics as a frame, and a readable summary that leads with verdicts.

    Parameters
    ----------
    confidence_level
        For the pass-rate intervals (cases as the unit) and, when nothing is declared,
        the per-comparison intervals of the paired differences.
    comparisons
        Paired-comparison settings (``{"correction": "holm"}`` or a
        :class:`~agenticlens_frames.paired.ComparisonsConfig`) for an experiment that
        declared none; None takes the experiment's own (:attr:`Experiment.comparisons`),
        and settings that contradict it are refused when the verdicts are computed (a
        correction chosen after the run is not a correction). Without either, the summary
        shows the paired differences with per-comparison intervals and calls nothing
        significant.

    Examples
    --------
    >>> experiment = Experiment(
    ...     name="echo", variants=[Variant(name="a"), Variant(name="b")],
    ...     dataset=[{"input": "refund", "expected_contains": ["refund"]}],
    ...     comparisons={"correction": "holm"})
    >>> result = run(experiment, lambda variant: str.upper, progress=False)
    >>> Comparator().compare(result)[["variant", "pass_rate", "n_cases"]]
      variant  pass_rate  n_cases
    0       a        1.0        1
    1       b        1.0        1
    """

    def __init__(
        self,
        confidence_level: float = 0.95,
        comparisons: ComparisonsConfig | Mapping[str, Any] | None = None,
    ) -> None:
        check_proportion(confidence_level, "confidence level", location="confidence_level")
        self.confidence_level = confidence_level
        self.comparisons = as_comparisons(comparisons, file="Comparator")

    def __repr__(self) -> str:
        # Its two settings (the default repr showed a memory address).
        correction = self.comparisons.correction if self.comparisons is not None else None
        return f"Comparator(confidence_level={self.confidence_level!r}, correction={correction!r})"

    def compare(self, results: Compared) -> pd.DataFrame:
        """One row per variant: ``variant, runs, errors, mean_latency_ms, mean_cost_usd,
        mean_output_length, pass_rate, pass_rate_ci_low, pass_rate_ci_high, n_cases,
        ci_method``.

        ``pass_rate`` is over the evaluated attempts of the inputs that have expectations
        (``n_cases`` of them, see :func:`judged_cases`; in a run built from frames, every
        case: its ``passed`` column judged it): an input without checks has no pass/fail, so
        it is left out, and with none the pass rate is NaN (the comparison is then about
        latency, cost and output shape). Its interval treats the **case** as the unit —
        attempts at one case are not independent — by the method the variant table of every
        report leads with (``ci_method``, see
        :func:`~agenticlens_frames.case_level_summary`). Per-variant results alone (no run)
        carry no case ids, so they get AgenticLens's pass rate (every evaluated attempt)
        without an interval; fewer than two of them are refused.

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> result = run(experiment, agent_factory, trials=2, progress=False)
        >>> frame = Comparator().compare(result)
        >>> frame[["variant", "runs", "errors", "pass_rate", "n_cases"]]
          variant  runs  errors  pass_rate  n_cases
        0    echo     6       0        1.0        2
        1   short     6       0        0.0        2
        >>> frame.loc[0, "ci_method"]  # doctest: +ELLIPSIS
        '... (cases as the unit)'
        """
        items = self._variant_results(results)
        run_ = self._run_of(results)
        names = [r.variant_name for r in items]
        pass_rate = np.array(
            [np.nan if r.pass_rate is None else r.pass_rate for r in items], dtype=float
        )
        low = high = np.full(len(items), np.nan)
        n_cases = np.zeros(len(items), dtype=np.int64)
        method = "none: per-case results needed (pass the run or the result)"
        checked = None if run_ is None else judged_cases(run_)
        if checked is not None and not checked.any():
            pass_rate = np.full(len(items), np.nan)
            method = "none: no input has expectations (no pass/fail)"
        elif run_ is not None:
            from .paired.dimensions import evaluation

            ev = evaluation(run_, "passed")
            summary = case_level_summary(
                run_,
                confidence_level=self.confidence_level,
                evaluated=ev,
            )
            headline = headline_pass_rates(summary).set_index("variant_id")
            headline.index = headline.index.astype(str)
            found = headline.reindex(names)
            pass_rate = found["estimate"].to_numpy(dtype=float)
            low = found["ci_low"].to_numpy(dtype=float)
            high = found["ci_high"].to_numpy(dtype=float)
            n_cases = found["n_cases"].fillna(0).to_numpy().astype(np.int64)
            method = f"{_first(found['method'])} (cases as the unit)"
        frame = pd.DataFrame(
            {
                "variant": names,
                "runs": [r.total_runs for r in items],
                "errors": [r.errors for r in items],
                "mean_latency_ms": [
                    np.nan if r.avg_latency_ms is None else r.avg_latency_ms for r in items
                ],
                "mean_cost_usd": [
                    np.nan if r.avg_cost_usd is None else r.avg_cost_usd for r in items
                ],
                "mean_output_length": [
                    float(np.mean([len(o) for o in r.outputs])) if r.outputs else np.nan
                    for r in items
                ],
                "pass_rate": pass_rate,
                "pass_rate_ci_low": low,
                "pass_rate_ci_high": high,
                "n_cases": n_cases,
                "ci_method": method,
            }
        )
        frame.attrs["confidence_level"] = self.confidence_level
        return frame

    def verdicts(
        self, results: ExperimentResult | ExperimentRun | ExperimentAnalysis | LiveRunResult
    ) -> pd.DataFrame:
        """Each candidate against the baseline, case by case, in words.

        :func:`~agenticlens_frames.paired.verdicts.case_verdicts` with this comparator's
        ``comparisons`` (else the experiment's); empty without a run, with fewer than two
        variants, or when no input has checks (nothing passes or fails).

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> result = run(experiment, agent_factory, trials=2, progress=False)
        >>> holm = Comparator(comparisons={"correction": "holm"}).verdicts(result)
        >>> holm.loc[holm["dimension"] == "quality", ["candidate_variant_id", "verdict"]]
          candidate_variant_id                   verdict
        0                short  no detectable difference
        >>> Comparator().verdicts(result)["verdict"].tolist()  # no correction declared
        ['not judged']
        """
        from .paired.verdicts import case_verdicts, empty_verdicts

        run_ = self._run_of(results)
        if run_ is None or len(run_.manifest.variants) < 2 or not judged_cases(run_).any():
            return empty_verdicts()
        return case_verdicts(run_, self.comparisons, confidence_level=self.confidence_level)

    def summary(self, results: Compared) -> str:
        """A readable summary: the verdicts first, then a block per variant.

        The verdicts are the case-by-case paired differences from the baseline, under the
        declared correction (:meth:`verdicts`); the pass-rate intervals treat cases as the
        unit. Nothing here pools attempts as if they were independent.

        Examples
        --------
        >>> experiment = Experiment(
        ...     "echo", variants=[Variant("echo"), Variant("short")],
        ...     dataset=[{"input": "refund please", "expected_contains": ["refund"]},
        ...              {"input": "where is my parcel", "expected_contains": ["parcel"]}, "hi"])
        >>> def agent_factory(variant):
        ...     return (lambda text: text) if variant.name == "echo" else (lambda text: text[:3])
        >>> text = Comparator().summary(run(experiment, agent_factory, progress=False))
        >>> print(text.splitlines()[0])
        Experiment echo — 2 variants, 3 inputs × 1 trial(s)
        """
        frame = self.compare(results)
        title = self._title(results)
        lines = [title, "=" * len(title)] if title else []
        if isinstance(results, ExperimentResult) and results.experiment.hypothesis:
            lines.append(f"Hypothesis: {results.experiment.hypothesis}")
        if remaining := getattr(results, "remaining", 0):
            # A bounded run (max_attempts) reads like a finished one otherwise.
            cases = getattr(results, "remaining_cases", 0)
            live = getattr(results, "live", None)
            # Replies awaiting a judge are not to be called again: said apart, as the CLI.
            left = live.remaining_text if live is not None else count_noun(remaining, "attempt")
            lines.append(
                f"Incomplete: {left}"
                + (f"; {count_noun(cases, 'input')} unfinished" if cases else "")
                + " (run again with the same run_id to finish); the numbers below are over "
                "the finished trials only."
            )
        baseline = self._baseline(results)
        level = f"{self.confidence_level:.0%}"
        run_ = self._run_of(results)
        if run_ is not None:
            unchecked = int((~judged_cases(run_)).sum())
            if unchecked == len(run_.cases):
                lines.append(
                    "No input has expectations, so there is no pass/fail: compare latency, "
                    "cost and output length."
                )
            elif unchecked:
                lines.append(
                    f"Note: {unchecked} of {len(run_.cases)} input(s) have no checks: the pass "
                    "rates and the quality verdicts leave them out (nothing judged them); "
                    "latency and cost count every input."
                )
            lines.extend(self._verdict_lines(self.verdicts(results)))
        for row in frame.itertuples(index=False):
            mark = " (baseline)" if row.variant == baseline else ""
            lines.append("")
            lines.append(f"{row.variant}{mark}")
            lines.append(f"  runs: {row.runs}  ·  errors: {row.errors}")
            lines.append(f"  mean latency: {_fmt(row.mean_latency_ms, '{:.1f} ms')}")
            lines.append(f"  mean cost: {_fmt(row.mean_cost_usd, '{:.3g} USD')}")
            lines.append(f"  mean output length: {_fmt(row.mean_output_length, '{:.1f} chars')}")
            if np.isnan(row.pass_rate):
                continue
            if np.isnan(row.pass_rate_ci_low):
                lines.append(f"  pass rate: {row.pass_rate:.1%} (no interval: no per-case results)")
            else:
                cases = f"{row.n_cases} case{'' if row.n_cases == 1 else 's'}"
                lines.append(
                    f"  pass rate: {row.pass_rate:.1%} ({level} CI "
                    f"{row.pass_rate_ci_low:.1%}–{row.pass_rate_ci_high:.1%}, "
                    f"cases as the unit: {cases})"
                )
        return "\n".join(lines)

    @staticmethod
    def _verdict_lines(verdicts: pd.DataFrame) -> list[str]:
        if not len(verdicts):
            return []
        from .paired.verdicts import omitted_statement

        lines = ["", "Verdicts (each candidate against the baseline, case by case):"]
        lines += [f"  {statement}" for statement in verdicts["statement"]]
        if omitted := omitted_statement(verdicts):
            lines.append(f"  {omitted}")
        if not verdicts.attrs.get("declared", False):
            lines.append(
                "  No multiple-comparison correction is declared, so nothing is called "
                "significant. Declare one before looking: Experiment(..., "
                "comparisons={'correction': 'holm'}) or Comparator(comparisons=...)."
            )
        return lines

    @staticmethod
    def _run_of(results: Any) -> ExperimentRun | None:
        if isinstance(results, ExperimentResult):
            return results.run
        if isinstance(results, LiveRunResult):
            return results.run
        if isinstance(results, ExperimentRun):
            return results
        # An analysis carries its run (one loaded from a saved report does not).
        run_ = getattr(results, "run", None)
        return run_ if isinstance(run_, ExperimentRun) else None

    def _variant_results(self, results: Any) -> list[VariantResult]:
        run_ = self._run_of(results)
        if run_ is not None:
            return variant_results(run_)
        items = list(results) if isinstance(results, Iterable) else None
        if hasattr(results, "verdicts") and hasattr(results, "run"):
            # An analysis loaded from a saved report has no attempts to compare; "pass ...
            # its analysis", the hint below, was what the user had just done.
            raise InputError(
                f"cannot compare {type(results).__name__} {_short_repr(results)}: it was "
                "loaded from a saved report and holds no attempts",
                location="results",
                hint="pass the run that made it (load_experiment(...) or read_parquet(folder)),"
                " or read the report's own frames (analysis.variants, analysis.verdicts)",
            )
        if items is None or not all(isinstance(r, VariantResult) for r in items):
            # A bare AttributeError on a string's characters said nothing of what to pass.
            raise InputError(
                f"cannot compare {type(results).__name__} {_short_repr(results)}",
                location="results",
                hint="pass what run() returned, an ExperimentRun, its analysis, a "
                "LiveRunResult, or a list of VariantResult",
            )
        if len(items) < 2:
            # An empty list (tracker.get_by_experiment of a misspelt name) gave an empty
            # frame and a summary of a title alone; one result, a frame compared with nothing.
            got = "none" if not items else f"one ({items[0].variant_name!r})"
            raise InputError(
                f"a comparison needs the results of at least two variants (a baseline and a "
                f"candidate), got {got}",
                location="results",
                hint="pass what run() returned, or two or more VariantResult; "
                "tracker.get_by_experiment(name) gives [] for a name with no recorded run "
                "(tracker.results lists them all)",
            )
        return items

    def _title(self, results: Any) -> str:
        run_ = self._run_of(results)
        if run_ is None:
            return "Variant comparison"
        m = run_.manifest
        return (
            f"Experiment {m.name} — {len(m.variants)} variants, {len(run_.cases)} inputs × "
            f"{m.trial_count} trial(s)"
        )

    def _baseline(self, results: Any) -> str | None:
        run_ = self._run_of(results)
        return run_.manifest.baseline_variant_id if run_ is not None else None


def _fmt(value: float, template: str) -> str:
    return "n/a" if value is None or np.isnan(value) else template.format(value)


def _first(values: pd.Series) -> str:
    known = values.dropna()
    return str(known.iloc[0]) if len(known) else "no attempt"
