"""Validated, immutable descriptions of a manifest, a suite and their parts.

These are plain frozen dataclasses built once per file by the loaders in this package;
the scoring and table builders read them. They hold configuration only (a handful of
objects per experiment), never per-sample data.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CaseSpec",
    "EvaluatorRef",
    "ManifestSpec",
    "RecordedTrials",
    "SuiteSpec",
    "VariantSpec",
]

#: The target kinds AgenticLens 0.10 accepts (case-sensitive).
TARGET_KINDS = ("python", "http", "recorded")

#: Outcome of one attempt. ``ok``: a sample was scored; ``missing_sample``: the recorded
#: trial had no sample for the case; ``target_error`` / ``timed_out``: a live call failed;
#: ``trial_failed``: the whole trial failed (e.g. the recorded file lacks that trial).
ATTEMPT_STATUSES = ("ok", "missing_sample", "target_error", "timed_out", "trial_failed")

#: A variant's factor ``name`` is the column ``factor_<name>`` of the ``variants`` table.
FACTOR_PREFIX = "factor_"


@dataclass(frozen=True)
class VariantSpec:
    """One variant of a manifest (spec §3, "Variant").

    Examples
    --------
    >>> from agenticlens_frames import load_manifest
    >>> variant = load_manifest("data/support/manifest.yaml").variant("prompt-v2")
    >>> variant.target_kind, variant.target, variant.timeout_seconds
    ('recorded', 'trials/prompt-v2.json', 30.0)
    >>> variant.resolved_target.endswith("data/support/trials/prompt-v2.json")
    True
    """

    id: str
    name: str
    target_kind: str
    #: As written in the manifest.
    target: str
    #: For recorded targets: the file, resolved against the manifest's folder. For python
    #: file targets (``dir/file.py:fn``) the file part resolved the same way; else ``target``.
    resolved_target: str
    timeout_seconds: float = 30.0
    description: str = ""
    #: Factor name -> value, in manifest insertion order.
    factors: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    #: HTTP headers (values may hold ``${ENV}`` references, expanded only when sending).
    headers: dict[str, str] = field(default_factory=dict)
    #: Retry policy for live targets, as written (validated by ``runner.retry.parse_retry``).
    retry: dict[str, Any] = field(default_factory=dict)
    #: Most calls in flight to this live target (default: the manifest's ``max_workers``).
    concurrency: int | None = None


@dataclass(frozen=True)
class ManifestSpec:
    """A validated experiment manifest (spec §3).

    Examples
    --------
    >>> from agenticlens_frames import load_manifest
    >>> manifest = load_manifest("data/support/manifest.yaml")
    >>> manifest.baseline_variant_id, manifest.trial_count, manifest.variant_ids[:3]
    ('baseline', 5, ('baseline', 'model-large', 'prompt-v2'))
    """

    path: Path
    name: str
    version: str
    baseline_variant_id: str
    variants: tuple[VariantSpec, ...]
    schema_version: str = "1.1"
    trial_count: int = 5
    random_seed: int | None = None
    #: As written (may be empty); see :attr:`effective_pass_k`.
    pass_k: tuple[int, ...] = ()
    minimum_trials: int = 5
    max_workers: int = 1
    metadata: dict[str, str] = field(default_factory=dict)
    #: Paired-comparison settings as written under ``comparisons:`` (None when absent).
    comparisons: dict[str, Any] | None = None

    @property
    def effective_pass_k(self) -> tuple[int, ...]:
        """sorted(set(pass_k)), or sorted({1, trial_count}) when pass_k is empty.

        Examples
        --------
        >>> from agenticlens_frames import load_manifest
        >>> load_manifest("data/support/manifest.yaml").effective_pass_k
        (1, 3, 5)
        """
        if self.pass_k:
            return tuple(sorted(set(self.pass_k)))
        return tuple(sorted({1, self.trial_count}))

    @property
    def variant_ids(self) -> tuple[str, ...]:
        """The variants' ids, manifest order.

        Examples
        --------
        >>> from agenticlens_frames import load_manifest
        >>> load_manifest("data/support/manifest.yaml").variant_ids
        ('baseline', 'model-large', 'prompt-v2', 'retrieval-dense', 'large-v2')
        """
        return tuple(v.id for v in self.variants)

    def variant(self, variant_id: str) -> VariantSpec:
        """The variant with this id (KeyError when there is none).

        Examples
        --------
        >>> from agenticlens_frames import load_manifest
        >>> load_manifest("data/support/manifest.yaml").variant("prompt-v2").factors
        {'model': 'gpt-small', 'prompt': 'v2', 'retrieval': 'bm25'}
        """
        for v in self.variants:
            if v.id == variant_id:
                return v
        raise KeyError(variant_id)


@dataclass(frozen=True)
class EvaluatorRef:
    """A registry evaluator named by a case (spec §5, ``evaluators``).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from agenticlens_frames import load_suite
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "suite.json"
    >>> _ = path.write_text(json.dumps({"name": "s", "version": "1", "cases": [
    ...     {"id": "c1", "name": "tone", "input": "hi",
    ...      "evaluators": [{"name": "polite", "threshold": 0.8, "config": {"strict": True}}]}]}))
    >>> load_suite(path, known_evaluators=["polite"]).cases[0].evaluators
    (EvaluatorRef(name='polite', threshold=0.8, required=True, config={'strict': True}),)
    """

    name: str
    threshold: float = 1.0
    required: bool = True
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CaseSpec:
    """One suite case (spec §5). ``None`` / empty means "no such expectation".

    Examples
    --------
    >>> from agenticlens_frames import load_suite
    >>> case = load_suite("data/support/suite.yaml").cases[0]
    >>> case.id, case.index, case.expected_contains, case.tags
    ('refund-damaged-item', 0, ('refund', 'A-10432'), ('refund', 'billing'))
    >>> case.max_latency_ms is None  # no latency limit declared
    True
    """

    id: str
    name: str
    index: int
    input: Any = None
    expected_output: str | None = None
    expected_contains: tuple[str, ...] = ()
    output_json_schema: dict[str, Any] | None = None
    required_output_fields: tuple[str, ...] = ()
    required_tools: tuple[str, ...] = ()
    forbidden_tools: tuple[str, ...] = ()
    required_tool_arguments: dict[str, tuple[str, ...]] = field(default_factory=dict)
    expected_tool_arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    required_tool_order: tuple[str, ...] = ()
    max_latency_ms: float | None = None
    max_cost_usd: float | None = None
    max_turns: int | None = None
    evaluators: tuple[EvaluatorRef, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteSpec:
    """A validated evaluation suite (spec §5).

    Examples
    --------
    >>> from agenticlens_frames import load_suite
    >>> suite = load_suite("data/support/suite.yaml")
    >>> suite.name, suite.version, len(suite.cases), suite.case_ids[:2]
    ('support-desk', '2026.11', 14, ('refund-damaged-item', 'track-order'))
    """

    path: Path
    name: str
    version: str
    cases: tuple[CaseSpec, ...]
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def case_ids(self) -> tuple[str, ...]:
        """The cases' ids in suite order (made once: the tables and the analysis ask for
        them a dozen times, 5 000 ids each time at 5 000 cases)."""
        return tuple(c.id for c in self.cases)


@dataclass(frozen=True)
class RecordedTrials:
    """A parsed recorded-trials file (spec §7.1).

    ``trials[i]`` holds the samples of entry *i* (trial *i + 1*) as dicts with keys
    ``case_id`` (str), ``output`` (str) and ``trace`` (the normalised
    :class:`~agenticlens_frames.formats.traces.Trace`; an absent trace is ``{}``), already
    validated against the suite (known, unique case ids; ``output`` a string).

    Examples
    --------
    >>> from agenticlens_frames import load_manifest, load_recorded, load_suite
    >>> variant = load_manifest("data/support/manifest.yaml").variant("prompt-v2")
    >>> recorded = load_recorded(variant.resolved_target, load_suite("data/support/suite.yaml"))
    >>> len(recorded.trials), len(recorded.trials[0]), sorted(recorded.trials[0][0])
    (5, 14, ['case_id', 'output', 'trace'])
    """

    path: Path
    trials: tuple[tuple[dict[str, Any], ...], ...]
