"""Experiment manifests: load and validate an AgenticLens 0.10 manifest (spec §3).

Same fields, defaults, coercions and rules as AgenticLens, in the same order, with these
deliberate differences:

* unknown keys are refused with a suggestion (B5: AgenticLens silently ignores a typo such
  as ``trials: 2`` and runs five trials);
* two keys of ours are accepted: ``comparisons`` (paired-comparison settings, kept as
  written) and, on http variants, ``headers``;
* the file part of a python target ``dir/file.py:function`` is resolved against the
  manifest's folder like recorded targets are (B10), not against the working directory;
* targets that can never work (a python target without ``:``, an http target that is not
  an http(s) URL) are refused here instead of failing every trial.

Target files outside the manifest's folder (``../other/trials.json``, an absolute path, a
symbolic link leading out) are allowed, as in AgenticLens, but never silently:
:func:`targets_outside_folder` lists them and ``experiment run`` prints them before
running.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agenticlens_frames._limits import MAX_TRIALS_ENV, limit
from agenticlens_frames._secrets import without_password
from agenticlens_frames._suggest import close_match
from agenticlens_frames.errors import check_path
from agenticlens_frames.formats._io import (
    FAILED,
    Invalid,
    Source,
    describe,
    read_top_mapping,
    to_float,
    to_int,
    to_list,
    to_mapping,
    to_str,
    to_str_map,
    valid,
)
from agenticlens_frames.formats.model import TARGET_KINDS, ManifestSpec, VariantSpec

from .._deprecate import keyword_hints

__all__ = ["load_manifest"]

_MANIFEST_KEYS = dict.fromkeys(
    (
        "schema_version",
        "name",
        "version",
        "baseline_variant_id",
        "trial_count",
        "random_seed",
        "pass_k",
        "minimum_trials",
        "max_workers",
        "variants",
        "metadata",
        "comparisons",
    )
)
_VARIANT_KEYS = dict.fromkeys(
    (
        "id",
        "name",
        "target_kind",
        "target",
        "timeout_seconds",
        "description",
        "factors",
        "metadata",
        "headers",
        "retry",
        "concurrency",
    )
)
# An HTTP header name is an RFC 9110 token.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: A ``${NAME}`` reference in a header value, read from the environment at every send.
HEADER_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_nonempty = partial(to_str, nonempty=True)


def _optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def optional(value: Any) -> Any:
        return None if value is None else convert(value)

    return optional


def _int_list(value: Any) -> tuple[int, ...]:
    items = to_list(value)
    result = []
    for index, item in enumerate(items):
        try:
            result.append(to_int(item))
        except Invalid as exc:
            raise exc.inside(index) from None
    return tuple(result)


def _target_kind(value: Any) -> str:
    text = to_str(value)
    if text not in TARGET_KINDS:
        match = close_match(text, TARGET_KINDS)
        raise Invalid(
            f"expected one of 'python', 'http', 'recorded', got {describe(text)}",
            hint=f"did you mean {match!r}?" if match else None,
        )
    return text


@keyword_hints
def load_manifest(path: str | Path) -> ManifestSpec:
    """Load and validate an experiment manifest.

    Parameters
    ----------
    path
        The manifest: JSON if its extension is ``.json`` (any case), else YAML.

    Returns
    -------
    ManifestSpec
        Every field with its default applied; ``VariantSpec.resolved_target`` holds
        recorded files (and python ``file.py`` targets) resolved against the manifest's
        folder.

    Raises
    ------
    InputError
        Naming the file, the place and a fix: unknown keys (with a did-you-mean), wrong
        types (``version: 2026.10`` is a YAML number: quote it), fewer than three variants,
        duplicate variant ids, an unknown baseline, pass_k outside 1..trial_count. A
        manifest with several problems gets one error listing each (see
        ``InputError.problems``); a rule whose fields are wrong is not checked.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "manifest.yaml").write_text(
    ...     'name: demo\\nversion: "1"\\nbaseline_variant_id: a\\ntrial_count: 3\\nvariants:\\n'
    ...     + "".join(f"  - {{id: {v}, name: {v}, target_kind: recorded, target: {v}.json}}\\n"
    ...               for v in "abc")
    ... )
    >>> manifest = load_manifest(folder / "manifest.yaml")
    >>> manifest.variant_ids, manifest.effective_pass_k
    (('a', 'b', 'c'), (1, 3))
    >>> manifest.variant("b").resolved_target == str(folder / "b.json")
    True
    >>> text = (folder / "manifest.yaml").read_text()
    >>> _ = (folder / "typo.yaml").write_text(text.replace("trial_count", "trials"))
    >>> load_manifest(folder / "typo.yaml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: .../typo.yaml: unknown key 'trials' (did you mean \
'trial_count'?)
    >>> _ = (folder / "typos.yaml").write_text(
    ...     'name: demo\\nversion: 1\\nbaseline_variant_id: a\\ntrials: 3\\nvariants:\\n'
    ...     + "".join(f"  - {{id: {v}, name: {v}, target_kind: record, target: {v}.json}}\\n"
    ...               for v in "abc")
    ... )
    >>> load_manifest(folder / "typos.yaml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: .../typos.yaml: 5 problems:
      .../typos.yaml: unknown key 'trials' (did you mean 'trial_count'?)
      .../typos.yaml: version: expected a string, got 1 (quote it: version: "1")
      .../typos.yaml: variants[0].target_kind: expected one of 'python', 'http', \
'recorded', got 'record' (did you mean 'recorded'?)
      ...
    """
    path = check_path(path, "an experiment manifest")
    source, document = read_top_mapping(
        path, "manifest", "experiment manifest", "variants", "evaluation suite", "cases"
    )
    with source.collecting():
        source.check_keys(document, _MANIFEST_KEYS, ())
        take = partial(source.take, document, location=())
        schema_version = take("schema_version", convert=to_str, default="1.1")
        name = take("name", convert=_nonempty)
        version = take("version", convert=_nonempty)
        baseline = take("baseline_variant_id", convert=_nonempty)
        trial_count = take("trial_count", convert=partial(to_int, minimum=1), default=5)
        random_seed = take("random_seed", convert=_optional(to_int), default=None)
        pass_k = take("pass_k", convert=_int_list, default=())
        minimum_trials = take("minimum_trials", convert=partial(to_int, minimum=1), default=5)
        max_workers = take("max_workers", convert=partial(to_int, minimum=1), default=1)
        raw_variants = take("variants", convert=to_list)
        variants = tuple(
            _variant(source, raw, index, path.parent)
            for index, raw in enumerate(raw_variants if valid(raw_variants) else ())
        )
        metadata = take("metadata", convert=to_str_map, default={})
        comparisons = take("comparisons", convert=_optional(to_mapping), default=None)
        _check_rules(
            source, variants if valid(raw_variants) else FAILED, baseline, pass_k, trial_count
        )
    return ManifestSpec(
        path=path,
        name=name,
        version=version,
        baseline_variant_id=baseline,
        variants=variants,
        schema_version=schema_version,
        trial_count=trial_count,
        random_seed=random_seed,
        pass_k=pass_k,
        minimum_trials=minimum_trials,
        max_workers=max_workers,
        metadata=metadata,
        comparisons=comparisons,
    )


def _check_rules(
    source: Source,
    variants: tuple[VariantSpec, ...],
    baseline: str,
    pass_k: tuple[int, ...],
    trial_count: int,
) -> None:
    """AgenticLens' model-level rules, in its order; a rule is skipped when a value it
    needs was refused while loading (is :data:`FAILED`): its verdict would be noise."""
    if not valid(variants):
        variants = ()
    elif len(variants) < 3:
        source.report(
            ("variants",),
            "experiment manifests require at least three variants",
            f"found {len(variants)}; add variants so that a baseline and at least two "
            "candidates are compared",
        )
    first_index: dict[str, int] = {}
    for index, variant in enumerate(variants):
        if not valid(variant) or not valid(variant.id):
            continue
        if variant.id in first_index:
            source.report(
                ("variants", index, "id"),
                "experiment variant IDs must be unique",
                f"{variant.id!r} is also the id of variants[{first_index[variant.id]}]",
            )
        else:
            first_index[variant.id] = index
    # Whether the baseline is among the ids is known only when every id is; with no
    # variant at all, the rule above says what to fix.
    every_id = all(valid(variant) and valid(variant.id) for variant in variants)
    if variants and every_id and valid(baseline) and baseline not in first_index:
        match = close_match(baseline, first_index)
        source.report(
            ("baseline_variant_id",),
            "baseline_variant_id must reference a defined variant",
            (f"did you mean {match!r}? " if match else "")
            + f"{baseline!r} is not one of the variant ids "
            + ", ".join(repr(v) for v in first_index),
        )
    if not valid(trial_count):
        return
    for index, k in enumerate(pass_k if valid(pass_k) else ()):
        if not 1 <= k <= trial_count:
            source.report(
                ("pass_k", index),
                "pass_k values must be between 1 and trial_count",
                f"got {k} with trial_count {trial_count}",
            )
    planned, most = len(variants) * trial_count, int(limit(MAX_TRIALS_ENV))
    if planned > most:
        # Every (variant, trial) pair is planned up front: 10**8 of them exhaust memory.
        source.report(
            ("trial_count",),
            f"{len(variants)} variants x {trial_count:,} trials is {planned:,} trials, over "
            f"the limit of {most:,}",
            f"lower trial_count, or set {MAX_TRIALS_ENV} higher if the experiment is right",
        )


def _variant(source: Source, raw: Any, index: int, folder: Path) -> VariantSpec:
    """The variant at ``variants[index]``; while collecting, :data:`FAILED` for one that is
    not a mapping, and FAILED in each field that was refused."""
    location: tuple[str | int, ...] = ("variants", index)
    if not isinstance(raw, dict):
        source.report(location, f"expected a variant mapping, got {describe(raw)}")
        return FAILED
    source.check_keys(raw, _VARIANT_KEYS, location)
    take = partial(source.take, raw, location=location)
    variant_id = take("id", convert=_nonempty)
    name = take("name", convert=_nonempty)
    kind = take("target_kind", convert=_target_kind)
    target = take("target", convert=_nonempty)
    timeout = take("timeout_seconds", convert=partial(to_float, gt=0), default=30.0)
    description = take("description", convert=to_str, default="")
    factors = take("factors", convert=to_str_map, default={})
    metadata = take("metadata", convert=to_str_map, default={})
    headers = take("headers", convert=to_str_map, default={})
    retry = take("retry", convert=to_mapping, default={})
    concurrency = take("concurrency", convert=_optional(partial(to_int, minimum=1)), default=None)
    for key, value, unset in (("retry", retry, {}), ("concurrency", concurrency, None)):
        if kind == "recorded" and valid(value) and value != unset:
            source.report(
                (*location, key),
                f"{key} applies only to live targets; variant {variant_id!r} is recorded",
                f"remove {key} or use target_kind python or http",
            )
    if valid(headers, kind) and headers:
        _check_headers(source, location, headers, kind, variant_id)
    return VariantSpec(
        id=variant_id,
        name=name,
        target_kind=kind,
        target=target,
        resolved_target=(
            _resolve(source, location, kind, target, folder) if valid(kind, target) else FAILED
        ),
        timeout_seconds=timeout,
        description=description,
        factors=factors,
        metadata=metadata,
        headers=headers,
        retry=retry,
        concurrency=concurrency,
    )


def _check_headers(
    source: Source,
    location: tuple[str | int, ...],
    headers: dict[str, str],
    kind: str,
    variant_id: str,
) -> None:
    """Headers belong to http variants, and each name must be an HTTP header name (the
    names are not looked at on a variant that should have none)."""
    if kind != "http":
        source.report(
            (*location, "headers"),
            f"headers apply only to http targets; variant {variant_id!r} is {kind}",
            "remove the headers or set target_kind: http",
        )
        return
    for header, value in headers.items():
        if not _HEADER_NAME.fullmatch(header):
            source.report(
                (*location, "headers"),
                f"{header!r} is not a valid HTTP header name",
                "use letters, digits and - only, e.g. Authorization or X-Api-Key",
            )
        # Refused here, not at the first call: a broken reference was sent as it is
        # (unauthenticated calls), a line break failed every call as a "connection" error.
        if any(c in value for c in "\r\n\0"):
            source.report(
                (*location, "headers", header),
                "a header value cannot hold a line break",
                "write the value on one line",
            )
        elif "${" in HEADER_VARIABLE.sub("", value):
            source.report(
                (*location, "headers", header),
                "'${' starts no ${NAME} reference",
                "write ${NAME}, a name of letters, digits and _ closed by } (e.g. "
                "Bearer ${AGENT_TOKEN})",
            )


def _resolve(
    source: Source, location: tuple[str | int, ...], kind: str, target: str, folder: Path
) -> str:
    """Where the runner finds the target; relative files are taken from ``folder``.
    While collecting, :data:`FAILED` for a target that can never work."""
    if kind == "recorded":
        return target if Path(target).is_absolute() else str(folder / target)
    if kind == "python":
        module, _, attribute = target.rpartition(":")
        if not module or not attribute:
            source.report(
                (*location, "target"),
                f"python targets are 'module:function' or 'path/to/file.py:function', "
                f"got {target!r}",
            )
            return FAILED
        if module.endswith(".py") and not Path(module).is_absolute():
            return f"{folder / module}:{attribute}"
        return target
    shown = without_password(target)  # never the password (sent as basic auth)
    try:
        parts = urlsplit(target)
        parts.port  # noqa: B018 - raises for a port that is not a number in range
    except ValueError as exc:  # "Invalid IPv6 URL", a bad port
        source.report((*location, "target"), f"not a valid URL ({exc}): {shown!r}")
        return FAILED
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        source.report(
            (*location, "target"),
            f"http targets must be http:// or https:// URLs, got {shown!r}",
        )
        return FAILED
    return target


def targets_outside_folder(manifest: ManifestSpec) -> list[tuple[str, str]]:
    """Recorded and python-file targets that resolve outside the manifest's folder.

    Symbolic links are followed, so a link inside the folder that leads out is listed.

    Returns
    -------
    list of (variant id, resolved path)

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "m.yaml").write_text(
    ...     "name: e\\nversion: '1'\\nbaseline_variant_id: a\\nvariants:\\n"
    ...     "  - {id: a, name: A, target_kind: recorded, target: a.json}\\n"
    ...     "  - {id: b, name: B, target_kind: recorded, target: ../b.json}\\n"
    ...     "  - {id: c, name: C, target_kind: http, target: 'http://127.0.0.1:9/x'}\\n")
    >>> [variant for variant, _ in targets_outside_folder(load_manifest(folder / "m.yaml"))]
    ['b']
    """
    folder = Path(os.path.realpath(manifest.path)).parent
    outside = []
    for variant in manifest.variants:
        if variant.target_kind == "recorded":
            file = variant.resolved_target
        elif variant.target_kind == "python" and ".py:" in variant.resolved_target:
            file = variant.resolved_target.rpartition(":")[0]
        else:
            continue
        resolved = Path(os.path.realpath(file))  # (resolve() raises on link loops)
        if not resolved.is_relative_to(folder):
            outside.append((variant.id, str(resolved)))
    return outside
