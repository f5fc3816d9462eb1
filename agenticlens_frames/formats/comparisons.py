"""The manifest's ``comparisons:`` block as written: keys, shapes and types, read in place.

This module knows the block's layout and turns text into typed values, naming the file and
the key on bad input (every problem of the block in one error); what each value may be (an
allowed correction, a level between 0 and 1, …) is decided once, by the ``check`` function
the caller passes in (see :func:`agenticlens_frames.paired.settings.check_setting`). The
manifest form (every key but ``correction`` is optional)::

    comparisons:
      correction: holm            # none | bonferroni | holm | benjamini_hochberg
      alpha: 0.05
      confidence_level: 0.95
      method: t                   # see agenticlens_frames.paired.METHODS
      family: all                 # all | per_evaluator
      cluster: topic              # a case metadata field (cluster-robust errors)
      evaluators:                 # one per operational dimension, optionally @version
        quality: passed
        safety: forbidden_tool@0.9.0
        reliability: pass_hat_3
        latency: latency_ms
        cost: cost_usd
      noninferiority: {margin: 0.02, dimension: quality}
      # or several gates, each in its dimension's unit (every one must pass):
      # noninferiority: [{margin: 0.02, dimension: quality}, {margin: 200, dimension: latency}]
      power: 0.8
      resamples: 9999
      seed: 0
      limits: {max_configurations: 8, max_evaluators: 8, max_case_scores: 20000,
               allow_large: false}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .._choices import COMPARISONS_KEYS
from ._io import (
    Invalid,
    Source,
    describe,
    to_bool,
    to_float,
    to_int,
    to_mapping,
    to_str,
    valid,
)

__all__ = ["DIMENSIONS", "KEYS", "EvaluatorChoice", "parse_evaluator", "read_comparisons"]

#: The operational dimensions; each may name one evaluator.
DIMENSIONS = ("quality", "safety", "reliability", "latency", "cost")

#: The keys of a ``comparisons:`` block (and of a ``comparisons=`` mapping).
KEYS = COMPARISONS_KEYS
_LIMIT_KEYS = ("max_configurations", "max_evaluators", "max_case_scores", "allow_large")

_NONINFERIORITY_KEYS = ("margin", "dimension")


@dataclass(frozen=True)
class EvaluatorChoice:
    """An evaluator named for a dimension, optionally pinned to an exact version.

    Examples
    --------
    >>> str(EvaluatorChoice("passed")), str(EvaluatorChoice("polite_tone", "2"))
    ('passed', 'polite_tone@2')
    """

    name: str
    version: str | None = None

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"

    @property
    def pass_k(self) -> tuple[str, int] | None:
        """``("pass_hat" | "pass_at", k)`` for a ``pass_hat_<k>`` / ``pass_at_<k>`` name.

        Examples
        --------
        >>> EvaluatorChoice("pass_hat_3").pass_k, EvaluatorChoice("pass_at_²").pass_k
        (('pass_hat', 3), None)
        """
        for prefix in ("pass_hat_", "pass_at_"):
            # ASCII digits only: "²".isdigit() is true and int() cannot read it.
            if (
                self.name.startswith(prefix)
                and (digits := self.name[len(prefix) :]).isascii()
                and digits.isdigit()
                and int(digits) >= 1
            ):
                return prefix[:-1], int(digits)
        return None

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


def parse_evaluator(value: Any) -> EvaluatorChoice:
    """An evaluator as written: ``"name"``, ``"name@version"`` or ``{name, version}``."""
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


#: Checks one setting's value (already of its type) and returns it; raises ``Invalid``.
Check = Callable[[str, Any], Any]


def read_comparisons(
    raw: Mapping[str, Any] | None, *, file: str | Path, check: Check
) -> dict[str, Any] | None:
    """The settings written in a manifest's ``comparisons:`` mapping, typed and checked.

    Parameters
    ----------
    raw
        ``ManifestSpec.comparisons`` (the mapping as written), or None.
    file
        The manifest, for error messages.
    check
        ``check(field, value)``: the rule of each setting, applied to every value read
        (``field`` is a :class:`~agenticlens_frames.paired.settings.ComparisonsConfig`
        field, or ``limits.<name>``).

    Returns
    -------
    dict or None
        The settings present, by ``ComparisonsConfig`` field (``limits`` as a mapping);
        None when the manifest has no ``comparisons:`` key.

    Raises
    ------
    InputError
        Naming ``<file>: comparisons.<key>``; a missing ``correction`` is an error. Every
        problem of the block at once (see ``InputError.problems``).
    """
    if raw is None:
        return None
    source = Source(file)
    where: tuple[str | int, ...] = ("comparisons",)
    if not isinstance(raw, dict):
        source.fail(where, f"expected a mapping, got {describe(raw)}")
    with source.collecting():
        settings = _read(source, raw, where, check)
    return settings


def _read(
    source: Source, raw: dict[str, Any], where: tuple[str | int, ...], check: Check
) -> dict[str, Any]:
    """:func:`read_comparisons` of a mapping, while ``source`` collects its problems."""
    source.check_keys(raw, KEYS, where)
    if "correction" not in raw and not source.misspelt(where, "correction"):
        source.report(
            where,
            "missing required key 'correction'",
            "paired comparisons need a declared correction: none, bonferroni, holm or "
            "benjamini_hochberg; there is no default",
        )
    out: dict[str, Any] = {}

    def put(
        key: str,
        convert: Callable[[Any], Any],
        *,
        field: str | None = None,
        mapping: dict[str, Any] = raw,
        at: tuple[str | int, ...] = where,
    ) -> None:
        name = field or key
        if key in mapping:
            out[name] = source.take(mapping, key, at, lambda v: check(name, convert(v)))

    text = partial(to_str, nonempty=True)
    put("correction", lambda v: v)  # a name or not: the rule says which
    put("alpha", to_float)
    put("confidence_level", to_float)
    put("method", to_str)
    put("family", to_str)
    put("cluster", text)
    if "evaluators" in raw and valid(mapping := source.take(raw, "evaluators", where, to_mapping)):
        source.check_keys(mapping, DIMENSIONS, (*where, "evaluators"))
        chosen = []
        for dim in DIMENSIONS:
            if dim in mapping and mapping[dim] is not None:
                chosen.append(
                    (dim, source.take(mapping, dim, (*where, "evaluators"), parse_evaluator))
                )
        out["evaluators"] = tuple(chosen)
        without = tuple(d for d in DIMENSIONS if d in mapping and mapping[d] is None)
        if without:
            out["without"] = without
    if "noninferiority" in raw:
        value = raw["noninferiority"]
        if isinstance(value, dict):
            at = (*where, "noninferiority")
            source.check_keys(value, _NONINFERIORITY_KEYS, at)
            if "margin" not in value:
                source.report_missing(at, "margin")
            put("margin", to_float, field="noninferiority_margin", mapping=value, at=at)
            put("dimension", to_str, field="noninferiority_dimension", mapping=value, at=at)
        elif isinstance(value, list):
            out["noninferiority"] = _read_gates(source, value, (*where, "noninferiority"), check)
        elif value is not None:
            put("noninferiority", to_float, field="noninferiority_margin")
    if "limits" in raw and valid(mapping := source.take(raw, "limits", where, to_mapping)):
        at = (*where, "limits")
        source.check_keys(mapping, _LIMIT_KEYS, at)
        limits: dict[str, Any] = {}
        for key in _LIMIT_KEYS:
            if key in mapping:
                convert = to_bool if key == "allow_large" else to_int
                limits[key] = source.take(
                    mapping, key, at, lambda v, k=key, c=convert: check(f"limits.{k}", c(v))
                )
        out["limits"] = limits
    put("power", to_float)
    put("resamples", to_int)
    put("seed", to_int)
    return out


def _read_gates(
    source: Source, items: list[Any], at: tuple[str | int, ...], check: Check
) -> tuple[tuple[str, float], ...]:
    """The list form of ``noninferiority:``: one ``{margin, dimension}`` mapping per gate,
    each read as the single mapping is, as ``(dimension, margin)`` pairs.

    A dimension may gate once (two margins for it would leave one of them unread).
    """
    if not items:
        source.report(
            at, "expected at least one gate", "write [{margin: 0.02, dimension: quality}]"
        )
    gates: list[tuple[str, float]] = []
    for index, item in enumerate(items):
        here = (*at, index)
        if not isinstance(item, dict):
            source.report(here, f"expected a mapping {{margin, dimension}}, got {describe(item)}")
            continue
        source.check_keys(item, _NONINFERIORITY_KEYS, here)
        margin = source.take(
            item, "margin", here, lambda v: check("noninferiority_margin", to_float(v))
        )
        dimension = source.take(
            item,
            "dimension",
            here,
            lambda v: check("noninferiority_dimension", to_str(v)),
            default="quality",
        )
        if valid(dimension) and any(dimension == seen for seen, _ in gates):
            source.report(
                (*here, "dimension"),
                f"{dimension!r} already has a gate",
                "give each dimension one margin",
            )
        gates.append((dimension, margin))
    return tuple(gates)
