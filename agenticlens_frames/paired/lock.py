"""What a paired comparison is fixed to with the run: fingerprint, lock file, saved report.

The correction, alpha, the suite's content hash, the evaluator versions and the
candidate set are fixed when the experiment is created: :func:`comparison_fingerprint`
records them, and :func:`check_unchanged` / :func:`enforce_lock` /
:func:`check_saved_report` refuse a later change, because a correction chosen after
seeing the numbers is not a correction.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._files import write_atomic
from .._plain import plain
from ..errors import InputError
from ..formats._io import read_input
from ..formats.model import SuiteSpec
from .settings import ComparisonsConfig

__all__ = [
    "check_saved_report",
    "check_saved_settings",
    "check_unchanged",
    "comparison_fingerprint",
    "enforce_lock",
    "read_lock",
    "suite_hash",
    "write_lock",
]

_LOCK_VERSION = 1


def suite_hash(suite: SuiteSpec) -> str:
    """SHA-256 of a canonical JSON of the suite's cases (detects an edited suite).

    Examples
    --------
    >>> from agenticlens_frames.formats import load_suite
    >>> len(suite_hash(load_suite("data/support/suite.yaml")))
    64
    """
    # The JSON of ``dataclasses.asdict`` of each case, the hash's definition, without its
    # deep copy of every leaf (1.3 s of a paired analysis of 8 000 cases; now 0.15 s):
    # plain keeps the keys for json.dumps to write and the values it writes the same.
    cases = plain(list(suite.cases), text_keys=False)
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

    Examples
    --------
    >>> from agenticlens_frames import load_suite
    >>> fingerprint = comparison_fingerprint(
    ...     ComparisonsConfig(correction="holm"), suite=load_suite("data/support/suite.yaml"),
    ...     baseline="a", candidates=["c", "b"], evaluators={"quality": ("passed", "1")})
    >>> fingerprint["candidates"], fingerprint["evaluators"], fingerprint["suite"]["version"]
    (['b', 'c'], {'quality': 'passed@1'}, '2026.11')
    >>> len(fingerprint["digest"])
    64
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
    if config.noninferiority:
        # Only with several gates: a single gate's lock (and digest) reads as before.
        body["noninferiority"] = [[d, m] for d, m in config.noninferiority]
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


def _versions_learned(stored: Mapping[str, Any], requested: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` with each evaluator whose version it could not know taking the requested one.

    A run in which no attempt was scored (every trial failed: a target bug) records its
    evaluators without a version (``"passed@"``). No number was seen, so the first run that
    scores them fixes the version; a different evaluator name is still a change.

    Examples
    --------
    >>> _versions_learned({"evaluators": {"quality": "passed@"}},
    ...                   {"evaluators": {"quality": "passed@0.9.0"}})
    {'evaluators': {'quality': 'passed@0.9.0'}}
    >>> _versions_learned({"evaluators": {"quality": "passed@"}},
    ...                   {"evaluators": {"quality": "score@0.9.0"}})
    {'evaluators': {'quality': 'passed@'}}
    """
    before, after = stored.get("evaluators"), requested.get("evaluators")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return dict(stored)
    learned = {
        dim: after[dim]
        if isinstance(fixed, str)
        and fixed.endswith("@")
        and isinstance(after.get(dim), str)
        and after[dim].startswith(fixed)
        else fixed
        for dim, fixed in before.items()
    }
    return {**stored, "evaluators": learned}


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
the file named here deliberately)
    """
    changed = _differences(_versions_learned(stored, requested), requested)
    if not changed:
        return
    raise InputError(
        "the run was fixed with other settings: " + "; ".join(changed),
        file=source,
        location="comparisons",
        hint="a correction, suite, evaluator version or candidate set chosen after seeing the "
        "numbers is refused; start a new experiment version, or remove the file named here "
        "deliberately",
    )


def read_lock(path: str | Path) -> dict[str, Any] | None:
    """The fingerprint stored at ``path`` (a lock file or a saved JSON report), or None
    when there is no file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "comparisons.lock.json"
    >>> read_lock(path) is None
    True
    >>> _ = write_lock(path, {"correction": "holm", "digest": "abc"})
    >>> read_lock(path)
    {'correction': 'holm', 'digest': 'abc'}
    """
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
    """Write ``{"fingerprint": ...}`` atomically to ``path`` (returned).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = write_lock(pathlib.Path(tempfile.mkdtemp()) / "lock.json", {"digest": "abc"})
    >>> print(path.read_text(), end="")
    {
      "fingerprint": {
        "digest": "abc"
      }
    }
    """
    return write_atomic(
        path, json.dumps({"fingerprint": dict(fingerprint)}, indent=2, sort_keys=True) + "\n"
    )


def enforce_lock(path: str | Path, fingerprint: Mapping[str, Any]) -> bool:
    """Store ``fingerprint`` at ``path`` the first time; afterwards refuse any change.

    Returns
    -------
    bool
        True when the lock was created now, False when an identical one existed.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from agenticlens_frames import load_suite
    >>> suite = load_suite("data/support/suite.yaml")
    >>> def fingerprint(correction):
    ...     return comparison_fingerprint(ComparisonsConfig(correction=correction), suite=suite,
    ...                                   baseline="a", candidates=["b"],
    ...                                   evaluators={"quality": ("passed", "1")})
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lock.json"
    >>> enforce_lock(path, fingerprint("holm")), enforce_lock(path, fingerprint("holm"))
    (True, False)
    >>> enforce_lock(path, fingerprint("bonferroni"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    agenticlens_frames.errors.InputError: ...: correction: 'holm' -> 'bonferroni' (...)
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
    if _versions_learned(stored, fingerprint) != stored:
        write_lock(path, fingerprint)  # the versions are known now: later runs keep them
    return False


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
    path: str | Path,
    fingerprint: Mapping[str, Any] | None,
    experiment: tuple[str, str] | None = None,
) -> None:
    """Refuse to overwrite a saved report whose paired comparisons were fixed differently.

    ``fingerprint`` is the new run's (:attr:`PairedAnalysis.fingerprint
    <agenticlens_frames.paired.comparisons.PairedAnalysis.fingerprint>`). Nothing is
    checked when either side has no paired comparisons, or when the saved report belongs
    to another experiment (``experiment`` is the new run's ``(name, version)``): a new
    experiment version is how settings legitimately change.
    """
    if fingerprint is None:
        return
    saved = _saved_fingerprint(path, experiment)
    if saved is not None:
        check_unchanged(saved, fingerprint, source=path)


#: The fingerprint's fields that the comparison settings alone decide (the rest needs the
#: run: the evaluators' versions, the candidates compared).
SETTINGS_FIELDS = (
    "correction",
    "alpha",
    "method",
    "family",
    "cluster",
    "noninferiority_margin",
    "noninferiority_dimension",
    "resamples",
    "seed",
)


def check_saved_settings(
    path: str | Path, config: ComparisonsConfig | None, experiment: tuple[str, str]
) -> None:
    """:func:`check_saved_report` for the settings alone, before the run.

    The whole fingerprint is known only once the run is scored, so a changed correction or
    margin was refused after every live target had been called (an hour of calls, for a
    refusal the command line could give at once). What the settings decide is checked
    here; :func:`check_saved_report` still checks everything after the run.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.json"
    >>> saved = {"correction": "holm", "alpha": 0.05, "suite": {"sha256": "abc"}}
    >>> _ = path.write_text(json.dumps({"experiment_name": "e", "experiment_version": "1",
    ...                                 "paired_comparisons": {"fingerprint": saved}}))
    >>> check_saved_settings(path, ComparisonsConfig(correction="holm"), ("e", "2"))
    >>> check_saved_settings(path, ComparisonsConfig(correction="none"), ("e", "1"))
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: ...: comparisons: the run was fixed with other \
settings: correction: 'holm' -> 'none' (...)
    """
    if config is None:
        return
    saved = _saved_fingerprint(path, experiment)
    if saved is not None:
        check_unchanged(
            {k: saved.get(k) for k in SETTINGS_FIELDS if k in saved},
            {k: getattr(config, k) for k in SETTINGS_FIELDS if k in saved},
            source=path,
        )


def _saved_fingerprint(
    path: str | Path, experiment: tuple[str, str] | None
) -> dict[str, Any] | None:
    """The comparison fingerprint of the report saved at ``path`` for ``experiment``; None
    when there is none to check against (no file, not our report, another experiment)."""
    target = Path(path)
    if not target.is_file():
        return None  # (a FIFO or device at the --save path is never read)
    try:
        identity, stored = _saved_identity_and_lock(target)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None  # not a JSON report of ours; the writer will replace it as before
    if experiment is not None and identity != tuple(experiment):
        return None
    saved = stored.get("fingerprint") if isinstance(stored, dict) else None
    return saved if isinstance(saved, dict) else None
